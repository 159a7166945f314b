/* shape_ops.h — slots and decoded attributes of the ops in
 * src/ops/shape_ops.c, read by the kernels. */
#ifndef OAR_OPS_SHAPE_OPS_H
#define OAR_OPS_SHAPE_OPS_H
#include "op.h"

/* views and transpose: X (, Shape, ...) -> Out, XShape (the v2 ops) */
enum { OAR_SHAPE_X = 0 };
enum { OAR_SHAPE_OUT = 0, OAR_SHAPE_XSHAPE = 1 };
/* their grads: X or XShape, Out@GRAD -> X@GRAD */
enum { OAR_SHAPEG_DOUT = 1 };
enum { OAR_SHAPEG_DX = 0 };
/* concat: X (list), AxisTensor -> Out; concat_grad: X, AxisTensor, Out@GRAD
 * -> X@GRAD (list); split: X, AxisTensor, SectionsTensorList -> Out (list) */
enum { OAR_CONCAT_X = 0, OAR_CONCAT_AXIS = 1, OAR_CONCATG_DOUT = 2 };
enum { OAR_CONCAT_OUT = 0, OAR_CONCATG_DX = 0 };
/* stack: X (list) -> Y; stack_grad: X, Y@GRAD -> X@GRAD (list) */
enum { OAR_STACK_X = 0, OAR_STACKG_DY = 1 };
enum { OAR_STACK_Y = 0, OAR_STACKG_DX = 0 };

/* concat, split, stack: attr axis, which AxisTensor (slot axis_slot; -1
 * when the op has none) overrides */
typedef struct oar_axis_attrs { int axis; int axis_slot; } oar_axis_attrs_t;
/* transpose(2) and grads: the permutation (validated by inference) */
typedef struct oar_transpose_attrs { oar_ints_t axis; } oar_transpose_attrs_t;
#endif
