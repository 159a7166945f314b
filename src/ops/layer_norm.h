/* layer_norm.h — slots and decoded attributes of layer_norm and
 * layer_norm_grad (src/ops/layer_norm.c), read by every place's kernels. */
#ifndef OAR_OPS_LAYER_NORM_H
#define OAR_OPS_LAYER_NORM_H
#include "op.h"

enum { OAR_LN_X = 0, OAR_LN_SCALE, OAR_LN_BIAS };
enum { OAR_LN_Y = 0, OAR_LN_MEAN, OAR_LN_VARIANCE };
enum { OAR_LNG_X = 0, OAR_LNG_MEAN, OAR_LNG_VARIANCE, OAR_LNG_SCALE, OAR_LNG_BIAS, OAR_LNG_DY };
enum { OAR_LNG_DX = 0, OAR_LNG_DSCALE, OAR_LNG_DBIAS };

typedef struct oar_ln_attrs { float epsilon; int begin_norm_axis; } oar_ln_attrs_t;
#endif
