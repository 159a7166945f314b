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
 * Beta1Pow to the caller (a scale op after it).
 *
 * The ops are declared in optimizer.ops; this file holds their inference. */
#include "op.h"
#include "ops/optimizer_util.h"   /* generated slots and oar_opt_attrs_t, OAR_OPT_PARAM */

#include <float.h>
#include <string.h>

static const char *nm(const char *s) { return s ? s : "?"; }


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

/* shared with optimizer_ext.c (declared in optimizer_util.h) */
int oar_opt_infer(oar_infer_ctx_t *c, const oar_opt_shape_t *s)
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
        static const oar_opt_shape_t s = {name##_same, name##_scalars, name##_pairs}; \
        return oar_opt_infer(c, &s);                                                \
    }

/* the kernels' shared code addresses Param and ParamOut of every op by
 * OAR_OPT_PARAM/OAR_OPT_PARAM_OUT (optimizer_util.h): 0 */
_Static_assert(OAR_OPT_PARAM == 0 && OAR_OPT_PARAM_OUT == 0, "optimizer_util.h");
#define OPT_SLOT0(op) ((int)OAR_##op##_PARAM == 0 && (int)OAR_##op##_PARAM_OUT == 0)
_Static_assert(OPT_SLOT0(SGD) && OPT_SLOT0(MOMENTUM) && OPT_SLOT0(ADAM) && OPT_SLOT0(ADAGRAD) &&
               OPT_SLOT0(RMSPROP) && OPT_SLOT0(ADAMAX) && OPT_SLOT0(ADADELTA),
               "Param is every optimizer's input 0 and ParamOut its output 0");

/* ---- sgd --------------------------------------------------------------- */
static const char *const sgd_same[] = {"Grad", NULL};
static const char *const sgd_scalars[] = {"LearningRate", NULL};
static const char *const sgd_pairs[] = {"Param", "ParamOut", NULL, NULL};
OPT_INFER(sgd)

/* ---- momentum ---------------------------------------------------------- */
static const char *const momentum_same[] = {"Grad", "Velocity", NULL};
static const char *const momentum_scalars[] = {"LearningRate", NULL};
static const char *const momentum_pairs[] = {"Param", "ParamOut", "Velocity", "VelocityOut",
                                             NULL, NULL};
OPT_INFER(momentum)

/* ---- adam -------------------------------------------------------------- */
static const char *const adam_same[] = {"Grad", "Moment1", "Moment2", NULL};
static const char *const adam_scalars[] = {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor",
                                           "Beta2Tensor", NULL};
static const char *const adam_pairs[] = {"Param", "ParamOut", "Moment1", "Moment1Out", "Moment2",
                                         "Moment2Out", "Beta1Pow", "Beta1PowOut", "Beta2Pow",
                                         "Beta2PowOut", NULL, NULL};
OPT_INFER(adam)

/* ---- adagrad ----------------------------------------------------------- */
static const char *const adagrad_same[] = {"Grad", "Moment", NULL};
static const char *const adagrad_scalars[] = {"LearningRate", NULL};
static const char *const adagrad_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut", NULL, NULL};
OPT_INFER(adagrad)

/* ---- rmsprop ----------------------------------------------------------- */
static const char *const rmsprop_same[] = {"Grad", "MeanSquare", "Moment", "MeanGrad", NULL};
static const char *const rmsprop_scalars[] = {"LearningRate", NULL};
static const char *const rmsprop_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut",
                                            "MeanSquare", "MeanSquareOut", "MeanGrad",
                                            "MeanGradOut", NULL, NULL};
static const oar_opt_shape_t rmsprop_shape = {rmsprop_same, rmsprop_scalars, rmsprop_pairs};
static int rmsprop_infer(oar_infer_ctx_t *c)
{
    const oar_opt_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->centered &&
        (oar_ic_in_count(c, "MeanGrad") == 0 || oar_ic_out_count(c, "MeanGradOut") == 0))
        return oar_ic_error(c, OAR_ERR_INVALID, "centered rmsprop needs input MeanGrad and "
                            "output MeanGradOut");
    return oar_opt_infer(c, &rmsprop_shape);
}

/* ---- adamax ------------------------------------------------------------ */
static const char *const adamax_same[] = {"Grad", "Moment", "InfNorm", NULL};
static const char *const adamax_scalars[] = {"LearningRate", "Beta1Pow", NULL};
static const char *const adamax_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut", "InfNorm",
                                           "InfNormOut", NULL, NULL};
OPT_INFER(adamax)

/* ---- adadelta ---------------------------------------------------------- */
static const char *const adadelta_same[] = {"Grad", "AvgSquaredGrad", "AvgSquaredUpdate", NULL};
static const char *const adadelta_scalars[] = {NULL};
static const char *const adadelta_pairs[] = {"Param", "ParamOut", "AvgSquaredGrad",
                                             "AvgSquaredGradOut", "AvgSquaredUpdate",
                                             "AvgSquaredUpdateOut", NULL, NULL};
OPT_INFER(adadelta)

/* ---- decayed_adagrad --------------------------------------------------- */
static const char *const decayed_adagrad_same[] = {"Grad", "Moment", NULL};
static const char *const decayed_adagrad_scalars[] = {"LearningRate", NULL};
static const char *const decayed_adagrad_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut",
                                                    NULL, NULL};
OPT_INFER(decayed_adagrad)

#define OAR_OPS_DEFINE
#include "ops/optimizer.h"   /* the tables, the decoders and the registrations */
