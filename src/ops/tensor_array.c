/*
 * tensor_array.c — tensor_array_to_tensor and its grad (tensor_array.ops):
 * inference, grad maker and runs. The items are read on the host (a device
 * item is moved there first, as the other array ops do).
 */
#include "op.h"
#include "lod_plumbing.h"
#include "ops/tensor_array.h"   /* generated from tensor_array.ops */

#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

/* compile time: Out has the items' rank (+1 stacking) with the joined axis unknown; OutIndex [-1] int32 */
static int ta2t_infer(oar_infer_ctx_t *c)
{
    const oar_ta2t_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt > 0 && vt != OAR_VAR_LOD_TENSOR_ARRAY)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' must be a tensor array", nm(oar_ic_in_name(c, "X", 0)));
    const int64_t unk = -1;
    OAR_TRY(oar_ic_set_out(c, "OutIndex", 0, &unk, 1, OAR_INT32));
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) { oar_clear_error(); return OAR_OK; }
    const int r = nd + (a->use_stack ? 1 : 0);
    int ax = a->axis < 0 ? a->axis + r : a->axis;
    if (nd < 1 || ax < 0 || ax >= r || r > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for items of rank %d%s", (int)a->axis, nd,
                            a->use_stack ? " (stacked)" : "");
    int64_t o[OAR_MAX_DIMS];
    for (int i = 0, j = 0; i < r; i++) o[i] = (a->use_stack && i == ax) ? -1 : d[j++];
    o[ax] = -1;
    return oar_ic_set_out(c, "Out", 0, o, r, oar_ic_in_dtype(c, "X", 0));
}

/* the items, checked: written, one dtype and rank, equal dims but along axis */
static int ta2t_items(oar_kernel_ctx_t *k, const oar_ta2t_attrs_t *a, oar_tensor_array_t **arr, int *ax)
{
    OAR_TRY(oar_cf_array_in(k, "X", arr));
    const oar_tensor_array_t *t = *arr;
    const char *name = oar_cf_in_name(k, "X");
    if (t->n < 1) return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is an empty tensor array", name);
    for (int i = 0; i < t->n; i++) {
        if (!t->items[i] || t->items[i]->dtype < 0)
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "item %d of input X '%s' was never written", i, name);
        OAR_TRY(oar_cf_host(t->items[i]));
    }
    const oar_tensor_t *x0 = t->items[0];
    const int nd = x0->ndim, r = nd + (a->use_stack ? 1 : 0);
    *ax = a->axis < 0 ? a->axis + r : a->axis;
    if (nd < 1 || *ax < 0 || *ax >= r)
        return oar_k_error(k, OAR_ERR_RANGE, "attr axis = %d is out of range for the items of '%s' (rank %d%s)",
                           (int)a->axis, name, nd, a->use_stack ? ", stacked" : "");
    for (int i = 1; i < t->n; i++) {
        const oar_tensor_t *x = t->items[i];
        bool ok = x->ndim == nd && x->dtype == x0->dtype;
        for (int d = 0; ok && d < nd; d++) ok = x->dims[d] == x0->dims[d] || (!a->use_stack && d == *ax);
        if (!ok) {
            char b0[128], bi[128];
            return oar_k_error(k, OAR_ERR_SHAPE, "item %d of input X '%s' is %s %s but item 0 is %s %s; %s", i, name,
                               nm(oar_dtype_name(x->dtype)), oar_shape_str(x->dims, x->ndim, bi, sizeof bi),
                               nm(oar_dtype_name(x0->dtype)), oar_shape_str(x0->dims, nd, b0, sizeof b0),
                               a->use_stack ? "stacking needs one shape" : "concatenating needs equal dims but along axis");
        }
    }
    return OAR_OK;
}

static int ta2t_run(oar_kernel_ctx_t *k)
{
    const oar_ta2t_attrs_t *a = oar_k_attrs(k);
    oar_tensor_array_t *arr;
    int ax;
    OAR_TRY(ta2t_items(k, a, &arr, &ax));
    const oar_tensor_t *x0 = arr->items[0];
    const int nd = x0->ndim, n = arr->n;
    int64_t od[OAR_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < nd; d++) {
        if (d == ax && a->use_stack) od[on++] = n;
        od[on++] = x0->dims[d];
    }
    if (a->use_stack && ax == nd) od[on++] = n;
    if (!a->use_stack) {
        od[ax] = 0;
        for (int i = 0; i < n; i++) od[ax] += arr->items[i]->dims[ax];
    }
    /* rows before the axis, each item's block after it */
    const int64_t pre = prod(x0->dims, 0, ax);
    const size_t es = oar_dtype_size(x0->dtype);
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    OAR_TRY(oar_tensor_resize(out, od, on));
    char *o = oar_tensor_mutable(out, x0->dtype);
    if (!o && oar_tensor_numel_of(out) > 0) return OAR_ERR_NOMEM;
    int64_t width = 0;
    for (int i = 0; i < n; i++) width += prod(arr->items[i]->dims, ax, nd);
    int64_t col = 0;
    for (int i = 0; i < n; i++) {
        const int64_t blk = prod(arr->items[i]->dims, ax, nd);
        const char *xv = oar_tensor_data(arr->items[i]);
        for (int64_t p = 0; p < pre; p++)
            memcpy(o + (size_t)(p * width + col) * es, xv + (size_t)(p * blk) * es, (size_t)blk * es);
        col += blk;
    }
    oar_tensor_t *idx = oar_cf_tensor_out(k, "OutIndex");
    if (!idx) return OAR_ERR_INVALID;
    const int64_t in = n;
    OAR_TRY(oar_tensor_resize(idx, &in, 1));
    int32_t *iv = oar_tensor_mutable(idx, OAR_INT32);
    if (!iv) return OAR_ERR_NOMEM;
    for (int i = 0; i < n; i++) iv[i] = a->use_stack ? 1 : (int32_t)arr->items[i]->dims[ax];
    return OAR_OK;
}

static int ta2t_grad_maker(oar_grad_ctx_t *g)
{
    if (oar_gc_no_grad(g, oar_op_desc_input_arg(oar_gc_fwd(g), "X", 0))) return OAR_OK;
    oar_op_desc_t *op = oar_gc_new_op(g, "tensor_array_to_tensor_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_cf_inplace_array_grad(g, op, "X");
}

static int ta2t_grad_infer(oar_infer_ctx_t *c)
{
    return oar_ic_set_out_var_type(c, "X@GRAD", 0, OAR_VAR_LOD_TENSOR_ARRAY);
}

/* item i of X@GRAD += its slice of Out@GRAD */
static int ta2t_grad_run(oar_kernel_ctx_t *k)
{
    const oar_ta2t_attrs_t *a = oar_k_attrs(k);
    oar_tensor_array_t *arr, *ga;
    int ax;
    OAR_TRY(ta2t_items(k, a, &arr, &ax));
    oar_tensor_t *g;
    OAR_TRY(oar_cf_tensor_in(k, "Out@GRAD", &g));
    OAR_TRY(oar_cf_host(g));
    OAR_TRY(oar_cf_array_out(k, "X@GRAD", &ga));
    const int nd = arr->items[0]->ndim;
    const int64_t pre = prod(arr->items[0]->dims, 0, ax);
    int64_t width = 0;
    for (int i = 0; i < arr->n; i++) width += prod(arr->items[i]->dims, ax, nd);
    if (oar_tensor_numel_of(g) != pre * width)
        return oar_k_error(k, OAR_ERR_SHAPE, "input Out@GRAD '%s' has %lld elements, the items %lld",
                           oar_cf_in_name(k, "Out@GRAD"), (long long)oar_tensor_numel_of(g), (long long)(pre * width));
    const size_t es = oar_dtype_size(g->dtype);
    const char *gv = oar_tensor_data(g);
    int64_t col = 0;
    int rc = OAR_OK;
    for (int i = 0; i < arr->n && rc == OAR_OK; i++) {
        const oar_tensor_t *x = arr->items[i];
        const int64_t blk = prod(x->dims, ax, nd);
        oar_tensor_t *t = NULL;
        rc = oar_tensor_new(g->dtype, x->dims, x->ndim, &t);
        if (rc != OAR_OK) break;
        char *tv = oar_tensor_mutable(t, g->dtype);
        if (!tv && pre * blk > 0) rc = OAR_ERR_NOMEM;
        for (int64_t p = 0; rc == OAR_OK && p < pre; p++)
            memcpy(tv + (size_t)(p * blk) * es, gv + (size_t)(p * width + col) * es, (size_t)blk * es);
        if (rc == OAR_OK) rc = oar_cf_array_accumulate(ga, i, t, oar_k_out_name(k, "X@GRAD", 0));
        oar_tensor_free(t);
        col += blk;
    }
    return rc;
}

#define OAR_OPS_DEFINE
#include "ops/tensor_array.h"
