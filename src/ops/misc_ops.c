/* misc_ops.c — small ops the layers need: assign_value (a constant tensor
 * from attrs), shape (the dims of a tensor), clip_by_norm, and Print (shows a
 * tensor's values from inside any block, While bodies included). The ops are
 * declared in misc_ops.ops; this file holds their inference and the runs of
 * the ops without kernels. */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "ops/misc_ops.h"   /* generated from misc_ops.ops: slots, attribute structs */
#include "exec.h"

/* ---- assign_value -------------------------------------------------------- */
static const char *values_attr(int dtype) {
    switch (dtype) {
    case OAR_FP32: case OAR_FP64: return "fp32_values";
    case OAR_INT32: return "int32_values";
    case OAR_INT64: return "int64_values";
    case OAR_BOOL: return "bool_values";
    default: return NULL;
    }
}

/* the shape as dims, and the values the dtype reads match its element
 * count; the first problem goes to msg (inference and the run both check:
 * an op without a kernel gets no run-time inference) */
static int assign_value_check(const oar_assign_value_attrs_t *a, int64_t *dims, char *msg, size_t len) {
    if (a->shape.n > OAR_MAX_DIMS) {
        snprintf(msg, len, "shape has %d dims (at most %d)", a->shape.n, OAR_MAX_DIMS);
        return OAR_ERR_SHAPE;
    }
    for (int i = 0; i < a->shape.n; i++) {
        if (a->shape.v[i] < 0) {
            snprintf(msg, len, "shape[%d] = %d is negative", i, a->shape.v[i]);
            return OAR_ERR_SHAPE;
        }
        dims[i] = a->shape.v[i];
    }
    int64_t numel;
    if (oar_shape_numel(dims, a->shape.n, &numel) != OAR_OK) {
        snprintf(msg, len, "shape: %s", oar_last_error());
        return OAR_ERR_SHAPE;
    }
    const char *attr = values_attr(a->dtype);
    if (!attr) {
        snprintf(msg, len, "dtype %d is not supported", a->dtype);
        return OAR_ERR_DTYPE;
    }
    int n = a->dtype == OAR_INT32 ? a->i32.n : a->dtype == OAR_INT64 ? a->i64.n
          : a->dtype == OAR_BOOL ? a->b8.n : a->f32.n;
    if (n != numel) {
        snprintf(msg, len, "%s has %d values, the shape needs %lld", attr, n, (long long)numel);
        return OAR_ERR_SHAPE;
    }
    return OAR_OK;
}

static int assign_value_infer(oar_infer_ctx_t *c) {
    const oar_assign_value_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t dims[OAR_MAX_DIMS];
    char msg[256];
    int rc = assign_value_check(a, dims, msg, sizeof msg);
    if (rc != OAR_OK) return oar_ic_error(c, rc, "%s", msg);
    return oar_ic_set_out(c, "Out", 0, dims, a->shape.n, a->dtype);
}

static int assign_value_run(oar_kernel_ctx_t *k) {
    const oar_assign_value_attrs_t *a = oar_k_attrs(k);
    int64_t dims[OAR_MAX_DIMS];
    char msg[256];
    int rc = assign_value_check(a, dims, msg, sizeof msg);
    if (rc != OAR_OK) return oar_k_error(k, rc, "%s", msg);
    oar_tensor_t *t = oar_k_output(k, OAR_ASSIGN_VALUE_OUT, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    OAR_TRY(oar_tensor_resize(t, dims, a->shape.n));
    void *out = oar_k_output_data(k, OAR_ASSIGN_VALUE_OUT, 0, a->dtype);
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

/* ---- shape --------------------------------------------------------------- */

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

/* ---- clip_by_norm: Out = X * max_norm / max(norm(X), max_norm) ----------- */
static int clip_by_norm_infer(oar_infer_ctx_t *c) {
    const oar_clip_by_norm_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->max_norm <= 0)
        return oar_ic_error(c, OAR_ERR_RANGE, "max_norm must be positive, got %g", (double)a->max_norm);
    return oar_infer_same_as(c, "X", "Out");
}

/* ---- Print ----------------------------------------------------------------
 * Passes In through to Out and writes a summary of the tensor to stderr. */
static int print_infer(oar_infer_ctx_t *c) {
    if (oar_ic_out_count(c, "Out") == 0) return OAR_OK;
    return oar_infer_same_as(c, "In", "Out");
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
    const oar_print_attrs_t *a = oar_k_attrs(k);
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

#define OAR_OPS_DEFINE
#include "ops/misc_ops.h"   /* the tables, the decoders and the registrations */
