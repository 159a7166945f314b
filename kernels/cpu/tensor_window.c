/*
 * tensor_window.c — CPU kernels of temporal_shift, unfold, partial_concat
 * and partial_sum with their grads (tensor_window.ops), float32 and float64.
 */
#include "op.h"
#include "ops/tensor_window.h"

#include <string.h>

/* ---- temporal_shift --------------------------------------------------------------------- */
/* the loop over X [N*T, C, H, W] (or NHWC): o the position in Out, s the source in X or -1 */
#define TSHIFT_LOOP(BODY)                                                                              \
    do {                                                                                               \
        const bool nhwc = a->data_format == OAR_TSHIFT_NHWC;                                           \
        const int64_t NT = d[0], C = nhwc ? d[3] : d[1], HW = nhwc ? d[1] * d[2] : d[2] * d[3];        \
        const int64_t T = a->seg_num, c1 = (int64_t)(C * a->shift_ratio),                              \
                      c2 = (int64_t)(C * 2 * a->shift_ratio);                                          \
        for (int64_t nt = 0; nt < NT; nt++) {                                                          \
            const int64_t t = nt % T;                                                                  \
            for (int64_t ch = 0; ch < C; ch++) {                                                       \
                const int64_t st = ch < c1 ? t - 1 : ch < c2 ? t + 1 : t;                              \
                for (int64_t p = 0; p < HW; p++) {                                                     \
                    const int64_t o = nhwc ? (nt * HW + p) * C + ch : (nt * C + ch) * HW + p;          \
                    const int64_t s = st < 0 || st >= T ? -1 : o + (st - t) * C * HW;                  \
                    BODY;                                                                              \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
    } while (0)

#define TSHIFT_KERNELS(NAME, T_, DT)                                                                   \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                         \
    {                                                                                                  \
        const oar_tshift_attrs_t *a = oar_k_attrs(k);                                                  \
        oar_tensor_t *x = oar_k_input(k, OAR_TSHIFT_X, 0);                                             \
        const int64_t *d = x->dims;                                                                    \
        void *out;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_TSHIFT_OUT, "Out", DT, oar_tensor_numel_of(x), false, &out)); \
        const T_ *xv = oar_tensor_data(x);                                                             \
        T_ *y = out;                                                                                   \
        TSHIFT_LOOP(y[o] = s < 0 ? 0 : xv[s]);                                                         \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                         \
    {                                                                                                  \
        const oar_tshift_attrs_t *a = oar_k_attrs(k);                                                  \
        oar_tensor_t *g = oar_k_input(k, OAR_TSHIFT_G_DOUT, 0);                                        \
        const int64_t *d = g->dims;                                                                    \
        if (g->ndim != 4 || a->seg_num < 1 || d[0] % a->seg_num != 0)                                  \
            return oar_k_error(k, OAR_ERR_SHAPE, "input Out@GRAD of rank %d does not fit seg_num = %d "  \
                               "(temporal_shift_grad needs 4-D [N*T, C, H, W])", g->ndim, (int)a->seg_num); \
        void *dx;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_TSHIFT_G_DX, "X@GRAD", DT, oar_tensor_numel_of(g), true, &dx)); \
        if (!dx) return OAR_OK;                                                                        \
        memset(dx, 0, sizeof(T_) * (size_t)oar_tensor_numel_of(g));                                   \
        const T_ *gv = oar_tensor_data(g);                                                             \
        T_ *dv = dx;                                                                                   \
        TSHIFT_LOOP(if (s >= 0) dv[s] += gv[o]);                                                       \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("temporal_shift", OAR_PLACE_CPU, DT, NAME##_fwd)                               \
    OAR_REGISTER_KERNEL("temporal_shift_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
TSHIFT_KERNELS(tshift_f32, float, OAR_FP32)
TSHIFT_KERNELS(tshift_f64, double, OAR_FP64)

/* ---- unfold ------------------------------------------------------------------------------- */
/* o the position in Y [N, C*kh*kw, OH*OW], s the source in X or -1 */
#define UNFOLD_LOOP(BODY)                                                                              \
    do {                                                                                               \
        const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3];                                      \
        const int kh = a->kernel_sizes.v[0], kw = a->kernel_sizes.v[1], sh = a->strides.v[0],          \
                  sw = a->strides.v[1], dh = a->dilations.v[0], dw = a->dilations.v[1],                \
                  pu = a->paddings.v[0], pl = a->paddings.v[1], pd = a->paddings.v[2], pr = a->paddings.v[3]; \
        const int64_t OH = (H + pu + pd - ((int64_t)dh * (kh - 1) + 1)) / sh + 1,                      \
                      OW = (W + pl + pr - ((int64_t)dw * (kw - 1) + 1)) / sw + 1, L = OH * OW;         \
        int64_t o = 0;                                                                                 \
        for (int64_t n = 0; n < N; n++)                                                                \
            for (int64_t ch = 0; ch < C; ch++)                                                         \
                for (int i = 0; i < kh; i++)                                                           \
                    for (int j = 0; j < kw; j++)                                                       \
                        for (int64_t l = 0; l < L; l++, o++) {                                         \
                            const int64_t yy = (l / OW) * sh - pu + (int64_t)i * dh,                   \
                                          xx = (l % OW) * sw - pl + (int64_t)j * dw;                   \
                            const int64_t s = yy < 0 || yy >= H || xx < 0 || xx >= W ? -1              \
                                                                   : ((n * C + ch) * H + yy) * W + xx; \
                            BODY;                                                                      \
                        }                                                                              \
    } while (0)

#define UNFOLD_KERNELS(NAME, T_, DT)                                                                   \
    static int NAME##_fwd(oar_kernel_ctx_t *k)                                                         \
    {                                                                                                  \
        const oar_unfold_attrs_t *a = oar_k_attrs(k);                                                  \
        oar_tensor_t *x = oar_k_input(k, OAR_UNFOLD_X, 0), *yt = oar_k_output(k, OAR_UNFOLD_Y, 0);     \
        const int64_t *xd = x->dims;                                                                   \
        void *out;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_UNFOLD_Y, "Y", DT, yt ? oar_tensor_numel_of(yt) : 0, false, &out)); \
        const T_ *xv = oar_tensor_data(x);                                                             \
        T_ *y = out;                                                                                   \
        UNFOLD_LOOP(y[o] = s < 0 ? 0 : xv[s]);                                                         \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int NAME##_bwd(oar_kernel_ctx_t *k)                                                         \
    {                                                                                                  \
        const oar_unfold_attrs_t *a = oar_k_attrs(k);                                                  \
        oar_tensor_t *x = oar_k_input(k, OAR_UNFOLD_GRAD_X, 0);                                        \
        const int64_t *xd = x->dims;                                                                   \
        if (x->ndim != 4 || a->kernel_sizes.n != 2 || a->strides.n != 2 || a->dilations.n != 2 ||      \
            a->paddings.n != 4 || a->strides.v[0] < 1 || a->strides.v[1] < 1)                          \
            return oar_k_error(k, OAR_ERR_SHAPE, "unfold_grad needs a 4-D X and unfold's attributes"); \
        void *dx;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_UNFOLD_GRAD_DX, "X@GRAD", DT, oar_tensor_numel_of(x), true, &dx)); \
        if (!dx) return OAR_OK;                                                                        \
        {                                                                                              \
            const int64_t OH_ = (xd[2] + a->paddings.v[0] + a->paddings.v[2] -                         \
                                 ((int64_t)a->dilations.v[0] * (a->kernel_sizes.v[0] - 1) + 1)) / a->strides.v[0] + 1, \
                          OW_ = (xd[3] + a->paddings.v[1] + a->paddings.v[3] -                         \
                                 ((int64_t)a->dilations.v[1] * (a->kernel_sizes.v[1] - 1) + 1)) / a->strides.v[1] + 1; \
            const oar_tensor_t *gt = oar_k_input(k, OAR_UNFOLD_GRAD_DY, 0);                            \
            const int64_t want = xd[0] * xd[1] * a->kernel_sizes.v[0] * a->kernel_sizes.v[1] * OH_ * OW_; \
            if (!gt || oar_tensor_numel_of(gt) != want)                                                \
                return oar_k_error(k, OAR_ERR_SHAPE, "input Y@GRAD has %lld elements, expected %lld",  \
                                   (long long)(gt ? oar_tensor_numel_of(gt) : 0), (long long)want);    \
        }                                                                                              \
        memset(dx, 0, sizeof(T_) * (size_t)oar_tensor_numel_of(x));                                   \
        const T_ *g = oar_tensor_data(oar_k_input(k, OAR_UNFOLD_GRAD_DY, 0));                          \
        T_ *dv = dx;                                                                                   \
        UNFOLD_LOOP(if (s >= 0) dv[s] += g[o]);                                                        \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("unfold", OAR_PLACE_CPU, DT, NAME##_fwd)                                       \
    OAR_REGISTER_KERNEL("unfold_grad", OAR_PLACE_CPU, DT, NAME##_bwd)
UNFOLD_KERNELS(unfold_f32, float, OAR_FP32)
UNFOLD_KERNELS(unfold_f64, double, OAR_FP64)

/* ---- partial_concat / partial_sum ----------------------------------------------------------- */
static void part_range(const oar_partial_attrs_t *a, int64_t D, int64_t *s, int64_t *len)
{
    *s = a->start_index < 0 ? a->start_index + D : a->start_index;
    *len = a->length < 0 ? D - *s : a->length;
}

#define PARTIAL_KERNELS(NAME, T_, DT)                                                                  \
    static int NAME##_concat(oar_kernel_ctx_t *k)                                                      \
    {                                                                                                  \
        const oar_partial_attrs_t *a = oar_k_attrs(k);                                                 \
        const int m = oar_k_nin(k, OAR_PCONCAT_X);                                                     \
        oar_tensor_t *x0 = oar_k_input(k, OAR_PCONCAT_X, 0);                                           \
        const int64_t N = x0->dims[0], D = x0->dims[1];                                                \
        int64_t s, len;                                                                                \
        part_range(a, D, &s, &len);                                                                    \
        void *out;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_PCONCAT_OUT, "Out", DT, N * len * m, false, &out));          \
        for (int i = 0; i < m; i++) {                                                                  \
            const T_ *xv = oar_tensor_data(oar_k_input(k, OAR_PCONCAT_X, i));                          \
            for (int64_t r = 0; r < N; r++)                                                            \
                memcpy((T_ *)out + r * len * m + i * len, xv + r * D + s, sizeof(T_) * (size_t)len);   \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int NAME##_sum(oar_kernel_ctx_t *k)                                                         \
    {                                                                                                  \
        const oar_partial_attrs_t *a = oar_k_attrs(k);                                                 \
        const int m = oar_k_nin(k, OAR_PSUM_X);                                                        \
        oar_tensor_t *x0 = oar_k_input(k, OAR_PSUM_X, 0);                                              \
        const int64_t N = x0->dims[0], D = x0->dims[1];                                                \
        int64_t s, len;                                                                                \
        part_range(a, D, &s, &len);                                                                    \
        void *out;                                                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_PSUM_OUT, "Out", DT, N * len, false, &out));                 \
        T_ *o = out;                                                                                   \
        memset(o, 0, sizeof(T_) * (size_t)(N * len));                                                  \
        for (int i = 0; i < m; i++) {                                                                  \
            const T_ *xv = oar_tensor_data(oar_k_input(k, OAR_PSUM_X, i));                             \
            for (int64_t r = 0; r < N; r++)                                                            \
                for (int64_t j = 0; j < len; j++) o[r * len + j] += xv[r * D + s + j];                 \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    /* concat: X@GRAD[i] columns from block i of Out@GRAD; sum: every X@GRAD gets Out@GRAD */          \
    static int NAME##_bwd(oar_kernel_ctx_t *k, bool concat)                                            \
    {                                                                                                  \
        const oar_partial_attrs_t *a = oar_k_attrs(k);                                                 \
        const int m = oar_k_nin(k, OAR_PCONCAT_G_X);                                                   \
        oar_tensor_t *x0 = oar_k_input(k, OAR_PCONCAT_G_X, 0);                                         \
        if (x0->ndim != 2) return oar_k_error(k, OAR_ERR_SHAPE, "input X[0] must be 2-D [N, D]");      \
        const int64_t N = x0->dims[0], D = x0->dims[1];                                                \
        int64_t s, len;                                                                                \
        part_range(a, D, &s, &len);                                                                    \
        if (s < 0 || len < 0 || s + len > D)                                                           \
            return oar_k_error(k, OAR_ERR_RANGE, "start_index = %d, length = %d leave X's %lld columns", \
                               (int)a->start_index, (int)a->length, (long long)D);                     \
        for (int i = 0; i < m; i++) {                                                                  \
            oar_tensor_t *xi = oar_k_input(k, OAR_PCONCAT_G_X, i);                                     \
            if (!xi || xi->ndim != 2 || xi->dims[0] != N || xi->dims[1] != D)                          \
                return oar_k_error(k, OAR_ERR_SHAPE, "input X[%d] does not have X[0]'s shape", i);     \
        }                                                                                              \
        oar_tensor_t *gt = oar_k_input(k, OAR_PCONCAT_G_DOUT, 0);                                      \
        const int64_t gw = concat ? len * m : len;                                                     \
        if (!gt || oar_tensor_numel_of(gt) != N * gw)                                                  \
            return oar_k_error(k, OAR_ERR_SHAPE, "input Out@GRAD has %lld elements, expected %lld",    \
                               (long long)(gt ? oar_tensor_numel_of(gt) : 0), (long long)(N * gw));    \
        const T_ *g = oar_tensor_data(gt);                                                             \
        for (int i = 0; i < m && i < oar_k_nout(k, OAR_PCONCAT_G_DX); i++) {                           \
            if (!oar_k_output(k, OAR_PCONCAT_G_DX, i)) continue;                                       \
            T_ *dx = oar_k_output_data(k, OAR_PCONCAT_G_DX, i, DT);                                    \
            if (!dx && N * D > 0) return OAR_ERR_NOMEM;                                                \
            memset(dx, 0, sizeof(T_) * (size_t)(N * D));                                               \
            for (int64_t r = 0; r < N; r++)                                                            \
                memcpy(dx + r * D + s, g + r * gw + (concat ? i * len : 0), sizeof(T_) * (size_t)len); \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int NAME##_concat_bwd(oar_kernel_ctx_t *k) { return NAME##_bwd(k, true); }                  \
    static int NAME##_sum_bwd(oar_kernel_ctx_t *k) { return NAME##_bwd(k, false); }                    \
    OAR_REGISTER_KERNEL("partial_concat", OAR_PLACE_CPU, DT, NAME##_concat)                            \
    OAR_REGISTER_KERNEL("partial_sum", OAR_PLACE_CPU, DT, NAME##_sum)                                  \
    OAR_REGISTER_KERNEL("partial_concat_grad", OAR_PLACE_CPU, DT, NAME##_concat_bwd)                   \
    OAR_REGISTER_KERNEL("partial_sum_grad", OAR_PLACE_CPU, DT, NAME##_sum_bwd)
PARTIAL_KERNELS(partial_f32, float, OAR_FP32)
PARTIAL_KERNELS(partial_f64, double, OAR_FP64)
