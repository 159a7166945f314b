/* tensor_value.h — element i of a numeric tensor read as a double on the
 * host: the size and scale inputs (OutSize, SizeTensor, Scale, Y) that the
 * interp, vision_interp and im2sequence inferences and kernels read
 * (src/ops/interp_sizes.h, vision_seq.c, kernels/cpu/interp.c,
 * kernels/cpu/vision_seq.c). */
#ifndef OAR_OPS_TENSOR_VALUE_H
#define OAR_OPS_TENSOR_VALUE_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"

/* *v gets value i of t; false when t is absent, has no data, holds fewer
 * than i + 1 values or is not int32, int64, float32 or float64 */
static inline bool oar_tensor_value_f64(const oar_tensor_t *t, int64_t i, double *v) {
    if (!t || i >= oar_tensor_numel_of(t) || !oar_tensor_has_data(t)) return false;
    const void *p = oar_tensor_data((oar_tensor_t *)t);
    switch (t->dtype) {
    case OAR_INT32: *v = ((const int32_t *)p)[i]; return true;
    case OAR_INT64: *v = (double)((const int64_t *)p)[i]; return true;
    case OAR_FP32: *v = ((const float *)p)[i]; return true;
    case OAR_FP64: *v = ((const double *)p)[i]; return true;
    default: return false;
    }
}
#endif
