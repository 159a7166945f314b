/*
 * crf.c — inference of the sequence-labelling ops (Fluid 1.8):
 * linear_chain_crf and its grad, crf_decoding, chunk_eval; the ops (slots,
 * docs, attributes) are declared in crf.ops, the kernels are in
 * kernels/cpu/crf.c.
 *
 * Two layouts, as Fluid's: LoD (Emission [N, D] with a LoD, Label [N, 1])
 * or padded (Emission [B, T, D], Length [B], Label [B, T] or [B, T, 1]).
 * Inference checks every shape and dtype it can see and sizes every
 * output; the per-sequence count of a LoD input is known at run time only.
 */
#include "op.h"
#include "ops/crf.h"   /* generated from crf.ops */

static const char *nm(const char *s) { return s ? s : "?"; }

static int want_int64(oar_infer_ctx_t *c, const char *slot)
{
    int dt = oar_ic_in_dtype(c, slot, 0);
    if (dt >= 0 && dt != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected int64", slot,
                            nm(oar_ic_in_name(c, slot, 0)), nm(oar_dtype_name(dt)));
    return OAR_OK;
}

/* The emission/transition/label/length checks linear_chain_crf and
 * crf_decoding share. ed, en: Emission's dims; *nseq: the sequence count
 * (-1 while unknown). */
static int check_crf_inputs(oar_infer_ctx_t *c, bool label_required, const int64_t **ed, int *end, int64_t *nseq)
{
    int tn, en, ln;
    char b1[160], b2[160];
    const int64_t *t = oar_ic_in_dims(c, "Transition", 0, &tn);
    const int64_t *e = t ? oar_ic_in_dims(c, "Emission", 0, &en) : NULL;
    if (!e) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_check_float(c, "Emission", -1));
    OAR_TRY(oar_ic_check_float(c, "Transition", oar_ic_in_dtype(c, "Emission", 0)));
    if (tn != 2 || (t[0] >= 0 && t[1] >= 0 && t[0] != t[1] + 2))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Transition '%s' has shape %s; expected [(D + 2), D] (start, end, "
                            "then D rows of tag-to-tag weights)", nm(oar_ic_in_name(c, "Transition", 0)),
                            oar_shape_str(t, tn, b1, sizeof b1));
    const bool padded = oar_ic_in_present(c, "Length");
    if (en != (padded ? 3 : 2))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Emission '%s' has shape %s; expected %s",
                            nm(oar_ic_in_name(c, "Emission", 0)), oar_shape_str(e, en, b1, sizeof b1),
                            padded ? "[B, T, D] (padded, with Length)" : "[N, D] (a LoD tensor, no Length)");
    if (!oar_dim_eq(e[en - 1], t[1]))
        return oar_ic_error(c, OAR_ERR_SHAPE, "Emission '%s' has %lld tags (shape %s) but Transition '%s' has "
                            "shape %s, for %lld tags", nm(oar_ic_in_name(c, "Emission", 0)), (long long)e[en - 1],
                            oar_shape_str(e, en, b1, sizeof b1), nm(oar_ic_in_name(c, "Transition", 0)),
                            oar_shape_str(t, tn, b2, sizeof b2), (long long)t[1]);
    if (oar_ic_in_present(c, "Label") || label_required) {
        const int64_t *l = oar_ic_in_dims(c, "Label", 0, &ln);
        if (!l) return OAR_ERR_SHAPE;
        OAR_TRY(want_int64(c, "Label"));
        bool ok = padded ? ((ln == 2 || (ln == 3 && oar_dim_eq(l[2], 1))) && oar_dim_eq(l[0], e[0]) &&
                            oar_dim_eq(l[1], e[1]))
                         : (ln == 2 && oar_dim_eq(l[1], 1) && oar_dim_eq(l[0], e[0]));
        if (!ok)
            return oar_ic_error(c, OAR_ERR_SHAPE, "Label '%s' has shape %s; expected %s for Emission shape %s",
                                nm(oar_ic_in_name(c, "Label", 0)), oar_shape_str(l, ln, b1, sizeof b1),
                                padded ? "[B, T] or [B, T, 1]" : "[N, 1]", oar_shape_str(e, en, b2, sizeof b2));
    }
    *nseq = -1;
    if (padded) {
        int qn;
        const int64_t *q = oar_ic_in_dims(c, "Length", 0, &qn);
        if (!q) return OAR_ERR_SHAPE;
        OAR_TRY(want_int64(c, "Length"));
        if (!((qn == 1 || (qn == 2 && oar_dim_eq(q[1], 1))) && oar_dim_eq(q[0], e[0])))
            return oar_ic_error(c, OAR_ERR_SHAPE, "Length '%s' has shape %s; expected [B] or [B, 1] with B = %lld "
                                "(Emission's batch)", nm(oar_ic_in_name(c, "Length", 0)),
                                oar_shape_str(q, qn, b1, sizeof b1), (long long)e[0]);
        *nseq = e[0];
    } else if (oar_ic_runtime(c)) {
        OAR_TRY(oar_ic_seq_count(c, "Emission", nseq));
    }
    *ed = e;
    *end = en;
    return OAR_OK;
}

static int crf_infer(oar_infer_ctx_t *c)
{
    const int64_t *e;
    int en, tn;
    int64_t nseq;
    OAR_TRY(check_crf_inputs(c, true, &e, &en, &nseq));
    const int64_t *t = oar_ic_in_dims(c, "Transition", 0, &tn);
    if (!t) return OAR_ERR_SHAPE;
    const int dt = oar_ic_in_dtype(c, "Emission", 0);
    OAR_TRY(oar_ic_set_out(c, "Alpha", 0, e, en, dt));
    OAR_TRY(oar_ic_set_out(c, "EmissionExps", 0, e, en, dt));
    OAR_TRY(oar_ic_set_out(c, "TransitionExps", 0, t, tn, dt));
    int64_t ll[2] = {nseq, 1};
    OAR_TRY(oar_ic_set_out(c, "LogLikelihood", 0, ll, 2, dt));
    if (!oar_ic_in_present(c, "Length")) {
        OAR_TRY(oar_ic_share_lod(c, "Emission", 0, "Alpha", 0));
        OAR_TRY(oar_ic_share_lod(c, "Emission", 0, "EmissionExps", 0));
    }
    return OAR_OK;
}

static int crf_grad_infer(oar_infer_ctx_t *c)
{
    int en, tn;
    const int64_t *e = oar_ic_in_dims(c, "EmissionExps", 0, &en);
    const int64_t *t = e ? oar_ic_in_dims(c, "TransitionExps", 0, &tn) : NULL;
    if (!t) return OAR_ERR_SHAPE;
    const int dt = oar_ic_in_dtype(c, "EmissionExps", 0);
    if (oar_ic_out_present(c, "Emission@GRAD")) {
        OAR_TRY(oar_ic_set_out(c, "Emission@GRAD", 0, e, en, dt));
        if (!oar_ic_in_present(c, "Length")) OAR_TRY(oar_ic_share_lod(c, "Emission", 0, "Emission@GRAD", 0));
    }
    if (oar_ic_out_present(c, "Transition@GRAD")) OAR_TRY(oar_ic_set_out(c, "Transition@GRAD", 0, t, tn, dt));
    return OAR_OK;
}

static int crfdec_infer(oar_infer_ctx_t *c)
{
    const int64_t *e;
    int en;
    int64_t nseq;
    OAR_TRY(check_crf_inputs(c, false, &e, &en, &nseq));
    if (oar_ic_in_present(c, "Length")) {
        int64_t d[2] = {e[0], e[1]};
        return oar_ic_set_out(c, "ViterbiPath", 0, d, 2, OAR_INT64);
    }
    int64_t d[2] = {e[0], 1};
    OAR_TRY(oar_ic_set_out(c, "ViterbiPath", 0, d, 2, OAR_INT64));
    return oar_ic_share_lod(c, "Emission", 0, "ViterbiPath", 0);
}

static int chunk_infer(oar_infer_ctx_t *c)
{
    const oar_chunk_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int in, ln;
    char b1[160], b2[160];
    const int64_t *i = oar_ic_in_dims(c, "Inference", 0, &in);
    const int64_t *l = i ? oar_ic_in_dims(c, "Label", 0, &ln) : NULL;
    if (!l) return OAR_ERR_SHAPE;
    OAR_TRY(want_int64(c, "Inference"));
    OAR_TRY(want_int64(c, "Label"));
    bool same = in == ln;
    for (int d = 0; same && d < in; d++) same = oar_dim_eq(i[d], l[d]);
    if (!same)
        return oar_ic_error(c, OAR_ERR_SHAPE, "Inference '%s' has shape %s and Label '%s' has shape %s; they must "
                            "be the same", nm(oar_ic_in_name(c, "Inference", 0)), oar_shape_str(i, in, b1, sizeof b1),
                            nm(oar_ic_in_name(c, "Label", 0)), oar_shape_str(l, ln, b2, sizeof b2));
    if (oar_ic_in_present(c, "SeqLength")) {
        if (!(in == 2 || (in == 3 && oar_dim_eq(i[2], 1))))
            return oar_ic_error(c, OAR_ERR_SHAPE, "Inference '%s' has shape %s; with SeqLength it must be [B, T] or "
                                "[B, T, 1]", nm(oar_ic_in_name(c, "Inference", 0)), oar_shape_str(i, in, b1, sizeof b1));
        int qn;
        const int64_t *q = oar_ic_in_dims(c, "SeqLength", 0, &qn);
        if (!q) return OAR_ERR_SHAPE;
        OAR_TRY(want_int64(c, "SeqLength"));
        if (!((qn == 1 || (qn == 2 && oar_dim_eq(q[1], 1))) && oar_dim_eq(q[0], i[0])))
            return oar_ic_error(c, OAR_ERR_SHAPE, "SeqLength '%s' has shape %s; expected [B] with B = %lld",
                                nm(oar_ic_in_name(c, "SeqLength", 0)), oar_shape_str(q, qn, b1, sizeof b1),
                                (long long)i[0]);
    } else if (in != 2 || !oar_dim_eq(i[1], 1)) {
        return oar_ic_error(c, OAR_ERR_SHAPE, "Inference '%s' has shape %s; without SeqLength it must be a LoD "
                            "tensor [N, 1]", nm(oar_ic_in_name(c, "Inference", 0)), oar_shape_str(i, in, b1, sizeof b1));
    }
    int64_t one = 1;
    OAR_TRY(oar_ic_set_out(c, "Precision", 0, &one, 1, OAR_FP32));
    OAR_TRY(oar_ic_set_out(c, "Recall", 0, &one, 1, OAR_FP32));
    OAR_TRY(oar_ic_set_out(c, "F1-Score", 0, &one, 1, OAR_FP32));
    OAR_TRY(oar_ic_set_out(c, "NumInferChunks", 0, &one, 1, OAR_INT64));
    OAR_TRY(oar_ic_set_out(c, "NumLabelChunks", 0, &one, 1, OAR_INT64));
    return oar_ic_set_out(c, "NumCorrectChunks", 0, &one, 1, OAR_INT64);
}

#define OAR_OPS_DEFINE
#include "ops/crf.h"   /* the tables, the decoders and the registration */
