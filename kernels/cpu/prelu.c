/* prelu.c — CPU kernels of prelu and prelu_grad (float32, float64).
 * Alpha@GRAD sums X * Out@GRAD over the elements where X <= 0, per alpha. */
#include <string.h>
#include "op.h"
#include "ops/prelu_util.h"   /* slots, attrs and the alpha index */

#define PRELU_KERNELS(T, SUF, DT)                                                               \
    static int fwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        const oar_prelu_attrs_t *a = oar_k_attrs(k);                                            \
        oar_tensor_t *xt = oar_k_input(k, OAR_PRELU_X, 0), *at = oar_k_input(k, OAR_PRELU_ALPHA, 0); \
        T *o = oar_k_output_data(k, OAR_PRELU_OUT, 0, DT);                                      \
        if (!o) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate Out");                    \
        const T *x = oar_tensor_data(xt), *al = oar_tensor_data(at);                           \
        const int64_t n = oar_tensor_numel_of(xt);                                              \
        for (int64_t i = 0; i < n; i++)                                                         \
            o[i] = x[i] > 0 ? x[i] : al[oar_prelu_alpha_index(a, xt->dims, xt->ndim, i)] * x[i];  \
        return OAR_OK;                                                                          \
    }                                                                                           \
    static int bwd_##SUF(oar_kernel_ctx_t *k)                                                   \
    {                                                                                           \
        const oar_prelu_attrs_t *a = oar_k_attrs(k);                                            \
        oar_tensor_t *xt = oar_k_input(k, OAR_PRELU_X, 0), *at = oar_k_input(k, OAR_PRELU_ALPHA, 0); \
        oar_tensor_t *gt = oar_k_input(k, OAR_PRELUG_DOUT, 0);                                  \
        const int64_t n = oar_tensor_numel_of(xt);                                              \
        if (oar_tensor_numel_of(gt) != n)                                                       \
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD has %lld values, X %lld",            \
                               (long long)oar_tensor_numel_of(gt), (long long)n);               \
        T *dx = oar_k_output(k, OAR_PRELUG_DX, 0) ? oar_k_output_data(k, OAR_PRELUG_DX, 0, DT) : NULL;  \
        T *da = oar_k_output(k, OAR_PRELUG_DALPHA, 0) ? oar_k_output_data(k, OAR_PRELUG_DALPHA, 0, DT) : NULL; \
        if ((oar_k_output(k, OAR_PRELUG_DX, 0) && !dx) || (oar_k_output(k, OAR_PRELUG_DALPHA, 0) && !da)) \
            return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the gradients");              \
        const T *x = oar_tensor_data(xt), *al = oar_tensor_data(at), *g = oar_tensor_data(gt); \
        if (da) memset(da, 0, sizeof(T) * (size_t)oar_tensor_numel_of(at));                    \
        for (int64_t i = 0; i < n; i++) {                                                       \
            int64_t j = oar_prelu_alpha_index(a, xt->dims, xt->ndim, i);                        \
            if (dx) dx[i] = x[i] > 0 ? g[i] : al[j] * g[i];                                     \
            if (da && !(x[i] > 0)) da[j] += x[i] * g[i];                                        \
        }                                                                                       \
        return OAR_OK;                                                                          \
    }                                                                                           \
    OAR_REGISTER_KERNEL("prelu", OAR_PLACE_CPU, DT, fwd_##SUF)                                  \
    OAR_REGISTER_KERNEL("prelu_grad", OAR_PLACE_CPU, DT, bwd_##SUF)

PRELU_KERNELS(float, f32, OAR_FP32)
PRELU_KERNELS(double, f64, OAR_FP64)
