/* recurrent.c — the recurrent op (StaticRNN) and recurrent_grad.
 *
 * recurrent runs its step block once per time step t of its time-major
 * `inputs` ([T, N, ...]), each step in a new child scope:
 *   - the step block's variable named like input j holds inputs[j][t],
 *   - the memories (attr ex_states) hold initial_states at the first step,
 *     then the previous step's updated memories (attr states),
 *   - the step's variable named like output j is copied to outputs[j][t].
 * `parameters` lists the outer variables the step block reads; they are
 * found through the scope chain. With reverse=true the steps run from T-1
 * down to 0. In training (is_train, and not is_test) the step scopes are kept for
 * recurrent_grad, which re-enters them last step first: it links
 * outputs@GRAD[t] and the gradient of the updated memories (the next
 * step's ex_states gradient, zeros after the last step) in, runs the grad
 * block, and collects inputs@GRAD[t], the parameters' gradients (summed over
 * steps) and, at the first step, initial_states@GRAD. The ops themselves
 * (slots, attributes, docs) are declared in recurrent.ops. */
#include "op.h"
#include "scope.h"
#include "lod_plumbing.h"
#include "ops/recurrent.h"   /* generated from recurrent.ops: the attribute struct */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static oar_tensor_t *var_value(oar_variable_t *v)
{
    if (!v || v->type != OAR_VAR_LOD_TENSOR || !v->u.tensor || v->u.tensor->dtype < 0) return NULL;
    return v->u.tensor;
}

/* a STRINGS attr of the desc as a list; absent: empty */
static const char *const *str_list(const oar_op_desc_t *op, const char *name, int *n)
{
    const void *d = NULL;
    *n = 0;
    if (oar_op_desc_get_attr_list(op, name, &d, n) != OAR_OK) { oar_clear_error(); *n = 0; return NULL; }
    return d;
}

/* the decoder's last step: the memories' names point into the desc */
static void rnn_finish(oar_decode_ctx_t *d, oar_rnn_attrs_t *a)
{
    a->ex_states = str_list(oar_dec_op(d), "ex_states", &a->n_ex_states);
    a->states = str_list(oar_dec_op(d), "states", &a->n_states);
}

/* the grad maker reads the forward desc (no decoded struct there) */
static int str_count(const oar_op_desc_t *op, const char *name)
{
    int n;
    (void)str_list(op, name, &n);
    return n;
}

static int grad_name(const char *fwd, char *buf, size_t n)
{
    int r = snprintf(buf, n, "%s%s", fwd, OAR_GRAD_SUFFIX);
    if (r < 0 || (size_t)r >= n) return oar_error(OAR_ERR_INVALID, "variable name '%s' is too long", fwd);
    return OAR_OK;
}

static int set_local(oar_scope_t *s, const char *name, const oar_tensor_t *t)
{
    oar_variable_t *v;
    OAR_TRY(oar_scope_var(s, name, &v));
    return oar_variable_set_tensor(v, (oar_tensor_t *)t);
}

static size_t step_bytes(const oar_tensor_t *t)
{
    size_t n = oar_dtype_size(t->dtype);
    for (int i = 1; i < t->ndim; i++) n *= (size_t)t->dims[i];
    return n;
}

/* a new tensor holding step t of x ([T, ...] -> [...]) */
static int slice_step(const oar_tensor_t *x, int64_t t, oar_tensor_t **out)
{
    oar_tensor_t *s;
    OAR_TRY(oar_tensor_new_empty(&s));
    int rc = oar_tensor_resize(s, x->dims + 1, x->ndim - 1);
    void *d = rc == OAR_OK ? oar_tensor_mutable(s, x->dtype) : NULL;
    if (rc == OAR_OK && !d) rc = OAR_ERR_NOMEM;
    size_t b = step_bytes(x);
    if (rc == OAR_OK) rc = oar_cf_host(x);
    if (rc == OAR_OK && b > 0) memcpy(d, (const char *)x->buf->data + (size_t)t * b, b);
    if (rc != OAR_OK) { oar_tensor_free(s); return rc; }
    *out = s;
    return OAR_OK;
}

/* dst[t] := v, dst sized [T, v's dims] on first use (first) */
static int put_step(oar_tensor_t *dst, int64_t T, int64_t t, const oar_tensor_t *v, bool first, const char *what)
{
    if (first) {
        int64_t dims[OAR_MAX_DIMS];
        if (v->ndim + 1 > OAR_MAX_DIMS) return oar_error(OAR_ERR_SHAPE, "'%s': too many dims", what);
        dims[0] = T;
        memcpy(dims + 1, v->dims, sizeof(int64_t) * (size_t)v->ndim);
        oar_tensor_reset(dst);
        oar_tensor_clear_lod(dst);
        OAR_TRY(oar_tensor_resize(dst, dims, v->ndim + 1));
        if (!oar_tensor_mutable(dst, v->dtype)) return OAR_ERR_NOMEM;
    }
    bool same = dst->ndim == v->ndim + 1 && dst->dtype == v->dtype;
    for (int i = 0; same && i < v->ndim; i++) same = dst->dims[i + 1] == v->dims[i];
    if (!same) {
        char a[128], b[128];
        return oar_error(OAR_ERR_SHAPE, "'%s' at step %lld has shape %s %s; other steps have %s %s", what,
                         (long long)t, oar_shape_str(v->dims, v->ndim, a, sizeof a), oar_dtype_name(v->dtype),
                         oar_shape_str(dst->dims + 1, dst->ndim - 1, b, sizeof b), oar_dtype_name(dst->dtype));
    }
    size_t n = step_bytes(dst);
    if (n > 0 && !oar_tensor_has_data((oar_tensor_t *)v)) return oar_error(OAR_ERR_INVALID, "'%s' has no data", what);
    OAR_TRY(oar_cf_host(v));
    OAR_TRY(oar_cf_host(dst));
    if (n > 0) memcpy((char *)dst->buf->data + (size_t)t * n, v->buf->data, n);
    return OAR_OK;
}

/* sequence length: dims[0] shared by every input */
static int seq_len(oar_kernel_ctx_t *k, int64_t *T)
{
    int n = oar_k_in_count(k, "inputs");
    if (n == 0) return oar_k_error(k, OAR_ERR_INVALID, "no step inputs: a recurrent op needs at least one sequence");
    for (int j = 0; j < n; j++) {
        const char *name = oar_k_in_name(k, "inputs", j);
        oar_tensor_t *x = var_value(oar_k_in_var(k, "inputs", j));
        if (!x || (oar_tensor_numel_of(x) > 0 && !oar_tensor_has_data(x)))
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "input '%s' has no value", name);
        if (x->ndim < 2) {
            char b[128];
            return oar_k_error(k, OAR_ERR_SHAPE, "input '%s' has shape %s; step inputs are time-major [T, N, ...]",
                               name, oar_shape_str(x->dims, x->ndim, b, sizeof b));
        }
        if (j == 0) *T = x->dims[0];
        else if (x->dims[0] != *T)
            return oar_k_error(k, OAR_ERR_SHAPE, "input '%s' has %lld steps, input '%s' has %lld", name,
                               (long long)x->dims[0], oar_k_in_name(k, "inputs", 0), (long long)*T);
    }
    if (*T <= 0) return oar_k_error(k, OAR_ERR_SHAPE, "the sequences have no steps");
    return OAR_OK;
}

static int check_states(oar_kernel_ctx_t *k, int *nstates)
{
    const oar_rnn_attrs_t *a = oar_k_attrs(k);
    int ne = a->n_ex_states, ns = a->n_states;
    int ni = oar_k_in_count(k, "initial_states");
    if (ne != ns || ne != ni)
        return oar_k_error(k, OAR_ERR_INVALID, "attr ex_states has %d names, attr states %d and initial_states %d "
                           "variables; they must match", ne, ns, ni);
    *nstates = ne;
    return OAR_OK;
}

static int step_block(oar_kernel_ctx_t *k, int *idx)
{
    *idx = ((const oar_rnn_attrs_t *)oar_k_attrs(k))->sub_block;
    if (!oar_program_block(oar_k_program(k), *idx))
        return oar_k_error(k, OAR_ERR_FORMAT, "attr sub_block (%d) is not a block of the program", *idx);
    return OAR_OK;
}

/* ---- recurrent ------------------------------------------------------------ */
static int rnn_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_out_count(c, "step_scopes") > 0)
        OAR_TRY(oar_ic_set_out_var_type(c, "step_scopes", 0, OAR_VAR_STEP_SCOPES));
    return OAR_OK;
}

/* links step t's inputs and memories into scope s (prev: the previous step's) */
static int link_step(oar_kernel_ctx_t *k, oar_scope_t *s, oar_scope_t *prev, int64_t t, int nstates)
{
    const oar_rnn_attrs_t *a = oar_k_attrs(k);
    for (int j = 0; j < oar_k_in_count(k, "inputs"); j++) {
        oar_tensor_t *x = var_value(oar_k_in_var(k, "inputs", j)), *st;
        OAR_TRY(slice_step(x, t, &st));
        int rc = set_local(s, oar_k_in_name(k, "inputs", j), st);
        oar_tensor_free(st);
        OAR_TRY(rc);
    }
    for (int i = 0; i < nstates; i++) {
        const char *ex = a->ex_states[i];
        oar_tensor_t *v;
        if (!prev) {
            v = var_value(oar_k_in_var(k, "initial_states", i));
            if (!v) return oar_k_error(k, OAR_ERR_NOT_FOUND, "initial state '%s' (of memory '%s') has no value",
                                       oar_k_in_name(k, "initial_states", i), ex);
        } else {
            const char *st = a->states[i];
            v = var_value(oar_scope_find_local(prev, st));
            if (!v) return oar_k_error(k, OAR_ERR_NOT_FOUND, "memory '%s' was not updated at step %lld (state '%s' "
                                       "has no value)", ex, (long long)t, st);
        }
        OAR_TRY(set_local(s, ex, v));
    }
    return OAR_OK;
}

static int rnn_run(oar_kernel_ctx_t *k)
{
    const oar_rnn_attrs_t *a = oar_k_attrs(k);
    int64_t T = 0;
    int nstates = 0, block = 0;
    OAR_TRY(seq_len(k, &T));
    OAR_TRY(check_states(k, &nstates));
    OAR_TRY(step_block(k, &block));
    oar_step_scopes_t *keep = NULL;
    oar_variable_t *sv = oar_k_out_var(k, "step_scopes", 0);
    if (sv) {
        if (!(keep = oar_var_step_scopes(sv))) return OAR_ERR_DTYPE;
        oar_step_scopes_clear(keep);
        if (!a->is_train || a->is_test) keep = NULL;
    }
    bool reverse = a->reverse;
    oar_scope_t *prev = NULL;
    int rc = OAR_OK;
    for (int64_t i = 0; i < T && rc == OAR_OK; i++) {
        int64_t t = reverse ? T - 1 - i : i;
        oar_scope_t *s;
        rc = oar_scope_new_detached_kid(oar_k_scope(k), &s);
        if (rc != OAR_OK) break;
        rc = link_step(k, s, prev, t, nstates);
        if (rc == OAR_OK) {
            rc = oar_k_run_block(k, block, s);
            if (rc != OAR_OK) oar_error_prefix("step %lld: ", (long long)t);
        }
        for (int j = 0; j < oar_k_out_count(k, "outputs") && rc == OAR_OK; j++) {
            const char *name = oar_k_out_name(k, "outputs", j);
            oar_tensor_t *v = var_value(oar_scope_find_local(s, name));
            oar_variable_t *ov = oar_k_out_var(k, "outputs", j);
            oar_tensor_t *dst = ov ? oar_var_tensor(ov) : NULL;
            if (!v) rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "step output '%s' has no value after step %lld", name, (long long)t);
            else if (!dst) rc = oar_k_error(k, OAR_ERR_DTYPE, "output '%s' must be a LoD tensor", name);
            else rc = put_step(dst, T, t, v, i == 0, name);
        }
        if (rc == OAR_OK && keep) rc = oar_step_scopes_push(keep, s);
        oar_scope_free(prev);
        prev = s;
    }
    oar_scope_free(prev);
    return rc;
}

/* The gradients of the step block's outputs and updated memories are
 * linked in by recurrent_grad, not computed inside the grad block. */
static int rnn_grad(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    int sub = oar_attr_block(f, "sub_block");
    if (sub < 0) return oar_error(OAR_ERR_FORMAT, "recurrent: attr sub_block is not set");
    int nout = oar_op_desc_output_count(f, "outputs"), ns = str_count(f, "states");
    const char **linked = oar_xcalloc((size_t)(nout + ns + 1), sizeof *linked);
    if (!linked) return OAR_ERR_NOMEM;
    for (int j = 0; j < nout; j++) linked[j] = oar_op_desc_output_arg(f, "outputs", j);
    for (int i = 0; i < ns; i++) linked[nout + i] = oar_op_desc_get_attr_strings_at(f, "states", i);
    int gb = oar_gc_grad_block_linked(g, sub, linked, nout + ns);
    free(linked);
    if (gb < 0) return gb;
    oar_op_desc_t *op = oar_gc_new_op(g, "recurrent_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_op_desc_set_attr_block(op, "sub_block", gb));
    OAR_TRY(oar_gc_in(g, op, "inputs"));
    OAR_TRY(oar_gc_in(g, op, "initial_states"));
    OAR_TRY(oar_gc_in(g, op, "parameters"));
    OAR_TRY(oar_gc_out(g, op, "outputs"));
    OAR_TRY(oar_gc_out(g, op, "step_scopes"));
    OAR_TRY(oar_gc_out_grad(g, op, "outputs"));
    OAR_TRY(oar_gc_in_grad(g, op, "inputs"));
    OAR_TRY(oar_gc_in_grad(g, op, "initial_states"));
    return oar_gc_in_grad(g, op, "parameters");
}

/* ---- recurrent_grad ---------------------------------------------------------- */
static int rnng_infer(oar_infer_ctx_t *c)
{
    static const char *const slots[3][2] = {
        {"inputs", "inputs@GRAD"}, {"initial_states", "initial_states@GRAD"}, {"parameters", "parameters@GRAD"}};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < oar_ic_out_count(c, slots[s][1]) && i < oar_ic_in_count(c, slots[s][0]); i++) {
            const char *name = oar_ic_out_name(c, slots[s][1], i);
            if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) continue;
            int nd;
            const int64_t *d = oar_ic_in_dims(c, slots[s][0], i, &nd);
            if (!d) { oar_clear_error(); continue; }
            int64_t dims[OAR_MAX_DIMS];
            memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
            OAR_TRY(oar_ic_set_out(c, slots[s][1], i, dims, nd, oar_ic_in_dtype(c, slots[s][0], i)));
        }
    return OAR_OK;
}

/* the output tensor of grad slot `slot` arg i, NULL when not wanted */
static int grad_out(oar_kernel_ctx_t *k, const char *slot, int i, oar_tensor_t **out)
{
    *out = NULL;
    const char *name = i < oar_k_out_count(k, slot) ? oar_k_out_name(k, slot, i) : NULL;
    if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) return OAR_OK;
    oar_variable_t *v = oar_k_out_var(k, slot, i);
    *out = v ? oar_var_tensor(v) : NULL;
    if (!*out) return oar_k_error(k, OAR_ERR_DTYPE, "output '%s' must be a LoD tensor", name);
    return OAR_OK;
}

static bool block_writes(oar_block_t *b, const char *name)
{
    for (int i = 0; i < b->nops; i++) {
        const oar_op_desc_t *op = b->ops[i];
        for (int s = 0; s < op->noutputs; s++)
            for (int j = 0; j < op->outputs[s].nargs; j++)
                if (strcmp(op->outputs[s].args[j], name) == 0) return true;
    }
    return false;
}

/* local value of `fwd`@GRAD in s when the grad block computes it */
static oar_tensor_t *inner_grad(oar_block_t *gb, oar_scope_t *s, const char *fwd)
{
    char g[512];
    if (grad_name(fwd, g, sizeof g) != OAR_OK || !block_writes(gb, g)) return NULL;
    return var_value(oar_scope_find_local(s, g));
}

/* links the step's output gradients (slice t of outputs@GRAD) and its
 * updated memories' gradients (from the later step's scope `later`) */
static int link_grads(oar_kernel_ctx_t *k, oar_scope_t *s, oar_scope_t *later, int64_t t, int nstates)
{
    const oar_rnn_attrs_t *a = oar_k_attrs(k);
    char g[512];
    for (int j = 0; j < oar_k_in_count(k, "outputs"); j++) {
        const char *name = oar_k_in_name(k, "outputs", j);
        OAR_TRY(grad_name(name, g, sizeof g));
        oar_tensor_t *og = j < oar_k_in_count(k, "outputs@GRAD") ? var_value(oar_k_in_var(k, "outputs@GRAD", j)) : NULL;
        oar_tensor_t *v = NULL;
        int rc;
        if (og) rc = slice_step(og, t, &v);
        else {
            oar_tensor_t *fv = var_value(oar_scope_find_local(s, name));
            if (!fv) continue;
            rc = oar_cf_new_zeros_like(fv, &v);
        }
        if (rc == OAR_OK) rc = set_local(s, g, v);
        oar_tensor_free(v);
        OAR_TRY(rc);
    }
    for (int i = 0; i < nstates; i++) {
        const char *st = a->states[i], *ex = a->ex_states[i];
        OAR_TRY(grad_name(st, g, sizeof g));
        char exg[512];
        OAR_TRY(grad_name(ex, exg, sizeof exg));
        oar_tensor_t *carried = later ? var_value(oar_scope_find_local(later, exg)) : NULL;
        if (carried) {
            OAR_TRY(set_local(s, g, carried));
            continue;
        }
        oar_tensor_t *fv = var_value(oar_scope_find_local(s, st)), *z = NULL;
        if (!fv) return oar_k_error(k, OAR_ERR_NOT_FOUND, "memory state '%s' has no value in its step scope", st);
        OAR_TRY(oar_cf_new_zeros_like(fv, &z));
        int rc = set_local(s, g, z);
        oar_tensor_free(z);
        OAR_TRY(rc);
    }
    return OAR_OK;
}

static int rnng_run(oar_kernel_ctx_t *k)
{
    const oar_rnn_attrs_t *a = oar_k_attrs(k);
    int64_t T = 0;
    int nstates = 0, gbi = 0;
    OAR_TRY(seq_len(k, &T));
    OAR_TRY(check_states(k, &nstates));
    OAR_TRY(step_block(k, &gbi));
    oar_block_t *gb = oar_program_block(oar_k_program(k), gbi);
    oar_variable_t *sv = oar_k_in_var(k, "step_scopes", 0);
    oar_step_scopes_t *steps = sv && sv->type == OAR_VAR_STEP_SCOPES ? sv->u.steps : NULL;
    if (!steps || steps->n != T)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "step_scopes '%s' holds %d scopes for %lld steps (was the forward op "
                           "run with is_train=true?)", oar_k_in_name(k, "step_scopes", 0), steps ? steps->n : 0,
                           (long long)T);
    bool reverse = a->reverse;
    int npar = oar_k_in_count(k, "parameters"), nin = oar_k_in_count(k, "inputs");
    oar_tensor_t **acc = oar_xcalloc((size_t)(npar + 1), sizeof *acc);
    bool *started = oar_xcalloc((size_t)(nin + 1), sizeof *started);
    int rc = acc && started ? OAR_OK : OAR_ERR_NOMEM;
    for (int64_t i = T - 1; i >= 0 && rc == OAR_OK; i--) {
        int64_t t = reverse ? T - 1 - i : i;
        oar_scope_t *s = steps->scopes[i], *later = i + 1 < T ? steps->scopes[i + 1] : NULL;
        rc = link_grads(k, s, later, t, nstates);
        if (rc == OAR_OK) {
            rc = oar_k_run_block(k, gbi, s);
            if (rc != OAR_OK) oar_error_prefix("step %lld: ", (long long)t);
        }
        for (int p = 0; p < npar && rc == OAR_OK; p++) {
            oar_tensor_t *lg = inner_grad(gb, s, oar_k_in_name(k, "parameters", p));
            if (!lg) continue;
            if (!acc[p]) rc = oar_tensor_copy(lg, &acc[p]);
            else rc = oar_cf_add_into(acc[p], lg, oar_k_in_name(k, "parameters", p));
        }
        for (int j = 0; j < nin && rc == OAR_OK; j++) {
            oar_tensor_t *out = NULL;
            rc = grad_out(k, "inputs@GRAD", j, &out);
            if (rc != OAR_OK || !out) continue;
            const char *name = oar_k_in_name(k, "inputs", j);
            if (!started[j]) {
                rc = oar_cf_zeros_like(out, var_value(oar_k_in_var(k, "inputs", j)));
                started[j] = true;
            }
            oar_tensor_t *lg = inner_grad(gb, s, name);
            if (rc == OAR_OK && lg) rc = put_step(out, T, t, lg, false, name);
        }
    }
    /* initial states: the gradient of the memories at the first step */
    for (int i = 0; i < nstates && rc == OAR_OK; i++) {
        oar_tensor_t *out = NULL;
        rc = grad_out(k, "initial_states@GRAD", i, &out);
        if (rc != OAR_OK || !out) continue;
        oar_tensor_t *lg = inner_grad(gb, steps->scopes[0], a->ex_states[i]);
        if (lg) rc = oar_tensor_share(out, lg);
        else rc = oar_cf_zeros_like(out, var_value(oar_k_in_var(k, "initial_states", i)));
    }
    for (int p = 0; p < npar && rc == OAR_OK; p++) {
        oar_tensor_t *out = NULL;
        rc = grad_out(k, "parameters@GRAD", p, &out);
        if (rc != OAR_OK || !out) continue;
        if (acc[p]) rc = oar_tensor_share(out, acc[p]);
        else {
            oar_tensor_t *pv = var_value(oar_k_in_var(k, "parameters", p));
            rc = pv ? oar_cf_zeros_like(out, pv)
                    : oar_k_error(k, OAR_ERR_NOT_FOUND, "parameter '%s' has no value", oar_k_in_name(k, "parameters", p));
        }
    }
    for (int p = 0; acc && p < npar; p++) oar_tensor_free(acc[p]);
    free(acc);
    free(started);
    return rc;
}

#define OAR_OPS_DEFINE
#include "ops/recurrent.h"
