/* index_ops.h — slots and decoded attributes of gather, one_hot, top_k,
 * arg_max, arg_min and their grads (src/ops/index_ops.c), read by every
 * place's kernels. */
#ifndef OAR_OPS_INDEX_OPS_H
#define OAR_OPS_INDEX_OPS_H
#include "op.h"

/* X is input 0 of every op here; Out (forward) or X@GRAD (grads) output 0 */
enum { OAR_IDX_X = 0 };
enum { OAR_IDX_OUT = 0, OAR_IDXG_DX = 0 };
/* gather: X, Index; gather_grad: X, Index, Out@GRAD */
enum { OAR_GATHER_INDEX = 1, OAR_GATHERG_DOUT = 2 };
/* one_hot: X, depth_tensor */
enum { OAR_ONE_HOT_DEPTH = 1 };
/* top_k: X, K -> Out, Indices; top_k_grad: X, Indices, Out@GRAD */
enum { OAR_TOPK_K = 1 };
enum { OAR_TOPK_INDICES = 1 };
enum { OAR_TOPKG_INDICES = 1, OAR_TOPKG_DOUT = 2 };

typedef struct oar_one_hot_attrs { int dtype; bool allow_out_of_range; } oar_one_hot_attrs_t;
typedef struct oar_arg_attrs { int64_t axis; int dtype; bool flatten; } oar_arg_attrs_t;
#endif
