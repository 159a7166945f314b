/*
 * pyramid_hash.c — inference of pyramid_hash (declared in pyramid_hash.ops,
 * kernels in kernels/cpu/pyramid_hash.c). Out's rows depend on the tokens
 * and the dropout draws: the kernel sizes Out and DropPos's LoD.
 */
#include <limits.h>
#include <stdio.h>
#include "op.h"
#include "infer_util.h"   /* nm */
#include "ops/pyramid_hash.h"

static int pyrh_infer(oar_infer_ctx_t *c)
{
    const oar_pyrh_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    const int64_t *x;
    OAR_TRY(oar_ic_check_2d(c, "X", -1, 1, "int32 [N, 1]", &x));
    int xdt = oar_ic_in_dtype(c, "X", 0);
    if (xdt >= 0 && xdt != OAR_INT32)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' has dtype %s; int32 tokens expected",
                            nm(oar_ic_in_name(c, "X", 0)), nm(oar_dtype_name(xdt)));
    OAR_TRY(oar_ic_check_float(c, "W", -1));
    if (a->rand_len <= 0 || a->space_len <= 0 || a->num_emb % a->rand_len != 0)
        return oar_ic_error(c, OAR_ERR_INVALID, "attrs rand_len %d, space_len %d, num_emb %d: rand_len and space_len "
                            "must be > 0 and num_emb a multiple of rand_len", a->rand_len, a->space_len, a->num_emb);
    char b[96];
    snprintf(b, sizeof b, "[space_len + rand_len, 1] = [%lld, 1]", (long long)a->space_len + a->rand_len);
    OAR_TRY(oar_ic_check_2d(c, "W", (int64_t)a->space_len + a->rand_len, 1, b, NULL));
    if (a->use_filter && (a->white_list_len > 0 || a->black_list_len > 0))
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "white_list_len %d, black_list_len %d: oar does not read Paddle's "
                            "bloom-filter lists (use_filter false, or lists of length 0)", a->white_list_len,
                            a->black_list_len);
    int64_t td[2] = {x[0], 1};
    OAR_TRY(oar_ic_set_out(c, "X_Temp_Out", 0, td, 2, OAR_FP32));
    int64_t dd[2] = {x[0] >= 0 ? x[0] * a->pyramid_layer : -1, 1};
    OAR_TRY(oar_ic_set_out(c, "DropPos", 0, dd, 2, OAR_INT32));
    if (oar_ic_runtime(c)) {   /* Out's rows depend on the data: the kernel sizes it */
        int64_t n;
        return oar_ic_seq_count(c, "X", &n);
    }
    int64_t od[2] = {-1, a->num_emb};
    OAR_TRY(oar_ic_set_out(c, "Out", 0, od, 2, oar_ic_in_dtype(c, "W", 0)));
    return oar_ic_set_out_lod_level(c, "Out", 0, 1);
}

#define OAR_OPS_DEFINE
#include "ops/pyramid_hash.h"
