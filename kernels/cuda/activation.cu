/*
 * activation.cu — CUDA kernels of the unary activations and their grads
 * (float32, float64), with the CPU kernels' formulas (kernels/cpu/
 * activation.c): one thread per element, the op's expression pasted into a
 * grid-stride loop. Grad kernels read the forward value their formula needs
 * (X or Out, as the op definition says) and Out@GRAD.
 */
#include "cuda_common.h"

using namespace oarcu;

namespace {

struct Par { double p1, p2; };

typedef int (*par_fn)(oar_kernel_ctx_t *k, Par *p);
int par_none(oar_kernel_ctx_t *, Par *p) { p->p1 = p->p2 = 0; return OAR_OK; }
int par_alpha(oar_kernel_ctx_t *k, Par *p) { p->p1 = oar_attr_f(oar_k_op(k), "alpha"); p->p2 = 0; return OAR_OK; }
int par_clip(oar_kernel_ctx_t *k, Par *p)
{
    if (oar_k_in(k, "Min", 0) || oar_k_in(k, "Max", 0))
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "inputs Min/Max are not supported by the CUDA kernel; run on CPU");
    p->p1 = oar_attr_f(oar_k_op(k), "min");
    p->p2 = oar_attr_f(oar_k_op(k), "max");
    return OAR_OK;
}
int par_softplus(oar_kernel_ctx_t *k, Par *p)
{
    p->p1 = oar_attr_f(oar_k_op(k), "beta");
    p->p2 = oar_attr_f(oar_k_op(k), "threshold");
    return OAR_OK;
}
int par_gelu(oar_kernel_ctx_t *k, Par *p) { p->p1 = oar_attr_b(oar_k_op(k), "approximate") ? 1 : 0; p->p2 = 0; return OAR_OK; }
/* pow: attr factor, or the one value of FactorTensor (read back to the host) */
int par_pow(oar_kernel_ctx_t *k, Par *p)
{
    p->p1 = oar_attr_f(oar_k_op(k), "factor");
    p->p2 = 0;
    if (!oar_k_in(k, "FactorTensor", 0)) return OAR_OK;
    const oar_tensor_t *f;
    const void *fd;
    OAR_TRY(in_tensor(k, "FactorTensor", 0, -1, 1, &f, &fd));
    if (f->dtype == OAR_FP32) {
        float v;
        OAR_TRY(to_host(k, &v, fd, sizeof v, "reading FactorTensor"));
        p->p1 = v;
    } else if (f->dtype == OAR_FP64) {
        OAR_TRY(to_host(k, &p->p1, fd, sizeof p->p1, "reading FactorTensor"));
    } else {
        return oar_k_error(k, OAR_ERR_DTYPE, "FactorTensor dtype %s, expected float32 or float64",
                           nm(oar_dtype_name(f->dtype)));
    }
    return OAR_OK;
}

#define SQRT1_2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794
#define SQRT_2_PI 0.79788456080286535588

/* FWD uses x, p1, p2; GRAD uses v (X or Out), g, p1, p2; `real` is the type */
#define ACT_F(NAME, FWD, GRAD)                                                        \
    struct NAME##_f {                                                                 \
        template <class real> __device__ static real fwd(real x, real p1, real p2)   \
        { (void)p1; (void)p2; return (FWD); }                                         \
        template <class real> __device__ static real grad(real v, real g, real p1, real p2) \
        { (void)v; (void)g; (void)p1; (void)p2; return (GRAD); }                      \
    };

#define C(v) ((real)(v))
ACT_F(relu, x > C(0) ? x : C(0), v > C(0) ? g : C(0))
ACT_F(sigmoid, C(1) / (C(1) + exp(-x)), g * v * (C(1) - v))
ACT_F(tanh, tanh(x), g * (C(1) - v * v))
ACT_F(exp, exp(x), g * v)
ACT_F(log, log(x), g / v)
ACT_F(sqrt, sqrt(x), C(0.5) * g / v)
ACT_F(abs, fabs(x), v > C(0) ? g : (v < C(0) ? -g : C(0)))
ACT_F(square, x * x, C(2) * v * g)
ACT_F(reciprocal, C(1) / x, -g * v * v)
ACT_F(leaky_relu, x > C(0) ? x : p1 * x, v > C(0) ? g : p1 * g)
ACT_F(elu, x > C(0) ? x : p1 * (exp(x) - C(1)), v > C(0) ? g : g * p1 * exp(v))
/* Paddle 2.x: p1 beta, p2 threshold (kernels/cpu/activation_ext.c) */
ACT_F(softplus, p1 * x > p2 ? x : ((p1 * x > C(0) ? p1 * x : C(0)) + log1p(exp(-fabs(p1 * x)))) / p1,
      p1 * v > p2 ? g : g / (C(1) + exp(-p1 * v)))
ACT_F(pow, pow(x, p1), g * p1 * pow(v, p1 - C(1)))
ACT_F(cos, cos(x), -g * sin(v))
ACT_F(sin, sin(x), g * cos(v))
ACT_F(floor, floor(x), C(0))
ACT_F(ceil, ceil(x), C(0))
ACT_F(round, round(x), C(0))
ACT_F(sign, (real)((x > C(0)) - (x < C(0))), C(0))
ACT_F(clip, x < p1 ? p1 : (x > p2 ? p2 : x), (v > p1 && v < p2) ? g : C(0))
/* gelu, exact: x Phi(x); tanh approximation when p1 != 0 */
#define GELU_U(x) (C(SQRT_2_PI) * ((x) + C(0.044715) * (x) * (x) * (x)))
ACT_F(gelu,
      p1 != C(0) ? C(0.5) * x * (C(1) + tanh(GELU_U(x))) : C(0.5) * x * (C(1) + erf(x * C(SQRT1_2))),
      g * (p1 != C(0)
           ? C(0.5) * (C(1) + tanh(GELU_U(v))) + C(0.5) * v * (C(1) - tanh(GELU_U(v)) * tanh(GELU_U(v))) *
                 C(SQRT_2_PI) * (C(1) + C(3 * 0.044715) * v * v)
           : C(0.5) * (C(1) + erf(v * C(SQRT1_2))) + v * C(INV_SQRT_2PI) * exp(C(-0.5) * v * v)))
#undef C

template <class T, class F>
__global__ void fwd_k(const T *x, T *o, int64_t n, T p1, T p2)
{
    OAR_CU_LOOP(i, n) o[i] = F::fwd(x[i], p1, p2);
}

template <class T, class F>
__global__ void grad_k(const T *v, const T *g, T *d, int64_t n, T p1, T p2)
{
    OAR_CU_LOOP(i, n) d[i] = F::grad(v[i], g[i], p1, p2);
}

template <class T, class F>
int act_forward(oar_kernel_ctx_t *k, int dt, par_fn par)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor(k, "X", 0, dt, -1, &x, &xd));
    Par p;
    OAR_TRY(par(k, &p));
    const int64_t n = oar_tensor_numel_of(x);
    void *o;
    OAR_TRY(out_data(k, "Out", dt, n, &o));
    if (n == 0) return OAR_OK;
    fwd_k<T, F><<<grid_for(n), kThreads>>>((const T *)xd, (T *)o, n, (T)p.p1, (T)p.p2);
    OAR_CU_LAUNCH(k, "activation");
    return OAR_OK;
}

template <class T, class F>
int act_backward(oar_kernel_ctx_t *k, int dt, par_fn par, const char *dep)
{
    if (!oar_k_out(k, "X@GRAD", 0)) return OAR_OK;
    const oar_tensor_t *v, *g;
    const void *vd, *gd;
    OAR_TRY(in_tensor(k, dep, 0, dt, -1, &v, &vd));
    const int64_t n = oar_tensor_numel_of(v);
    OAR_TRY(in_tensor(k, "Out@GRAD", 0, dt, n, &g, &gd));
    Par p;
    OAR_TRY(par(k, &p));
    void *d;
    OAR_TRY(out_data(k, "X@GRAD", dt, n, &d));
    if (n == 0) return OAR_OK;
    grad_k<T, F><<<grid_for(n), kThreads>>>((const T *)vd, (const T *)gd, (T *)d, n, (T)p.p1, (T)p.p2);
    OAR_CU_LAUNCH(k, "activation grad");
    return OAR_OK;
}

#define ACT(NAME, PAR, DEP)                                                                          \
    int NAME##_f32(oar_kernel_ctx_t *k) { return act_forward<float, NAME##_f>(k, OAR_FP32, PAR); }   \
    int NAME##_f64(oar_kernel_ctx_t *k) { return act_forward<double, NAME##_f>(k, OAR_FP64, PAR); }  \
    int NAME##_g32(oar_kernel_ctx_t *k) { return act_backward<float, NAME##_f>(k, OAR_FP32, PAR, DEP); } \
    int NAME##_g64(oar_kernel_ctx_t *k) { return act_backward<double, NAME##_f>(k, OAR_FP64, PAR, DEP); } \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CUDA, OAR_FP32, NAME##_f32)                                 \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CUDA, OAR_FP64, NAME##_f64)                                 \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CUDA, OAR_FP32, NAME##_g32)                         \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CUDA, OAR_FP64, NAME##_g64)

ACT(relu, par_none, "Out")
ACT(sigmoid, par_none, "Out")
ACT(tanh, par_none, "Out")
ACT(exp, par_none, "Out")
ACT(log, par_none, "X")
ACT(sqrt, par_none, "Out")
ACT(abs, par_none, "X")
ACT(square, par_none, "X")
ACT(reciprocal, par_none, "Out")
ACT(leaky_relu, par_alpha, "X")
ACT(elu, par_alpha, "X")
ACT(softplus, par_softplus, "X")
ACT(pow, par_pow, "X")
ACT(cos, par_none, "X")
ACT(sin, par_none, "X")
ACT(floor, par_none, "X")
ACT(ceil, par_none, "X")
ACT(round, par_none, "X")
ACT(sign, par_none, "X")
ACT(clip, par_clip, "X")
ACT(gelu, par_gelu, "X")

}  // namespace
