/* fill_util.h — how fill_constant's str_value reads (the slots and decoded
 * attrs are generated from fill.ops); shared with the CPU and CUDA kernels. */
#ifndef OAR_OPS_FILL_UTIL_H
#define OAR_OPS_FILL_UTIL_H
#include "ops/fill.h"

/* oar_fill_attrs_t.str_kind: parsed once at prepare, for the decoded dtype */
enum { OAR_FILL_STR_NONE, OAR_FILL_STR_INT, OAR_FILL_STR_FLOAT, OAR_FILL_STR_BAD };
#endif
