/* backward_block.c — one run of the backward pass over one forward block:
 * generate grad ops, prune what nothing feeds, sum shared grads, commit. */
#include "backward_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- generate ------------------------------------------------------------ */

/* true when some var the op reads (its sub-blocks included) wants a grad */
static int wants_grad(oar_bw_run_t *R, const oar_op_desc_t *op, bool *out)
{
    oar_bw_names_t reads = {0}, writes = {0};
    int rc = oar_bw_op_footprint(R->P->p, op, &reads, &writes);
    *out = false;
    for (int i = 0; i < reads.n && rc == OAR_OK && !*out; i++)
        if (!oar_bw_no_grad(R->P, R->fwd_block, reads.v[i])) *out = true;
    oar_bw_names_free(&reads);
    oar_bw_names_free(&writes);
    return rc;
}

static int generate(oar_bw_run_t *R, oar_op_desc_t *const *fwd_ops, int nfwd)
{
    char ctx[256];
    for (int i = nfwd - 1; i >= 0; i--) {
        const oar_op_desc_t *op = fwd_ops[i];
        const oar_op_def_t *def = oar_registry_op(op->type);
        if (!def || !def->grad) continue;
        bool want;
        int rc = wants_grad(R, op, &want);
        if (rc == OAR_OK && !want) continue;
        if (rc == OAR_OK) {
            oar_grad_ctx_t g = { R->P, R, op, OAR_OK };
            rc = def->grad(&g);
            if (rc == OAR_OK) rc = g.status;
            if (rc > 0) rc = OAR_OK;
        }
        if (rc != OAR_OK) {
            oar_error_prefix("backward of %s: ", oar_op_context(op, ctx, sizeof ctx));
            return rc;
        }
    }
    return OAR_OK;
}

/* ---- prune ---------------------------------------------------------------- */

static bool is_empty(const char *a) { return strcmp(a, OAR_EMPTY_VAR) == 0; }

static int set_arg(char **slot_arg, const char *name)
{
    char *c = oar_xstrdup(name);
    if (!c) return OAR_ERR_NOMEM;
    free(*slot_arg);
    *slot_arg = c;
    return OAR_OK;
}

/* Grads of outer vars (and of vars the grad op links in) flow into a
 * sub-block run from the enclosing grad op. */
static bool flows_in(oar_bw_run_t *R, const char *fwd)
{
    if (R->top) return false;
    return !oar_block_find_var(R->fwd_block, fwd) || (R->linked && oar_bw_names_has(R->linked, fwd));
}

/* zeros for a grad nothing produced; for a tensor array, an array with no
 * items (array grad ops read a missing item as zeros) */
static int fill_zeros(oar_bw_run_t *R, oar_bw_list_t *out, const char *fwd, const char *grad)
{
    const oar_var_desc_t *f = oar_block_find_var_recursive(R->fwd_block, fwd);
    bool array = f && f->type == OAR_VAR_LOD_TENSOR_ARRAY && oar_op_is_registered("fill_zeros_like_array");
    oar_op_desc_t *op = oar_bw_new_op(array ? "fill_zeros_like_array" : "fill_zeros_like");
    if (!op) return OAR_ERR_NOMEM;
    int rc = oar_op_desc_set_input(op, "X", &fwd, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_output(op, "Out", &grad, 1);
    if (rc != OAR_OK) { oar_op_desc_free(op); return rc; }
    (void)R;
    return oar_bw_list_push(out, op, false);
}

/* Walks the grad ops in order knowing which grads exist so far: maker
 * outputs for no-grad vars become @EMPTY@; an op with no output left, or
 * whose every grad input is missing (all zero: its outputs would be zero),
 * is dropped; a missing grad input of a kept op gets fill_zeros_like. */
static int prune(oar_bw_run_t *R)
{
    oar_bw_list_t in = R->list, out = {0};
    memset(&R->list, 0, sizeof R->list);
    oar_bw_names_t avail = {0};
    int rc = OAR_OK, i;
    for (i = 0; i < in.n && rc == OAR_OK; i++) {
        oar_op_desc_t *op = in.v[i].op;
        int nout = 0;
        for (int s = 0; s < op->noutputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->outputs[s].nargs && rc == OAR_OK; j++) {
                char **a = &op->outputs[s].args[j];
                if (is_empty(*a)) continue;
                const char *fwd = in.v[i].maker ? oar_bw_fwd_of(R, *a) : NULL;
                if (fwd && oar_bw_no_grad(R->P, R->fwd_block, fwd)) rc = set_arg(a, OAR_EMPTY_VAR);
                else nout++;
            }
        if (rc != OAR_OK) break;
        bool any_grad = false, any_avail = false;
        for (int s = 0; s < op->ninputs; s++)
            for (int j = 0; j < op->inputs[s].nargs; j++) {
                const char *a = op->inputs[s].args[j];
                const char *fwd = oar_bw_fwd_of(R, a);
                if (!fwd) continue;
                any_grad = true;
                if (oar_bw_names_has(&avail, a) || flows_in(R, fwd)) any_avail = true;
            }
        if (nout == 0 || (any_grad && !any_avail)) {
            oar_op_desc_free(op);
            in.v[i].op = NULL;
            continue;
        }
        for (int s = 0; s < op->ninputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->inputs[s].nargs && rc == OAR_OK; j++) {
                const char *a = op->inputs[s].args[j];
                const char *fwd = oar_bw_fwd_of(R, a);
                if (!fwd || oar_bw_names_has(&avail, a) || flows_in(R, fwd)) continue;
                rc = fill_zeros(R, &out, fwd, a);
                if (rc == OAR_OK) rc = oar_bw_names_add(&avail, a);
            }
        for (int s = 0; s < op->noutputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->outputs[s].nargs && rc == OAR_OK; j++)
                if (!is_empty(op->outputs[s].args[j])) rc = oar_bw_names_add(&avail, op->outputs[s].args[j]);
        if (rc != OAR_OK) break;
        rc = oar_bw_list_push(&out, op, in.v[i].maker);
        in.v[i].op = NULL;   /* pushed, or freed by a failed push */
    }
    oar_bw_names_free(&avail);
    oar_bw_list_free(&in);   /* what was not moved to `out` */
    R->list = out;
    return rc;
}

/* ---- addup ---------------------------------------------------------------- */

/* Contributions to one grad name since it was last read. A grad read by an
 * op is final for that version: a later write starts a new version (the
 * forward var was overwritten in between) instead of joining the sum. */
typedef struct acc {
    const char *g;
    char **parts; int n, cap;
    oar_op_desc_t *wop; int wslot, warg;   /* the writer of parts[0] when n == 1 */
    bool consumed;
    int renames;
} acc_t;

typedef struct addup {
    oar_bw_run_t *R;
    acc_t *acc; int nacc, capacc;
    oar_strmap_t index;
    oar_bw_list_t out;
} addup_t;

static void acc_clear(acc_t *a)
{
    for (int i = 0; i < a->n; i++) free(a->parts[i]);
    a->n = 0;
}

static int acc_push(acc_t *a, const char *name)
{
    OAR_TRY(oar_grow((void **)&a->parts, &a->cap, a->n + 1, sizeof *a->parts));
    char *c = oar_xstrdup(name);
    if (!c) return OAR_ERR_NOMEM;
    a->parts[a->n++] = c;
    return OAR_OK;
}

static int acc_get(addup_t *U, const char *name, acc_t **out)
{
    int k = oar_strmap_get(&U->index, name);
    if (k < 0) {
        const char *g = oar_bw_pool_strdup(&U->R->P->pool, name);
        if (!g) return OAR_ERR_NOMEM;
        OAR_TRY(oar_grow((void **)&U->acc, &U->capacc, U->nacc + 1, sizeof *U->acc));
        k = U->nacc;
        OAR_TRY(oar_strmap_put(&U->index, g, k));
        memset(&U->acc[k], 0, sizeof U->acc[k]);
        U->acc[k].g = g;
        U->nacc++;
    }
    *out = &U->acc[k];
    return OAR_OK;
}

static int emit_sum(addup_t *U, acc_t *a)
{
    oar_op_desc_t *op = oar_bw_new_op("sum");
    if (!op) return OAR_ERR_NOMEM;
    int rc = oar_op_desc_set_input(op, "X", (const char *const *)a->parts, a->n);
    if (rc == OAR_OK) rc = oar_op_desc_set_output(op, "Out", &a->g, 1);
    if (rc != OAR_OK) { oar_op_desc_free(op); return rc; }
    OAR_TRY(oar_bw_list_push(&U->out, op, false));
    acc_clear(a);
    OAR_TRY(acc_push(a, a->g));
    a->wop = op;
    a->wslot = 0;
    a->warg = 0;
    return OAR_OK;
}

static char *rename_name(addup_t *U, acc_t *a)
{
    oar_bw_pass_t *P = U->R->P;
    char *n = oar_bw_pool_printf(&P->pool, "%s@RENAME@block%d@%d", a->g, U->R->fwd_block->idx, a->renames++);
    if (n && oar_bw_alias(P, n, a->g) != OAR_OK) return NULL;
    return n;
}

static bool reads(const oar_op_desc_t *op, const char *name)
{
    for (int s = 0; s < op->ninputs; s++)
        for (int j = 0; j < op->inputs[s].nargs; j++)
            if (strcmp(op->inputs[s].args[j], name) == 0) return true;
    return false;
}

static int addup_op(addup_t *U, oar_op_desc_t *op)
{
    oar_bw_run_t *R = U->R;
    for (int s = 0; s < op->ninputs; s++)
        for (int j = 0; j < op->inputs[s].nargs; j++) {
            int k = oar_strmap_get(&U->index, op->inputs[s].args[j]);
            if (k < 0) continue;
            if (U->acc[k].n > 1) OAR_TRY(emit_sum(U, &U->acc[k]));
            U->acc[k].consumed = true;
        }
    for (int s = 0; s < op->noutputs; s++)
        for (int j = 0; j < op->outputs[s].nargs; j++) {
            const char *arg = op->outputs[s].args[j];
            if (is_empty(arg) || !oar_bw_fwd_of(R, arg)) continue;
            acc_t *a;
            OAR_TRY(acc_get(U, arg, &a));
            if (reads(op, a->g) || a->n == 0 || a->consumed) {
                /* in place, first, or a new version: this op's value is the grad */
                acc_clear(a);
                OAR_TRY(acc_push(a, a->g));
                a->wop = op;
                a->wslot = s;
                a->warg = j;
                a->consumed = false;
                continue;
            }
            if (a->n == 1) {
                char *r0 = rename_name(U, a);
                if (!r0) return OAR_ERR_NOMEM;
                OAR_TRY(set_arg(&a->wop->outputs[a->wslot].args[a->warg], r0));
                acc_clear(a);
                OAR_TRY(acc_push(a, r0));
            }
            char *r1 = rename_name(U, a);
            if (!r1) return OAR_ERR_NOMEM;
            OAR_TRY(set_arg(&op->outputs[s].args[j], r1));
            OAR_TRY(acc_push(a, r1));
        }
    return OAR_OK;
}

/* Several grad ops writing one grad: each writes a renamed var and a `sum`
 * makes the grad right before its first reader (or at the end). */
static int addup(oar_bw_run_t *R)
{
    addup_t U = { .R = R };
    oar_bw_list_t in = R->list;
    memset(&R->list, 0, sizeof R->list);
    int rc = OAR_OK;
    for (int i = 0; i < in.n && rc == OAR_OK; i++) {
        oar_op_desc_t *op = in.v[i].op;
        rc = addup_op(&U, op);
        if (rc == OAR_OK) {
            rc = oar_bw_list_push(&U.out, op, in.v[i].maker);
            in.v[i].op = NULL;
        }
    }
    for (int k = 0; k < U.nacc && rc == OAR_OK; k++)
        if (U.acc[k].n > 1) rc = emit_sum(&U, &U.acc[k]);
    for (int k = 0; k < U.nacc; k++) {
        acc_clear(&U.acc[k]);
        free(U.acc[k].parts);
    }
    free(U.acc);
    oar_strmap_free(&U.index);
    oar_bw_list_free(&in);
    R->list = U.out;
    return rc;
}

/* ---- rename ------------------------------------------------------------------ */

const char *oar_bw_final_name(oar_bw_pass_t *P, const char *grad)
{
    int k = grad ? oar_strmap_get(&P->renamed, grad) : -1;
    return k >= 0 ? P->rnew[k] : grad;
}

static int set_renamed(oar_bw_pass_t *P, const char *old, const char *fresh)
{
    const char *key = oar_bw_pool_strdup(&P->pool, old);
    if (!key) return OAR_ERR_NOMEM;
    OAR_TRY(oar_grow((void **)&P->rnew, &P->caprnew, P->nrnew + 1, sizeof *P->rnew));
    OAR_TRY(oar_strmap_put(&P->renamed, key, P->nrnew));
    P->rnew[P->nrnew++] = fresh;
    return OAR_OK;
}

/* Inner grad blocks read outer grads by name: follow the renames there. */
static int rename_in_made_blocks(oar_bw_pass_t *P, const oar_op_desc_t *op, int depth)
{
    int *sub = NULL, nsub = 0;
    OAR_TRY(oar_bw_op_sub_blocks(op, &sub, &nsub));
    int rc = OAR_OK;
    for (int k = 0; k < nsub && rc == OAR_OK; k++) {
        oar_block_t *b = oar_program_block(P->p, sub[k]);
        if (!b || sub[k] < P->nblocks0 || depth > P->nmade) continue;   /* only blocks this pass made */
        for (int i = 0; i < b->nops && rc == OAR_OK; i++) {
            oar_op_desc_t *inner = b->ops[i];
            for (int s = 0; s < inner->ninputs && rc == OAR_OK; s++)
                for (int j = 0; j < inner->inputs[s].nargs && rc == OAR_OK; j++) {
                    char **a = &inner->inputs[s].args[j];
                    const char *to = oar_bw_final_name(P, *a);
                    if (to != *a && !oar_block_find_var(b, *a)) rc = set_arg(a, to);
                }
            if (rc == OAR_OK) rc = rename_in_made_blocks(P, inner, depth + 1);
        }
    }
    free(sub);
    return rc;
}


/* Fluid's _rename_grad_: a grad an earlier pass over block 0 already declared
 * is not overwritten; this pass writes a fresh name and its readers follow. */
static int rename_existing(oar_bw_run_t *R)
{
    oar_bw_pass_t *P = R->P;
    int rc = OAR_OK;
    for (int i = 0; i < R->list.n && rc == OAR_OK; i++) {
        oar_op_desc_t *op = R->list.v[i].op;
        for (int s = 0; s < op->ninputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->inputs[s].nargs && rc == OAR_OK; j++) {
                char **a = &op->inputs[s].args[j];
                const char *to = oar_bw_final_name(P, *a);
                if (to != *a) rc = set_arg(a, to);
            }
        if (rc == OAR_OK) rc = rename_in_made_blocks(P, op, 0);
        for (int s = 0; s < op->noutputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->outputs[s].nargs && rc == OAR_OK; j++) {
                char **a = &op->outputs[s].args[j];
                if (is_empty(*a) || !oar_bw_fwd_of(R, *a) || !oar_bw_declared_before(P, *a)) continue;
                char *fresh = NULL;
                for (int k = 1; !fresh || oar_block_find_var(R->target, fresh) ||
                                oar_strmap_get(&P->gfwd, fresh) >= 0; k++) {
                    fresh = oar_bw_pool_printf(&P->pool, "%s_%d", *a, k);
                    if (!fresh) return OAR_ERR_NOMEM;
                }
                rc = oar_bw_alias(P, fresh, *a);
                if (rc == OAR_OK) rc = set_renamed(P, *a, fresh);
                if (rc == OAR_OK) rc = set_arg(a, fresh);
            }
    }
    return rc;
}

/* ---- commit ----------------------------------------------------------------- */

/* A grad var is declared where its op goes, shaped like its forward var. In a
 * grad sub-block every grad written there is local, so the control-flow grad
 * op decides how inner grads reach the outer ones. */
static int declare_grad(oar_bw_run_t *R, const char *name, const char *fwd)
{
    if (oar_block_find_var(R->target, name)) return OAR_OK;
    oar_var_desc_t *v;
    OAR_TRY(oar_block_var_new(R->target, name, &v));
    const oar_var_desc_t *f = oar_block_find_var_recursive(R->fwd_block, fwd);
    if (f) OAR_TRY(oar_var_desc_copy_from(v, f));
    OAR_TRY(oar_var_desc_set_persistable(v, false));
    OAR_TRY(oar_var_desc_set_stop_gradient(v, false));
    return oar_var_desc_set_need_check_feed(v, false);
}

/* A grad flowing into a sub-block run is written later by the enclosing
 * runs, in the grad block of the forward block that declares its forward var;
 * it is declared there now so the ops inside can be checked. */
static int declare_home(oar_bw_run_t *R, const char *name, const char *fwd)
{
    if (oar_block_find_var_recursive(R->target, name)) return OAR_OK;
    const oar_var_desc_t *f = oar_block_find_var_recursive(R->fwd_block, fwd);
    oar_bw_run_t *home = R;
    while (home->up && (!f || home->fwd_block != f->block)) home = home->up;
    oar_bw_run_t at = *home;
    at.fwd_block = f ? f->block : home->fwd_block;
    return declare_grad(&at, name, fwd);
}

static int commit(oar_bw_run_t *R)
{
    int rc = OAR_OK;
    for (int i = 0; i < R->list.n && rc == OAR_OK; i++) {
        oar_op_desc_t *op = R->list.v[i].op;
        for (int s = 0; s < op->ninputs && rc == OAR_OK && !R->top; s++)
            for (int j = 0; j < op->inputs[s].nargs && rc == OAR_OK; j++) {
                const char *a = op->inputs[s].args[j];
                const char *fwd = oar_bw_fwd_of(R, a);
                if (fwd && flows_in(R, fwd)) rc = declare_home(R, a, fwd);
            }
        for (int s = 0; s < op->noutputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->outputs[s].nargs && rc == OAR_OK; j++) {
                const char *a = op->outputs[s].args[j];
                const char *fwd = is_empty(a) ? NULL : oar_bw_fwd_of(R, a);
                if (fwd) rc = declare_grad(R, a, fwd);
            }
        if (rc == OAR_OK) rc = oar_block_insert_op(R->target, -1, op);
        if (rc != OAR_OK) {
            oar_error_prefix("backward: adding grad op '%s' to block %d: ", op->type, R->target->idx);
            break;
        }
        for (int s = 0; s < op->noutputs && rc == OAR_OK; s++)
            for (int j = 0; j < op->outputs[s].nargs && rc == OAR_OK; j++)
                if (!is_empty(op->outputs[s].args[j]))
                    rc = oar_bw_names_add(&R->written, op->outputs[s].args[j]);
    }
    return rc;
}

int oar_bw_run_block(oar_bw_run_t *R, oar_op_desc_t *const *fwd_ops, int nfwd)
{
    int rc = generate(R, fwd_ops, nfwd);
    if (rc == OAR_OK) rc = prune(R);
    if (rc == OAR_OK) rc = addup(R);
    if (rc == OAR_OK && R->top) rc = rename_existing(R);
    if (rc == OAR_OK) rc = commit(R);
    oar_bw_list_free(&R->list);   /* frees the ops that did not make it into the block */
    return rc;
}

int oar_bw_run_sub_block(oar_bw_run_t *up, int fwd_idx)
{
    return oar_bw_run_sub_block_linked(up, fwd_idx, NULL);
}

int oar_bw_run_sub_block_linked(oar_bw_run_t *up, int fwd_idx, const oar_bw_names_t *linked)
{
    oar_bw_pass_t *P = up->P;
    oar_block_t *parent = up->target;
    oar_program_t *p = P->p;
    if (fwd_idx <= 0 || fwd_idx >= P->nblocks0)
        return oar_error(OAR_ERR_RANGE, "backward: sub-block %d is not a forward block of the program "
                         "(1..%d)", fwd_idx, P->nblocks0 - 1);
    if (P->depth > P->nblocks0)
        return oar_error(OAR_ERR_FORMAT, "backward: sub-blocks nest deeper than the program has blocks "
                         "(a block contains itself?)");
    oar_block_t *fwd = oar_program_block(p, fwd_idx), *nb;
    OAR_TRY(oar_grow((void **)&P->made, &P->capmade, P->nmade + 1, sizeof *P->made));
    OAR_TRY(oar_program_append_block(p, parent->idx, &nb));
    P->made[P->nmade++] = nb->idx;
    OAR_TRY(oar_block_set_forward_block_idx(nb, fwd_idx));
    /* the forward ops are copied out: nothing may move them while makers run */
    oar_op_desc_t **ops = NULL;
    if (fwd->nops > 0 && !(ops = oar_xmalloc((size_t)fwd->nops * sizeof *ops))) return OAR_ERR_NOMEM;
    int nops = fwd->nops;
    if (nops) memcpy(ops, fwd->ops, (size_t)nops * sizeof *ops);
    oar_bw_run_t R = { .P = P, .fwd_block = fwd, .target = nb, .top = false, .up = up, .linked = linked };
    P->depth++;
    int rc = oar_bw_run_block(&R, ops, nops);
    P->depth--;
    free(ops);
    oar_bw_names_free(&R.written);
    return rc == OAR_OK ? nb->idx : rc;
}

int oar_gc_grad_block_linked(oar_grad_ctx_t *g, int fwd_block, const char *const *linked, int n)
{
    if (!g) return oar_error(OAR_ERR_INVALID, "oar_gc_grad_block_linked: NULL context");
    if (n < 0 || (n > 0 && !linked)) return oar_error(OAR_ERR_INVALID, "oar_gc_grad_block_linked: bad name list");
    oar_bw_names_t set = {0};
    int rc = OAR_OK;
    for (int i = 0; i < n && rc == OAR_OK; i++)
        rc = linked[i] ? oar_bw_names_add_copy(&set, linked[i])
                       : oar_error(OAR_ERR_INVALID, "oar_gc_grad_block_linked: NULL name %d", i);
    if (rc == OAR_OK) rc = oar_bw_run_sub_block_linked(g->R, fwd_block, &set);
    oar_bw_names_free(&set);
    if (rc < 0 && g->status == OAR_OK) g->status = rc;
    return rc;
}
