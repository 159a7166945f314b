/*
 * conv_transpose.c — CPU kernels of conv2d_transpose and
 * depthwise_conv2d_transpose (float32, float64) and their grads.
 *
 * Per image and group, as Paddle does: col = W_g^T X_g (one GEMM,
 * [OC_g kh kw, H W]) scattered into the output by col2im. The grads run the
 * same geometry backwards: im2col of Output@GRAD, then dX_g = W_g col and
 * dW_g += X_g col^T.
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/conv_transpose_util.h"   /* the geometry; includes ops/conv_transpose.h */

static int geom(oar_kernel_ctx_t *k, oar_convt_geom_t *g, oar_tensor_t **x, oar_tensor_t **w)
{
    *x = oar_k_input(k, OAR_CT_INPUT, 0);
    *w = oar_k_input(k, OAR_CT_FILTER, 0);
    if (!*x || !*w) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Input or Filter is missing");
    char why[256];
    int rc = oar_convt_geometry(oar_k_attrs(k), (*x)->dims, (*x)->ndim, (*w)->dims, (*w)->ndim, g, why, sizeof why);
    if (rc != OAR_OK) return oar_k_error(k, rc, "%s", why);
    if ((*w)->dtype != (*x)->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Filter is %s, Input %s", oar_dtype_name((*w)->dtype),
                           oar_dtype_name((*x)->dtype));
    return OAR_OK;
}

/* col [C, kh, kw, H, W] <-> image [C, OH, OW]: im2col gathers (0 outside),
 * col2im adds. */
#define CT_COLS(T, SUF)                                                                         \
    static void col2im_##SUF(const oar_convt_geom_t *g, int64_t oc, const T *col, T *img)       \
    {                                                                                           \
        const int64_t hw = g->h * g->w;                                                         \
        for (int64_t c = 0; c < oc; c++)                                                        \
            for (int64_t a = 0; a < g->kh; a++)                                                 \
                for (int64_t b = 0; b < g->kw; b++) {                                           \
                    const T *src = col + ((c * g->kh + a) * g->kw + b) * hw;                    \
                    T *dst = img + c * g->oh * g->ow;                                           \
                    for (int64_t i = 0; i < g->h; i++) {                                        \
                        int64_t y = i * g->sh - g->pt + a * g->dh;                              \
                        if (y < 0 || y >= g->oh) continue;                                      \
                        for (int64_t j = 0; j < g->w; j++) {                                    \
                            int64_t x = j * g->sw - g->pl + b * g->dw;                          \
                            if (x >= 0 && x < g->ow) dst[y * g->ow + x] += src[i * g->w + j];   \
                        }                                                                       \
                    }                                                                           \
                }                                                                               \
    }                                                                                           \
    static void im2col_##SUF(const oar_convt_geom_t *g, int64_t oc, const T *img, T *col)       \
    {                                                                                           \
        const int64_t hw = g->h * g->w;                                                         \
        for (int64_t c = 0; c < oc; c++)                                                        \
            for (int64_t a = 0; a < g->kh; a++)                                                 \
                for (int64_t b = 0; b < g->kw; b++) {                                           \
                    T *dst = col + ((c * g->kh + a) * g->kw + b) * hw;                          \
                    const T *src = img + c * g->oh * g->ow;                                     \
                    for (int64_t i = 0; i < g->h; i++) {                                        \
                        int64_t y = i * g->sh - g->pt + a * g->dh;                              \
                        for (int64_t j = 0; j < g->w; j++) {                                    \
                            int64_t x = j * g->sw - g->pl + b * g->dw;                          \
                            dst[i * g->w + j] = (y >= 0 && y < g->oh && x >= 0 && x < g->ow)    \
                                                    ? src[y * g->ow + x] : (T)0;                \
                        }                                                                       \
                    }                                                                           \
                }                                                                               \
    }

CT_COLS(float, f32)
CT_COLS(double, f64)

#define CT_KERNELS(T, SUF, DT, GEMM)                                                            \
    static int fwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        oar_convt_geom_t g;                                                                     \
        oar_tensor_t *xt, *wt;                                                            \
        OAR_TRY(geom(k, &g, &xt, &wt));                                                         \
        T *out = oar_k_output_data(k, OAR_CT_OUTPUT, 0, DT);                                    \
        if (!out) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Output");               \
        const int64_t icg = g.cin / g.groups, ocg = g.cout / g.groups, kk = g.kh * g.kw;        \
        const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;                                        \
        memset(out, 0, sizeof(T) * (size_t)(g.n * g.cout * ohw));                               \
        if (g.n * hw * icg * ocg * kk == 0) return OAR_OK;                                      \
        T *col = malloc(sizeof(T) * (size_t)(ocg * kk * hw));                                   \
        if (!col) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the column buffer");    \
        const T *x = oar_tensor_data(xt), *w = oar_tensor_data(wt);                            \
        for (int64_t n = 0; n < g.n; n++)                                                       \
            for (int64_t gr = 0; gr < g.groups; gr++) {                                         \
                const T *xg = x + (n * g.cin + gr * icg) * hw;                                  \
                const T *wg = w + gr * icg * ocg * kk;                                          \
                GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(ocg * kk), (int)hw, (int)icg, \
                     1, wg, (int)(ocg * kk), xg, (int)hw, 0, col, (int)hw);                     \
                col2im_##SUF(&g, ocg, col, out + (n * g.cout + gr * ocg) * ohw);                \
            }                                                                                   \
        free(col);                                                                              \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int bwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        oar_convt_geom_t g;                                                                     \
        oar_tensor_t *xt, *wt;                                                            \
        OAR_TRY(geom(k, &g, &xt, &wt));                                                         \
        oar_tensor_t *dt = oar_k_input(k, OAR_CTG_DOUT, 0);                               \
        if (!dt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Output@GRAD is missing");            \
        const bool want_dx = oar_k_output(k, OAR_CTG_DINPUT, 0) != NULL;                        \
        const bool want_dw = oar_k_output(k, OAR_CTG_DFILTER, 0) != NULL;                       \
        T *dx = want_dx ? oar_k_output_data(k, OAR_CTG_DINPUT, 0, DT) : NULL;                   \
        T *dw = want_dw ? oar_k_output_data(k, OAR_CTG_DFILTER, 0, DT) : NULL;                  \
        if ((want_dx && !dx) || (want_dw && !dw))                                               \
            return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the gradients");              \
        const int64_t icg = g.cin / g.groups, ocg = g.cout / g.groups, kk = g.kh * g.kw;        \
        const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;                                        \
        if (dx) memset(dx, 0, sizeof(T) * (size_t)(g.n * g.cin * hw));                          \
        if (dw) memset(dw, 0, sizeof(T) * (size_t)(g.cin * ocg * kk));                          \
        if (g.n * hw * icg * ocg * kk == 0 || (!dx && !dw)) return OAR_OK;                      \
        T *col = malloc(sizeof(T) * (size_t)(ocg * kk * hw));                                   \
        if (!col) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the column buffer");    \
        const T *x = oar_tensor_data(xt), *w = oar_tensor_data(wt), *d = oar_tensor_data(dt);  \
        for (int64_t n = 0; n < g.n; n++)                                                       \
            for (int64_t gr = 0; gr < g.groups; gr++) {                                         \
                im2col_##SUF(&g, ocg, d + (n * g.cout + gr * ocg) * ohw, col);                  \
                const T *wg = w + gr * icg * ocg * kk;                                          \
                if (dx)                                                                         \
                    GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)icg, (int)hw, (int)(ocg * kk), \
                         1, wg, (int)(ocg * kk), col, (int)hw, 0, dx + (n * g.cin + gr * icg) * hw, (int)hw); \
                if (dw)                                                                         \
                    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)icg, (int)(ocg * kk), (int)hw, \
                         1, x + (n * g.cin + gr * icg) * hw, (int)hw, col, (int)hw, 1,          \
                         dw + gr * icg * ocg * kk, (int)(ocg * kk));                            \
            }                                                                                   \
        free(col);                                                                              \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("conv2d_transpose", OAR_PLACE_CPU, DT, fwd_##SUF)                       \
    OAR_REGISTER_KERNEL("conv2d_transpose_grad", OAR_PLACE_CPU, DT, bwd_##SUF)                  \
    static int dw_fwd_##SUF(oar_kernel_ctx_t *k) { return fwd_##SUF(k); }                        \
    static int dw_bwd_##SUF(oar_kernel_ctx_t *k) { return bwd_##SUF(k); }                        \
    OAR_REGISTER_KERNEL("depthwise_conv2d_transpose", OAR_PLACE_CPU, DT, dw_fwd_##SUF)          \
    OAR_REGISTER_KERNEL("depthwise_conv2d_transpose_grad", OAR_PLACE_CPU, DT, dw_bwd_##SUF)

CT_KERNELS(float, f32, OAR_FP32, cblas_sgemm)
CT_KERNELS(double, f64, OAR_FP64, cblas_dgemm)
