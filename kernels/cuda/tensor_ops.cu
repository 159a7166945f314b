/*
 * tensor_ops.cu — CUDA kernels of scale, cast, sum, fill_constant and
 * fill_zeros_like, as kernels/cpu/tensor_ops.c and fill.c.
 *
 * Inputs are read (their pointers taken) before outputs are requested, so an
 * in-place output sees the input's values. Selected rows keep their row
 * indices on the host and their values on the device: scale scales the
 * values; sum concatenates all-sparse inputs, or adds sparse inputs into the
 * dense sum by a scatter over rows checked on the host. fill_constant runs
 * on the device for float outputs (integer constants, often loop counters
 * and shapes read by the host, stay on the CPU kernel); force_cpu fills a
 * host tensor.
 */
#include <stdlib.h>
#include "cuda_common.h"
#include "half.h"
#include "ops/fill_util.h"
#include "ops/tensor_ops.h"

using namespace oarcu;

namespace {

/* ---- scale ----------------------------------------------------------------- */
template <class T, class CT>
__global__ void scale_k(const T *x, T *y, int64_t n, CT s, CT b)
{
    OAR_CU_LOOP(i, n) y[i] = (T)(s * (CT)x[i] + b);
}

/* A SELECTED_ROWS X gives a SELECTED_ROWS Out with X's rows; *xt is X's
 * value, *yt the value tensor to write. */
int rows_in_out(oar_kernel_ctx_t *k, oar_variable_t *var, int dt, const oar_tensor_t **xt, const void **xv,
                oar_tensor_t **yt)
{
    const oar_selected_rows_t *src = var->u.rows;
    const oar_tensor_t *v = src->value;
    const char *name = nm(oar_k_input_name(k, OAR_TENSOR_X, 0));
    if (!v || v->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X '%s': its selected rows hold no %s value", name,
                           oar_dtype_name(dt));
    const int64_t n = oar_tensor_numel_of(v);
    if (n > 0 && (!oar_tensor_has_data(v) || v->buf->place != OAR_PLACE_CUDA || v->buf->device != oar_k_device(k)))
        return oar_k_error(k, OAR_ERR_INVALID, "input X '%s': its selected rows value is not on CUDA device %d",
                           name, oar_k_device(k));
    oar_variable_t *ov = oar_k_output_var(k, OAR_TENSOR_OUT, 0);
    oar_selected_rows_t *dst = ov ? oar_var_selected_rows(ov) : nullptr;
    if (!dst) return oar_k_error(k, OAR_ERR_INVALID, "output Out: %s", ov ? oar_last_error() : "missing");
    if (dst != src) {
        if (src->nrows > dst->cap) {
            int64_t *r = (int64_t *)oar_xrealloc(dst->rows, sizeof *r * (size_t)src->nrows);
            if (!r) return OAR_ERR_NOMEM;
            dst->rows = r;
            dst->cap = src->nrows;
        }
        if (src->nrows > 0) memcpy(dst->rows, src->rows, sizeof *dst->rows * (size_t)src->nrows);
        dst->nrows = src->nrows;
        dst->height = src->height;
        /* a SELECTED_ROWS value: inference cannot see its row count */
        if (!oar_k_output_resized(k, OAR_TENSOR_OUT, v->dims, v->ndim, v->dtype) && oar_tensor_numel_of(v) > 0)
            return OAR_ERR_NOMEM;
    }
    *xt = v;
    *xv = n > 0 ? v->buf->data : nullptr;
    *yt = dst->value;
    return OAR_OK;
}

/* integers compute in double and truncate toward zero, as on the CPU */
template <class T, class CT>
int scale_run(oar_kernel_ctx_t *k, int dt)
{
    const oar_scale_attrs_t *a = (const oar_scale_attrs_t *)oar_k_attrs(k);
    /* the value would live on the device: not read here, so refused rather than ignored */
    if (oar_k_input(k, OAR_TENSOR_SCALE_TENSOR, 0))
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "input ScaleTensor is not supported by the CUDA kernel; run on CPU");
    CT s = (CT)a->scale, b = (CT)a->bias;
    if (!a->bias_after_scale) b *= s;
    const oar_tensor_t *xt;
    const void *xv;
    void *yv;
    oar_variable_t *var = oar_k_input_var(k, OAR_TENSOR_X, 0);
    if (var && oar_variable_type(var) == OAR_VAR_SELECTED_ROWS) {
        oar_tensor_t *yt;
        OAR_TRY(rows_in_out(k, var, dt, &xt, &xv, &yt));
        if (!(yv = oar_tensor_mutable_on(yt, dt, OAR_PLACE_CUDA, oar_k_device(k)))) return OAR_ERR_NOMEM;
    } else {
        OAR_TRY(in_tensor_at(k, OAR_TENSOR_X, 0, dt, -1, &xt, &xv));
        OAR_TRY(out_data_at(k, OAR_TENSOR_OUT, 0, dt, oar_tensor_numel_of(xt), &yv));
    }
    const int64_t n = oar_tensor_numel_of(xt);
    if (n == 0) return OAR_OK;
    scale_k<T, CT><<<grid_for(n), kThreads>>>((const T *)xv, (T *)yv, n, s, b);
    OAR_CU_LAUNCH(k, "scale");
    return OAR_OK;
}

int scale_f32(oar_kernel_ctx_t *k) { return scale_run<float, float>(k, OAR_FP32); }
int scale_f64(oar_kernel_ctx_t *k) { return scale_run<double, double>(k, OAR_FP64); }
int scale_i32(oar_kernel_ctx_t *k) { return scale_run<int32_t, double>(k, OAR_INT32); }
int scale_i64(oar_kernel_ctx_t *k) { return scale_run<int64_t, double>(k, OAR_INT64); }
OAR_REGISTER_KERNEL("scale", OAR_PLACE_CUDA, OAR_FP32, scale_f32)
OAR_REGISTER_KERNEL("scale", OAR_PLACE_CUDA, OAR_FP64, scale_f64)
OAR_REGISTER_KERNEL("scale", OAR_PLACE_CUDA, OAR_INT32, scale_i32)
OAR_REGISTER_KERNEL("scale", OAR_PLACE_CUDA, OAR_INT64, scale_i64)

/* ---- cast --------------------------------------------------------------------- */
template <class T> struct IsFloat { static constexpr bool value = false; };
template <> struct IsFloat<float> { static constexpr bool value = true; };
template <> struct IsFloat<double> { static constexpr bool value = true; };
template <class T> struct IsBool { static constexpr bool value = false; };
template <> struct IsBool<bool> { static constexpr bool value = true; };

/* float to integer saturates (NaN -> 0); integers convert as C does */
template <class TI, class TO>
__global__ void cast_k(const TI *s, TO *d, int64_t n, double lo, double hi)
{
    OAR_CU_LOOP(i, n) {
        if (IsBool<TO>::value) {
            d[i] = (TO)(s[i] != TI(0));
        } else if (IsFloat<TI>::value && !IsFloat<TO>::value) {
            double v = (double)s[i];
            d[i] = (TO)(v != v ? 0.0 : v < lo ? lo : v > hi ? hi : v);
        } else {
            d[i] = (TO)s[i];
        }
    }
}

template <class TI, class TO>
int cast_to(oar_kernel_ctx_t *k, const void *src, void *dst, int64_t n, double lo, double hi)
{
    cast_k<TI, TO><<<grid_for(n), kThreads>>>((const TI *)src, (TO *)dst, n, lo, hi);
    OAR_CU_LAUNCH(k, "cast");
    return OAR_OK;
}

}  // namespace

/* cast's checks and output, shared with the float16 cast (half_ops.cu) */
int oarcu::cast_begin(oar_kernel_ctx_t *k, int dt, const void **xv, void **dst, int64_t *n, int *out_dt)
{
    *out_dt = ((const oar_cast_attrs_t *)oar_k_attrs(k))->out_dtype;
    const oar_tensor_t *xt;
    OAR_TRY(in_tensor_at(k, OAR_TENSOR_X, 0, dt, -1, &xt, xv));
    switch (*out_dt) {
    case OAR_BOOL: case OAR_INT8: case OAR_UINT8: case OAR_INT16: case OAR_INT32:
    case OAR_INT64: case OAR_FP16: case OAR_FP32: case OAR_FP64: break;
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "attr out_dtype = %d has no CUDA cast", *out_dt);
    }
    if (oar_k_output(k, OAR_TENSOR_OUT, 0) == xt && oar_dtype_size(*out_dt) != oar_dtype_size(dt))
        return oar_k_error(k, OAR_ERR_INVALID, "Out '%s' is X itself; an in-place cast must keep the element size",
                           nm(oar_k_output_name(k, OAR_TENSOR_OUT, 0)));
    *n = oar_tensor_numel_of(xt);
    return out_data_at(k, OAR_TENSOR_OUT, 0, *out_dt, *n, dst);
}

namespace {

template <class TI>
int cast_run(oar_kernel_ctx_t *k, int dt)
{
    const void *xv;
    void *dst;
    int64_t n;
    int out_dt;
    OAR_TRY(cast_begin(k, dt, &xv, &dst, &n, &out_dt));
    if (n == 0) return OAR_OK;
    switch (out_dt) {
    case OAR_FP16: return cast_to_half(k, dt, xv, dst, n);   /* half_ops.cu */
    case OAR_BOOL: return cast_to<TI, bool>(k, xv, dst, n, 0, 1);
    case OAR_INT8: return cast_to<TI, int8_t>(k, xv, dst, n, -128.0, 127.0);
    case OAR_UINT8: return cast_to<TI, uint8_t>(k, xv, dst, n, 0.0, 255.0);
    case OAR_INT16: return cast_to<TI, int16_t>(k, xv, dst, n, -32768.0, 32767.0);
    case OAR_INT32: return cast_to<TI, int32_t>(k, xv, dst, n, -2147483648.0, 2147483647.0);
    /* 2^63 is not representable: clamp below it */
    case OAR_INT64: return cast_to<TI, int64_t>(k, xv, dst, n, -9223372036854775808.0, 9223372036854774784.0);
    case OAR_FP32: return cast_to<TI, float>(k, xv, dst, n, 0, 0);
    default: return cast_to<TI, double>(k, xv, dst, n, 0, 0);
    }
}

#define CAST_REG(SFX, TI, DT)                                                 \
    int cast_##SFX(oar_kernel_ctx_t *k) { return cast_run<TI>(k, DT); }       \
    OAR_REGISTER_KERNEL("cast", OAR_PLACE_CUDA, DT, cast_##SFX)
CAST_REG(b, bool, OAR_BOOL)
CAST_REG(i8, int8_t, OAR_INT8)
CAST_REG(u8, uint8_t, OAR_UINT8)
CAST_REG(i16, int16_t, OAR_INT16)
CAST_REG(i32, int32_t, OAR_INT32)
CAST_REG(i64, int64_t, OAR_INT64)
CAST_REG(f32, float, OAR_FP32)
CAST_REG(f64, double, OAR_FP64)

/* ---- sum ------------------------------------------------------------------------ */
constexpr int kSumArgs = 32;
template <class T> struct SumArgs { const T *src[kSumArgs]; };

template <class T>
__global__ void sum_k(SumArgs<T> a, int m, T *y, int64_t n)
{
    OAR_CU_LOOP(i, n) {
        T acc = a.src[0][i];
        for (int j = 1; j < m; j++) acc += a.src[j][i];
        y[i] = acc;
    }
}

/* more inputs than fit the kernel arguments: their pointers in device memory */
template <class T>
__global__ void sum_many_k(const T *const *src, int m, T *y, int64_t n)
{
    OAR_CU_LOOP(i, n) {
        T acc = src[0][i];
        for (int j = 1; j < m; j++) acc += src[j][i];
        y[i] = acc;
    }
}

template <class T>
__global__ void scatter_rows_k(const int64_t *rows, const T *val, T *y, int64_t nrows, int64_t width)
{
    OAR_CU_LOOP(q, nrows * width) atomicAdd(y + rows[q / width] * width + q % width, val[q]);
}

int64_t sr_width(const oar_selected_rows_t *sr)
{
    const oar_tensor_t *v = sr->value;
    if (!v || v->ndim < 1) return -1;
    int64_t w = 1;
    for (int i = 1; i < v->ndim; i++) w *= v->dims[i];
    return w;
}

int sr_check(oar_kernel_ctx_t *k, int j, const oar_selected_rows_t *sr, int dt, int64_t *width)
{
    const char *name = nm(oar_k_input_name(k, OAR_TENSOR_X, j));
    const oar_tensor_t *v = sr->value;
    if (sr->nrows == 0) return OAR_OK;
    int64_t w = sr_width(sr);
    if (w < 0 || !oar_tensor_has_data(v) || v->dims[0] != sr->nrows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s': selected rows has %lld rows but its value does not",
                           j, name, (long long)sr->nrows);
    if (v->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s, expected %s", j, name,
                           nm(oar_dtype_name(v->dtype)), oar_dtype_name(dt));
    if (v->buf->place != OAR_PLACE_CUDA || v->buf->device != oar_k_device(k))
        return oar_k_error(k, OAR_ERR_INVALID, "input X[%d] '%s': its value is not on CUDA device %d", j, name,
                           oar_k_device(k));
    if (*width >= 0 && w != *width)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has rows of %lld elements, the other inputs %lld", j,
                           name, (long long)w, (long long)*width);
    *width = w;
    return OAR_OK;
}

/* every input SELECTED_ROWS: rows and values concatenated (duplicates stay) */
int sum_all_rows(oar_kernel_ctx_t *k, int dt)
{
    const int m = oar_k_nin(k, OAR_TENSOR_X);
    int64_t total = 0, width = -1, height = -1;
    const oar_selected_rows_t *lead = nullptr;
    for (int j = 0; j < m; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v) continue;
        const oar_selected_rows_t *sr = v->u.rows;
        OAR_TRY(sr_check(k, j, sr, dt, &width));
        if (height >= 0 && sr->height != height)
            return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has height %lld, X[0] %lld", j,
                               nm(oar_k_input_name(k, OAR_TENSOR_X, j)), (long long)sr->height, (long long)height);
        height = sr->height;
        if (!lead && sr->nrows > 0) lead = sr;
        total += sr->nrows;
    }
    if (height < 0) return oar_k_error(k, OAR_ERR_INVALID, "input X has no variables");
    int64_t dims[OAR_MAX_DIMS] = {0};
    int nd = 1;
    if (lead) {
        nd = lead->value->ndim;
        memcpy(dims, lead->value->dims, sizeof dims);
    }
    dims[0] = total;
    /* built aside (Out may be one of the X) and swapped in: a data-dependent shape */
    oar_tensor_t *val;
    OAR_TRY(oar_tensor_new_sized(&val, dims, nd));
    int rc = OAR_OK;
    char *dst = (char *)oar_tensor_mutable_on(val, dt, OAR_PLACE_CUDA, oar_k_device(k));
    int64_t *rows = dst ? (int64_t *)oar_xmalloc(sizeof *rows * (size_t)(total ? total : 1)) : nullptr;
    if (!rows) {
        oar_tensor_free(val);
        return rc != OAR_OK ? rc : OAR_ERR_NOMEM;
    }
    const size_t es = oar_dtype_size(dt);
    int64_t at = 0;
    for (int j = 0; j < m && rc == OAR_OK; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v || v->u.rows->nrows == 0) continue;
        const oar_selected_rows_t *sr = v->u.rows;
        memcpy(rows + at, sr->rows, sizeof *rows * (size_t)sr->nrows);
        cudaError_t e = cudaMemcpyAsync(dst + (size_t)(at * width) * es, sr->value->buf->data,
                                        (size_t)(sr->nrows * width) * es, cudaMemcpyDeviceToDevice, 0);
        if (e != cudaSuccess) rc = cuda_fail(k, e, "cudaMemcpyAsync");
        at += sr->nrows;
    }
    oar_selected_rows_t *out = rc == OAR_OK ? oar_var_selected_rows(oar_k_output_var(k, OAR_TENSOR_OUT, 0)) : nullptr;
    if (!out) {
        free(rows);
        oar_tensor_free(val);
        return rc != OAR_OK ? rc : oar_k_error(k, OAR_ERR_INVALID, "output Out: %s", oar_last_error());
    }
    free(out->rows);
    oar_tensor_free(out->value);
    out->rows = rows;
    out->nrows = out->cap = total;
    out->height = height;
    out->value = val;
    return OAR_OK;
}

template <class T>
int sum_run(oar_kernel_ctx_t *k, int dt)
{
    const int m = oar_k_nin(k, OAR_TENSOR_X);
    int used = 0, nsr = 0;
    for (int j = 0; j < m; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (v && oar_variable_type(v) == OAR_VAR_SELECTED_ROWS) nsr++;
        else if (v) used++;
    }
    if (nsr > 0 && used == 0) return sum_all_rows(k, dt);
    const T **src = (const T **)oar_xmalloc(sizeof(T *) * (size_t)(m > 0 ? m : 1));
    if (!src) return OAR_ERR_NOMEM;
    int64_t n = -1, width = -1;
    int rc = OAR_OK, first = -1;
    used = 0;
    for (int j = 0; j < m && rc == OAR_OK; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v) continue;
        if (oar_variable_type(v) == OAR_VAR_SELECTED_ROWS) {
            rc = sr_check(k, j, v->u.rows, dt, &width);
            continue;
        }
        const oar_tensor_t *t;
        const void *p;
        rc = in_tensor_at(k, OAR_TENSOR_X, j, dt, -1, &t, &p);
        if (rc != OAR_OK) break;
        const int64_t nj = oar_tensor_numel_of(t);
        if (n < 0) { n = nj; first = j; }
        else if (nj != n)
            rc = oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] '%s' has %lld elements, X[%d] '%s' has %lld", j,
                             nm(oar_k_input_name(k, OAR_TENSOR_X, j)), (long long)nj, first,
                             nm(oar_k_input_name(k, OAR_TENSOR_X, first)),
                             (long long)n);
        src[used++] = (const T *)p;
    }
    if (rc == OAR_OK && used == 0) rc = oar_k_error(k, OAR_ERR_INVALID, "input X has no variables");
    const oar_tensor_t *ot = oar_k_output(k, OAR_TENSOR_OUT, 0);
    const int64_t height = ot && ot->ndim > 0 ? ot->dims[0] : 1;
    if (rc == OAR_OK && nsr > 0 && width * height != n)
        rc = oar_k_error(k, OAR_ERR_SHAPE, "sparse inputs have rows of %lld elements; the dense inputs' rows have %lld",
                         (long long)width, (long long)(height ? n / height : 0));
    /* sparse rows must lie in the sum, checked on the host where they live */
    for (int j = 0; j < m && rc == OAR_OK && nsr > 0; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v || oar_variable_type(v) != OAR_VAR_SELECTED_ROWS) continue;
        const oar_selected_rows_t *sr = v->u.rows;
        for (int64_t r = 0; r < sr->nrows; r++)
            if (sr->rows[r] < 0 || sr->rows[r] >= height) {
                rc = oar_k_error(k, OAR_ERR_RANGE, "input X[%d] '%s' names row %lld of a sum with %lld rows", j,
                                 nm(oar_k_input_name(k, OAR_TENSOR_X, j)), (long long)sr->rows[r], (long long)height);
                break;
            }
    }
    void *yv = nullptr;
    if (rc == OAR_OK) rc = out_data_at(k, OAR_TENSOR_OUT, 0, dt, n, &yv);
    if (rc == OAR_OK && n > 0) {
        if (used <= kSumArgs) {
            SumArgs<T> a;
            for (int j = 0; j < kSumArgs; j++) a.src[j] = j < used ? src[j] : nullptr;
            sum_k<T><<<grid_for(n), kThreads>>>(a, used, (T *)yv, n);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) rc = cuda_fail(k, e, "launch of kernel sum");
        } else {
            Scratch ptrs;
            rc = ptrs.alloc(k, sizeof(T *) * (size_t)used, "input pointers");
            if (rc == OAR_OK) rc = to_device(k, ptrs.p, src, sizeof(T *) * (size_t)used, "input pointers");
            if (rc == OAR_OK) {
                sum_many_k<T><<<grid_for(n), kThreads>>>(ptrs.as<const T *const>(), used, (T *)yv, n);
                cudaError_t e = cudaGetLastError();
                if (e != cudaSuccess) rc = cuda_fail(k, e, "launch of kernel sum");
            }
        }
    }
    free(src);
    for (int j = 0; j < m && rc == OAR_OK && nsr > 0; j++) {
        oar_variable_t *v = oar_k_input_var(k, OAR_TENSOR_X, j);
        if (!v || oar_variable_type(v) != OAR_VAR_SELECTED_ROWS || v->u.rows->nrows == 0) continue;
        const oar_selected_rows_t *sr = v->u.rows;
        Scratch rows;
        OAR_TRY(rows.alloc(k, sizeof(int64_t) * (size_t)sr->nrows, "sparse rows"));
        OAR_TRY(to_device(k, rows.p, sr->rows, sizeof(int64_t) * (size_t)sr->nrows, "sparse rows"));
        scatter_rows_k<T><<<grid_for(sr->nrows * width), kThreads>>>(rows.as<int64_t>(), (const T *)sr->value->buf->data,
                                                                     (T *)yv, sr->nrows, width);
        OAR_CU_LAUNCH(k, "sum (sparse rows)");
    }
    return rc;
}

int sum_f32(oar_kernel_ctx_t *k) { return sum_run<float>(k, OAR_FP32); }
int sum_f64(oar_kernel_ctx_t *k) { return sum_run<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("sum", OAR_PLACE_CUDA, OAR_FP32, sum_f32)
OAR_REGISTER_KERNEL("sum", OAR_PLACE_CUDA, OAR_FP64, sum_f64)

/* ---- fill_zeros_like ------------------------------------------------------------ */
int fill_zeros_like_run(oar_kernel_ctx_t *k)
{
    const int dt = oar_k_dtype(k);
    const oar_tensor_t *x = oar_k_input(k, OAR_TENSOR_X, 0);
    if (!x)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X '%s' has no value", nm(oar_k_input_name(k, OAR_TENSOR_X, 0)));
    const int64_t n = oar_tensor_numel_of(x);
    void *y;
    OAR_TRY(out_data_at(k, OAR_TENSOR_OUT, 0, dt, -1, &y));
    if (n > 0) OAR_CU(k, cudaMemsetAsync(y, 0, (size_t)n * oar_dtype_size(dt), 0), "cudaMemsetAsync");
    return OAR_OK;
}

#define FZL_REG(SFX, DT) \
    int fill_zeros_like_##SFX(oar_kernel_ctx_t *k) { return fill_zeros_like_run(k); } \
    OAR_REGISTER_KERNEL("fill_zeros_like", OAR_PLACE_CUDA, DT, fill_zeros_like_##SFX)
FZL_REG(b, OAR_BOOL)
FZL_REG(i8, OAR_INT8)
FZL_REG(u8, OAR_UINT8)
FZL_REG(i16, OAR_INT16)
FZL_REG(i32, OAR_INT32)
FZL_REG(i64, OAR_INT64)
FZL_REG(f16, OAR_FP16)
FZL_REG(f32, OAR_FP32)
FZL_REG(f64, OAR_FP64)

/* ---- fill_constant ---------------------------------------------------------------- */
template <class T>
__global__ void fill_k(T *p, int64_t n, T v)
{
    OAR_CU_LOOP(i, n) p[i] = v;
}

template <class T>
void fill_host(void *p, int64_t n, T v)
{
    T *q = (T *)p;
    for (int64_t i = 0; i < n; i++) q[i] = v;
}

int64_t sat_int(double v, double lo, double hi)
{
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

/* the fill value as the CPU kernel reads it: str_value when set (parsed by
 * the definition's decode for the dtype), else value */
int fill_value(oar_kernel_ctx_t *k, const oar_fill_attrs_t *a, double *dv, int64_t *iv)
{
    double d = a->value;
    if (a->str_kind == OAR_FILL_STR_INT) {
        *iv = a->str_int;
        *dv = (double)a->str_int;
        return OAR_OK;
    }
    if (a->str_kind == OAR_FILL_STR_FLOAT) d = a->str_float;
    else if (a->str_kind == OAR_FILL_STR_BAD)
        return oar_k_error(k, OAR_ERR_INVALID, "attr str_value '%s' is not a number", a->str_value);
    *dv = d;
    switch (a->dtype) {
    case OAR_BOOL: *iv = d != 0.0; break;
    case OAR_INT8: *iv = sat_int(d, -128.0, 127.0); break;
    case OAR_UINT8: *iv = sat_int(d, 0.0, 255.0); break;
    case OAR_INT16: *iv = sat_int(d, -32768.0, 32767.0); break;
    case OAR_INT32: *iv = sat_int(d, -2147483648.0, 2147483647.0); break;
    default: *iv = sat_int(d, -9223372036854775808.0, 9223372036854775807.0); break;
    }
    return OAR_OK;
}

template <class T>
int fill_as(oar_kernel_ctx_t *k, void *p, int64_t n, T v, bool host)
{
    if (n == 0) return OAR_OK;
    if (host) { fill_host<T>(p, n, v); return OAR_OK; }
    fill_k<T><<<grid_for(n), kThreads>>>((T *)p, n, v);
    OAR_CU_LAUNCH(k, "fill_constant");
    return OAR_OK;
}

int fill_constant_run(oar_kernel_ctx_t *k)
{
    const oar_fill_attrs_t *a = (const oar_fill_attrs_t *)oar_k_attrs(k);
    const int dt = a->dtype;
    double dv = 0;
    int64_t iv = 0;
    OAR_TRY(fill_value(k, a, &dv, &iv));
    oar_tensor_t *out = oar_k_output(k, OAR_FILL_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    const bool host = a->force_cpu;
    void *p = host ? oar_tensor_mutable(out, dt) : oar_k_output_data(k, OAR_FILL_OUT, 0, dt);
    if (!p) return OAR_ERR_NOMEM;
    const int64_t n = oar_tensor_numel_of(out);
    switch (dt) {
    case OAR_FP32: return fill_as<float>(k, p, n, (float)dv, host);
    case OAR_FP64: return fill_as<double>(k, p, n, dv, host);
    case OAR_INT64: return fill_as<int64_t>(k, p, n, iv, host);
    case OAR_INT32: return fill_as<int32_t>(k, p, n, (int32_t)iv, host);
    case OAR_INT16: return fill_as<int16_t>(k, p, n, (int16_t)iv, host);
    case OAR_INT8: return fill_as<int8_t>(k, p, n, (int8_t)iv, host);
    case OAR_UINT8: return fill_as<uint8_t>(k, p, n, (uint8_t)iv, host);
    case OAR_BOOL: return fill_as<bool>(k, p, n, iv != 0, host);
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no CUDA kernel for dtype %s", nm(oar_dtype_name(dt)));
    }
}

int fill_constant_f32(oar_kernel_ctx_t *k) { return fill_constant_run(k); }
int fill_constant_f64(oar_kernel_ctx_t *k) { return fill_constant_run(k); }
OAR_REGISTER_KERNEL("fill_constant", OAR_PLACE_CUDA, OAR_FP32, fill_constant_f32)
OAR_REGISTER_KERNEL("fill_constant", OAR_PLACE_CUDA, OAR_FP64, fill_constant_f64)

}  // namespace
