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


int oar_win_dec_triple(oar_decode_ctx_t *d, const char *name, int64_t def, int64_t lo, int64_t out[3]) {
    oar_ints_t v = oar_dec_ints(d, name);
    if (v.n == 0) { out[0] = out[1] = out[2] = def; return OAR_OK; }
    if (v.n != 3)
        return oar_dec_error(d, OAR_ERR_INVALID, "attr %s must hold 3 values (depth, height, width), got %d",
                             name, v.n);
    for (int i = 0; i < 3; i++) {
        if (v.v[i] < lo)
            return oar_dec_error(d, OAR_ERR_INVALID, "attr %s = {%d, %d, %d}: each value must be >= %lld", name,
                                 (int)v.v[0], (int)v.v[1], (int)v.v[2], (long long)lo);
        out[i] = v.v[i];
    }
    return OAR_OK;
}

int oar_win_dec_pads3(oar_decode_ctx_t *d, int64_t out[6]) {
    oar_ints_t v = oar_dec_ints(d, "paddings");
    if (v.n == 0) { for (int i = 0; i < 6; i++) out[i] = 0; return OAR_OK; }
    if (v.n == 3) { for (int i = 0; i < 3; i++) out[2 * i] = out[2 * i + 1] = v.v[i]; }
    else if (v.n == 6) { for (int i = 0; i < 6; i++) out[i] = v.v[i]; }
    else return oar_dec_error(d, OAR_ERR_INVALID, "attr paddings must hold 3 values {d, h, w} or 6 "
                              "{front, back, top, bottom, left, right}, got %d", v.n);
    for (int i = 0; i < 6; i++)
        if (out[i] < 0) return oar_dec_error(d, OAR_ERR_INVALID, "attr paddings must be >= 0, got %lld at %d",
                                             (long long)out[i], i);
    return OAR_OK;
}
