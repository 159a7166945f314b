/*
 * ctr.c — inference of cvm and cvm_grad (declared in ctr.ops, kernels in
 * kernels/cpu/ctr.c).
 */
#include <stdio.h>
#include "op.h"
#include "infer_util.h"   /* nm */
#include "ops/ctr.h"

/* checks X and CVM; *yd gets Y's dims */
static int cvm_check(oar_infer_ctx_t *c, int64_t yd[2])
{
    const oar_cvm_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, -1, "[N, D] with D >= 2", &x));
    OAR_TRY(oar_ic_check_2d(c, "CVM", -1, 2, "[batch, 2] (show, click)", NULL));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "CVM", oar_ic_in_dtype(c, "X", 0)));
    if (x[1] >= 0 && x[1] < 2)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has %lld columns; show and click need 2",
                            nm(oar_ic_in_name(c, "X", 0)), (long long)x[1]);
    yd[0] = x[0];
    yd[1] = a->use_cvm || x[1] < 0 ? x[1] : x[1] - 2;
    return OAR_OK;
}

static int cvm_infer(oar_infer_ctx_t *c)
{
    int64_t yd[2];
    OAR_TRY(cvm_check(c, yd));
    OAR_TRY(oar_ic_set_out(c, "Y", 0, yd, 2, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "Y", 0);
}

static int cvm_grad_infer(oar_infer_ctx_t *c)
{
    int64_t yd[2];
    OAR_TRY(cvm_check(c, yd));
    if (!oar_ic_out_present(c, "X@GRAD")) return OAR_OK;
    OAR_TRY(oar_infer_grad_like_inputs(c));
    return oar_ic_share_lod(c, "X", 0, "X@GRAD", 0);
}

/* ---- filter_by_instag ------------------------------------------------------ */
static int instag_infer(oar_infer_ctx_t *c)
{
    const int64_t *x;
    OAR_TRY(oar_ic_check_2d(c, "Ins", -1, -1, "[N, D]", &x));
    static const char *const tags[] = {"Ins_tag", "Filter_tag"};
    for (int i = 0; i < 2; i++) {
        int dt = oar_ic_in_dtype(c, tags[i], 0);
        if (dt >= 0 && dt != OAR_INT64)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input %s '%s' has dtype %s; int64 expected", tags[i],
                                nm(oar_ic_in_name(c, tags[i], 0)), nm(oar_dtype_name(dt)));
    }
    if (oar_ic_runtime(c)) {   /* the rows kept depend on the tags: the kernel sizes the outputs */
        int64_t n;
        return oar_ic_seq_count(c, "Ins_tag", &n);
    }
    int64_t od[2] = {-1, x[1]}, wd[2] = {-1, 1}, md[2] = {-1, 3};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "Ins", 0)));
    OAR_TRY(oar_ic_set_out_lod_level(c, "Out", 0, 1));
    OAR_TRY(oar_ic_set_out(c, "LossWeight", 0, wd, 2, OAR_FP32));
    return oar_ic_set_out(c, "IndexMap", 0, md, 2, OAR_INT64);
}

static int instag_grad_infer(oar_infer_ctx_t *c)
{
    if (!oar_ic_out_present(c, "Ins@GRAD")) return OAR_OK;
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "Ins", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    OAR_TRY(oar_ic_set_out(c, "Ins@GRAD", 0, d, nd, oar_ic_in_dtype(c, "Out@GRAD", 0)));
    return oar_ic_share_lod(c, "Ins", 0, "Ins@GRAD", 0);
}

/* ---- shuffle_batch --------------------------------------------------------- */
static int shuffle_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (nd < 1) return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' is a scalar; rows to shuffle are needed",
                                    nm(oar_ic_in_name(c, "X", 0)));
    if (oar_ic_in_present(c, "Seed")) {
        int dt = oar_ic_in_dtype(c, "Seed", 0);
        if (dt >= 0 && dt != OAR_INT64)
            return oar_ic_error(c, OAR_ERR_DTYPE, "input Seed '%s' has dtype %s; int64 expected",
                                nm(oar_ic_in_name(c, "Seed", 0)), nm(oar_dtype_name(dt)));
    }
    int64_t rows = 1;
    for (int i = 0; i + 1 < nd; i++) rows = d[i] < 0 || rows < 0 ? -1 : rows * d[i];
    int64_t id[1] = {rows}, sd[1] = {1};
    OAR_TRY(oar_infer_same_as(c, "X", "Out"));
    OAR_TRY(oar_ic_set_out(c, "ShuffleIdx", 0, id, 1, OAR_INT64));
    return oar_ic_set_out(c, "SeedOut", 0, sd, 1, OAR_INT64);
}

/* ---- rank_attention --------------------------------------------------------- */
static int rank_att_infer(oar_infer_ctx_t *c)
{
    const oar_rankatt_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x, *p;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, -1, "[N, xf]", &x));
    OAR_TRY(oar_ic_check_float(c, "X", -1));
    OAR_TRY(oar_ic_check_float(c, "RankParam", oar_ic_in_dtype(c, "X", 0)));
    char b[128];
    snprintf(b, sizeof b, "[N, 2 MaxRank + 1] = [%lld, %d]", (long long)x[0], 2 * a->MaxRank + 1);
    OAR_TRY(oar_ic_check_2d(c, "RankOffset", x[0], 2 * a->MaxRank + 1, b, NULL));
    int dt = oar_ic_in_dtype(c, "RankOffset", 0);
    if (dt >= 0 && dt != OAR_INT32)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input RankOffset '%s' has dtype %s; int32 expected",
                            nm(oar_ic_in_name(c, "RankOffset", 0)), nm(oar_dtype_name(dt)));
    int64_t rows = x[1] >= 0 ? (int64_t)a->MaxRank * a->MaxRank * x[1] : -1;
    snprintf(b, sizeof b, "[MaxRank MaxRank xf, yf] = [%lld, yf]", (long long)rows);
    OAR_TRY(oar_ic_check_2d(c, "RankParam", rows, -1, b, &p));
    int xdt = oar_ic_in_dtype(c, "X", 0);
    int64_t hd[2] = {x[0], x[1] >= 0 ? a->MaxRank * x[1] : -1}, od[2] = {x[0], p[1]}, rd[2] = {x[0], 1};
    if (oar_ic_out_present(c, "InputHelp")) OAR_TRY(oar_ic_set_out(c, "InputHelp", 0, hd, 2, xdt));
    if (oar_ic_out_present(c, "InsRank")) OAR_TRY(oar_ic_set_out(c, "InsRank", 0, rd, 2, xdt));
    return oar_ic_set_out(c, "Out", 0, od, 2, xdt);
}

#define OAR_OPS_DEFINE
#include "ops/ctr.h"
