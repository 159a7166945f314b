/* pool_index.c — max_pool2d_with_index, max_pool3d_with_index, unpool and
 * spp (Fluid 1.8): the inference and the decoders' steps; the ops (slots,
 * attributes, docs) are declared in pool_index.ops, the geometry in
 * pool_index_util.h, the grads are oar_grad_default. Kernels in
 * kernels/cpu/pool_index.c. */
#include "op.h"
#include "pool_index_util.h"
#include "ops/infer_util.h"

/* an INTS attr of n values (or def each when empty and def >= 0), each >= lo,
 * into out[3 - n ..] */
static void dec_list(oar_decode_ctx_t *d, const char *name, int n, int64_t def, int64_t lo, int64_t out[3]) {
    oar_ints_t v = oar_dec_ints(d, name);
    const int off = 3 - n;
    if (v.n == 0 && def >= 0) {
        for (int i = off; i < 3; i++) out[i] = def;
        return;
    }
    if (v.n != n) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr %s must hold %d values, got %d", name, n, v.n);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (v.v[i] < lo) {
            oar_dec_error(d, OAR_ERR_INVALID, "attr %s[%d] = %d must be >= %lld", name, i, (int)v.v[i], (long long)lo);
            return;
        }
        out[off + i] = v.v[i];
    }
}

static void pwi_finish(oar_decode_ctx_t *d, oar_pwi_attrs_t *a) {
    for (int i = 0; i < 3; i++) { a->ks[i] = 1; a->st[i] = 1; a->pd[i] = 0; }
    if (!a->global) dec_list(d, "ksize", a->nd, -1, 1, a->ks);
    dec_list(d, "strides", a->nd, 1, 1, a->st);
    dec_list(d, "paddings", a->nd, 0, 0, a->pd);
}

static int pwi_infer(oar_infer_ctx_t *c) {
    const oar_pwi_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int xn;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    char xs[160];
    oar_shape_str(x, xn, xs, sizeof xs);
    if (xn != a->nd + 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X ('%s') must be %d-D %s, got shape %s", oar_ic_in_name(c, "X", 0),
                            a->nd + 2, a->nd == 2 ? "[N, C, H, W]" : "[N, C, D, H, W]", xs);
    oar_pwi_geom_t g;
    if (oar_pwi_plan(a, x + 2, &g) != OAR_OK) {
        const int i = 3 - a->nd + g.bad;
        return oar_ic_error(c, OAR_ERR_SHAPE, "output would be empty: X ('%s') %s, spatial dim %d of size %lld, "
                            "ksize %lld, paddings %lld on each side", oar_ic_in_name(c, "X", 0), xs, g.bad,
                            (long long)g.in[i], (long long)g.ks[i], (long long)g.pd[i]);
    }
    int64_t out[5] = {x[0], x[1], 0, 0, 0};
    for (int i = 0; i < a->nd; i++) out[2 + i] = g.out[3 - a->nd + i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, xn, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out(c, "Mask", 0, out, xn, OAR_INT32);
}

static void unpool_finish(oar_decode_ctx_t *d, oar_unpool_attrs_t *a) {
    int64_t t[3] = {0, 0, 0};
    dec_list(d, "ksize", 2, -1, 1, t);
    a->ks[0] = t[1]; a->ks[1] = t[2];
    dec_list(d, "strides", 2, 1, 1, t);
    a->st[0] = t[1]; a->st[1] = t[2];
    dec_list(d, "paddings", 2, 0, 0, t);
    a->pd[0] = t[1]; a->pd[1] = t[2];
    oar_ints_t o = oar_dec_ints(d, "output_size");
    a->osz[0] = a->osz[1] = 0;
    if (o.n == 2 && o.v[0] > 0 && o.v[1] > 0) { a->osz[0] = o.v[0]; a->osz[1] = o.v[1]; }
    else if (o.n != 0 && !(o.n == 2 && o.v[0] == 0 && o.v[1] == 0))
        oar_dec_error(d, OAR_ERR_INVALID, "attr output_size must be empty, {0, 0} or 2 positive values {height, width}");
}

static int unpool_infer(oar_infer_ctx_t *c) {
    const oar_unpool_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x;
    OAR_TRY(float_x_nchw(c, &x));
    int in;
    const int idt = oar_ic_in_dtype(c, "Indices", 0);
    if (idt >= 0 && idt != OAR_INT32 && idt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "Indices ('%s') must be int32 or int64, it is %s",
                            oar_ic_in_name(c, "Indices", 0), oar_dtype_name(idt));
    OAR_TRY(oar_ic_check_same_dims(c, "Indices", "X"));
    const int64_t *id = oar_ic_in_dims(c, "Indices", 0, &in);
    if (!id) return OAR_ERR_SHAPE;
    int64_t out[4] = {x[0], x[1], oar_unpool_out(x[2], a->ks[0], a->st[0], a->pd[0]),
                      oar_unpool_out(x[3], a->ks[1], a->st[1], a->pd[1])};
    if (a->osz[0] > 0) { out[2] = a->osz[0]; out[3] = a->osz[1]; }
    if ((x[2] >= 0 && out[2] <= 0) || (x[3] >= 0 && out[3] <= 0))
        return oar_ic_error(c, OAR_ERR_SHAPE, "the output would be empty: (in - 1) stride - 2 padding + ksize <= 0 "
                            "for X ('%s')", oar_ic_in_name(c, "X", 0));
    return oar_ic_set_out(c, "Out", 0, out, 4, oar_ic_in_dtype(c, "X", 0));
}

static int spp_infer(oar_infer_ctx_t *c) {
    const oar_spp_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x;
    OAR_TRY(float_x_nchw(c, &x));
    const int64_t cells = (((int64_t)1 << (2 * a->pyramid_height)) - 1) / 3;
    const int64_t out[2] = {x[0], x[1] < 0 ? -1 : x[1] * cells};
    return oar_ic_set_out(c, "Out", 0, out, 2, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/pool_index.h"   /* the tables, decoders and registrations */
