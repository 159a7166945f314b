/* deform_conv.c — deformable_conv and deformable_conv_v1 (Fluid 1.8): the
 * inference, the decoder step and the grad maker; the ops are declared in
 * deform_conv.ops. Kernels in kernels/cpu/deform_conv.c. */
#include "op.h"
#include "ops/deform_conv.h"   /* generated from deform_conv.ops */
#include "window.h"

static void dc_finish(oar_decode_ctx_t *d, oar_dc_attrs_t *a) {
    oar_conv_dec_pair(d, "strides", 1, 1, a->st);
    oar_conv_dec_pair(d, "paddings", 0, 0, a->pd);
    oar_conv_dec_pair(d, "dilations", 1, 1, a->dl);
}

/* slot's dims must equal want (-1 matching anything) */
static int dims_are(oar_infer_ctx_t *c, const char *slot, const int64_t *want, int n, const char *what) {
    int d;
    const int64_t *v = oar_ic_in_dims(c, slot, 0, &d);
    if (!v) return OAR_ERR_SHAPE;
    bool ok = d == n;
    for (int i = 0; ok && i < n; i++) ok = oar_dim_eq(v[i], want[i]);
    if (!ok) {
        char b1[128], b2[128];
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s ('%s') must be %s = %s, got shape %s", slot,
                            oar_ic_in_name(c, slot, 0), what, oar_shape_str(want, n, b2, sizeof b2),
                            oar_shape_str(v, d, b1, sizeof b1));
    }
    return OAR_OK;
}

static int dc_infer(oar_infer_ctx_t *c) {
    const oar_dc_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_ic_check_float(c, "Input", -1));
    const int dt = oar_ic_in_dtype(c, "Input", 0);
    OAR_TRY(oar_ic_check_float(c, "Filter", dt));
    OAR_TRY(oar_ic_check_float(c, "Offset", dt));
    if (a->v2) OAR_TRY(oar_ic_check_float(c, "Mask", dt));
    int xn, fn;
    const int64_t *x = oar_ic_in_dims(c, "Input", 0, &xn);
    if (!x) return OAR_ERR_SHAPE;
    const int64_t *f = oar_ic_in_dims(c, "Filter", 0, &fn);
    if (!f) return OAR_ERR_SHAPE;
    char xs[128], fs[128];
    oar_shape_str(x, xn, xs, sizeof xs);
    oar_shape_str(f, fn, fs, sizeof fs);
    if (xn != 4 || fn != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input ('%s') %s and Filter ('%s') %s must be 4-D",
                            oar_ic_in_name(c, "Input", 0), xs, oar_ic_in_name(c, "Filter", 0), fs);
    const int64_t g = a->groups, dg = a->deformable_groups;
    if (x[1] >= 0 && f[1] >= 0 && x[1] != f[1] * g)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input ('%s') %s has %lld channels but Filter ('%s') %s with groups = "
                            "%lld expects %lld", oar_ic_in_name(c, "Input", 0), xs, (long long)x[1],
                            oar_ic_in_name(c, "Filter", 0), fs, (long long)g, (long long)(f[1] * g));
    if (f[0] >= 0 && f[0] % g != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Filter ('%s') %s: %lld output channels are not divisible by groups = "
                            "%lld", oar_ic_in_name(c, "Filter", 0), fs, (long long)f[0], (long long)g);
    if (x[1] >= 0 && x[1] % dg != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input ('%s') %s: %lld channels are not divisible by deformable_groups "
                            "= %lld", oar_ic_in_name(c, "Input", 0), xs, (long long)x[1], (long long)dg);
    int64_t o[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        if (x[2 + i] < 0 || f[2 + i] < 0) continue;
        const int64_t room = x[2 + i] + 2 * a->pd[i] - (a->dl[i] * (f[2 + i] - 1) + 1);
        if (room < 0)
            return oar_ic_error(c, OAR_ERR_SHAPE, "output %s would be empty: Input ('%s') %s, Filter ('%s') %s",
                                i ? "width" : "height", oar_ic_in_name(c, "Input", 0), xs,
                                oar_ic_in_name(c, "Filter", 0), fs);
        o[i] = room / a->st[i] + 1;
    }
    const int64_t kk = (f[2] < 0 || f[3] < 0) ? -1 : f[2] * f[3];
    const int64_t off[4] = {x[0], kk < 0 ? -1 : 2 * dg * kk, o[0], o[1]};
    OAR_TRY(dims_are(c, "Offset", off, 4, "[N, 2 deformable_groups kh kw, OH, OW]"));
    if (a->v2) {
        const int64_t m[4] = {x[0], kk < 0 ? -1 : dg * kk, o[0], o[1]};
        OAR_TRY(dims_are(c, "Mask", m, 4, "[N, deformable_groups kh kw, OH, OW]"));
    }
    const int64_t od[4] = {x[0], f[0], o[0], o[1]};
    return oar_ic_set_out(c, "Output", 0, od, 4, dt);
}

static int dc_grad_maker(oar_grad_ctx_t *g) {
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    const bool v2 = oar_op_desc_input_count(oar_gc_fwd(g), "Mask") > 0;
    static const char *const slots[] = {"Input", "Offset", "Mask", "Filter"};
    for (int i = 0; i < 4; i++) {
        if (i == 2 && !v2) continue;
        OAR_TRY(oar_gc_in(g, op, slots[i]));
        OAR_TRY(oar_gc_in_grad(g, op, slots[i]));
    }
    return oar_gc_out_grad(g, op, "Output");
}

#define OAR_OPS_DEFINE
#include "ops/deform_conv.h"   /* the tables, decoders and registrations */
