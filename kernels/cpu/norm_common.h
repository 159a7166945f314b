/* norm_common.h — input and output plumbing shared by the CPU kernels of
 * the normalization ops (batch_norm.c, layer_norm.c): both read X (input
 * slot 0 of every one of their ops) and Y@GRAD whole and write Y / X@GRAD
 * with X's shape. Slots are the definitions' indices (src/ops/batch_norm.ops,
 * src/ops/layer_norm.ops); names are for messages. */
#ifndef OAR_KERNELS_CPU_NORM_COMMON_H
#define OAR_KERNELS_CPU_NORM_COMMON_H
#include "op.h"

/* input `slot` (X, Y@GRAD; `name` in errors) holding data */
int oar_norm_in(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t **t);
/* X (input slot 0) has the kernel's dtype dt */
int oar_norm_check_dtype(oar_kernel_ctx_t *k, const oar_tensor_t *x, int dt);
/* Y@GRAD (input dy_slot) has X's dtype and dims */
int oar_norm_check_dy(oar_kernel_ctx_t *k, int dy_slot, const oar_tensor_t *dy, const oar_tensor_t *x);
/* writable data of output `slot` with the given dims (resized when they
 * differ); NULL with *rc OK when the output is absent, else with *rc set */
void *oar_norm_out(oar_kernel_ctx_t *k, int slot, const int64_t *dims, int nd, int dt, int *rc);
#endif
