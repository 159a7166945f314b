/* tensor_ops.h — slots and decoded attributes of scale, cast, sum,
 * fill_zeros_like and increment (src/ops/tensor_ops.c), read by the kernels. */
#ifndef OAR_OPS_TENSOR_OPS_H
#define OAR_OPS_TENSOR_OPS_H
#include "op.h"

/* every op here: X (a list for sum) -> Out; scale also reads ScaleTensor */
enum { OAR_TENSOR_X = 0, OAR_SCALE_TENSOR = 1 };
enum { OAR_TENSOR_OUT = 0 };

typedef struct oar_scale_attrs { float scale, bias; bool bias_after_scale; } oar_scale_attrs_t;
typedef struct oar_cast_attrs { int out_dtype; } oar_cast_attrs_t;
typedef struct oar_increment_attrs { float step; } oar_increment_attrs_t;
#endif
