/* train_extras.c — inference of average_accumulates and dgc_clip_by_norm
 * (declared in train_extras.ops; kernels in kernels/cpu/train_extras.c). */
#include <string.h>
#include "op.h"
#include "ops/train_extras.h"   /* generated from train_extras.ops */

static int one_int64(oar_infer_ctx_t *c, const char *in, const char *out)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, in, 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= d[i];
    if (n != 1 && n >= 0) return oar_ic_error(c, OAR_ERR_SHAPE, "%s must hold one value", in);
    const int64_t one = 1;
    return oar_ic_set_out(c, out, 0, &one, 1, OAR_INT64);
}

static int avgacc_infer(oar_infer_ctx_t *c)
{
    static const char *const sums[][2] = { { "in_sum_1", "out_sum_1" }, { "in_sum_2", "out_sum_2" },
                                           { "in_sum_3", "out_sum_3" } };
    for (int i = 0; i < 3; i++) {
        OAR_TRY(oar_ic_check_same_dims(c, sums[i][0], "param"));
        OAR_TRY(oar_infer_same_as(c, sums[i][0], sums[i][1]));
    }
    OAR_TRY(one_int64(c, "in_num_accumulates", "out_num_accumulates"));
    OAR_TRY(one_int64(c, "in_old_num_accumulates", "out_old_num_accumulates"));
    return one_int64(c, "in_num_updates", "out_num_updates");
}

static int dgccbn_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }

#define OAR_OPS_DEFINE
#include "ops/train_extras.h"   /* the tables, decoders and registrations */
