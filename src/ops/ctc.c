/*
 * ctc.c — definitions of warpctc (+ warpctc_grad), ctc_align,
 * edit_distance and sequence_erase (Fluid 1.8): inference and warpctc's
 * grad maker; the ops are declared in ctc.ops, the kernels are in
 * kernels/cpu/ctc.c.
 *
 * Each op has a LoD form (one LoD level gives the sequences) and, except
 * sequence_erase, a padded form chosen by the optional length inputs.
 * Compile time keeps -1 where only the LoD knows a size; run time sizes
 * every output from the LoD or the lengths, except the outputs whose size
 * depends on the values (ctc_align's and sequence_erase's collapsed rows),
 * which the kernels size with oar_k_output_resized.
 */
#include <limits.h>
#include <string.h>
#include "op.h"
#include "ops/ctc.h"

static const char *nm(const char *s) { return s ? s : "?"; }

static bool is_int(int dt) { return dt == OAR_INT32 || dt == OAR_INT64; }

/* input `slot` has an integer dtype (skipped while unknown) */
static int check_int(oar_infer_ctx_t *c, const char *slot, bool int64_only)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt < 0) return OAR_OK;
    if (int64_only ? dt != OAR_INT64 : !is_int(dt))
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' must be %s", slot, nm(oar_ic_in_name(c, slot, 0)),
                            int64_only ? "int64" : "int32 or int64");
    return OAR_OK;
}

/* run time: the sequence count and the longest sequence of input `slot`'s
 * last LoD level */
static int lod_stats(oar_infer_ctx_t *c, const char *slot, int64_t *nseq, int64_t *maxlen)
{
    OAR_TRY(oar_ic_seq_count(c, slot, nseq));
    const oar_tensor_t *t = oar_ic_in_lod_tensor(c, slot, 0);
    const int64_t *o = t->lod[t->lod_levels - 1];
    *maxlen = 0;
    for (int64_t i = 0; i < *nseq; i++)
        if (o[i + 1] - o[i] > *maxlen) *maxlen = o[i + 1] - o[i];
    return OAR_OK;
}

/* both length inputs or neither: one alone is a mistake, not a form */
static int padded_form(oar_infer_ctx_t *c, const char *a, const char *b, bool *padded)
{
    bool pa = oar_ic_in_present(c, a), pb = oar_ic_in_present(c, b);
    if (pa != pb)
        return oar_ic_error(c, OAR_ERR_INVALID, "%s given without %s: the padded form needs both",
                            pa ? a : b, pa ? b : a);
    *padded = pa;
    return OAR_OK;
}

/* a lengths input: int64, [B] or [B, 1] */
static int check_lengths(oar_infer_ctx_t *c, const char *slot, int64_t batch, bool int64_only)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, slot, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    OAR_TRY(check_int(c, slot, int64_only));
    if (nd < 1 || nd > 2 || (nd == 2 && !oar_dim_eq(d[1], 1)) || !oar_dim_eq(d[0], batch))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input %s '%s' has %d dims (first %lld); expected [%lld] or [%lld, 1]",
                            slot, nm(oar_ic_in_name(c, slot, 0)), nd, (long long)(nd > 0 ? d[0] : 0),
                            (long long)batch, (long long)batch);
    return OAR_OK;
}

/* ---- warpctc ----------------------------------------------------------------- */
static int warpctc_infer(oar_infer_ctx_t *c)
{
    const oar_warpctc_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    bool padded = false;
    OAR_TRY(padded_form(c, "LogitsLength", "LabelLength", &padded));
    int nd, ld;
    const int64_t *xd = oar_ic_in_dims(c, "Logits", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *yd = oar_ic_in_dims(c, "Label", 0, &ld);
    if (!yd) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "Logits", -1));
    OAR_TRY(check_int(c, "Label", false));
    const char *xn = nm(oar_ic_in_name(c, "Logits", 0)), *yn = nm(oar_ic_in_name(c, "Label", 0));
    int64_t width, tmax = -1, batch = -1;
    if (padded) {
        if (nd != 3)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Logits '%s' has %d dims; the padded form (LogitsLength given) "
                                "needs [Tmax, B, num_classes + 1]", xn, nd);
        if (ld != 2 || !oar_dim_eq(yd[0], xd[1]))
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Label '%s' must be [B, Lmax] with B = %lld (Logits' dim 1) "
                                "in the padded form", yn, (long long)xd[1]);
        width = xd[2], tmax = xd[0], batch = xd[1];
        OAR_TRY(check_lengths(c, "LogitsLength", batch, true));
        OAR_TRY(check_lengths(c, "LabelLength", batch, true));
    } else {
        if (nd < 2)
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Logits '%s' has %d dims; expected [Lp, num_classes + 1] "
                                "with a LoD", xn, nd);
        width = 1;
        for (int i = 1; i < nd; i++) width = xd[i] < 0 || width < 0 ? -1 : width * xd[i];
        if (ld != 2 || !oar_dim_eq(yd[1], 1))
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Label '%s' must be [Lg, 1] with a LoD", yn);
        if (oar_ic_runtime(c)) {
            int64_t ny;
            OAR_TRY(lod_stats(c, "Logits", &batch, &tmax));
            OAR_TRY(oar_ic_seq_count(c, "Label", &ny));
            if (ny != batch)
                return oar_ic_error(c, OAR_ERR_SHAPE, "input Label '%s' has %lld sequences but Logits '%s' has %lld",
                                    yn, (long long)ny, xn, (long long)batch);
        }
    }
    if (width >= 0 && a->blank >= width)
        return oar_ic_error(c, OAR_ERR_RANGE, "attr blank %d is not a class of Logits '%s' (num_classes + 1 = %lld)",
                            a->blank, xn, (long long)width);
    int dt = oar_ic_in_dtype(c, "Logits", 0);
    int64_t gd[3] = { tmax, batch, width }, lossd[2] = { batch, 1 };
    OAR_TRY(oar_ic_set_out(c, "WarpCTCGrad", 0, gd, 3, dt));
    OAR_TRY(oar_ic_set_out(c, "Loss", 0, lossd, 2, dt));
    if (!oar_ic_runtime(c)) {
        OAR_TRY(oar_ic_set_out_lod_level(c, "WarpCTCGrad", 0, 0));
        OAR_TRY(oar_ic_set_out_lod_level(c, "Loss", 0, 0));
    }
    return OAR_OK;
}

/* Fluid's maker: the grad reads WarpCTCGrad, Logits (its shape and LoD),
 * Loss@GRAD and LogitsLength; not Label. */
static int warpctc_grad_maker(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_grad_op(g);
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_out(g, op, "WarpCTCGrad"));
    OAR_TRY(oar_gc_in(g, op, "Logits"));
    OAR_TRY(oar_gc_out_grad(g, op, "Loss"));
    const oar_op_desc_t *f = oar_gc_fwd(g);
    const char *ll = oar_op_desc_input_count(f, "LogitsLength") > 0 ? oar_op_desc_input_arg(f, "LogitsLength", 0) : NULL;
    if (ll && strcmp(ll, OAR_EMPTY_VAR) != 0) OAR_TRY(oar_gc_in(g, op, "LogitsLength"));
    return oar_gc_in_grad(g, op, "Logits");
}

static int warpctc_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "Logits@GRAD")) return OAR_OK;
    int nd, gn;
    const int64_t *xd = oar_ic_in_dims(c, "Logits", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    const int64_t *gd = oar_ic_in_dims(c, "WarpCTCGrad", 0, &gn);
    if (!gd) return OAR_ERR_SHAPE;
    if (gn != 3)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input WarpCTCGrad '%s' has %d dims; expected [Tmax, B, num_classes + 1]",
                            nm(oar_ic_in_name(c, "WarpCTCGrad", 0)), gn);
    OAR_TRY(oar_ic_set_out(c, "Logits@GRAD", 0, xd, nd, oar_ic_in_dtype(c, "WarpCTCGrad", 0)));
    return oar_ic_share_lod(c, "Logits", 0, "Logits@GRAD", 0);
}

/* ---- ctc_align ---------------------------------------------------------------- */
static int ctc_align_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "Input", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(check_int(c, "Input", false));
    const char *xn = nm(oar_ic_in_name(c, "Input", 0));
    int dt = oar_ic_in_dtype(c, "Input", 0);
    if (oar_ic_in_present(c, "InputLength")) {
        if (nd != 2) return oar_ic_error(c, OAR_ERR_SHAPE, "input Input '%s' has %d dims; the padded form "
                                         "(InputLength given) needs [B, T]", xn, nd);
        OAR_TRY(check_lengths(c, "InputLength", xd[0], false));
        int ldt = oar_ic_in_dtype(c, "InputLength", 0);
        if (ldt >= 0 && dt >= 0 && ldt != dt)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input InputLength '%s' must have Input's dtype",
                                nm(oar_ic_in_name(c, "InputLength", 0)));
        int64_t ol[2] = { xd[0], 1 };
        OAR_TRY(oar_ic_set_out(c, "Output", 0, xd, nd, dt));
        if (oar_ic_out_present(c, "OutputLength")) OAR_TRY(oar_ic_set_out(c, "OutputLength", 0, ol, 2, dt));
        return OAR_OK;
    }
    if (nd != 2 || !oar_dim_eq(xd[1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input Input '%s' must be [N, 1] with a LoD (or give InputLength)", xn);
    if (oar_ic_runtime(c)) {
        int64_t n;
        OAR_TRY(oar_ic_seq_count(c, "Input", &n));   /* the rows are the kernel's to size */
        return OAR_OK;
    }
    int64_t od[2] = { -1, 1 };
    OAR_TRY(oar_ic_set_out(c, "Output", 0, od, 2, dt));
    return oar_ic_set_out_lod_level(c, "Output", 0, 1);
}

/* ---- edit_distance ------------------------------------------------------------ */
static int edit_distance_infer(oar_infer_ctx_t *c)
{
    bool padded = false;
    OAR_TRY(padded_form(c, "HypsLength", "RefsLength", &padded));
    int hn, rn;
    const int64_t *hd = oar_ic_in_dims(c, "Hyps", 0, &hn);
    if (!hd) return OAR_ERR_SHAPE;
    const int64_t *rd = oar_ic_in_dims(c, "Refs", 0, &rn);
    if (!rd) return OAR_ERR_SHAPE;
    OAR_TRY(check_int(c, "Hyps", true));
    OAR_TRY(check_int(c, "Refs", true));
    const char *hname = nm(oar_ic_in_name(c, "Hyps", 0)), *rname = nm(oar_ic_in_name(c, "Refs", 0));
    int64_t batch = -1;
    if (padded) {
        if (hn != 2 || rn != 2 || !oar_dim_eq(hd[0], rd[0]))
            return oar_ic_error(c, OAR_ERR_SHAPE, "inputs Hyps '%s' and Refs '%s' must be [B, T] with the same B "
                                "in the padded form", hname, rname);
        batch = hd[0] >= 0 ? hd[0] : rd[0];
        OAR_TRY(check_lengths(c, "HypsLength", batch, true));
        OAR_TRY(check_lengths(c, "RefsLength", batch, true));
    } else {
        if (hn != 2 || !oar_dim_eq(hd[1], 1))
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Hyps '%s' must be [N, 1] with a LoD", hname);
        if (rn != 2 || !oar_dim_eq(rd[1], 1))
            return oar_ic_error(c, OAR_ERR_SHAPE, "input Refs '%s' must be [M, 1] with a LoD", rname);
        if (oar_ic_runtime(c)) {
            int64_t nr;
            OAR_TRY(oar_ic_seq_count(c, "Hyps", &batch));
            OAR_TRY(oar_ic_seq_count(c, "Refs", &nr));
            if (nr != batch)
                return oar_ic_error(c, OAR_ERR_SHAPE, "input Hyps '%s' has %lld sequences but Refs '%s' has %lld",
                                    hname, (long long)batch, rname, (long long)nr);
        }
    }
    int64_t od[2] = { batch, 1 }, one = 1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, OAR_FP32));
    OAR_TRY(oar_ic_set_out(c, "SequenceNum", 0, &one, 1, OAR_INT64));
    if (!oar_ic_runtime(c)) OAR_TRY(oar_ic_set_out_lod_level(c, "Out", 0, 0));
    return OAR_OK;
}

/* ---- sequence_erase ----------------------------------------------------------- */
static int sequence_erase_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *xd = oar_ic_in_dims(c, "X", 0, &nd);
    if (!xd) return OAR_ERR_SHAPE;
    OAR_TRY(check_int(c, "X", false));
    if (nd != 2 || !oar_dim_eq(xd[1], 1))
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' must be [N, 1] with a LoD", nm(oar_ic_in_name(c, "X", 0)));
    if (oar_ic_runtime(c)) {
        int64_t n;
        return oar_ic_seq_count(c, "X", &n);   /* the rows are the kernel's to size */
    }
    int64_t od[2] = { -1, 1 };
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "X", 0)));
    int lv = oar_ic_in_lod_level(c, "X", 0);
    return oar_ic_set_out_lod_level(c, "Out", 0, lv > 0 ? lv : 1);
}

#define OAR_OPS_DEFINE
#include "ops/ctc.h"
