/*
 * activation.c — CPU kernels of the unary activations and their grads.
 *
 * Each op is an expression pasted into a plain loop over [lo, hi) (tgmath.h
 * picks expf/exp etc. by type); big tensors split the range over OpenMP
 * threads. Grad kernels read the forward value their formula needs (X or
 * Out, see src/ops/activation.c) and Out@GRAD.
 */
#include <tgmath.h>
#include "op.h"
#include "ops/attr_tensor.h"
#include "bcast_run.h"
#include "ops/activation.h"

typedef struct act_par { double p1, p2; } act_par_t;
typedef void (*act_map_fn)(const void *a, const void *b, void *o, int64_t lo, int64_t hi,
                           const act_par_t *p);

static void act_run(act_map_fn fn, const void *a, const void *b, void *o, int64_t n, const act_par_t *p)
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

/* ---- parameters ----------------------------------------------------------- */
/* The decoded parameters (oar_act_attrs_t); pow's FactorTensor input, when
 * given, replaces the factor. fslot: FactorTensor's slot, -1 for other ops. */
static int act_params(oar_kernel_ctx_t *k, int fslot, act_par_t *p)
{
    const oar_act_attrs_t *a = oar_k_attrs(k);
    p->p1 = a->p1;
    p->p2 = a->p2;
    if (a->tensor_bounds) {   /* clip: Min/Max inputs, when given, replace min/max */
        OAR_TRY(oar_k_scalar(k, "Min", "min", &p->p1));
        OAR_TRY(oar_k_scalar(k, "Max", "max", &p->p2));
        if (!(p->p1 <= p->p2))
            return oar_k_error(k, OAR_ERR_INVALID, "min (%g) must not exceed max (%g)", p->p1, p->p2);
    }
    oar_tensor_t *f = fslot >= 0 ? oar_k_input(k, fslot, 0) : NULL;
    if (!f) return OAR_OK;
    if (oar_tensor_numel_of(f) != 1 || !oar_tensor_has_data(f))
        return oar_k_error(k, OAR_ERR_SHAPE, "FactorTensor must hold one value, it has %lld",
                           (long long)oar_tensor_numel_of(f));
    switch (f->dtype) {
    case OAR_FP32: p->p1 = *(const float *)oar_tensor_data(f); break;
    case OAR_FP64: p->p1 = *(const double *)oar_tensor_data(f); break;
    default:
        return oar_k_error(k, OAR_ERR_DTYPE, "FactorTensor dtype %s, expected float32 or float64",
                           oar_dtype_name(f->dtype));
    }
    return OAR_OK;
}

/* ---- drivers ------------------------------------------------------------ */
/* factor: whether the op has pow's FactorTensor input */
static int act_forward(oar_kernel_ctx_t *k, int dtype, act_map_fn fn, bool factor)
{
    oar_tensor_t *x = oar_k_input(k, OAR_UNARY_X, 0);
    if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X is missing");
    int64_t n = oar_tensor_numel_of(x);
    if (n > 0 && !oar_tensor_has_data(x))
        return oar_k_error(k, OAR_ERR_INVALID, "input X ('%s') holds no data", oar_k_input_name(k, OAR_UNARY_X, 0));
    act_par_t p;
    OAR_TRY(act_params(k, factor ? OAR_UNARY_FACTOR : -1, &p));
    const void *xd = oar_tensor_data(x);   /* read before Out may replace a shared buffer */
    void *o = oar_k_output_data(k, OAR_UNARY_OUT, 0, dtype);
    if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");
    if (n > 0) act_run(fn, xd, NULL, o, n, &p);
    return OAR_OK;
}

/* dep_slot: "X" or "Out", the forward value the grad formula reads (slot
 * OAR_UNARY_G_DEP; the name is for messages) */
static int act_backward(oar_kernel_ctx_t *k, int dtype, act_map_fn fn, bool factor,
                        const char *dep_slot)
{
    if (!oar_k_output(k, OAR_UNARY_G_DX, 0)) return OAR_OK;
    oar_tensor_t *d = oar_k_input(k, OAR_UNARY_G_DEP, 0), *g = oar_k_input(k, OAR_UNARY_G_DOUT, 0);
    if (!d || !g)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s is missing", d ? "Out@GRAD" : dep_slot);
    int64_t n = oar_tensor_numel_of(d);
    if (oar_tensor_numel_of(g) != n) {
        char b1[128], b2[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD shape %s differs from %s shape %s", oar_shape_str(g->dims, g->ndim, b1, sizeof b1), dep_slot,
                           oar_shape_str(d->dims, d->ndim, b2, sizeof b2));
    }
    if (g->dtype != d->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "Out@GRAD dtype %s differs from %s dtype %s", oar_dtype_name(g->dtype), dep_slot, oar_dtype_name(d->dtype));
    if (n > 0 && (!oar_tensor_has_data(d) || !oar_tensor_has_data(g)))
        return oar_k_error(k, OAR_ERR_INVALID, "input %s holds no data", oar_tensor_has_data(d) ? "Out@GRAD" : dep_slot);
    act_par_t p;
    OAR_TRY(act_params(k, factor ? OAR_UNARY_G_FACTOR : -1, &p));
    const void *dd = oar_tensor_data(d), *gd = oar_tensor_data(g);
    void *dx = oar_k_output_data(k, OAR_UNARY_G_DX, 0, dtype);
    if (!dx) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate X@GRAD");
    if (n > 0) act_run(fn, dd, gd, dx, n, &p);
    return OAR_OK;
}

/* FWD uses x, p1, p2; GRAD uses v (the X or Out value), g, p1, p2; `real` is the element type. */
#define ACT_ONE(NAME, SUF, T, DT, FACTOR, DEP, FWD, GRAD)                                \
    static void NAME##_fmap_##SUF(const void *av, const void *bv, void *ov, int64_t lo, \
                                  int64_t hi, const act_par_t *pp)                    \
    {                                                                                 \
        typedef T real;                                                               \
        const real *xs = av; real *os = ov; (void)bv;                                 \
        const real p1 = (real)pp->p1, p2 = (real)pp->p2; (void)p1; (void)p2;          \
        for (int64_t i = lo; i < hi; i++) { const real x = xs[i]; os[i] = (FWD); }    \
    }                                                                                 \
    static void NAME##_gmap_##SUF(const void *av, const void *bv, void *ov, int64_t lo, \
                                  int64_t hi, const act_par_t *pp)                    \
    {                                                                                 \
        typedef T real;                                                               \
        const real *vs = av, *gs = bv; real *os = ov;                                 \
        const real p1 = (real)pp->p1, p2 = (real)pp->p2; (void)p1; (void)p2;          \
        for (int64_t i = lo; i < hi; i++) { const real v = vs[i], g = gs[i]; os[i] = (GRAD); } \
    }                                                                                 \
    static int NAME##_f_##SUF(oar_kernel_ctx_t *k) { return act_forward(k, DT, NAME##_fmap_##SUF, FACTOR); } \
    static int NAME##_g_##SUF(oar_kernel_ctx_t *k) { return act_backward(k, DT, NAME##_gmap_##SUF, FACTOR, DEP); } \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CPU, DT, NAME##_f_##SUF)                     \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CPU, DT, NAME##_g_##SUF)

/* FACTOR: the op has pow's FactorTensor input */
#define ACT(NAME, FACTOR, DEP, FWD, GRAD)                                             \
    ACT_ONE(NAME, f32, float, OAR_FP32, FACTOR, DEP, FWD, GRAD)                       \
    ACT_ONE(NAME, f64, double, OAR_FP64, FACTOR, DEP, FWD, GRAD)

#define C(v) ((real)(v))
#define SQRT1_2 0.70710678118654752440     /* 1/sqrt(2) */
#define INV_SQRT_2PI 0.39894228040143267794 /* 1/sqrt(2 pi) */
#define SQRT_2_PI 0.79788456080286535588   /* sqrt(2/pi) */

ACT(relu, false, "Out", x > C(0) ? x : C(0), v > C(0) ? g : C(0))
ACT(sigmoid, false, "Out", C(1) / (C(1) + exp(-x)), g * v * (C(1) - v))
ACT(tanh, false, "Out", tanh(x), g * (C(1) - v * v))
ACT(exp, false, "Out", exp(x), g * v)
ACT(log, false, "X", log(x), g / v)
ACT(sqrt, false, "Out", sqrt(x), C(0.5) * g / v)
ACT(abs, false, "X", fabs(x), v > C(0) ? g : (v < C(0) ? -g : C(0)))
ACT(square, false, "X", x * x, C(2) * v * g)
ACT(reciprocal, false, "Out", C(1) / x, -g * v * v)
ACT(leaky_relu, false, "X", x > C(0) ? x : p1 * x, v > C(0) ? g : p1 * g)
ACT(elu, false, "X", x > C(0) ? x : p1 * (exp(x) - C(1)), v > C(0) ? g : g * p1 * exp(v))
/* softplus: kernels/cpu/activation_ext.c (Paddle 2.x's beta/threshold) */
ACT(pow, true, "X", pow(x, p1), g * p1 * pow(v, p1 - C(1)))
ACT(cos, false, "X", cos(x), -g * sin(v))
ACT(sin, false, "X", sin(x), g * cos(v))
ACT(floor, false, "X", floor(x), ((void)v, (void)g, C(0)))
ACT(ceil, false, "X", ceil(x), ((void)v, (void)g, C(0)))
ACT(round, false, "X", round(x), ((void)v, (void)g, C(0)))
ACT(sign, false, "X", (real)((x > C(0)) - (x < C(0))), ((void)v, (void)g, C(0)))
ACT(asinh, false, "X", asinh(x), g / sqrt(v * v + C(1)))
ACT(acosh, false, "X", acosh(x), g / sqrt(v * v - C(1)))
ACT(atanh, false, "X", atanh(x), g / (C(1) - v * v))
ACT(clip, false, "X", x < p1 ? p1 : (x > p2 ? p2 : x), (v > p1 && v < p2) ? g : C(0))

/* gelu, exact: x Phi(x); d/dx = Phi(x) + x phi(x) */
#define GELU_EXACT(x) (C(0.5) * (x) * (C(1) + erf((x) * C(SQRT1_2))))
#define GELU_EXACT_D(x) (C(0.5) * (C(1) + erf((x) * C(SQRT1_2))) + \
                         (x) * C(INV_SQRT_2PI) * exp(C(-0.5) * (x) * (x)))
/* gelu, tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi)(x + 0.044715 x^3) */
#define GELU_U(x) (C(SQRT_2_PI) * ((x) + C(0.044715) * (x) * (x) * (x)))
#define GELU_TANH(x) (C(0.5) * (x) * (C(1) + tanh(GELU_U(x))))
#define GELU_TANH_D(x) (C(0.5) * (C(1) + tanh(GELU_U(x))) + C(0.5) * (x) * \
    (C(1) - tanh(GELU_U(x)) * tanh(GELU_U(x))) * C(SQRT_2_PI) * (C(1) + C(3 * 0.044715) * (x) * (x)))
ACT(gelu, false, "X", p1 != C(0) ? GELU_TANH(x) : GELU_EXACT(x),
    g * (p1 != C(0) ? GELU_TANH_D(v) : GELU_EXACT_D(v)))
