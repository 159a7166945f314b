/* optimizer_args.h — how the optimizer kernels (optimizer.c, optimizer_ext.c)
 * fetch their arguments, each checked against Param with an error naming the
 * slot and variable. Defined in optimizer.c. */
#ifndef OAR_KERNELS_CPU_OPTIMIZER_ARGS_H
#define OAR_KERNELS_CPU_OPTIMIZER_ARGS_H
#include "op.h"

/* input `slot` (`name` in messages) of the param dtype and, when numel >= 0,
 * Param's element count */
int oar_opt_state_in(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel, const void **p);
/* a one-element float32/float64 input (learning rate, beta powers) */
int oar_opt_scalar_in(oar_kernel_ctx_t *k, int slot, const char *name, double *v);
/* output `slot` holding numel elements of dtype, written in full */
int oar_opt_state_out(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel, void **p);
#endif
