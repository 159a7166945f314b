/* double_grad.c — inference of the double-grad ops declared in
 * double_grad.ops (Fluid's "<type>_grad_grad"); their makers, the grad makers
 * of the first-order grad ops, are in double_grad_makers.c. */
#include <string.h>
#include "op.h"
#include "ops/double_grad.h"   /* generated from double_grad.ops */

/* the input whose dims, dtype and LoD output `out` takes */
static const char *like_of(oar_infer_ctx_t *c, const char *out)
{
    if (strcmp(out, "DDOut") == 0)
        return oar_ic_in_present(c, "DOut") ? "DOut" : oar_ic_in_present(c, "Out") ? "Out" : "X";
    if (strcmp(out, "DX") == 0) return "X";
    if (strcmp(out, "DY") == 0 || strcmp(out, "Y@GRAD") == 0) return "Y";
    if (strcmp(out, "DOut") == 0) return "Out";
    if (strcmp(out, "DDY") == 0) return "DY";
    if (strcmp(out, "DScale") == 0) return "Scale";
    return NULL;
}

/* every wanted output like its input (like_of); a given DDX/DDY must have
 * the shape of what it is the direction of (X@GRAD: X, Y@GRAD: Y) */
static int dg_infer(oar_infer_ctx_t *c)
{
    static const char *const dirs[][2] = { { "DDX", "X" }, { "DDY", "Y" }, { "DDX", "DX" } };
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (oar_ic_in_present(c, dirs[i][0]) && oar_ic_in_present(c, dirs[i][1]))
            OAR_TRY(oar_ic_check_same_dims(c, dirs[i][0], dirs[i][1]));
    const oar_op_desc_t *op = oar_ic_op(c);
    for (int s = 0; s < op->noutputs; s++) {
        const char *slot = op->outputs[s].slot;
        if (!oar_ic_out_present(c, slot)) continue;
        const char *like = like_of(c, slot);
        if (!like || !oar_ic_in_present(c, like))
            return oar_ic_error(c, OAR_ERR_INVALID, "output %s needs input %s for its shape", slot,
                                like ? like : "?");
        int nd;
        const int64_t *d = oar_ic_in_dims(c, like, 0, &nd);
        if (!d) return OAR_ERR_SHAPE;
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
        OAR_TRY(oar_ic_set_out(c, slot, 0, dims, nd, oar_ic_in_dtype(c, like, 0)));
        OAR_TRY(oar_ic_share_lod(c, like, 0, slot, 0));
    }
    return OAR_OK;
}

#define OAR_OPS_DEFINE
#include "ops/double_grad.h"   /* the tables, decoders and registrations */
