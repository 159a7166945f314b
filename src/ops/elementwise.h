/* elementwise.h — slots of elementwise_<op> (X, Y -> Out, as every
 * broadcasting op: broadcast.h) and of their grad ops, by index. */
#ifndef OAR_OPS_ELEMENTWISE_H
#define OAR_OPS_ELEMENTWISE_H
#include "broadcast.h"

/* elementwise_<op>_grad: inputs X, Y, Out (div only), Out@GRAD; outputs X@GRAD, Y@GRAD */
enum { OAR_EWG_X = 0, OAR_EWG_Y = 1, OAR_EWG_OUT = 2, OAR_EWG_DOUT = 3 };
enum { OAR_EWG_DX = 0, OAR_EWG_DY = 1 };
#endif
