/*
 * activation.cu — CUDA kernels of the unary activations and their grads
 * (float16, float32, float64), with the CPU kernels' formulas (kernels/cpu/
 * activation.c): one thread per element, the op's expression pasted into a
 * grid-stride loop; float16 computes in float. Grad kernels read the forward
 * value their formula needs (X or Out, as the op definition says) and
 * Out@GRAD.
 */
#include "cuda_common.h"
#include "half.h"
#include "ops/activation.h"
#include "ops/activation_ext.h"   /* softplus's decoded attributes */

using namespace oarcu;

namespace {

struct Par { double p1, p2; };

/* where an op's parameters come from: activation.ops's struct (pow with its
 * FactorTensor), or activation_ext.ops's (softplus: beta, threshold) */
enum ParKind { PAR_PLAIN, PAR_FACTOR, PAR_EXT };

/* The decoded parameters; pow's FactorTensor (slot fslot, -1 for other ops)
 * replaces the factor, read back to the host. clip's Min/Max inputs (slots
 * mslot, mslot + 1) are not supported here. */
int params(oar_kernel_ctx_t *k, int kind, int fslot, int mslot, Par *p)
{
    if (kind == PAR_EXT) {
        const oar_act_ext_attrs_t *e = (const oar_act_ext_attrs_t *)oar_k_attrs(k);
        p->p1 = e->p[0];
        p->p2 = e->p[1];
        return OAR_OK;
    }
    const oar_act_attrs_t *a = (const oar_act_attrs_t *)oar_k_attrs(k);
    p->p1 = a->p1;
    p->p2 = a->p2;
    if (a->tensor_bounds && (oar_k_nin(k, mslot) > 0 || oar_k_nin(k, mslot + 1) > 0))
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "inputs Min/Max are not supported by the CUDA kernel; run on CPU");
    if (fslot < 0 || !oar_k_input(k, fslot, 0)) return OAR_OK;
    const oar_tensor_t *f;
    const void *fd;
    OAR_TRY(in_tensor_at(k, fslot, 0, -1, 1, &f, &fd));
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
ACT_F(asinh, asinh(x), g / sqrt(v * v + C(1)))
ACT_F(acosh, acosh(x), g / sqrt(v * v - C(1)))
ACT_F(atanh, atanh(x), g / (C(1) - v * v))
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

/* T: the storage type; the formula runs in acc_t<T> */
template <class T, class F>
__global__ void fwd_k(const T *x, T *o, int64_t n, acc_t<T> p1, acc_t<T> p2)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(i, n) o[i] = cvt<T>(F::fwd(cvt<A>(x[i]), p1, p2));
}

template <class T, class F>
__global__ void grad_k(const T *v, const T *g, T *d, int64_t n, acc_t<T> p1, acc_t<T> p2)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(i, n) d[i] = cvt<T>(F::grad(cvt<A>(v[i]), cvt<A>(g[i]), p1, p2));
}

/* pow has FactorTensor at OAR_UNARY_FACTOR / OAR_UNARY_G_FACTOR; clip has
 * Min/Max at 1, 2 (forward) and 2, 3 (grad) */
template <class T, class F>
int act_forward(oar_kernel_ctx_t *k, int dt, int kind)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_UNARY_X, 0, dt, -1, &x, &xd));
    Par p;
    OAR_TRY(params(k, kind, kind == PAR_FACTOR ? OAR_UNARY_FACTOR : -1, 1, &p));
    const int64_t n = oar_tensor_numel_of(x);
    void *o;
    OAR_TRY(out_data_at(k, OAR_UNARY_OUT, 0, dt, n, &o));
    if (n == 0) return OAR_OK;
    typedef acc_t<T> A;
    fwd_k<T, F><<<grid_for(n), kThreads>>>((const T *)xd, (T *)o, n, (A)p.p1, (A)p.p2);
    OAR_CU_LAUNCH(k, "activation");
    return OAR_OK;
}

template <class T, class F>
int act_backward(oar_kernel_ctx_t *k, int dt, int kind)
{
    if (!oar_k_output(k, OAR_UNARY_G_DX, 0)) return OAR_OK;
    const oar_tensor_t *v, *g;
    const void *vd, *gd;
    OAR_TRY(in_tensor_at(k, OAR_UNARY_G_DEP, 0, dt, -1, &v, &vd));
    const int64_t n = oar_tensor_numel_of(v);
    OAR_TRY(in_tensor_at(k, OAR_UNARY_G_DOUT, 0, dt, n, &g, &gd));
    Par p;
    OAR_TRY(params(k, kind, kind == PAR_FACTOR ? OAR_UNARY_G_FACTOR : -1, 2, &p));
    void *d;
    OAR_TRY(out_data_at(k, OAR_UNARY_G_DX, 0, dt, n, &d));
    if (n == 0) return OAR_OK;
    typedef acc_t<T> A;
    grad_k<T, F><<<grid_for(n), kThreads>>>((const T *)vd, (const T *)gd, (T *)d, n, (A)p.p1, (A)p.p2);
    OAR_CU_LAUNCH(k, "activation grad");
    return OAR_OK;
}

#define ACT_DT(NAME, SFX, T, DT, KIND)                                                                \
    int NAME##_f##SFX(oar_kernel_ctx_t *k) { return act_forward<T, NAME##_f>(k, DT, KIND); }           \
    int NAME##_g##SFX(oar_kernel_ctx_t *k) { return act_backward<T, NAME##_f>(k, DT, KIND); }          \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CUDA, DT, NAME##_f##SFX)                                      \
    OAR_REGISTER_KERNEL(#NAME "_grad", OAR_PLACE_CUDA, DT, NAME##_g##SFX)
#define ACT(NAME, KIND)                     \
    ACT_DT(NAME, 16, __half, OAR_FP16, KIND) \
    ACT_DT(NAME, 32, float, OAR_FP32, KIND)  \
    ACT_DT(NAME, 64, double, OAR_FP64, KIND)

ACT(relu, PAR_PLAIN)
ACT(sigmoid, PAR_PLAIN)
ACT(tanh, PAR_PLAIN)
ACT(exp, PAR_PLAIN)
ACT(log, PAR_PLAIN)
ACT(sqrt, PAR_PLAIN)
ACT(abs, PAR_PLAIN)
ACT(square, PAR_PLAIN)
ACT(reciprocal, PAR_PLAIN)
ACT(leaky_relu, PAR_PLAIN)
ACT(elu, PAR_PLAIN)
ACT(softplus, PAR_EXT)
ACT(pow, PAR_FACTOR)
ACT(cos, PAR_PLAIN)
ACT(sin, PAR_PLAIN)
ACT(floor, PAR_PLAIN)
ACT(ceil, PAR_PLAIN)
ACT(round, PAR_PLAIN)
ACT(sign, PAR_PLAIN)
ACT(asinh, PAR_PLAIN)
ACT(acosh, PAR_PLAIN)
ACT(atanh, PAR_PLAIN)
ACT(clip, PAR_PLAIN)
ACT(gelu, PAR_PLAIN)

}  // namespace
