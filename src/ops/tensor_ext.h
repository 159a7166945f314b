/* tensor_ext.h — slots and decoded attrs of Paddle 2.x's where,
 * index_select, gather_nd and cumsum (src/ops/tensor_ext.c) and their grads,
 * shared with the CPU kernels (kernels/cpu/tensor_ext.c). */
#ifndef OAR_OPS_TENSOR_EXT_H
#define OAR_OPS_TENSOR_EXT_H
#include "op.h"

/* where: Condition, X, Y -> Out; grad: Condition, X, Y, Out@GRAD -> X@GRAD, Y@GRAD */
enum { OAR_WHERE_COND = 0, OAR_WHERE_X = 1, OAR_WHERE_Y = 2, OAR_WHERE_DOUT = 3 };
enum { OAR_WHERE_OUT = 0 };
enum { OAR_WHERE_DX = 0, OAR_WHERE_DY = 1 };

/* index_select: X, Index -> Out (attr dim); grad: X, Index, Out@GRAD -> X@GRAD */
enum { OAR_ISEL_X = 0, OAR_ISEL_INDEX = 1, OAR_ISEL_DOUT = 2 };
enum { OAR_ISEL_OUT = 0 };
enum { OAR_ISEL_DX = 0 };
typedef struct { int dim; } oar_isel_attrs_t;

/* gather_nd: X, Index -> Out; grad: X, Index, Out@GRAD -> X@GRAD */
enum { OAR_GND_X = 0, OAR_GND_INDEX = 1, OAR_GND_DOUT = 2 };
enum { OAR_GND_OUT = 0 };
enum { OAR_GND_DX = 0 };

/* cumsum: X -> Out; its grad is a cumsum of Out@GRAD in the other direction */
enum { OAR_CUMSUM_X = 0 };
enum { OAR_CUMSUM_OUT = 0 };
typedef struct { int axis; bool flatten, exclusive, reverse; } oar_cumsum_attrs_t;
#endif
