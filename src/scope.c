/* scope.c — the scope hierarchy with reference counting (Fluid's design
 * document on scopes; docs/design.md, "Scopes, variables and tensors").
 *
 * References are external (handles held by Lua, executors, callers) or
 * internal: a parent's kid list holds its kids, every kid holds its parent,
 * and STEP_SCOPES variables hold their scopes. Internal references form
 * cycles (parent <-> kid), so plain counting would leak a parent and kid
 * released in either order. When a release leaves a scope without external
 * references, a trial deletion over the scopes reachable from it decides
 * which of them nothing external can reach any more, and frees exactly those.
 *
 * The scope graph is not thread-safe: create, release and erase from one
 * thread at a time (kernels only read variables). */
#include "scope.h"
#include "variable.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

enum { GC_IN_SET = 1, GC_EXPANDED = 2, GC_LIVE = 4, GC_DYING = 8 };

/* scopes alive in the process (oar_debug_live_scopes) */
static int g_live_scopes;

uint64_t oar_scope_epoch;

int oar_debug_live_scopes(void) { return __atomic_load_n(&g_live_scopes, __ATOMIC_RELAXED); }

typedef struct { oar_scope_t **p; int n, cap; } svec_t;

static int svec_push(svec_t *v, oar_scope_t *s)
{
    if (v->n == v->cap) {
        void *p = v->p;
        OAR_TRY(oar_grow(&p, &v->cap, v->n + 1, sizeof *v->p));
        v->p = p;
    }
    v->p[v->n++] = s;
    return OAR_OK;
}

static int external_refs(const oar_scope_t *s) { return s->refcount - s->internal_refs; }

/* appends the scopes s holds internal references on */
static int out_edges(oar_scope_t *s, svec_t *e)
{
    e->n = 0;
    if (s->parent) OAR_TRY(svec_push(e, s->parent));
    for (int i = 0; i < s->nkids; i++) OAR_TRY(svec_push(e, s->kids[i]));
    for (int i = 0; i < s->nvars; i++) {
        const oar_variable_t *v = s->vars[i];
        if (v->type != OAR_VAR_STEP_SCOPES || !v->u.steps) continue;
        for (int j = 0; j < v->u.steps->n; j++) OAR_TRY(svec_push(e, v->u.steps->scopes[j]));
    }
    return OAR_OK;
}

static void release(oar_scope_t *s, bool internal);

/* Frees every scope of `dead` (all marked GC_DYING). References among them
 * are simply dropped; references to scopes outside are released. */
static void destroy(oar_scope_t **dead, int n)
{
    for (int i = 0; i < n; i++) {
        oar_scope_t *s = dead[i];
        oar_strmap_free(&s->index);   /* its keys are the variables' names */
        for (int j = s->nvars - 1; j >= 0; j--) oar_variable_free(s->vars[j]);
        free(s->vars);
        s->vars = NULL;
        s->nvars = s->capv = 0;
    }
    for (int i = 0; i < n; i++) {
        oar_scope_t *s = dead[i];
        if (s->parent && !(s->parent->gc_state & GC_DYING)) release(s->parent, true);
        s->parent = NULL;
    }
    for (int i = 0; i < n; i++) {
        free(dead[i]->kids);
        free(dead[i]);
        __atomic_sub_fetch(&g_live_scopes, 1, __ATOMIC_RELAXED);
    }
}

/* Trial deletion from s (which has no external references left). */
static void collect(oar_scope_t *s)
{
    svec_t set = { 0 }, edges = { 0 }, work = { 0 };
    bool ok = svec_push(&set, s) == OAR_OK;
    if (ok) { s->gc_state = GC_IN_SET; s->gc_count = s->refcount; }
    /* 1. the scopes reachable from s through scopes held only internally;
     *    subtract the references found along the way */
    for (int i = 0; ok && i < set.n; i++) {
        oar_scope_t *x = set.p[i];
        if (x != s && external_refs(x) > 0) continue;   /* held from outside: stays */
        x->gc_state |= GC_EXPANDED;
        if (out_edges(x, &edges) != OAR_OK) { ok = false; break; }
        for (int j = 0; j < edges.n; j++) {
            oar_scope_t *y = edges.p[j];
            if (!(y->gc_state & GC_IN_SET)) {
                if (svec_push(&set, y) != OAR_OK) { ok = false; break; }
                y->gc_state = GC_IN_SET;
                y->gc_count = y->refcount;
            }
            y->gc_count--;
        }
    }
    /* 2. whatever keeps a reference from outside the set is live, and so is
     *    everything it reaches */
    for (int i = 0; ok && i < set.n; i++) {
        oar_scope_t *x = set.p[i];
        if (x->gc_count > 0 && !(x->gc_state & GC_LIVE)) {
            x->gc_state |= GC_LIVE;
            if (svec_push(&work, x) != OAR_OK) ok = false;
        }
    }
    while (ok && work.n > 0) {
        oar_scope_t *x = work.p[--work.n];
        if (!(x->gc_state & GC_EXPANDED)) continue;
        if (out_edges(x, &edges) != OAR_OK) { ok = false; break; }
        for (int j = 0; j < edges.n; j++) {
            oar_scope_t *y = edges.p[j];
            if ((y->gc_state & GC_IN_SET) && !(y->gc_state & GC_LIVE)) {
                y->gc_state |= GC_LIVE;
                if (svec_push(&work, y) != OAR_OK) { ok = false; break; }
            }
        }
    }
    /* 3. the rest is garbage; out of memory leaves everything alive */
    int ndead = 0;
    for (int i = 0; i < set.n; i++) {
        oar_scope_t *x = set.p[i];
        if (ok && !(x->gc_state & GC_LIVE)) {
            x->gc_state = GC_DYING;
            set.p[ndead++] = x;
        } else {
            x->gc_state = 0;
        }
    }
    free(edges.p);
    free(work.p);
    if (ndead > 0) destroy(set.p, ndead);
    free(set.p);
}

static void release(oar_scope_t *s, bool internal)
{
    if (!s || (s->gc_state & GC_DYING)) return;
    if (internal) s->internal_refs--;
    s->refcount--;
    if (s->refcount == 0) {
        s->gc_state = GC_DYING;
        destroy(&s, 1);
    } else if (external_refs(s) == 0) {
        collect(s);
    }
}

/* ---- construction and references ---------------------------------------- */

static int scope_alloc(oar_scope_t *parent, oar_scope_t **out)
{
    oar_scope_t *s = oar_xcalloc(1, sizeof *s);
    if (!s) return OAR_ERR_NOMEM;
    s->refcount = 1;
    __atomic_add_fetch(&g_live_scopes, 1, __ATOMIC_RELAXED);
    if (parent) {
        s->parent = parent;
        parent->refcount++;
        parent->internal_refs++;
    }
    *out = s;
    return OAR_OK;
}

int oar_scope_new(oar_scope_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_scope_new: NULL out");
    return scope_alloc(NULL, out);
}

int oar_scope_new_scope(oar_scope_t *s, oar_scope_t **kid)
{
    if (!s || !kid) return oar_error(OAR_ERR_INVALID, "oar_scope_new_scope: NULL %s", s ? "out" : "scope");
    if (s->nkids == s->capk) {
        void *p = s->kids;
        OAR_TRY(oar_grow(&p, &s->capk, s->nkids + 1, sizeof *s->kids));
        s->kids = p;
    }
    oar_scope_t *k;
    OAR_TRY(scope_alloc(s, &k));
    /* one reference for the caller, one for the parent's kid list */
    k->refcount = 2;
    k->internal_refs = 1;
    s->kids[s->nkids++] = k;
    *kid = k;
    return OAR_OK;
}

int oar_scope_new_detached_kid(oar_scope_t *parent, oar_scope_t **out)
{
    if (!parent || !out)
        return oar_error(OAR_ERR_INVALID, "oar_scope_new_detached_kid: NULL %s", parent ? "out" : "parent");
    return scope_alloc(parent, out);
}

oar_scope_t *oar_scope_retain(oar_scope_t *s)
{
    if (s) s->refcount++;
    return s;
}

void oar_scope_free(oar_scope_t *s) { release(s, false); }

oar_scope_t *oar_scope_retain_internal(oar_scope_t *s)
{
    if (s) { s->refcount++; s->internal_refs++; }
    return s;
}

void oar_scope_release_internal(oar_scope_t *s) { release(s, true); }

void oar_scope_drop_kids(oar_scope_t *s)
{
    if (!s) return;
    /* empty the list first so collections started below see it gone */
    oar_scope_t **kids = s->kids;
    int n = s->nkids;
    s->kids = NULL;
    s->nkids = s->capk = 0;
    for (int i = 0; i < n; i++) release(kids[i], true);
    free(kids);
}

oar_scope_t *oar_scope_parent(oar_scope_t *s) { return s ? s->parent : NULL; }
int oar_scope_num_kids(oar_scope_t *s) { return s ? s->nkids : 0; }

/* ---- variables ---------------------------------------------------------- */

static int check_name(const oar_scope_t *s, const char *name, const char *fn)
{
    if (!s) return oar_error(OAR_ERR_INVALID, "%s: NULL scope", fn);
    if (!name || !*name) return oar_error(OAR_ERR_INVALID, "%s: variable name is %s", fn, name ? "empty" : "NULL");
    return OAR_OK;
}

oar_variable_t *oar_scope_find_local(oar_scope_t *s, const char *name)
{
    if (check_name(s, name, "oar_scope_find_local") != OAR_OK) return NULL;
    int i = oar_strmap_get(&s->index, name);
    return i >= 0 ? s->vars[i] : NULL;
}

oar_variable_t *oar_scope_find_var(oar_scope_t *s, const char *name)
{
    if (check_name(s, name, "oar_scope_find_var") != OAR_OK) return NULL;
    for (; s; s = s->parent) {
        int i = oar_strmap_get(&s->index, name);
        if (i >= 0) return s->vars[i];
    }
    return NULL;
}

int oar_scope_var(oar_scope_t *s, const char *name, oar_variable_t **out)
{
    OAR_TRY(check_name(s, name, "oar_scope_var"));
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_scope_var: NULL out");
    int i = oar_strmap_get(&s->index, name);
    if (i >= 0) { *out = s->vars[i]; return OAR_OK; }
    if (s->nvars == s->capv) {
        void *p = s->vars;
        OAR_TRY(oar_grow(&p, &s->capv, s->nvars + 1, sizeof *s->vars));
        s->vars = p;
    }
    oar_variable_t *v = oar_variable_new(name, s);
    if (!v) return OAR_ERR_NOMEM;
    int rc = oar_strmap_put(&s->index, v->name, s->nvars);
    if (rc != OAR_OK) { oar_variable_free(v); return rc; }
    s->vars[s->nvars++] = v;
    *out = v;
    return OAR_OK;
}

int oar_scope_erase(oar_scope_t *s, const char *name)
{
    OAR_TRY(check_name(s, name, "oar_scope_erase"));
    int i = oar_strmap_get(&s->index, name);
    if (i < 0) return oar_error(OAR_ERR_NOT_FOUND, "variable '%s' is not in this scope", name);
    oar_variable_t *v = s->vars[i];
    oar_scope_epoch++;   /* executors rebind: a prepared block may hold this variable */
    oar_strmap_del(&s->index, v->name);
    memmove(s->vars + i, s->vars + i + 1, (size_t)(s->nvars - i - 1) * sizeof *s->vars);
    s->nvars--;
    /* positions after i moved down by one; existing keys never need to grow the map */
    for (int j = i; j < s->nvars; j++) oar_strmap_put(&s->index, s->vars[j]->name, j);
    oar_variable_free(v);
    return OAR_OK;
}

int oar_scope_num_vars(oar_scope_t *s) { return s ? s->nvars : 0; }

const char *oar_scope_var_name(oar_scope_t *s, int i)
{
    if (!s || i < 0 || i >= s->nvars) {
        oar_error(OAR_ERR_RANGE, "variable index %d out of range (scope has %d)", i, s ? s->nvars : 0);
        return NULL;
    }
    return s->vars[i]->name;
}
