/* activation.h — slots and decoded attributes of the unary activations
 * (src/ops/activation.c), read by every place's kernels. */
#ifndef OAR_OPS_ACTIVATION_H
#define OAR_OPS_ACTIVATION_H
#include "op.h"

/* forward: X (and pow's optional FactorTensor) -> Out */
enum { OAR_UNARY_X = 0, OAR_UNARY_FACTOR = 1 };
enum { OAR_UNARY_OUT = 0 };
/* "<type>_grad": the forward value the formula reads (X or Out), Out@GRAD,
 * then pow's optional FactorTensor -> X@GRAD */
enum { OAR_UNARY_G_DEP = 0, OAR_UNARY_G_DOUT = 1, OAR_UNARY_G_FACTOR = 2 };
enum { OAR_UNARY_G_DX = 0 };

/* the op's parameters: leaky_relu/elu p1 = alpha; clip p1 = min, p2 = max;
 * pow p1 = factor (FactorTensor overrides it at run time); gelu p1 = 1 for
 * the tanh approximation; others 0 */
typedef struct oar_act_attrs {
    double p1, p2;
    bool tensor_bounds;   /* clip: the Min/Max inputs, when given, replace p1/p2 */
} oar_act_attrs_t;
#endif
