/* pad_ext.h — slots and decoded attrs of pad (Fluid 1.8) and pad3d
 * (Paddle 2.x), shared with kernels/cpu/pad_ext.c. */
#ifndef OAR_OPS_PAD_EXT_H
#define OAR_OPS_PAD_EXT_H
#include "op.h"

/* pad: X -> Out; pad3d: X, Paddings (optional tensor) -> Out;
 * grads: X (pad3d: and Paddings), Out@GRAD -> X@GRAD */
enum { OAR_PAD_X = 0, OAR_PAD_PADDINGS = 1 };
enum { OAR_PAD_OUT = 0 };
enum { OAR_PADG_DX = 0 };
enum { OAR_PAD_CONSTANT = 0, OAR_PAD_REFLECT = 1, OAR_PAD_REPLICATE = 2, OAR_PAD_CIRCULAR = 3 };
typedef struct { oar_ints_t paddings; float value; int mode; bool is3d; int layout; } oar_pad_attrs_t;

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
