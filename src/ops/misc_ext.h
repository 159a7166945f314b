/* misc_ext.h — slots and decoded attrs of fill_any_like, argsort and
 * reduce_all/reduce_any (src/ops/misc_ext.c), shared with the CPU kernels. */
#ifndef OAR_OPS_MISC_EXT_H
#define OAR_OPS_MISC_EXT_H
#include "op.h"

enum { OAR_FAL_X = 0 };
enum { OAR_FAL_OUT = 0 };
typedef struct { float value; int dtype; } oar_fal_attrs_t;

/* argsort: X -> Out (sorted), Indices (int64); grad: X, Indices, Out@GRAD -> X@GRAD */
enum { OAR_AS_X = 0, OAR_ASG_INDICES = 1, OAR_ASG_DOUT = 2 };
enum { OAR_AS_OUT = 0, OAR_AS_INDICES = 1 };
enum { OAR_ASG_DX = 0 };
typedef struct { int axis; bool descending; } oar_argsort_attrs_t;

/* reduce_all / reduce_any: X (bool) -> Out (bool) */
enum { OAR_RB_X = 0 };
enum { OAR_RB_OUT = 0 };
/* all: the op is reduce_all; dim: the reduced axes as given (negative from
 * the end; INTS or LONGS), never empty: an empty attr decodes to {0} */
typedef struct { bool all, reduce_all; int ndim; int64_t dim[OAR_MAX_DIMS]; } oar_rbool_attrs_t;
#endif
