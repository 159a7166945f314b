/*
 * batch_norm.cu — CUDA kernels of batch_norm and batch_norm_grad (float16,
 * float32, float64), with the CPU kernels' semantics (kernels/cpu/batch_norm.c): X
 * seen as [N, C, S] (NCHW) or [N*S, C] (NHWC); training normalizes with the
 * batch statistics (biased variance) and updates the running ones,
 * running = momentum * running + (1 - momentum) * batch; SavedMean is the
 * batch mean and SavedVariance 1/sqrt(var + epsilon); is_test (unless
 * trainable_statistics) or use_global_stats uses the running statistics.
 *
 * One block per channel computes its statistics in double (two passes) and
 * writes the per-channel outputs and the coefficients of the elementwise
 * pass: y = a_c (x - mean_c) + b_c; the grad likewise sums dy and
 * dy * xhat per channel, then dx = A_c dy + B_c (x - mean_c) + D_c.
 *
 * Float16 X, Y and their grads come with float32 Scale, Bias, Mean,
 * Variance and statistics outputs (cuDNN's convention, kept by the mixed-
 * precision rewrite): P = acc_t<T> is the vectors' type.
 */
#include "cuda_common.h"
#include "half.h"
#include "ops/window.h"
#include "ops/batch_norm.h"

using namespace oarcu;

namespace {

struct View { int64_t n, c, s; bool nhwc; };

/* flat index of element j (of N*S) of channel c */
__device__ inline int64_t at(const View &v, int64_t c, int64_t j)
{
    return v.nhwc ? j * v.c + c : ((j / v.s) * v.c + c) * v.s + j % v.s;
}
__device__ inline int64_t channel_of(const View &v, int64_t e) { return v.nhwc ? e % v.c : (e / v.s) % v.c; }

/* per-channel coefficients: mean, a (or A), b (or B), D */
struct Coef { double *mean, *a, *b, *d; };

struct FwdVecs {
    const void *scale, *bias, *rmean, *rvar, *momentum;
    int momentum_f64;
    void *mean_out, *var_out, *saved_mean, *saved_var;
};

template <class T>
__global__ void bn_stats_k(const T *x, View v, FwdVecs p, double momentum, double eps, bool global, Coef co)
{
    typedef acc_t<T> P;
    __shared__ double sh[32];
    const int64_t cnt = v.n * v.s;
    for (int64_t c = blockIdx.x; c < v.c; c += gridDim.x) {
        const double rm = (double)((const P *)p.rmean)[c], rv = (double)((const P *)p.rvar)[c];
        double mean, istd, nrm = rm, nrv = rv;
        if (global) {
            mean = rm;
            istd = 1.0 / sqrt(rv + eps);
        } else {
            double s1 = 0;
            for (int64_t j = threadIdx.x; j < cnt; j += blockDim.x) s1 += cvt<double>(x[at(v, c, j)]);
            mean = block_sum(s1, sh) / (double)cnt;
            double s2 = 0;
            for (int64_t j = threadIdx.x; j < cnt; j += blockDim.x) {
                double dv = cvt<double>(x[at(v, c, j)]) - mean;
                s2 += dv * dv;
            }
            const double var = block_sum(s2, sh) / (double)cnt;
            double mom = momentum;
            if (p.momentum) mom = p.momentum_f64 ? *(const double *)p.momentum : (double)*(const float *)p.momentum;
            nrm = mom * rm + (1.0 - mom) * mean;
            nrv = mom * rv + (1.0 - mom) * var;
            istd = 1.0 / sqrt(var + eps);
        }
        if (threadIdx.x == 0) {
            co.mean[c] = mean;
            co.a[c] = (double)((const P *)p.scale)[c] * istd;
            co.b[c] = (double)((const P *)p.bias)[c];
            if (p.mean_out) ((P *)p.mean_out)[c] = (P)nrm;
            if (p.var_out) ((P *)p.var_out)[c] = (P)nrv;
            if (p.saved_mean) ((P *)p.saved_mean)[c] = (P)mean;
            if (p.saved_var) ((P *)p.saved_var)[c] = (P)istd;
        }
    }
}

template <class T>
__global__ void bn_apply_k(const T *x, T *y, View v, Coef co)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(e, v.n * v.c * v.s) {
        const int64_t c = channel_of(v, e);
        y[e] = cvt<T>((A)co.a[c] * (cvt<A>(x[e]) - (A)co.mean[c]) + (A)co.b[c]);
    }
}

struct BwdVecs {
    const void *scale, *mean, *var;   /* var: inverse std (saved) or running variance */
    bool running;
    void *dscale, *dbias;
};

template <class T>
__global__ void bn_grad_sums_k(const T *x, const T *dy, View v, BwdVecs p, double eps, bool global, Coef co)
{
    typedef acc_t<T> P;
    __shared__ double sh[32];
    const int64_t cnt = v.n * v.s;
    for (int64_t c = blockIdx.x; c < v.c; c += gridDim.x) {
        const double mu = (double)((const P *)p.mean)[c];
        double istd = (double)((const P *)p.var)[c];
        if (p.running) istd = 1.0 / sqrt(istd + eps);
        double s1 = 0, s2 = 0;
        for (int64_t j = threadIdx.x; j < cnt; j += blockDim.x) {
            const int64_t e = at(v, c, j);
            const double g = cvt<double>(dy[e]);
            s1 += g;
            s2 += g * (cvt<double>(x[e]) - mu);
        }
        const double sdy = block_sum(s1, sh), sdyx = block_sum(s2, sh) * istd;
        if (threadIdx.x == 0) {
            if (p.dscale) ((P *)p.dscale)[c] = (P)sdyx;
            if (p.dbias) ((P *)p.dbias)[c] = (P)sdy;
            const double A = (double)((const P *)p.scale)[c] * istd;
            co.mean[c] = mu;
            co.a[c] = A;
            /* dx = A * (dy - sdy/cnt - xhat * sdyx/cnt), xhat = (x - mean) * istd */
            co.b[c] = global || cnt == 0 ? 0.0 : -A * istd * sdyx / (double)cnt;
            co.d[c] = global || cnt == 0 ? 0.0 : -A * sdy / (double)cnt;
        }
    }
}

template <class T>
__global__ void bn_grad_apply_k(const T *x, const T *dy, T *dx, View v, Coef co)
{
    typedef acc_t<T> A;
    OAR_CU_LOOP(e, v.n * v.c * v.s) {
        const int64_t c = channel_of(v, e);
        dx[e] = cvt<T>((A)co.a[c] * cvt<A>(dy[e]) + (A)co.b[c] * (cvt<A>(x[e]) - (A)co.mean[c]) + (A)co.d[c]);
    }
}

const oar_bn_attrs_t *attrs(oar_kernel_ctx_t *k) { return (const oar_bn_attrs_t *)oar_k_attrs(k); }
/* the dtype of the [C] vectors */
int param_dtype(int dt) { return dt == OAR_FP16 ? OAR_FP32 : dt; }

int bn_view(oar_kernel_ctx_t *k, const oar_tensor_t *x, View *v)
{
    char xs[128];
    oar_shape_str(x->dims, x->ndim, xs, sizeof xs);
    v->nhwc = attrs(k)->layout == OAR_BN_NHWC;
    oar_bn_geom_t g;   /* the view bn_infer checks the [C] vectors with (window.h) */
    if (!oar_win_bn_geom(x->dims, x->ndim, v->nhwc, &g))   /* X is slot 0 of both ops */
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' must have 2 to 5 dims, got %s",
                           nm(oar_k_input_name(k, OAR_BN_X, 0)), xs);
    v->n = g.n; v->c = g.c; v->s = g.s;
    return OAR_OK;
}

/* input `slot` as a [C] vector of dtype dt */
int vec_in(oar_kernel_ctx_t *k, int slot, int64_t c, int dt, const void **p)
{
    const oar_tensor_t *t;
    OAR_TRY(in_tensor_at(k, slot, 0, dt, -1, &t, p));
    if (t->ndim != 1 || t->dims[0] != c) {
        char s[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "%s '%s' is %s %s, expected %s [%lld]", in_slot_name(k, slot),
                           nm(oar_k_input_name(k, slot, 0)),
                           oar_dtype_name(t->dtype), oar_shape_str(t->dims, t->ndim, s, sizeof s), oar_dtype_name(dt),
                           (long long)c);
    }
    return OAR_OK;
}

/* a [C] output if the slot is present (*p NULL otherwise) */
int vec_out(oar_kernel_ctx_t *k, int slot, int dt, int64_t c, void **p)
{
    *p = nullptr;
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) return OAR_OK;
    /* bn_infer sized it [C]; out_data_at checks the count */
    return out_data_at(k, slot, 0, dt, c, p);
}

int coef_alloc(oar_kernel_ctx_t *k, Scratch &s, int64_t c, Coef *co)
{
    OAR_TRY(s.alloc(k, sizeof(double) * 4 * (size_t)(c > 0 ? c : 1), "per-channel coefficients"));
    double *b = s.as<double>();
    *co = Coef{b, b + c, b + 2 * c, b + 3 * c};
    return OAR_OK;
}

unsigned channel_grid(int64_t c) { return (unsigned)(c < 65535 ? (c > 0 ? c : 1) : 65535); }

template <class T>
int bn_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_BN_X, 0, dt, -1, &x, &xd));
    if (!xd) return oar_k_error(k, OAR_ERR_NOT_FOUND, "X '%s' has no data", nm(oar_k_input_name(k, OAR_BN_X, 0)));
    View v;
    OAR_TRY(bn_view(k, x, &v));
    const int64_t C = v.c, cnt = v.n * v.s;
    const int pdt = param_dtype(dt);
    FwdVecs p = {};
    OAR_TRY(vec_in(k, OAR_BN_SCALE, C, pdt, &p.scale));
    OAR_TRY(vec_in(k, OAR_BN_BIAS, C, pdt, &p.bias));
    OAR_TRY(vec_in(k, OAR_BN_MEAN, C, pdt, &p.rmean));
    OAR_TRY(vec_in(k, OAR_BN_VARIANCE, C, pdt, &p.rvar));
    const bool global = attrs(k)->global_stats;
    const double momentum = attrs(k)->momentum, eps = attrs(k)->epsilon;
    if (!global && oar_k_input(k, OAR_BN_MOMENTUM, 0)) {
        const oar_tensor_t *mt;
        OAR_TRY(in_tensor_at(k, OAR_BN_MOMENTUM, 0, -1, 1, &mt, &p.momentum));
        if (!p.momentum || (mt->dtype != OAR_FP32 && mt->dtype != OAR_FP64))
            return oar_k_error(k, OAR_ERR_SHAPE, "MomentumTensor must hold one float value");
        p.momentum_f64 = mt->dtype == OAR_FP64;
    }
    if (!global && cnt == 0) {
        char s[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "X '%s' %s has no values per channel to take batch statistics of",
                           nm(oar_k_input_name(k, OAR_BN_X, 0)), oar_shape_str(x->dims, x->ndim, s, sizeof s));
    }
    if (!oar_k_output(k, OAR_BN_Y, 0)) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Y is missing");
    void *y;   /* sized like X by bn_infer; out_data_at checks the count */
    OAR_TRY(out_data_at(k, OAR_BN_Y, 0, dt, oar_tensor_numel_of(x), &y));
    OAR_TRY(vec_out(k, OAR_BN_MEAN_OUT, pdt, C, &p.mean_out));
    OAR_TRY(vec_out(k, OAR_BN_VARIANCE_OUT, pdt, C, &p.var_out));
    OAR_TRY(vec_out(k, OAR_BN_SAVED_MEAN, pdt, C, &p.saved_mean));
    OAR_TRY(vec_out(k, OAR_BN_SAVED_VARIANCE, pdt, C, &p.saved_var));
    if (C == 0) return OAR_OK;
    Scratch cs;
    Coef co;
    OAR_TRY(coef_alloc(k, cs, C, &co));
    bn_stats_k<T><<<channel_grid(C), 256>>>((const T *)xd, v, p, momentum, eps, global, co);
    OAR_CU_LAUNCH(k, "batch_norm statistics");
    const int64_t n = v.n * v.c * v.s;
    if (n == 0) return OAR_OK;
    bn_apply_k<T><<<grid_for(n), kThreads>>>((const T *)xd, (T *)y, v, co);
    OAR_CU_LAUNCH(k, "batch_norm");
    return OAR_OK;
}

template <class T>
int bn_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_tensor_t *x, *dy;
    const void *xd, *dyd;
    OAR_TRY(in_tensor_at(k, OAR_BNG_X, 0, dt, -1, &x, &xd));
    OAR_TRY(in_tensor_at(k, OAR_BNG_DY, 0, dt, -1, &dy, &dyd));
    if (!xd || !dyd) return oar_k_error(k, OAR_ERR_NOT_FOUND, "%s has no data", xd ? "Y@GRAD" : "X");
    View v;
    OAR_TRY(bn_view(k, x, &v));
    if (dy->ndim != x->ndim || memcmp(dy->dims, x->dims, sizeof(int64_t) * (size_t)x->ndim) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD '%s' is %s but X is %s", nm(oar_k_input_name(k, OAR_BNG_DY, 0)),
                           oar_shape_str(dy->dims, dy->ndim, a, sizeof a), oar_shape_str(x->dims, x->ndim, b, sizeof b));
    }
    const int64_t C = v.c;
    const bool global = attrs(k)->global_stats;
    const double eps = attrs(k)->epsilon;
    const int pdt = param_dtype(dt);
    BwdVecs p = {};
    OAR_TRY(vec_in(k, OAR_BNG_SCALE, C, pdt, &p.scale));
    /* Fluid's grad reads the running statistics under global stats when given */
    p.running = global && oar_k_input(k, OAR_BNG_MEAN, 0) && oar_k_input(k, OAR_BNG_VARIANCE, 0);
    OAR_TRY(vec_in(k, p.running ? OAR_BNG_MEAN : OAR_BNG_SAVED_MEAN, C, pdt, &p.mean));
    OAR_TRY(vec_in(k, p.running ? OAR_BNG_VARIANCE : OAR_BNG_SAVED_VARIANCE, C, pdt, &p.var));
    OAR_TRY(vec_out(k, OAR_BNG_DSCALE, pdt, C, &p.dscale));
    OAR_TRY(vec_out(k, OAR_BNG_DBIAS, pdt, C, &p.dbias));
    oar_tensor_t *dxt = oar_k_output(k, OAR_BNG_DX, 0);
    void *dx = nullptr;
    if (dxt) {   /* sized like X by bn_grad_infer */
        OAR_TRY(out_data_at(k, OAR_BNG_DX, 0, dt, oar_tensor_numel_of(x), &dx));
    }
    if (C == 0) return OAR_OK;
    Scratch cs;
    Coef co;
    OAR_TRY(coef_alloc(k, cs, C, &co));
    bn_grad_sums_k<T><<<channel_grid(C), 256>>>((const T *)xd, (const T *)dyd, v, p, eps, global, co);
    OAR_CU_LAUNCH(k, "batch_norm_grad sums");
    const int64_t n = v.n * v.c * v.s;
    if (!dx || n == 0) return OAR_OK;
    bn_grad_apply_k<T><<<grid_for(n), kThreads>>>((const T *)xd, (const T *)dyd, (T *)dx, v, co);
    OAR_CU_LAUNCH(k, "batch_norm_grad");
    return OAR_OK;
}

#define BN_REG(SFX, T, DT)                                                                 \
    int batch_norm_##SFX(oar_kernel_ctx_t *k) { return bn_fwd<T>(k, DT); }                 \
    int batch_norm_grad_##SFX(oar_kernel_ctx_t *k) { return bn_bwd<T>(k, DT); }            \
    OAR_REGISTER_KERNEL("batch_norm", OAR_PLACE_CUDA, DT, batch_norm_##SFX)                  \
    OAR_REGISTER_KERNEL("batch_norm_grad", OAR_PLACE_CUDA, DT, batch_norm_grad_##SFX)
BN_REG(f16, __half, OAR_FP16)
BN_REG(f32, float, OAR_FP32)
BN_REG(f64, double, OAR_FP64)

}  // namespace
