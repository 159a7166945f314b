/* control_flow.c — conditional_block and while (Fluid's control-flow ops)
 * with their grads, and select_input/select_output (layers.cond).
 *
 * Forward: the op runs its sub-block in a child scope of the scope it runs
 * in (one per loop step); outer variables the sub-block reads are found
 * through the parent chain, the sub-block's own variables live in the child.
 * In training the children are kept in the op's STEP_SCOPES output so that
 * the grad op can re-enter them; the executor's local scope, dropped when
 * the run ends, takes them along. Before a kept child runs, the op records
 * the values of the outer variables the sub-block writes, and afterwards
 * shadows them in the child with those values: grad ops that re-enter it
 * then see each outer variable as the forward ops of that step saw it, not
 * as later steps left it.
 *
 * Backward: the grad op re-enters the kept scopes, last step first. The grad
 * block's names for gradients are `<var>@GRAD`; grads it writes are local to
 * the scope it runs in. Before each step the op links the gradients of the
 * sub-block's outputs in (Out@GRAD, or for loop-carried variables the
 * gradient the later step computed), and after it collects the input
 * gradients: loop-carried ones carry on to the earlier step, the others
 * (parameters) are summed over steps into the outer X@GRAD. Array gradients
 * are accumulated item by item in the outer array (see array_ops.c).
 * The ops are declared in control_flow.ops; this file holds their inference,
 * grad makers and runs. */
#include "op.h"
#include "exec.h"
#include "bounded.h"
#include "scope.h"
#include "lod_plumbing.h"
#include "ops/control_flow.h"   /* generated from control_flow.ops: the attribute struct */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

static bool is_empty_name(const char *n) { return !n || strcmp(n, OAR_EMPTY_VAR) == 0; }

static int grad_name(const char *fwd, char *buf, size_t n)
{
    int r = snprintf(buf, n, "%s%s", fwd, OAR_GRAD_SUFFIX);
    if (r < 0 || (size_t)r >= n) return oar_error(OAR_ERR_INVALID, "variable name '%s' is too long", fwd);
    return OAR_OK;
}

static oar_tensor_t *var_value(oar_variable_t *v)
{
    if (!v || v->type != OAR_VAR_LOD_TENSOR || !v->u.tensor || v->u.tensor->dtype < 0) return NULL;
    return v->u.tensor;
}

/* a new reference to a tensor sharing t's buffer */
static int share_new(const oar_tensor_t *t, oar_tensor_t **out)
{
    oar_tensor_t *s;
    OAR_TRY(oar_tensor_new_empty(&s));
    int rc = oar_tensor_share(s, t);
    if (rc != OAR_OK) { oar_tensor_free(s); return rc; }
    *out = s;
    return OAR_OK;
}

/* scope s's own variable `name` := t (shared) */
static int set_local(oar_scope_t *s, const char *name, const oar_tensor_t *t)
{
    oar_variable_t *v;
    OAR_TRY(oar_scope_var(s, name, &v));
    return oar_variable_set_tensor(v, (oar_tensor_t *)t);
}

static oar_tensor_t *local_value(oar_scope_t *s, const char *name)
{
    return var_value(oar_scope_find_local(s, name));
}

/* whether an op of block b writes `name` */
static bool block_writes(oar_block_t *b, const char *name)
{
    for (int i = 0; b && i < b->nops; i++) {
        const oar_op_desc_t *op = b->ops[i];
        for (int s = 0; s < op->noutputs; s++)
            for (int j = 0; j < op->outputs[s].nargs; j++)
                if (strcmp(op->outputs[s].args[j], name) == 0) return true;
    }
    return false;
}

static int sub_block(oar_kernel_ctx_t *k, oar_block_t **out)
{
    int idx = ((const oar_cf_attrs_t *)oar_k_attrs(k))->sub_block;
    oar_block_t *b = idx >= 0 ? oar_program_block(oar_k_program(k), idx) : NULL;
    if (!b) return oar_k_error(k, OAR_ERR_FORMAT, "attr sub_block (%d) is not a block of the program", idx);
    *out = b;
    return OAR_OK;
}

/* the kept scopes of STEP_SCOPES output/input `slot` (NULL when absent) */
static int steps_of(oar_kernel_ctx_t *k, oar_variable_t *v, const char *slot, oar_step_scopes_t **out)
{
    *out = NULL;
    if (!v) return OAR_OK;
    if (v->type != 0 && v->type != OAR_VAR_STEP_SCOPES)
        return oar_k_error(k, OAR_ERR_DTYPE, "%s '%s' must be a STEP_SCOPES variable", slot, oar_variable_name(v));
    *out = oar_var_step_scopes(v);
    return *out ? OAR_OK : OAR_ERR_NOMEM;
}

/* ---- snapshots of outer outputs (forward) ----------------------------------- */

typedef struct snaps { const char **names; oar_tensor_t **vals; int n; } snaps_t;

static void snaps_free(snaps_t *s)
{
    for (int i = 0; i < s->n; i++) oar_tensor_free(s->vals[i]);
    free(s->names);
    free(s->vals);
    memset(s, 0, sizeof *s);
}

/* the current values of the outer tensors in output slot `slot` */
static int snaps_take(oar_kernel_ctx_t *k, const char *slot, snaps_t *s)
{
    memset(s, 0, sizeof *s);
    int n = oar_k_out_count(k, slot);
    if (n == 0) return OAR_OK;
    s->names = oar_xcalloc((size_t)n, sizeof *s->names);
    s->vals = oar_xcalloc((size_t)n, sizeof *s->vals);
    if (!s->names || !s->vals) { snaps_free(s); return OAR_ERR_NOMEM; }
    for (int i = 0; i < n; i++) {
        oar_tensor_t *t = var_value(oar_k_out_var(k, slot, i));
        if (!t) continue;
        int rc = share_new(t, &s->vals[s->n]);
        if (rc != OAR_OK) { snaps_free(s); return rc; }
        s->names[s->n++] = oar_k_out_name(k, slot, i);
    }
    return OAR_OK;
}

static int snaps_shadow(const snaps_t *s, oar_scope_t *child)
{
    for (int i = 0; i < s->n; i++) OAR_TRY(set_local(child, s->names[i], s->vals[i]));
    return OAR_OK;
}

/* Runs `block` once in a new child of the op's scope; keeps the child in
 * `keep` (with shadows of `out_slot`'s outer tensors) when keep != NULL. */
static int run_child(oar_kernel_ctx_t *k, oar_block_t *block, const char *out_slot, oar_step_scopes_t *keep)
{
    snaps_t s = {0};
    if (keep) OAR_TRY(snaps_take(k, out_slot, &s));
    oar_scope_t *child;
    int rc = oar_scope_new_detached_kid(oar_k_scope(k), &child);
    if (rc != OAR_OK) { snaps_free(&s); return rc; }
    rc = oar_k_run_block(k, block->idx, child);
    if (rc == OAR_OK && keep) rc = snaps_shadow(&s, child);
    if (rc == OAR_OK && keep) rc = oar_step_scopes_push(keep, child);
    oar_scope_free(child);
    snaps_free(&s);
    return rc;
}

/* ---- gradient links (backward) ------------------------------------------------ */

/* Arrays: copy the outer array's items into the step's own gradient array
 * before the step, and the step's items back after it. */
static int array_link_in(oar_scope_t *s, const char *inner, oar_variable_t *outer)
{
    oar_variable_t *v;
    OAR_TRY(oar_scope_var(s, inner, &v));
    if (v == outer) return OAR_OK;
    oar_tensor_array_t *dst = oar_var_array(v);
    if (!dst) return OAR_ERR_DTYPE;
    const oar_tensor_array_t *src = outer && outer->type == OAR_VAR_LOD_TENSOR_ARRAY ? outer->u.array : NULL;
    OAR_TRY(oar_array_resize(dst, 0));
    if (!src) return OAR_OK;
    OAR_TRY(oar_array_resize(dst, src->n));
    for (int i = 0; i < src->n; i++) dst->items[i] = oar_tensor_retain(src->items[i]);
    return OAR_OK;
}

static int array_link_out(oar_scope_t *s, const char *inner, oar_variable_t *outer)
{
    oar_variable_t *v = oar_scope_find_local(s, inner);
    if (!v || v == outer || v->type != OAR_VAR_LOD_TENSOR_ARRAY) return OAR_OK;
    oar_tensor_array_t *dst = oar_var_array(outer);
    if (!dst) return OAR_ERR_DTYPE;
    const oar_tensor_array_t *src = v->u.array;
    if (src->n > dst->n) OAR_TRY(oar_array_resize(dst, src->n));
    for (int i = 0; i < src->n; i++) {
        if (!src->items[i] || src->items[i] == dst->items[i]) continue;
        oar_tensor_free(dst->items[i]);
        dst->items[i] = oar_tensor_retain(src->items[i]);
    }
    return OAR_OK;
}

/* The per-variable plan of a grad op over its forward inputs X (slot
 * `xs`) and outputs Out (slot `os`). */
typedef struct gvar {
    const char *fwd;          /* forward name */
    char inner[512];          /* its gradient's name inside the grad block */
    const char *outer;        /* the outer gradient name (slot arg), NULL when not wanted */
    oar_variable_t *fwd_var;  /* the forward variable */
    bool array;
    bool written;             /* the grad block writes `inner` */
    int carried;              /* X: index of the same var in Out, -1 if none */
    oar_tensor_t *g;          /* Out tensors: the gradient linked into the next step (owned) */
    oar_tensor_t *acc;        /* X tensors that are not carried: sum over steps (owned) */
} gvar_t;

typedef struct gplan {
    gvar_t *x; int nx;
    gvar_t *out; int nout;
    oar_block_t *gblock;
} gplan_t;

static void gplan_free(gplan_t *p)
{
    for (int i = 0; i < p->nx; i++) oar_tensor_free(p->x[i].acc);
    for (int j = 0; j < p->nout; j++) oar_tensor_free(p->out[j].g);
    free(p->x);
    free(p->out);
    memset(p, 0, sizeof *p);
}

static int gplan_init(oar_kernel_ctx_t *k, const char *xs, const char *os, const char *xgs, const char *ogs,
                      gplan_t *p)
{
    memset(p, 0, sizeof *p);
    OAR_TRY(sub_block(k, &p->gblock));
    p->nx = oar_k_in_count(k, xs);
    p->nout = oar_k_in_count(k, os);
    p->x = oar_xcalloc((size_t)(p->nx ? p->nx : 1), sizeof *p->x);
    p->out = oar_xcalloc((size_t)(p->nout ? p->nout : 1), sizeof *p->out);
    if (!p->x || !p->out) { gplan_free(p); return OAR_ERR_NOMEM; }
    int rc = OAR_OK;
    for (int j = 0; j < p->nout && rc == OAR_OK; j++) {
        gvar_t *o = &p->out[j];
        o->fwd = oar_k_in_name(k, os, j);
        o->fwd_var = oar_k_in_var(k, os, j);
        o->array = o->fwd_var && o->fwd_var->type == OAR_VAR_LOD_TENSOR_ARRAY;
        o->outer = j < oar_k_in_count(k, ogs) ? oar_k_in_name(k, ogs, j) : NULL;
        if (is_empty_name(o->outer)) o->outer = NULL;
        rc = grad_name(o->fwd, o->inner, sizeof o->inner);
        if (rc == OAR_OK && o->outer && !o->array) {
            oar_tensor_t *og = var_value(oar_k_in_var(k, ogs, j));
            if (og) rc = share_new(og, &o->g);
        }
    }
    for (int i = 0; i < p->nx && rc == OAR_OK; i++) {
        gvar_t *x = &p->x[i];
        x->fwd = oar_k_in_name(k, xs, i);
        x->fwd_var = oar_k_in_var(k, xs, i);
        x->array = x->fwd_var && x->fwd_var->type == OAR_VAR_LOD_TENSOR_ARRAY;
        x->outer = i < oar_k_out_count(k, xgs) ? oar_k_out_name(k, xgs, i) : NULL;
        if (is_empty_name(x->outer)) x->outer = NULL;
        x->carried = -1;
        for (int j = 0; j < p->nout; j++)
            if (strcmp(p->out[j].fwd, x->fwd) == 0) x->carried = j;
        rc = grad_name(x->fwd, x->inner, sizeof x->inner);
        x->written = rc == OAR_OK && block_writes(p->gblock, x->inner);
    }
    if (rc != OAR_OK) gplan_free(p);
    return rc;
}

/* Arrays of X: the outer gradient array (written in place); a loop-carried
 * array starts from its output gradient when that is another variable. */
static int gplan_arrays_start(oar_kernel_ctx_t *k, gplan_t *p, const char *xgs, const char *ogs)
{
    for (int i = 0; i < p->nx; i++) {
        gvar_t *x = &p->x[i];
        if (!x->array || !x->outer) continue;
        oar_variable_t *ov = oar_k_out_var(k, xgs, i);
        oar_tensor_array_t *a = ov ? oar_var_array(ov) : NULL;
        if (!a) return oar_k_error(k, OAR_ERR_DTYPE, "gradient '%s' of array '%s' must be a tensor array", x->outer, x->fwd);
        if (x->carried < 0 || !p->out[x->carried].outer) continue;
        oar_variable_t *og = oar_k_in_var(k, ogs, x->carried);
        if (!og || og == ov || og->type != OAR_VAR_LOD_TENSOR_ARRAY) continue;
        const oar_tensor_array_t *src = og->u.array;
        if (src->n > a->n) OAR_TRY(oar_array_resize(a, src->n));
        for (int t = 0; t < src->n; t++) {
            if (!src->items[t] || a->items[t]) continue;
            a->items[t] = oar_tensor_retain(src->items[t]);
        }
    }
    return OAR_OK;
}

/* zeros like g (or like the forward value when g is NULL) into *out */
static int zeros_for(const oar_tensor_t *g, oar_variable_t *fwd, oar_tensor_t **out)
{
    const oar_tensor_t *like = g ? g : var_value(fwd);
    *out = NULL;
    if (!like) return OAR_OK;
    return oar_cf_new_zeros_like(like, out);
}

/* links output gradients into step scope s, before its grad block runs */
static int gplan_link_in(oar_kernel_ctx_t *k, gplan_t *p, oar_scope_t *s, const char *xgs)
{
    for (int j = 0; j < p->nout; j++) {
        gvar_t *o = &p->out[j];
        if (!o->outer || o->array) continue;
        if (!o->g) OAR_TRY(zeros_for(NULL, o->fwd_var, &o->g));
        if (!o->g) continue;
        OAR_TRY(set_local(s, o->inner, o->g));
        if (strcmp(o->outer, o->inner) != 0) OAR_TRY(set_local(s, o->outer, o->g));
    }
    for (int i = 0; i < p->nx; i++) {
        gvar_t *x = &p->x[i];
        if (!x->array || !x->outer || !x->written) continue;
        OAR_TRY(array_link_in(s, x->inner, oar_k_out_var(k, xgs, i)));
    }
    return OAR_OK;
}

/* collects input gradients from step scope s after its grad block ran */
static int gplan_collect(oar_kernel_ctx_t *k, gplan_t *p, oar_scope_t *s, const char *xgs)
{
    /* what the step did not compute is zero: an output this step overwrote
     * passes no gradient to the earlier step unless it read it */
    oar_tensor_t **next = oar_xcalloc((size_t)(p->nout ? p->nout : 1), sizeof *next);
    if (!next) return OAR_ERR_NOMEM;
    int rc = OAR_OK;
    for (int i = 0; i < p->nx && rc == OAR_OK; i++) {
        gvar_t *x = &p->x[i];
        if (!x->outer) continue;
        if (x->array) {
            if (x->written) rc = array_link_out(s, x->inner, oar_k_out_var(k, xgs, i));
            continue;
        }
        oar_tensor_t *lt = x->written ? local_value(s, x->inner) : NULL;
        if (x->carried >= 0) {
            if (lt && !next[x->carried]) rc = share_new(lt, &next[x->carried]);
        } else if (lt) {
            if (!x->acc) rc = oar_tensor_copy(lt, &x->acc);
            else rc = oar_cf_add_into(x->acc, lt, x->fwd);
        }
    }
    for (int j = 0; j < p->nout && rc == OAR_OK; j++) {
        gvar_t *o = &p->out[j];
        if (!o->outer || o->array) continue;
        if (!next[j]) rc = zeros_for(o->g, o->fwd_var, &next[j]);
        if (rc != OAR_OK) break;
        oar_tensor_free(o->g);
        o->g = next[j];
        next[j] = NULL;
    }
    for (int j = 0; j < p->nout; j++) oar_tensor_free(next[j]);
    free(next);
    return rc;
}

/* writes the final X@GRAD tensors */
static int gplan_finish(oar_kernel_ctx_t *k, gplan_t *p, const char *xgs)
{
    for (int i = 0; i < p->nx; i++) {
        gvar_t *x = &p->x[i];
        if (!x->outer || x->array) continue;
        oar_variable_t *ov = oar_k_out_var(k, xgs, i);
        oar_tensor_t *out = ov ? oar_var_tensor(ov) : NULL;
        if (!out) return oar_k_error(k, OAR_ERR_DTYPE, "gradient '%s' of '%s' must be a LoD tensor", x->outer, x->fwd);
        const oar_tensor_t *val = x->carried >= 0 ? p->out[x->carried].g : x->acc;
        if (val) {
            OAR_TRY(oar_tensor_share(out, val));
            continue;
        }
        const oar_tensor_t *fv = var_value(x->fwd_var);
        if (!fv)
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "input '%s' has no value to shape its zero gradient '%s'", x->fwd,
                               x->outer);
        OAR_TRY(oar_cf_zeros_like(out, fv));
    }
    return OAR_OK;
}

/* one step of a grad op: link, run the grad block in s, collect */
static int grad_step(oar_kernel_ctx_t *k, gplan_t *p, oar_scope_t *s, const char *xgs)
{
    OAR_TRY(gplan_link_in(k, p, s, xgs));
    OAR_TRY(oar_k_run_block(k, p->gblock->idx, s));
    return gplan_collect(k, p, s, xgs);
}

/* ---- grad makers ---------------------------------------------------------------- */

/* input slot "<os>@GRAD": the grads of the outputs, @EMPTY@ for those that
 * need none (integer counters, conditions) */
static int wire_out_grads(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *os)
{
    char slot[64];
    snprintf(slot, sizeof slot, "%s%s", os, OAR_GRAD_SUFFIX);
    OAR_TRY(oar_gc_out_grad(g, op, os));
    int n = oar_op_desc_input_count(op, slot);
    if (n <= 0) return OAR_OK;
    const oar_op_desc_t *f = oar_gc_fwd(g);
    const char **names = oar_xcalloc((size_t)n, sizeof *names);
    if (!names) return OAR_ERR_NOMEM;
    for (int j = 0; j < n; j++) {
        const char *fwd = oar_op_desc_output_arg(f, os, j);
        names[j] = oar_gc_no_grad(g, fwd) ? OAR_EMPTY_VAR : oar_op_desc_input_arg(op, slot, j);
    }
    int rc = oar_op_desc_set_input(op, slot, names, n);
    free(names);
    return rc;
}

/* output slot "<xs>@GRAD", and the same names of array inputs as input slot
 * "<xs>@GRAD" (array gradients accumulate in place) */
static int wire_in_grads(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *xs)
{
    char slot[64];
    snprintf(slot, sizeof slot, "%s%s", xs, OAR_GRAD_SUFFIX);
    OAR_TRY(oar_gc_in_grad(g, op, xs));
    int n = oar_op_desc_output_count(op, slot);
    if (n <= 0) return OAR_OK;
    const oar_op_desc_t *f = oar_gc_fwd(g);
    const char **names = oar_xcalloc((size_t)n, sizeof *names);
    if (!names) return OAR_ERR_NOMEM;
    bool any = false;
    for (int i = 0; i < n; i++) {
        const char *fwd = oar_op_desc_input_arg(f, xs, i);
        const oar_var_desc_t *v = f->block ? oar_block_find_var_recursive(f->block, fwd) : NULL;
        const char *gn = oar_op_desc_output_arg(op, slot, i);
        bool arr = v && v->type == OAR_VAR_LOD_TENSOR_ARRAY && !is_empty_name(gn);
        names[i] = arr ? gn : OAR_EMPTY_VAR;
        any = any || arr;
    }
    int rc = any ? oar_op_desc_set_input(op, slot, names, n) : OAR_OK;
    free(names);
    return rc;
}

/* The grad op `type` of a control-flow op: its grad block, the forward
 * inputs `in_copy` and outputs `out_copy` (the kept scopes) as inputs, the
 * forward X/Out lists and their gradients. */
static int make_cf_grad(oar_grad_ctx_t *g, const char *type, const char *in_copy, const char *out_copy,
                        const char *xs, const char *os)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    int sub = oar_attr_block(f, "sub_block");
    if (sub < 0) return oar_error(OAR_ERR_FORMAT, "%s: attr sub_block is not set", f->type);
    int gb = oar_gc_grad_block(g, sub);
    if (gb < 0) return gb;
    oar_op_desc_t *op = oar_gc_new_op(g, type);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_op_desc_set_attr_block(op, "sub_block", gb));
    if (in_copy) OAR_TRY(oar_gc_in(g, op, in_copy));
    OAR_TRY(oar_gc_out(g, op, out_copy));
    OAR_TRY(oar_gc_in(g, op, xs));
    OAR_TRY(oar_gc_out(g, op, os));
    OAR_TRY(wire_out_grads(g, op, os));
    return wire_in_grads(g, op, xs);
}

/* compile time: X@GRAD like X */
static int grads_like_infer(oar_infer_ctx_t *c, const char *xs, const char *xgs)
{
    int n = oar_ic_out_count(c, xgs);
    for (int i = 0; i < n && i < oar_ic_in_count(c, xs); i++) {
        const char *name = oar_ic_out_name(c, xgs, i);
        if (is_empty_name(name)) continue;
        int vt = oar_ic_in_var_type(c, xs, i);
        if (vt == OAR_VAR_LOD_TENSOR_ARRAY) OAR_TRY(oar_ic_set_out_var_type(c, xgs, i, vt));
        int nd;
        const int64_t *d = oar_ic_in_dims(c, xs, i, &nd);
        if (!d) { oar_clear_error(); continue; }
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
        OAR_TRY(oar_ic_set_out(c, xgs, i, dims, nd, oar_ic_in_dtype(c, xs, i)));
    }
    return OAR_OK;
}

/* ---- conditional_block --------------------------------------------------------------- */

static int steps_infer(oar_infer_ctx_t *c, const char *slot)
{
    if (oar_ic_out_count(c, slot) == 0) return OAR_OK;
    return oar_ic_set_out_var_type(c, slot, 0, OAR_VAR_STEP_SCOPES);
}

static int cb_infer(oar_infer_ctx_t *c) { return steps_infer(c, "Scope"); }

/* the value of a one-element condition tensor */
static int scalar_cond(oar_kernel_ctx_t *k, const char *slot, int i, bool *out)
{
    const char *name = oar_k_in_name(k, slot, i);
    oar_tensor_t *t = var_value(oar_k_in_var(k, slot, i));
    if (!t || !oar_tensor_has_data(t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "condition %s '%s' has no value", slot, name ? name : "?");
    if (oar_tensor_numel_of(t) != 1) {
        char b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "condition %s '%s' must hold one element, it has shape %s", slot,
                           name ? name : "?", oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    OAR_TRY(oar_cf_host(t));
    const void *d = t->buf->data;
    switch (t->dtype) {
    case OAR_BOOL: case OAR_UINT8: case OAR_INT8: *out = *(const uint8_t *)d != 0; break;
    case OAR_INT32: *out = *(const int32_t *)d != 0; break;
    case OAR_INT64: *out = *(const int64_t *)d != 0; break;
    case OAR_FP32: *out = *(const float *)d != 0; break;
    case OAR_FP64: *out = *(const double *)d != 0; break;
    default:
        return oar_k_error(k, OAR_ERR_DTYPE, "condition %s '%s' has dtype %s; expected bool", slot, name ? name : "?",
                           oar_dtype_name(t->dtype) ? oar_dtype_name(t->dtype) : "?");
    }
    return OAR_OK;
}

/* Fluid's rule: a scalar condition's value, or else every Cond tensor
 * non-empty (IfElse passes the rows routed to the branch) */
static int cb_need_run(oar_kernel_ctx_t *k, bool *run)
{
    int n = oar_k_in_count(k, "Cond");
    if (((const oar_cf_attrs_t *)oar_k_attrs(k))->is_scalar_condition) {
        if (n != 1) return oar_k_error(k, OAR_ERR_INVALID, "a scalar condition takes one Cond, got %d", n);
        return scalar_cond(k, "Cond", 0, run);
    }
    *run = true;
    for (int i = 0; i < n; i++) {
        oar_variable_t *v = oar_k_in_var(k, "Cond", i);
        oar_tensor_t *t = var_value(v);
        if (v && v->type != 0 && v->type != OAR_VAR_LOD_TENSOR)
            return oar_k_error(k, OAR_ERR_DTYPE, "Cond '%s' must be a LoD tensor", oar_k_in_name(k, "Cond", i));
        if (!t || oar_tensor_numel_of(t) == 0) *run = false;
    }
    return OAR_OK;
}

static int cb_run(oar_kernel_ctx_t *k)
{
    oar_block_t *block = NULL;
    oar_step_scopes_t *keep = NULL;
    bool go = false;
    OAR_TRY(sub_block(k, &block));
    OAR_TRY(steps_of(k, oar_k_out_var(k, "Scope", 0), "Scope", &keep));
    if (keep) oar_step_scopes_clear(keep);
    OAR_TRY(cb_need_run(k, &go));
    if (!go) return OAR_OK;
    return run_child(k, block, "Out", keep);
}

static int cb_grad(oar_grad_ctx_t *g)
{
    return make_cf_grad(g, "conditional_block_grad", "Cond", "Scope", "Input", "Out");
}

static int cbg_infer(oar_infer_ctx_t *c) { return grads_like_infer(c, "Input", "Input@GRAD"); }

/* The branch ran: run its grad block in the kept scope. It did not: inputs
 * it would have overwritten pass their gradient through, the rest get zeros. */
static int cbg_run(oar_kernel_ctx_t *k)
{
    oar_step_scopes_t *steps = NULL;
    OAR_TRY(steps_of(k, oar_k_in_var(k, "Scope", 0), "Scope", &steps));
    gplan_t p;
    OAR_TRY(gplan_init(k, "Input", "Out", "Input@GRAD", "Out@GRAD", &p));
    int rc = gplan_arrays_start(k, &p, "Input@GRAD", "Out@GRAD");
    if (rc == OAR_OK && steps && steps->n > 0) {
        rc = grad_step(k, &p, steps->scopes[steps->n - 1], "Input@GRAD");
    }
    /* not run: every Out kept its old value, so an input it would have
     * overwritten gets its gradient (already in p.out[].g); the rest zeros */
    if (rc == OAR_OK) rc = gplan_finish(k, &p, "Input@GRAD");
    gplan_free(&p);
    return rc;
}

/* ---- while -------------------------------------------------------------------------- */

static int while_infer(oar_infer_ctx_t *c)
{
    int t = oar_ic_in_dtype(c, "Condition", 0);
    if (t >= 0 && t != OAR_BOOL)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Condition '%s' must be bool, it is %s", oar_ic_in_name(c, "Condition", 0),
                            oar_dtype_name(t) ? oar_dtype_name(t) : "?");
    return steps_infer(c, "StepScopes");
}

static int while_run(oar_kernel_ctx_t *k)
{
    oar_block_t *block = NULL;
    oar_step_scopes_t *keep = NULL;
    OAR_TRY(sub_block(k, &block));
    OAR_TRY(steps_of(k, oar_k_out_var(k, "StepScopes", 0), "StepScopes", &keep));
    if (keep) oar_step_scopes_clear(keep);
    if (((const oar_cf_attrs_t *)oar_k_attrs(k))->is_test) keep = NULL;
    const oar_program_t *prog = oar_k_program(k);
    int64_t limit = prog && prog->max_while_iterations > 0 ? prog->max_while_iterations
                                                          : oar_flag_max_while_iterations;
    for (long long step = 0;; step++) {
        bool go = false;
        OAR_TRY(scalar_cond(k, "Condition", 0, &go));
        if (!go) return OAR_OK;
        OAR_TRY(oar_executor_check_cancel(k->exe));
        if (limit > 0 && step >= limit)
            return oar_k_error(k, OAR_ERR_RANGE, "the loop is still running after %lld iterations, its limit "
                               "(flag max_while_iterations, or inference_max_while_iterations for a loaded "
                               "model); raise it with oar.set_flags if the model needs more", (long long)limit);
        int rc = run_child(k, block, "Out", keep);
        if (rc != OAR_OK) {
            oar_error_prefix("step %lld: ", step);
            return rc;
        }
    }
}

static int while_grad(oar_grad_ctx_t *g)
{
    return make_cf_grad(g, "while_grad", NULL, "StepScopes", "X", "Out");
}

static int wg_infer(oar_infer_ctx_t *c) { return grads_like_infer(c, "X", "X@GRAD"); }

static int wg_run(oar_kernel_ctx_t *k)
{
    oar_step_scopes_t *steps = NULL;
    OAR_TRY(steps_of(k, oar_k_in_var(k, "StepScopes", 0), "StepScopes", &steps));
    gplan_t p;
    OAR_TRY(gplan_init(k, "X", "Out", "X@GRAD", "Out@GRAD", &p));
    int rc = gplan_arrays_start(k, &p, "X@GRAD", "Out@GRAD");
    for (int t = steps ? steps->n - 1 : -1; t >= 0 && rc == OAR_OK; t--) {
        rc = grad_step(k, &p, steps->scopes[t], "X@GRAD");
        if (rc != OAR_OK) oar_error_prefix("step %d: ", t);
    }
    if (rc == OAR_OK) rc = gplan_finish(k, &p, "X@GRAD");
    gplan_free(&p);
    return rc;
}

/* ---- select_input / select_output ------------------------------------------------------- */
/* select_input: Out = X[Mask]; select_output: Out[Mask] = X. Mask is an int
 * tensor of one element (layers.cond casts its bool predicate). */
static int mask_index(oar_kernel_ctx_t *k, int n, int *out)
{
    const char *name = oar_k_in_name(k, "Mask", 0);
    oar_tensor_t *t = var_value(oar_k_in_var(k, "Mask", 0));
    if (!t || !oar_tensor_has_data(t) || oar_tensor_numel_of(t) != 1)
        return oar_k_error(k, OAR_ERR_SHAPE, "Mask '%s' must hold one integer", name ? name : "?");
    long long m;
    OAR_TRY(oar_cf_host(t));
    switch (t->dtype) {
    case OAR_INT32: m = *(const int32_t *)t->buf->data; break;
    case OAR_INT64: m = *(const int64_t *)t->buf->data; break;
    case OAR_BOOL: m = *(const uint8_t *)t->buf->data; break;
    default:
        return oar_k_error(k, OAR_ERR_DTYPE, "Mask '%s' must be int32, int64 or bool, it is %s", name ? name : "?",
                           oar_dtype_name(t->dtype) ? oar_dtype_name(t->dtype) : "?");
    }
    if (m < 0 || m >= n)
        return oar_k_error(k, OAR_ERR_RANGE, "Mask '%s' is %lld; it selects among %d variables", name ? name : "?", m, n);
    *out = (int)m;
    return OAR_OK;
}

/* out slot `os` arg m := in slot `is` arg i (shared) */
static int pass_tensor(oar_kernel_ctx_t *k, const char *is, int i, const char *os, int m)
{
    const char *in = oar_k_in_name(k, is, i), *on = oar_k_out_name(k, os, m);
    if (is_empty_name(on)) return OAR_OK;
    oar_tensor_t *x = var_value(oar_k_in_var(k, is, i));
    if (!x)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "the selected %s '%s' has no value (did its branch run?)", is,
                           in ? in : "?");
    oar_variable_t *ov = oar_k_out_var(k, os, m);
    oar_tensor_t *out = ov ? oar_var_tensor(ov) : NULL;
    if (!out) return oar_k_error(k, OAR_ERR_DTYPE, "output %s '%s' must be a LoD tensor", os, on ? on : "?");
    return oar_tensor_share(out, x);
}

static int select_input_run(oar_kernel_ctx_t *k)
{
    int m;
    OAR_TRY(mask_index(k, oar_k_in_count(k, "X"), &m));
    return pass_tensor(k, "X", m, "Out", 0);
}

static int select_output_run(oar_kernel_ctx_t *k)
{
    int m;
    OAR_TRY(mask_index(k, oar_k_out_count(k, "Out"), &m));
    return pass_tensor(k, "X", 0, "Out", m);
}

static int select_input_grad_run(oar_kernel_ctx_t *k)
{
    int m;
    OAR_TRY(mask_index(k, oar_k_out_count(k, "X@GRAD"), &m));
    return pass_tensor(k, "Out@GRAD", 0, "X@GRAD", m);
}

static int select_output_grad_run(oar_kernel_ctx_t *k)
{
    int m;
    OAR_TRY(mask_index(k, oar_k_in_count(k, "Out@GRAD"), &m));
    return pass_tensor(k, "Out@GRAD", m, "X@GRAD", 0);
}

static int first_known_like(oar_infer_ctx_t *c, const char *is, const char *os)
{
    int n = oar_ic_in_count(c, is);
    for (int i = 0; i < n; i++) {
        int nd;
        const int64_t *d = oar_ic_in_dims(c, is, i, &nd);
        if (!d) { oar_clear_error(); continue; }
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
        for (int j = 0; j < oar_ic_out_count(c, os); j++)
            if (!is_empty_name(oar_ic_out_name(c, os, j)))
                OAR_TRY(oar_ic_set_out(c, os, j, dims, nd, oar_ic_in_dtype(c, is, i)));
        return OAR_OK;
    }
    return OAR_OK;
}

static int select_input_infer(oar_infer_ctx_t *c) { return first_known_like(c, "X", "Out"); }
static int select_output_infer(oar_infer_ctx_t *c) { return first_known_like(c, "X", "Out"); }
static int sel_grad_infer(oar_infer_ctx_t *c) { return first_known_like(c, "Out@GRAD", "X@GRAD"); }

static int select_input_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "select_input_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Mask"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

static int select_output_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "select_output_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Mask"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

#define OAR_OPS_DEFINE
#include "ops/control_flow.h"
