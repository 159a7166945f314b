/* activation_ext.h — decoded attributes of the activations in
 * src/ops/activation_ext.c, read by the kernels. Their slots are those of
 * every unary activation (OAR_UNARY_* in activation.h). */
#ifndef OAR_OPS_ACTIVATION_EXT_H
#define OAR_OPS_ACTIVATION_EXT_H
#include "ops/activation.h"

/* up to three FLOAT attrs, p[0..2] in the order the op's formula names them
 * (hard_swish: threshold, scale, offset); unused ones are 0 */
typedef struct oar_act_ext_attrs { double p[3]; } oar_act_ext_attrs_t;
#endif
