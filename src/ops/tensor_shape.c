/*
 * tensor_shape.c — inference and grad makers of unbind, crop, reverse,
 * pad2d, pad_constant_like and multiplex (tensor_shape.ops); kernels in
 * kernels/cpu/tensor_shape.c.
 */
#include "op.h"
#include "attr_tensor.h"
#include "ops/tensor_shape.h"   /* generated from tensor_shape.ops */
#include "ops/infer_util.h"

static const char *xname(oar_infer_ctx_t *c, const char *slot) { return nm(oar_ic_in_name(c, slot, 0)); }

/* ---- unbind ------------------------------------------------------------------------- */
static int unbind_infer(oar_infer_ctx_t *c)
{
    const oar_unbind_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], o[OAR_MAX_DIMS];
    int nx;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    const int ax = a->axis < 0 ? a->axis + nx : a->axis;
    if (nx < 1 || ax < 0 || ax >= nx)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr axis = %d is out of range for input X '%s' of rank %d",
                            (int)a->axis, xname(c, "X"), nx);
    const int nout = oar_ic_out_count(c, "Out");
    if (x[ax] >= 0 && x[ax] != nout)
        return oar_ic_error(c, OAR_ERR_SHAPE, "output Out has %d variables but input X '%s' has %lld slices "
                            "along axis %d", nout, xname(c, "X"), (long long)x[ax], ax);
    int n = 0;
    for (int i = 0; i < nx; i++)
        if (i != ax) o[n++] = x[i];
    const int dt = oar_ic_in_dtype(c, "X", 0);
    for (int i = 0; i < nout; i++)
        if (out_wanted(c, "Out", i)) OAR_TRY(oar_ic_set_out(c, "Out", i, o, n, dt));
    return OAR_OK;
}

/* ---- crop ----------------------------------------------------------------------------- */
static int crop_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], s[OAR_MAX_DIMS], off[OAR_MAX_DIMS];
    int nx, ns, no;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    if (oar_ic_in_present(c, "Y")) {
        OAR_TRY(copy_dims(c, "Y", s, &ns));
        if (ns != nx) return shape_mismatch(c, "Y", "X", "crop needs Y of X's rank");
    } else {
        if (!oar_attr_int_list(oar_ic_op(c), "shape", s, OAR_MAX_DIMS, &ns) || ns != nx)
            return oar_ic_error(c, OAR_ERR_SHAPE, "attr shape has %d dims; input X '%s' has rank %d (or give Y)", ns,
                                xname(c, "X"), nx);
    }
    bool known = true;
    OAR_TRY(oar_ic_int_list(c, "Offsets", NULL, "offsets", off, OAR_MAX_DIMS, &no, &known));
    if (no == 0) {
        for (int i = 0; i < nx; i++) off[i] = 0;
        no = nx;
    }
    if (no >= 0 && no != nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "the offsets have %d values; input X '%s' has rank %d", no,
                            xname(c, "X"), nx);
    for (int i = 0; i < nx; i++) {
        if (s[i] < 0 && oar_ic_runtime(c))
            return oar_ic_error(c, OAR_ERR_SHAPE, "the crop's shape[%d] = %lld must be >= 0", i, (long long)s[i]);
        if (known && (off[i] < 0 || (x[i] >= 0 && s[i] >= 0 && off[i] + s[i] > x[i])))
            return oar_ic_error(c, OAR_ERR_RANGE, "offset %lld + shape %lld of dim %d leaves input X '%s' (size %lld)",
                                (long long)off[i], (long long)s[i], i, xname(c, "X"), (long long)x[i]);
    }
    return oar_ic_set_out(c, "Out", 0, s, nx, oar_ic_in_dtype(c, "X", 0));
}

/* ---- reverse ---------------------------------------------------------------------------- */
static int reverse_infer(oar_infer_ctx_t *c)
{
    const oar_reverse_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int nd;
    if (!oar_ic_in_dims(c, "X", 0, &nd)) return OAR_ERR_SHAPE;
    bool seen[OAR_MAX_DIMS] = { false };
    if (a->axis.n < 1) return oar_ic_error(c, OAR_ERR_INVALID, "attr axis must name at least one dimension");
    for (int i = 0; i < a->axis.n; i++) {
        int d = a->axis.v[i] < 0 ? a->axis.v[i] + nd : a->axis.v[i];
        if (d < 0 || d >= nd)
            return oar_ic_error(c, OAR_ERR_RANGE, "attr axis[%d] = %d is out of range for input X '%s' of rank %d", i,
                                (int)a->axis.v[i], xname(c, "X"), nd);
        if (seen[d]) return oar_ic_error(c, OAR_ERR_INVALID, "attr axis names dimension %d twice", d);
        seen[d] = true;
    }
    return oar_infer_same_as(c, "X", "Out");
}

/* Fluid's reverse grad is a reverse: X <- Out@GRAD, Out -> X@GRAD, same axis */
static int reverse_grad_maker(oar_grad_ctx_t *g)
{
    char gin[512], gout[512];
    OAR_TRY(grad_name(g, "X", false, gout, sizeof gout));
    if (strcmp(gout, OAR_EMPTY_VAR) == 0) return OAR_OK;
    OAR_TRY(grad_name(g, "Out", true, gin, sizeof gin));
    oar_op_desc_t *op = oar_gc_new_op(g, "reverse");
    if (!op) return OAR_ERR_NOMEM;
    const char *i1[1] = { gin }, *o1[1] = { gout };
    OAR_TRY(oar_op_desc_set_input(op, "X", i1, 1));
    return oar_op_desc_set_output(op, "Out", o1, 1);
}

/* ---- pad2d ---------------------------------------------------------------------------------- */
static int pad2d_infer(oar_infer_ctx_t *c)
{
    const oar_pad2d_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], p[OAR_MAX_DIMS];
    int nx, np;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    char b[160];
    if (nx != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; pad2d needs 4-D", xname(c, "X"),
                            oar_shape_str(x, nx, b, sizeof b));
    bool known = true;
    OAR_TRY(oar_ic_int_list(c, "Paddings", NULL, "paddings", p, OAR_MAX_DIMS, &np, &known));
    if (np == 0 && !oar_ic_in_present(c, "Paddings")) {
        p[0] = p[1] = p[2] = p[3] = 0;
        np = 4;
    }
    if (np >= 0 && np != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "the paddings have %d values; pad2d needs 4 (top, bottom, left, right)",
                            np);
    const bool nhwc = a->data_format == OAR_PAD2D_NHWC;
    const int hi = nhwc ? 1 : 2, wi = nhwc ? 2 : 3;
    int64_t o[4] = { x[0], x[1], x[2], x[3] };
    if (known) {
        for (int i = 0; i < 4; i++) {
            const int64_t dim = x[i < 2 ? hi : wi];
            if (p[i] < 0) return oar_ic_error(c, OAR_ERR_RANGE, "paddings[%d] = %lld must be >= 0", i, (long long)p[i]);
            if (a->mode == OAR_PAD2D_REFLECT && dim >= 0 && p[i] >= dim)
                return oar_ic_error(c, OAR_ERR_RANGE, "reflect mode needs paddings[%d] = %lld below the padded dim "
                                    "%lld of input X '%s'", i, (long long)p[i], (long long)dim, xname(c, "X"));
            if (a->mode == OAR_PAD2D_EDGE && dim == 0 && p[i] > 0)
                return oar_ic_error(c, OAR_ERR_RANGE, "edge mode cannot pad an empty dim of input X '%s'", xname(c, "X"));
        }
        o[hi] = x[hi] < 0 ? -1 : x[hi] + p[0] + p[1];
        o[wi] = x[wi] < 0 ? -1 : x[wi] + p[2] + p[3];
    } else {
        o[hi] = o[wi] = -1;
    }
    return oar_ic_set_out(c, "Out", 0, o, 4, oar_ic_in_dtype(c, "X", 0));
}

/* ---- pad_constant_like ------------------------------------------------------------------------- */
static int pcl_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], y[OAR_MAX_DIMS];
    int nx, ny;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "Y", y, &ny));
    if (nx != ny) return shape_mismatch(c, "X", "Y", "pad_constant_like needs X and Y of one rank");
    for (int i = 0; i < nx; i++)
        if (x[i] >= 0 && y[i] >= 0 && y[i] > x[i])
            return shape_mismatch(c, "X", "Y", "pad_constant_like needs each dim of Y at most X's");
    return oar_ic_set_out(c, "Out", 0, x, nx, oar_ic_in_dtype(c, "Y", 0));
}

/* ---- multiplex ----------------------------------------------------------------------------------- */
static int multiplex_infer(oar_infer_ctx_t *c)
{
    int ni;
    const int64_t *ids = oar_ic_in_dims(c, "Ids", 0, &ni);
    if (!ids) return OAR_ERR_SHAPE;
    int dt = oar_ic_in_dtype(c, "Ids", 0);
    if (dt >= 0 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input Ids '%s' has dtype %s, expected int32 or int64", xname(c, "Ids"),
                            nm(oar_dtype_name(dt)));
    char b[160];
    if (ni != 2 || !oar_dim_eq(ids[1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Ids '%s' has shape %s; expected [N, 1]", xname(c, "Ids"),
                            oar_shape_str(ids, ni, b, sizeof b));
    const int n = oar_ic_in_count(c, "X");
    if (n < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X needs at least one candidate");
    int n0;
    const int64_t *x0 = oar_ic_in_dims(c, "X", 0, &n0);
    if (!x0) return OAR_ERR_SHAPE;
    int64_t d0[OAR_MAX_DIMS];
    memcpy(d0, x0, sizeof(int64_t) * (size_t)n0);
    const int dt0 = oar_ic_in_dtype(c, "X", 0);
    for (int k = 1; k < n; k++) {
        int nk;
        const int64_t *xk = oar_ic_in_dims(c, "X", k, &nk);
        if (!xk) return OAR_ERR_SHAPE;
        bool same = nk == n0;
        for (int i = 0; same && i < nk; i++) same = oar_dim_eq(xk[i], d0[i]);
        char b2[160];
        if (!same)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input X[%d] '%s' has shape %s but X[0] '%s' has %s; multiplex needs "
                                "one shape", k, nm(oar_ic_in_name(c, "X", k)), oar_shape_str(xk, nk, b, sizeof b),
                                xname(c, "X"), oar_shape_str(d0, n0, b2, sizeof b2));
        const int dk = oar_ic_in_dtype(c, "X", k);
        if (dk >= 0 && dt0 >= 0 && dk != dt0)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input X[%d] '%s' has dtype %s but X[0] has %s", k,
                                nm(oar_ic_in_name(c, "X", k)), nm(oar_dtype_name(dk)), nm(oar_dtype_name(dt0)));
    }
    if (n0 < 1 || !oar_dim_eq(d0[0], ids[0]))
        return shape_mismatch(c, "X", "Ids", "multiplex needs candidates of Ids' row count");
    return oar_ic_set_out(c, "Out", 0, d0, n0, dt0);
}

#define OAR_OPS_DEFINE
#include "ops/tensor_shape.h"
