/* optimizer.h — slots and decoded attributes of the parameter update ops
 * (src/ops/optimizer.c), read by every place's kernels. Param is input 0
 * and ParamOut output 0 of every one. */
#ifndef OAR_OPS_OPTIMIZER_H
#define OAR_OPS_OPTIMIZER_H
#include "op.h"

enum { OAR_OPT_PARAM = 0 };
enum { OAR_OPT_PARAM_OUT = 0 };

enum { OAR_SGD_GRAD = 1, OAR_SGD_LR };
enum { OAR_MOMENTUM_GRAD = 1, OAR_MOMENTUM_VELOCITY, OAR_MOMENTUM_LR };
enum { OAR_MOMENTUM_VELOCITY_OUT = 1 };
enum { OAR_ADAM_GRAD = 1, OAR_ADAM_LR, OAR_ADAM_MOMENT1, OAR_ADAM_MOMENT2, OAR_ADAM_BETA1_POW,
       OAR_ADAM_BETA2_POW, OAR_ADAM_BETA1_TENSOR, OAR_ADAM_BETA2_TENSOR };
enum { OAR_ADAM_MOMENT1_OUT = 1, OAR_ADAM_MOMENT2_OUT, OAR_ADAM_BETA1_POW_OUT, OAR_ADAM_BETA2_POW_OUT };
/* adagrad and decayed_adagrad */
enum { OAR_ADAGRAD_GRAD = 1, OAR_ADAGRAD_MOMENT, OAR_ADAGRAD_LR };
enum { OAR_ADAGRAD_MOMENT_OUT = 1 };
enum { OAR_RMSPROP_MEAN_SQUARE = 1, OAR_RMSPROP_MEAN_GRAD, OAR_RMSPROP_LR, OAR_RMSPROP_GRAD,
       OAR_RMSPROP_MOMENT };
enum { OAR_RMSPROP_MOMENT_OUT = 1, OAR_RMSPROP_MEAN_SQUARE_OUT, OAR_RMSPROP_MEAN_GRAD_OUT };
enum { OAR_ADAMAX_GRAD = 1, OAR_ADAMAX_LR, OAR_ADAMAX_MOMENT, OAR_ADAMAX_INF_NORM, OAR_ADAMAX_BETA1_POW };
enum { OAR_ADAMAX_MOMENT_OUT = 1, OAR_ADAMAX_INF_NORM_OUT };
enum { OAR_ADADELTA_GRAD = 1, OAR_ADADELTA_AVG_SQ_GRAD, OAR_ADADELTA_AVG_SQ_UPDATE };
enum { OAR_ADADELTA_AVG_SQ_GRAD_OUT = 1, OAR_ADADELTA_AVG_SQ_UPDATE_OUT };

/* One struct for every optimizer; each op's decode step fills the fields of
 * the attributes it declares (the others stay 0). */
typedef struct oar_opt_attrs {
    float mu;                          /* momentum */
    float beta1, beta2, epsilon;       /* adam, adamax; epsilon also adagrad, rmsprop, ... */
    float decay, momentum;             /* rmsprop (decay also decayed_adagrad) */
    float rho;                         /* adadelta */
    bool use_nesterov, lazy_mode, centered;
} oar_opt_attrs_t;
#endif
