/* conv3d.c — inference, decoders' steps and grad makers of conv3d and
 * conv3d_transpose (Fluid 1.8, NCDHW or NDHWC) and their grad ops; the ops
 * (slots, attributes, docs) are declared in conv3d.ops, the geometry in
 * conv3d_util.h. Kernels in kernels/cpu/conv3d.c. */
#include "op.h"
#include "conv3d_util.h"   /* includes ops/conv3d.h */
#include "ops/conv_grad.h"
#include "ops/double_grad_makers.h"

#include <string.h>

/* ---- decoding ------------------------------------------------------------ */
static void conv3d_finish(oar_decode_ctx_t *d, oar_conv3d_attrs_t *a) {
    oar_win_dec_triple(d, "strides", 1, 1, a->st);
    oar_win_dec_triple(d, "dilations", 1, 1, a->dl);
    oar_win_dec_pads3(d, a->pd);
}

/* output_size / output_padding: empty, or 3 values (output_size >= 1,
 * output_padding >= 0); unset reads as 0 */
static void c3t_dec_opt3(oar_decode_ctx_t *d, const char *name, int64_t lo, int64_t out[3]) {
    oar_ints_t v = oar_dec_ints(d, name);
    out[0] = out[1] = out[2] = 0;
    if (v.n == 0) return;
    if (v.n != 3) {
        oar_dec_error(d, OAR_ERR_INVALID, "attr %s must hold 3 values (depth, height, width) or none, got %d", name,
                      v.n);
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (v.v[i] < lo) {
            oar_dec_error(d, OAR_ERR_INVALID, "attr %s = {%d, %d, %d}: each value must be >= %lld", name, (int)v.v[0],
                          (int)v.v[1], (int)v.v[2], (long long)lo);
            return;
        }
        out[i] = v.v[i];
    }
}

static void c3t_finish(oar_decode_ctx_t *d, oar_c3t_attrs_t *a) {
    oar_win_dec_triple(d, "strides", 1, 1, a->st);
    oar_win_dec_triple(d, "dilations", 1, 1, a->dl);
    oar_win_dec_pads3(d, a->pd);
    c3t_dec_opt3(d, "output_size", 1, a->osz);
    c3t_dec_opt3(d, "output_padding", 0, a->opad);
}

/* ---- inference ----------------------------------------------------------- */
/* Input and Filter: float, one dtype; their dims */
static int c3_inputs(oar_infer_ctx_t *c, const int64_t **x, int *xn, const int64_t **f, int *fn) {
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    OAR_TRY(oar_ic_check_float(c, "Filter", oar_ic_in_dtype(c, "Input", 0)));
    *x = oar_ic_in_dims(c, "Input", 0, xn);
    if (!*x) return OAR_ERR_SHAPE;
    *f = oar_ic_in_dims(c, "Filter", 0, fn);
    if (!*f) return OAR_ERR_SHAPE;
    return OAR_OK;
}

static int conv3d_geom(oar_infer_ctx_t *c, oar_c3_geom_t *g) {
    const oar_conv3d_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *f;
    int xn, fn;
    OAR_TRY(c3_inputs(c, &x, &xn, &f, &fn));
    char why[320];
    int rc = oar_c3_conv_geometry(a, x, xn, f, fn, oar_ic_in_name(c, "Input", 0), oar_ic_in_name(c, "Filter", 0), g,
                                  why, sizeof why);
    return rc == OAR_OK ? OAR_OK : oar_ic_error(c, rc, "%s", why);
}

static int conv3d_infer(oar_infer_ctx_t *c) {
    const oar_conv3d_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (oar_ic_in_present(c, "ResidualData") || a->fuse_residual || a->fuse_relu)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "ResidualData, fuse_residual_connection and fuse_relu are "
                            "Paddle's oneDNN fusions; oar's conv3d does not fuse (add and activate after it)");
    oar_c3_geom_t g;
    OAR_TRY(conv3d_geom(c, &g));
    int64_t od[5];
    oar_c3_physical(g.n, g.m, g.vout, g.cl, od);
    return oar_ic_set_out(c, "Output", 0, od, 5, oar_ic_in_dtype(c, "Input", 0));
}

/* Output@GRAD must have the forward output's dims */
static int c3_check_dout(oar_infer_ctx_t *c, const int64_t want[5]) {
    int nd;
    const int64_t *dd = oar_ic_in_dims(c, "Output@GRAD", 0, &nd);
    if (!dd) return OAR_ERR_SHAPE;
    bool ok = nd == 5;
    for (int i = 0; ok && i < 5; i++) ok = oar_dim_eq(dd[i], want[i]);
    if (!ok) {
        char b1[128], b2[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Output@GRAD '%s' has shape %s, expected the output's %s",
                            oar_ic_in_name(c, "Output@GRAD", 0), oar_shape_str(dd, nd, b1, sizeof b1),
                            oar_shape_str(want, 5, b2, sizeof b2));
    }
    return oar_infer_grad_like_inputs(c);
}

static int conv3d_grad_infer(oar_infer_ctx_t *c) {
    oar_c3_geom_t g;
    OAR_TRY(conv3d_geom(c, &g));
    int64_t od[5];
    oar_c3_physical(g.n, g.m, g.vout, g.cl, od);
    return c3_check_dout(c, od);
}

static int c3t_geom(oar_infer_ctx_t *c, oar_c3_geom_t *g) {
    const oar_c3t_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *f;
    int xn, fn;
    OAR_TRY(c3_inputs(c, &x, &xn, &f, &fn));
    char why[320];
    int rc = oar_c3_convt_geometry(a, x, xn, f, fn, oar_ic_in_name(c, "Input", 0), oar_ic_in_name(c, "Filter", 0), g,
                                   why, sizeof why);
    return rc == OAR_OK ? OAR_OK : oar_ic_error(c, rc, "%s", why);
}

static int c3t_infer(oar_infer_ctx_t *c) {
    oar_c3_geom_t g;
    OAR_TRY(c3t_geom(c, &g));
    int64_t od[5];
    oar_c3_physical(g.n, g.c, g.vin, g.cl, od);
    return oar_ic_set_out(c, "Output", 0, od, 5, oar_ic_in_dtype(c, "Input", 0));
}

static int c3t_grad_infer(oar_infer_ctx_t *c) {
    oar_c3_geom_t g;
    OAR_TRY(c3t_geom(c, &g));
    int64_t od[5];
    oar_c3_physical(g.n, g.c, g.vin, g.cl, od);
    return c3_check_dout(c, od);
}

/* conv3d_grad_grad: the forward's geometry checks Input and Filter;
 * DDInput and DDFilter as Input and Filter; DDOutput like DOutput, DInput
 * like Input, DFilter like Filter */
static int conv3d_gg_infer(oar_infer_ctx_t *c) {
    static const char *const like[][2] = { { "DDOutput", "DOutput" }, { "DInput", "Input" }, { "DFilter", "Filter" } };
    oar_c3_geom_t g;
    OAR_TRY(conv3d_geom(c, &g));
    if (oar_ic_in_present(c, "DDInput")) OAR_TRY(oar_ic_check_same_dims(c, "DDInput", "Input"));
    if (oar_ic_in_present(c, "DDFilter")) OAR_TRY(oar_ic_check_same_dims(c, "DDFilter", "Filter"));
    int nd;
    const int64_t *dd = oar_ic_in_dims(c, "DOutput", 0, &nd);
    if (!dd) return OAR_ERR_SHAPE;
    int64_t want[5];
    oar_c3_physical(g.n, g.m, g.vout, g.cl, want);
    bool ok = nd == 5;
    for (int i = 0; ok && i < 5; i++) ok = oar_dim_eq(dd[i], want[i]);
    if (!ok) {
        char b1[128], b2[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "DOutput '%s' has shape %s, expected the output's %s",
                            oar_ic_in_name(c, "DOutput", 0), oar_shape_str(dd, nd, b1, sizeof b1),
                            oar_shape_str(want, 5, b2, sizeof b2));
    }
    for (int i = 0; i < 3; i++) {
        if (!oar_ic_out_present(c, like[i][0])) continue;
        int n;
        const int64_t *d = oar_ic_in_dims(c, like[i][1], 0, &n);
        if (!d) return OAR_ERR_SHAPE;
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)n);
        OAR_TRY(oar_ic_set_out(c, like[i][0], 0, dims, n, oar_ic_in_dtype(c, like[i][1], 0)));
    }
    return OAR_OK;
}

/* ---- grad makers: Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD -- */
static int conv3d_grad_maker(oar_grad_ctx_t *g) { return oar_conv_grad_maker(g); }
static int c3t_grad_maker(oar_grad_ctx_t *g) { return oar_conv_grad_maker(g); }

#define OAR_OPS_DEFINE
#include "ops/conv3d.h"   /* the tables, the decoders and the registrations */
