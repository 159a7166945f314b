/* collective.h — slots and decoded attributes of the collective ops
 * (src/ops/collective.c), read by the CPU kernels. */
#ifndef OAR_OPS_COLLECTIVE_H
#define OAR_OPS_COLLECTIVE_H
#include "op.h"

/* c_allreduce_*, c_broadcast, c_allgather: X -> Out; c_coalesce: X (list)
 * -> Out; c_split_coalesced: X, Ref (list) -> Out (list) */
enum { OAR_COLL_X = 0, OAR_COLL_REF = 1 };
enum { OAR_COLL_OUT = 0 };

/* root: c_broadcast's; nranks: c_allgather's; 0 on the other ops */
typedef struct oar_collective_attrs { int ring_id, root, nranks; } oar_collective_attrs_t;
#endif
