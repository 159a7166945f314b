/* norm_common.c — see norm_common.h. */
#include <string.h>
#include "norm_common.h"

int oar_norm_in(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t **t)
{
    *t = oar_k_input(k, slot, 0);
    if (!oar_tensor_has_data(*t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "%s '%s' has no data", name, oar_k_input_name(k, slot, 0));
    return OAR_OK;
}

int oar_norm_check_dtype(oar_kernel_ctx_t *k, const oar_tensor_t *x, int dt)
{
    if (x->dtype != dt)
        return oar_k_error(k, OAR_ERR_DTYPE, "X '%s' is %s, expected %s", oar_k_input_name(k, 0, 0),
                           oar_dtype_name(x->dtype), oar_dtype_name(dt));
    return OAR_OK;
}

int oar_norm_check_dy(oar_kernel_ctx_t *k, int dy_slot, const oar_tensor_t *dy, const oar_tensor_t *x)
{
    if (dy->dtype != x->dtype || dy->ndim != x->ndim ||
        memcmp(dy->dims, x->dims, sizeof(int64_t) * (size_t)x->ndim) != 0) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Y@GRAD '%s' is %s %s but X is %s %s",
                           oar_k_input_name(k, dy_slot, 0),
                           oar_dtype_name(dy->dtype), oar_shape_str(dy->dims, dy->ndim, a, sizeof a),
                           oar_dtype_name(x->dtype), oar_shape_str(x->dims, x->ndim, b, sizeof b));
    }
    return OAR_OK;
}

void *oar_norm_out(oar_kernel_ctx_t *k, int slot, const int64_t *dims, int nd, int dt, int *rc)
{
    *rc = OAR_OK;
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) return NULL;
    /* inference sized it; a mismatch is a definition bug, not something to patch here */
    if (t->ndim != nd || memcmp(t->dims, dims, sizeof(int64_t) * (size_t)nd) != 0) {
        char a[128], b[128];
        *rc = oar_k_error(k, OAR_ERR_SHAPE, "output '%s' has shape %s, expected %s", oar_k_output_name(k, slot, 0),
                          oar_shape_str(t->dims, t->ndim, a, sizeof a), oar_shape_str(dims, nd, b, sizeof b));
        return NULL;
    }
    void *p = oar_k_output_data(k, slot, 0, dt);
    if (!p) *rc = OAR_ERR_NOMEM;
    return p;
}
