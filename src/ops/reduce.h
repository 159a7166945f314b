/* reduce.h — slots and decoded attributes of mean and reduce_{sum,mean,max,
 * min,prod} (src/ops/reduce.c), read by every place's kernels. */
#ifndef OAR_OPS_REDUCE_H
#define OAR_OPS_REDUCE_H
#include "op.h"

/* mean, reduce_*: X -> Out */
enum { OAR_RED_X = 0 };
enum { OAR_RED_OUT = 0 };
/* reduce_*_grad: X, Out (max/min only), Out@GRAD -> X@GRAD */
enum { OAR_REDG_X = 0, OAR_REDG_OUT = 1, OAR_REDG_DOUT = 2 };
/* mean_grad: X, Out@GRAD -> X@GRAD */
enum { OAR_MEANG_X = 0, OAR_MEANG_DOUT = 1 };
enum { OAR_REDG_DX = 0 };

/* dim: the reduced axes as given (negative from the end), never empty: an
 * empty attr decodes to Fluid's default {0} */
typedef struct oar_reduce_attrs {
    oar_ints_t dim;
    bool keep_dim, reduce_all;
} oar_reduce_attrs_t;
#endif
