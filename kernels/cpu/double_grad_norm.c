/* double_grad_norm.c — CPU kernel of instance_norm_grad_grad
 * (src/ops/double_grad.ops). Per (sample, channel) group of M values, with
 * xhat = (x - mean) s, s = 1 / sqrt(var + eps) and the projection
 * P(v) = v - mean(v) - xhat mean(v xhat) (self-adjoint), the first-order
 * grad is dx = g s P(dy), dscale = sum dy xhat, dbias = sum dy. For
 * L = ddx . dx + ddg dscale + ddb dbias:
 *   DDY    = g s P(ddx) + ddg xhat + ddb
 *   DScale = sum over samples of ddx . s P(dy)
 *   DX     = s^2 g (xhat (a b - (mean(ddx dy) - mean(ddx) mean(dy))) - b P(ddx) - a P(dy)) + ddg s P(dy)
 * with a = mean(ddx xhat), b = mean(dy xhat) (d mean(u xhat) / dx = s P(u) / M). */
#include <math.h>
#include <string.h>
#include "op.h"
#include "double_grad_io.h"
#include "ops/double_grad.h"

#define IN_GG(NAME, T, DT)                                                                            \
    static int NAME(oar_kernel_ctx_t *k)                                                             \
    {                                                                                                \
        const oar_instance_norm_grad_grad_attrs_t *at = oar_k_attrs(k);                              \
        oar_tensor_t *xt = oar_k_input(k, OAR_INSTANCE_NORM_GRAD_GRAD_X, 0);                         \
        if (xt->ndim < 2) return oar_k_error(k, OAR_ERR_SHAPE, "X must be [N, C, ...], got %d dims", xt->ndim); \
        const int64_t N = xt->dims[0], C = xt->dims[1], total = oar_tensor_numel(xt);               \
        const int64_t M = N * C > 0 ? total / (N * C) : 0;                                           \
        const T *x = oar_tensor_data(xt), *dy, *sc, *ddx, *ddsc, *ddb;                               \
        OAR_TRY(oar_k_input_sized(k, OAR_INSTANCE_NORM_GRAD_GRAD_DY, "DY", DT, total, (const void **)&dy)); \
        OAR_TRY(opt_in(k, OAR_INSTANCE_NORM_GRAD_GRAD_SCALE, "Scale", DT, C, (const void **)&sc));   \
        OAR_TRY(opt_in(k, OAR_INSTANCE_NORM_GRAD_GRAD_DDX, "DDX", DT, total, (const void **)&ddx));  \
        OAR_TRY(opt_in(k, OAR_INSTANCE_NORM_GRAD_GRAD_DDSCALE, "DDScale", DT, C, (const void **)&ddsc)); \
        OAR_TRY(opt_in(k, OAR_INSTANCE_NORM_GRAD_GRAD_DDBIAS, "DDBias", DT, C, (const void **)&ddb)); \
        void *a_ = NULL, *b_ = NULL, *c_ = NULL;                                                     \
        OAR_TRY(oar_k_output_sized(k, OAR_INSTANCE_NORM_GRAD_GRAD_DX, "DX", DT, total, true, &a_));  \
        OAR_TRY(oar_k_output_sized(k, OAR_INSTANCE_NORM_GRAD_GRAD_DSCALE, "DScale", DT, C, true, &b_)); \
        OAR_TRY(oar_k_output_sized(k, OAR_INSTANCE_NORM_GRAD_GRAD_DDY, "DDY", DT, total, true, &c_)); \
        T *dx = a_, *dsc = b_, *ddy = c_;                                                            \
        if (dsc) memset(dsc, 0, (size_t)C * sizeof(T));                                              \
        if (M == 0) return OAR_OK;                                                                   \
        for (int64_t grp = 0; grp < N * C; grp++) {                                                  \
            const int64_t c = grp % C, o = grp * M;                                                  \
            const T *xg = x + o, *dyg = dy + o, *ddxg = ddx ? ddx + o : NULL;                        \
            double mu = 0, var = 0;                                                                  \
            for (int64_t i = 0; i < M; i++) mu += xg[i];                                             \
            mu /= (double)M;                                                                         \
            for (int64_t i = 0; i < M; i++) var += (xg[i] - mu) * (xg[i] - mu);                      \
            var /= (double)M;                                                                        \
            const double s = 1.0 / sqrt(var + (double)at->epsilon), g = sc ? sc[c] : 1;              \
            const double ddg = ddsc ? ddsc[c] : 0, ddbv = ddb ? ddb[c] : 0;                          \
            double m_dy = 0, m_ddx = 0, b = 0, a = 0, m_ddxdy = 0;                                   \
            for (int64_t i = 0; i < M; i++) {                                                        \
                const double xh = (xg[i] - mu) * s, u = ddxg ? ddxg[i] : 0;                          \
                m_dy += dyg[i]; m_ddx += u; b += dyg[i] * xh; a += u * xh; m_ddxdy += u * dyg[i];    \
            }                                                                                        \
            m_dy /= (double)M; m_ddx /= (double)M; b /= (double)M; a /= (double)M; m_ddxdy /= (double)M; \
            const double c1 = m_ddxdy - m_ddx * m_dy;                                                \
            double ds = 0;                                                                           \
            for (int64_t i = 0; i < M; i++) {                                                        \
                const double xh = (xg[i] - mu) * s, u = ddxg ? ddxg[i] : 0;                          \
                const double pdy = dyg[i] - m_dy - xh * b, pddx = u - m_ddx - xh * a;                \
                ds += u * s * pdy;                                                                   \
                if (ddy) ddy[o + i] = (T)(g * s * pddx + ddg * xh + ddbv);                           \
                if (dx) dx[o + i] = (T)(s * s * g * (xh * (a * b - c1) - b * pddx - a * pdy) + ddg * s * pdy); \
            }                                                                                        \
            if (dsc) dsc[c] += (T)ds;                                                                \
        }                                                                                            \
        return OAR_OK;                                                                               \
    }                                                                                                \
    OAR_REGISTER_KERNEL("instance_norm_grad_grad", OAR_PLACE_CPU, DT, NAME)

IN_GG(in_gg_f32, float, OAR_FP32)
IN_GG(in_gg_f64, double, OAR_FP64)
