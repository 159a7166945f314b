/* backward_ctx.c — what grad makers see: the grad context (oar_gc_*), the
 * default maker, gradient names and the no-grad rule. */
#include "backward_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- gradient names ------------------------------------------------------ */

static int add_entry(oar_bw_pass_t *P, const char *fwd, const char *grad)
{
    OAR_TRY(oar_grow((void **)&P->entries, &P->capentries, P->nentries + 1, sizeof *P->entries));
    int e = P->nentries;
    OAR_TRY(oar_strmap_put(&P->gname, fwd, e));
    int rc = oar_strmap_put(&P->gfwd, grad, e);
    if (rc != OAR_OK) { oar_strmap_del(&P->gname, fwd); return rc; }
    P->entries[e].fwd = fwd;
    P->entries[e].grad = grad;
    P->nentries++;
    return OAR_OK;
}

/* declared in block 0 before the pass: an earlier pass's grad, which this
 * pass reads as a forward value (second-order gradients) */
bool oar_bw_declared_before(oar_bw_pass_t *P, const char *name)
{
    oar_block_t *b0 = oar_program_block(P->p, 0);
    int i = b0 ? oar_strmap_get(&b0->var_index, name) : -1;
    return i >= 0 && i < P->nvars0;
}

const char *oar_bw_grad_name(oar_bw_pass_t *P, const char *fwd)
{
    if (!fwd) { oar_error(OAR_ERR_INVALID, "backward: NULL variable name"); return NULL; }
    if (strcmp(fwd, OAR_EMPTY_VAR) == 0) return OAR_EMPTY_VAR;
    int e = oar_strmap_get(&P->gname, fwd);
    if (e >= 0) return P->entries[e].grad;
    char *f = oar_bw_pool_strdup(&P->pool, fwd);
    char *g = f ? oar_bw_pool_printf(&P->pool, "%s" OAR_GRAD_SUFFIX, fwd) : NULL;
    /* Fluid's _rename_grad_, decided here rather than at commit: a grad name an
     * earlier pass declared is a forward value to this pass (a later pass may
     * differentiate it), so this pass's grad gets a fresh name from the start.
     * A name first asked for inside a sub-block run stays: control-flow grad
     * kernels find inner grads as "<var>@GRAD", and the commit renames the
     * outer write (rename_existing) */
    for (int k = 1; g && P->depth == 0 && (oar_bw_declared_before(P, g) || oar_strmap_get(&P->gfwd, g) >= 0); k++)
        g = oar_bw_pool_printf(&P->pool, "%s" OAR_GRAD_SUFFIX "_%d", fwd, k);
    if (!g || add_entry(P, f, g) != OAR_OK) return NULL;
    return g;
}

/* the entry of a grad name no helper handed out (built by hand in a maker):
 * its forward var is the part before "@GRAD"; -1 on failure */
static int hand_built_entry(oar_bw_pass_t *P, const char *name)
{
    const char *at = strstr(name, OAR_GRAD_SUFFIX);
    char *f = oar_bw_pool_strdup(&P->pool, name), *g = oar_bw_pool_strdup(&P->pool, name);
    if (!f || !g) return -1;
    if (at) f[at - name] = '\0';
    if (oar_grow((void **)&P->entries, &P->capentries, P->nentries + 1, sizeof *P->entries) != OAR_OK) return -1;
    int e = P->nentries;
    if (oar_strmap_put(&P->gfwd, g, e) != OAR_OK) return -1;
    P->entries[e].fwd = f;
    P->entries[e].grad = g;
    P->nentries++;
    return e;
}

int oar_bw_alias(oar_bw_pass_t *P, const char *name, const char *of)
{
    int e = oar_strmap_get(&P->gfwd, of);
    if (e < 0 && (e = hand_built_entry(P, of)) < 0) return OAR_ERR_NOMEM;
    const char *key = oar_bw_pool_strdup(&P->pool, name);
    if (!key) return OAR_ERR_NOMEM;
    return oar_strmap_put(&P->gfwd, key, e);
}

const char *oar_bw_fwd_of(oar_bw_run_t *R, const char *name)
{
    if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) return NULL;
    int e = oar_strmap_get(&R->P->gfwd, name);
    if (e >= 0) return R->P->entries[e].fwd;
    /* like Fluid, any name with @GRAD is a gradient (makers may build them by
     * hand), except an earlier pass's grad, a forward value here */
    const char *at = strstr(name, OAR_GRAD_SUFFIX);
    if (!at || at == name) return NULL;
    if (R->top && oar_bw_declared_before(R->P, name)) return NULL;
    e = hand_built_entry(R->P, name);
    return e >= 0 ? R->P->entries[e].fwd : NULL;
}

bool oar_bw_no_grad(oar_bw_pass_t *P, oar_block_t *b, const char *var)
{
    if (!var || strcmp(var, OAR_EMPTY_VAR) == 0) return true;
    if (oar_bw_names_has(&P->no_grad, var)) return true;
    oar_var_desc_t *v = oar_block_find_var_recursive(b, var);
    if (v && !oar_bw_dtype_differentiable(v)) return true;
    if (v && v->stop_gradient && !oar_bw_names_has(&P->wanted, var)) return true;
    /* a block-0 var that does not vary with what is differentiated has no gradient */
    if (P->use_reach && v && v->block == oar_program_block(P->p, 0) && !oar_bw_names_has(&P->reach, var))
        return true;
    return false;
}

/* ---- the grad context ------------------------------------------------------ */

static int gc_fail(oar_grad_ctx_t *g, int rc)
{
    if (g && g->status == OAR_OK) g->status = rc;
    return rc;
}

oar_op_desc_t *oar_bw_new_op(const char *type)
{
    oar_op_desc_t *op;
    if (oar_op_desc_new(type, &op) != OAR_OK) return NULL;
    if (oar_bw_set_role(op, OAR_ROLE_BACKWARD) != OAR_OK) { oar_op_desc_free(op); return NULL; }
    return op;
}

const oar_op_desc_t *oar_gc_fwd(const oar_grad_ctx_t *g)
{
    return g ? g->fwd : NULL;
}

oar_op_desc_t *oar_gc_new_op(oar_grad_ctx_t *g, const char *type)
{
    if (!g || !type || !*type) {
        gc_fail(g, oar_error(OAR_ERR_INVALID, "oar_gc_new_op: NULL %s", g ? "type" : "context"));
        return NULL;
    }
    oar_op_desc_t *op;
    int rc = oar_op_desc_new(type, &op);
    if (rc != OAR_OK) { gc_fail(g, rc); return NULL; }
    /* every forward attr, as Fluid does: grad kernels read them without
     * their definitions declaring them all */
    rc = oar_op_desc_copy_attrs(op, g->fwd);
    if (rc == OAR_OK && oar_op_desc_attr_type(op, "op_role_var") >= 0)
        rc = oar_op_desc_remove_attr(op, "op_role_var");
    if (rc == OAR_OK) rc = oar_bw_set_role(op, OAR_ROLE_BACKWARD);
    if (rc != OAR_OK) { oar_op_desc_free(op); gc_fail(g, rc); return NULL; }
    rc = oar_bw_list_push(&g->R->list, op, true);
    if (rc != OAR_OK) { gc_fail(g, rc); return NULL; }
    return op;
}

static char *slot_grad(const char *slot)
{
    size_t n = strlen(slot), m = strlen(OAR_GRAD_SUFFIX);
    char *s = oar_xmalloc(n + m + 1);
    if (!s) return NULL;
    memcpy(s, slot, n);
    memcpy(s + n, OAR_GRAD_SUFFIX, m + 1);
    return s;
}

static int check_args(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot, const char *fn)
{
    if (!g || !op || !slot)
        return gc_fail(g, oar_error(OAR_ERR_INVALID, "%s: NULL %s", fn, !g ? "context" : !op ? "op" : "slot"));
    return OAR_OK;
}

/* forward input (or output) slot `fwd_slot` -> op input `slot` */
static int gc_copy(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot, bool from_out,
                   const char *fn)
{
    OAR_TRY(check_args(g, op, slot, fn));
    if (!fwd_slot) return gc_fail(g, oar_error(OAR_ERR_INVALID, "%s: NULL forward slot", fn));
    const oar_op_slot_t *s = from_out ? oar_op_find_output(g->fwd, fwd_slot) : oar_op_find_input(g->fwd, fwd_slot);
    if (!s) return OAR_OK;   /* a dispensable slot the forward op left out */
    int rc = oar_op_desc_set_input(op, slot, (const char *const *)s->args, s->nargs);
    return rc == OAR_OK ? rc : gc_fail(g, rc);
}

int oar_gc_in(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot)
{
    return gc_copy(g, op, slot, slot, false, "oar_gc_in");
}

int oar_gc_out(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot)
{
    return gc_copy(g, op, slot, slot, true, "oar_gc_out");
}

int oar_gc_in_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot)
{
    return gc_copy(g, op, fwd_slot, slot, false, "oar_gc_in_as");
}

int oar_gc_out_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot)
{
    return gc_copy(g, op, fwd_slot, slot, true, "oar_gc_out_as");
}

/* sets `gslot` of `op` (an input when `as_input`) to the grads of the
 * forward args of `s`; no-grad args become @EMPTY@ for outputs */
static int set_grads(oar_grad_ctx_t *g, oar_op_desc_t *op, const oar_op_slot_t *s, const char *gslot, bool as_input)
{
    const char **names = oar_xcalloc((size_t)(s->nargs > 0 ? s->nargs : 1), sizeof *names);
    int rc = names ? OAR_OK : OAR_ERR_NOMEM;
    for (int i = 0; i < s->nargs && rc == OAR_OK; i++) {
        const char *a = s->args[i];
        if (!as_input && oar_bw_no_grad(g->P, g->R->fwd_block, a)) {
            names[i] = OAR_EMPTY_VAR;
        } else {
            names[i] = oar_bw_grad_name(g->P, a);
            if (!names[i]) rc = OAR_ERR_NOMEM;
        }
    }
    if (rc == OAR_OK)
        rc = as_input ? oar_op_desc_set_input(op, gslot, names, s->nargs)
                      : oar_op_desc_set_output(op, gslot, names, s->nargs);
    free(names);
    return rc == OAR_OK ? rc : gc_fail(g, rc);
}

/* the grads of forward slot `fwd_slot` (an output of the forward op when
 * `of_out`) as op slot `gslot` (NULL: "<fwd_slot>@GRAD") */
static int gc_grads(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *gslot, bool of_out,
                    const char *fn)
{
    OAR_TRY(check_args(g, op, fwd_slot, fn));
    const oar_op_slot_t *s = of_out ? oar_op_find_output(g->fwd, fwd_slot) : oar_op_find_input(g->fwd, fwd_slot);
    if (!s) return OAR_OK;
    if (gslot) return set_grads(g, op, s, gslot, of_out);
    char *name = slot_grad(s->slot);
    if (!name) return gc_fail(g, OAR_ERR_NOMEM);
    int rc = set_grads(g, op, s, name, of_out);
    free(name);
    return rc;
}

int oar_gc_out_grad(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot)
{
    return gc_grads(g, op, slot, NULL, true, "oar_gc_out_grad");
}

int oar_gc_in_grad(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot)
{
    return gc_grads(g, op, slot, NULL, false, "oar_gc_in_grad");
}

int oar_gc_out_grad_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot)
{
    if (!slot) return gc_fail(g, oar_error(OAR_ERR_INVALID, "oar_gc_out_grad_as: NULL slot"));
    return gc_grads(g, op, fwd_slot, slot, true, "oar_gc_out_grad_as");
}

int oar_gc_in_grad_as(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot, const char *slot)
{
    if (!slot) return gc_fail(g, oar_error(OAR_ERR_INVALID, "oar_gc_in_grad_as: NULL slot"));
    return gc_grads(g, op, fwd_slot, slot, false, "oar_gc_in_grad_as");
}

bool oar_gc_no_grad(const oar_grad_ctx_t *g, const char *var)
{
    if (!g) return true;
    return oar_bw_no_grad(g->P, g->R->fwd_block, var);
}

int oar_gc_grad_block(oar_grad_ctx_t *g, int fwd_block)
{
    if (!g) return oar_error(OAR_ERR_INVALID, "oar_gc_grad_block: NULL context");
    int rc = oar_bw_run_sub_block(g->R, fwd_block);
    return rc >= 0 ? rc : gc_fail(g, rc);
}

/* ---- the default maker ----------------------------------------------------- */

/* "X@GRAD" -> length of "X", or 0 when `slot` is no grad slot */
static size_t grad_base_len(const char *slot)
{
    size_t n = strlen(slot), m = strlen(OAR_GRAD_SUFFIX);
    return n > m && strcmp(slot + n - m, OAR_GRAD_SUFFIX) == 0 ? n - m : 0;
}

/* Wires a slot the grad op declares from the forward op. */
static int wire_declared(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *slot, bool input)
{
    size_t base = grad_base_len(slot);
    if (base) {
        char *fwd_slot = oar_xstrdup(slot);
        if (!fwd_slot) return gc_fail(g, OAR_ERR_NOMEM);
        fwd_slot[base] = '\0';
        int rc = OAR_OK;
        if (input && oar_op_find_output(g->fwd, fwd_slot)) rc = oar_gc_out_grad(g, op, fwd_slot);
        else if (!input && oar_op_find_input(g->fwd, fwd_slot)) rc = oar_gc_in_grad(g, op, fwd_slot);
        free(fwd_slot);
        return rc;
    }
    if (!input) return OAR_OK;   /* a grad op writes grads only */
    if (oar_op_find_input(g->fwd, slot)) return oar_gc_in(g, op, slot);
    if (oar_op_find_output(g->fwd, slot)) return oar_gc_out(g, op, slot);
    return OAR_OK;
}

/* "<forward type>_grad", malloc'ed; NULL with the failure recorded */
static char *grad_type(oar_grad_ctx_t *g)
{
    size_t n = strlen(g->fwd->type);
    char *type = oar_xmalloc(n + sizeof "_grad");
    if (!type) { gc_fail(g, OAR_ERR_NOMEM); return NULL; }
    memcpy(type, g->fwd->type, n);
    memcpy(type + n, "_grad", sizeof "_grad");
    return type;
}

oar_op_desc_t *oar_gc_new_grad_op(oar_grad_ctx_t *g)
{
    if (!g || !g->fwd) {
        gc_fail(g, oar_error(OAR_ERR_INVALID, "oar_gc_new_grad_op: NULL context"));
        return NULL;
    }
    char *type = grad_type(g);
    oar_op_desc_t *op = type ? oar_gc_new_op(g, type) : NULL;
    free(type);
    return op;
}

int oar_grad_default(oar_grad_ctx_t *g)
{
    if (!g || !g->fwd) return oar_error(OAR_ERR_INVALID, "oar_grad_default: NULL context");
    const oar_op_desc_t *fwd = g->fwd;
    char *type = grad_type(g);
    if (!type) return g->status;
    const oar_op_def_t *def = oar_registry_op(type);
    if (!def) {
        int rc = oar_error(OAR_ERR_NOT_FOUND, "op '%s' uses the default grad maker but '%s' is not registered",
                           fwd->type, type);
        free(type);
        return gc_fail(g, rc);
    }
    oar_op_desc_t *op = oar_gc_new_op(g, type);
    free(type);
    if (!op) return g->status;
    /* Fluid wires every input, output and grad; only the slots the grad op
     * declares are wired here, so a grad op asks for exactly what it uses. */
    int rc = OAR_OK;
    for (const oar_slot_def_t *s = def->inputs; s && s->name && rc == OAR_OK; s++)
        rc = wire_declared(g, op, s->name, true);
    for (const oar_slot_def_t *s = def->outputs; s && s->name && rc == OAR_OK; s++)
        rc = wire_declared(g, op, s->name, false);
    return rc;
}
