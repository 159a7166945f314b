/*
 * activation_ext.c — CPU kernels of the activations defined in
 * src/ops/activation_ext.ops (float32, float64).
 *
 * Each op is a forward and a grad expression pasted into a plain loop; up
 * to three FLOAT attrs, decoded at prepare into p[0..2], are its p1..p3.
 * The formulas are Fluid's functors (operators/activation_op.h), including their choice of
 * reading X or Out in the gradient.
 */
#include <tgmath.h>
#include "op.h"
#include "bcast_run.h"
#include "ops/activation_ext.h"

typedef oar_act_ext_attrs_t par_t;
typedef void (*map_fn)(const void *a, const void *b, void *o, int64_t lo, int64_t hi, const par_t *p);

static void run_map(map_fn fn, const void *a, const void *b, void *o, int64_t n, const par_t *p)
{
    if (n > OAR_PAR_THRESHOLD) {
        #pragma omp parallel
        {
            int64_t lo, hi;
            oar_omp_range(n, &lo, &hi);
            fn(a, b, o, lo, hi, p);
        }
    } else {
        fn(a, b, o, 0, n, p);
    }
}

/* input `slot` (`name` in messages) holds its values */
static int check_data(oar_kernel_ctx_t *k, const oar_tensor_t *t, int slot, const char *name)
{
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", name);
    if (oar_tensor_numel_of(t) > 0 && !oar_tensor_has_data(t))
        return oar_k_error(k, OAR_ERR_INVALID, "input %s ('%s') holds no data", name,
                           oar_k_input_name(k, slot, 0) ? oar_k_input_name(k, slot, 0) : "?");
    return OAR_OK;
}

static int forward(oar_kernel_ctx_t *k, int dtype, map_fn fn)
{
    const par_t *p = oar_k_attrs(k);
    oar_tensor_t *x = oar_k_input(k, OAR_ACTX_X, 0);
    OAR_TRY(check_data(k, x, OAR_ACTX_X, "X"));
    int64_t n = oar_tensor_numel_of(x);
    const void *xd = oar_tensor_data(x);
    void *o = oar_k_output_data(k, OAR_ACTX_OUT, 0, dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (n > 0) run_map(fn, xd, NULL, o, n, p);
    return OAR_OK;
}

/* dep: the name of input 0, the forward value the formula reads (X or Out) */
static int backward(oar_kernel_ctx_t *k, int dtype, map_fn fn, const char *dep)
{
    const par_t *p = oar_k_attrs(k);
    if (!oar_k_output(k, OAR_ACTX_G_DX, 0)) return OAR_OK;
    oar_tensor_t *d = oar_k_input(k, OAR_ACTX_G_DEP, 0), *g = oar_k_input(k, OAR_ACTX_G_DOUT, 0);
    OAR_TRY(check_data(k, d, OAR_ACTX_G_DEP, dep));
    OAR_TRY(check_data(k, g, OAR_ACTX_G_DOUT, "Out@GRAD"));
    int64_t n = oar_tensor_numel_of(d);
    if (oar_tensor_numel_of(g) != n || g->dtype != d->dtype) {
        char b1[128], b2[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD (%s %s) does not match %s (%s %s)",
                           oar_dtype_name(g->dtype), oar_shape_str(g->dims, g->ndim, b1, sizeof b1), dep,
                           oar_dtype_name(d->dtype), oar_shape_str(d->dims, d->ndim, b2, sizeof b2));
    }
    const void *dd = oar_tensor_data(d), *gd = oar_tensor_data(g);
    void *dx = oar_k_output_data(k, OAR_ACTX_G_DX, 0, dtype);
    if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");
    if (n > 0) run_map(fn, dd, gd, dx, n, p);
    return OAR_OK;
}

/* FWD uses x and p1..p3; GRAD uses v (X or Out, per DEP), g and p1..p3.
 * A1..A3 name the attrs behind p1..p3: the definition's decode reads them. */
#define ONE(NAME, SUF, T, DT, A1, A2, A3, DEP, FWD, GRAD)                                     \
    static void NAME##_f_##SUF(const void *av, const void *bv, void *ov, int64_t lo, int64_t hi, \
                               const par_t *pp)                                               \
    {                                                                                         \
        typedef T real;                                                                       \
        const real *xs = av; real *os = ov; (void)bv;                                         \
        const real p1 = (real)pp->p[0], p2 = (real)pp->p[1], p3 = (real)pp->p[2];             \
        (void)p1; (void)p2; (void)p3;                                                         \
        for (int64_t i = lo; i < hi; i++) { const real x = xs[i]; os[i] = (FWD); }            \
    }                                                                                         \
    static void NAME##_g_##SUF(const void *av, const void *bv, void *ov, int64_t lo, int64_t hi, \
                               const par_t *pp)                                               \
    {                                                                                         \
        typedef T real;                                                                       \
        const real *vs = av, *gs = bv; real *os = ov;                                         \
        const real p1 = (real)pp->p[0], p2 = (real)pp->p[1], p3 = (real)pp->p[2];             \
        (void)p1; (void)p2; (void)p3;                                                         \
        for (int64_t i = lo; i < hi; i++) { const real v = vs[i], g = gs[i]; os[i] = (GRAD); } \
    }                                                                                         \
    static int NAME##_kf_##SUF(oar_kernel_ctx_t *k) { return forward(k, DT, NAME##_f_##SUF); } \
    static int NAME##_kg_##SUF(oar_kernel_ctx_t *k) { return backward(k, DT, NAME##_g_##SUF, DEP); } \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, DT, NAME##_kf_##SUF)                            \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CPU, DT, NAME##_kg_##SUF)

#define ACT(NAME, A1, A2, A3, DEP, FWD, GRAD)                                 \
    ONE(NAME, f32, float, OAR_FP32, A1, A2, A3, DEP, FWD, GRAD)               \
    ONE(NAME, f64, double, OAR_FP64, A1, A2, A3, DEP, FWD, GRAD)

#define C(v) ((real)(v))
#define ACT0(NAME, DEP, FWD, GRAD) ACT(NAME, NULL, NULL, NULL, DEP, FWD, GRAD)
#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : ((x) > (hi) ? (hi) : (x)))
#define SIG(x) (C(1) / (C(1) + exp(-(x))))

/* ---- depending on Out ---------------------------------------------------- */
ACT(relu6, "threshold", NULL, NULL, "Out", CLAMP(x, C(0), p1), (v > C(0) && v < p1) ? g : C(0))
ACT(hard_sigmoid, "slope", "offset", NULL, "Out", CLAMP(p1 * x + p2, C(0), C(1)),
    (v > C(0) && v < C(1)) ? g * p1 : C(0))
ACT0(rsqrt, "Out", C(1) / sqrt(x), C(-0.5) * g * v * v * v)
/* Fluid clips x to [-t, t]; its gradient tests Out (not X) against the range */
ACT(soft_relu, "threshold", NULL, NULL, "Out", log(C(1) + exp(CLAMP(x, -p1, p1))),
    (v > -p1 && v < p1) ? g * (C(1) - exp(-v)) : C(0))
/* selu: p1 scale, p2 alpha; d/dx from Out: scale for Out > 0, Out + scale alpha else */
ACT(selu, "scale", "alpha", NULL, "Out", x > C(0) ? p1 * x : p1 * p2 * (exp(x) - C(1)),
    v > C(0) ? g * p1 : g * (v + p1 * p2))

/* ---- depending on X ------------------------------------------------------ */
/* swish: x sigmoid(beta x); d/dx = beta out + sigmoid(beta x)(1 - beta out) */
ACT(swish, "beta", NULL, NULL, "X", x * SIG(p1 * x),
    g * (p1 * v * SIG(p1 * v) + SIG(p1 * v) * (C(1) - p1 * v * SIG(p1 * v))))
ACT0(silu, "X", x * SIG(x), g * SIG(v) * (C(1) + v * (C(1) - SIG(v))))
/* log sigmoid(x) = -softplus(-x) = min(x, 0) - log1p(e^-|x|); d/dx = sigmoid(-x) */
ACT0(logsigmoid, "X", (x < C(0) ? x : C(0)) - log1p(exp(-fabs(x))), g * SIG(-v))
ACT0(atan, "X", atan(x), g / (C(1) + v * v))
ACT0(acos, "X", acos(x), -g / sqrt(C(1) - v * v))
ACT0(asin, "X", asin(x), g / sqrt(C(1) - v * v))
ACT0(tan, "X", tan(x), g / (cos(v) * cos(v)))
ACT0(sinh, "X", sinh(x), g * cosh(v))
ACT0(cosh, "X", cosh(x), g * sinh(v))
ACT0(tanh_shrink, "X", x - tanh(x), g * tanh(v) * tanh(v))
ACT(hard_shrink, "threshold", NULL, NULL, "X", (x < -p1 || x > p1) ? x : C(0),
    (v < -p1 || v > p1) ? g : C(0))
ACT(softshrink, "lambda", NULL, NULL, "X", x > p1 ? x - p1 : (x < -p1 ? x + p1 : C(0)),
    (v > p1 || v < -p1) ? g : C(0))
ACT(brelu, "t_min", "t_max", NULL, "X", CLAMP(x, p1, p2), (v > p1 && v < p2) ? g : C(0))
/* x min(max(x + offset, 0), threshold) / scale; p1 threshold, p2 scale, p3 offset */
ACT(hard_swish, "threshold", "scale", "offset", "X", x * CLAMP(x + p3, C(0), p1) / p2,
    (v + p3 <= C(0)) ? C(0) : ((v + p3 < p1) ? g * (C(2) * v + p3) / p2 : g * p1 / p2))
ACT0(log1p, "X", log1p(x), g / (C(1) + v))
ACT0(expm1, "X", expm1(x), g * exp(v))
ACT0(log2, "X", log2(x), g / (v * C(0.69314718055994530942)))
ACT0(log10, "X", log10(x), g / (v * C(2.30258509299404568402)))
ACT(stanh, "scale_a", "scale_b", NULL, "X", p2 * tanh(p1 * x),
    g * p1 * p2 * (C(1) - tanh(p1 * v) * tanh(p1 * v)))
ACT0(softsign, "X", x / (C(1) + fabs(x)), g / ((C(1) + fabs(v)) * (C(1) + fabs(v))))
ACT(thresholded_relu, "threshold", "value", NULL, "X", x > p1 ? x : p2, v > p1 ? g : C(0))
/* softplus(beta x) / beta as max(bx, 0) + log1p(e^-|bx|) (no overflow), x
 * itself past the threshold; d/dx = sigmoid(beta x) */
#define SP_BX(x) (p1 * (x))
ACT(softplus, "beta", "threshold", NULL, "X",
    SP_BX(x) > p2 ? x : ((SP_BX(x) > C(0) ? SP_BX(x) : C(0)) + log1p(exp(-fabs(SP_BX(x))))) / p1,
    SP_BX(v) > p2 ? g : g / (C(1) + exp(-SP_BX(v))))
/* mish: x tanh(softplus(x)), softplus cut off at +-threshold as in Paddle */
#define MISH_SP(x) ((x) > p1 ? (x) : ((x) < -p1 ? exp(x) : log1p(exp(x))))
#define MISH_DSP(x) ((x) > p1 ? C(1) : ((x) < -p1 ? exp(x) : SIG(x)))
ACT(mish, "threshold", NULL, NULL, "X", x * tanh(MISH_SP(x)),
    g * (tanh(MISH_SP(v)) + v * (C(1) - tanh(MISH_SP(v)) * tanh(MISH_SP(v))) * MISH_DSP(v)))
ACT(celu, "alpha", NULL, NULL, "X", (x > C(0) ? x : C(0)) + (x < C(0) ? p1 * (exp(x / p1) - C(1)) : C(0)),
    v > C(0) ? g : g * exp(v / p1))
ACT0(erf, "X", erf(x), g * C(1.12837916709551257390) * exp(-v * v))
/* logit: log(x / (1 - x)) of x clipped to [eps, 1 - eps] (no clip when eps is 0) */
#define LOGIT_X(x) (p1 > C(0) ? CLAMP(x, p1, C(1) - p1) : (x))
ACT(logit, "eps", NULL, NULL, "X", log(LOGIT_X(x) / (C(1) - LOGIT_X(x))),
    (p1 > C(0) && (v < p1 || v > C(1) - p1)) ? C(0) : g / (v * (C(1) - v)))
