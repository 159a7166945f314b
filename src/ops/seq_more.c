/*
 * seq_more.c — inference of the remaining sequence ops of issue 22
 * (Fluid 1.8): add_position_encoding, row_conv, sequence_topk_avg_pooling,
 * match_matrix_tensor; declared in seq_more.ops, kernels in
 * kernels/cpu/seq_more.c. Their grads use oar_grad_default.
 *
 * Shapes only the LoD knows are set at run time here. Errors name the slot
 * and the variable; the executor adds the op.
 */
#include <limits.h>
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm */
#include "ops/seq_more.h"

#define IN_NAME(slot) nm(oar_ic_in_name(c, slot, 0))

static int bad_shape(oar_infer_ctx_t *c, const char *slot, const int64_t *d, int nd, const char *want)
{
    char b[160];
    return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has shape %s; expected %s", slot, IN_NAME(slot),
                        oar_shape_str(d, nd, b, sizeof b), want);
}

/* run time: input `slot`'s LoD (exactly one level), checked to end at its
 * rows; *offs NULL when it has none and none is required */
static int lod0(oar_infer_ctx_t *c, const char *slot, bool required, const int64_t **offs, int64_t *n)
{
    const oar_tensor_t *t = oar_ic_in_lod_tensor(c, slot, 0);
    *offs = NULL;
    *n = 0;
    if (!t) return oar_ic_error(c, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, IN_NAME(slot));
    if (t->lod_levels < 1) {
        if (!required) return OAR_OK;
        return oar_ic_error(c, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor is required", slot,
                            IN_NAME(slot));
    }
    if (t->lod_levels != 1)
        return oar_ic_error(c, OAR_ERR_INVALID, "input %s '%s' has %d LoD levels; only one level is supported", slot,
                            IN_NAME(slot), t->lod_levels);
    int l = t->lod_levels - 1;
    int64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (t->lod_size[l] < 1 || t->lod[l][0] != 0 || t->lod[l][t->lod_size[l] - 1] != rows) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s': its LoD ends at %lld but the tensor has shape %s", slot,
                            IN_NAME(slot), (long long)(t->lod_size[l] > 0 ? t->lod[l][t->lod_size[l] - 1] : 0),
                            oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    *offs = t->lod[0];
    *n = t->lod_size[0];
    return OAR_OK;
}

/* ---- add_position_encoding --------------------------------------------------- */
static int ape_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    if (oar_ic_runtime(c)) {
        const int64_t *offs;
        int64_t n;
        OAR_TRY(lod0(c, "X", false, &offs, &n));
        if (offs && nd != 2) return bad_shape(c, "X", d, nd, "[N, D] for a LoD input");
        if (!offs && nd != 3) return bad_shape(c, "X", d, nd, "[batch, max_len, D] for an input without LoD");
    } else if (nd != 2 && nd != 3) {
        return bad_shape(c, "X", d, nd, "[N, D] with a LoD or [batch, max_len, D]");
    }
    if (d[nd - 1] >= 0 && d[nd - 1] % 2 != 0)
        return bad_shape(c, "X", d, nd, "an even last dim (the encoding's size)");
    return oar_infer_same_as(c, "X", "Out");
}

/* X@GRAD: Out@GRAD's shape and LoD (the grad reads nothing else) */
static int ape_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "Out@GRAD", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0)));
    return oar_ic_share_lod(c, "Out@GRAD", 0, "X@GRAD", 0);
}

/* ---- row_conv ------------------------------------------------------------------ */
static int row_conv_infer(oar_infer_ctx_t *c)
{
    int nd, fd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd), *f = oar_ic_in_dims(c, "Filter", 0, &fd);
    if (!d || !f) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Filter", oar_ic_in_dtype(c, "X", 0)));
    if (fd != 2) return bad_shape(c, "Filter", f, fd, "[future_context + 1, D]");
    if (oar_ic_runtime(c)) {
        const int64_t *offs;
        int64_t n;
        OAR_TRY(lod0(c, "X", false, &offs, &n));
        if (offs && nd != 2) return bad_shape(c, "X", d, nd, "[N, D] for a LoD input");
        if (!offs && nd != 3) return bad_shape(c, "X", d, nd, "[batch, T, D] for an input without LoD");
    } else if (nd != 2 && nd != 3) {
        return bad_shape(c, "X", d, nd, "[N, D] with a LoD or [batch, T, D]");
    }
    if (!oar_dim_eq(f[1], d[nd - 1])) {
        char b1[160], b2[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "Filter '%s' has shape %s but X '%s' has %s; Filter's width must be X's "
                            "last dim", IN_NAME("Filter"), oar_shape_str(f, fd, b1, sizeof b1), IN_NAME("X"),
                            oar_shape_str(d, nd, b2, sizeof b2));
    }
    if (f[0] == 0) return bad_shape(c, "Filter", f, fd, "at least one row");
    return oar_infer_same_as(c, "X", "Out");
}

/* ---- sequence_topk_avg_pooling ------------------------------------------------- */
static int topk_avg_infer(oar_infer_ctx_t *c)
{
    const oar_topkavg_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    if (a->topks.n < 1) return oar_ic_error(c, OAR_ERR_INVALID, "attr topks is empty; at least one k is required");
    for (int i = 0; i < a->topks.n; i++) {
        if (a->topks.v[i] < 1 || (i > 0 && a->topks.v[i] < a->topks.v[i - 1]))
            return oar_ic_error(c, OAR_ERR_INVALID, "attr topks[%d] is %d; the ks must be >= 1 and ascending", i,
                                (int)a->topks.v[i]);
    }
    int nd, rn;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd), *rd = oar_ic_in_dims(c, "ROW", 0, &rn);
    if (!d || !rd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    int64_t nk = a->topks.n, maxk = a->topks.v[nk - 1];
    if (oar_ic_runtime(c)) {
        const int64_t *xo, *ro, *co;
        int64_t xn, rnn, cn;
        OAR_TRY(lod0(c, "X", true, &xo, &xn));
        OAR_TRY(lod0(c, "ROW", true, &ro, &rnn));
        OAR_TRY(lod0(c, "COLUMN", true, &co, &cn));
        if (xn != rnn || xn != cn)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s', ROW '%s' and COLUMN '%s' have %lld, %lld and %lld "
                                "sequences; they must match", IN_NAME("X"), IN_NAME("ROW"), IN_NAME("COLUMN"),
                                (long long)(xn - 1), (long long)(rnn - 1), (long long)(cn - 1));
        int64_t w = 1;
        for (int i = 1; i < nd; i++) w *= d[i];
        for (int64_t i = 0; i + 1 < xn; i++) {
            int64_t want = (int64_t)a->channel_num * (ro[i + 1] - ro[i]) * (co[i + 1] - co[i]);
            if ((xo[i + 1] - xo[i]) * w != want)
                return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s': sequence %lld has %lld values; channel_num %d x "
                                    "%lld rows x %lld columns = %lld expected", IN_NAME("X"), (long long)i,
                                    (long long)((xo[i + 1] - xo[i]) * w), a->channel_num,
                                    (long long)(ro[i + 1] - ro[i]), (long long)(co[i + 1] - co[i]), (long long)want);
        }
    }
    int64_t od[2] = {rd[0], (int64_t)a->channel_num * nk};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(oar_ic_share_lod(c, "ROW", 0, "Out", 0));
    int64_t pd[1] = {rd[0] < 0 ? -1 : rd[0] * a->channel_num * maxk};
    return oar_ic_set_out(c, "pos", 0, pd, 1, OAR_INT32);
}

/* ---- match_matrix_tensor ----------------------------------------------------- */
static int mmt_infer(oar_infer_ctx_t *c)
{
    const oar_mmt_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int xn, yn, wn;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &xn), *yd = oar_ic_in_dims(c, "Y", 0, &yn),
                  *wd = oar_ic_in_dims(c, "W", 0, &wn);
    if (!xd || !yd || !wd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "Y", oar_ic_in_dtype(c, "X", 0)));
    OAR_TRY(oar_ic_check_float(c, "W", oar_ic_in_dtype(c, "X", 0)));
    if (xn != 2) return bad_shape(c, "X", xd, xn, "[Nx, dx]");
    if (yn != 2) return bad_shape(c, "Y", yd, yn, "[Ny, dy]");
    if (wn != 3 || !oar_dim_eq(wd[0], xd[1]) || wd[1] != a->dim_t || !oar_dim_eq(wd[2], yd[1])) {
        char b1[160], b2[160], b3[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "W '%s' has shape %s; [dx, dim_t %d, dy] expected for X '%s' %s and "
                            "Y '%s' %s", IN_NAME("W"), oar_shape_str(wd, wn, b1, sizeof b1), a->dim_t, IN_NAME("X"),
                            oar_shape_str(xd, xn, b2, sizeof b2), IN_NAME("Y"), oar_shape_str(yd, yn, b3, sizeof b3));
    }
    int64_t od[2] = {-1, 1}, td[2] = {-1, 1};
    if (xd[0] >= 0 && yd[1] >= 0) td[0] = xd[0] * a->dim_t * yd[1];
    if (oar_ic_runtime(c)) {
        const int64_t *xo, *yo;
        int64_t nx, ny;
        OAR_TRY(lod0(c, "X", true, &xo, &nx));
        OAR_TRY(lod0(c, "Y", true, &yo, &ny));
        if (nx != ny)
            return oar_ic_error(c, OAR_ERR_SHAPE, "X '%s' has %lld sequences but Y '%s' has %lld; they must match",
                                IN_NAME("X"), (long long)(nx - 1), IN_NAME("Y"), (long long)(ny - 1));
        od[0] = 0;
        for (int64_t i = 0; i + 1 < nx; i++) od[0] += (xo[i + 1] - xo[i]) * (yo[i + 1] - yo[i]);
        od[0] *= a->dim_t;
    } else {
        OAR_TRY(oar_ic_set_out_lod_level(c, "Out", 0, 1));
    }
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_set_out(c, "Tmp", 0, td, 2, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/seq_more.h"
