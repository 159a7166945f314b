/* roi_pooling.c — CPU kernels of roi_pool, roi_align, psroi_pool and their
 * grads (float32, float64), with Paddle 1.8's geometry: roi_pool rounds the
 * scaled corners and takes floor / ceil bin edges; roi_align samples
 * bilinearly without rounding; psroi_pool rounds, then scales. Grads add
 * back in one fixed order (one thread). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/roi_pooling.h"

/* the image of each ROI, from RoisLod (offsets) or BatchRoINums (counts;
 * `counts`) when given, else the ROIs' last LoD level; *ids (R entries) is
 * the caller's to free */
static int roi_batch_ids_of(oar_kernel_ctx_t *k, int rois_slot, int lod_slot, bool counts, int64_t n_img,
                            int64_t **ids) {
    const oar_tensor_t *rois = oar_k_input(k, rois_slot, 0);
    const oar_tensor_t *lt = lod_slot >= 0 ? oar_k_input(k, lod_slot, 0) : NULL;
    const int64_t nr = rois->dims[0];
    const int64_t *off;
    int64_t n;
    const char *from;
    int64_t *own = NULL;
    if (lt) {
        if (lt->dtype != OAR_INT64 || lt->ndim != 1)
            return oar_k_error(k, OAR_ERR_INVALID, "%s ('%s') must be 1-D int64 %s", counts ? "BatchRoINums" : "RoisLod",
                               oar_k_input_name(k, lod_slot, 0), counts ? "counts" : "offsets");
        off = oar_tensor_data((oar_tensor_t *)lt);
        n = oar_tensor_numel((oar_tensor_t *)lt);
        from = "RoisLod";
        if (counts) {   /* counts -> offsets */
            own = malloc(sizeof(int64_t) * (size_t)(n + 1));
            if (!own) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the ROIs' offsets");
            own[0] = 0;
            for (int64_t i = 0; i < n; i++) own[i + 1] = own[i] + off[i];
            off = own;
            n++;
            from = "BatchRoINums";
        }
    } else if (rois->lod_levels > 0) {
        off = rois->lod[rois->lod_levels - 1];
        n = rois->lod_size[rois->lod_levels - 1];
        from = "the LoD of ROIs";
    } else {
        return oar_k_error(k, OAR_ERR_INVALID, "ROIs ('%s') has no LoD and no RoisLod is given: "
                           "cannot tell which image each ROI belongs to", oar_k_input_name(k, rois_slot, 0));
    }
    int rc = OAR_OK;
    *ids = NULL;
    if (n - 1 != n_img)
        rc = oar_k_error(k, OAR_ERR_SHAPE, "%s has %lld sequences of ROIs, expected one per image of X (%lld)",
                         from, (long long)(n - 1), (long long)n_img);
    else if (off[0] != 0 || off[n - 1] != nr)
        rc = oar_k_error(k, OAR_ERR_SHAPE, "%s must run from 0 to the ROI count %lld, got %lld .. %lld", from,
                         (long long)nr, (long long)off[0], (long long)off[n - 1]);
    else if (!(*ids = malloc(sizeof(int64_t) * (size_t)(nr + 1))))
        rc = oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the ROIs' image ids");
    for (int64_t b = 0; rc == OAR_OK && b < n - 1; b++) {
        if (off[b + 1] < off[b]) {
            rc = oar_k_error(k, OAR_ERR_SHAPE, "%s decreases at %lld", from, (long long)(b + 1));
            break;
        }
        for (int64_t i = off[b]; i < off[b + 1]; i++) (*ids)[i] = b;
    }
    free(own);
    if (rc != OAR_OK) { free(*ids); *ids = NULL; }
    return rc;
}

static int roi_batch_ids(oar_kernel_ctx_t *k, int rois_slot, int lod_slot, int64_t n_img, int64_t **ids) {
    return roi_batch_ids_of(k, rois_slot, lod_slot, false, n_img, ids);
}

static inline int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* roi_align: the four taps and weights of point (y, x); false when outside */
static bool align_taps(double y, double x, int64_t h, int64_t w, int64_t idx[4], double wt[4]) {
    if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w) return false;
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
    if (yl >= h - 1) { yh = yl = h - 1; y = (double)yl; } else yh = yl + 1;
    if (xl >= w - 1) { xh = xl = w - 1; x = (double)xl; } else xh = xl + 1;
    const double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
    idx[0] = yl * w + xl; idx[1] = yl * w + xh; idx[2] = yh * w + xl; idx[3] = yh * w + xh;
    wt[0] = hy * hx; wt[1] = hy * lx; wt[2] = ly * hx; wt[3] = ly * lx;
    return true;
}

/* roi_align's bin geometry of one ROI */
typedef struct { double ymin, xmin, bh, bw; int64_t gh, gw; double count; } align_roi_t;

static align_roi_t align_roi(const oar_roia_attrs_t *a, const double r[4]) {
    align_roi_t g;
    const double s = a->spatial_scale;
    g.xmin = r[0] * s;
    g.ymin = r[1] * s;
    const double rw = fmax(r[2] * s - g.xmin, 1.0), rh = fmax(r[3] * s - g.ymin, 1.0);
    g.bh = rh / a->pooled_height;
    g.bw = rw / a->pooled_width;
    g.gh = a->sampling_ratio > 0 ? a->sampling_ratio : (int64_t)ceil(rh / a->pooled_height);
    g.gw = a->sampling_ratio > 0 ? a->sampling_ratio : (int64_t)ceil(rw / a->pooled_width);
    g.count = (double)(g.gh * g.gw > 1 ? g.gh * g.gw : 1);
    return g;
}

#define ROI_COMMON(T, X_SLOT, ROIS_SLOT, LOD_SLOT)                                                     \
    oar_tensor_t *xt = oar_k_input(k, X_SLOT, 0), *rt = oar_k_input(k, ROIS_SLOT, 0);                  \
    if (xt->ndim != 4 || rt->ndim != 2 || rt->dims[1] != 4)                                            \
        return oar_k_error(k, OAR_ERR_SHAPE, "X must be 4-D and ROIs [R, 4]");                         \
    const int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3], R = rt->dims[0]; \
    const T *x = oar_tensor_data(xt), *rois = oar_tensor_data(rt);                                     \
    int64_t *ids;                                                                                      \
    OAR_TRY(roi_batch_ids(k, ROIS_SLOT, LOD_SLOT, N, &ids));

#define ROI_KERNELS(T, SUF, DT)                                                                        \
    static int roip_fwd_##SUF(oar_kernel_ctx_t *k) {                                                   \
        const oar_roip_attrs_t *a = oar_k_attrs(k);                                                    \
        ROI_COMMON(T, OAR_ROIP_X, OAR_ROIP_ROIS, OAR_ROIP_ROISLOD)                                     \
        const int PH = a->pooled_height, PW = a->pooled_width;                                         \
        void *ov, *mv;                                                                                 \
        int rc = oar_k_output_sized(k, OAR_ROIP_OUT, "Out", DT, R * C * PH * PW, false, &ov);          \
        if (rc == OAR_OK)                                                                              \
            rc = oar_k_output_sized(k, OAR_ROIP_ARGMAX, "Argmax", OAR_INT64, R * C * PH * PW, false, &mv); \
        if (rc != OAR_OK) { free(ids); return rc; }                                                    \
        T *o = ov;                                                                                     \
        int64_t *am = mv;                                                                              \
        const T s = (T)a->spatial_scale;                                                               \
        for (int64_t n = 0; n < R; n++) {                                                              \
            const T *r = rois + n * 4;                                                                 \
            const int64_t sw = (int64_t)round(r[0] * s), sh = (int64_t)round(r[1] * s);                \
            const int64_t ew = (int64_t)round(r[2] * s), eh = (int64_t)round(r[3] * s);                \
            const int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1; \
            const T bh = (T)rh / (T)PH, bw = (T)rw / (T)PW;                                            \
            for (int64_t c = 0; c < C; c++) {                                                          \
                const T *xc = x + (ids[n] * C + c) * H * W;                                            \
                for (int ph = 0; ph < PH; ph++)                                                        \
                    for (int pw = 0; pw < PW; pw++) {                                                  \
                        const int64_t hs = clampi((int64_t)floor((T)ph * bh) + sh, 0, H);              \
                        const int64_t he = clampi((int64_t)ceil((T)(ph + 1) * bh) + sh, 0, H);         \
                        const int64_t ws = clampi((int64_t)floor((T)pw * bw) + sw, 0, W);              \
                        const int64_t we = clampi((int64_t)ceil((T)(pw + 1) * bw) + sw, 0, W);         \
                        const int64_t oi = ((n * C + c) * PH + ph) * PW + pw;                          \
                        const bool empty = he <= hs || we <= ws;                                       \
                        T best = empty ? 0 : -HUGE_VAL;                                                \
                        int64_t arg = -1;                                                              \
                        for (int64_t h = hs; h < he; h++)                                              \
                            for (int64_t w = ws; w < we; w++)                                          \
                                if (xc[h * W + w] > best || arg < 0) { best = xc[h * W + w]; arg = h * W + w; } \
                        o[oi] = best;                                                                  \
                        am[oi] = arg;                                                                  \
                    }                                                                                  \
            }                                                                                          \
        }                                                                                              \
        free(ids);                                                                                     \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int roip_bwd_##SUF(oar_kernel_ctx_t *k) {                                                   \
        const oar_roip_attrs_t *a = oar_k_attrs(k);                                                    \
        ROI_COMMON(T, OAR_ROIPG_X, OAR_ROIPG_ROIS, OAR_ROIPG_ROISLOD)                                   \
        (void)x; (void)rois;                                                                           \
        const int64_t M = R * C * a->pooled_height * a->pooled_width;                                  \
        const void *dv, *mv;                                                                           \
        void *dxv;                                                                                     \
        int rc = oar_k_input_sized(k, OAR_ROIPG_DOUT, "Out@GRAD", DT, M, &dv);                         \
        if (rc == OAR_OK) rc = oar_k_input_sized(k, OAR_ROIPG_ARGMAX, "Argmax", OAR_INT64, M, &mv);    \
        if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_ROIPG_DX, "X@GRAD", DT, N * C * H * W, true, &dxv); \
        if (rc != OAR_OK || !dxv) { free(ids); return rc; }                                            \
        T *dx = dxv;                                                                                   \
        const T *dy = dv;                                                                              \
        const int64_t *am = mv, P = a->pooled_height * a->pooled_width;                                \
        memset(dx, 0, sizeof(T) * (size_t)(N * C * H * W));                                            \
        for (int64_t n = 0; n < R; n++)                                                                \
            for (int64_t c = 0; c < C; c++)                                                            \
                for (int64_t p = 0; p < P; p++) {                                                      \
                    const int64_t oi = (n * C + c) * P + p;                                            \
                    if (am[oi] >= 0 && am[oi] < H * W) dx[(ids[n] * C + c) * H * W + am[oi]] += dy[oi]; \
                }                                                                                      \
        free(ids);                                                                                     \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int roia_run_##SUF(oar_kernel_ctx_t *k, bool grad) {                                        \
        const oar_roia_attrs_t *a = oar_k_attrs(k);                                                    \
        ROI_COMMON(T, OAR_ROIA_X, OAR_ROIA_ROIS, OAR_ROIA_ROISLOD)                                     \
        const int PH = a->pooled_height, PW = a->pooled_width;                                         \
        const int64_t M = R * C * PH * PW;                                                             \
        void *ov = NULL, *dxv = NULL;                                                                  \
        const void *dv = NULL;                                                                         \
        int rc;                                                                                        \
        if (grad) {                                                                                    \
            rc = oar_k_input_sized(k, OAR_ROIAG_DOUT, "Out@GRAD", DT, M, &dv);                         \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_ROIAG_DX, "X@GRAD", DT, N * C * H * W, true, &dxv); \
            if (rc != OAR_OK || !dxv) { free(ids); return rc; }                                        \
            memset(dxv, 0, sizeof(T) * (size_t)(N * C * H * W));                                       \
        } else {                                                                                       \
            rc = oar_k_output_sized(k, OAR_ROIA_OUT, "Out", DT, M, false, &ov);                        \
            if (rc != OAR_OK) { free(ids); return rc; }                                                \
        }                                                                                              \
        for (int64_t n = 0; n < R; n++) {                                                              \
            const double rr[4] = {(double)rois[n * 4], (double)rois[n * 4 + 1], (double)rois[n * 4 + 2], \
                                  (double)rois[n * 4 + 3]};                                            \
            const align_roi_t g = align_roi(a, rr);                                                    \
            for (int ph = 0; ph < PH; ph++)                                                            \
                for (int pw = 0; pw < PW; pw++) {                                                      \
                    for (int64_t c = 0; c < C; c++) {                                                  \
                        const int64_t oi = ((n * C + c) * PH + ph) * PW + pw, base = (ids[n] * C + c) * H * W; \
                        double sum = 0;                                                                \
                        const double d = grad ? (double)((const T *)dv)[oi] / g.count : 0;             \
                        for (int64_t iy = 0; iy < g.gh; iy++) {                                        \
                            const double y = g.ymin + ph * g.bh + (iy + .5) * g.bh / (double)g.gh;     \
                            for (int64_t ix = 0; ix < g.gw; ix++) {                                    \
                                const double xx = g.xmin + pw * g.bw + (ix + .5) * g.bw / (double)g.gw; \
                                int64_t idx[4];                                                        \
                                double wt[4];                                                          \
                                if (!align_taps(y, xx, H, W, idx, wt)) continue;                       \
                                for (int t = 0; t < 4; t++) {                                          \
                                    if (grad) ((T *)dxv)[base + idx[t]] += (T)(d * wt[t]);             \
                                    else sum += wt[t] * (double)x[base + idx[t]];                      \
                                }                                                                      \
                            }                                                                          \
                        }                                                                              \
                        if (!grad) ((T *)ov)[oi] = (T)(sum / g.count);                                 \
                    }                                                                                  \
                }                                                                                      \
        }                                                                                              \
        free(ids);                                                                                     \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int roia_fwd_##SUF(oar_kernel_ctx_t *k) { return roia_run_##SUF(k, false); }                \
    static int roia_bwd_##SUF(oar_kernel_ctx_t *k) { return roia_run_##SUF(k, true); }                 \
    static int psroi_run_##SUF(oar_kernel_ctx_t *k, bool grad) {                                       \
        const oar_psroi_attrs_t *a = oar_k_attrs(k);                                                   \
        ROI_COMMON(T, OAR_PSROI_X, OAR_PSROI_ROIS, -1)                                                 \
        const int PH = a->pooled_height, PW = a->pooled_width, OC = a->output_channels;                \
        if (C != (int64_t)OC * PH * PW) {                                                              \
            free(ids);                                                                                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "X has %lld channels, expected %lld", (long long)C,    \
                               (long long)OC * PH * PW);                                               \
        }                                                                                              \
        const int64_t M = R * OC * PH * PW;                                                            \
        void *ov = NULL, *dxv = NULL;                                                                  \
        const void *dv = NULL;                                                                         \
        int rc;                                                                                        \
        if (grad) {                                                                                    \
            rc = oar_k_input_sized(k, OAR_PSROIG_DOUT, "Out@GRAD", DT, M, &dv);                        \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_PSROIG_DX, "X@GRAD", DT, N * C * H * W, true, &dxv); \
            if (rc != OAR_OK || !dxv) { free(ids); return rc; }                                        \
            memset(dxv, 0, sizeof(T) * (size_t)(N * C * H * W));                                       \
        } else {                                                                                       \
            rc = oar_k_output_sized(k, OAR_PSROI_OUT, "Out", DT, M, false, &ov);                       \
            if (rc != OAR_OK) { free(ids); return rc; }                                                \
        }                                                                                              \
        const T s = (T)a->spatial_scale;                                                               \
        for (int64_t n = 0; n < R; n++) {                                                              \
            const T *r = rois + n * 4;                                                                 \
            const T sw = (T)round(r[0]) * s, sh = (T)round(r[1]) * s;                                  \
            const T ew = ((T)round(r[2]) + (T)1) * s, eh = ((T)round(r[3]) + (T)1) * s;                \
            const T rh = eh - sh > (T)0.1 ? eh - sh : (T)0.1, rw = ew - sw > (T)0.1 ? ew - sw : (T)0.1; \
            const T bh = rh / (T)PH, bw = rw / (T)PW;                                                  \
            for (int c = 0; c < OC; c++)                                                               \
                for (int ph = 0; ph < PH; ph++)                                                        \
                    for (int pw = 0; pw < PW; pw++) {                                                  \
                        const int64_t hs = clampi((int64_t)floor(bh * (T)ph + sh), 0, H);              \
                        const int64_t he = clampi((int64_t)ceil(bh * (T)(ph + 1) + sh), 0, H);         \
                        const int64_t ws = clampi((int64_t)floor(bw * (T)pw + sw), 0, W);              \
                        const int64_t we = clampi((int64_t)ceil(bw * (T)(pw + 1) + sw), 0, W);         \
                        const int64_t oi = ((n * OC + c) * PH + ph) * PW + pw;                         \
                        const int64_t base = (ids[n] * C + ((int64_t)c * PH + ph) * PW + pw) * H * W;  \
                        const bool empty = he <= hs || we <= ws;                                       \
                        const double area = (double)((he - hs) * (we - ws));                           \
                        if (grad) {                                                                    \
                            if (empty) continue;                                                       \
                            const T d = (T)((double)((const T *)dv)[oi] / area);                       \
                            for (int64_t h = hs; h < he; h++)                                          \
                                for (int64_t w = ws; w < we; w++) ((T *)dxv)[base + h * W + w] += d;   \
                        } else {                                                                       \
                            double sum = 0;                                                            \
                            for (int64_t h = hs; h < he; h++)                                          \
                                for (int64_t w = ws; w < we; w++) sum += (double)x[base + h * W + w];  \
                            ((T *)ov)[oi] = empty ? (T)0 : (T)(sum / area);                            \
                        }                                                                              \
                    }                                                                                  \
        }                                                                                              \
        free(ids);                                                                                     \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int psroi_fwd_##SUF(oar_kernel_ctx_t *k) { return psroi_run_##SUF(k, false); }              \
    static int psroi_bwd_##SUF(oar_kernel_ctx_t *k) { return psroi_run_##SUF(k, true); }               \
    OAR_REGISTER_KERNEL("roi_pool", OAR_PLACE_CPU, DT, roip_fwd_##SUF)                                 \
    OAR_REGISTER_KERNEL("roi_pool_grad", OAR_PLACE_CPU, DT, roip_bwd_##SUF)                            \
    OAR_REGISTER_KERNEL("roi_align", OAR_PLACE_CPU, DT, roia_fwd_##SUF)                                \
    OAR_REGISTER_KERNEL("roi_align_grad", OAR_PLACE_CPU, DT, roia_bwd_##SUF)                           \
    OAR_REGISTER_KERNEL("psroi_pool", OAR_PLACE_CPU, DT, psroi_fwd_##SUF)                              \
    OAR_REGISTER_KERNEL("psroi_pool_grad", OAR_PLACE_CPU, DT, psroi_bwd_##SUF)

ROI_KERNELS(float, f32, OAR_FP32)
ROI_KERNELS(double, f64, OAR_FP64)

/* ---- prroi_pool: exact integrals of X's bilinear interpolation ---------- */

/* X at integer (h, w), 0 outside */
static inline double pr_at(const double *m, int64_t h, int64_t w, int64_t H, int64_t W) {
    return (h < 0 || w < 0 || h >= H || w >= W) ? 0 : m[h * W + w];
}

/* the bilinear interpolation at (y, x) (0 outside X) */
static double pr_interp(const double *m, double y, double x, int64_t H, int64_t W) {
    const int64_t h = (int64_t)floor(y), w = (int64_t)floor(x);
    const double dy = y - (double)h, dx = x - (double)w;
    return pr_at(m, h, w, H, W) * (1 - dy) * (1 - dx) + pr_at(m, h + 1, w, H, W) * dy * (1 - dx) +
           pr_at(m, h, w + 1, H, W) * (1 - dy) * dx + pr_at(m, h + 1, w + 1, H, W) * dy * dx;
}

/* the integral of the linear interpolation from c1 (at 0) to c2 (at 1) over [s, t] */
static inline double pr_line(double s, double t, double c1, double c2) {
    return 0.5 * (t * t - s * s) * c2 + (t - 0.5 * t * t - s + 0.5 * s * s) * c1;
}

/* one bin's window */
typedef struct { double y0, x0, y1, x1, area; } pr_win_t;

static pr_win_t pr_window(const double r[4], double scale, int ph, int pw, int PH, int PW) {
    const double sw = r[0] * scale, sh = r[1] * scale, ew = r[2] * scale, eh = r[3] * scale;
    const double bw = fmax(ew - sw, 0) / PW, bh = fmax(eh - sh, 0) / PH;
    pr_win_t g = {sh + bh * ph, sw + bw * pw, 0, 0, fmax(bw * bh, 0)};
    g.y1 = g.y0 + bh;
    g.x1 = g.x0 + bw;
    return g;
}

/* visits the four corner weights of every unit cell the window covers:
 * fn(h, w, weight) with weight the integral of that corner's bilinear basis */
#define PR_CELLS(g, BODY)                                                                              \
    for (int64_t w_ = (int64_t)floor((g).x0); w_ < (int64_t)ceil((g).x1); w_++)                        \
        for (int64_t h_ = (int64_t)floor((g).y0); h_ < (int64_t)ceil((g).y1); h_++) {                  \
            const double a0 = fmax((g).x0, (double)w_) - (double)w_, a1 = fmin((g).x1, (double)w_ + 1) - (double)w_; \
            const double b0 = fmax((g).y0, (double)h_) - (double)h_, b1 = fmin((g).y1, (double)h_ + 1) - (double)h_; \
            const double ia0 = (a1 - 0.5 * a1 * a1) - (a0 - 0.5 * a0 * a0), ia1 = 0.5 * (a1 * a1 - a0 * a0); \
            const double ib0 = (b1 - 0.5 * b1 * b1) - (b0 - 0.5 * b0 * b0), ib1 = 0.5 * (b1 * b1 - b0 * b0); \
            const int64_t hh_[4] = {h_, h_, h_ + 1, h_ + 1}, ww_[4] = {w_, w_ + 1, w_, w_ + 1};         \
            const double wt_[4] = {ib0 * ia0, ib0 * ia1, ib1 * ia0, ib1 * ia1};                         \
            for (int t_ = 0; t_ < 4; t_++) {                                                           \
                const int64_t ch = hh_[t_], cw = ww_[t_];                                              \
                const double cwt = wt_[t_];                                                            \
                BODY                                                                                   \
            }                                                                                          \
        }

/* X's map as doubles (the caller frees) */
#define PR_TO_DOUBLE(T, src, n, dst)                                                                   \
    do {                                                                                               \
        dst = malloc(sizeof(double) * (size_t)((n) + 1));                                              \
        if (dst)                                                                                       \
            for (int64_t i_ = 0; i_ < (n); i_++) dst[i_] = (double)(src)[i_];                          \
    } while (0)

#define PRROI_KERNELS(T, SUF, DT)                                                                      \
    static int prroi_run_##SUF(oar_kernel_ctx_t *k, bool grad) {                                       \
        const oar_prroi_attrs_t *a = oar_k_attrs(k);                                                   \
        oar_tensor_t *xt = oar_k_input(k, OAR_PRROI_X, 0), *rt = oar_k_input(k, OAR_PRROI_ROIS, 0);    \
        if (xt->ndim != 4 || rt->ndim != 2 || rt->dims[1] != 4)                                        \
            return oar_k_error(k, OAR_ERR_SHAPE, "X must be 4-D and ROIs [R, 4]");                     \
        const int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3], R = rt->dims[0]; \
        const int PH = a->pooled_height, PW = a->pooled_width;                                         \
        const int64_t M = R * C * PH * PW;                                                             \
        int64_t *ids;                                                                                  \
        OAR_TRY(roi_batch_ids_of(k, OAR_PRROI_ROIS, OAR_PRROI_BATCHROINUMS, true, N, &ids));           \
        const T *rois = oar_tensor_data(rt);                                                           \
        void *ov = NULL, *dxv = NULL, *drv = NULL;                                                     \
        const void *dv = NULL, *outv = NULL;                                                           \
        int rc;                                                                                        \
        if (grad) {                                                                                    \
            rc = oar_k_input_sized(k, OAR_PRROIG_DOUT, "Out@GRAD", DT, M, &dv);                        \
            if (rc == OAR_OK) rc = oar_k_input_sized(k, OAR_PRROIG_OUT, "Out", DT, M, &outv);          \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_PRROIG_DX, "X@GRAD", DT, N * C * H * W, true, &dxv); \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_PRROIG_DROIS, "ROIs@GRAD", DT, R * 4, true, &drv); \
            if (rc != OAR_OK || (!dxv && !drv)) { free(ids); return rc; }                              \
            if (dxv) memset(dxv, 0, sizeof(T) * (size_t)(N * C * H * W));                              \
            if (drv) memset(drv, 0, sizeof(T) * (size_t)(R * 4));                                      \
        } else {                                                                                       \
            rc = oar_k_output_sized(k, OAR_PRROI_OUT, "Out", DT, M, false, &ov);                       \
            if (rc != OAR_OK) { free(ids); return rc; }                                                \
        }                                                                                              \
        double *m;                                                                                     \
        PR_TO_DOUBLE(T, (const T *)oar_tensor_data(xt), N * C * H * W, m);                             \
        if (!m) { free(ids); return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate a copy of X"); }    \
        const double s = a->spatial_scale;                                                             \
        for (int64_t n = 0; n < R; n++) {                                                              \
            const double r[4] = {(double)rois[n * 4], (double)rois[n * 4 + 1], (double)rois[n * 4 + 2], \
                                 (double)rois[n * 4 + 3]};                                             \
            for (int64_t c = 0; c < C; c++) {                                                          \
                const double *mc = m + (ids[n] * C + c) * H * W;                                       \
                for (int ph = 0; ph < PH; ph++)                                                        \
                    for (int pw = 0; pw < PW; pw++) {                                                  \
                        const int64_t oi = ((n * C + c) * PH + ph) * PW + pw;                          \
                        const pr_win_t g = pr_window(r, s, ph, pw, PH, PW);                            \
                        if (!grad) {                                                                   \
                            double sum = 0;                                                            \
                            if (g.area > 0) PR_CELLS(g, { sum += pr_at(mc, ch, cw, H, W) * cwt; })     \
                            ((T *)ov)[oi] = g.area > 0 ? (T)(sum / g.area) : (T)0;                     \
                            continue;                                                                  \
                        }                                                                              \
                        if (!(g.area > 0)) continue;                                                   \
                        const double dy = (double)((const T *)dv)[oi], out = (double)((const T *)outv)[oi]; \
                        if (dxv) {                                                                     \
                            T *dxc = (T *)dxv + (ids[n] * C + c) * H * W;                              \
                            const double d = dy / g.area;                                              \
                            PR_CELLS(g, { if (ch >= 0 && cw >= 0 && ch < H && cw < W) dxc[ch * W + cw] += (T)(d * cwt); }) \
                        }                                                                              \
                        if (!drv) continue;                                                            \
                        /* the integrals along the window's four edges */                              \
                        double gx0 = 0, gx1 = 0, gy0 = 0, gy1 = 0;                                     \
                        for (int64_t h = (int64_t)floor(g.y0); h < (int64_t)ceil(g.y1); h++) {         \
                            const double lo = fmax(g.y0, (double)h) - h, hi = fmin(g.y1, (double)h + 1) - h; \
                            gx0 += pr_line(lo, hi, pr_interp(mc, h, g.x0, H, W), pr_interp(mc, h + 1, g.x0, H, W)); \
                            gx1 += pr_line(lo, hi, pr_interp(mc, h, g.x1, H, W), pr_interp(mc, h + 1, g.x1, H, W)); \
                        }                                                                              \
                        for (int64_t w = (int64_t)floor(g.x0); w < (int64_t)ceil(g.x1); w++) {         \
                            const double lo = fmax(g.x0, (double)w) - w, hi = fmin(g.x1, (double)w + 1) - w; \
                            gy0 += pr_line(lo, hi, pr_interp(mc, g.y0, w, H, W), pr_interp(mc, g.y0, w + 1, H, W)); \
                            gy1 += pr_line(lo, hi, pr_interp(mc, g.y1, w, H, W), pr_interp(mc, g.y1, w + 1, H, W)); \
                        }                                                                              \
                        /* d Out / d (window edge), times d edge / d (scaled corner) */                \
                        const double px0 = (-gx0 + (g.y1 - g.y0) * out) / g.area * s;                  \
                        const double px1 = (gx1 - (g.y1 - g.y0) * out) / g.area * s;                   \
                        const double py0 = (-gy0 + (g.x1 - g.x0) * out) / g.area * s;                  \
                        const double py1 = (gy1 - (g.x1 - g.x0) * out) / g.area * s;                   \
                        T *dr = (T *)drv + n * 4;                                                      \
                        dr[0] += (T)((px0 * (1. - (double)pw / PW) + px1 * (1. - (double)(pw + 1) / PW)) * dy); \
                        dr[1] += (T)((py0 * (1. - (double)ph / PH) + py1 * (1. - (double)(ph + 1) / PH)) * dy); \
                        dr[2] += (T)((px1 * (double)(pw + 1) / PW + px0 * (double)pw / PW) * dy);      \
                        dr[3] += (T)((py1 * (double)(ph + 1) / PH + py0 * (double)ph / PH) * dy);      \
                    }                                                                                  \
            }                                                                                          \
        }                                                                                              \
        free(m);                                                                                       \
        free(ids);                                                                                     \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int prroi_fwd_##SUF(oar_kernel_ctx_t *k) { return prroi_run_##SUF(k, false); }              \
    static int prroi_bwd_##SUF(oar_kernel_ctx_t *k) { return prroi_run_##SUF(k, true); }               \
    OAR_REGISTER_KERNEL("prroi_pool", OAR_PLACE_CPU, DT, prroi_fwd_##SUF)                              \
    OAR_REGISTER_KERNEL("prroi_pool_grad", OAR_PLACE_CPU, DT, prroi_bwd_##SUF)

PRROI_KERNELS(float, f32, OAR_FP32)
PRROI_KERNELS(double, f64, OAR_FP64)
