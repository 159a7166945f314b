/* variable.c — the typed holder a scope owns. A variable starts empty; the
 * first accessor of a kind creates that payload, and asking a variable for a
 * kind other than the one it holds is an error, never a reinterpretation. */
#include "variable.h"
#include "scope.h"
#include "tensor.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

static const char *kind_name(int type)
{
    switch (type) {
    case 0: return "nothing";
    case OAR_VAR_LOD_TENSOR: return "LOD_TENSOR";
    case OAR_VAR_SELECTED_ROWS: return "SELECTED_ROWS";
    case OAR_VAR_FEED_MINIBATCH: return "FEED_MINIBATCH";
    case OAR_VAR_FETCH_LIST: return "FETCH_LIST";
    case OAR_VAR_STEP_SCOPES: return "STEP_SCOPES";
    case OAR_VAR_LOD_RANK_TABLE: return "LOD_RANK_TABLE";
    case OAR_VAR_LOD_TENSOR_ARRAY: return "LOD_TENSOR_ARRAY";
    case OAR_VAR_RAW: return "RAW";
    default: return "an unknown kind";
    }
}

oar_variable_t *oar_variable_new(const char *name, oar_scope_t *owner)
{
    if (!name || !*name) {
        oar_error(OAR_ERR_INVALID, "variable name is %s", name ? "empty" : "NULL");
        return NULL;
    }
    oar_variable_t *v = oar_xcalloc(1, sizeof *v);
    if (!v) return NULL;
    v->name = oar_xstrdup(name);
    if (!v->name) { free(v); return NULL; }
    v->scope = owner;
    return v;
}

/* ---- payload destructors ------------------------------------------------ */

static void array_free(oar_tensor_array_t *a)
{
    if (!a) return;
    for (int i = 0; i < a->n; i++) oar_tensor_free(a->items[i]);
    free(a->items);
    free(a);
}

static void rows_free(oar_selected_rows_t *r)
{
    if (!r) return;
    free(r->rows);
    oar_tensor_free(r->value);
    free(r);
}

static void rank_free(oar_rank_table_t *t)
{
    if (!t) return;
    free(t->items);
    free(t->coarse_lod);
    free(t);
}

static void steps_free(oar_step_scopes_t *s)
{
    if (!s) return;
    oar_step_scopes_clear(s);
    free(s->scopes);
    free(s);
}

void oar_variable_clear(oar_variable_t *v)
{
    if (!v) return;
    /* detach first: releasing step scopes may run scope collection */
    int type = v->type;
    void *payload = v->u.tensor;
    v->type = 0;
    memset(&v->u, 0, sizeof v->u);
    switch (type) {
    case OAR_VAR_LOD_TENSOR: oar_tensor_free(payload); break;
    case OAR_VAR_SELECTED_ROWS: rows_free(payload); break;
    /* Fluid's feed and fetch holders are lists of tensors, like an array */
    case OAR_VAR_FEED_MINIBATCH:
    case OAR_VAR_FETCH_LIST:
    case OAR_VAR_LOD_TENSOR_ARRAY: array_free(payload); break;
    case OAR_VAR_STEP_SCOPES: steps_free(payload); break;
    case OAR_VAR_LOD_RANK_TABLE: rank_free(payload); break;
    default: break;
    }
}

void oar_variable_recycle(oar_variable_t *v)
{
    if (!v) return;
    oar_tensor_t *t = v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor : NULL;
    if (!t || v->spare || __atomic_load_n(&t->refcount, __ATOMIC_ACQUIRE) != 1) {
        oar_variable_clear(v);
        return;
    }
    oar_tensor_reset(t);
    t->dtype = -1;
    t->ndim = 0;
    memset(t->dims, 0, sizeof t->dims);
    v->spare = t;
    v->type = 0;
    v->u.tensor = NULL;
}

void oar_variable_free(oar_variable_t *v)
{
    if (!v) return;
    oar_variable_clear(v);
    oar_tensor_free(v->spare);
    free(v->name);
    free(v);
}

/* ---- typed accessors ---------------------------------------------------- */

/* OAR_OK with *exists set when v already holds `type`; OAR_OK with !*exists
 * when v is empty; an error when v holds another kind. */
static int check_kind(const oar_variable_t *v, int type, bool *exists)
{
    if (!v) return oar_error(OAR_ERR_INVALID, "NULL variable (wanted a %s)", kind_name(type));
    *exists = v->type == type;
    if (v->type != 0 && v->type != type)
        return oar_error(OAR_ERR_DTYPE, "variable '%s' holds a %s, not a %s", v->name,
                         kind_name(v->type), kind_name(type));
    return OAR_OK;
}

static int var_tensor(oar_variable_t *v, oar_tensor_t **out)
{
    bool exists = false;
    OAR_TRY(check_kind(v, OAR_VAR_LOD_TENSOR, &exists));
    if (!exists) {
        oar_tensor_t *t = v->spare;
        v->spare = NULL;
        if (!t) OAR_TRY(oar_tensor_new_empty(&t));
        v->u.tensor = t;
        v->type = OAR_VAR_LOD_TENSOR;
    }
    *out = v->u.tensor;
    return OAR_OK;
}

oar_tensor_t *oar_var_tensor(oar_variable_t *v)
{
    oar_tensor_t *t = NULL;
    return var_tensor(v, &t) == OAR_OK ? t : NULL;
}

oar_selected_rows_t *oar_var_selected_rows(oar_variable_t *v)
{
    bool exists = false;
    if (check_kind(v, OAR_VAR_SELECTED_ROWS, &exists) != OAR_OK) return NULL;
    if (!exists) {
        oar_selected_rows_t *r = oar_xcalloc(1, sizeof *r);
        if (!r) return NULL;
        if (oar_tensor_new_empty(&r->value) != OAR_OK) { free(r); return NULL; }
        v->u.rows = r;
        v->type = OAR_VAR_SELECTED_ROWS;
    }
    return v->u.rows;
}

oar_tensor_array_t *oar_var_array(oar_variable_t *v)
{
    bool exists = false;
    if (check_kind(v, OAR_VAR_LOD_TENSOR_ARRAY, &exists) != OAR_OK) return NULL;
    if (!exists) {
        oar_tensor_array_t *a = oar_xcalloc(1, sizeof *a);
        if (!a) return NULL;
        v->u.array = a;
        v->type = OAR_VAR_LOD_TENSOR_ARRAY;
    }
    return v->u.array;
}

oar_step_scopes_t *oar_var_step_scopes(oar_variable_t *v)
{
    bool exists = false;
    if (check_kind(v, OAR_VAR_STEP_SCOPES, &exists) != OAR_OK) return NULL;
    if (!exists) {
        oar_step_scopes_t *s = oar_xcalloc(1, sizeof *s);
        if (!s) return NULL;
        v->u.steps = s;
        v->type = OAR_VAR_STEP_SCOPES;
    }
    return v->u.steps;
}

oar_rank_table_t *oar_var_rank_table(oar_variable_t *v)
{
    bool exists = false;
    if (check_kind(v, OAR_VAR_LOD_RANK_TABLE, &exists) != OAR_OK) return NULL;
    if (!exists) {
        oar_rank_table_t *t = oar_xcalloc(1, sizeof *t);
        if (!t) return NULL;
        v->u.rank = t;
        v->type = OAR_VAR_LOD_RANK_TABLE;
    }
    return v->u.rank;
}

/* ---- arrays and step scopes --------------------------------------------- */

int oar_array_resize(oar_tensor_array_t *a, int n)
{
    if (!a) return oar_error(OAR_ERR_INVALID, "oar_array_resize: NULL array");
    if (n < 0) return oar_error(OAR_ERR_INVALID, "tensor array size %d is negative", n);
    if (n > a->cap) {
        void *items = a->items;
        OAR_TRY(oar_grow(&items, &a->cap, n, sizeof *a->items));
        a->items = items;
    }
    for (int i = n; i < a->n; i++) {
        oar_tensor_free(a->items[i]);
        a->items[i] = NULL;
    }
    for (int i = a->n; i < n; i++) a->items[i] = NULL;
    a->n = n;
    return OAR_OK;
}

void oar_step_scopes_clear(oar_step_scopes_t *s)
{
    if (!s) return;
    /* empty the list before releasing: a release may collect scopes that
     * look at this variable */
    int n = s->n;
    oar_scope_t **scopes = s->scopes;
    s->scopes = NULL;
    s->n = s->cap = 0;
    for (int i = 0; i < n; i++) oar_scope_release_internal(scopes[i]);
    free(scopes);
}

int oar_step_scopes_push(oar_step_scopes_t *s, oar_scope_t *scope)
{
    if (!s || !scope) return oar_error(OAR_ERR_INVALID, "oar_step_scopes_push: NULL %s",
                                       s ? "scope" : "step scopes");
    if (s->n == s->cap) {
        void *p = s->scopes;
        OAR_TRY(oar_grow(&p, &s->cap, s->n + 1, sizeof *s->scopes));
        s->scopes = p;
    }
    s->scopes[s->n++] = oar_scope_retain_internal(scope);
    return OAR_OK;
}

/* ---- public API --------------------------------------------------------- */

int oar_variable_type(const oar_variable_t *v) { return v ? v->type : 0; }
const char *oar_variable_name(const oar_variable_t *v) { return v ? v->name : NULL; }

int oar_variable_get_tensor(oar_variable_t *v, oar_tensor_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_variable_get_tensor: NULL out");
    oar_tensor_t *vt, *t;
    OAR_TRY(var_tensor(v, &vt));
    OAR_TRY(oar_tensor_new_empty(&t));
    int rc = oar_tensor_share(t, vt);
    if (rc != OAR_OK) { oar_tensor_free(t); return rc; }
    *out = t;
    return OAR_OK;
}

int oar_variable_set_tensor(oar_variable_t *v, oar_tensor_t *t)
{
    if (!t) return oar_error(OAR_ERR_INVALID, "oar_variable_set_tensor: NULL tensor");
    oar_tensor_t *vt;
    OAR_TRY(var_tensor(v, &vt));
    return oar_tensor_share(vt, t);
}

int oar_variable_array_size(oar_variable_t *v)
{
    if (!v) return oar_error(OAR_ERR_INVALID, "oar_variable_array_size: NULL variable");
    if (v->type == 0) return 0;
    if (v->type != OAR_VAR_LOD_TENSOR_ARRAY)
        return oar_error(OAR_ERR_DTYPE, "variable '%s' holds a %s, not a LOD_TENSOR_ARRAY",
                         v->name, kind_name(v->type));
    return v->u.array->n;
}

int oar_variable_array_get(oar_variable_t *v, int i, oar_tensor_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_variable_array_get: NULL out");
    int n = oar_variable_array_size(v);
    if (n < 0) return n;
    if (i < 0 || i >= n)
        return oar_error(OAR_ERR_RANGE, "index %d out of range for tensor array '%s' of size %d",
                         i, v->name, n);
    oar_tensor_t *t;
    OAR_TRY(oar_tensor_new_empty(&t));
    const oar_tensor_t *item = v->u.array->items[i];
    /* an unwritten slot reads as an empty tensor */
    int rc = item ? oar_tensor_share(t, item) : OAR_OK;
    if (rc != OAR_OK) { oar_tensor_free(t); return rc; }
    *out = t;
    return OAR_OK;
}
