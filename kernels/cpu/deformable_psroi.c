/* deformable_psroi.c — CPU kernels of deformable_psroi_pooling and its
 * grad (float32, float64), with Paddle 1.8's geometry (see the op's doc);
 * the grad adds back in one fixed order. Paddle's grad kernel reads the
 * part column with part_height; oar uses part_width in both directions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "ops/deformable_psroi.h"

/* the image of each ROI from the ROIs' last LoD level (the caller frees) */
static int dps_ids(oar_kernel_ctx_t *k, const oar_tensor_t *rois, int64_t n_img, int64_t **ids) {
    const int64_t nr = rois->dims[0];
    if (rois->lod_levels == 0)
        return oar_k_error(k, OAR_ERR_INVALID, "ROIs ('%s') has no LoD: cannot tell which image each ROI belongs to",
                           oar_k_input_name(k, OAR_DPSROI_ROIS, 0));
    const int64_t *off = rois->lod[rois->lod_levels - 1], n = rois->lod_size[rois->lod_levels - 1];
    if (n - 1 != n_img || off[n - 1] != nr)
        return oar_k_error(k, OAR_ERR_SHAPE, "the LoD of ROIs has %lld sequences over %lld ROIs, expected one per "
                           "image of Input (%lld) over %lld", (long long)(n - 1), (long long)off[n - 1],
                           (long long)n_img, (long long)nr);
    *ids = malloc(sizeof(int64_t) * (size_t)(nr + 1));
    if (!*ids) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate the ROIs' image ids");
    for (int64_t b = 0; b < n - 1; b++)
        for (int64_t i = off[b]; i < off[b + 1]; i++) (*ids)[i] = b;
    return OAR_OK;
}

/* one bin's sampling geometry */
typedef struct {
    double ws, hs, sub_w, sub_h, rw, rh;
    int64_t chan, tx, ty;   /* Input channel; Trans's x and y index (-1 without trans) */
} dps_bin_t;

/* the bin without its Trans shift (ws, hs); tx, ty index Trans (-1 with no_trans) */
static dps_bin_t dps_bin(const oar_dpsroi_attrs_t *a, const double r[4], int64_t n, int64_t ncls, int64_t ctop,
                         int ph, int pw) {
    dps_bin_t g;
    const double s = a->spatial_scale;
    const double sw = round(r[0]) * s - 0.5, sh = round(r[1]) * s - 0.5;
    const double ew = (round(r[2]) + 1.) * s - 0.5, eh = (round(r[3]) + 1.) * s - 0.5;
    g.rw = fmax(ew - sw, 0.1);
    g.rh = fmax(eh - sh, 0.1);
    const double bh = g.rh / a->pooled_height, bw = g.rw / a->pooled_width;
    g.sub_h = bh / a->sample_per_part;
    g.sub_w = bw / a->sample_per_part;
    const int PTH = a->part_size.v[0], PTW = a->part_size.v[1];
    const int64_t part_h = (int64_t)floor((double)ph / a->pooled_height * PTH);
    const int64_t part_w = (int64_t)floor((double)pw / a->pooled_width * PTW);
    g.tx = g.ty = -1;
    if (!a->no_trans) {
        const int64_t cls = ctop / (a->output_dim / ncls);
        g.tx = (((n * ncls + cls) * 2) * PTH + part_h) * PTW + part_w;
        g.ty = (((n * ncls + cls) * 2 + 1) * PTH + part_h) * PTW + part_w;
    }
    g.ws = pw * bw + sw;
    g.hs = ph * bh + sh;
    const int GH = a->group_size.v[0], GW = a->group_size.v[1];
    int64_t gw = (int64_t)floor((double)pw * GW / a->pooled_width), gh = (int64_t)floor((double)ph * GH / a->pooled_height);
    gw = gw < 0 ? 0 : (gw > GW - 1 ? GW - 1 : gw);
    gh = gh < 0 ? 0 : (gh > GH - 1 ? GH - 1 : gh);
    g.chan = (ctop * GH + gh) * GW + gw;
    return g;
}

#define DPS_KERNELS(T, SUF, DT)                                                                        \
    static int dps_run_##SUF(oar_kernel_ctx_t *k, bool grad) {                                         \
        const oar_dpsroi_attrs_t *a = oar_k_attrs(k);                                                  \
        oar_tensor_t *xt = oar_k_input(k, OAR_DPSROI_INPUT, 0), *rt = oar_k_input(k, OAR_DPSROI_ROIS, 0); \
        oar_tensor_t *tt = oar_k_input(k, OAR_DPSROI_TRANS, 0);                                        \
        if (xt->ndim != 4 || rt->ndim != 2 || rt->dims[1] != 4)                                        \
            return oar_k_error(k, OAR_ERR_SHAPE, "Input must be 4-D and ROIs [R, 4]");                 \
        const int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3], R = rt->dims[0]; \
        const int OD = a->output_dim, PH = a->pooled_height, PW = a->pooled_width, S = a->sample_per_part; \
        int64_t ncls = 1;                                                                              \
        if (!a->no_trans) {                                                                            \
            if (tt->ndim != 4 || tt->dims[0] != R || tt->dims[1] < 2 || tt->dims[2] != a->part_size.v[0] || \
                tt->dims[3] != a->part_size.v[1] || OD % (tt->dims[1] / 2))                            \
                return oar_k_error(k, OAR_ERR_SHAPE, "Trans ('%s') must be [R, 2 * num_classes, part_size...]", \
                                   oar_k_input_name(k, OAR_DPSROI_TRANS, 0));                          \
            ncls = tt->dims[1] / 2;                                                                    \
        }                                                                                              \
        if (C < (int64_t)OD * a->group_size.v[0] * a->group_size.v[1])                                 \
            return oar_k_error(k, OAR_ERR_SHAPE, "Input has too few channels for output_dim and group_size"); \
        const int64_t M = R * OD * PH * PW;                                                            \
        int64_t *ids;                                                                                  \
        OAR_TRY(dps_ids(k, rt, N, &ids));                                                              \
        void *ov = NULL, *cv = NULL, *dxv = NULL, *dtv = NULL;                                         \
        const void *dv = NULL, *tcv = NULL;                                                            \
        int rc;                                                                                        \
        if (grad) {                                                                                    \
            rc = oar_k_input_sized(k, OAR_DPSROIG_DOUT, "Output@GRAD", DT, M, &dv);                    \
            if (rc == OAR_OK) rc = oar_k_input_sized(k, OAR_DPSROIG_TOPCOUNT, "TopCount", DT, M, &tcv); \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_DPSROIG_DX, "Input@GRAD", DT, N * C * H * W, true, &dxv); \
            if (rc == OAR_OK && !a->no_trans)                                                          \
                rc = oar_k_output_sized(k, OAR_DPSROIG_DTRANS, "Trans@GRAD", DT, oar_tensor_numel(tt), true, &dtv); \
            if (rc != OAR_OK || (!dxv && !dtv)) { free(ids); return rc; }                              \
            if (dxv) memset(dxv, 0, sizeof(T) * (size_t)(N * C * H * W));                              \
            if (dtv) memset(dtv, 0, sizeof(T) * (size_t)oar_tensor_numel(tt));                         \
        } else {                                                                                       \
            rc = oar_k_output_sized(k, OAR_DPSROI_OUTPUT, "Output", DT, M, false, &ov);                \
            if (rc == OAR_OK) rc = oar_k_output_sized(k, OAR_DPSROI_TOPCOUNT, "TopCount", DT, M, false, &cv); \
            if (rc != OAR_OK) { free(ids); return rc; }                                                \
        }                                                                                              \
        const T *x = oar_tensor_data(xt), *rois = oar_tensor_data(rt);                                 \
        const T *tr = a->no_trans ? NULL : oar_tensor_data(tt);                                        \
        for (int64_t n = 0; n < R; n++) {                                                              \
            const double r[4] = {(double)rois[n * 4], (double)rois[n * 4 + 1], (double)rois[n * 4 + 2], \
                                 (double)rois[n * 4 + 3]};                                             \
            for (int64_t ctop = 0; ctop < OD; ctop++)                                                  \
                for (int ph = 0; ph < PH; ph++)                                                        \
                    for (int pw = 0; pw < PW; pw++) {                                                  \
                        const int64_t oi = ((n * OD + ctop) * PH + ph) * PW + pw;                      \
                        dps_bin_t g = dps_bin(a, r, n, ncls, ctop, ph, pw);                            \
                        if (!a->no_trans) {                                                            \
                            g.ws += (double)tr[g.tx] * a->trans_std * g.rw;                            \
                            g.hs += (double)tr[g.ty] * a->trans_std * g.rh;                            \
                        }                                                                              \
                        const T *xc = x + (ids[n] * C + g.chan) * H * W;                               \
                        double sum = 0, cnt = 0;                                                       \
                        const double d = grad && ((const T *)tcv)[oi] > 0                              \
                                             ? (double)((const T *)dv)[oi] / (double)((const T *)tcv)[oi] : 0; \
                        if (grad && d == 0) continue;                                                  \
                        for (int ih = 0; ih < S; ih++)                                                 \
                            for (int iw = 0; iw < S; iw++) {                                           \
                                double w = g.ws + iw * g.sub_w, h = g.hs + ih * g.sub_h;               \
                                if (w < -0.5 || w > W - 0.5 || h < -0.5 || h > H - 0.5) continue;      \
                                w = fmin(fmax(w, 0.), (double)(W - 1));                                \
                                h = fmin(fmax(h, 0.), (double)(H - 1));                                \
                                const int64_t x0 = (int64_t)floor(w), x1 = (int64_t)ceil(w);           \
                                const int64_t y0 = (int64_t)floor(h), y1 = (int64_t)ceil(h);           \
                                const double dx = w - x0, dy = h - y0;                                 \
                                const double u00 = xc[y0 * W + x0], u01 = xc[y1 * W + x0];             \
                                const double u10 = xc[y0 * W + x1], u11 = xc[y1 * W + x1];             \
                                if (!grad) {                                                           \
                                    sum += (1 - dx) * (1 - dy) * u00 + (1 - dx) * dy * u01 + dx * (1 - dy) * u10 + \
                                           dx * dy * u11;                                              \
                                    cnt++;                                                             \
                                    continue;                                                          \
                                }                                                                      \
                                if (dxv) {                                                             \
                                    T *gx = (T *)dxv + (ids[n] * C + g.chan) * H * W;                  \
                                    gx[y0 * W + x0] += (T)((1 - dx) * (1 - dy) * d);                   \
                                    gx[y1 * W + x0] += (T)((1 - dx) * dy * d);                         \
                                    gx[y0 * W + x1] += (T)(dx * (1 - dy) * d);                         \
                                    gx[y1 * W + x1] += (T)(dx * dy * d);                               \
                                }                                                                      \
                                if (dtv) {                                                             \
                                    const double ddx = (u11 * dy + u10 * (1 - dy) - u01 * dy - u00 * (1 - dy)) * \
                                                       a->trans_std * d * g.rw;                        \
                                    const double ddy = (u11 * dx + u01 * (1 - dx) - u10 * dx - u00 * (1 - dx)) * \
                                                       a->trans_std * d * g.rh;                        \
                                    ((T *)dtv)[g.tx] += (T)ddx;                                        \
                                    ((T *)dtv)[g.ty] += (T)ddy;                                        \
                                }                                                                      \
                            }                                                                          \
                        if (!grad) {                                                                   \
                            ((T *)ov)[oi] = cnt > 0 ? (T)(sum / cnt) : (T)0;                           \
                            ((T *)cv)[oi] = (T)cnt;                                                    \
                        }                                                                              \
                    }                                                                                  \
        }                                                                                              \
        free(ids);                                                                                     \
        return OAR_OK;                                                                                 \
    }                                                                                                  \
    static int dps_fwd_##SUF(oar_kernel_ctx_t *k) { return dps_run_##SUF(k, false); }                  \
    static int dps_bwd_##SUF(oar_kernel_ctx_t *k) { return dps_run_##SUF(k, true); }                   \
    OAR_REGISTER_KERNEL("deformable_psroi_pooling", OAR_PLACE_CPU, DT, dps_fwd_##SUF)                  \
    OAR_REGISTER_KERNEL("deformable_psroi_pooling_grad", OAR_PLACE_CPU, DT, dps_bwd_##SUF)

DPS_KERNELS(float, f32, OAR_FP32)
DPS_KERNELS(double, f64, OAR_FP64)
