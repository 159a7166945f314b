/* fc.h — Paddle's inference fc op (Input x W + Bias, then an optional relu):
 * slots by index and the decoded attributes (src/ops/fc.c). The predictor
 * builds it from mul + elementwise_add (+ relu) (src/fuse_fc.c). */
#ifndef OAR_OPS_FC_H
#define OAR_OPS_FC_H
#include <stdbool.h>
#include "op.h"

enum { OAR_FC_INPUT = 0, OAR_FC_W = 1, OAR_FC_BIAS = 2 };
enum { OAR_FC_OUT = 0 };
enum { OAR_FC_ACT_NONE = 0, OAR_FC_ACT_RELU = 1 };

typedef struct oar_fc_attrs {
    int in_ncd;            /* in_num_col_dims: Input is flattened to [prod(dims[:n]), prod(dims[n:])] */
    int act;               /* OAR_FC_ACT_* from activation_type */
    bool padding_weights;  /* W is stored [K + 4, N + 4]; the product uses its top-left K x N */
} oar_fc_attrs_t;
#endif
