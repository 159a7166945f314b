/* random.c — random tensors: uniform_random, gaussian_random,
 * truncated_gaussian_random, declared in random.ops (slots, attributes,
 * docs). Kernels in kernels/cpu/random.c and kernels/cuda/random.cu.
 *
 * seed == 0 draws from the global generator (whose state is checkpointed);
 * a nonzero seed reseeds an op-local generator on every execution, so each
 * run of the op yields the same values, as in Fluid. */
#include "op.h"
#include "attr_tensor.h"
#include "ops/random.h"   /* generated from random.ops */

/* the decoder's last step: attr shape, INTS or LONGS as Paddle 2.x writes it
 * (src/attr_check.c), which no single oar_dec_* reads */
static void rnd_finish(oar_decode_ctx_t *d, oar_random_attrs_t *a)
{
    a->shape_ok = oar_attr_int_list(oar_dec_op(d), "shape", a->shape, OAR_MAX_DIMS, &a->shape_n);
}

static int rnd_infer(oar_infer_ctx_t *c)
{
    const oar_random_attrs_t *a = oar_ic_attrs(c);
    int dt = a->dtype;
    if (dt != OAR_FP32 && dt != OAR_FP64) {
        const char *nm = oar_dtype_name(dt);
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d (%s) must be float32 (5) or "
                            "float64 (6)", dt, nm ? nm : "unknown");
    }
    int n = a->shape_n;
    const int64_t *dims = a->shape;
    if (!a->shape_ok)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape is not an INTS/LONGS list of at most %d dims",
                            OAR_MAX_DIMS);
    if (n == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape must not be empty");
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape[%d] = %lld must be >= 0", i, (long long)dims[i]);
    int64_t numel;
    if (oar_shape_numel(dims, n, &numel) != OAR_OK)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape: %s", oar_last_error());
    if (a->seed < 0) return oar_ic_error(c, OAR_ERR_INVALID, "attr seed = %d must be >= 0", a->seed);
    return oar_ic_set_out(c, "Out", 0, dims, n, dt);
}

static int uniform_infer(oar_infer_ctx_t *c)
{
    const oar_random_attrs_t *a = oar_ic_attrs(c);
    float lo = a->min, hi = a->max;
    if (!(lo <= hi))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr min = %g must not exceed attr max = %g", lo, hi);
    return rnd_infer(c);
}

static int gaussian_infer(oar_infer_ctx_t *c)
{
    float std = (float)((const oar_random_attrs_t *)oar_ic_attrs(c))->b;
    if (!(std >= 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr std = %g must be >= 0", std);
    return rnd_infer(c);
}

#define OAR_OPS_DEFINE
#include "ops/random.h"   /* the tables, decoders and registrations */
