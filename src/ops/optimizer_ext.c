/* optimizer_ext.c — inference of lamb, lars_momentum, ftrl,
 * proximal_adagrad, proximal_gd and dpsgd (declared in optimizer_ext.ops,
 * CPU kernels in kernels/cpu/optimizer_ext.c). They have no gradients.
 *
 * Their shape contracts are checked by oar_opt_infer, the same code as the
 * optimizers of optimizer.c: state inputs shaped like Param, one-element
 * LearningRate and beta powers, each output shaped like its input. */
#include "op.h"
#include "ops/optimizer_util.h"
#include "ops/optimizer_ext.h"

#include <float.h>
#include <stddef.h>

/* the kernels address Param/ParamOut by OAR_OPT_PARAM/OAR_OPT_PARAM_OUT */
#define OPT_SLOT0(op) ((int)OAR_##op##_PARAM == 0 && (int)OAR_##op##_PARAM_OUT == 0)
_Static_assert(OPT_SLOT0(LAMB) && OPT_SLOT0(LARS_MOMENTUM) && OPT_SLOT0(FTRL) &&
               OPT_SLOT0(PROXIMAL_ADAGRAD) && OPT_SLOT0(PROXIMAL_GD) && OPT_SLOT0(DPSGD),
               "Param is every optimizer's input 0 and ParamOut its output 0");

#define OPT_INFER(name)                                                              \
    static int name##_infer(oar_infer_ctx_t *c) {                                    \
        static const oar_opt_shape_t s = {name##_same, name##_scalars, name##_pairs}; \
        return oar_opt_infer(c, &s);                                                 \
    }

static const char *const lamb_same[] = {"Grad", "Moment1", "Moment2", NULL};
static const char *const lamb_scalars[] = {"LearningRate", "Beta1Pow", "Beta2Pow", NULL};
static const char *const lamb_pairs[] = {"Param", "ParamOut", "Moment1", "Moment1Out", "Moment2",
                                         "Moment2Out", NULL, NULL};
OPT_INFER(lamb)

static const char *const lars_momentum_same[] = {"Grad", "Velocity", NULL};
static const char *const lars_momentum_scalars[] = {"LearningRate", NULL};
static const char *const lars_momentum_pairs[] = {"Param", "ParamOut", "Velocity", "VelocityOut",
                                                  NULL, NULL};
OPT_INFER(lars_momentum)

static const char *const ftrl_same[] = {"Grad", "SquaredAccumulator", "LinearAccumulator", NULL};
static const char *const ftrl_scalars[] = {"LearningRate", NULL};
static const char *const ftrl_pairs[] = {"Param", "ParamOut", "SquaredAccumulator", "SquaredAccumOut",
                                         "LinearAccumulator", "LinearAccumOut", NULL, NULL};
OPT_INFER(ftrl)

static const char *const proximal_adagrad_same[] = {"Grad", "Moment", NULL};
static const char *const proximal_adagrad_scalars[] = {"LearningRate", NULL};
static const char *const proximal_adagrad_pairs[] = {"Param", "ParamOut", "Moment", "MomentOut",
                                                     NULL, NULL};
OPT_INFER(proximal_adagrad)

static const char *const proximal_gd_same[] = {"Grad", NULL};
static const char *const proximal_gd_scalars[] = {"LearningRate", NULL};
static const char *const proximal_gd_pairs[] = {"Param", "ParamOut", NULL, NULL};
OPT_INFER(proximal_gd)

static const char *const dpsgd_same[] = {"Grad", NULL};
static const char *const dpsgd_scalars[] = {"LearningRate", NULL};
static const char *const dpsgd_pairs[] = {"Param", "ParamOut", NULL, NULL};
OPT_INFER(dpsgd)

#define OAR_OPS_DEFINE
#include "ops/optimizer_ext.h"   /* the tables, the decoders and the registrations */
