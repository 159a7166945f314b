/* softmax.h — slots and decoded attributes of softmax and log_softmax
 * (src/ops/softmax.c), read by every place's kernels. */
#ifndef OAR_OPS_SOFTMAX_H
#define OAR_OPS_SOFTMAX_H
#include "op.h"

enum { OAR_SM_X = 0 };
enum { OAR_SM_OUT = 0 };
/* <op>_grad: Out, Out@GRAD -> X@GRAD */
enum { OAR_SMG_OUT = 0, OAR_SMG_DOUT = 1 };
enum { OAR_SMG_DX = 0 };
typedef struct oar_softmax_attrs { int axis; } oar_softmax_attrs_t;
#endif
