/* loss_basic.h — slots of square_error_cost and its grad
 * (src/ops/loss_basic.c), read by every place's kernels. */
#ifndef OAR_OPS_LOSS_BASIC_H
#define OAR_OPS_LOSS_BASIC_H

/* both ops: X, Y first; the grad adds Out@GRAD */
enum { OAR_SEC_X = 0, OAR_SEC_Y = 1, OAR_SECG_DOUT = 2 };
enum { OAR_SEC_OUT = 0 };
enum { OAR_SECG_DX = 0, OAR_SECG_DY = 1 };
#endif
