/*
 * double_grad_io.h — the argument helpers of the double-grad kernels
 * (kernels/cpu/double_grad.c, double_grad_conv.c, double_grad_ew.c,
 * double_grad_norm.c): an optional input of n values, an output of n
 * values set to zero.
 */
#ifndef OAR_KERNELS_CPU_DOUBLE_GRAD_IO_H
#define OAR_KERNELS_CPU_DOUBLE_GRAD_IO_H
#include <string.h>
#include "op.h"

/* *p: input `slot` checked to hold n values of dt, or NULL when absent */
static inline int opt_in(oar_kernel_ctx_t *k, int slot, const char *name, int dt, int64_t n, const void **p)
{
    *p = NULL;
    if (!oar_k_input(k, slot, 0)) return OAR_OK;
    return oar_k_input_sized(k, slot, name, dt, n, p);
}

/* *p: output `slot` of n values (es bytes each) set to zero (NULL when the
 * program does not want it) */
static inline int zeroed(oar_kernel_ctx_t *k, int slot, const char *name, int dt, size_t es, int64_t n, void **p)
{
    OAR_TRY(oar_k_output_sized(k, slot, name, dt, n, true, p));
    if (*p && n > 0) memset(*p, 0, (size_t)n * es);
    return OAR_OK;
}
#endif
