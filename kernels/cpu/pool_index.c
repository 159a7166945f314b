/* pool_index.c — CPU kernels of max_pool{2,3}d_with_index, unpool, spp and
 * their grads (float32, float64). Windows are clipped to the input (padding
 * cells are in no window); a maximum is the first in window order (a
 * strictly larger value replaces it), and a NaN is never taken over a
 * number. A window with no input cell gives 0 and passes no gradient (its
 * Mask is -1). One thread: every gradient cell sums in one fixed order. */
#include <string.h>
#include "op.h"
#include "ops/pool_index_util.h"
#include "ops/window.h"

static int64_t prod3(const int64_t v[3]) { return v[0] * v[1] * v[2]; }

static int pwi_setup(oar_kernel_ctx_t *k, const oar_tensor_t *x, oar_pwi_geom_t *g) {
    const oar_pwi_attrs_t *a = oar_k_attrs(k);
    if (x->ndim != a->nd + 2)
        return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') must be %d-D, it has rank %d", oar_k_input_name(k, 0, 0),
                           a->nd + 2, x->ndim);
    if (oar_pwi_plan(a, x->dims + 2, g) != OAR_OK)
        return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s'): no output fits its window geometry", oar_k_input_name(k, 0, 0));
    return OAR_OK;
}

/* the Indices of unpool as int64 values: idx(i) */
static inline int64_t index_at(oar_tensor_t *t, int64_t i) {
    return t->dtype == OAR_INT32 ? ((const int32_t *)oar_tensor_data(t))[i] : ((const int64_t *)oar_tensor_data(t))[i];
}

#define PI_KERNELS(T, SUF, DT)                                                                          \
    static int pwi_fwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_PWI2_X, 0);                                               \
        oar_pwi_geom_t g;                                                                               \
        OAR_TRY(pwi_setup(k, xt, &g));                                                                  \
        const int64_t nc = xt->dims[0] * xt->dims[1], is = prod3(g.in), os = prod3(g.out);              \
        void *ov, *mv;                                                                                  \
        OAR_TRY(oar_k_output_sized(k, OAR_PWI2_OUT, "Out", DT, nc * os, false, &ov));                   \
        OAR_TRY(oar_k_output_sized(k, OAR_PWI2_MASK, "Mask", OAR_INT32, nc * os, false, &mv));          \
        const T *x = oar_tensor_data(xt);                                                               \
        T *out = ov;                                                                                    \
        int32_t *mask = mv;                                                                             \
        for (int64_t m = 0; m < nc; m++)                                                                \
            for (int64_t o = 0; o < os; o++) {                                                          \
                const int64_t oc[3] = {o / (g.out[1] * g.out[2]), o / g.out[2] % g.out[1], o % g.out[2]}; \
                int64_t lo[3], hi[3];                                                                   \
                for (int i = 0; i < 3; i++)                                                             \
                    oar_win_pool_range(oc[i], g.in[i], g.out[i], g.ks[i], g.st[i], g.pd[i], g.adaptive, \
                                       &lo[i], &hi[i]);                                                 \
                T best = 0;                                                                             \
                int64_t at = -1;                                                                        \
                for (int64_t d = lo[0]; d < hi[0]; d++)                                                 \
                    for (int64_t h = lo[1]; h < hi[1]; h++)                                             \
                        for (int64_t w = lo[2]; w < hi[2]; w++) {                                       \
                            const int64_t j = (d * g.in[1] + h) * g.in[2] + w;                          \
                            const T v = x[m * is + j];                                                  \
                            if (at < 0 || v > best) { best = v; at = j; }                               \
                        }                                                                               \
                out[m * os + o] = best;                                                                 \
                mask[m * os + o] = (int32_t)at;                                                         \
            }                                                                                           \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int pwi_bwd_##SUF(oar_kernel_ctx_t *k)                                                       \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_PWI2G_X, 0);                                              \
        oar_pwi_geom_t g;                                                                               \
        OAR_TRY(pwi_setup(k, xt, &g));                                                                  \
        const int64_t nc = xt->dims[0] * xt->dims[1], is = prod3(g.in), os = prod3(g.out);              \
        const void *mv, *dv;                                                                            \
        OAR_TRY(oar_k_input_sized(k, OAR_PWI2G_MASK, "Mask", OAR_INT32, nc * os, &mv));                 \
        OAR_TRY(oar_k_input_sized(k, OAR_PWI2G_DOUT, "Out@GRAD", DT, nc * os, &dv));                    \
        void *dxv;                                                                                      \
        OAR_TRY(oar_k_output_sized(k, OAR_PWI2G_DX, "X@GRAD", DT, nc * is, true, &dxv));                \
        if (!dxv) return OAR_OK;                                                                        \
        T *dx = dxv;                                                                                    \
        const T *dy = dv;                                                                               \
        const int32_t *mask = mv;                                                                       \
        memset(dx, 0, sizeof(T) * (size_t)(nc * is));                                                   \
        for (int64_t m = 0; m < nc; m++)                                                                \
            for (int64_t o = 0; o < os; o++) {                                                          \
                const int32_t j = mask[m * os + o];                                                     \
                if (j < -1 || j >= is)                                                                  \
                    return oar_k_error(k, OAR_ERR_RANGE, "Mask ('%s') value %d is outside the input map of %lld " \
                                       "cells", oar_k_input_name(k, OAR_PWI2G_MASK, 0), (int)j, (long long)is); \
                if (j >= 0) dx[m * is + j] += dy[m * os + o];                                           \
            }                                                                                           \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    OAR_REGISTER_KERNEL("max_pool2d_with_index", OAR_PLACE_CPU, DT, pwi_fwd_##SUF)                      \
    OAR_REGISTER_KERNEL("max_pool2d_with_index_grad", OAR_PLACE_CPU, DT, pwi_bwd_##SUF)                 \
    static int pwi3_fwd_##SUF(oar_kernel_ctx_t *k) { return pwi_fwd_##SUF(k); }                          \
    static int pwi3_bwd_##SUF(oar_kernel_ctx_t *k) { return pwi_bwd_##SUF(k); }                          \
    OAR_REGISTER_KERNEL("max_pool3d_with_index", OAR_PLACE_CPU, DT, pwi3_fwd_##SUF)                     \
    OAR_REGISTER_KERNEL("max_pool3d_with_index_grad", OAR_PLACE_CPU, DT, pwi3_bwd_##SUF)                \
                                                                                                        \
    /* unpool: grad = false scatters X into Out; grad = true gathers dOut into dX */                    \
    static int unpool_run_##SUF(oar_kernel_ctx_t *k, bool grad)                                         \
    {                                                                                                   \
        oar_tensor_t *xt = oar_k_input(k, 0, 0), *it = oar_k_input(k, 1, 0);                            \
        const oar_unpool_attrs_t *a = oar_k_attrs(k);                                                   \
        if (xt->ndim != 4 || it->ndim != 4 || oar_tensor_numel(it) != oar_tensor_numel(xt))            \
            return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') and Indices ('%s') must be 4-D of one shape", \
                               oar_k_input_name(k, 0, 0), oar_k_input_name(k, 1, 0));                   \
        if (it->dtype != OAR_INT32 && it->dtype != OAR_INT64)                                           \
            return oar_k_error(k, OAR_ERR_DTYPE, "Indices ('%s') must be int32 or int64, it is %s",     \
                               oar_k_input_name(k, 1, 0), oar_dtype_name(it->dtype));                   \
        const int64_t nc = xt->dims[0] * xt->dims[1], is = xt->dims[2] * xt->dims[3];                   \
        const int64_t os = a->osz[0] > 0 ? a->osz[0] * a->osz[1]                                         \
                                         : oar_unpool_out(xt->dims[2], a->ks[0], a->st[0], a->pd[0]) *    \
                                           oar_unpool_out(xt->dims[3], a->ks[1], a->st[1], a->pd[1]);     \
        void *pv;                                                                                       \
        const void *src = NULL;                                                                         \
        if (grad) {                                                                                     \
            OAR_TRY(oar_k_input_sized(k, OAR_UNPOOLG_DOUT, "Out@GRAD", DT, nc * os, &src));             \
            OAR_TRY(oar_k_output_sized(k, OAR_UNPOOLG_DX, "X@GRAD", DT, nc * is, true, &pv));           \
            if (!pv) return OAR_OK;                                                                     \
        } else {                                                                                        \
            OAR_TRY(oar_k_output_sized(k, OAR_UNPOOL_OUT, "Out", DT, nc * os, false, &pv));             \
            memset(pv, 0, sizeof(T) * (size_t)(nc * os));                                               \
        }                                                                                               \
        const T *x = oar_tensor_data(xt), *dout = src;                                                  \
        T *p = pv;                                                                                      \
        for (int64_t m = 0; m < nc; m++)                                                                \
            for (int64_t i = 0; i < is; i++) {                                                          \
                const int64_t j = index_at(it, m * is + i);                                             \
                if (j < 0 || j >= os)                                                                   \
                    return oar_k_error(k, OAR_ERR_RANGE, "Indices ('%s') value %lld at %lld is outside the output " \
                                       "map of %lld cells", oar_k_input_name(k, 1, 0), (long long)j,    \
                                       (long long)(m * is + i), (long long)os);                         \
                if (grad) p[m * is + i] = dout[m * os + j];                                             \
                else p[m * os + j] = x[m * is + i];                                                     \
            }                                                                                           \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int unpool_fwd_##SUF(oar_kernel_ctx_t *k) { return unpool_run_##SUF(k, false); }             \
    static int unpool_bwd_##SUF(oar_kernel_ctx_t *k) { return unpool_run_##SUF(k, true); }              \
    OAR_REGISTER_KERNEL("unpool", OAR_PLACE_CPU, DT, unpool_fwd_##SUF)                                  \
    OAR_REGISTER_KERNEL("unpool_grad", OAR_PLACE_CPU, DT, unpool_bwd_##SUF)                             \
                                                                                                        \
    /* spp: grad = false pools into Out; grad = true sends dOut back to dX */                           \
    static int spp_run_##SUF(oar_kernel_ctx_t *k, bool grad)                                            \
    {                                                                                                   \
        const oar_spp_attrs_t *a = oar_k_attrs(k);                                                      \
        oar_tensor_t *xt = oar_k_input(k, OAR_SPP_X, 0);                                                \
        if (xt->ndim != 4)                                                                              \
            return oar_k_error(k, OAR_ERR_SHAPE, "X ('%s') must be 4-D", oar_k_input_name(k, 0, 0));    \
        const int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];               \
        const int64_t cols = C * ((((int64_t)1 << (2 * a->pyramid_height)) - 1) / 3);                  \
        const T *x = oar_tensor_data(xt);                                                               \
        void *ov;                                                                                       \
        const void *dv = NULL;                                                                          \
        if (grad) {                                                                                     \
            OAR_TRY(oar_k_input_sized(k, OAR_SPPG_DOUT, "Out@GRAD", DT, N * cols, &dv));                \
            OAR_TRY(oar_k_output_sized(k, OAR_SPPG_DX, "X@GRAD", DT, N * C * H * W, true, &ov));        \
            if (!ov) return OAR_OK;                                                                     \
            memset(ov, 0, sizeof(T) * (size_t)(N * C * H * W));                                         \
        } else {                                                                                        \
            OAR_TRY(oar_k_output_sized(k, OAR_SPP_OUT, "Out", DT, N * cols, false, &ov));               \
        }                                                                                               \
        T *o = ov;                                                                                      \
        const T *dy = dv;                                                                               \
        const bool is_max = a->type == OAR_SPP_MAX;                                                     \
        int64_t col0 = 0;                                                                               \
        for (int p = 0; p < a->pyramid_height; p++) {                                                   \
            int64_t bins, kh, ph, kw, pw;                                                               \
            oar_spp_level(p, H, &bins, &kh, &ph);                                                       \
            oar_spp_level(p, W, &bins, &kw, &pw);                                                       \
            for (int64_t b = 0; b < N; b++)                                                             \
                for (int64_t c = 0; c < C; c++)                                                         \
                    for (int64_t by = 0; by < bins; by++)                                               \
                        for (int64_t bx = 0; bx < bins; bx++) {                                         \
                            int64_t h0, h1, w0, w1;                                                     \
                            oar_win_pool_range(by, H, bins, kh, kh, ph, false, &h0, &h1);               \
                            oar_win_pool_range(bx, W, bins, kw, kw, pw, false, &w0, &w1);               \
                            const int64_t oi = b * cols + col0 + (c * bins + by) * bins + bx;           \
                            const T *xm = x + (b * C + c) * H * W;                                      \
                            const int64_t cells = (h1 > h0 && w1 > w0) ? (h1 - h0) * (w1 - w0) : 0;     \
                            if (is_max) {                                                               \
                                T best = 0;                                                             \
                                int64_t at = -1;                                                        \
                                for (int64_t h = h0; h < h1; h++)                                       \
                                    for (int64_t w = w0; w < w1; w++)                                   \
                                        if (at < 0 || xm[h * W + w] > best) { best = xm[h * W + w]; at = h * W + w; } \
                                if (!grad) o[oi] = best;                                                \
                                else if (at >= 0) o[(b * C + c) * H * W + at] += dy[oi];                \
                            } else {                                                                    \
                                T s = 0;                                                                \
                                for (int64_t h = h0; h < h1; h++)                                       \
                                    for (int64_t w = w0; w < w1; w++) {                                 \
                                        if (grad) o[(b * C + c) * H * W + h * W + w] += dy[oi] / (T)cells; \
                                        else s += xm[h * W + w];                                        \
                                    }                                                                   \
                                if (!grad) o[oi] = cells ? s / (T)cells : (T)0;                         \
                            }                                                                           \
                        }                                                                               \
            col0 += C * bins * bins;                                                                    \
        }                                                                                               \
        return OAR_OK;                                                                                  \
    }                                                                                                   \
    static int spp_fwd_##SUF(oar_kernel_ctx_t *k) { return spp_run_##SUF(k, false); }                   \
    static int spp_bwd_##SUF(oar_kernel_ctx_t *k) { return spp_run_##SUF(k, true); }                    \
    OAR_REGISTER_KERNEL("spp", OAR_PLACE_CPU, DT, spp_fwd_##SUF)                                        \
    OAR_REGISTER_KERNEL("spp_grad", OAR_PLACE_CPU, DT, spp_bwd_##SUF)

PI_KERNELS(float, f32, OAR_FP32)
PI_KERNELS(double, f64, OAR_FP64)
