/* lookup_table.h — slots and decoded attributes of lookup_table and
 * lookup_table_grad (src/ops/lookup_table.c), read by every place's kernels. */
#ifndef OAR_OPS_LOOKUP_TABLE_H
#define OAR_OPS_LOOKUP_TABLE_H
#include "op.h"

/* both ops: W, Ids first; the grad adds Out@GRAD */
enum { OAR_LT_W = 0, OAR_LT_IDS = 1, OAR_LTG_DOUT = 2 };
enum { OAR_LT_OUT = 0 };
enum { OAR_LTG_DW = 0 };
typedef struct oar_lt_attrs { int64_t padding_idx; bool is_sparse; } oar_lt_attrs_t;
#endif
