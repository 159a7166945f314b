/*
 * rearrange2.c — inference and grad makers of range, linspace, size, cross,
 * diag_embed, meshgrid, index_sample, scatter, scatter_nd_add,
 * strided_slice, crop_tensor, pixel_shuffle, shuffle_channel and
 * space_to_depth (declared in rearrange2.ops; CPU kernels in
 * kernels/cpu/rearrange2.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm, out_wanted, copy_dims, grad_name */
#include "ops/attr_tensor.h"
#include "ops/rearrange2.h"   /* generated from rearrange2.ops */
#include "ops/rearrange2_util.h"

static int check_int_index(oar_infer_ctx_t *c, const char *slot)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "%s '%s' is %s; it must be int32 or int64", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)));
    return OAR_OK;
}

/* grads that read only Out@GRAD (Fluid's pixel_shuffle and shuffle_channel makers) */
static int out_grad_only_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, "X");
}

static int same_as_dout_infer(oar_infer_ctx_t *c)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int64_t d[OAR_MAX_DIMS];
    int nd;
    OAR_TRY(copy_dims(c, "Out@GRAD", d, &nd));
    return oar_ic_set_out(c, "X@GRAD", 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

/* ---- range -------------------------------------------------------------- */
static int range_infer(oar_infer_ctx_t *c)
{
    double v[3];
    bool known = true, k;
    static const char *const slots[3] = {"Start", "End", "Step"};
    for (int i = 0; i < 3; i++) {
        int nd;
        const int64_t *d = oar_ic_in_dims(c, slots[i], 0, &nd);
        if (!d) return OAR_ERR_SHAPE;
        int64_t n = 1;
        for (int j = 0; j < nd; j++) n *= d[j];
        if (n >= 0 && n != 1)
            return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' holds %lld values; it must hold one", slots[i],
                                nm(oar_ic_in_name(c, slots[i], 0)), (long long)n);
        OAR_TRY(oar_ic_scalar(c, slots[i], NULL, &v[i], &k));
        known = known && k;
    }
    int dt = oar_ic_in_dtype(c, "Start", 0);
    int64_t n = -1;
    if (known) {
        int rc = oar_range_size(v[0], v[1], v[2], dt == OAR_INT32 || dt == OAR_INT64, &n);
        if (rc)
            return oar_ic_error(c, rc, "Start %g, End %g, Step %g: Step must be nonzero with End - Start's sign",
                                v[0], v[1], v[2]);
    }
    return oar_ic_set_out(c, "Out", 0, &n, 1, dt);
}

/* ---- linspace ----------------------------------------------------------- */
static int linspace_infer(oar_infer_ctx_t *c)
{
    const oar_linspace_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int dt = a->dtype < 0 ? oar_ic_in_dtype(c, "Start", 0) : a->dtype;
    if (dt >= 0 && dt != OAR_FP32 && dt != OAR_FP64 && dt != OAR_INT32 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "dtype %s: linspace makes float32, float64, int32 or int64",
                            nm(oar_dtype_name(dt)));
    double num = -1;
    bool known;
    OAR_TRY(oar_ic_scalar(c, "Num", NULL, &num, &known));
    if (known && (num < 1 || num != floor(num)))
        return oar_ic_error(c, OAR_ERR_RANGE, "Num '%s' is %g; it must be a positive integer",
                            nm(oar_ic_in_name(c, "Num", 0)), num);
    int64_t n = known ? (int64_t)num : -1;
    return oar_ic_set_out(c, "Out", 0, &n, 1, dt);
}

/* ---- size (no kernel: only Input's dims are read) ------------------------ */
static int size_infer(oar_infer_ctx_t *c)
{
    int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_INT64);
}

static int size_run(oar_kernel_ctx_t *k)
{
    const oar_tensor_t *x = oar_k_input(k, OAR_SIZE_INPUT, 0);
    if (!x)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Input '%s' has no value",
                           nm(oar_k_input_name(k, OAR_SIZE_INPUT, 0)));
    oar_tensor_t *t = oar_k_output(k, OAR_SIZE_OUT, 0);
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out has no tensor variable");
    int64_t one = 1;
    OAR_TRY(oar_tensor_resize(t, &one, 1));
    int64_t *out = oar_k_output_data(k, OAR_SIZE_OUT, 0, OAR_INT64);
    if (!out) return OAR_ERR_NOMEM;
    *out = oar_tensor_numel_of(x);
    return OAR_OK;
}

/* ---- cross -------------------------------------------------------------- */
static int cross_infer(oar_infer_ctx_t *c)
{
    const oar_cross_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], y[OAR_MAX_DIMS];
    int nx, ny;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "Y", y, &ny));
    const char *xn = nm(oar_ic_in_name(c, "X", 0)), *yn = nm(oar_ic_in_name(c, "Y", 0));
    bool same = nx == ny;
    for (int i = 0; same && i < nx; i++) same = oar_dim_eq(x[i], y[i]);
    if (!same) {
        char bx[128], by[128];
        oar_shape_str(x, nx, bx, sizeof bx);
        oar_shape_str(y, ny, by, sizeof by);
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' %s and Y '%s' %s must have one shape", xn, bx, yn, by);
    }
    if (a->dim == 9) {
        int d = -1;
        for (int i = 0; i < nx && d < 0; i++)
            if (x[i] == 3) d = i;
        if (d < 0 && oar_ic_runtime(c))
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has no dim of size 3 for the cross product", xn);
    } else {
        int d = a->dim < 0 ? a->dim + nx : a->dim;
        if (d < 0 || d >= nx)
            return oar_ic_error(c, OAR_ERR_RANGE, "dim %d is out of range for X '%s' of rank %d", a->dim, xn, nx);
        if (x[d] >= 0 && x[d] != 3)
            return oar_ic_error(c, OAR_ERR_SHAPE, "dim %d of X '%s' is %lld; it must be 3", d, xn, (long long)x[d]);
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

/* ---- diag_embed --------------------------------------------------------- */
static int diag_embed_infer(oar_infer_ctx_t *c)
{
    const oar_diag_embed_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx;
    OAR_TRY(copy_dims(c, "Input", x, &nx));
    const char *xn = nm(oar_ic_in_name(c, "Input", 0));
    if (nx < 1 || nx + 1 > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Input '%s' has rank %d; it must be 1-D to %d-D", xn, nx,
                            OAR_MAX_DIMS - 1);
    int d1, d2;
    if (oar_diag_embed_dims(a->dim1, a->dim2, nx, &d1, &d2))
        return oar_ic_error(c, OAR_ERR_RANGE, "dim1 %d and dim2 %d must be distinct dims of Out (rank %d)", a->dim1,
                            a->dim2, nx + 1);
    int64_t m = x[nx - 1] < 0 ? -1 : x[nx - 1] + (a->offset < 0 ? -(int64_t)a->offset : a->offset);
    for (int i = 0, j = 0; i <= nx; i++) out[i] = (i == d1 || i == d2) ? m : x[j++];
    return oar_ic_set_out(c, "Out", 0, out, nx + 1, oar_ic_in_dtype(c, "Input", 0));
}

/* ---- meshgrid ----------------------------------------------------------- */
static int meshgrid_infer(oar_infer_ctx_t *c)
{
    int n = oar_ic_in_count(c, "X");
    if (n < 1 || n > OAR_MAX_DIMS)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X has %d tensors; meshgrid takes 1 to %d", n, OAR_MAX_DIMS);
    if (oar_ic_out_count(c, "Out") != n)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Out has %d outputs, X %d inputs", oar_ic_out_count(c, "Out"), n);
    int64_t g[OAR_MAX_DIMS];
    int dt = oar_ic_in_dtype(c, "X", 0);
    for (int i = 0; i < n; i++) {
        int nd;
        const int64_t *d = oar_ic_in_dims(c, "X", i, &nd);
        if (!d) return OAR_ERR_SHAPE;
        if (nd != 1)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X[%d] '%s' has rank %d; it must be 1-D", i,
                                nm(oar_ic_in_name(c, "X", i)), nd);
        int di = oar_ic_in_dtype(c, "X", i);
        if (dt >= 0 && di >= 0 && di != dt)
            return oar_ic_error(c, OAR_ERR_DTYPE, "X[%d] '%s' is %s, X[0] %s: they must have one dtype", i,
                                nm(oar_ic_in_name(c, "X", i)), nm(oar_dtype_name(di)), nm(oar_dtype_name(dt)));
        g[i] = d[0];
    }
    for (int i = 0; i < n; i++)
        if (out_wanted(c, "Out", i)) OAR_TRY(oar_ic_set_out(c, "Out", i, g, n, dt));
    return OAR_OK;
}

/* ---- index_sample ------------------------------------------------------- */
static int index_sample_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], ix[OAR_MAX_DIMS];
    int nx, ni;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "Index", ix, &ni));
    OAR_TRY(check_int_index(c, "Index"));
    const char *xn = nm(oar_ic_in_name(c, "X", 0)), *in = nm(oar_ic_in_name(c, "Index", 0));
    if (nx != 2 || ni != 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' (rank %d) and Index '%s' (rank %d) must be 2-D", xn, nx, in, ni);
    if (!oar_dim_eq(x[0], ix[0]))
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has %lld rows, Index '%s' %lld: they must match", xn,
                            (long long)x[0], in, (long long)ix[0]);
    return oar_ic_set_out(c, "Out", 0, ix, 2, oar_ic_in_dtype(c, "X", 0));
}

/* ---- scatter ------------------------------------------------------------ */
static int scatter_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], ids[OAR_MAX_DIMS], u[OAR_MAX_DIMS];
    int nx, ni, nu;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "Ids", ids, &ni));
    OAR_TRY(copy_dims(c, "Updates", u, &nu));
    OAR_TRY(check_int_index(c, "Ids"));
    const char *xn = nm(oar_ic_in_name(c, "X", 0)), *un = nm(oar_ic_in_name(c, "Updates", 0));
    if (!(ni == 1 || (ni == 2 && oar_dim_eq(ids[1], 1))))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Ids '%s' must be [n] or [n, 1] (rank %d)",
                            nm(oar_ic_in_name(c, "Ids", 0)), ni);
    bool ok = nx >= 1 && nu == nx && oar_dim_eq(u[0], ids[0]);
    for (int i = 1; ok && i < nx; i++) ok = oar_dim_eq(u[i], x[i]);
    if (!ok) {
        char bx[128], bu[128];
        oar_shape_str(x, nx, bx, sizeof bx);
        oar_shape_str(u, nu, bu, sizeof bu);
        return oar_ic_error(c, OAR_ERR_SHAPE, "Updates '%s' %s must be [len(Ids), X.dims[1:]...] for X '%s' %s", un,
                            bu, xn, bx);
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int scatter_grad_infer(oar_infer_ctx_t *c)
{
    int64_t d[OAR_MAX_DIMS];
    int nd, dt = oar_ic_in_dtype(c, "Out@GRAD", 0);
    if (out_wanted(c, "X@GRAD", 0)) {
        OAR_TRY(copy_dims(c, "Out@GRAD", d, &nd));
        OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, d, nd, dt));
    }
    if (out_wanted(c, "Updates@GRAD", 0)) {
        OAR_TRY(copy_dims(c, "Updates", d, &nd));
        OAR_TRY(oar_ic_set_out(c, "Updates@GRAD", 0, d, nd, dt));
    }
    return OAR_OK;
}

/* the grads read the indices, Updates (for its shape) and Out@GRAD, not X */
static int scatter_grad_common(oar_grad_ctx_t *g, const char *index_slot)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, index_slot));
    OAR_TRY(oar_gc_in(g, op, "Updates"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "X"));
    return oar_gc_in_grad(g, op, "Updates");
}

static int scatter_grad_maker(oar_grad_ctx_t *g) { return scatter_grad_common(g, "Ids"); }

/* ---- scatter_nd_add ----------------------------------------------------- */
static int scatter_nd_add_infer(oar_infer_ctx_t *c)
{
    int64_t x[OAR_MAX_DIMS], ix[OAR_MAX_DIMS], u[OAR_MAX_DIMS];
    int nx, ni, nu;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    OAR_TRY(copy_dims(c, "Index", ix, &ni));
    OAR_TRY(copy_dims(c, "Updates", u, &nu));
    OAR_TRY(check_int_index(c, "Index"));
    const char *xn = nm(oar_ic_in_name(c, "X", 0)), *in = nm(oar_ic_in_name(c, "Index", 0));
    if (ni < 1 || ix[ni - 1] > nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Index '%s' must be at least 1-D with its last dim <= X '%s''s rank %d",
                            in, xn, nx);
    if (ix[ni - 1] >= 0) {
        int k = (int)ix[ni - 1];
        bool ok = nu == ni - 1 + nx - k;
        for (int i = 0; ok && i < ni - 1; i++) ok = oar_dim_eq(u[i], ix[i]);
        for (int i = k; ok && i < nx; i++) ok = oar_dim_eq(u[ni - 1 + i - k], x[i]);
        if (!ok) {
            char bu[128];
            oar_shape_str(u, nu, bu, sizeof bu);
            return oar_ic_error(c, OAR_ERR_SHAPE, "Updates '%s' %s must be Index.dims[:-1] + X.dims[%d:] (X '%s', "
                                "Index '%s')", nm(oar_ic_in_name(c, "Updates", 0)), bu, k, xn, in);
        }
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, x, nx, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int scatter_nd_add_grad_infer(oar_infer_ctx_t *c) { return scatter_grad_infer(c); }
static int scatter_nd_add_grad_maker(oar_grad_ctx_t *g) { return scatter_grad_common(g, "Index"); }

/* ---- strided_slice ------------------------------------------------------ */
static int ints_of(oar_infer_ctx_t *c, const char *tslot, const char *lslot, const oar_ints_t *attr,
                   const char *aname, int64_t *v, int *n, bool *known)
{
    if (oar_ic_in_present(c, tslot) || oar_ic_in_count(c, lslot) > 0)
        return oar_ic_int_list(c, tslot, lslot, NULL, v, OAR_MAX_DIMS, n, known);
    *known = true;
    if (attr->n > OAR_MAX_DIMS) return oar_ic_error(c, OAR_ERR_INVALID, "attr %s has more than %d values", aname, OAR_MAX_DIMS);
    for (int i = 0; i < attr->n; i++) v[i] = attr->v[i];
    *n = attr->n;
    return OAR_OK;
}

static int strided_slice_infer(oar_infer_ctx_t *c)
{
    const oar_ss_attrs_t *at = oar_ic_attrs(c);
    if (!at) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], out[OAR_MAX_DIMS], st[OAR_MAX_DIMS], en[OAR_MAX_DIMS], sd[OAR_MAX_DIMS];
    int nx, ns, ne, nd, na = at->axes.n;
    bool ks, ke, kd;
    OAR_TRY(copy_dims(c, "Input", x, &nx));
    const char *xn = nm(oar_ic_in_name(c, "Input", 0));
    OAR_TRY(ints_of(c, "StartsTensor", "StartsTensorList", &at->starts, "starts", st, &ns, &ks));
    OAR_TRY(ints_of(c, "EndsTensor", "EndsTensorList", &at->ends, "ends", en, &ne, &ke));
    OAR_TRY(ints_of(c, "StridesTensor", "StridesTensorList", &at->strides, "strides", sd, &nd, &kd));
    if (na > OAR_MAX_DIMS || (ns >= 0 && ns != na) || (ne >= 0 && ne != na) || (nd >= 0 && nd != na))
        return oar_ic_error(c, OAR_ERR_SHAPE, "axes has %d values but starts %d, ends %d and strides %d", na, ns, ne,
                            nd);
    memcpy(out, x, sizeof(int64_t) * (size_t)nx);
    bool seen[OAR_MAX_DIMS] = {false};
    for (int i = 0; i < na; i++) {
        int a = at->axes.v[i] < 0 ? at->axes.v[i] + nx : at->axes.v[i];
        if (a < 0 || a >= nx)
            return oar_ic_error(c, OAR_ERR_RANGE, "axes[%d] = %d is out of range for Input '%s' of rank %d", i,
                                at->axes.v[i], xn, nx);
        if (seen[a]) return oar_ic_error(c, OAR_ERR_INVALID, "axes names dimension %d twice", a);
        seen[a] = true;
        if (kd && sd[i] == 0) return oar_ic_error(c, OAR_ERR_INVALID, "strides[%d] is 0", i);
        if (x[a] < 0 || !ks || !ke || !kd) { out[a] = -1; continue; }
        int64_t s;
        oar_py_slice(x[a], st[i], en[i], sd[i], &s, &out[a]);
    }
    bool drop[OAR_MAX_DIMS] = {false};
    for (int i = 0; i < at->decrease_axis.n; i++) {
        int a = at->decrease_axis.v[i] < 0 ? at->decrease_axis.v[i] + nx : at->decrease_axis.v[i];
        if (a < 0 || a >= nx || !seen[a] || (out[a] >= 0 && out[a] != 1))
            return oar_ic_error(c, OAR_ERR_SHAPE, "decrease_axis[%d] = %d must name a sliced axis of size 1", i,
                                at->decrease_axis.v[i]);
        drop[a] = true;
    }
    int n = 0;
    for (int i = 0; i < nx; i++)
        if (!drop[i]) out[n++] = out[i];
    if (n == 0) out[n++] = 1;
    return oar_ic_set_out(c, "Out", 0, out, n, oar_ic_in_dtype(c, "Input", 0));
}

static int strided_slice_grad_infer(oar_infer_ctx_t *c)
{
    if (!out_wanted(c, "Input@GRAD", 0)) return OAR_OK;
    int64_t d[OAR_MAX_DIMS];
    int nd;
    OAR_TRY(copy_dims(c, "Input", d, &nd));
    return oar_ic_set_out(c, "Input@GRAD", 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

/* the grad reads Input (its shape), the forward's tensor inputs and Out@GRAD */
static int with_extras_maker(oar_grad_ctx_t *g, const char *in, const char *const *extra, size_t n)
{
    const oar_op_desc_t *fwd = oar_gc_fwd(g);
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, in));
    for (size_t i = 0; i < n; i++)
        if (oar_op_desc_input_count(fwd, extra[i]) > 0) OAR_TRY(oar_gc_in(g, op, extra[i]));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return oar_gc_in_grad(g, op, in);
}

static int strided_slice_grad_maker(oar_grad_ctx_t *g)
{
    static const char *const extra[] = {"StartsTensor", "EndsTensor", "StridesTensor",
                                        "StartsTensorList", "EndsTensorList", "StridesTensorList"};
    return with_extras_maker(g, "Input", extra, sizeof extra / sizeof *extra);
}

/* ---- crop_tensor -------------------------------------------------------- */
/* offsets: OffsetsTensor list, else Offsets, else attr offsets (X's rank values) */
static int crop_offsets(oar_infer_ctx_t *c, const oar_ct_attrs_t *a, int nx, int64_t *off, bool *known)
{
    int n;
    if (oar_ic_in_present(c, "Offsets") || oar_ic_in_count(c, "OffsetsTensor") > 0) {
        if (oar_ic_in_present(c, "Offsets") && a->offsets.n > 0)
            return oar_ic_error(c, OAR_ERR_INVALID, "input Offsets and attr offsets are both given");
        OAR_TRY(oar_ic_int_list(c, "Offsets", "OffsetsTensor", NULL, off, OAR_MAX_DIMS, &n, known));
    } else {
        *known = true;
        n = a->offsets.n;
        if (n == 0) {   /* Fluid's layer always writes them; zeros when a program leaves them out */
            n = nx;
            for (int i = 0; i < nx; i++) off[i] = 0;
        } else {
            for (int i = 0; i < n && i < OAR_MAX_DIMS; i++) off[i] = a->offsets.v[i];
        }
    }
    if (n >= 0 && n != nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "offsets has %d values; X '%s' has rank %d", n,
                            nm(oar_ic_in_name(c, "X", 0)), nx);
    for (int i = 0; *known && i < nx; i++)
        if (off[i] < 0) return oar_ic_error(c, OAR_ERR_RANGE, "offsets[%d] = %lld is negative", i, (long long)off[i]);
    return OAR_OK;
}

static int crop_tensor_infer(oar_infer_ctx_t *c)
{
    const oar_ct_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS], off[OAR_MAX_DIMS], sh[OAR_MAX_DIMS], out[OAR_MAX_DIMS];
    int nx, n;
    bool ko, ks = true;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    const char *xn = nm(oar_ic_in_name(c, "X", 0));
    if (nx < 1 || nx > 6) return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has rank %d; crop_tensor takes 1-D to 6-D", xn, nx);
    OAR_TRY(crop_offsets(c, a, nx, off, &ko));
    if (oar_ic_in_present(c, "Shape") || oar_ic_in_count(c, "ShapeTensor") > 0) {
        OAR_TRY(oar_ic_int_list(c, "Shape", "ShapeTensor", NULL, sh, OAR_MAX_DIMS, &n, &ks));
    } else {
        n = a->shape.n;
        for (int i = 0; i < n && i < OAR_MAX_DIMS; i++) sh[i] = a->shape.v[i];
    }
    if (n >= 0 && n != nx)
        return oar_ic_error(c, OAR_ERR_SHAPE, "shape has %d values; X '%s' has rank %d", n, xn, nx);
    for (int i = 0; i < nx; i++) {
        if (!ks || n < 0) { out[i] = -1; continue; }
        if (sh[i] == -1) {
            out[i] = (x[i] < 0 || !ko) ? -1 : x[i] - off[i];
        } else if (sh[i] < 1) {
            return oar_ic_error(c, OAR_ERR_RANGE, "shape[%d] = %lld: it must be positive or -1", i, (long long)sh[i]);
        } else {
            out[i] = sh[i];
        }
        if (ko && x[i] >= 0 && out[i] >= 0 && off[i] + out[i] > x[i])
            return oar_ic_error(c, OAR_ERR_RANGE, "offsets[%d] + shape[%d] = %lld exceeds dim %d (%lld) of X '%s'", i,
                                i, (long long)(off[i] + out[i]), i, (long long)x[i], xn);
    }
    return oar_ic_set_out(c, "Out", 0, out, nx, oar_ic_in_dtype(c, "X", 0));
}

static int crop_tensor_grad_infer(oar_infer_ctx_t *c)
{
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int64_t d[OAR_MAX_DIMS];
    int nd;
    OAR_TRY(copy_dims(c, "X", d, &nd));
    return oar_ic_set_out(c, "X@GRAD", 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

static int crop_tensor_grad_maker(oar_grad_ctx_t *g)
{
    static const char *const extra[] = {"Offsets", "OffsetsTensor"};
    return with_extras_maker(g, "X", extra, sizeof extra / sizeof *extra);
}

/* ---- pixel_shuffle / shuffle_channel / space_to_depth -------------------- */
static int nchw(oar_infer_ctx_t *c, const char *slot, int64_t *x)
{
    int nx;
    OAR_TRY(copy_dims(c, slot, x, &nx));
    if (nx != 4)
        return oar_ic_error(c, OAR_ERR_SHAPE, "%s '%s' has rank %d; it must be 4-D [N, C, H, W]", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nx);
    return OAR_OK;
}

static int pixel_shuffle_infer(oar_infer_ctx_t *c)
{
    const oar_pixel_shuffle_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[4], r = a->upscale_factor;
    OAR_TRY(nchw(c, "X", x));
    if (x[1] >= 0 && x[1] % (r * r) != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has %lld channels, not a multiple of upscale_factor^2 = %lld",
                            nm(oar_ic_in_name(c, "X", 0)), (long long)x[1], (long long)(r * r));
    int64_t out[4] = {x[0], x[1] < 0 ? -1 : x[1] / (r * r), x[2] < 0 ? -1 : x[2] * r, x[3] < 0 ? -1 : x[3] * r};
    return oar_ic_set_out(c, "Out", 0, out, 4, oar_ic_in_dtype(c, "X", 0));
}

static int pixel_shuffle_grad_infer(oar_infer_ctx_t *c)
{
    const oar_pixel_shuffle_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (!out_wanted(c, "X@GRAD", 0)) return OAR_OK;
    int64_t d[4], r = a->upscale_factor;
    OAR_TRY(nchw(c, "Out@GRAD", d));
    int64_t x[4] = {d[0], d[1] < 0 ? -1 : d[1] * r * r, d[2] < 0 ? -1 : d[2] / r, d[3] < 0 ? -1 : d[3] / r};
    return oar_ic_set_out(c, "X@GRAD", 0, x, 4, oar_ic_in_dtype(c, "Out@GRAD", 0));
}

static int shuffle_channel_infer(oar_infer_ctx_t *c)
{
    const oar_shuffle_channel_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[OAR_MAX_DIMS];
    int nx;
    OAR_TRY(copy_dims(c, "X", x, &nx));
    const char *xn = nm(oar_ic_in_name(c, "X", 0));
    if (nx < 2) return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has rank %d; it must be [N, C, ...]", xn, nx);
    if (x[1] >= 0 && x[1] % a->group != 0)
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has %lld channels, not a multiple of group %d", xn,
                            (long long)x[1], a->group);
    return oar_infer_same_as(c, "X", "Out");
}

static int space_to_depth_infer(oar_infer_ctx_t *c)
{
    const oar_std_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int64_t x[4], b = a->blocksize;
    OAR_TRY(nchw(c, "X", x));
    const char *xn = nm(oar_ic_in_name(c, "X", 0));
    if ((x[1] >= 0 && x[1] % (b * b) != 0) || (x[2] >= 0 && x[2] % b != 0) || (x[3] >= 0 && x[3] % b != 0))
        return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' [%lld, %lld, %lld, %lld]: C must be a multiple of blocksize^2 "
                            "and H, W of blocksize %lld", xn, (long long)x[0], (long long)x[1], (long long)x[2],
                            (long long)x[3], (long long)b);
    int64_t out[4] = {x[0], x[1] < 0 ? -1 : x[1] * b * b, x[2] < 0 ? -1 : x[2] / b, x[3] < 0 ? -1 : x[3] / b};
    return oar_ic_set_out(c, "Out", 0, out, 4, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/rearrange2.h"   /* the tables, decoders and registrations */
