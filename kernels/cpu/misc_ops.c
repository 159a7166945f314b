/* misc_ops.c — CPU kernels of clip_by_norm. */
#include <math.h>
#include "op.h"
#include "ops/misc_ops.h"

#define CLIP_BY_NORM(SUF, T, DT)                                                      \
    static int clip_by_norm_##SUF(oar_kernel_ctx_t *k) {                              \
        const oar_tensor_t *x = oar_k_input(k, OAR_CBN_X, 0);                         \
        if (!x) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input X is missing");       \
        const T *xs = oar_tensor_data((oar_tensor_t *)x);                             \
        int64_t n = oar_tensor_numel_of(x);                                           \
        double sq = 0;                                                                \
        for (int64_t i = 0; i < n; i++) sq += (double)xs[i] * xs[i];                  \
        double norm = sqrt(sq);                                                       \
        double max_norm = ((const oar_clip_by_norm_attrs_t *)oar_k_attrs(k))->max_norm; \
        T scale = (T)(norm > max_norm ? max_norm / norm : 1.0);                       \
        T *out = oar_k_output_data(k, OAR_CBN_OUT, 0, DT);                            \
        if (!out) return OAR_ERR_NOMEM;                                               \
        for (int64_t i = 0; i < n; i++) out[i] = xs[i] * scale;                       \
        return OAR_OK;                                                                \
    }                                                                                 \
    OAR_REGISTER_KERNEL("clip_by_norm", OAR_PLACE_CPU, DT, clip_by_norm_##SUF)

CLIP_BY_NORM(f32, float, OAR_FP32)
CLIP_BY_NORM(f64, double, OAR_FP64)
