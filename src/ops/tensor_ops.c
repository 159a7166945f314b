/* tensor_ops.c — inference and grad makers of assign, scale, cast, sum,
 * fill_zeros_like and increment; the ops themselves (slots, attributes,
 * docs) are declared in tensor_ops.ops. Kernels in kernels/cpu/tensor_ops.c;
 * assign moves data without arithmetic and runs here (it also copies tensor
 * arrays and selected rows, whose variables have no single dtype to
 * dispatch on). */
#include "op.h"
#include "ops/tensor_ops.h"   /* generated from tensor_ops.ops */

#include <stdio.h>
#include <string.h>

/* The pass's gradient name of argument i of forward slot `slot` (an output
 * when fwd_output), asked through oar_gc_* on a scratch op so that the pass
 * registers the name; "@EMPTY@" for an input that needs no gradient. */
static int gc_grad_name(oar_grad_ctx_t *g, const char *slot, bool fwd_output, int i,
                        char *buf, size_t n)
{
    char gslot[128];
    int r = snprintf(gslot, sizeof gslot, "%s%s", slot, OAR_GRAD_SUFFIX);
    if (r < 0 || (size_t)r >= sizeof gslot)
        return oar_error(OAR_ERR_INVALID, "slot name '%s' is too long", slot);
    const char *type = oar_op_desc_type(oar_gc_fwd(g));
    oar_op_desc_t *tmp;
    OAR_TRY(oar_op_desc_new(type, &tmp));
    int rc = fwd_output ? oar_gc_out_grad(g, tmp, slot) : oar_gc_in_grad(g, tmp, slot);
    const char *name = NULL;
    if (rc == OAR_OK) {
        name = fwd_output ? oar_op_desc_input_arg(tmp, gslot, i) : oar_op_desc_output_arg(tmp, gslot, i);
        if (!name)
            rc = oar_error(OAR_ERR_INVALID, "%s grad: the forward op has no %s %s[%d]", type,
                           fwd_output ? "output" : "input", slot, i);
    }
    if (rc == OAR_OK && strlen(name) >= n)
        rc = oar_error(OAR_ERR_INVALID, "gradient name '%s' is too long", name);
    if (rc == OAR_OK) memcpy(buf, name, strlen(name) + 1);
    oar_op_desc_free(tmp);
    return rc;
}

/* A grad op of `type` reading Out's gradient through slot X and writing the
 * gradient of input X[i] through slot Out (the assign, scale, cast and sum
 * grads). *op stays NULL when that input needs no gradient. */
static int x_to_out_grad_op(oar_grad_ctx_t *g, const char *type, int i, oar_op_desc_t **op)
{
    char gin[512], gout[512];
    *op = NULL;
    OAR_TRY(gc_grad_name(g, "X", false, i, gout, sizeof gout));
    if (strcmp(gout, OAR_EMPTY_VAR) == 0) return OAR_OK;
    OAR_TRY(gc_grad_name(g, "Out", true, 0, gin, sizeof gin));
    oar_op_desc_t *o = oar_gc_new_op(g, type);
    if (!o) return OAR_ERR_NOMEM;
    const char *i1[1] = {gin}, *o1[1] = {gout};
    OAR_TRY(oar_op_desc_set_input(o, "X", i1, 1));
    OAR_TRY(oar_op_desc_set_output(o, "Out", o1, 1));
    *op = o;
    return OAR_OK;
}

/* ---- assign ------------------------------------------------------------ */
static int assign_infer(oar_infer_ctx_t *c)
{
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt == OAR_VAR_LOD_TENSOR_ARRAY || vt == OAR_VAR_SELECTED_ROWS) {
        OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, vt));
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
        if (d) {   /* the desc shape of an array is its items' shape; it may be unknown */
            int64_t dims[OAR_MAX_DIMS];
            memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
            OAR_TRY(oar_ic_set_out(c, "Out", 0, dims, nd, oar_ic_in_dtype(c, "X", 0)));
        } else {
            oar_clear_error();
        }
        return oar_ic_set_out_lod_level(c, "Out", 0, oar_ic_in_lod_level(c, "X", 0));
    }
    return oar_infer_same_as(c, "X", "Out");
}

static int copy_selected_rows(oar_kernel_ctx_t *k, oar_selected_rows_t *src, oar_variable_t *ov)
{
    oar_selected_rows_t *dst = oar_var_selected_rows(ov);
    if (!dst) return oar_k_error(k, OAR_ERR_INVALID, "output Out '%s': %s",
                                 oar_variable_name(ov), oar_last_error());
    if (dst == src) return OAR_OK;
    if (src->nrows > dst->cap) {
        int64_t *r = oar_xrealloc(dst->rows, (size_t)src->nrows * sizeof(int64_t));
        if (!r) return OAR_ERR_NOMEM;
        dst->rows = r;
        dst->cap = src->nrows;
    }
    if (src->nrows > 0) memcpy(dst->rows, src->rows, (size_t)src->nrows * sizeof(int64_t));
    dst->nrows = src->nrows;
    dst->height = src->height;
    if (!src->value) return OAR_OK;
    if (!dst->value) OAR_TRY(oar_tensor_new_empty(&dst->value));
    return oar_tensor_copy_into(dst->value, src->value);
}

static int copy_array(oar_kernel_ctx_t *k, oar_tensor_array_t *src, oar_variable_t *ov)
{
    oar_tensor_array_t *dst = oar_var_array(ov);
    if (!dst) return oar_k_error(k, OAR_ERR_INVALID, "output Out '%s': %s",
                                 oar_variable_name(ov), oar_last_error());
    if (dst == src) return OAR_OK;
    OAR_TRY(oar_array_resize(dst, src->n));
    for (int i = 0; i < src->n; i++) {
        if (!src->items[i]) {
            oar_tensor_free(dst->items[i]);
            dst->items[i] = NULL;
            continue;
        }
        if (!dst->items[i]) OAR_TRY(oar_tensor_new_empty(&dst->items[i]));
        OAR_TRY(oar_tensor_copy_into(dst->items[i], src->items[i]));
    }
    return OAR_OK;
}

static int assign_run(oar_kernel_ctx_t *k)
{
    oar_variable_t *iv = oar_k_input_var(k, OAR_TENSOR_X, 0), *ov = oar_k_output_var(k, OAR_TENSOR_OUT, 0);
    if (!iv || oar_variable_type(iv) == 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no value",
                           oar_k_input_name(k, OAR_TENSOR_X, 0) ? oar_k_input_name(k, OAR_TENSOR_X, 0) : "?");
    if (!ov) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    if (iv == ov) return OAR_OK;
    switch (oar_variable_type(iv)) {
    case OAR_VAR_LOD_TENSOR: {
        oar_tensor_t *out = oar_var_tensor(ov);
        if (!out) return oar_k_error(k, OAR_ERR_INVALID, "output Out '%s': %s",
                                     oar_variable_name(ov), oar_last_error());
        return oar_tensor_copy_into(out, iv->u.tensor);
    }
    case OAR_VAR_SELECTED_ROWS: return copy_selected_rows(k, iv->u.rows, ov);
    case OAR_VAR_LOD_TENSOR_ARRAY: return copy_array(k, iv->u.array, ov);
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "input X '%s' holds a variable of kind %d; "
                           "assign copies LoD tensors, selected rows and tensor arrays",
                           oar_variable_name(iv), oar_variable_type(iv));
    }
}

static int assign_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op;
    return x_to_out_grad_op(g, "assign", 0, &op);
}

/* ---- scale ------------------------------------------------------------- */
static int same_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }

/* A SELECTED_ROWS X (a sparse gradient) gives a SELECTED_ROWS Out with the
 * same rows; the kernel makes it, so run-time inference leaves Out alone. */
static int scale_infer(oar_infer_ctx_t *c)
{
    if (oar_ic_in_var_type(c, "X", 0) == OAR_VAR_SELECTED_ROWS) {
        if (oar_ic_runtime(c)) return OAR_OK;
        OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_SELECTED_ROWS));
    }
    return oar_infer_same_as(c, "X", "Out");
}

/* d(scale*x + b)/dx = d(scale*(x + b))/dx = scale */
static int scale_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op;
    OAR_TRY(x_to_out_grad_op(g, "scale", 0, &op));
    if (!op) return OAR_OK;
    OAR_TRY(oar_op_desc_set_attr_float(op, "bias", 0.0f));
    if (oar_op_desc_input_count(oar_gc_fwd(g), "ScaleTensor") > 0) {
        const char *st[1] = {oar_op_desc_input_arg(oar_gc_fwd(g), "ScaleTensor", 0)};
        OAR_TRY(oar_op_desc_set_input(op, "ScaleTensor", st, 1));
    }
    return oar_op_desc_set_attr_bool(op, "bias_after_scale", true);
}

/* ---- cast -------------------------------------------------------------- */
static bool cast_dtype_ok(int dt)
{
    return dt == OAR_BOOL || dt == OAR_INT16 || dt == OAR_INT32 || dt == OAR_INT64 ||
           dt == OAR_FP16 || dt == OAR_FP32 || dt == OAR_FP64 || dt == OAR_UINT8 || dt == OAR_INT8;
}

static int cast_infer(oar_infer_ctx_t *c)
{
    const oar_cast_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int in_dt = a->in_dtype, out_dt = a->out_dtype;
    const char *attr[2] = {"in_dtype", "out_dtype"};
    int v[2] = {in_dt, out_dt};
    for (int i = 0; i < 2; i++)
        if (!cast_dtype_ok(v[i]))
            return oar_ic_error(c, OAR_ERR_DTYPE, "attr %s = %d is not one of bool (0), int16 (1), "
                                "int32 (2), int64 (3), float16 (4), float32 (5), float64 (6), uint8 (20), "
                                "int8 (21)",
                                attr[i], v[i]);
    int x_dt = oar_ic_in_dtype(c, "X", 0);
    if (x_dt >= 0 && x_dt != in_dt)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' has dtype %s but attr in_dtype is %s",
                            oar_ic_in_name(c, "X", 0), oar_dtype_name(x_dt) ? oar_dtype_name(x_dt) : "?",
                            oar_dtype_name(in_dt));
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    OAR_TRY(oar_ic_set_out(c, "Out", 0, dims, nd, out_dt));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int cast_grad(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    oar_op_desc_t *op;
    OAR_TRY(x_to_out_grad_op(g, "cast", 0, &op));
    if (!op) return OAR_OK;
    OAR_TRY(oar_op_desc_set_attr_int(op, "in_dtype", oar_attr_i(f, "out_dtype")));
    return oar_op_desc_set_attr_int(op, "out_dtype", oar_attr_i(f, "in_dtype"));
}

/* ---- sum --------------------------------------------------------------- */
/* Dense inputs must agree in shape. SELECTED_ROWS inputs (sparse gradients
 * of one parameter) are checked by the kernel: all sparse gives a sparse sum
 * (rows concatenated), sparse and dense mixed give a dense sum. */
static int sum_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "X");
    int first = -1, dt = -1, nd0 = 0;
    bool any_sr = false, all_sr = true, rt = oar_ic_runtime(c);
    const int64_t *d0 = NULL;
    char b0[128], b1[128];
    for (int i = 0; i < n; i++) {
        const char *name = oar_ic_in_name(c, "X", i);
        if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) continue;
        bool sr = oar_ic_in_var_type(c, "X", i) == OAR_VAR_SELECTED_ROWS;
        any_sr = any_sr || sr;
        all_sr = all_sr && sr;
        int t = oar_ic_in_dtype(c, "X", i);
        if (t >= 0 && dt >= 0 && t != dt)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s, expected %s like "
                                "X[%d] '%s'", i, name, oar_dtype_name(t) ? oar_dtype_name(t) : "?",
                                oar_dtype_name(dt) ? oar_dtype_name(dt) : "?", first,
                                oar_ic_in_name(c, "X", first));
        if (dt < 0) dt = t;
        if (sr && rt) continue;   /* a value's row count is not the dense shape */
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "X", i, &nd);
        if (!d) return OAR_ERR_SHAPE;
        if (first < 0) {
            first = i; d0 = d; nd0 = nd;
            continue;
        }
        bool same = nd == nd0;
        for (int j = 0; same && j < nd; j++) same = oar_dim_eq(d[j], d0[j]);
        if (!same)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input X[%d] '%s' has shape %s, expected %s like "
                                "X[%d] '%s'", i, name, oar_shape_str(d, nd, b1, sizeof b1),
                                oar_shape_str(d0, nd0, b0, sizeof b0), first,
                                oar_ic_in_name(c, "X", first));
    }
    if (any_sr && all_sr) {
        if (rt) return OAR_OK;   /* the kernel builds the selected rows */
        OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_SELECTED_ROWS));
    }
    if (first < 0) return oar_ic_error(c, OAR_ERR_INVALID, "input X has no variables");
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d0, sizeof(int64_t) * (size_t)nd0);
    /* a known dim wins over a -1 of the first input */
    for (int i = first + 1; i < n && !rt; i++) {
        const char *name = oar_ic_in_name(c, "X", i);
        if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) continue;
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "X", i, &nd);
        for (int j = 0; d && j < nd0; j++) if (dims[j] < 0) dims[j] = d[j];
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, dims, nd0, dt));
    if (any_sr && all_sr) return OAR_OK;
    return oar_ic_share_lod(c, "X", first, "Out", 0);
}

/* each input's gradient is the output's: one scale(1) per input */
static int sum_grad(oar_grad_ctx_t *g)
{
    int n = oar_op_desc_input_count(oar_gc_fwd(g), "X");
    for (int i = 0; i < n; i++) {
        oar_op_desc_t *op;
        OAR_TRY(x_to_out_grad_op(g, "scale", i, &op));
        if (!op) continue;
        OAR_TRY(oar_op_desc_set_attr_float(op, "scale", 1.0f));
        OAR_TRY(oar_op_desc_set_attr_float(op, "bias", 0.0f));
        OAR_TRY(oar_op_desc_set_attr_bool(op, "bias_after_scale", true));
    }
    return OAR_OK;
}

/* ---- increment --------------------------------------------------------- */
static int increment_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    bool one = true;   /* a -1 dim is unknown until run time */
    for (int i = 0; i < nd; i++) if (d[i] >= 0 && d[i] != 1) one = false;
    if (!one) {
        char b[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; it must hold exactly one "
                            "element", oar_ic_in_name(c, "X", 0), oar_shape_str(d, nd, b, sizeof b));
    }
    return oar_infer_same_as(c, "X", "Out");
}

#define OAR_OPS_DEFINE
#include "ops/tensor_ops.h"   /* the tables, decoders and registrations */
