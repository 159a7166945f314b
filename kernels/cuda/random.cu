/*
 * random.cu — CUDA kernels of uniform_random, gaussian_random,
 * truncated_gaussian_random, dropout and dropout_grad.
 *
 * Draws come from the counter-based generator of cuda_common.h: element i
 * is a hash of (key, i), the key one draw of oar's generator per call (or of
 * an op-local generator seeded by the `seed` attr / Seed input), so oar's
 * random seed and checkpointed RNG state fix the values, as on the CPU; the
 * values themselves differ from the CPU's sequential stream. Normals use
 * Box-Muller on two uniforms; the truncated normal redraws (with the next
 * key) beyond two standard deviations. dropout keeps an element when the
 * high 32 bits of its draw are >= dropout_prob * 2^32, and its Mask (uint8)
 * drives the grad, with the CPU kernels' scaling (kernels/cpu/dropout.c).
 */
#include "cuda_common.h"
#include "ops/dropout.h"
#include "ops/random.h"

using namespace oarcu;

namespace {

enum { DIST_UNIFORM, DIST_GAUSSIAN, DIST_TRUNCATED };

/* uniform in (0, 1]: never 0, for the logarithm of Box-Muller */
__device__ inline double uniform_open0(uint64_t key, uint64_t ctr)
{
    return ((double)(ctr_bits(key, ctr) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

__device__ inline double normal_at(uint64_t key, int64_t i)
{
    const double u1 = uniform_open0(key, 2 * (uint64_t)i), u2 = ctr_uniform(key, 2 * (uint64_t)i + 1);
    return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}

template <class T>
__global__ void random_k(T *out, int64_t n, int dist, uint64_t key, double a, double b)
{
    OAR_CU_LOOP(i, n) {
        double v;
        if (dist == DIST_UNIFORM) {
            v = a + b * ctr_uniform(key, (uint64_t)i);
        } else {
            double z = normal_at(key, i);
            /* resample beyond two standard deviations; P(accept) ~ 0.954 */
            for (uint64_t t = 1; dist == DIST_TRUNCATED && fabs(z) > 2.0; t++) z = normal_at(key + t * 0x9e3779b97f4a7c15ull, i);
            v = a + b * z;
        }
        out[i] = (T)v;
    }
}

int random_run(oar_kernel_ctx_t *k, int dist)
{
    const oar_random_attrs_t *at = (const oar_random_attrs_t *)oar_k_attrs(k);
    const int dt = at->dtype, seed = at->seed;
    if (dt != OAR_FP32 && dt != OAR_FP64)
        return oar_k_error(k, OAR_ERR_DTYPE, "attr dtype = %d must be float32 or float64", dt);
    uint64_t key;
    if (seed != 0) {
        oar_rng_t local;
        oar_rng_seed(&local, (uint64_t)seed);
        key = oar_rng_next_r(&local);
    } else {
        key = oar_rng_next();
    }
    void *p;
    OAR_TRY(out_data_at(k, OAR_RND_OUT, 0, dt, -1, &p));
    const int64_t n = oar_tensor_numel_of(oar_k_output(k, OAR_RND_OUT, 0));
    const double a = at->a, b = at->b;   /* uniform: lo, width; gaussian: mean, std (decoded per op) */
    if (n == 0) return OAR_OK;
    if (dt == OAR_FP32) random_k<float><<<grid_for(n), kThreads>>>((float *)p, n, dist, key, a, b);
    else random_k<double><<<grid_for(n), kThreads>>>((double *)p, n, dist, key, a, b);
    OAR_CU_LAUNCH(k, "random");
    return OAR_OK;
}

#define RND_REG(NAME, DIST)                                                       \
    int NAME##_f32(oar_kernel_ctx_t *k) { return random_run(k, DIST); }           \
    int NAME##_f64(oar_kernel_ctx_t *k) { return random_run(k, DIST); }           \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CUDA, OAR_FP32, NAME##_f32)              \
    OAR_REGISTER_KERNEL(#NAME, OAR_PLACE_CUDA, OAR_FP64, NAME##_f64)

RND_REG(uniform_random, DIST_UNIFORM)
RND_REG(gaussian_random, DIST_GAUSSIAN)
RND_REG(truncated_gaussian_random, DIST_TRUNCATED)

/* ---- dropout --------------------------------------------------------------------
 * dropout_implementation is a declared choice: checked at insertion and
 * decoded to its code once, at prepare. */

template <class T>
__global__ void do_scale_k(const T *x, T *y, int64_t n, T s)
{
    OAR_CU_LOOP(i, n) y[i] = x[i] * s;
}

/* keep = draw >= t (t = p 2^32; keep_all / keep_none for p <= 0 / p >= 1) */
template <class T>
__global__ void do_fwd_k(const T *x, T *y, uint8_t *mask, int64_t n, uint64_t key, uint64_t t, int mode, T f)
{
    OAR_CU_LOOP(i, n) {
        const bool keep = mode > 0 ? true : mode < 0 ? false : (ctr_bits(key, (uint64_t)i) >> 32) >= t;
        if (mask) mask[i] = keep;
        y[i] = keep ? x[i] * f : T(0);
    }
}

template <class T>
__global__ void do_mask_k(const T *g, const uint8_t *m, T *d, int64_t n, T f)
{
    OAR_CU_LOOP(i, n) d[i] = m[i] ? g[i] * f : T(0);
}

template <class T>
int do_fwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_dropout_attrs_t *at = (const oar_dropout_attrs_t *)oar_k_attrs(k);
    const oar_tensor_t *x;
    const void *xd;
    OAR_TRY(in_tensor_at(k, OAR_DO_X, 0, dt, -1, &x, &xd));
    const double p = at->prob;
    if (!(p >= 0 && p <= 1)) return oar_k_error(k, OAR_ERR_INVALID, "attr dropout_prob = %g must be in [0, 1]", p);
    const bool test = at->is_test, up = at->impl == OAR_DO_IMPL_UPSCALE_IN_TRAIN;
    const int64_t n = oar_tensor_numel_of(x);
    if (!oar_k_output(k, OAR_DO_OUT, 0)) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    void *y;   /* sized like X by do_infer; out_data_at checks the count */
    OAR_TRY(out_data_at(k, OAR_DO_OUT, 0, dt, n, &y));
    if (test) {
        const double f = up ? 1.0 : 1.0 - p;
        if (n == 0 || (f == 1.0 && y == xd)) return OAR_OK;
        if (f == 1.0) {
            OAR_CU(k, cudaMemcpyAsync(y, xd, sizeof(T) * (size_t)n, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
            return OAR_OK;
        }
        do_scale_k<T><<<grid_for(n), kThreads>>>((const T *)xd, (T *)y, n, (T)f);
        OAR_CU_LAUNCH(k, "dropout (test)");
        return OAR_OK;
    }
    oar_tensor_t *mt = oar_k_output(k, OAR_DO_MASK, 0);
    void *mask = nullptr;
    if (mt) {   /* sized like X by do_infer (training) */
        OAR_TRY(out_data_at(k, OAR_DO_MASK, 0, OAR_UINT8, n, &mask));
    }
    uint64_t key;
    const oar_tensor_t *st = oar_k_nin(k, OAR_DO_SEED) > 0 ? oar_k_input(k, OAR_DO_SEED, 0) : nullptr;
    if (st) {
        const void *sd;
        if (st->dtype != OAR_INT32 && st->dtype != OAR_INT64)
            return oar_k_error(k, OAR_ERR_INVALID, "Seed '%s' must hold one int32 or int64 value",
                               nm(oar_k_input_name(k, OAR_DO_SEED, 0)));
        OAR_TRY(in_tensor_at(k, OAR_DO_SEED, 0, st->dtype, -1, &st, &sd));
        if (!sd) return oar_k_error(k, OAR_ERR_INVALID, "Seed '%s' must hold one int32 or int64 value",
                                    nm(oar_k_input_name(k, OAR_DO_SEED, 0)));
        int64_t s = 0;
        if (st->dtype == OAR_INT32) {
            int32_t s32;
            OAR_TRY(to_host(k, &s32, sd, sizeof s32, "reading Seed"));
            s = s32;
        } else {
            OAR_TRY(to_host(k, &s, sd, sizeof s, "reading Seed"));
        }
        oar_rng_t local;
        oar_rng_seed(&local, (uint64_t)s);
        key = oar_rng_next_r(&local);
    } else if (at->fix_seed) {
        oar_rng_t local;
        oar_rng_seed(&local, (uint64_t)(int64_t)at->seed);
        key = oar_rng_next_r(&local);
    } else {
        key = oar_rng_next();
    }
    if (n == 0) return OAR_OK;
    const int mode = p <= 0 ? 1 : p >= 1 ? -1 : 0;
    const uint64_t t = (uint64_t)(p * 4294967296.0);
    /* upscale with p == 1 keeps nothing: the factor is irrelevant */
    const double f = up ? (p < 1 ? 1.0 / (1.0 - p) : 0.0) : 1.0;
    do_fwd_k<T><<<grid_for(n), kThreads>>>((const T *)xd, (T *)y, (uint8_t *)mask, n, key, t, mode, (T)f);
    OAR_CU_LAUNCH(k, "dropout");
    return OAR_OK;
}

template <class T>
int do_bwd(oar_kernel_ctx_t *k, int dt)
{
    const oar_dropout_attrs_t *at = (const oar_dropout_attrs_t *)oar_k_attrs(k);
    if (at->is_test)
        return oar_k_error(k, OAR_ERR_INVALID, "the grad op needs is_test = false (no Mask is kept in test mode)");
    const oar_tensor_t *m, *dy;
    const void *md, *dyd;
    OAR_TRY(in_tensor_at(k, OAR_DOG_DOUT, 0, dt, -1, &dy, &dyd));
    const int64_t n = oar_tensor_numel_of(dy);
    OAR_TRY(in_tensor_at(k, OAR_DOG_MASK, 0, OAR_UINT8, n, &m, &md));
    if (m->ndim != dy->ndim || memcmp(m->dims, dy->dims, sizeof(int64_t) * (size_t)dy->ndim) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Mask '%s' %s and Out@GRAD '%s' %s must have the same shape",
                           nm(oar_k_input_name(k, OAR_DOG_MASK, 0)), oar_shape_str(m->dims, m->ndim, a, sizeof a),
                           nm(oar_k_input_name(k, OAR_DOG_DOUT, 0)), oar_shape_str(dy->dims, dy->ndim, b, sizeof b));
    }
    oar_tensor_t *dxt = oar_k_output(k, OAR_DOG_DX, 0);
    if (!dxt) return OAR_OK;
    void *dx;   /* sized like Out@GRAD by do_grad_infer */
    OAR_TRY(out_data_at(k, OAR_DOG_DX, 0, dt, n, &dx));
    if (n == 0) return OAR_OK;
    const double p = at->prob;
    const double f = at->impl == OAR_DO_IMPL_UPSCALE_IN_TRAIN ? (p < 1 ? 1.0 / (1.0 - p) : 0.0) : 1.0;
    do_mask_k<T><<<grid_for(n), kThreads>>>((const T *)dyd, (const uint8_t *)md, (T *)dx, n, (T)f);
    OAR_CU_LAUNCH(k, "dropout_grad");
    return OAR_OK;
}

int dropout_f32(oar_kernel_ctx_t *k) { return do_fwd<float>(k, OAR_FP32); }
int dropout_f64(oar_kernel_ctx_t *k) { return do_fwd<double>(k, OAR_FP64); }
int dropout_grad_f32(oar_kernel_ctx_t *k) { return do_bwd<float>(k, OAR_FP32); }
int dropout_grad_f64(oar_kernel_ctx_t *k) { return do_bwd<double>(k, OAR_FP64); }
OAR_REGISTER_KERNEL("dropout", OAR_PLACE_CUDA, OAR_FP32, dropout_f32)
OAR_REGISTER_KERNEL("dropout", OAR_PLACE_CUDA, OAR_FP64, dropout_f64)
OAR_REGISTER_KERNEL("dropout_grad", OAR_PLACE_CUDA, OAR_FP32, dropout_grad_f32)
OAR_REGISTER_KERNEL("dropout_grad", OAR_PLACE_CUDA, OAR_FP64, dropout_grad_f64)

}  // namespace
