/* norm_ext.h — slots and decoded attrs of instance_norm, group_norm and
 * p_norm (src/ops/norm_ext.c), shared with kernels/cpu/norm_ext.c. */
#ifndef OAR_OPS_NORM_EXT_H
#define OAR_OPS_NORM_EXT_H
#include "op.h"

/* instance_norm / group_norm: X, Scale, Bias -> Y, then the statistics
 * (instance_norm: SavedMean, SavedVariance = 1/std, [N*C]; group_norm: Mean,
 * Variance, [N, G]); grads: X, Scale, Bias, Y@GRAD -> X@GRAD, Scale@GRAD, Bias@GRAD */
enum { OAR_GN_X = 0, OAR_GN_SCALE = 1, OAR_GN_BIAS = 2, OAR_GNG_DY = 3 };
enum { OAR_GN_Y = 0, OAR_GN_MEAN = 1, OAR_GN_VAR = 2 };
enum { OAR_GNG_DX = 0, OAR_GNG_DSCALE = 1, OAR_GNG_DBIAS = 2 };
typedef struct { float epsilon; int groups; bool instance; } oar_gn_attrs_t;

/* p_norm: X -> Out; grad: X, Out, Out@GRAD -> X@GRAD */
enum { OAR_PN_X = 0, OAR_PNG_OUT = 1, OAR_PNG_DOUT = 2 };
enum { OAR_PN_OUT = 0 };
typedef struct { float porder, epsilon; int axis; bool keepdim, asvector; } oar_pnorm_attrs_t;
#endif
