/*
 * rearrange_common.h — helpers that the element-moving CPU kernels of
 * kernels/cpu/rearrange.c and kernels/cpu/rearrange2.c share: a checked
 * input, products of dim ranges, row-major strides and index walking.
 */
#ifndef OAR_KERNELS_CPU_REARRANGE_COMMON_H
#define OAR_KERNELS_CPU_REARRANGE_COMMON_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"

static inline const char *nm(const char *s) { return s ? s : "?"; }

/* input `slot` (`name` in messages) holding a value */
static inline int input(oar_kernel_ctx_t *k, int slot, int i, const char *name, oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, i);
    if (!*t || (*t)->dtype < 0 || (oar_tensor_numel_of(*t) > 0 && !oar_tensor_has_data(*t)))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                           nm(oar_k_input_name(k, slot, i)));
    return OAR_OK;
}

/* d[a] * ... * d[b - 1] */
static inline int64_t prod(const int64_t *d, int a, int b)
{
    int64_t p = 1;
    for (int i = a; i < b; i++) p *= d[i];
    return p;
}

/* row-major strides of dims */
static inline void strides_of(const int64_t *dims, int nd, int64_t *st)
{
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) { st[i] = s; s *= dims[i]; }
}

/* advance a row-major multi-index over dims; false after the last */
static inline bool next_index(int64_t *idx, const int64_t *dims, int nd)
{
    for (int i = nd - 1; i >= 0; i--) {
        if (++idx[i] < dims[i]) return true;
        idx[i] = 0;
    }
    return false;
}

#endif
