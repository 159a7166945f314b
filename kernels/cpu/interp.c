/*
 * interp.c — CPU kernels of bilinear_interp(_v2) and nearest_interp(_v2)
 * (NCHW, float32/float64) and their grads, with Paddle's sampling: the ratio
 * is a float, (in - 1) / (out - 1) with align_corners, else 1 / scale (v2,
 * when a scale was given) or in / out; align_mode 0 without align_corners
 * samples at half-pixel centres.
 */
#include <string.h>
#include "op.h"
#include "ops/interp.h"
#include "ops/tensor_value.h"

/* Paddle's sampling ratio along one axis */
static float ratio_of(const oar_interp_attrs_t *a, int64_t in, int64_t out, double scale)
{
    if (out <= 1) return 0.f;
    if (a->align_corners) return (float)(in - 1) / (float)(out - 1);
    if (a->v2 && scale > 0) return (float)(1. / scale);
    return (float)in / (float)out;
}

typedef struct {
    int64_t n, c, ih, iw, oh, ow;
    float rh, rw;
} plan_t;

static int make_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_tensor_t *o, plan_t *p)
{
    const oar_interp_attrs_t *a = oar_k_attrs(k);
    double sh = -1, sw = -1;
    if (oar_k_nin(k, OAR_IP_SIZETENSOR) == 0) {
        oar_tensor_t *s = oar_k_input(k, OAR_IP_SCALE, 0);
        if (s) {
            if (!oar_tensor_value_f64(s, 0, &sh)) return oar_k_error(k, OAR_ERR_INVALID, "input Scale must hold a number");
            if (!oar_tensor_value_f64(s, 1, &sw)) sw = sh;
        } else if (a->v2 && a->scale.n > 0) {
            sh = a->scale.v[0];
            sw = a->scale.n > 1 ? a->scale.v[1] : a->scale.v[0];
        }
    }
    if (x->ndim != 4 || o->ndim != 4)
        return oar_k_error(k, OAR_ERR_SHAPE, "X and Out must be 4-D");
    p->n = x->dims[0]; p->c = x->dims[1]; p->ih = x->dims[2]; p->iw = x->dims[3];
    p->oh = o->dims[2]; p->ow = o->dims[3];
    if (o->dims[0] != p->n || o->dims[1] != p->c)
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD's batch/channel dims differ from X's");
    p->rh = ratio_of(a, p->ih, p->oh, sh);
    p->rw = ratio_of(a, p->iw, p->ow, sw);
    return OAR_OK;
}

/* the two source rows (or columns) of output position k and their weights */
static void bilinear_src(const oar_interp_attrs_t *a, float r, int64_t in, int64_t k,
                         int64_t *lo, int64_t *hi, double *wlo, double *whi)
{
    const bool half = a->align_mode == 0 && !a->align_corners;
    int64_t n = half ? (int64_t)(r * (k + 0.5) - 0.5) : (int64_t)(r * k);
    if (n < 0) n = 0;
    *lo = n;
    *hi = n + 1 < in - 1 ? n + 1 : in - 1;
    double src = r * (k + 0.5) - 0.5;
    if (src < 0) src = 0;
    double d = half ? src - n : (double)(r * k) - n;
    *whi = d;
    *wlo = 1. - d;
}

static int64_t nearest_src(const oar_interp_attrs_t *a, float r, int64_t in, int64_t k)
{
    int64_t i = a->align_corners ? (int64_t)(r * k + 0.5) : (int64_t)(r * k);
    return i < in ? i : in - 1;
}

#define IP_KERNELS(T, SUF, DT)                                                                  \
    static int fwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        const oar_interp_attrs_t *a = oar_k_attrs(k);                                           \
        oar_tensor_t *xt = oar_k_input(k, OAR_IP_X, 0), *ot = oar_k_output(k, OAR_IP_OUT, 0);   \
        plan_t p;                                                                               \
        OAR_TRY(make_plan(k, xt, ot, &p));                                                      \
        T *o = oar_k_output_data(k, OAR_IP_OUT, 0, DT);                                         \
        if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");                    \
        const T *x = oar_tensor_data(xt);                                                       \
        const int64_t planes = p.n * p.c, ihw = p.ih * p.iw, ohw = p.oh * p.ow;                 \
        if (planes * ohw == 0) return OAR_OK;                                                   \
        if (p.ih == p.oh && p.iw == p.ow) {                                                     \
            memcpy(o, x, sizeof(T) * (size_t)(planes * ohw));                                   \
            return OAR_OK;                                                                      \
        }                                                                                       \
        for (int64_t y = 0; y < p.oh; y++)                                                      \
            for (int64_t z = 0; z < p.ow; z++) {                                                \
                if (a->method == OAR_IP_NEAREST) {                                              \
                    int64_t sy = nearest_src(a, p.rh, p.ih, y), sz = nearest_src(a, p.rw, p.iw, z); \
                    for (int64_t q = 0; q < planes; q++)                                        \
                        o[q * ohw + y * p.ow + z] = x[q * ihw + sy * p.iw + sz];                \
                } else {                                                                        \
                    int64_t y0, y1, z0, z1;                                                     \
                    double wy0, wy1, wz0, wz1;                                                  \
                    bilinear_src(a, p.rh, p.ih, y, &y0, &y1, &wy0, &wy1);                       \
                    bilinear_src(a, p.rw, p.iw, z, &z0, &z1, &wz0, &wz1);                       \
                    for (int64_t q = 0; q < planes; q++) {                                      \
                        const T *xp = x + q * ihw;                                              \
                        o[q * ohw + y * p.ow + z] = (T)(xp[y0 * p.iw + z0] * wy0 * wz0 +        \
                            xp[y1 * p.iw + z0] * wy1 * wz0 + xp[y0 * p.iw + z1] * wy0 * wz1 +   \
                            xp[y1 * p.iw + z1] * wy1 * wz1);                                    \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int bwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        const oar_interp_attrs_t *a = oar_k_attrs(k);                                           \
        if (!oar_k_output(k, OAR_IPG_DX, 0)) return OAR_OK;                                     \
        oar_tensor_t *xt = oar_k_input(k, OAR_IP_X, 0), *gt = oar_k_input(k, OAR_IPG_DOUT, 0);  \
        if (!gt) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Out@GRAD is missing");               \
        plan_t p;                                                                               \
        OAR_TRY(make_plan(k, xt, gt, &p));                                                      \
        T *dx = oar_k_output_data(k, OAR_IPG_DX, 0, DT);                                        \
        if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");                \
        const T *g = oar_tensor_data(gt);                                                       \
        const int64_t planes = p.n * p.c, ihw = p.ih * p.iw, ohw = p.oh * p.ow;                 \
        memset(dx, 0, sizeof(T) * (size_t)(planes * ihw));                                      \
        if (planes * ohw == 0) return OAR_OK;                                                   \
        if (p.ih == p.oh && p.iw == p.ow) {                                                     \
            memcpy(dx, g, sizeof(T) * (size_t)(planes * ohw));                                  \
            return OAR_OK;                                                                      \
        }                                                                                       \
        for (int64_t y = 0; y < p.oh; y++)                                                      \
            for (int64_t z = 0; z < p.ow; z++) {                                                \
                if (a->method == OAR_IP_NEAREST) {                                              \
                    int64_t sy = nearest_src(a, p.rh, p.ih, y), sz = nearest_src(a, p.rw, p.iw, z); \
                    for (int64_t q = 0; q < planes; q++)                                        \
                        dx[q * ihw + sy * p.iw + sz] += g[q * ohw + y * p.ow + z];              \
                } else {                                                                        \
                    int64_t y0, y1, z0, z1;                                                     \
                    double wy0, wy1, wz0, wz1;                                                  \
                    bilinear_src(a, p.rh, p.ih, y, &y0, &y1, &wy0, &wy1);                       \
                    bilinear_src(a, p.rw, p.iw, z, &z0, &z1, &wz0, &wz1);                       \
                    for (int64_t q = 0; q < planes; q++) {                                      \
                        T *dp = dx + q * ihw;                                                   \
                        const double gv = g[q * ohw + y * p.ow + z];                            \
                        dp[y0 * p.iw + z0] += (T)(gv * wy0 * wz0);                              \
                        dp[y1 * p.iw + z0] += (T)(gv * wy1 * wz0);                              \
                        dp[y0 * p.iw + z1] += (T)(gv * wy0 * wz1);                              \
                        dp[y1 * p.iw + z1] += (T)(gv * wy1 * wz1);                              \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        return OAR_OK;                                                                          \
    }

IP_KERNELS(float, f32, OAR_FP32)
IP_KERNELS(double, f64, OAR_FP64)

#define IP_REG(NAME)                                                                            \
    static int NAME##_f32(oar_kernel_ctx_t *k) { return fwd_f32(k); }                           \
    static int NAME##_f64(oar_kernel_ctx_t *k) { return fwd_f64(k); }                           \
    static int NAME##_g32(oar_kernel_ctx_t *k) { return bwd_f32(k); }                           \
    static int NAME##_g64(oar_kernel_ctx_t *k) { return bwd_f64(k); }                           \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_FP32, NAME##_f32)                             \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, OAR_FP64, NAME##_f64)                             \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CPU, OAR_FP32, NAME##_g32)                     \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CPU, OAR_FP64, NAME##_g64)

IP_REG(bilinear_interp)
IP_REG(nearest_interp)
IP_REG(bilinear_interp_v2)
IP_REG(nearest_interp_v2)
