/*
 * collective_ext.c — inference of c_reducescatter (declared in
 * collective_ext.ops, the CPU kernel in kernels/cpu/collective_ext.c).
 */
#include <string.h>
#include "op.h"
#include "infer_util.h"   /* nm */
#include "ops/collective_ext.h"

static int crs_infer(oar_infer_ctx_t *c)
{
    const oar_crs_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt == OAR_VAR_SELECTED_ROWS)
        return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "input X '%s' is a SelectedRows; c_reducescatter takes dense "
                            "tensors", nm(oar_ic_in_name(c, "X", 0)));
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) return OAR_ERR_SHAPE;
    if (nd < 1 || (d[0] >= 0 && d[0] % a->nranks != 0)) {
        char b[160];
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; its dim 0 must be a multiple of nranks %d",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(d, nd, b, sizeof b), a->nranks);
    }
    int64_t od[OAR_MAX_DIMS];
    memcpy(od, d, sizeof(int64_t) * (size_t)nd);
    if (od[0] >= 0) od[0] /= a->nranks;
    return oar_ic_set_out(c, "Out", 0, od, nd, oar_ic_in_dtype(c, "X", 0));
}

#define OAR_OPS_DEFINE
#include "ops/collective_ext.h"
