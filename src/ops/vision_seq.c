/* vision_seq.c — im2sequence and conv_shift (Fluid 1.8): the inference and
 * im2sequence's decoder step; the ops are declared in vision_seq.ops, the
 * grads are oar_grad_default. Kernels in kernels/cpu/vision_seq.c. */
#include "op.h"
#include "ops/vision_seq.h"   /* generated from vision_seq.ops */
#include "ops/tensor_value.h"

static void i2s_finish(oar_decode_ctx_t *d, oar_i2s_attrs_t *a) {
    oar_ints_t k = oar_dec_ints(d, "kernels"), s = oar_dec_ints(d, "strides"), p = oar_dec_ints(d, "paddings");
    if (k.n != 2 || k.v[0] < 1 || k.v[1] < 1) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr kernels must hold 2 values {height, width}, each >= 1");
        return;
    }
    a->ks[0] = k.v[0]; a->ks[1] = k.v[1];
    a->st[0] = a->st[1] = 1;
    if (s.n != 0 && (s.n != 2 || s.v[0] < 1 || s.v[1] < 1)) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr strides must hold 2 values {height, width}, each >= 1");
        return;
    }
    if (s.n == 2) { a->st[0] = s.v[0]; a->st[1] = s.v[1]; }
    for (int i = 0; i < 4; i++) a->pd[i] = 0;
    if (p.n == 2) { a->pd[0] = a->pd[2] = p.v[0]; a->pd[1] = a->pd[3] = p.v[1]; }
    else if (p.n == 4) { for (int i = 0; i < 4; i++) a->pd[i] = p.v[i]; }
    else if (p.n != 0) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr paddings must hold 4 values {up, left, down, right} (or 2), got %d",
                      p.n);
        return;
    }
    for (int i = 0; i < 4; i++)
        if (a->pd[i] < 0) oar_dec_error(d, OAR_ERR_INVALID, "attr paddings must be >= 0");
    oar_ints_t o = oar_dec_ints(d, "out_stride");
    a->os[0] = a->os[1] = 1;
    if (o.n != 0 && (o.n != 2 || o.v[0] < 1 || o.v[1] < 1)) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr out_stride must hold 2 values {height, width}, each >= 1");
        return;
    }
    if (o.n == 2) { a->os[0] = o.v[0]; a->os[1] = o.v[1]; }
}

/* the rows of image sizes (h, w) real: ceil(real / out_stride), then the window count */
static int64_t i2s_rows_of(const oar_i2s_attrs_t *a, int64_t h, int64_t w) {
    const int64_t rh = (h + a->os[0] - 1) / a->os[0], rw = (w + a->os[1] - 1) / a->os[1];
    const int64_t gh = rh + a->pd[0] + a->pd[2] - a->ks[0], gw = rw + a->pd[1] + a->pd[3] - a->ks[1];
    if (gh < 0 || gw < 0) return -1;
    return (gh / a->st[0] + 1) * (gw / a->st[1] + 1);
}

static int i2s_infer(oar_infer_ctx_t *c) {
    const oar_i2s_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    char xs[128];
    oar_shape_str(x, xn, xs, sizeof xs);
    if (xn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be 4-D [N, C, H, W], got shape %s",
                            oar_ic_in_name(c, "X", 0), xs);
    int64_t o[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        if (x[2 + i] < 0) continue;
        const int64_t room = x[2 + i] + a->pd[i] + a->pd[i + 2] - a->ks[i];
        if (room < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') %s: the %s window %lld is larger than the padded input "
                                "%lld", oar_ic_in_name(c, "X", 0), xs, i ? "width" : "height", (long long)a->ks[i],
                                (long long)(room + a->ks[i]));
        o[i] = room / a->st[i] + 1;
    }
    int64_t rows = (x[0] < 0 || o[0] < 0 || o[1] < 0) ? -1 : x[0] * o[0] * o[1];
    if (oar_ic_in_present(c, "Y") && x[0] != 1) {
        /* Fluid's inference path: each image's grid from its real size (read at run time) */
        int yn;
        const int64_t *yd = oar_ic_in_dims(c, "Y", 0, &yn);
        if (!yd) return OAR_ERR_SHAPE;
        if (yn != 2 || !oar_dim_eq(yd[0], x[0]) || !oar_dim_eq(yd[1], 2)) {
            char ys[96];
            return oar_ic_error(c, OAR_ERR_SHAPE, "Y ('%s') must be [N, 2] = [%lld, 2] (each image's real height and "
                                "width), got shape %s", oar_ic_in_name(c, "Y", 0), (long long)x[0],
                                oar_shape_str(yd, yn, ys, sizeof ys));
        }
        const oar_tensor_t *yt = oar_ic_in_tensor(c, "Y", 0);
        rows = -1;
        if (yt) {
            rows = 0;
            for (int64_t b = 0; b < x[0]; b++) {
                double h, w;
                if (!oar_tensor_value_f64(yt, 2 * b, &h) || !oar_tensor_value_f64(yt, 2 * b + 1, &w) || !(h >= 1 && w >= 1 && h < 1e9 && w < 1e9))
                    return oar_ic_error(c, OAR_ERR_INVALID, "Y ('%s') row %lld must hold two sizes >= 1",
                                        oar_ic_in_name(c, "Y", 0), (long long)b);
                const int64_t r = i2s_rows_of(a, (int64_t)h, (int64_t)w);
                if (r <= 0)
                    return oar_ic_error(c, OAR_ERR_SHAPE, "Y ('%s') row %lld: the real size %g x %g holds no window",
                                        oar_ic_in_name(c, "Y", 0), (long long)b, h, w);
                rows += r;
            }
        }
    }
    const int64_t cols = x[1] < 0 ? -1 : x[1] * a->ks[0] * a->ks[1];
    const int64_t od[2] = {rows, cols};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out_lod_level(c, "Out", 0, 1);
}

static int cshift_infer(oar_infer_ctx_t *c) {
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    int xn, yn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    const int64_t *y = oar_ic_in_dims(c, "Y", 0, &yn);
    if (!y) return OAR_ERR_SHAPE;
    char xs[96], ys[96];
    oar_shape_str(x, xn, xs, sizeof xs);
    oar_shape_str(y, yn, ys, sizeof ys);
    if (xn != 2 || yn != 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') %s and Y ('%s') %s must be 2-D", oar_ic_in_name(c, "X", 0), xs,
                            oar_ic_in_name(c, "Y", 0), ys);
    if (!oar_dim_eq(x[0], y[0]))
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') %s and Y ('%s') %s must have the same batch size",
                            oar_ic_in_name(c, "X", 0), xs, oar_ic_in_name(c, "Y", 0), ys);
    if (y[1] >= 0 && (y[1] % 2 != 1 || (x[1] >= 0 && y[1] > x[1])))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Y ('%s') %s: its width must be odd and at most X's width (X is %s)",
                            oar_ic_in_name(c, "Y", 0), ys, xs);
    return oar_infer_same_as(c, "X", "Out");
}

#define OAR_OPS_DEFINE
#include "ops/vision_seq.h"   /* the tables, decoders and registrations */
