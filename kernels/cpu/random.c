/* random.c — CPU kernels of uniform_random, gaussian_random and
 * truncated_gaussian_random. Draws are sequential so a seed fixes the values
 * independently of the thread count. The output dtype is the `dtype` attr
 * (these ops have no input to dispatch on), so one kernel serves both
 * registered dtypes. */
#include "op.h"
#include "ops/random.h"

#include <math.h>

enum { DIST_UNIFORM, DIST_GAUSSIAN, DIST_TRUNCATED };

typedef struct { oar_rng_t local; bool use_local; } gen_t;

static double gen_uniform(gen_t *g) { return g->use_local ? oar_rng_uniform_r(&g->local) : oar_rng_uniform(); }
static double gen_normal(gen_t *g) { return g->use_local ? oar_rng_normal_r(&g->local) : oar_rng_normal(); }

static int random_kernel(oar_kernel_ctx_t *k, int dist)
{
    const oar_random_attrs_t *at = oar_k_attrs(k);
    int dtype = at->dtype;
    int seed = at->seed;
    gen_t g = {.use_local = seed != 0};
    if (g.use_local) oar_rng_seed(&g.local, (uint64_t)seed);
    oar_tensor_t *out = oar_k_output(k, OAR_RND_OUT, 0);
    if (!out) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    if (dtype != OAR_FP32 && dtype != OAR_FP64)
        return oar_k_error(k, OAR_ERR_DTYPE, "attr dtype = %d must be float32 or float64", dtype);
    void *data = oar_k_output_data(k, OAR_RND_OUT, 0, dtype);
    if (!data) return OAR_ERR_NOMEM;
    int64_t n = oar_tensor_numel_of(out);
    const double a = at->a, b = at->b;   /* uniform: lo, width; gaussian: mean, std */
    float *f = dtype == OAR_FP32 ? data : NULL;
    double *d = dtype == OAR_FP64 ? data : NULL;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (dist == DIST_UNIFORM) {
            v = a + b * gen_uniform(&g);
        } else {
            double z = gen_normal(&g);
            /* resample beyond two standard deviations; P(accept) ~ 0.954 */
            while (dist == DIST_TRUNCATED && fabs(z) > 2.0) z = gen_normal(&g);
            v = a + b * z;
        }
        if (f) f[i] = (float)v; else d[i] = v;
    }
    return OAR_OK;
}

#define RND_REG(name, dist) \
    static int name##_f32(oar_kernel_ctx_t *k) { return random_kernel(k, dist); } \
    static int name##_f64(oar_kernel_ctx_t *k) { return random_kernel(k, dist); } \
    OAR_REGISTER_KERNEL(#name, OAR_PLACE_CPU, OAR_FP32, name##_f32) \
    OAR_REGISTER_KERNEL(#name, OAR_PLACE_CPU, OAR_FP64, name##_f64)

RND_REG(uniform_random, DIST_UNIFORM)
RND_REG(gaussian_random, DIST_GAUSSIAN)
RND_REG(truncated_gaussian_random, DIST_TRUNCATED)
