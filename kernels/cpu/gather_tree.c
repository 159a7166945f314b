/*
 * gather_tree.c — CPU kernels of gather_tree (int32, int64): for each batch
 * entry and final beam, walk the parents back from the last step. A parent
 * outside [0, beam) is an error naming the step, entry and beam.
 */
#include "op.h"
#include "ops/gather_tree.h"

#define GATHER_TREE_T(sfx, T, DT)                                                                      \
    static int gather_tree_##sfx(oar_kernel_ctx_t *k)                                                  \
    {                                                                                                  \
        oar_tensor_t *ids = oar_k_input(k, OAR_GATHER_TREE_IDS, 0);                              \
        oar_tensor_t *par = oar_k_input(k, OAR_GATHER_TREE_PARENTS, 0);                          \
        if (!ids || !par) return oar_k_error(k, OAR_ERR_NOT_FOUND, "inputs Ids and Parents need tensors"); \
        if (oar_tensor_dtype(par) != DT)                                                               \
            return oar_k_error(k, OAR_ERR_DTYPE, "Parents must have the dtype of Ids");                \
        const int64_t n = oar_tensor_numel(ids);                                                       \
        void *outp;                                                                                    \
        OAR_TRY(oar_k_output_sized(k, OAR_GATHER_TREE_OUT, "Out", DT, n, false, &outp));               \
        if (n == 0) return OAR_OK;                                                                     \
        const int64_t *d = oar_tensor_dims(ids);                                                       \
        const int64_t tmax = d[0], batch = d[1], beam = d[2];                                          \
        const T *iv = oar_tensor_data(ids), *pv = oar_tensor_data(par);                                \
        T *out = outp;                                                                                 \
        for (int64_t b = 0; b < batch; b++) {                                                          \
            for (int64_t j = 0; j < beam; j++) {                                                       \
                int64_t idx = (tmax - 1) * batch * beam + b * beam + j;                                \
                out[idx] = iv[idx];                                                                    \
                int64_t p = (int64_t)pv[idx];                                                          \
                for (int64_t t = tmax - 2; t >= 0; t--) {                                              \
                    if (p < 0 || p >= beam)                                                            \
                        return oar_k_error(k, OAR_ERR_RANGE,                                           \
                                           "Parents[%lld][%lld][...] = %lld is outside [0, %lld) (beam)", \
                                           (long long)(t + 1), (long long)b, (long long)p, (long long)beam); \
                    int64_t base = t * batch * beam + b * beam;                                        \
                    out[base + j] = iv[base + p];                                                      \
                    p = (int64_t)pv[base + p];                                                         \
                }                                                                                      \
            }                                                                                          \
        }                                                                                              \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    OAR_REGISTER_KERNEL("gather_tree", OAR_PLACE_CPU, DT, gather_tree_##sfx)

GATHER_TREE_T(i32, int32_t, OAR_INT32)
GATHER_TREE_T(i64, int64_t, OAR_INT64)
