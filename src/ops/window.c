/* window.c — readers of the window attributes (strides, dilations, ksize,
 * paddings) shared by the conv and pool kernels of every place. */
#include "window.h"

int oar_win_attr_pair(oar_kernel_ctx_t *k, const char *name, int64_t def, int64_t out[2]) {
    int n = 0;
    const int32_t *v = oar_attr_ints(oar_k_op(k), name, &n);
    if (n == 0) { out[0] = out[1] = def; return OAR_OK; }
    if (n != 2)
        return oar_k_error(k, OAR_ERR_INVALID, "attr '%s' must hold 2 values (height, width), got %d",
                           name, n);
    out[0] = v[0]; out[1] = v[1];
    return OAR_OK;
}

int oar_win_attr_pads(oar_kernel_ctx_t *k, int64_t out[4]) {
    int n = 0;
    const int32_t *v = oar_attr_ints(oar_k_op(k), "paddings", &n);
    if (n == 0) { out[0] = out[1] = out[2] = out[3] = 0; return OAR_OK; }
    if (n == 2) { out[0] = out[1] = v[0]; out[2] = out[3] = v[1]; return OAR_OK; }
    if (n == 4) { for (int i = 0; i < 4; i++) out[i] = v[i]; return OAR_OK; }
    return oar_k_error(k, OAR_ERR_INVALID,
                       "attr 'paddings' must hold 2 values {h, w} or 4 {top, bottom, left, right}, got %d", n);
}

