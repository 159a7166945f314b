/* window.h — NCHW sliding-window geometry shared by the conv and pool
 * definitions (shape inference) and every place's kernels: the window of one
 * image, the valid output columns of a padded row, and Fluid's
 * padding_algorithm. */
#ifndef OAR_OPS_WINDOW_H
#define OAR_OPS_WINDOW_H
#include <stdbool.h>
#include <stdint.h>
#include "op.h"

/* One image's convolution window geometry (channels per call, not per op). */
typedef struct oar_win2d {
    int64_t c, h, w;        /* input channels, height, width */
    int64_t kh, kw;         /* window */
    int64_t oh, ow;         /* output height, width */
    int64_t sh, sw;         /* strides */
    int64_t pt, pl;         /* top and left padding (bottom/right follow from oh/ow) */
    int64_t dh, dw;         /* dilations */
} oar_win2d_t;

/* The range [lo, hi) of output columns ow whose input column ow*sw + off
 * falls inside [0, w), clamped to [0, ow_n]. */
static inline void oar_win_valid_cols(int64_t off, int64_t sw, int64_t w, int64_t ow_n,
                                      int64_t *lo, int64_t *hi) {
    int64_t a = off >= 0 ? 0 : (-off + sw - 1) / sw;
    int64_t b = (w - 1 - off) >= 0 ? (w - 1 - off) / sw + 1 : 0;
    if (a > ow_n) a = ow_n;
    if (b > ow_n) b = ow_n;
    if (b < a) b = a;
    *lo = a; *hi = b;
}

/* Fluid's padding_algorithm: "SAME" pads (extra on the bottom/right) so that
 * out = ceil(in / stride) and, for convolutions, sets dilations to 1
 * (dil may be NULL for pooling); "VALID" drops the padding; "EXPLICIT" or
 * empty keeps pads. Returns false for any other name. */
static inline bool oar_win_resolve_pads(const char *algo, const int64_t in[2], const int64_t k[2],
                                        const int64_t st[2], int64_t pads[4], int64_t *dil) {
    if (!algo || !algo[0] || __builtin_strcmp(algo, "EXPLICIT") == 0) return true;
    bool same = __builtin_strcmp(algo, "SAME") == 0;
    if (!same && __builtin_strcmp(algo, "VALID") != 0) return false;
    for (int i = 0; i < 2; i++) {
        int64_t sum = 0;
        if (same) {
            int64_t out = (in[i] + st[i] - 1) / st[i];
            sum = (out - 1) * st[i] + k[i] - in[i];
            if (sum < 0) sum = 0;
            if (dil) dil[i] = 1;
        }
        pads[2 * i] = sum / 2;
        pads[2 * i + 1] = sum - sum / 2;
    }
    return true;
}

/* Reads an INTS attr of exactly 2 values (or `def` when the attr is empty)
 * into out[2]. Returns OAR_OK or an error naming the op and the attr. */
OAR_API int oar_win_attr_pair(oar_kernel_ctx_t *k, const char *name, int64_t def, int64_t out[2]);
/* Reads `paddings` as 2 values {h, w} or 4 values {top, bottom, left, right}
 * into out[4] = {top, bottom, left, right}. */
OAR_API int oar_win_attr_pads(oar_kernel_ctx_t *k, int64_t out[4]);

/* The conv and pool decoders' steps (src/ops/conv.c): an INTS attr of 2
 * values (`def` twice when empty), each >= lo; paddings of 2 {h, w} or 4
 * values, each >= 0. Failures go through oar_dec_error. */
int oar_conv_dec_pair(oar_decode_ctx_t *d, const char *name, int64_t def, int64_t lo, int64_t out[2]);
int oar_conv_dec_pads(oar_decode_ctx_t *d, int64_t out[4]);
#endif
