/* optimizer.c — parameter update ops (no gradients): sgd, momentum, adam,
 * adagrad, rmsprop, adamax, adadelta, decayed_adagrad. Kernels in
 * kernels/cpu/optimizer.c.
 *
 * Each updates its state in place: ParamOut names the same variable as Param,
 * MomentOut as Moment, and so on. Slots, attrs and formulas follow Fluid 1.x.
 * Grad may hold SELECTED_ROWS (sparse rows of a [height, ...] parameter);
 * shapes of a sparse Grad are checked by the kernels.
 *
 * adam also takes Beta1PowOut/Beta2PowOut (optional) and, when they are given,
 * advances the beta powers itself (BetaPowOut = BetaPow * beta), as Fluid 1.8
 * does, so one op is a whole Adam step. adamax follows Fluid and leaves
 * Beta1Pow to the caller (a scale op after it). */
#include "op.h"
#include "optimizer.h"
#include "paddle_attrs.h"

#include <float.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }

/* An optimizer's shape contract, checked at compile and run time. */
typedef struct {
    const char *const *same;     /* inputs shaped like Param (Grad excepted when sparse) */
    const char *const *scalars;  /* inputs of exactly one element */
    const char *const *pairs;    /* in, out, in, out, ...: out gets in's shape */
} opt_shape_t;

static bool numel_is_one(const int64_t *d, int nd, bool *known)
{
    *known = true;
    bool one = true;
    for (int i = 0; i < nd; i++) {
        if (d[i] < 0) *known = false;
        else if (d[i] != 1) one = false;
    }
    return one;
}

static int opt_infer(oar_infer_ctx_t *c, const opt_shape_t *s)
{
    int pn;
    const int64_t *pd = oar_ic_in_dims(c, "Param", 0, &pn);
    if (!pd) return OAR_ERR_SHAPE;
    int pdt = oar_ic_in_dtype(c, "Param", 0);
    char b0[128], b1[128];
    for (const char *const *sl = s->same; *sl; sl++) {
        if (oar_ic_in_count(c, *sl) == 0) continue;   /* a dispensable input */
        if (strcmp(*sl, "Grad") == 0 && oar_ic_in_var_type(c, "Grad", 0) == OAR_VAR_SELECTED_ROWS)
            continue;
        int n;
        const int64_t *d = oar_ic_in_dims(c, *sl, 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        bool same = n == pn;
        for (int i = 0; same && i < n; i++) same = oar_dim_eq(d[i], pd[i]);
        if (!same)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s, expected %s like "
                                "Param '%s'", *sl, nm(oar_ic_in_name(c, *sl, 0)),
                                oar_shape_str(d, n, b0, sizeof b0), oar_shape_str(pd, pn, b1, sizeof b1),
                                nm(oar_ic_in_name(c, "Param", 0)));
        int dt = oar_ic_in_dtype(c, *sl, 0);
        if (dt >= 0 && pdt >= 0 && dt != pdt)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s like "
                                "Param '%s'", *sl, nm(oar_ic_in_name(c, *sl, 0)),
                                nm(oar_dtype_name(dt)), nm(oar_dtype_name(pdt)),
                                nm(oar_ic_in_name(c, "Param", 0)));
    }
    for (const char *const *sl = s->scalars; *sl; sl++) {
        if (oar_ic_in_count(c, *sl) == 0) continue;
        int n;
        const int64_t *d = oar_ic_in_dims(c, *sl, 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        bool known;
        if (!numel_is_one(d, n, &known))
            return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; it must hold exactly "
                                "one element", *sl, nm(oar_ic_in_name(c, *sl, 0)),
                                oar_shape_str(d, n, b0, sizeof b0));
        int dt = oar_ic_in_dtype(c, *sl, 0);
        if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected float32 or "
                                "float64", *sl, nm(oar_ic_in_name(c, *sl, 0)), nm(oar_dtype_name(dt)));
    }
    for (const char *const *pr = s->pairs; pr[0]; pr += 2) {
        if (oar_ic_out_count(c, pr[1]) == 0) continue;   /* a dispensable output */
        if (oar_ic_in_count(c, pr[0]) == 0)
            return oar_ic_error(c, OAR_ERR_INVALID, "output %s '%s' is given but input %s is not",
                                pr[1], nm(oar_ic_out_name(c, pr[1], 0)), pr[0]);
        int n;
        const int64_t *d = oar_ic_in_dims(c, pr[0], 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)n);
        OAR_TRY(oar_ic_set_out(c, pr[1], 0, dims, n, oar_ic_in_dtype(c, pr[0], 0)));
    }
    return OAR_OK;
}

/* name##_same / name##_scalars / name##_pairs are NULL-terminated name lists */
#define OPT_INFER(name)                                                         \
    static int name##_infer(oar_infer_ctx_t *c) {                               \
        static const opt_shape_t s = {name##_same, name##_scalars, name##_pairs}; \
        return opt_infer(c, &s);                                                \
    }

/* slot orders must match optimizer.h's enums */
#define OPT_DEF(name, ins, outs, attr_defs, dec)                                \
    static const oar_op_def_t name##_def = {                                    \
        .type = #name, .inputs = ins, .outputs = outs, .attrs = attr_defs,      \
        .infer = name##_infer, .grad = NULL, .dtype_slot = "Param",             \
        .attrs_size = sizeof(oar_opt_attrs_t), .decode = dec};                  \
    OAR_REGISTER_OP(name##_def)

/* decode steps: each reads the attributes its op declares */
static int dec_none(oar_decode_ctx_t *d, void *out) { (void)out; return oar_dec_status(d); }
static int dec_momentum(oar_decode_ctx_t *d, void *out)
{
    oar_opt_attrs_t *a = out;
    a->mu = oar_dec_f(d, "mu");
    a->use_nesterov = oar_dec_b(d, "use_nesterov");
    return oar_dec_status(d);
}
static int dec_adam(oar_decode_ctx_t *d, void *out)
{
    oar_opt_attrs_t *a = out;
    a->beta1 = oar_dec_f(d, "beta1");
    a->beta2 = oar_dec_f(d, "beta2");
    a->epsilon = oar_dec_f(d, "epsilon");
    a->lazy_mode = oar_dec_b(d, "lazy_mode");
    return oar_dec_status(d);
}
static int dec_adagrad(oar_decode_ctx_t *d, void *out)
{
    ((oar_opt_attrs_t *)out)->epsilon = oar_dec_f(d, "epsilon");
    return oar_dec_status(d);
}
static int dec_rmsprop(oar_decode_ctx_t *d, void *out)
{
    oar_opt_attrs_t *a = out;
    a->epsilon = oar_dec_f(d, "epsilon");
    a->decay = oar_dec_f(d, "decay");
    a->momentum = oar_dec_f(d, "momentum");
    a->centered = oar_dec_b(d, "centered");
    return oar_dec_status(d);
}
static int dec_adamax(oar_decode_ctx_t *d, void *out)
{
    oar_opt_attrs_t *a = out;
    a->beta1 = oar_dec_f(d, "beta1");
    a->beta2 = oar_dec_f(d, "beta2");
    a->epsilon = oar_dec_f(d, "epsilon");
    return oar_dec_status(d);
}
static int dec_adadelta(oar_decode_ctx_t *d, void *out)
{
    oar_opt_attrs_t *a = out;
    a->rho = oar_dec_f(d, "rho");
    a->epsilon = oar_dec_f(d, "epsilon");
    return oar_dec_status(d);
}
static int dec_decayed_adagrad(oar_decode_ctx_t *d, void *out)
{
    oar_opt_attrs_t *a = out;
    a->decay = oar_dec_f(d, "decay");
    a->epsilon = oar_dec_f(d, "epsilon");
    return oar_dec_status(d);
}

#define EPS_ATTR(d) {.name = "epsilon", .type = OAR_ATTR_FLOAT, .def = (d), .min = 0, .max = FLT_MAX}
#define UNIT_ATTR(n, d) {.name = (n), .type = OAR_ATTR_FLOAT, .def = (d), .min = 0, .max = 1}

/* ---- sgd --------------------------------------------------------------- */
static const oar_slot_def_t sgd_in[] = {{"Param", 0}, {"Grad", 0}, {"LearningRate", 0}, {NULL, 0}};
static const oar_slot_def_t sgd_out[] = {{"ParamOut", 0}, {NULL, 0}};
static const char *const sgd_same[] = {"Grad", NULL};
static const char *const sgd_scalars[] = {"LearningRate", NULL};
static const char *const sgd_pairs[] = {"Param", "ParamOut", NULL, NULL};
OPT_INFER(sgd)
static const oar_attr_def_t sgd_attrs[] = {
    OAR_PA_B("multi_precision", 0), OAR_PA_USE_MKLDNN, OAR_PA_ONEDNN, {.name = NULL}};
OPT_DEF(sgd, sgd_in, sgd_out, sgd_attrs, dec_none)

/* ---- momentum ---------------------------------------------------------- */
static const oar_slot_def_t momentum_in[] = {
    {"Param", 0}, {"Grad", 0}, {"Velocity", 0}, {"LearningRate", 0}, {NULL, 0}};
static const oar_slot_def_t momentum_out[] = {{"ParamOut", 0}, {"VelocityOut", 0}, {NULL, 0}};
static const oar_attr_def_t momentum_attrs[] = {
    {.name = "mu", .type = OAR_ATTR_FLOAT, .required = true},
    {.name = "use_nesterov", .type = OAR_ATTR_BOOLEAN, .def = 0},
    /* Paddle 2.x: an L2 term folded into the update, a gradient scale
     * (refused unless default: src/attr_check.c) */
    OAR_PA_S("regularization_method", ""), OAR_PA_F("regularization_coeff", 0.0),
    OAR_PA_F("rescale_grad", 1.0), OAR_PA_B("multi_precision", 0),
    {.name = NULL}};
static const char *const momentum_same[] = {"Grad", "Velocity", NULL};
static const char *const momentum_scalars[] = {"LearningRate", NULL};
static const char *const momentum_pairs[] = {"Param", "ParamOut", "Velocity", "VelocityOut",
                                             NULL, NULL};
OPT_INFER(momentum)
OPT_DEF(momentum, momentum_in, momentum_out, momentum_attrs, dec_momentum)

/* ---- adam -------------------------------------------------------------- */
static const oar_slot_def_t adam_in[] = {
    {"Param", 0}, {"Grad", 0}, {"LearningRate", 0}, {"Moment1", 0}, {"Moment2", 0},
    {"Beta1Pow", 0}, {"Beta2Pow", 0},
    {"Beta1Tensor", OAR_SLOT_DISPENSABLE}, {"Beta2Tensor", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_slot_def_t adam_out[] = {
    {"ParamOut", 0}, {"Moment1Out", 0}, {"Moment2Out", 0},
    {"Beta1PowOut", OAR_SLOT_DISPENSABLE}, {"Beta2PowOut", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t adam_attrs[] = {
    UNIT_ATTR("beta1", 0.9), UNIT_ATTR("beta2", 0.999), EPS_ATTR(1e-8),
    /* lazy_mode: a sparse Grad updates only its rows (moments of the other
     * rows do not decay); otherwise every row steps with a zero gradient */
    {.name = "lazy_mode", .type = OAR_ATTR_BOOLEAN, .def = 0},
    /* Fluid's CPU threading threshold; accepted so Fluid programs load, the
     * CPU kernel's threading does not depend on it */
    {.name = "min_row_size_to_use_multithread", .type = OAR_ATTR_LONG, .def = 1000},
    /* Paddle 2.x; amsgrad and use_global_beta_pow change the update and are
     * refused unless false (src/attr_check.c) */
    OAR_PA_B("multi_precision", 0), OAR_PA_B("use_global_beta_pow", 0), OAR_PA_B("amsgrad", 0),
    {.name = NULL}};
static const char *const adam_same[] = {"Grad", "Moment1", "Moment2", NULL};
static const char *const adam_scalars[] = {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor",
                                           "Beta2Tensor", NULL};
static const char *const adam_pairs[] = {"Param", "ParamOut", "Moment1", "Moment1Out", "Moment2",
                                         "Moment2Out", "Beta1Pow", "Beta1PowOut", "Beta2Pow",
                                         "Beta2PowOut", NULL, NULL};
OPT_INFER(adam)
OPT_DEF(adam, adam_in, adam_out, adam_attrs, dec_adam)

/* ---- adagrad ----------------------------------------------------------- */
static const oar_slot_def_t adagrad_in[] = {
    {"Param", 0}, {"Grad", 0}, {"Moment", 0}, {"LearningRate", 0}, {NULL, 0}};
static const oar_slot_def_t adagrad_out[] = {{"ParamOut", 0}, {"MomentOut", 0}, {NULL, 0}};
static const oar_attr_def_t adagrad_attrs[] = {EPS_ATTR(1e-6), OAR_PA_B("multi_precision", 0), {.name = NULL}};
static const char *const adagrad_same[] = {"Grad", "Moment", NULL};
static const char *const adagrad_scalars[] = {"LearningRate", NULL};
static const char *const adagrad_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut", NULL, NULL};
OPT_INFER(adagrad)
OPT_DEF(adagrad, adagrad_in, adagrad_out, adagrad_attrs, dec_adagrad)

/* ---- rmsprop ----------------------------------------------------------- */
static const oar_slot_def_t rmsprop_in[] = {
    {"Param", 0}, {"MeanSquare", 0}, {"MeanGrad", OAR_SLOT_DISPENSABLE}, {"LearningRate", 0},
    {"Grad", 0}, {"Moment", 0}, {NULL, 0}};
static const oar_slot_def_t rmsprop_out[] = {
    {"ParamOut", 0}, {"MomentOut", 0}, {"MeanSquareOut", 0},
    {"MeanGradOut", OAR_SLOT_DISPENSABLE}, {NULL, 0}};
static const oar_attr_def_t rmsprop_attrs[] = {
    EPS_ATTR(1e-10), UNIT_ATTR("decay", 0.9),
    {.name = "momentum", .type = OAR_ATTR_FLOAT, .def = 0.0},
    {.name = "centered", .type = OAR_ATTR_BOOLEAN, .def = 0},
    OAR_PA_B("multi_precision", 0), {.name = NULL}};
static const char *const rmsprop_same[] = {"Grad", "MeanSquare", "Moment", "MeanGrad", NULL};
static const char *const rmsprop_scalars[] = {"LearningRate", NULL};
static const char *const rmsprop_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut",
                                            "MeanSquare", "MeanSquareOut", "MeanGrad",
                                            "MeanGradOut", NULL, NULL};
static const opt_shape_t rmsprop_shape = {rmsprop_same, rmsprop_scalars, rmsprop_pairs};
static int rmsprop_infer(oar_infer_ctx_t *c)
{
    if (oar_attr_b(oar_ic_op(c), "centered") &&
        (oar_ic_in_count(c, "MeanGrad") == 0 || oar_ic_out_count(c, "MeanGradOut") == 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "centered rmsprop needs input MeanGrad and "
                            "output MeanGradOut");
    return opt_infer(c, &rmsprop_shape);
}
OPT_DEF(rmsprop, rmsprop_in, rmsprop_out, rmsprop_attrs, dec_rmsprop)

/* ---- adamax ------------------------------------------------------------ */
static const oar_slot_def_t adamax_in[] = {
    {"Param", 0}, {"Grad", 0}, {"LearningRate", 0}, {"Moment", 0}, {"InfNorm", 0},
    {"Beta1Pow", 0}, {NULL, 0}};
static const oar_slot_def_t adamax_out[] = {
    {"ParamOut", 0}, {"MomentOut", 0}, {"InfNormOut", 0}, {NULL, 0}};
static const oar_attr_def_t adamax_attrs[] = {
    UNIT_ATTR("beta1", 0.9), UNIT_ATTR("beta2", 0.999), EPS_ATTR(1e-8), OAR_PA_B("multi_precision", 0),
    {.name = NULL}};
static const char *const adamax_same[] = {"Grad", "Moment", "InfNorm", NULL};
static const char *const adamax_scalars[] = {"LearningRate", "Beta1Pow", NULL};
static const char *const adamax_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut", "InfNorm",
                                           "InfNormOut", NULL, NULL};
OPT_INFER(adamax)
OPT_DEF(adamax, adamax_in, adamax_out, adamax_attrs, dec_adamax)

/* ---- adadelta ---------------------------------------------------------- */
static const oar_slot_def_t adadelta_in[] = {
    {"Param", 0}, {"Grad", 0}, {"AvgSquaredGrad", 0}, {"AvgSquaredUpdate", 0}, {NULL, 0}};
static const oar_slot_def_t adadelta_out[] = {
    {"ParamOut", 0}, {"AvgSquaredGradOut", 0}, {"AvgSquaredUpdateOut", 0}, {NULL, 0}};
static const oar_attr_def_t adadelta_attrs[] = {
    UNIT_ATTR("rho", 0.95), EPS_ATTR(1e-6), OAR_PA_B("multi_precision", 0), {.name = NULL}};
static const char *const adadelta_same[] = {"Grad", "AvgSquaredGrad", "AvgSquaredUpdate", NULL};
static const char *const adadelta_scalars[] = {NULL};
static const char *const adadelta_pairs[] = {"Param", "ParamOut", "AvgSquaredGrad",
                                             "AvgSquaredGradOut", "AvgSquaredUpdate",
                                             "AvgSquaredUpdateOut", NULL, NULL};
OPT_INFER(adadelta)
OPT_DEF(adadelta, adadelta_in, adadelta_out, adadelta_attrs, dec_adadelta)

/* ---- decayed_adagrad --------------------------------------------------- */
static const oar_attr_def_t decayed_adagrad_attrs[] = {
    UNIT_ATTR("decay", 0.95), EPS_ATTR(1e-6), {.name = NULL}};
static const char *const decayed_adagrad_same[] = {"Grad", "Moment", NULL};
static const char *const decayed_adagrad_scalars[] = {"LearningRate", NULL};
static const char *const decayed_adagrad_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut",
                                                    NULL, NULL};
OPT_INFER(decayed_adagrad)
OPT_DEF(decayed_adagrad, adagrad_in, adagrad_out, decayed_adagrad_attrs, dec_decayed_adagrad)
