/*
 * conv_transpose.c — conv2d_transpose and depthwise_conv2d_transpose
 * (Fluid 1.8 / Paddle 2.x, NCHW) and their grad ops: inference and grad
 * maker; the ops themselves (slots, attributes, docs) are declared in
 * conv_transpose.ops. Kernels in kernels/cpu/conv_transpose.c; geometry in
 * conv_transpose_util.h.
 *
 * Output [N, C_out, OH, OW] with OH = (H - 1) stride - pad_top - pad_bottom
 * + dilation (kh - 1) + 1 (+ output_padding, or output_size when given).
 */
#include "op.h"
#include "conv_transpose_util.h"   /* the geometry; includes ops/conv_transpose.h */
#include "ops/conv_grad.h"

/* the geometry of the op in c (compile or run time) */
static int ct_geom(oar_infer_ctx_t *c, oar_convt_geom_t *g)
{
    const oar_convt_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int ni, nf;
    const int64_t *in = oar_ic_in_dims(c, "Input", 0, &ni);
    if (!in) return OAR_ERR_SHAPE;
    const int64_t *f = oar_ic_in_dims(c, "Filter", 0, &nf);
    if (!f) return OAR_ERR_SHAPE;
    char why[256];
    int rc = oar_convt_geometry(a, in, ni, f, nf, g, why, sizeof why);
    if (rc != OAR_OK) return oar_ic_error(c, rc, "%s", why);
    return OAR_OK;
}

static int ct_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    OAR_TRY(oar_ic_check_float(c, "Filter", oar_ic_in_dtype(c, "Input", 0)));
    if (oar_ic_in_present(c, "Bias"))
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "input Bias ('%s') is read only by Paddle's oneDNN kernel; "
                            "oar does not add it (add it with elementwise_add)", oar_ic_in_name(c, "Bias", 0));
    oar_convt_geom_t g;
    OAR_TRY(ct_geom(c, &g));
    int64_t od[4] = {g.n, g.cout, g.oh, g.ow};
    return oar_ic_set_out(c, "Output", 0, od, 4, oar_ic_in_dtype(c, "Input", 0));
}

static int ct_grad_infer(oar_infer_ctx_t *c)
{
    oar_convt_geom_t g;
    OAR_TRY(ct_geom(c, &g));
    int nd;
    const int64_t *dd = oar_ic_in_dims(c, "Output@GRAD", 0, &nd);
    if (!dd) return OAR_ERR_SHAPE;
    int64_t want[4] = {g.n, g.cout, g.oh, g.ow};
    bool ok = nd == 4;
    for (int i = 0; ok && i < 4; i++) ok = oar_dim_eq(dd[i], want[i]);
    if (!ok) {
        char b1[96], b2[96];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Output@GRAD shape %s, expected the output's %s",
                            oar_shape_str(dd, nd, b1, sizeof b1), oar_shape_str(want, 4, b2, sizeof b2));
    }
    return oar_infer_grad_like_inputs(c);
}

static int ct_grad(oar_grad_ctx_t *g) { return oar_conv_grad_maker(g); }

#define OAR_OPS_DEFINE
#include "ops/conv_transpose.h"   /* the tables, the decoders and the registrations */
