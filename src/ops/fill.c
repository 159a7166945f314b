/* fill.c — constant tensors: fill_constant and fill_constant_batch_size_like,
 * declared in fill.ops (slots, attributes, docs). Kernels in
 * kernels/cpu/fill.c and kernels/cuda/tensor_ops.cu. */
#include "op.h"
#include "attr_tensor.h"
#include "ops/fill_util.h"   /* ops/fill.h, generated from fill.ops */

#include <errno.h>
#include <stdlib.h>

/* CPU kernels exist for these; float16 is storage-only on CPU. */
static bool fill_dtype_ok(int dt)
{
    return dt == OAR_BOOL || dt == OAR_INT16 || dt == OAR_INT32 || dt == OAR_INT64 ||
           dt == OAR_FP32 || dt == OAR_FP64 || dt == OAR_UINT8 || dt == OAR_INT8;
}

static int check_dtype_attr(oar_infer_ctx_t *c, int dt)
{
    if (fill_dtype_ok(dt)) return OAR_OK;
    const char *nm = oar_dtype_name(dt);
    return oar_ic_error(c, OAR_ERR_DTYPE,
                        "attr dtype = %d (%s) is not one of bool, int16, int32, int64, "
                        "float32, float64, uint8, int8", dt, nm ? nm : "unknown");
}

/* The `shape` attr as int64 dims; an empty shape means [1] (a one-element
 * tensor, which is what callers asking for a "scalar" get in Fluid 1.x). */
static int shape_attr(oar_infer_ctx_t *c, int64_t *dims, int *ndim,
                      bool allow_neg1)
{
    const oar_fill_attrs_t *a = oar_ic_attrs(c);
    int n = a->shape_n;
    const int64_t *s = a->shape;
    if (!a->shape_ok)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape is not an INTS/LONGS list of at most %d dims",
                            OAR_MAX_DIMS);
    if (n == 0) { dims[0] = 1; *ndim = 1; return OAR_OK; }
    for (int i = 0; i < n; i++) {
        if (s[i] < 0 && !(allow_neg1 && s[i] == -1))
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape[%d] = %lld must be >= 0",
                                i, (long long)s[i]);
        dims[i] = s[i];
    }
    *ndim = n;
    return OAR_OK;
}

/* The decoder's last step: attr shape (INTS or LONGS, which no single
 * oar_dec_* reads) into shape[], and str_value (which keeps int64 values a
 * float32 attr would round) parsed for the decoded dtype. A bad one fails
 * the kernel only when no ValueTensor overrides it. */
static void fill_finish(oar_decode_ctx_t *d, oar_fill_attrs_t *a)
{
    a->shape_ok = oar_attr_int_list(oar_dec_op(d), "shape", a->shape, OAR_MAX_DIMS, &a->shape_n);
    const char *s = a->str_value;
    a->str_kind = OAR_FILL_STR_NONE;
    if (!s || !s[0]) return;
    bool is_int = a->dtype != OAR_FP32 && a->dtype != OAR_FP64;
    char *end;
    errno = 0;
    long long ll = strtoll(s, &end, 10);
    if (is_int && *end == '\0' && errno == 0) {
        a->str_kind = OAR_FILL_STR_INT;
        a->str_int = ll;
        return;
    }
    errno = 0;
    double v = strtod(s, &end);
    a->str_kind = (end == s || *end != '\0') ? OAR_FILL_STR_BAD : OAR_FILL_STR_FLOAT;
    a->str_float = v;
}

/* ---- fill_constant ----------------------------------------------------- */
static int fc_infer(oar_infer_ctx_t *c)
{
    int dt = ((const oar_fill_attrs_t *)oar_ic_attrs(c))->dtype;
    OAR_TRY(check_dtype_attr(c, dt));
    int64_t dims[OAR_MAX_DIMS];
    int nd;
    if (oar_ic_in_present(c, "ShapeTensor") || oar_ic_in_count(c, "ShapeTensorList") > 0) {
        bool known;
        OAR_TRY(oar_ic_int_list(c, "ShapeTensor", "ShapeTensorList", NULL, dims, OAR_MAX_DIMS, &nd, &known));
        if (nd < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input ShapeTensor '%s' must be 1-D with a known length",
                                oar_ic_in_name(c, "ShapeTensor", 0));
        for (int i = 0; known && i < nd; i++)
            if (dims[i] < 0)
                return oar_ic_error(c, OAR_ERR_SHAPE, "shape[%d] = %lld (from a tensor) must be >= 0", i,
                                    (long long)dims[i]);
        if (nd == 0) { dims[0] = 1; nd = 1; }
        return oar_ic_set_out(c, "Out", 0, dims, nd, dt);
    }
    OAR_TRY(shape_attr(c, dims, &nd, false));
    return oar_ic_set_out(c, "Out", 0, dims, nd, dt);
}

/* ---- fill_constant_batch_size_like ------------------------------------- */
static int fcb_infer(oar_infer_ctx_t *c)
{
    const oar_fill_attrs_t *a = oar_ic_attrs(c);
    int dt = a->dtype;
    OAR_TRY(check_dtype_attr(c, dt));
    if (a->shape_ok && a->shape_n == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape must not be empty");
    int64_t dims[OAR_MAX_DIMS];
    int nd;
    /* the batch slot is commonly written as -1; it is replaced below */
    OAR_TRY(shape_attr(c, dims, &nd, true));
    int ind;
    const int64_t *in = oar_ic_in_dims(c, "Input", 0, &ind);
    if (!in) return OAR_ERR_SHAPE;
    int ii = a->input_dim_idx, oi = a->output_dim_idx;
    if (ii < 0 || ii >= ind)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr input_dim_idx = %d out of range for "
                            "Input '%s' of rank %d", ii, oar_ic_in_name(c, "Input", 0), ind);
    if (oi < 0 || oi >= nd)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr output_dim_idx = %d out of range for "
                            "attr shape of rank %d", oi, nd);
    int64_t batch = in[ii];
    if (oar_ic_runtime(c) && ii == 0) {
        /* a LoD input's batch is its number of sequences, as in Fluid */
        const oar_tensor_t *t = oar_ic_in_lod_tensor(c, "Input", 0);
        int lv = t ? oar_tensor_lod_levels(t) : 0;
        if (lv > 0) batch = oar_tensor_lod_size(t, lv - 1) - 1;
    }
    dims[oi] = batch;
    for (int i = 0; i < nd; i++)
        if (dims[i] < 0 && (i != oi || oar_ic_runtime(c)))
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape[%d] = %lld must be >= 0",
                                i, (long long)dims[i]);
    return oar_ic_set_out(c, "Out", 0, dims, nd, dt);
}

#define OAR_OPS_DEFINE
#include "ops/fill.h"   /* the tables, decoders and registrations */
