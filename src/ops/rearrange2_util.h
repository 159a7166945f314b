/*
 * rearrange2_util.h — shape arithmetic that the inference (src/ops/
 * rearrange2.c) and the CPU kernels (kernels/cpu/rearrange2.c) of
 * rearrange2.ops share, so the two cannot disagree.
 */
#ifndef OAR_OPS_REARRANGE2_UTIL_H
#define OAR_OPS_REARRANGE2_UTIL_H
#include <math.h>
#include <stdint.h>
#include "op.h"

/* range's length (Fluid's GetSize): integers round |End - Start| / |Step|
 * up exactly, floats by ceil; a zero step or one pointing away from End is
 * an error */
static inline int oar_range_size(double start, double end, double step, bool integral, int64_t *n)
{
    if (step == 0 || (start < end && step < 0) || (start > end && step > 0)) return OAR_ERR_INVALID;
    if (integral) {
        int64_t d = (int64_t)fabs(end - start), s = (int64_t)fabs(step);
        *n = (d + s - 1) / s;
    } else {
        *n = (int64_t)ceil(fabs((end - start) / step));
    }
    return OAR_OK;
}

/* Python's slice start:end:step over a dim of n: the first index *s and
 * the count *len (numpy's rules, which Fluid's strided_slice tests follow) */
static inline void oar_py_slice(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *s, int64_t *len)
{
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (step > 0) {
        start = start < 0 ? 0 : start > n ? n : start;
        end = end < 0 ? 0 : end > n ? n : end;
        *len = end > start ? (end - start + step - 1) / step : 0;
    } else {
        start = start < -1 ? -1 : start > n - 1 ? n - 1 : start;
        end = end < -1 ? -1 : end > n - 1 ? n - 1 : end;
        *len = start > end ? (start - end - step - 1) / (-step) : 0;
    }
    *s = start;
}

/* diag_embed's plane dims of an Out of rank nx + 1 (Fluid's normalization:
 * a negative dim counts from Out's end); nonzero when out of range or equal */
static inline int oar_diag_embed_dims(int dim1, int dim2, int nx, int *d1, int *d2)
{
    if (dim1 < -(nx + 1) || dim1 > nx || dim2 < -(nx + 1) || dim2 > nx) return OAR_ERR_RANGE;
    *d1 = dim1 < 0 ? dim1 + nx + 1 : dim1;
    *d2 = dim2 < 0 ? dim2 + nx + 1 : dim2;
    return *d1 == *d2 ? OAR_ERR_RANGE : OAR_OK;
}
#endif
