/* shape_ext_util.h — index arithmetic shared by slice's inference
 * (src/ops/shape_ext.c) and its kernels (kernels/cpu/shape_ext.c); the
 * slots and the attribute struct are generated from shape_ext.ops. */
#ifndef OAR_OPS_SHAPE_EXT_UTIL_H
#define OAR_OPS_SHAPE_EXT_UTIL_H
#include <stdint.h>

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
