/*
 * tensor_ext.c — CPU kernels of where, index_select, gather_nd and cumsum
 * (src/ops/tensor_ext.c) and their grads. The forward selections copy
 * elements of any size (float32/64, int32/64); the grads scatter-add in
 * float32/float64. Indices out of range are errors naming the position.
 */
#include <string.h>
#include "op.h"
#include "ops/tensor_ext.h"

static bool read_index(const oar_tensor_t *t, int64_t i, int64_t *v)
{
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    if (t->dtype == OAR_INT32) { *v = ((const int32_t *)p)[i]; return true; }
    if (t->dtype == OAR_INT64) { *v = ((const int64_t *)p)[i]; return true; }
    return false;
}

static int dim_of(int dim, int nd) { return dim < 0 ? dim + nd : dim; }

/* ---- where --------------------------------------------------------------- */
static int where_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *ct = oar_k_input(k, OAR_WHERE_COND, 0), *xt = oar_k_input(k, OAR_WHERE_X, 0),
                 *yt = oar_k_input(k, OAR_WHERE_Y, 0);
    const int64_t n = oar_tensor_numel_of(xt);
    if (oar_tensor_numel_of(ct) != n || oar_tensor_numel_of(yt) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Condition, X and Y must have the same number of elements");
    char *o = oar_k_output_data(k, OAR_WHERE_OUT, 0, xt->dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const size_t es = oar_dtype_size(xt->dtype);
    const bool *c = oar_tensor_data(ct);
    const char *x = oar_tensor_data(xt), *y = oar_tensor_data(yt);
    for (int64_t i = 0; i < n; i++) memcpy(o + i * es, (c[i] ? x : y) + i * es, es);
    return OAR_OK;
}

#define WHERE_GRAD(T, SUF, DT)                                                                  \
    static int where_bwd_##SUF(oar_kernel_ctx_t *k)                                             \
    {                                                                                           \
        oar_tensor_t *ct = oar_k_input(k, OAR_WHERE_COND, 0), *gt = oar_k_input(k, OAR_WHERE_DOUT, 0); \
        const int64_t n = oar_tensor_numel_of(gt);                                              \
        if (oar_tensor_numel_of(ct) != n)                                                       \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD and Condition differ in size");      \
        const bool *c = oar_tensor_data(ct);                                                    \
        const T *g = oar_tensor_data(gt);                                                       \
        for (int side = 0; side < 2; side++) {                                                  \
            int slot = side ? OAR_WHERE_DY : OAR_WHERE_DX;                                      \
            if (!oar_k_output(k, slot, 0)) continue;                                            \
            T *d = oar_k_output_data(k, slot, 0, DT);                                           \
            if (!d) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate a gradient");         \
            for (int64_t i = 0; i < n; i++) d[i] = (c[i] != (side == 1)) ? g[i] : (T)0;         \
        }                                                                                       \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("where_grad", OAR_PLACE_CPU, DT, where_bwd_##SUF)
WHERE_GRAD(float, f32, OAR_FP32)
WHERE_GRAD(double, f64, OAR_FP64)

/* ---- index_select -------------------------------------------------------- */
/* X viewed as [outer, dims[dim], inner] */
static void split3(const oar_tensor_t *t, int dim, int64_t *outer, int64_t *mid, int64_t *inner)
{
    *outer = *inner = 1;
    for (int i = 0; i < dim; i++) *outer *= t->dims[i];
    for (int i = dim + 1; i < t->ndim; i++) *inner *= t->dims[i];
    *mid = t->dims[dim];
}

static int isel_check(oar_kernel_ctx_t *k, const oar_tensor_t *it, int64_t mid, int64_t *n)
{
    *n = oar_tensor_numel_of(it);
    for (int64_t i = 0; i < *n; i++) {
        int64_t v;
        if (!read_index(it, i, &v)) return oar_k_error(k, OAR_ERR_DTYPE, "Index must be int32 or int64");
        if (v < 0 || v >= mid)
            return oar_k_error(k, OAR_ERR_RANGE, "Index[%lld] = %lld is out of range [0, %lld)", (long long)i,
                               (long long)v, (long long)mid);
    }
    return OAR_OK;
}

static int isel_fwd(oar_kernel_ctx_t *k)
{
    const oar_isel_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *xt = oar_k_input(k, OAR_ISEL_X, 0), *it = oar_k_input(k, OAR_ISEL_INDEX, 0);
    int64_t outer, mid, inner, n;
    split3(xt, dim_of(a->dim, xt->ndim), &outer, &mid, &inner);
    OAR_TRY(isel_check(k, it, mid, &n));
    char *o = oar_k_output_data(k, OAR_ISEL_OUT, 0, xt->dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const size_t es = oar_dtype_size(xt->dtype);
    const char *x = oar_tensor_data(xt);
    for (int64_t p = 0; p < outer; p++)
        for (int64_t i = 0; i < n; i++) {
            int64_t v = 0;
            read_index(it, i, &v);
            memcpy(o + ((p * n + i) * inner) * es, x + ((p * mid + v) * inner) * es, (size_t)inner * es);
        }
    return OAR_OK;
}

#define ISEL_GRAD(T, SUF, DT)                                                                   \
    static int isel_bwd_##SUF(oar_kernel_ctx_t *k)                                              \
    {                                                                                           \
        if (!oar_k_output(k, OAR_ISEL_DX, 0)) return OAR_OK;                                    \
        const oar_isel_attrs_t *a = oar_k_attrs(k);                                             \
        oar_tensor_t *xt = oar_k_input(k, OAR_ISEL_X, 0), *it = oar_k_input(k, OAR_ISEL_INDEX, 0); \
        oar_tensor_t *gt = oar_k_input(k, OAR_ISEL_DOUT, 0);                                    \
        int64_t outer, mid, inner, n;                                                           \
        split3(xt, dim_of(a->dim, xt->ndim), &outer, &mid, &inner);                             \
        OAR_TRY(isel_check(k, it, mid, &n));                                                    \
        if (oar_tensor_numel_of(gt) != outer * n * inner)                                       \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD does not have Out's size");          \
        T *d = oar_k_output_data(k, OAR_ISEL_DX, 0, DT);                                        \
        if (!d) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");                 \
        const T *g = oar_tensor_data(gt);                                                       \
        memset(d, 0, sizeof(T) * (size_t)(outer * mid * inner));                                \
        for (int64_t p = 0; p < outer; p++)                                                     \
            for (int64_t i = 0; i < n; i++) {                                                   \
                int64_t v = 0;                                                                  \
                read_index(it, i, &v);                                                          \
                T *dr = d + (p * mid + v) * inner;                                              \
                const T *gr = g + (p * n + i) * inner;                                          \
                for (int64_t j = 0; j < inner; j++) dr[j] += gr[j];                             \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("index_select_grad", OAR_PLACE_CPU, DT, isel_bwd_##SUF)
ISEL_GRAD(float, f32, OAR_FP32)
ISEL_GRAD(double, f64, OAR_FP64)

/* ---- gather_nd ----------------------------------------------------------- */
/* offset (in slices of `slice` elements) of index row r, or an error */
static int gnd_offset(oar_kernel_ctx_t *k, const oar_tensor_t *xt, const oar_tensor_t *it, int64_t kk,
                      int64_t r, int64_t *off)
{
    int64_t o = 0;
    for (int64_t j = 0; j < kk; j++) {
        int64_t v;
        if (!read_index(it, r * kk + j, &v)) return oar_k_error(k, OAR_ERR_DTYPE, "Index must be int32 or int64");
        if (v < 0 || v >= xt->dims[j])
            return oar_k_error(k, OAR_ERR_RANGE, "Index row %lld, entry %lld = %lld is out of range [0, %lld)",
                               (long long)r, (long long)j, (long long)v, (long long)xt->dims[j]);
        o = o * xt->dims[j] + v;
    }
    *off = o;
    return OAR_OK;
}

static void gnd_sizes(const oar_tensor_t *xt, const oar_tensor_t *it, int64_t *kk, int64_t *rows, int64_t *slice)
{
    *kk = it->ndim > 0 ? it->dims[it->ndim - 1] : 0;
    *rows = *kk > 0 ? oar_tensor_numel_of(it) / *kk : oar_tensor_numel_of(it);
    if (*kk == 0) {   /* an empty index row selects all of X */
        *rows = 1;
        for (int i = 0; i < it->ndim - 1; i++) *rows *= it->dims[i];
    }
    *slice = 1;
    for (int i = (int)*kk; i < xt->ndim; i++) *slice *= xt->dims[i];
}

static int gnd_fwd(oar_kernel_ctx_t *k)
{
    oar_tensor_t *xt = oar_k_input(k, OAR_GND_X, 0), *it = oar_k_input(k, OAR_GND_INDEX, 0);
    int64_t kk, rows, slice;
    gnd_sizes(xt, it, &kk, &rows, &slice);
    char *o = oar_k_output_data(k, OAR_GND_OUT, 0, xt->dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    const size_t es = oar_dtype_size(xt->dtype);
    const char *x = oar_tensor_data(xt);
    for (int64_t r = 0; r < rows; r++) {
        int64_t off;
        OAR_TRY(gnd_offset(k, xt, it, kk, r, &off));
        memcpy(o + r * slice * es, x + off * slice * es, (size_t)slice * es);
    }
    return OAR_OK;
}

#define GND_GRAD(T, SUF, DT)                                                                    \
    static int gnd_bwd_##SUF(oar_kernel_ctx_t *k)                                               \
    {                                                                                           \
        if (!oar_k_output(k, OAR_GND_DX, 0)) return OAR_OK;                                     \
        oar_tensor_t *xt = oar_k_input(k, OAR_GND_X, 0), *it = oar_k_input(k, OAR_GND_INDEX, 0); \
        oar_tensor_t *gt = oar_k_input(k, OAR_GND_DOUT, 0);                                     \
        int64_t kk, rows, slice;                                                                \
        gnd_sizes(xt, it, &kk, &rows, &slice);                                                  \
        if (oar_tensor_numel_of(gt) != rows * slice)                                            \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD does not have Out's size");          \
        T *d = oar_k_output_data(k, OAR_GND_DX, 0, DT);                                         \
        if (!d) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");                 \
        const T *g = oar_tensor_data(gt);                                                       \
        memset(d, 0, sizeof(T) * (size_t)oar_tensor_numel_of(xt));                              \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            int64_t off;                                                                        \
            OAR_TRY(gnd_offset(k, xt, it, kk, r, &off));                                        \
            for (int64_t j = 0; j < slice; j++) d[off * slice + j] += g[r * slice + j];         \
        }                                                                                       \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("gather_nd_grad", OAR_PLACE_CPU, DT, gnd_bwd_##SUF)
GND_GRAD(float, f32, OAR_FP32)
GND_GRAD(double, f64, OAR_FP64)

/* ---- cumsum -------------------------------------------------------------- */
/* running sums of src into dst along the middle axis of [outer, mid, inner] */
#define CUMSUM(T, SUF, DT, ACC)                                                                 \
    static void scan_##SUF(const T *src, T *dst, int64_t outer, int64_t mid, int64_t inner,     \
                           bool exclusive, bool reverse)                                        \
    {                                                                                           \
        for (int64_t p = 0; p < outer; p++)                                                     \
            for (int64_t j = 0; j < inner; j++) {                                               \
                ACC s = 0;                                                                      \
                for (int64_t t = 0; t < mid; t++) {                                             \
                    int64_t i = reverse ? mid - 1 - t : t;                                      \
                    int64_t at = (p * mid + i) * inner + j;                                     \
                    T v = src[at];                                                              \
                    if (exclusive) { dst[at] = (T)s; s += v; }                                  \
                    else { s += v; dst[at] = (T)s; }                                            \
                }                                                                               \
            }                                                                                   \
    }                                                                                           \
    static int cs_run_##SUF(oar_kernel_ctx_t *k, oar_tensor_t *like, const T *src, int out_slot, bool grad) \
    {                                                                                           \
        const oar_cumsum_attrs_t *a = oar_k_attrs(k);                                           \
        int64_t outer = 1, mid = oar_tensor_numel_of(like), inner = 1;                          \
        if (!a->flatten && like->ndim > 0) split3(like, dim_of(a->axis, like->ndim), &outer, &mid, &inner); \
        T *o = oar_k_output_data(k, out_slot, 0, DT);                                           \
        if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the output");             \
        /* the grad of a running sum is the running sum the other way */                      \
        scan_##SUF(src, o, outer, mid, inner, a->exclusive, grad ? !a->reverse : a->reverse);   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int cs_fwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        oar_tensor_t *xt = oar_k_input(k, OAR_CUMSUM_X, 0);                                     \
        return cs_run_##SUF(k, xt, oar_tensor_data(xt), OAR_CUMSUM_OUT, false);                 \
    }                                                                                           \
    OAR_REGISTER_KERNEL("cumsum", OAR_PLACE_CPU, DT, cs_fwd_##SUF)
CUMSUM(float, f32, OAR_FP32, double)
CUMSUM(double, f64, OAR_FP64, double)
CUMSUM(int32_t, i32, OAR_INT32, int64_t)
CUMSUM(int64_t, i64, OAR_INT64, int64_t)

#define CUMSUM_GRAD(T, SUF, DT)                                                                 \
    static int cs_bwd_##SUF(oar_kernel_ctx_t *k)                                                \
    {                                                                                           \
        if (!oar_k_output(k, 0, 0)) return OAR_OK;                                              \
        oar_tensor_t *xt = oar_k_input(k, 0, 0), *gt = oar_k_input(k, 1, 0);                    \
        if (oar_tensor_numel_of(gt) != oar_tensor_numel_of(xt))                                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD does not have X's size");            \
        return cs_run_##SUF(k, xt, oar_tensor_data(gt), 0, true);                               \
    }                                                                                           \
    OAR_REGISTER_KERNEL("cumsum_grad", OAR_PLACE_CPU, DT, cs_bwd_##SUF)
CUMSUM_GRAD(float, f32, OAR_FP32)
CUMSUM_GRAD(double, f64, OAR_FP64)

/* forward selections of any element type */
#define ANY_DT(NAME, FN)                                                                        \
    static int NAME##_f32(oar_kernel_ctx_t *k) { return FN(k); }                                \
    static int NAME##_f64(oar_kernel_ctx_t *k) { return FN(k); }                                \
    static int NAME##_i32(oar_kernel_ctx_t *k) { return FN(k); }                                \
    static int NAME##_i64(oar_kernel_ctx_t *k) { return FN(k); }                                \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_FP32, NAME##_f32)                             \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_FP64, NAME##_f64)                             \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_INT32, NAME##_i32)                            \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_INT64, NAME##_i64)
ANY_DT(where, where_fwd)
ANY_DT(index_select, isel_fwd)
ANY_DT(gather_nd, gnd_fwd)
