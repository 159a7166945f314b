/* backward.c — append_backward and gradients (Fluid's backward.py, in C).
 *
 * Both find the forward ops of block 0 the targets depend on, seed the
 * targets' grads (ones, or given vars), and run the block pass
 * (backward_block.c) whose grad makers may recurse into sub-blocks. On any
 * failure the program is put back as it was, except that blocks appended
 * for sub-block grads stay behind, empty (blocks cannot be removed). */
#include "backward_pass.h"

#include <stdlib.h>
#include <string.h>

/* ---- pass lifetime --------------------------------------------------------- */

static int pass_init(oar_bw_pass_t *P, oar_program_t *p, const char *const *no_grad, int nno_grad)
{
    memset(P, 0, sizeof *P);
    P->p = p;
    P->nblocks0 = oar_program_num_blocks(p);
    P->nvars0 = oar_block_num_vars(oar_program_block(p, 0));
    for (int i = 0; i < nno_grad; i++) {
        if (!no_grad[i]) return oar_error(OAR_ERR_INVALID, "backward: no_grad[%d] is NULL", i);
        OAR_TRY(oar_bw_names_add_copy(&P->no_grad, no_grad[i]));
    }
    return OAR_OK;
}

static void pass_free(oar_bw_pass_t *P)
{
    oar_bw_names_free(&P->no_grad);
    oar_bw_names_free(&P->wanted);
    oar_bw_names_free(&P->reach);
    oar_bw_names_free(&P->blocked);
    free(P->blocked_by);
    oar_strmap_free(&P->gname);
    oar_strmap_free(&P->gfwd);
    oar_strmap_free(&P->renamed);
    free(P->rnew);
    free(P->entries);
    oar_bw_pool_free(&P->pool);
    free(P->made);
    memset(P, 0, sizeof *P);
}

/* What to undo when the pass fails half-way. */
typedef struct undo {
    oar_block_t *b0;
    int nops, nvars;
    oar_op_desc_t *loss_op;
    bool had_role; int role;
} undo_t;

static void empty_block_tail(oar_block_t *b, int nops, int nvars)
{
    while (b->nops > nops) oar_block_remove_op(b, b->nops - 1);
    while (b->nvars > nvars) oar_block_remove_var(b, b->vars[b->nvars - 1]->name);
}

static void rollback(oar_bw_pass_t *P, const undo_t *u, int rc)
{
    /* undoing must not replace the message that says what went wrong */
    char *msg = oar_xstrdup(oar_last_error());
    empty_block_tail(u->b0, u->nops, u->nvars);
    for (int i = 0; i < P->nmade; i++) {
        oar_block_t *b = oar_program_block(P->p, P->made[i]);
        if (b) empty_block_tail(b, 0, 0);
    }
    if (u->loss_op) {
        if (u->had_role) oar_bw_set_role(u->loss_op, u->role);
        else if (oar_op_desc_attr_type(u->loss_op, "op_role") >= 0) oar_op_desc_remove_attr(u->loss_op, "op_role");
    }
    if (msg) oar_error(rc, "%s", msg);
    free(msg);
}

/* ---- finding the forward ops ------------------------------------------------- */

static int footprint_has(oar_program_t *p, const oar_op_desc_t *op, const oar_bw_names_t *set,
                         bool in_reads, bool *out)
{
    oar_bw_names_t r = {0}, w = {0};
    int rc = oar_bw_op_footprint(p, op, &r, &w);
    const oar_bw_names_t *look = in_reads ? &r : &w;
    *out = false;
    for (int i = 0; i < look->n && !*out; i++)
        if (oar_bw_names_has(set, look->v[i])) *out = true;
    oar_bw_names_free(&r);
    oar_bw_names_free(&w);
    return rc;
}

/* index of the last op in [0, end) writing `name`, -1 if none */
static int last_writer(oar_program_t *p, oar_block_t *b, const char *name, int *idx)
{
    oar_bw_names_t one = {0};
    int rc = oar_bw_names_add(&one, name);
    *idx = -1;
    for (int i = b->nops - 1; i >= 0 && rc == OAR_OK; i--) {
        bool hit;
        rc = footprint_has(p, b->ops[i], &one, false, &hit);
        if (rc == OAR_OK && hit) { *idx = i; break; }
    }
    oar_bw_names_free(&one);
    return rc;
}

static bool has_grad_maker(const oar_op_desc_t *op)
{
    const oar_op_def_t *def = oar_registry_op(op->type);
    return def && def->grad;
}

/* A grad op ("<type>_grad", "<type>_grad_grad"): without a grad maker, the
 * gradients it computes cannot be differentiated again. A forward op
 * without one is, as Fluid's EmptyGradOpMaker, constant in its inputs'
 * values (fill_zeros_like, fill_constant_batch_size_like, shape, ...). */
static bool is_grad_op(const oar_op_desc_t *op)
{
    size_t n = strlen(op->type);
    return n > 5 && strcmp(op->type + n - 5, "_grad") == 0;
}

/* `var`, written by an op of type `type` without a grad maker from vars that
 * vary with what is differentiated, would have a gradient if the op had one */
static int add_blocked(oar_bw_pass_t *P, oar_block_t *b, const char *var, const char *type)
{
    const oar_var_desc_t *v = oar_block_find_var(b, var);
    if (!v || !oar_bw_dtype_differentiable(v) || v->stop_gradient || oar_bw_names_has(&P->no_grad, var) ||
        oar_bw_names_has(&P->reach, var) || oar_bw_names_has(&P->blocked, var))
        return OAR_OK;
    OAR_TRY(oar_grow((void **)&P->blocked_by, &P->capblocked, P->blocked.n + 1, sizeof *P->blocked_by));
    P->blocked_by[P->blocked.n] = type;
    return oar_bw_names_add(&P->blocked, var);
}

/* An error when the gradient of `var` is wanted but `var` is blocked. */
static int check_blocked(oar_bw_pass_t *P, const char *var)
{
    if (!oar_bw_names_has(&P->blocked, var) || oar_bw_names_has(&P->reach, var)) return OAR_OK;
    int i = oar_strmap_get(&P->blocked.index, var);
    const char *type = i >= 0 ? P->blocked_by[i] : "?";
    return oar_error(OAR_ERR_UNSUPPORTED, "backward: no gradient flows through op '%s' (it computes '%s' and has "
                     "no grad maker; a gradient of a gradient needs its grad op's double-grad op)", type, var);
}

/* The block-0 vars that vary with what is differentiated: the inputs of
 * gradients(), or for append_backward every var read before any op writes
 * it that may have a grad (params, mostly); then everything an op with a
 * gradient computes from them. The rest are constants: no grad. */
static int find_reach(oar_bw_pass_t *P, oar_block_t *b, int end, const char *const *inputs, int ninputs)
{
    oar_bw_names_t written = {0};
    int rc = OAR_OK;
    for (int i = 0; i < ninputs && rc == OAR_OK; i++) rc = oar_bw_names_add_copy(&P->reach, inputs[i]);
    for (int i = 0; i < end && rc == OAR_OK; i++) {
        const oar_op_desc_t *op = b->ops[i];
        oar_bw_names_t r = {0}, w = {0};
        rc = oar_bw_op_footprint(P->p, op, &r, &w);
        bool live = false;
        for (int k = 0; k < r.n && rc == OAR_OK; k++) {
            if (oar_bw_names_has(&P->reach, r.v[k])) {
                live = true;
            } else if (ninputs == 0 && !oar_bw_names_has(&written, r.v[k]) && !oar_bw_no_grad(P, b, r.v[k])) {
                rc = oar_bw_names_add(&P->reach, r.v[k]);
                live = true;
            }
        }
        if (live && has_grad_maker(op))
            for (int k = 0; k < w.n && rc == OAR_OK; k++)
                if (!oar_bw_no_grad(P, b, w.v[k])) rc = oar_bw_names_add(&P->reach, w.v[k]);
        if (live && !has_grad_maker(op) && is_grad_op(op))
            for (int k = 0; k < w.n && rc == OAR_OK; k++) rc = add_blocked(P, b, w.v[k], op->type);
        for (int k = 0; k < w.n && rc == OAR_OK; k++) rc = oar_bw_names_add(&written, w.v[k]);
        oar_bw_names_free(&r);
        oar_bw_names_free(&w);
    }
    oar_bw_names_free(&written);
    if (rc == OAR_OK) P->use_reach = true;
    return rc;
}

/* The ops in [0, end) that targets depend on through vars that want grads,
 * in forward order (caller frees *ops). */
static int find_path(oar_bw_pass_t *P, oar_block_t *b, int end, const char *const *targets, int ntargets,
                     oar_op_desc_t ***ops, int *nops)
{
    oar_bw_names_t need = {0};
    bool *keep = oar_xcalloc((size_t)(end > 0 ? end : 1), sizeof *keep);
    int rc = keep ? OAR_OK : OAR_ERR_NOMEM;
    for (int i = 0; i < ntargets && rc == OAR_OK; i++) rc = check_blocked(P, targets[i]);
    for (int i = 0; i < ntargets && rc == OAR_OK; i++) rc = oar_bw_names_add(&need, targets[i]);
    int count = 0;
    for (int i = end - 1; i >= 0 && rc == OAR_OK; i--) {
        const oar_op_desc_t *op = b->ops[i];
        if (!has_grad_maker(op)) continue;
        oar_bw_names_t r = {0}, w = {0};
        rc = oar_bw_op_footprint(P->p, op, &r, &w);
        bool hit = false;
        for (int k = 0; k < w.n && !hit; k++) hit = oar_bw_names_has(&need, w.v[k]);
        if (hit && rc == OAR_OK) {
            keep[i] = true;
            count++;
            for (int k = 0; k < r.n && rc == OAR_OK; k++)
                if (!oar_bw_no_grad(P, b, r.v[k])) rc = oar_bw_names_add(&need, r.v[k]);
                else rc = check_blocked(P, r.v[k]);
        }
        oar_bw_names_free(&r);
        oar_bw_names_free(&w);
    }
    oar_op_desc_t **v = NULL;
    if (rc == OAR_OK && count > 0 && !(v = oar_xmalloc((size_t)count * sizeof *v))) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK) {
        int k = 0;
        for (int i = 0; i < end; i++)
            if (keep[i]) v[k++] = b->ops[i];
    }
    free(keep);
    oar_bw_names_free(&need);
    if (rc != OAR_OK) { free(v); return rc; }
    *ops = v;
    *nops = count;
    return OAR_OK;
}

/* ---- seeds ------------------------------------------------------------------ */

static bool dims_known(const oar_var_desc_t *v)
{
    if (v->ndim < 0) return false;
    for (int i = 0; i < v->ndim; i++)
        if (v->dims[i] < 0) return false;
    return true;
}

static int set_shape_attr(oar_op_desc_t *op, const char *type, const int64_t *dims, int ndim)
{
    if (oar_op_attr_type(type, "shape") == OAR_ATTR_INTS) {
        int32_t d[OAR_MAX_DIMS];
        for (int i = 0; i < ndim; i++) {
            if (dims[i] > INT32_MAX) return oar_error(OAR_ERR_RANGE, "%s: dim %lld too large", type, (long long)dims[i]);
            d[i] = (int32_t)dims[i];
        }
        return oar_op_desc_set_attr_ints(op, "shape", d, ndim);
    }
    return oar_op_desc_set_attr_longs(op, "shape", dims, ndim);
}

/* ones shaped like `t` into `grad`: fill_constant when the shape is known,
 * otherwise fill_zeros_like + scale(bias 1) so the batch size comes from t */
static int seed_ones(oar_bw_run_t *R, const oar_var_desc_t *t, const char *grad, int role)
{
    int dtype = t->dtype >= 0 ? t->dtype : OAR_FP32;
    if (dims_known(t)) {
        oar_op_desc_t *op = oar_bw_new_op("fill_constant");
        if (!op) return OAR_ERR_NOMEM;
        int rc = oar_op_desc_set_output(op, "Out", &grad, 1);
        if (rc == OAR_OK) rc = set_shape_attr(op, "fill_constant", t->dims, t->ndim);
        if (rc == OAR_OK) rc = oar_op_desc_set_attr_int(op, "dtype", dtype);
        if (rc == OAR_OK) rc = oar_op_desc_set_attr_float(op, "value", 1.0f);
        if (rc == OAR_OK) rc = oar_bw_set_role(op, role);
        if (rc != OAR_OK) { oar_op_desc_free(op); return rc; }
        return oar_bw_list_push(&R->list, op, false);
    }
    if (!oar_op_is_registered("scale"))
        return oar_error(OAR_ERR_UNSUPPORTED, "backward: target '%s' has an unknown shape and op 'scale' "
                         "(to make its ones) is not registered", t->name);
    const char *zeros = oar_bw_pool_printf(&R->P->pool, "%s@ZEROS", grad);
    if (!zeros) return OAR_ERR_NOMEM;
    oar_op_desc_t *z = oar_bw_new_op("fill_zeros_like"), *s = NULL;
    if (!z) return OAR_ERR_NOMEM;
    int rc = oar_op_desc_set_input(z, "X", (const char *const *)&t->name, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_output(z, "Out", &zeros, 1);
    if (rc == OAR_OK) rc = oar_bw_set_role(z, role);
    if (rc == OAR_OK && !(s = oar_bw_new_op("scale"))) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK) rc = oar_op_desc_set_input(s, "X", &zeros, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_output(s, "Out", &grad, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_attr_float(s, "scale", 1.0f);
    if (rc == OAR_OK) rc = oar_op_desc_set_attr_float(s, "bias", 1.0f);
    if (rc == OAR_OK) rc = oar_bw_set_role(s, role);
    if (rc != OAR_OK) { oar_op_desc_free(z); oar_op_desc_free(s); return rc; }
    rc = oar_bw_list_push(&R->list, z, false);
    if (rc != OAR_OK) { oar_op_desc_free(s); return rc; }
    return oar_bw_list_push(&R->list, s, false);
}

/* the given grad `dy` of target `t`, copied by a one-input sum into t's grad
 * so that other contributions to t's grad never overwrite the caller's var */
static int seed_given(oar_bw_run_t *R, const oar_var_desc_t *t, const char *dy, const char *grad)
{
    const oar_var_desc_t *d = oar_block_find_var(R->target, dy);
    if (!d) return oar_error(OAR_ERR_NOT_FOUND, "gradients: target grad '%s' (of '%s') is not a variable of block 0",
                             dy, t->name);
    if (t->dtype >= 0 && d->dtype >= 0 && t->dtype != d->dtype)
        return oar_error(OAR_ERR_DTYPE, "gradients: target grad '%s' is %s but target '%s' is %s", dy,
                         oar_dtype_name(d->dtype), t->name, oar_dtype_name(t->dtype));
    bool same = t->ndim < 0 || d->ndim < 0 || t->ndim == d->ndim;
    for (int i = 0; same && t->ndim >= 0 && i < t->ndim && i < d->ndim; i++) same = oar_dim_eq(t->dims[i], d->dims[i]);
    if (!same) {
        char a[96], b[96];
        return oar_error(OAR_ERR_SHAPE, "gradients: target grad '%s' has shape %s but target '%s' has %s", dy,
                         oar_shape_str(d->dims, d->ndim, a, sizeof a), t->name,
                         oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    oar_op_desc_t *op = oar_bw_new_op("sum");
    if (!op) return OAR_ERR_NOMEM;
    int rc = oar_op_desc_set_input(op, "X", &dy, 1);
    if (rc == OAR_OK) rc = oar_op_desc_set_output(op, "Out", &grad, 1);
    if (rc != OAR_OK) { oar_op_desc_free(op); return rc; }
    return oar_bw_list_push(&R->list, op, false);
}

/* ---- the shared driver ------------------------------------------------------ */

typedef struct request {
    const char *const *targets; int ntargets;
    const char *const *target_grads;   /* may be NULL */
    bool is_loss;
    const char *const *inputs; int ninputs;
    const char *const *params; int nparams;
} request_t;

static int check_names(const char *what, const char *const *names, int n, oar_block_t *b0, bool declared)
{
    if (n < 0) return oar_error(OAR_ERR_INVALID, "backward: negative number of %s", what);
    if (n > 0 && !names) return oar_error(OAR_ERR_INVALID, "backward: NULL %s list", what);
    for (int i = 0; i < n; i++) {
        if (!names[i]) return oar_error(OAR_ERR_INVALID, "backward: %s[%d] is NULL", what, i);
        if (declared && !oar_block_find_var(b0, names[i]))
            return oar_error(OAR_ERR_NOT_FOUND, "backward: %s '%s' is not a variable of block 0", what, names[i]);
    }
    return OAR_OK;
}

static int run_top(oar_bw_pass_t *P, oar_bw_run_t *R, undo_t *u, const request_t *q)
{
    oar_block_t *b0 = R->target;
    int end = 0;
    for (int i = 0; i < q->ntargets; i++) {
        int w;
        OAR_TRY(last_writer(P->p, b0, q->targets[i], &w));
        if (w < 0 && q->is_loss)
            return oar_error(OAR_ERR_NOT_FOUND, "append_backward: no op in block 0 computes loss '%s'", q->targets[i]);
        if (w + 1 > end) end = w + 1;
        if (q->is_loss) {
            u->loss_op = b0->ops[w];
            u->had_role = oar_op_desc_attr_type(u->loss_op, "op_role") >= 0;
            u->role = oar_bw_op_role(u->loss_op);
        }
    }
    for (int i = 0; i < q->ninputs; i++) OAR_TRY(oar_bw_names_add_copy(&P->wanted, q->inputs[i]));
    OAR_TRY(find_reach(P, b0, end, q->inputs, q->ninputs));
    oar_op_desc_t **path = NULL;
    int npath = 0;
    OAR_TRY(find_path(P, b0, end, q->targets, q->ntargets, &path, &npath));

    int rc = OAR_OK;
    if (u->loss_op) rc = oar_bw_set_role(u->loss_op, u->role | OAR_ROLE_LOSS);
    for (int i = 0; i < q->ntargets && rc == OAR_OK; i++) {
        const oar_var_desc_t *t = oar_block_find_var(b0, q->targets[i]);
        const char *g = oar_bw_grad_name(P, t->name);
        if (!g) rc = OAR_ERR_NOMEM;
        else if (q->target_grads && q->target_grads[i]) rc = seed_given(R, t, q->target_grads[i], g);
        else rc = seed_ones(R, t, g, q->is_loss ? OAR_ROLE_BACKWARD | OAR_ROLE_LOSS : OAR_ROLE_BACKWARD);
    }
    if (rc == OAR_OK) rc = oar_bw_run_block(R, path, npath);
    oar_bw_list_free(&R->list);
    free(path);
    return rc;
}

/* the grad of `fwd` if this pass wrote it in block 0 */
static const char *written_grad(oar_bw_pass_t *P, oar_bw_run_t *R, const char *fwd)
{
    int e = oar_strmap_get(&P->gname, fwd);
    if (e < 0) return NULL;
    const char *g = oar_bw_final_name(P, P->entries[e].grad);
    return oar_bw_names_has(&R->written, g) ? g : NULL;
}

/* Fluid's op_role_var: the op that finally writes a param's grad names the pair. */
static int mark_role_var(oar_block_t *b0, int first, const char *param, const char *grad)
{
    for (int i = b0->nops - 1; i >= first; i--) {
        oar_op_desc_t *op = b0->ops[i];
        bool writes = false;
        for (int s = 0; s < op->noutputs && !writes; s++)
            for (int j = 0; j < op->outputs[s].nargs && !writes; j++)
                writes = strcmp(op->outputs[s].args[j], grad) == 0;
        if (!writes) continue;
        const oar_attr_t *a = oar_op_find_attr(op, "op_role_var");
        int n = a && a->type == OAR_ATTR_STRINGS ? a->n : 0;
        const char **v = oar_xmalloc((size_t)(n + 2) * sizeof *v);
        if (!v) return OAR_ERR_NOMEM;
        for (int k = 0; k < n; k++) v[k] = ((char **)a->list)[k];
        v[n] = param;
        v[n + 1] = grad;
        int rc = oar_op_desc_set_attr_strings(op, "op_role_var", v, n + 2);
        free(v);
        return rc;
    }
    return OAR_OK;
}

static int collect_pairs(oar_bw_pass_t *P, oar_bw_run_t *R, const undo_t *u, const request_t *q,
                         char ***pairs, int *npairs)
{
    oar_block_t *b0 = R->target;
    int cap = q->params ? q->nparams : u->nvars;
    char **out = oar_xcalloc((size_t)(2 * cap + 1), sizeof *out);
    if (!out) return OAR_ERR_NOMEM;
    int n = 0, rc = OAR_OK;
    for (int i = 0; i < cap && rc == OAR_OK; i++) {
        const char *param;
        if (q->params) {
            param = q->params[i];
        } else {
            const oar_var_desc_t *v = b0->vars[i];
            if (!v->persistable || v->stop_gradient) continue;
            param = v->name;
        }
        const char *g = written_grad(P, R, param);
        if (!g) continue;
        bool dup = false;
        for (int k = 0; k < n && !dup; k += 2) dup = strcmp(out[k], param) == 0;
        if (dup) continue;
        if (!(out[n] = oar_xstrdup(param)) || !(out[n + 1] = oar_xstrdup(g))) rc = OAR_ERR_NOMEM;
        n += 2;
        if (rc == OAR_OK) rc = mark_role_var(b0, u->nops, param, g);
    }
    if (rc != OAR_OK) { oar_strings_free(out, n); return rc; }
    *pairs = out;
    *npairs = n / 2;
    return OAR_OK;
}

static int backward(oar_program_t *p, const request_t *q, const char *const *no_grad, int nno_grad,
                    char ***pairs, int *npairs, char ***grads)
{
    oar_block_t *b0 = oar_program_block(p, 0);
    if (!b0) return oar_error(OAR_ERR_INVALID, "backward: NULL program");
    if (q->ntargets <= 0) return oar_error(OAR_ERR_INVALID, "backward: no target to differentiate");
    OAR_TRY(check_names("target", q->targets, q->ntargets, b0, true));
    OAR_TRY(check_names("input", q->inputs, q->ninputs, b0, true));
    OAR_TRY(check_names("parameter", q->params, q->nparams, b0, true));
    OAR_TRY(check_names("no_grad name", no_grad, nno_grad, b0, false));

    oar_bw_pass_t P;
    int rc = pass_init(&P, p, no_grad, nno_grad);
    oar_bw_run_t R = { .P = &P, .fwd_block = b0, .target = b0, .top = true };
    undo_t u = { .b0 = b0, .nops = b0->nops, .nvars = b0->nvars };
    if (rc == OAR_OK) rc = run_top(&P, &R, &u, q);
    if (rc == OAR_OK && pairs) rc = collect_pairs(&P, &R, &u, q, pairs, npairs);
    if (rc == OAR_OK && grads) {
        char **out = oar_xcalloc((size_t)(q->ninputs > 0 ? q->ninputs : 1), sizeof *out);
        if (!out) rc = OAR_ERR_NOMEM;
        for (int i = 0; i < q->ninputs && rc == OAR_OK; i++) {
            const char *g = written_grad(&P, &R, q->inputs[i]);
            if (g && !(out[i] = oar_xstrdup(g))) rc = OAR_ERR_NOMEM;
        }
        if (rc == OAR_OK) *grads = out;
        else oar_strings_free(out, q->ninputs);
    }
    if (rc != OAR_OK) rollback(&P, &u, rc);
    oar_bw_names_free(&R.written);
    pass_free(&P);
    return rc;
}

int oar_backward_append(oar_program_t *p, const char *loss,
                        const char *const *params, int nparams,
                        const char *const *no_grad, int nno_grad,
                        char ***pairs, int *npairs)
{
    if (!pairs || !npairs) return oar_error(OAR_ERR_INVALID, "append_backward: NULL result pointer");
    if (!loss) return oar_error(OAR_ERR_INVALID, "append_backward: NULL loss name");
    *pairs = NULL;
    *npairs = 0;
    request_t q = { .targets = &loss, .ntargets = 1, .is_loss = true, .params = params, .nparams = params ? nparams : 0 };
    return backward(p, &q, no_grad, nno_grad, pairs, npairs, NULL);
}

int oar_backward_gradients(oar_program_t *p, const char *const *targets, int ntargets,
                           const char *const *target_grads,
                           const char *const *inputs, int ninputs,
                           const char *const *no_grad, int nno_grad,
                           char ***grads)
{
    if (!grads) return oar_error(OAR_ERR_INVALID, "gradients: NULL result pointer");
    *grads = NULL;
    if (ninputs <= 0) return oar_error(OAR_ERR_INVALID, "gradients: no input to differentiate with respect to");
    request_t q = { .targets = targets, .ntargets = ntargets, .target_grads = target_grads,
                    .inputs = inputs, .ninputs = ninputs };
    return backward(p, &q, no_grad, nno_grad, NULL, NULL, grads);
}

/* ---- one op's grad ops (eager mode) ------------------------------------------ */

/* The grad ops the maker of `fwd` emits, as append_backward's generate step
 * would (before pruning and summing, which eager mode does itself): grads
 * are named "<var>@GRAD"; the args in no_grad get none (@EMPTY@ outputs).
 * A scratch program stands in for the forward block: it declares nothing,
 * so only no_grad decides. Makers that differentiate sub-blocks fail. */
int oar_bw_op_grad_descs(const oar_op_desc_t *fwd, const char *const *no_grad, int nno_grad,
                         oar_op_desc_t ***ops, int *nops)
{
    if (!fwd || !ops || !nops) return oar_error(OAR_ERR_INVALID, "oar_eager_grad_ops: NULL argument");
    *ops = NULL;
    *nops = 0;
    const oar_op_def_t *def = oar_registry_op(fwd->type);
    if (!def) return oar_error(OAR_ERR_NOT_FOUND, "unknown op type '%s'", fwd->type);
    if (!def->grad) return oar_error(OAR_ERR_UNSUPPORTED, "op '%s' has no gradient", fwd->type);
    oar_program_t *scratch;
    OAR_TRY(oar_program_new(&scratch));
    oar_bw_pass_t P;
    int rc = pass_init(&P, scratch, no_grad, nno_grad);
    oar_bw_run_t R = { .P = &P, .fwd_block = oar_program_block(scratch, 0),
                       .target = oar_program_block(scratch, 0), .top = true };
    if (rc == OAR_OK) {
        oar_grad_ctx_t g = { &P, &R, fwd, OAR_OK };
        rc = def->grad(&g);
        if (rc == OAR_OK) rc = g.status;
        if (rc > 0) rc = OAR_OK;
    }
    if (rc != OAR_OK) {
        char ctx[256];
        oar_error_prefix("backward of %s: ", oar_op_context(fwd, ctx, sizeof ctx));
    }
    oar_op_desc_t **v = NULL;
    if (rc == OAR_OK && R.list.n > 0 && !(v = oar_xcalloc((size_t)R.list.n, sizeof *v))) rc = OAR_ERR_NOMEM;
    if (rc == OAR_OK) {
        for (int i = 0; i < R.list.n; i++) { v[i] = R.list.v[i].op; R.list.v[i].op = NULL; }
        *ops = v;
        *nops = R.list.n;
    }
    oar_bw_list_free(&R.list);
    oar_bw_names_free(&R.written);
    pass_free(&P);
    oar_program_free(scratch);
    return rc;
}
