/*
 * shape_ext.c — Paddle's shape ops beyond Fluid 1.x's core set:
 * flatten_contiguous_range (a view), slice, and the repeating ops expand
 * (Fluid 1.8: expand_times), expand_v2 (a target shape) and tile
 * (repeat_times), with their grads. Kernels in kernels/cpu/shape_ext.c
 * (flatten_contiguous_range uses the view kernels of kernels/cpu/shape_ops.c).
 *
 * Attributes that Paddle lets tensors override (StartsTensor, Shape,
 * RepeatTimes, ...) are read through attr_tensor.h.
 *
 * The ops themselves (slots, attributes, docs) are declared in
 * shape_ext.ops; this file holds their inference and grad makers.
 */
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm, out_wanted, copy_dims, grad_name */
#include "attr_tensor.h"
#include "ops/shape_ext.h"   /* generated from shape_ext.ops */
#include "ops/double_grad_makers.h"
#include "shape_ext_util.h"   /* oar_slice_bounds */

/* oar_ic_int_list over a decoded INTS attr: the tensors (tslot, then lslot)
 * when given, else `attr` (named aname in messages) */
static int int_list(oar_infer_ctx_t *c, const char *tslot, const char *lslot, const oar_ints_t *attr,
                    const char *aname, int64_t *v, int max, int *n, bool *known)
{
    if ((tslot && oar_ic_in_present(c, tslot)) || (lslot && oar_ic_in_count(c, lslot) > 0))
        return oar_ic_int_list(c, tslot, lslot, NULL, v, max, n, known);
    *known = true;
    if (attr->n > max)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr %s must be INTS or LONGS with at most %d values", aname, max);
    for (int i = 0; i < attr->n; i++) v[i] = attr->v[i];
    *n = attr->n;
    return OAR_OK;
}

/* X@GRAD (or Input@GRAD) gets the dims, dtype and LoD of the forward input */
static int grad_like(oar_infer_ctx_t *c, const char *in, const char *gout)
{
    if (!out_wanted(c, gout, 0)) return OAR_OK;
    int64_t d[OAR_MAX_DIMS];
    int nd;
    OAR_TRY(copy_dims(c, in, d, &nd));
    OAR_TRY(oar_ic_set_out(c, gout, 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0)));
    return oar_ic_share_lod(c, in, 0, gout, 0);
}

/* ---- flatten_contiguous_range ------------------------------------------- */
/* dims[:start] ++ [prod(dims[start..stop])] ++ dims[stop+1:]; axes may be negative */
static int fcr_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    const oar_fcr_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int start = a->start_axis, stop = a->stop_axis;
    int r = nx > 0 ? nx : 1;
    if (nx == 0) x[0] = 1;   /* a 0-D X flattens to [1] */
    int s = start < 0 ? start + r : start, e = stop < 0 ? stop + r : stop;
    if (s < 0 || s >= r || e < 0 || e >= r || s > e)
        return oar_ic_error(c, OAR_ERR_RANGE, "start_axis %d and stop_axis %d do not name a range of the %d dims "
                            "of X '%s'", start, stop, r, nm(oar_ic_in_name(c, "X", 0)));
    int n = 0;
    for (int i = 0; i < s; i++) out[n++] = x[i];
    int64_t p = 1;
    for (int i = s; i <= e; i++) {
        if (p < 0 || x[i] < 0) p = -1;
        else if (oar_mul_checked(p, x[i], &p) != OAR_OK) return OAR_ERR_SHAPE;
    }
    out[n++] = p;
    for (int i = e + 1; i < r; i++) out[n++] = x[i];
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, n, oar_ic_in_dtype(c, "X", 0)));
    if (s > 0) OAR_TRY(oar_ic_share_lod(c, "X", 0, "Out", 0));
    if (out_wanted(c, "XShape", 0)) {
        int64_t xs[OAR_MAX_DIMS];
        if (nx + 1 > OAR_MAX_DIMS)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X of rank %d: XShape would exceed %d dims", nx, OAR_MAX_DIMS);
        xs[0] = 0;
        memcpy(xs + 1, x, sizeof(int64_t) * (size_t)nx);
        OAR_TRY(oar_ic_set_out(c, "XShape", 0, xs, nx + 1, oar_ic_in_dtype(c, "X", 0)));
    }
    return OAR_OK;
}

static int fcr_grad_infer(oar_infer_ctx_t *c)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "XShape", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (nd < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "XShape must be [0, X dims...]");
    int64_t x[OAR_MAX_DIMS];
    memcpy(x, d + 1, sizeof(int64_t) * (size_t)(nd - 1));
    return oar_ic_set_out(c, "X@GRAD", 0, x, nd - 1, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

static int fcr_grad_maker(oar_grad_ctx_t *g)
{
    if (oar_op_desc_output_count(oar_gc_fwd(g), "XShape") < 1)
        return oar_error(OAR_ERR_INVALID, "flatten_contiguous_range: the gradient needs the XShape output");
    oar_op_desc_t *op = oar_gc_new_op(g, "flatten_contiguous_range_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out(g, op, "XShape"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- expand / expand_v2 / tile ------------------------------------------ */
/* Out dims of the repeating ops; X's dims padded with leading 1s to Out's rank */
static int repeat_out(oar_infer_ctx_t *c, const char *type, int64_t *out, int *nout)
{
    int64_t x[OAR_MAX_DIMS], v[OAR_MAX_DIMS];
    int nx, n;
    bool known;
    const oar_repeat_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    char b[160];
    oar_shape_str(x, nx, b, sizeof b);
    if (strcmp(type, "expand") == 0) {
        OAR_TRY(int_list(c, "ExpandTimes", "expand_times_tensor", &a->times, "expand_times", v, OAR_MAX_DIMS, &n, &known));
        if (n < 0) n = nx;
        if (n != nx)
            return oar_ic_error(c, OAR_ERR_SHAPE, "expand_times has %d values but X '%s' %s has rank %d", n,
                                nm(oar_ic_in_name(c, "X", 0)), b, nx);
        for (int i = 0; i < nx; i++) {
            if (known && v[i] < 1)
                return oar_ic_error(c, OAR_ERR_RANGE, "expand_times[%d] = %lld must be positive", i, (long long)v[i]);
            out[i] = (x[i] < 0 || v[i] < 0) ? -1 : x[i] * v[i];
        }
        *nout = nx;
        return OAR_OK;
    }
    bool tile = strcmp(type, "tile") == 0;
    if (tile) OAR_TRY(int_list(c, "RepeatTimes", "repeat_times_tensor", &a->times, "repeat_times", v, OAR_MAX_DIMS, &n, &known));
    else OAR_TRY(int_list(c, "Shape", "expand_shapes_tensor", &a->times, "shape", v, OAR_MAX_DIMS, &n, &known));
    if (n < 0) return oar_ic_error(c, OAR_ERR_SHAPE, "the length of %s must be known", tile ? "RepeatTimes" : "Shape");
    int r = n > nx ? n : nx;
    if (!tile && n < nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "shape has %d values, fewer than the rank %d of X '%s' %s", n, nx,
                            nm(oar_ic_in_name(c, "X", 0)), b);
    for (int i = 0; i < r; i++) {
        int xi = i - (r - nx), vi = i - (r - n);
        int64_t xd = xi >= 0 ? x[xi] : 1, t = vi >= 0 ? v[vi] : 1;
        if (tile) {
            if (known && t < 1)
                return oar_ic_error(c, OAR_ERR_RANGE, "repeat_times[%d] = %lld must be positive", vi, (long long)t);
            out[i] = (xd < 0 || t < 0) ? -1 : xd * t;
        } else if (t == -1 && known) {
            if (xi < 0)
                return oar_ic_error(c, OAR_ERR_SHAPE, "shape[%d] = -1 names no dim of X '%s' %s", vi,
                                    nm(oar_ic_in_name(c, "X", 0)), b);
            out[i] = xd;
        } else if (!known) {
            out[i] = xd == 1 ? -1 : xd;
        } else {
            if (t < 1 || (xd >= 0 && xd != 1 && xd != t))
                return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' %s cannot expand to shape[%d] = %lld (dim %d is %lld)",
                                    nm(oar_ic_in_name(c, "X", 0)), b, vi, (long long)t, xi, (long long)xd);
            out[i] = t;
        }
    }
    *nout = r;
    return OAR_OK;
}

static int repeat_infer(oar_infer_ctx_t *c)
{
    int64_t out[OAR_MAX_DIMS], x[OAR_MAX_DIMS];
    int n = 0, nx = 0;
    OAR_TRY(repeat_out(c, oar_op_desc_type(oar_ic_op(c)), out, &n));
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, n, oar_ic_in_dtype(c, "X", 0)));
    if (n == nx && nx > 0 && out[0] == x[0]) return oar_ic_share_lod(c, "X", 0, "Out", 0);
    return OAR_OK;
}

static int repeat_grad_infer(oar_infer_ctx_t *c) { return grad_like(c, "X", "X@GRAD"); }

/* the grad reads X (for its shape) and Out@GRAD, plus the forward's tensor inputs */
static int repeat_grad_maker(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *fwd = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    static const char *const extra[] = {"ExpandTimes", "expand_times_tensor", "Shape", "expand_shapes_tensor",
                                        "RepeatTimes", "repeat_times_tensor"};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        if (oar_op_desc_input_count(fwd, extra[i]) > 0) OAR_TRY(oar_gc_in(g, op, extra[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

/* ---- slice -------------------------------------------------------------- */
static int slice_infer(oar_infer_ctx_t *c)
{
    const oar_slice_attrs_t *at = oar_ic_attrs(c);
    if (!at) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS], st[OAR_MAX_DIMS], en[OAR_MAX_DIMS], ax[OAR_MAX_DIMS];
    int nx, na, ns, ne;
    bool ks, ke;
    OAR_TRY(copy_dims(c, "Input", x, &nx));
    if (at->axes.n > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr axes has more than %d values", OAR_MAX_DIMS);
    na = at->axes.n;
    for (int i = 0; i < na; i++) ax[i] = at->axes.v[i];
    OAR_TRY(int_list(c, "StartsTensor", "StartsTensorList", &at->starts, "starts", st, OAR_MAX_DIMS, &ns, &ks));
    OAR_TRY(int_list(c, "EndsTensor", "EndsTensorList", &at->ends, "ends", en, OAR_MAX_DIMS, &ne, &ke));
    if ((ns >= 0 && ns != na) || (ne >= 0 && ne != na))
        return oar_ic_error(c, OAR_ERR_SHAPE, "axes has %d values but starts %d and ends %d", na, ns, ne);
    memcpy(out, x, sizeof(int64_t) * (size_t)nx);
    for (int i = 0; i < na; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + nx : ax[i];
        if (a < 0 || a >= nx)
            return oar_ic_error(c, OAR_ERR_RANGE, "axes[%d] = %lld is out of range for Input '%s' of rank %d", i,
                                (long long)ax[i], nm(oar_ic_in_name(c, "Input", 0)), nx);
        if (x[a] < 0 || !ks || !ke) { out[a] = -1; continue; }
        int64_t s, len;
        oar_slice_bounds(x[a], st[i], en[i], &s, &len);
        out[a] = len;
    }
    /* decrease_axis drops size-1 sliced axes; all dropped leaves [1] */
    const int32_t *dec = at->decrease_axis.v;
    const int nd = at->decrease_axis.n;
    if (nd > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_INVALID, "attr decrease_axis has more than %d values", OAR_MAX_DIMS);
    bool drop[OAR_MAX_DIMS] = {false};
    for (int i = 0; i < nd; i++) {
        int64_t a = dec[i] < 0 ? dec[i] + nx : dec[i];
        if (a < 0 || a >= nx || (out[a] >= 0 && out[a] != 1))
            return oar_ic_error(c, OAR_ERR_SHAPE, "decrease_axis[%d] = %lld must name a sliced axis of size 1",
                                i, (long long)dec[i]);
        drop[a] = true;
    }
    int n = 0;
    for (int i = 0; i < nx; i++)
        if (!drop[i]) out[n++] = out[i];
    if (n == 0) out[n++] = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, out, n, oar_ic_in_dtype(c, "Input", 0)));
    if (nx > 0 && n == nx && out[0] == x[0]) return oar_ic_share_lod(c, "Input", 0, "Out", 0);
    return OAR_OK;
}

static int slice_grad_infer(oar_infer_ctx_t *c) { return grad_like(c, "Input", "Input@GRAD"); }

static int slice_grad_maker(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *fwd = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_op(g, "slice_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "Input"));
    static const char *const extra[] = {"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        if (oar_op_desc_input_count(fwd, extra[i]) > 0) OAR_TRY(oar_gc_in(g, op, extra[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "Input");
}

#define OAR_OPS_DEFINE
#include "ops/shape_ext.h"   /* the tables, decoders and registrations */
