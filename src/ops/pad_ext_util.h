/* pad_ext_util.h — the source index of a padded position, by pad3d's mode
 * (the slots, modes and decoded attrs are generated from pad_ext.ops);
 * shared with kernels/cpu/pad_ext.c. */
#ifndef OAR_OPS_PAD_EXT_UTIL_H
#define OAR_OPS_PAD_EXT_UTIL_H
#include "ops/pad_ext.h"

/* the input index of output index o along a dim of n elements padded by
 * `before`; -1 when it falls in a constant pad */
static inline int64_t oar_pad_src(int mode, int64_t o, int64_t before, int64_t n)
{
    int64_t i = o - before;
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case OAR_PAD_REFLECT:
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    case OAR_PAD_REPLICATE: return i < 0 ? 0 : n - 1;
    case OAR_PAD_CIRCULAR: return ((i % n) + n) % n;
    default: return -1;
    }
}
#endif
