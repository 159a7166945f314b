/*
 * index_ops.c — CPU kernels of gather (+grad), one_hot, top_k (+grad),
 * arg_max and arg_min.
 *
 * Positions read from tensors (Index, X of one_hot, Indices of top_k_grad)
 * are validated in a serial pass before anything is written, so a bad
 * position fails the op without a partial result.
 *
 * Order used by top_k and arg_max/arg_min: larger values first, NaN above
 * every number (as numpy's argmax and PyTorch's topk treat it), ties to the
 * lower index.
 */
#include "op.h"
#include "ops/index_ops.h"

#include <stdlib.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

/* input `slot` (`name` in messages) holding a value */
static int tensor_in(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, 0);
    if (!*t || (*t)->dtype < 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                           nm(oar_k_input_name(k, slot, 0)));
    if (oar_tensor_numel_of(*t) > 0 && !oar_tensor_has_data(*t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no data", name,
                           nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

static const void *data_of(const oar_tensor_t *t) { return oar_tensor_has_data(t) ? t->buf->data : NULL; }

/* i-th value of an int32/int64 tensor */
static inline int64_t int_at(const oar_tensor_t *t, int64_t i)
{
    return t->dtype == OAR_INT32 ? ((const int32_t *)t->buf->data)[i] : ((const int64_t *)t->buf->data)[i];
}

static int int_tensor(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t *t, bool allow_int32)
{
    if (t->dtype == OAR_INT64 || (allow_int32 && t->dtype == OAR_INT32)) return OAR_OK;
    return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name,
                       nm(oar_k_input_name(k, slot, 0)), nm(oar_dtype_name(t->dtype)),
                       allow_int32 ? "int32 or int64" : "int64");
}

/* ---- gather --------------------------------------------------------------- */
/* Index values in [0, rows) */
static int gather_index(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t **idx)
{
    OAR_TRY(tensor_in(k, OAR_GATHER_INDEX, "Index", idx));
    OAR_TRY(int_tensor(k, OAR_GATHER_INDEX, "Index", *idx, true));
    int64_t m = oar_tensor_numel_of(*idx), rows = x->ndim > 0 ? x->dims[0] : 1;
    for (int64_t i = 0; i < m; i++) {
        int64_t v = int_at(*idx, i);
        if (v < 0 || v >= rows)
            return oar_k_error(k, OAR_ERR_RANGE, "Index '%s' holds %lld at position %lld, out of range [0, %lld) "
                               "for X '%s'", nm(oar_k_input_name(k, OAR_GATHER_INDEX, 0)), (long long)v,
                               (long long)i, (long long)rows, nm(oar_k_input_name(k, OAR_IDX_X, 0)));
    }
    return OAR_OK;
}

static int gather_fwd(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x, *idx;
    OAR_TRY(tensor_in(k, OAR_IDX_X, "X", &x));
    OAR_TRY(gather_index(k, x, &idx));
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    if (out == x) return oar_k_error(k, OAR_ERR_INVALID, "Out is X itself; gather cannot run in place");
    char *o = oar_tensor_mutable(out, x->dtype);
    if (!o) return OAR_ERR_NOMEM;
    int64_t m = oar_tensor_numel_of(idx);
    size_t row = oar_dtype_size(x->dtype);
    for (int i = 1; i < x->ndim; i++) row *= (size_t)x->dims[i];
    const char *src = data_of(x);
    if (row == 0) return OAR_OK;
    for (int64_t i = 0; i < m; i++) memcpy(o + (size_t)i * row, src + (size_t)int_at(idx, i) * row, row);
    return OAR_OK;
}

#define GATHER_GRAD(sfx, T, DT)                                                              \
    static int gather_grad_##sfx(oar_kernel_ctx_t *k)                                        \
    {                                                                                        \
        const oar_tensor_t *x, *idx, *g;                                                     \
        OAR_TRY(tensor_in(k, OAR_IDX_X, "X", &x));                                           \
        OAR_TRY(gather_index(k, x, &idx));                                                   \
        OAR_TRY(tensor_in(k, OAR_GATHERG_DOUT, "Out@GRAD", &g));                             \
        int64_t m = oar_tensor_numel_of(idx), row = 1;                                       \
        for (int i = 1; i < x->ndim; i++) row *= x->dims[i];                                 \
        if (g->dtype != DT || oar_tensor_numel_of(g) != m * row)                             \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD must hold %lld x %lld values of %s", \
                               (long long)m, (long long)row, oar_dtype_name(DT));            \
        if (!oar_k_output(k, OAR_GATHERG_DX, 0)) return OAR_OK;                              \
        T *dx = oar_k_output_data(k, OAR_GATHERG_DX, 0, DT);                                 \
        if (!dx) return OAR_ERR_NOMEM;                                                       \
        memset(dx, 0, sizeof(T) * (size_t)oar_tensor_numel_of(x));                           \
        const T *go = data_of(g);                                                            \
        /* serial: repeated indices add into the same row */                                 \
        for (int64_t i = 0; i < m; i++) {                                                    \
            T *d = dx + int_at(idx, i) * row;                                                \
            const T *s = go + i * row;                                                       \
            for (int64_t j = 0; j < row; j++) d[j] += s[j];                                  \
        }                                                                                    \
        return OAR_OK;                                                                       \
    }                                                                                        \
    OAR_REGISTER_KERNEL("gather_grad", OAR_PLACE_CPU, DT, gather_grad_##sfx)
GATHER_GRAD(f32, float, OAR_FP32)
GATHER_GRAD(f64, double, OAR_FP64)

/* ---- one_hot -------------------------------------------------------------- */
static int one_hot_k(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x;
    OAR_TRY(tensor_in(k, OAR_IDX_X, "X", &x));
    OAR_TRY(int_tensor(k, OAR_IDX_X, "X", x, true));
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (!out || out->ndim < 1) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    const oar_one_hot_attrs_t *a = oar_k_attrs(k);
    int dt = a->dtype;
    bool allow = a->allow_out_of_range;
    int64_t n = oar_tensor_numel_of(x), depth = out->dims[out->ndim - 1];
    for (int64_t i = 0; i < n && !allow; i++) {
        int64_t v = int_at(x, i);
        if (v < 0 || v >= depth)
            return oar_k_error(k, OAR_ERR_RANGE, "X '%s' holds %lld at row %lld, outside [0, %lld) (depth); set "
                               "allow_out_of_range to get a zero row", nm(oar_k_input_name(k, OAR_IDX_X, 0)), (long long)v,
                               (long long)i, (long long)depth);
    }
    void *o = oar_k_output_data(k, OAR_IDX_OUT, 0, dt);
    if (!o) return OAR_ERR_NOMEM;
    memset(o, 0, oar_dtype_size(dt) * (size_t)(n * depth));
    for (int64_t i = 0; i < n; i++) {
        int64_t v = int_at(x, i);
        if (v < 0 || v >= depth) continue;
        int64_t at = i * depth + v;
        switch (dt) {
        case OAR_FP32: ((float *)o)[at] = 1.0f; break;
        case OAR_FP64: ((double *)o)[at] = 1.0; break;
        case OAR_INT32: ((int32_t *)o)[at] = 1; break;
        default: ((int64_t *)o)[at] = 1; break;
        }
    }
    return OAR_OK;
}

/* ---- top_k ---------------------------------------------------------------- */
/* a ranks before b (ia, ib their positions) */
#define BETTER(a, ia, b, ib) \
    (((a) != (a) && (b) == (b)) || (a) > (b) || (((a) == (b) || ((a) != (a) && (b) != (b))) && (ia) < (ib)))

#define TOPK_T(sfx, T)                                                                            \
    typedef struct { T v; int64_t i; } pair_##sfx;                                                \
    static int cmp_##sfx(const void *pa, const void *pb)                                          \
    {                                                                                             \
        const pair_##sfx *a = pa, *b = pb;                                                        \
        return BETTER(a->v, a->i, b->v, b->i) ? -1 : 1;                                           \
    }                                                                                             \
    /* small k: insertion into the sorted top list, one pass over the row */                      \
    static void topk_small_##sfx(const T *x, int64_t d, int64_t k, T *ov, int64_t *oi)            \
    {                                                                                             \
        int64_t filled = 0;                                                                       \
        for (int64_t j = 0; j < d; j++) {                                                         \
            T v = x[j];                                                                           \
            if (filled == k && !BETTER(v, j, ov[k - 1], oi[k - 1])) continue;                     \
            int64_t p = filled < k ? filled : k - 1;                                              \
            while (p > 0 && BETTER(v, j, ov[p - 1], oi[p - 1])) {                                 \
                ov[p] = ov[p - 1];                                                                \
                oi[p] = oi[p - 1];                                                                \
                p--;                                                                              \
            }                                                                                     \
            ov[p] = v;                                                                            \
            oi[p] = j;                                                                            \
            if (filled < k) filled++;                                                             \
        }                                                                                         \
    }                                                                                             \
    static int topk_##sfx(oar_kernel_ctx_t *k, const oar_tensor_t *x, int dt)                     \
    {                                                                                             \
        oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);                                      \
        if (!out || !oar_k_output(k, OAR_TOPK_INDICES, 0))                                        \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "outputs Out and Indices need tensors");      \
        int64_t d = x->dims[x->ndim - 1], kk = out->dims[out->ndim - 1];                          \
        int64_t rows = d > 0 ? oar_tensor_numel_of(x) / d : 0;                                    \
        const T *xv = data_of(x);                                                                 \
        T *ov = oar_k_output_data(k, OAR_IDX_OUT, 0, dt);                                         \
        int64_t *oi = ov ? oar_k_output_data(k, OAR_TOPK_INDICES, 0, OAR_INT64) : NULL;           \
        if (!oi) return OAR_ERR_NOMEM;                                                            \
        if (kk <= 64) {                                                                           \
            _Pragma("omp parallel for if(rows * d > 65536)")                                      \
            for (int64_t r = 0; r < rows; r++) topk_small_##sfx(xv + r * d, d, kk, ov + r * kk, oi + r * kk); \
            return OAR_OK;                                                                        \
        }                                                                                         \
        pair_##sfx *buf = oar_xmalloc(sizeof *buf * (size_t)d);                                   \
        if (!buf) return OAR_ERR_NOMEM;                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                      \
            for (int64_t j = 0; j < d; j++) { buf[j].v = xv[r * d + j]; buf[j].i = j; }           \
            qsort(buf, (size_t)d, sizeof *buf, cmp_##sfx);                                        \
            for (int64_t j = 0; j < kk; j++) { ov[r * kk + j] = buf[j].v; oi[r * kk + j] = buf[j].i; } \
        }                                                                                         \
        free(buf);                                                                                \
        return OAR_OK;                                                                            \
    }

TOPK_T(f32, float)
TOPK_T(f64, double)
TOPK_T(i32, int32_t)
TOPK_T(i64, int64_t)

static int top_k_k(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x;
    OAR_TRY(tensor_in(k, OAR_IDX_X, "X", &x));
    if (x->ndim < 1) return oar_k_error(k, OAR_ERR_SHAPE, "input X has rank 0");
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (out == x) return oar_k_error(k, OAR_ERR_INVALID, "Out is X itself; top_k cannot run in place");
    switch (x->dtype) {
    case OAR_FP32: return topk_f32(k, x, OAR_FP32);
    case OAR_FP64: return topk_f64(k, x, OAR_FP64);
    case OAR_INT32: return topk_i32(k, x, OAR_INT32);
    case OAR_INT64: return topk_i64(k, x, OAR_INT64);
    default:
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no top_k for dtype %s", nm(oar_dtype_name(x->dtype)));
    }
}

#define TOPK_GRAD(sfx, T, DT)                                                                    \
    static int top_k_grad_##sfx(oar_kernel_ctx_t *k)                                             \
    {                                                                                            \
        const oar_tensor_t *x, *ind, *g;                                                         \
        OAR_TRY(tensor_in(k, OAR_IDX_X, "X", &x));                                               \
        OAR_TRY(tensor_in(k, OAR_TOPKG_INDICES, "Indices", &ind));                               \
        OAR_TRY(int_tensor(k, OAR_TOPKG_INDICES, "Indices", ind, false));                        \
        OAR_TRY(tensor_in(k, OAR_TOPKG_DOUT, "Out@GRAD", &g));                                   \
        int64_t d = x->ndim > 0 ? x->dims[x->ndim - 1] : 1;                                      \
        int64_t rows = d > 0 ? oar_tensor_numel_of(x) / d : 0;                                   \
        int64_t kk = ind->ndim > 0 ? ind->dims[ind->ndim - 1] : 0;                               \
        if (oar_tensor_numel_of(ind) != rows * kk || oar_tensor_numel_of(g) != rows * kk ||     \
            g->dtype != DT)                                                                      \
            return oar_k_error(k, OAR_ERR_SHAPE, "Indices and Out@GRAD must hold %lld rows of k values", \
                               (long long)rows);                                                 \
        const int64_t *iv = data_of(ind);                                                        \
        for (int64_t i = 0; i < rows * kk; i++)                                                  \
            if (iv[i] < 0 || iv[i] >= d)                                                         \
                return oar_k_error(k, OAR_ERR_RANGE, "Indices '%s' holds %lld at position %lld, outside " \
                                   "[0, %lld)", nm(oar_k_input_name(k, OAR_TOPKG_INDICES, 0)),            \
                                   (long long)iv[i],                                                      \
                                   (long long)i, (long long)d);                                  \
        if (!oar_k_output(k, OAR_TOPKG_DX, 0)) return OAR_OK;                                    \
        T *dx = oar_k_output_data(k, OAR_TOPKG_DX, 0, DT);                                       \
        if (!dx) return OAR_ERR_NOMEM;                                                           \
        memset(dx, 0, sizeof(T) * (size_t)(rows * d));                                           \
        const T *gv = data_of(g);                                                                \
        for (int64_t r = 0; r < rows; r++)                                                       \
            for (int64_t j = 0; j < kk; j++) dx[r * d + iv[r * kk + j]] += gv[r * kk + j];       \
        return OAR_OK;                                                                           \
    }                                                                                            \
    OAR_REGISTER_KERNEL("top_k_grad", OAR_PLACE_CPU, DT, top_k_grad_##sfx)
TOPK_GRAD(f32, float, OAR_FP32)
TOPK_GRAD(f64, double, OAR_FP64)

/* ---- arg_max / arg_min ---------------------------------------------------- */
/* X seen as [pre, n, post] along the axis (flatten: [1, numel, 1]); the
 * first NaN wins, else the first extreme */
#define ARG_T(sfx, T)                                                                            \
    static void arg_##sfx(const T *x, int64_t pre, int64_t n, int64_t post, bool is_max,       \
                          int64_t *out)                                                          \
    {                                                                                            \
        for (int64_t p = 0; p < pre; p++)                                                        \
            for (int64_t q = 0; q < post; q++) {                                                 \
                const T *v = x + p * n * post + q;                                               \
                int64_t best = 0;                                                                \
                for (int64_t j = 1; j < n && v[best * post] == v[best * post]; j++) {            \
                    T a = v[j * post], b = v[best * post];                                       \
                    if (a != a || (is_max ? a > b : a < b)) best = j;                            \
                }                                                                                \
                out[p * post + q] = best;                                                        \
            }                                                                                    \
    }
ARG_T(f32, float)
ARG_T(f64, double)
ARG_T(i64, int64_t)
ARG_T(i32, int32_t)
ARG_T(i16, int16_t)
ARG_T(i8, int8_t)
ARG_T(u8, uint8_t)

static int arg_k(oar_kernel_ctx_t *k, bool is_max)
{
    const oar_tensor_t *x;
    OAR_TRY(tensor_in(k, OAR_IDX_X, "X", &x));
    const oar_arg_attrs_t *a = oar_k_attrs(k);
    int nd = x->ndim;
    int64_t axis = a->axis;
    if (axis < 0) axis += nd;
    int64_t pre = 1, n = oar_tensor_numel_of(x), post = 1;
    if (!a->flatten) {
        if (axis < 0 || axis >= nd) return oar_k_error(k, OAR_ERR_RANGE, "attr axis is out of range");
        n = x->dims[axis];
        for (int i = 0; i < axis; i++) pre *= x->dims[i];
        for (int i = (int)axis + 1; i < nd; i++) post *= x->dims[i];
    }
    if (n == 0) return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' is empty along the reduced axis",
                                   nm(oar_k_input_name(k, OAR_IDX_X, 0)));
    int dt = a->dtype;
    oar_tensor_t *out = oar_k_output(k, OAR_IDX_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    if (out == x) return oar_k_error(k, OAR_ERR_INVALID, "Out is X itself; arg_max/arg_min cannot run in place");
    int64_t m = pre * post;
    /* int32 output: compute into scratch int64 first, then narrow */
    int64_t *idx = dt == OAR_INT64 ? oar_k_output_data(k, OAR_IDX_OUT, 0, OAR_INT64)
                                   : oar_xmalloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    if (!idx) return OAR_ERR_NOMEM;
    const void *xv = data_of(x);
    switch (x->dtype) {
    case OAR_FP32: arg_f32(xv, pre, n, post, is_max, idx); break;
    case OAR_FP64: arg_f64(xv, pre, n, post, is_max, idx); break;
    case OAR_INT64: arg_i64(xv, pre, n, post, is_max, idx); break;
    case OAR_INT32: arg_i32(xv, pre, n, post, is_max, idx); break;
    case OAR_INT16: arg_i16(xv, pre, n, post, is_max, idx); break;
    case OAR_INT8: arg_i8(xv, pre, n, post, is_max, idx); break;
    case OAR_UINT8: arg_u8(xv, pre, n, post, is_max, idx); break;
    default:
        if (dt != OAR_INT64) free(idx);
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "no CPU kernel for dtype %s", nm(oar_dtype_name(x->dtype)));
    }
    if (dt == OAR_INT64) return OAR_OK;
    int32_t *o32 = oar_k_output_data(k, OAR_IDX_OUT, 0, OAR_INT32);
    if (o32)
        for (int64_t i = 0; i < m; i++) o32[i] = (int32_t)idx[i];
    free(idx);
    return o32 ? OAR_OK : OAR_ERR_NOMEM;
}

/* ---- registration ---------------------------------------------------------- */
#define REG1(op, fn, sfx, dt)                                                \
    static int fn##_##sfx(oar_kernel_ctx_t *k) { return fn(k); }            \
    OAR_REGISTER_KERNEL(op, OAR_PLACE_CPU, dt, fn##_##sfx)

static int gather_k(oar_kernel_ctx_t *k) { return gather_fwd(k); }
REG1("gather", gather_k, f32, OAR_FP32) REG1("gather", gather_k, f64, OAR_FP64)
REG1("gather", gather_k, f16, OAR_FP16) REG1("gather", gather_k, i64, OAR_INT64)
REG1("gather", gather_k, i32, OAR_INT32) REG1("gather", gather_k, i16, OAR_INT16)
REG1("gather", gather_k, i8, OAR_INT8) REG1("gather", gather_k, u8, OAR_UINT8)
REG1("gather", gather_k, b, OAR_BOOL)
REG1("one_hot", one_hot_k, i32, OAR_INT32) REG1("one_hot", one_hot_k, i64, OAR_INT64)
REG1("top_k", top_k_k, f32, OAR_FP32) REG1("top_k", top_k_k, f64, OAR_FP64)
REG1("top_k", top_k_k, i32, OAR_INT32) REG1("top_k", top_k_k, i64, OAR_INT64)

static int arg_max_k(oar_kernel_ctx_t *k) { return arg_k(k, true); }
static int arg_min_k(oar_kernel_ctx_t *k) { return arg_k(k, false); }
#define ARG_REG(fn, op)                                                                        \
    REG1(op, fn, f32, OAR_FP32) REG1(op, fn, f64, OAR_FP64) REG1(op, fn, i64, OAR_INT64)       \
    REG1(op, fn, i32, OAR_INT32) REG1(op, fn, i16, OAR_INT16) REG1(op, fn, i8, OAR_INT8)       \
    REG1(op, fn, u8, OAR_UINT8)
ARG_REG(arg_max_k, "arg_max")
ARG_REG(arg_min_k, "arg_min")
