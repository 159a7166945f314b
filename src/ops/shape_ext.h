/* shape_ext.h — slots, decoded attributes and index arithmetic shared by
 * the definitions in src/ops/shape_ext.c and their CPU kernels
 * (kernels/cpu/shape_ext.c). */
#ifndef OAR_OPS_SHAPE_EXT_H
#define OAR_OPS_SHAPE_EXT_H
#include <stdint.h>
#include "op.h"

/* expand, expand_v2, tile: X, <times/shape tensor>, <its list> -> Out; their
 * grads add Out@GRAD and write X@GRAD */
enum { OAR_REPEAT_X = 0, OAR_REPEATG_DOUT = 3 };
enum { OAR_REPEAT_OUT = 0, OAR_REPEATG_DX = 0 };
/* slice: Input, StartsTensor, EndsTensor, StartsTensorList, EndsTensorList
 * -> Out; slice_grad adds Out@GRAD and writes Input@GRAD */
enum {
    OAR_SLICE_INPUT = 0, OAR_SLICE_STARTS_T = 1, OAR_SLICE_ENDS_T = 2, OAR_SLICE_STARTS_L = 3,
    OAR_SLICE_ENDS_L = 4, OAR_SLICEG_DOUT = 5
};
enum { OAR_SLICE_OUT = 0, OAR_SLICEG_DINPUT = 0 };

/* starts/ends apply when no tensor input overrides them */
typedef struct oar_slice_attrs { oar_ints_t axes, starts, ends; } oar_slice_attrs_t;

/* Paddle's slice bounds of one axis of length dim: negative start/end
 * count from the end, both are clamped to [0, dim]; the length is
 * end - start, or 0 when end <= start. */
static inline void oar_slice_bounds(int64_t dim, int64_t start, int64_t end, int64_t *s, int64_t *len)
{
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    start = start < 0 ? 0 : (start > dim ? dim : start);
    end = end < 0 ? 0 : (end > dim ? dim : end);
    *s = start;
    *len = end > start ? end - start : 0;
}
#endif
