/* misc_ops.c — small ops the layers need: assign_value (a constant tensor
 * from attrs), shape (the dims of a tensor), clip_by_norm, and Print (shows a
 * tensor's values from inside any block, While bodies included). */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "misc_ops.h"
#include "exec.h"
#include "paddle_attrs.h"

#define ATTR_END {NULL, 0, 0, NULL, false, 0, 0}
static const oar_slot_def_t none[] = {{NULL, 0}};
static const oar_slot_def_t out_slot[] = {{"Out", 0}, {NULL, 0}};

/* ---- assign_value -------------------------------------------------------- */
static const oar_attr_def_t assign_value_attrs[] = {
    {"shape", OAR_ATTR_INTS, 0, NULL, true, 0, 0},
    {"dtype", OAR_ATTR_INT, OAR_FP32, NULL, false, 0, 0},
    {"fp32_values", OAR_ATTR_FLOATS, 0, NULL, false, 0, 0},
    {"int32_values", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    {"int64_values", OAR_ATTR_LONGS, 0, NULL, false, 0, 0},
    {"bool_values", OAR_ATTR_INTS, 0, NULL, false, 0, 0},
    ATTR_END};

static int shape_attr(oar_infer_ctx_t *c, int64_t *dims, int *nd, int64_t *numel) {
    int n;
    const int32_t *s = oar_attr_ints(oar_ic_op(c), "shape", &n);
    if (n > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_SHAPE, "shape has %d dims (at most %d)", n, OAR_MAX_DIMS);
    for (int i = 0; i < n; i++) {
        if (s[i] < 0) return oar_ic_error(c, OAR_ERR_SHAPE, "shape[%d] = %d is negative", i, s[i]);
        dims[i] = s[i];
    }
    *nd = n;
    return oar_shape_numel(dims, n, numel);
}

/* decoded: the shape as dims, and the values the dtype reads */
typedef struct assign_value_attrs {
    int dtype, nd;
    int64_t dims[OAR_MAX_DIMS];
    oar_floats_t f32;
    oar_ints_t i32, b8;
    oar_longs_t i64;
} assign_value_attrs_t;

static const char *values_attr(int dtype) {
    switch (dtype) {
    case OAR_FP32: case OAR_FP64: return "fp32_values";
    case OAR_INT32: return "int32_values";
    case OAR_INT64: return "int64_values";
    case OAR_BOOL: return "bool_values";
    default: return NULL;
    }
}

static int assign_value_infer(oar_infer_ctx_t *c) {
    int64_t dims[OAR_MAX_DIMS], numel = 0;
    int nd = 0;
    OAR_TRY(shape_attr(c, dims, &nd, &numel));
    int dtype = oar_attr_i(oar_ic_op(c), "dtype");
    const char *attr = values_attr(dtype);
    if (!attr) return oar_ic_error(c, OAR_ERR_DTYPE, "dtype %d is not supported", dtype);
    const oar_attr_t *a = oar_op_find_attr(oar_ic_op(c), attr);
    int n = a ? a->n : 0;
    if (n != numel)
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s has %d values, the shape needs %lld", attr, n, (long long)numel);
    return oar_ic_set_out(c, "Out", 0, dims, nd, dtype);
}

/* the checks of assign_value_infer, made once at prepare */
static int assign_value_decode(oar_decode_ctx_t *d, void *out) {
    assign_value_attrs_t *a = out;
    oar_ints_t shape = oar_dec_ints(d, "shape");
    a->dtype = oar_dec_i(d, "dtype");
    a->f32 = oar_dec_floats(d, "fp32_values");
    a->i32 = oar_dec_ints(d, "int32_values");
    a->i64 = oar_dec_longs(d, "int64_values");
    a->b8 = oar_dec_ints(d, "bool_values");
    if (oar_dec_status(d) != OAR_OK) return oar_dec_status(d);
    if (shape.n > OAR_MAX_DIMS)
        return oar_dec_error(d, OAR_ERR_SHAPE, "shape has %d dims (at most %d)", shape.n, OAR_MAX_DIMS);
    for (int i = 0; i < shape.n; i++) {
        if (shape.v[i] < 0) return oar_dec_error(d, OAR_ERR_SHAPE, "shape[%d] = %d is negative", i, shape.v[i]);
        a->dims[i] = shape.v[i];
    }
    a->nd = shape.n;
    int64_t numel;
    if (oar_shape_numel(a->dims, a->nd, &numel) != OAR_OK)
        return oar_dec_error(d, OAR_ERR_SHAPE, "shape: %s", oar_last_error());
    const char *attr = values_attr(a->dtype);
    if (!attr) return oar_dec_error(d, OAR_ERR_DTYPE, "dtype %d is not supported", a->dtype);
    int n = a->dtype == OAR_INT32 ? a->i32.n : a->dtype == OAR_INT64 ? a->i64.n
          : a->dtype == OAR_BOOL ? a->b8.n : a->f32.n;
    if (n != numel)
        return oar_dec_error(d, OAR_ERR_SHAPE, "%s has %d values, the shape needs %lld", attr, n, (long long)numel);
    return OAR_OK;
}

static int assign_value_run(oar_kernel_ctx_t *k) {
    const assign_value_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *t = oar_k_output(k, 0, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    OAR_TRY(oar_tensor_resize(t, a->dims, a->nd));
    void *out = oar_k_output_data(k, 0, 0, a->dtype);
    if (!out) return OAR_ERR_NOMEM;
    if (a->dtype == OAR_FP32 || a->dtype == OAR_FP64) {
        for (int i = 0; i < a->f32.n; i++) {
            if (a->dtype == OAR_FP32) ((float *)out)[i] = a->f32.v[i];
            else ((double *)out)[i] = a->f32.v[i];
        }
    } else if (a->dtype == OAR_INT32) {
        if (a->i32.n) memcpy(out, a->i32.v, sizeof(int32_t) * (size_t)a->i32.n);
    } else if (a->dtype == OAR_INT64) {
        if (a->i64.n) memcpy(out, a->i64.v, sizeof(int64_t) * (size_t)a->i64.n);
    } else {
        for (int i = 0; i < a->b8.n; i++) ((uint8_t *)out)[i] = a->b8.v[i] != 0;
    }
    return OAR_OK;
}

static const oar_op_def_t assign_value_def = {
    .type = "assign_value", .inputs = none, .outputs = out_slot, .attrs = assign_value_attrs,
    .infer = assign_value_infer, .flags = OAR_OP_NO_KERNEL, .run = assign_value_run,
    .attrs_size = sizeof(assign_value_attrs_t), .decode = assign_value_decode};
OAR_REGISTER_OP(assign_value_def)

/* ---- shape --------------------------------------------------------------- */
static const oar_slot_def_t shape_in[] = {{"Input", 0}, {NULL, 0}};

static int shape_infer(oar_infer_ctx_t *c) {
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "Input", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t out[1] = {nd};
    return oar_ic_set_out(c, "Out", 0, out, 1, OAR_INT32);
}

static int shape_run(oar_kernel_ctx_t *k) {
    const oar_tensor_t *x = oar_k_input(k, 0, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input '%s' has no value", oar_k_input_name(k, 0, 0));
    oar_tensor_t *t = oar_k_output(k, 0, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    int64_t nd = x->ndim;
    OAR_TRY(oar_tensor_resize(t, &nd, 1));
    int32_t *out = oar_k_output_data(k, 0, 0, OAR_INT32);
    if (!out) return OAR_ERR_NOMEM;
    for (int i = 0; i < x->ndim; i++) out[i] = (int32_t)x->dims[i];
    return OAR_OK;
}

static const oar_attr_def_t shape_attrs[] = {OAR_PA_USE_MKLDNN, OAR_PA_MKLDNN_DT, OAR_PA_ONEDNN, ATTR_END};
static const oar_op_def_t shape_def = {
    .type = "shape", .inputs = shape_in, .outputs = out_slot, .attrs = shape_attrs, .infer = shape_infer,
    .flags = OAR_OP_NO_KERNEL | OAR_OP_PLACE_AWARE, .run = shape_run};
OAR_REGISTER_OP(shape_def)

/* ---- clip_by_norm: Out = X * max_norm / max(norm(X), max_norm) ----------- */
static const oar_slot_def_t x_in[] = {{"X", 0}, {NULL, 0}};
static const oar_attr_def_t clip_by_norm_attrs[] = {
    {"max_norm", OAR_ATTR_FLOAT, 0, NULL, true, 0, 0}, ATTR_END};

static int clip_by_norm_decode(oar_decode_ctx_t *d, void *out) {
    ((oar_clip_by_norm_attrs_t *)out)->max_norm = oar_dec_f(d, "max_norm");
    return oar_dec_status(d);
}

static int clip_by_norm_infer(oar_infer_ctx_t *c) {
    if (oar_attr_f(oar_ic_op(c), "max_norm") <= 0)
        return oar_ic_error(c, OAR_ERR_RANGE, "max_norm must be positive, got %g", oar_attr_f(oar_ic_op(c), "max_norm"));
    return oar_infer_same_as(c, "X", "Out");
}

static const oar_op_def_t clip_by_norm_def = {
    .type = "clip_by_norm", .inputs = x_in, .outputs = out_slot, .attrs = clip_by_norm_attrs,
    .infer = clip_by_norm_infer, .attrs_size = sizeof(oar_clip_by_norm_attrs_t),
    .decode = clip_by_norm_decode, .flags = OAR_OP_INPLACE /* the norm is taken before any write */};
OAR_REGISTER_OP(clip_by_norm_def)

/* ---- Print ----------------------------------------------------------------
 * Passes In through to Out and writes a summary of the tensor to stderr. */
static const oar_slot_def_t print_in[] = {{"In", 0}, {NULL, 0}};
static const oar_attr_def_t print_attrs[] = {
    {"first_n", OAR_ATTR_INT, -1, NULL, false, 0, 0},
    {"message", OAR_ATTR_STRING, 0, "", false, 0, 0},
    {"summarize", OAR_ATTR_INT, 20, NULL, false, 0, 0},
    {"print_tensor_name", OAR_ATTR_BOOLEAN, 1, NULL, false, 0, 0},
    {"print_tensor_type", OAR_ATTR_BOOLEAN, 1, NULL, false, 0, 0},
    {"print_tensor_shape", OAR_ATTR_BOOLEAN, 1, NULL, false, 0, 0},
    {"print_tensor_lod", OAR_ATTR_BOOLEAN, 1, NULL, false, 0, 0},
    {"print_phase", OAR_ATTR_STRING, 0, "both", false, 0, 0},
    OAR_PA_B("print_tensor_layout", 1), OAR_PA_B("is_forward", 1),
    ATTR_END};
static const oar_slot_def_t print_out[] = {{"Out", OAR_SLOT_DISPENSABLE}, {NULL, 0}};

static int print_infer(oar_infer_ctx_t *c) {
    if (oar_ic_out_count(c, "Out") == 0) return OAR_OK;
    return oar_infer_same_as(c, "In", "Out");
}

typedef struct print_attrs {
    int first_n, summarize;
    const char *message;
    bool name, type, shape, lod;
} print_attrs_t;

static int print_decode(oar_decode_ctx_t *d, void *out) {
    print_attrs_t *a = out;
    a->first_n = oar_dec_i(d, "first_n");
    a->summarize = oar_dec_i(d, "summarize");
    a->message = oar_dec_s(d, "message");
    a->name = oar_dec_b(d, "print_tensor_name");
    a->type = oar_dec_b(d, "print_tensor_type");
    a->shape = oar_dec_b(d, "print_tensor_shape");
    a->lod = oar_dec_b(d, "print_tensor_lod");
    return oar_dec_status(d);
}

static double element(const oar_tensor_t *t, int64_t i) {
    const void *d = t->buf->data;
    switch (t->dtype) {
    case OAR_FP32: return ((const float *)d)[i];
    case OAR_FP64: return ((const double *)d)[i];
    case OAR_INT32: return ((const int32_t *)d)[i];
    case OAR_INT64: return (double)((const int64_t *)d)[i];
    case OAR_INT16: return ((const int16_t *)d)[i];
    case OAR_INT8: return ((const int8_t *)d)[i];
    case OAR_BOOL: case OAR_UINT8: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

static int print_run(oar_kernel_ctx_t *k) {
    const oar_op_desc_t *op = oar_k_op(k);
    const print_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, 0, 0);
    if (!x || !oar_tensor_has_data(x))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input '%s' has no value", oar_k_input_name(k, 0, 0));
    /* first_n counts calls of this op desc across runs */
    static __thread const oar_op_desc_t *last_op;
    static __thread int calls;
    if (last_op != op) { last_op = op; calls = 0; }
    int first_n = a->first_n;
    if (first_n < 0 || calls < first_n) {
        char buf[160];
        flockfile(stderr);
        if (a->message[0]) fprintf(stderr, "%s ", a->message);
        if (a->name) fprintf(stderr, "%s ", oar_k_input_name(k, 0, 0));
        if (a->type) fprintf(stderr, "dtype=%s ", oar_dtype_name(x->dtype));
        if (a->shape) fprintf(stderr, "shape=%s ", oar_shape_str(x->dims, x->ndim, buf, sizeof buf));
        if (a->lod && x->lod_levels > 0) {
            fprintf(stderr, "lod=");
            for (int l = 0; l < x->lod_levels; l++) {
                fprintf(stderr, "{");
                for (int64_t i = 0; i < x->lod_size[l]; i++) fprintf(stderr, "%s%lld", i ? "," : "", (long long)x->lod[l][i]);
                fprintf(stderr, "}");
            }
            fprintf(stderr, " ");
        }
        int64_t n = oar_tensor_numel_of(x);
        int summarize = a->summarize;
        int64_t show = summarize < 0 || summarize > n ? n : summarize;
        fprintf(stderr, "data=[");
        for (int64_t i = 0; i < show; i++) fprintf(stderr, "%s%g", i ? ", " : "", element(x, i));
        fprintf(stderr, "%s]\n", show < n ? ", ..." : "");
        funlockfile(stderr);
    }
    calls++;
    if (oar_k_nout(k, 0) == 0) return OAR_OK;
    oar_tensor_t *out = oar_k_output(k, 0, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor");
    return oar_tensor_share(out, x);
}

static const oar_op_def_t print_def = {
    .type = "print", .inputs = print_in, .outputs = print_out, .attrs = print_attrs,
    .infer = print_infer, .flags = OAR_OP_NO_KERNEL, .run = print_run,
    .attrs_size = sizeof(print_attrs_t), .decode = print_decode};
OAR_REGISTER_OP(print_def)
