/* loss_basic.c — CPU kernels of square_error_cost and its grad:
 * Out = (X - Y)^2, X@GRAD = 2 (X - Y) Out@GRAD, Y@GRAD = -X@GRAD. */
#include "op.h"
#include "ops/loss_basic.h"



#define SEC_KERNELS(sfx, T, DT)                                                             \
    static int sec_##sfx(oar_kernel_ctx_t *k)                                               \
    {                                                                                       \
        const void *xv, *yv;                                                                \
        const oar_tensor_t *xt = oar_k_input(k, OAR_SEC_X, 0);                              \
        OAR_TRY(oar_k_input_sized(k, OAR_SEC_X, "X", DT, -1, &xv));                                   \
        int64_t n = oar_tensor_numel_of(xt);                                                \
        OAR_TRY(oar_k_input_sized(k, OAR_SEC_Y, "Y", DT, n, &yv));                                    \
        if (!oar_k_output(k, OAR_SEC_OUT, 0))                                               \
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");  \
        T *o = oar_k_output_data(k, OAR_SEC_OUT, 0, DT);                                    \
        if (!o) return OAR_ERR_NOMEM;                                                       \
        const T *x = xv, *y = yv;                                                           \
        _Pragma("omp parallel for if(n > 65536)")                                           \
        for (int64_t i = 0; i < n; i++) { T d = x[i] - y[i]; o[i] = d * d; }                \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("square_error_cost", OAR_PLACE_CPU, DT, sec_##sfx)                  \
    static int sec_grad_##sfx(oar_kernel_ctx_t *k)                                          \
    {                                                                                       \
        const void *xv, *yv, *gv;                                                           \
        const oar_tensor_t *xt = oar_k_input(k, OAR_SEC_X, 0);                              \
        OAR_TRY(oar_k_input_sized(k, OAR_SEC_X, "X", DT, -1, &xv));                                   \
        int64_t n = oar_tensor_numel_of(xt);                                                \
        OAR_TRY(oar_k_input_sized(k, OAR_SEC_Y, "Y", DT, n, &yv));                                    \
        OAR_TRY(oar_k_input_sized(k, OAR_SECG_DOUT, "Out@GRAD", DT, n, &gv));                         \
        T *dx = NULL, *dy = NULL;                                                           \
        if (oar_k_output(k, OAR_SECG_DX, 0) && !(dx = oar_k_output_data(k, OAR_SECG_DX, 0, DT))) \
            return OAR_ERR_NOMEM;                                                           \
        if (oar_k_output(k, OAR_SECG_DY, 0) && !(dy = oar_k_output_data(k, OAR_SECG_DY, 0, DT))) \
            return OAR_ERR_NOMEM;                                                           \
        const T *x = xv, *y = yv, *g = gv;                                                  \
        _Pragma("omp parallel for if(n > 65536)")                                           \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T d = 2 * (x[i] - y[i]) * g[i];                                                 \
            if (dx) dx[i] = d;                                                              \
            if (dy) dy[i] = -d;                                                             \
        }                                                                                   \
        return OAR_OK;                                                                      \
    }                                                                                       \
    OAR_REGISTER_KERNEL("square_error_cost_grad", OAR_PLACE_CPU, DT, sec_grad_##sfx)

SEC_KERNELS(f32, float, OAR_FP32)
SEC_KERNELS(f64, double, OAR_FP64)
