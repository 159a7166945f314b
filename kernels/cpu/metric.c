/* metric.c — CPU kernel of accuracy: a row counts as correct when its label
 * appears among its k predicted indices. An empty batch gives 0. */
#include "op.h"
#include "ops/metric.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static int accuracy_k(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *ind = oar_k_input(k, OAR_ACC_INDICES, 0), *lbl = oar_k_input(k, OAR_ACC_LABEL, 0);
    if (!ind || !lbl)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s has no value", !ind ? "Indices" : "Label");
    if (ind->dtype != OAR_INT64 || lbl->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "Indices and Label must be int64 (got %s and %s)",
                           nm(oar_dtype_name(ind->dtype)), nm(oar_dtype_name(lbl->dtype)));
    int64_t n = ind->ndim == 2 ? ind->dims[0] : 0, kk = ind->ndim == 2 ? ind->dims[1] : 0;
    if (ind->ndim != 2 || oar_tensor_numel_of(lbl) != n)
        return oar_k_error(k, OAR_ERR_SHAPE, "Indices must be [N, k] and Label hold N = %lld values (has %lld)",
                           (long long)n, (long long)oar_tensor_numel_of(lbl));
    if (n > INT32_MAX) return oar_k_error(k, OAR_ERR_RANGE, "%lld rows do not fit Total (int32)", (long long)n);
    const int64_t *iv = n > 0 ? oar_tensor_data((oar_tensor_t *)ind) : NULL;
    const int64_t *lv = n > 0 ? oar_tensor_data((oar_tensor_t *)lbl) : NULL;
    if (n > 0 && (!iv || !lv)) return oar_k_error(k, OAR_ERR_NOT_FOUND, "Indices or Label has no data");
    int64_t correct = 0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = 0; j < kk; j++)
            if (iv[r * kk + j] == lv[r]) { correct++; break; }
    float *acc = oar_k_output_data(k, OAR_ACC_ACCURACY, 0, OAR_FP32);
    int32_t *cor = acc ? oar_k_output_data(k, OAR_ACC_CORRECT, 0, OAR_INT32) : NULL;
    int32_t *tot = cor ? oar_k_output_data(k, OAR_ACC_TOTAL, 0, OAR_INT32) : NULL;
    if (!tot) return OAR_ERR_NOMEM;
    acc[0] = n > 0 ? (float)((double)correct / (double)n) : 0.0f;
    cor[0] = (int32_t)correct;
    tot[0] = (int32_t)n;
    return OAR_OK;
}

static int accuracy_f32(oar_kernel_ctx_t *k) { return accuracy_k(k); }
static int accuracy_f64(oar_kernel_ctx_t *k) { return accuracy_k(k); }
OAR_REGISTER_KERNEL("accuracy", OAR_PLACE_CPU, OAR_FP32, accuracy_f32)
OAR_REGISTER_KERNEL("accuracy", OAR_PLACE_CPU, OAR_FP64, accuracy_f64)
