/* fill.h — slots and decoded attributes of fill_constant and
 * fill_constant_batch_size_like (src/ops/fill.c), read by the kernels. */
#ifndef OAR_OPS_FILL_H
#define OAR_OPS_FILL_H
#include "op.h"

/* fill_constant: ValueTensor, ShapeTensor, ShapeTensorList -> Out */
enum { OAR_FILL_VALUE_TENSOR = 0, OAR_FILL_SHAPE_TENSOR = 1, OAR_FILL_SHAPE_LIST = 2 };
/* fill_constant_batch_size_like: Input -> Out */
enum { OAR_FILLB_INPUT = 0 };
enum { OAR_FILL_OUT = 0 };

/* how str_value reads (parsed once at prepare, for the decoded dtype) */
enum { OAR_FILL_STR_NONE, OAR_FILL_STR_INT, OAR_FILL_STR_FLOAT, OAR_FILL_STR_BAD };
typedef struct oar_fill_attrs {
    int dtype;
    float value;
    int value_slot;        /* ValueTensor's slot; -1 when the op has none */
    int str_kind;          /* OAR_FILL_STR_* */
    int64_t str_int;
    double str_float;
    const char *str_value; /* for the error message of a bad one */
    bool force_cpu;        /* Out stays in host memory (the CUDA kernel fills it there) */
} oar_fill_attrs_t;
#endif
