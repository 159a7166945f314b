/* random.c — random tensors: uniform_random, gaussian_random,
 * truncated_gaussian_random. Kernels in kernels/cpu/random.c.
 *
 * seed == 0 draws from the global generator (whose state is checkpointed);
 * a nonzero seed reseeds an op-local generator on every execution, so each
 * run of the op yields the same values, as in Fluid. */
#include "op.h"
#include "random.h"
#include "paddle_attrs.h"
#include "attr_tensor.h"

static const oar_slot_def_t rnd_in[] = {{NULL, 0}};
static const oar_slot_def_t rnd_out[] = {{"Out", 0}, {NULL, 0}};

static int rnd_infer(oar_infer_ctx_t *c)
{
    const oar_op_desc_t *op = oar_ic_op(c);
    int dt = oar_attr_i(op, "dtype");
    if (dt != OAR_FP32 && dt != OAR_FP64) {
        const char *nm = oar_dtype_name(dt);
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d (%s) must be float32 (5) or "
                            "float64 (6)", dt, nm ? nm : "unknown");
    }
    int n = 0;
    int64_t dims[OAR_MAX_DIMS];
    /* INTS, or LONGS as Paddle 2.x writes it (src/attr_check.c) */
    if (!oar_attr_int_list(op, "shape", dims, OAR_MAX_DIMS, &n))
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape is not an INTS/LONGS list of at most %d dims",
                            OAR_MAX_DIMS);
    if (n == 0) return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape must not be empty");
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape[%d] = %lld must be >= 0", i, (long long)dims[i]);
    int64_t numel;
    if (oar_shape_numel(dims, n, &numel) != OAR_OK)
        return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape: %s", oar_last_error());
    if (oar_attr_i(op, "seed") < 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr seed = %d must be >= 0", oar_attr_i(op, "seed"));
    return oar_ic_set_out(c, "Out", 0, dims, n, dt);
}

static int uniform_decode(oar_decode_ctx_t *d, void *out)
{
    oar_random_attrs_t *a = out;
    a->dtype = oar_dec_i(d, "dtype");
    a->seed = oar_dec_i(d, "seed");
    a->a = oar_dec_f(d, "min");
    a->b = (double)oar_dec_f(d, "max") - a->a;
    return oar_dec_status(d);
}

static int gaussian_decode(oar_decode_ctx_t *d, void *out)
{
    oar_random_attrs_t *a = out;
    a->dtype = oar_dec_i(d, "dtype");
    a->seed = oar_dec_i(d, "seed");
    a->a = oar_dec_f(d, "mean");
    a->b = oar_dec_f(d, "std");
    return oar_dec_status(d);
}

static int uniform_infer(oar_infer_ctx_t *c)
{
    float lo = oar_attr_f(oar_ic_op(c), "min"), hi = oar_attr_f(oar_ic_op(c), "max");
    if (!(lo <= hi))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr min = %g must not exceed attr max = %g", lo, hi);
    return rnd_infer(c);
}

static int gaussian_infer(oar_infer_ctx_t *c)
{
    float std = oar_attr_f(oar_ic_op(c), "std");
    if (!(std >= 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "attr std = %g must be >= 0", std);
    return rnd_infer(c);
}

static const oar_attr_def_t uniform_attrs[] = {
    {.name = "shape", .type = OAR_ATTR_INTS, .required = true},
    {.name = "min", .type = OAR_ATTR_FLOAT, .def = -1.0},
    {.name = "max", .type = OAR_ATTR_FLOAT, .def = 1.0},
    {.name = "seed", .type = OAR_ATTR_INT, .def = 0},
    {.name = "dtype", .type = OAR_ATTR_INT, .def = OAR_FP32},
    /* Paddle 2.x: a diagonal of diag_val; refused unless diag_num is 0 */
    OAR_PA_I("diag_num", 0), OAR_PA_I("diag_step", 0), OAR_PA_F("diag_val", 1.0),
    {.name = NULL}};

static const oar_attr_def_t gaussian_attrs[] = {
    {.name = "shape", .type = OAR_ATTR_INTS, .required = true},
    {.name = "mean", .type = OAR_ATTR_FLOAT, .def = 0.0},
    {.name = "std", .type = OAR_ATTR_FLOAT, .def = 1.0},
    {.name = "seed", .type = OAR_ATTR_INT, .def = 0},
    {.name = "dtype", .type = OAR_ATTR_INT, .def = OAR_FP32},
    OAR_PA_USE_MKLDNN, OAR_PA_ONEDNN,
    /* Paddle 3: truncated_gaussian_random's bounds in stds; only the +-2 the
     * kernel draws within is honoured (src/attr_check.c) */
    OAR_PA_F("a", -2.0), OAR_PA_F("b", 2.0),
    {.name = NULL}};

static const oar_op_def_t uniform_random_def = {
    .type = "uniform_random", .inputs = rnd_in, .outputs = rnd_out, .attrs = uniform_attrs,
    .infer = uniform_infer, .grad = NULL,
    .attrs_size = sizeof(oar_random_attrs_t), .decode = uniform_decode};
OAR_REGISTER_OP(uniform_random_def)

static const oar_op_def_t gaussian_random_def = {
    .type = "gaussian_random", .inputs = rnd_in, .outputs = rnd_out, .attrs = gaussian_attrs,
    .infer = gaussian_infer, .grad = NULL,
    .attrs_size = sizeof(oar_random_attrs_t), .decode = gaussian_decode};
OAR_REGISTER_OP(gaussian_random_def)

static const oar_op_def_t truncated_gaussian_random_def = {
    .type = "truncated_gaussian_random", .inputs = rnd_in, .outputs = rnd_out,
    .attrs = gaussian_attrs, .infer = gaussian_infer, .grad = NULL,
    .attrs_size = sizeof(oar_random_attrs_t), .decode = gaussian_decode};
OAR_REGISTER_OP(truncated_gaussian_random_def)
