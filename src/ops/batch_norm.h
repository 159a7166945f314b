/* batch_norm.h — slots and decoded attributes of batch_norm and
 * batch_norm_grad (src/ops/batch_norm.c), read by every place's kernels. */
#ifndef OAR_OPS_BATCH_NORM_H
#define OAR_OPS_BATCH_NORM_H
#include "op.h"

enum { OAR_BN_X = 0, OAR_BN_SCALE, OAR_BN_BIAS, OAR_BN_MEAN, OAR_BN_VARIANCE, OAR_BN_MOMENTUM };
enum { OAR_BN_Y = 0, OAR_BN_MEAN_OUT, OAR_BN_VARIANCE_OUT, OAR_BN_SAVED_MEAN, OAR_BN_SAVED_VARIANCE,
       OAR_BN_RESERVE };
enum { OAR_BNG_X = 0, OAR_BNG_SCALE, OAR_BNG_BIAS, OAR_BNG_MEAN, OAR_BNG_VARIANCE, OAR_BNG_SAVED_MEAN,
       OAR_BNG_SAVED_VARIANCE, OAR_BNG_RESERVE, OAR_BNG_DY };
enum { OAR_BNG_DX = 0, OAR_BNG_DSCALE, OAR_BNG_DBIAS };

/* data_layout: the choices and their codes (AnyLayout reads as NCHW) */
#define OAR_BN_LAYOUTS "NCHW|NHWC|AnyLayout"
enum { OAR_BN_NCHW = 0, OAR_BN_NHWC = 1, OAR_BN_ANY_LAYOUT = 2 };

typedef struct oar_bn_attrs {
    float momentum, epsilon;
    int layout;            /* OAR_BN_NCHW/NHWC/ANY_LAYOUT */
    /* normalize with the running statistics: use_global_stats, or is_test
     * without trainable_statistics */
    bool global_stats;
} oar_bn_attrs_t;
#endif
