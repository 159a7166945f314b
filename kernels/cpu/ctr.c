/*
 * ctr.c — CPU kernels of cvm and cvm_grad (src/ops/ctr.ops), float32 and
 * float64.
 */
#include <math.h>
#include <string.h>
#include "op.h"
#include "sequence_batch.h"
#include "ops/ctr.h"

#define CVM_KERNELS(SFX, T, DT)                                                                          \
    static int cvm_fwd_##SFX(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                    \
        const oar_cvm_attrs_t *a = oar_k_attrs(k);                                                       \
        const oar_tensor_t *x;                                                                           \
        const void *xp;                                                                                  \
        OAR_TRY(oar_sk_input(k, OAR_CVM_X, "X", DT, &x, &xp));                                           \
        const int64_t n = x->dims[0], D = x->dims[1], W = a->use_cvm ? D : D - 2;                        \
        void *yp;                                                                                        \
        OAR_TRY(oar_k_output_sized(k, OAR_CVM_Y, "Y", DT, n * W, false, &yp));                           \
        const T *xv = xp;                                                                                \
        T *y = yp;                                                                                       \
        for (int64_t r = 0; r < n; r++) {                                                                \
            const T *xr = xv + r * D;                                                                    \
            T *yr = y + r * W;                                                                           \
            if (a->use_cvm) {                                                                            \
                memcpy(yr, xr, sizeof(T) * (size_t)D);                                                   \
                yr[0] = (T)log(xr[0] + 1);                                                               \
                yr[1] = (T)log(xr[1] + 1) - yr[0];                                                       \
            } else {                                                                                     \
                memcpy(yr, xr + 2, sizeof(T) * (size_t)W);                                               \
            }                                                                                            \
        }                                                                                                \
        return OAR_OK;                                                                                   \
    }                                                                                                    \
    static int cvm_bwd_##SFX(oar_kernel_ctx_t *k)                                                        \
    {                                                                                                    \
        const oar_cvm_attrs_t *a = oar_k_attrs(k);                                                       \
        const oar_tensor_t *x, *cvm, *dy;                                                                \
        const void *xp, *cp, *gp;                                                                        \
        OAR_TRY(oar_sk_input(k, OAR_CVMG_X, "X", DT, &x, &xp));                                          \
        OAR_TRY(oar_sk_input(k, OAR_CVMG_CVM, "CVM", DT, &cvm, &cp));                                    \
        OAR_TRY(oar_sk_input(k, OAR_CVMG_DY, "Y@GRAD", DT, &dy, &gp));                                   \
        const int64_t n = x->dims[0], D = x->dims[1], W = a->use_cvm ? D : D - 2;                        \
        if (oar_tensor_numel_of(dy) != n * W)                                                            \
            return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD has %lld values; %lld expected",                \
                               (long long)oar_tensor_numel_of(dy), (long long)(n * W));                  \
        /* one CVM row per row of X, or per sequence of its LoD (Fluid's cvm_grad) */                    \
        const int64_t *offs = x->lod_levels > 0 ? x->lod[0] : NULL;                                      \
        const int64_t groups = offs ? x->lod_size[0] - 1 : n;                                            \
        if (offs && offs[groups] != n)                                                                   \
            return oar_k_error(k, OAR_ERR_SHAPE, "X's first LoD level ends at %lld, not at its %lld rows", \
                               (long long)offs[groups], (long long)n);                                   \
        if (cvm->dims[0] != groups)                                                                      \
            return oar_k_error(k, OAR_ERR_SHAPE, "CVM has %lld rows; one per %s of X (%lld) expected",   \
                               (long long)cvm->dims[0], offs ? "sequence" : "row", (long long)groups);   \
        void *dxp;                                                                                       \
        OAR_TRY(oar_k_output_sized(k, OAR_CVMG_DX, "X@GRAD", DT, n * D, true, &dxp));                    \
        if (!dxp) return OAR_OK;                                                                         \
        const T *g = gp, *cv = cp;                                                                       \
        T *dx = dxp;                                                                                     \
        for (int64_t s = 0; s < groups; s++) {                                                           \
            const int64_t r0 = offs ? offs[s] : s, r1 = offs ? offs[s + 1] : s + 1;                      \
            for (int64_t r = r0; r < r1; r++) {                                                          \
                T *dr = dx + r * D;                                                                      \
                const T *gr = g + r * W;                                                                 \
                if (a->use_cvm) memcpy(dr + 2, gr + 2, sizeof(T) * (size_t)(D - 2));                     \
                else memcpy(dr + 2, gr, sizeof(T) * (size_t)(D - 2));                                    \
                dr[0] = cv[s * 2];                                                                       \
                dr[1] = cv[s * 2 + 1];                                                                   \
            }                                                                                            \
        }                                                                                                \
        return OAR_OK;                                                                                   \
    }                                                                                                    \
    OAR_REGISTER_KERNEL("cvm", OAR_PLACE_CPU, DT, cvm_fwd_##SFX)                                         \
    OAR_REGISTER_KERNEL("cvm_grad", OAR_PLACE_CPU, DT, cvm_bwd_##SFX)

CVM_KERNELS(f32, float, OAR_FP32)
CVM_KERNELS(f64, double, OAR_FP64)
