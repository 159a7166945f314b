/*
 * tensor_select.c — inference of where_index, unique, unique_with_counts,
 * is_empty and equal_reduce (tensor_select.ops); kernels in
 * kernels/cpu/tensor_select.c.
 */
#include "op.h"
#include "attr_tensor.h"
#include "ops/tensor_select.h"   /* generated from tensor_select.ops */
#include "ops/infer_util.h"

static int where_index_infer(oar_infer_ctx_t *c)
{
    int n;
    if (!oar_ic_in_dims(c, "Condition", 0, &n)) return OAR_ERR_SHAPE;
    if (oar_ic_runtime(c)) return OAR_OK;   /* the kernel sizes Out from the data */
    const int64_t d[2] = { -1, n };
    return oar_ic_set_out(c, "Out", 0, d, 2, OAR_INT64);
}

static int unique_infer(oar_infer_ctx_t *c)
{
    const oar_unique_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    int n;
    const int64_t *x = oar_ic_in_dims(c, "X", 0, &n);
    if (!x) return OAR_ERR_SHAPE;
    const char *type = oar_op_desc_type(oar_ic_op(c));
    char b[160];
    if (!a->is_sorted && n != 1)
        return oar_ic_error(c, OAR_ERR_SHAPE, "input X '%s' has shape %s; %s needs a 1-D X (or is_sorted)",
                            nm(oar_ic_in_name(c, "X", 0)), oar_shape_str(x, n, b, sizeof b), type);
    if (a->is_sorted) {
        int64_t ax[OAR_MAX_DIMS];
        int na = 0;
        if (oar_attr_int_list(oar_ic_op(c), "axis", ax, OAR_MAX_DIMS, &na) && na > 0)
            return oar_ic_error(c, OAR_ERR_UNSUPPORTED, "attr axis: unique along an axis (Paddle 2.x) is not "
                                "implemented; only the flattened form (empty axis)");
    }
    if (a->dtype != OAR_INT32 && a->dtype != OAR_INT64)
        return oar_ic_error(c, OAR_ERR_DTYPE, "attr dtype = %d must be int32 (2) or int64 (3)", (int)a->dtype);
    if (oar_ic_runtime(c)) return OAR_OK;   /* the kernel sizes the outputs from the data */
    int64_t numel = 1;
    for (int i = 0; i < n; i++) numel = x[i] < 0 || numel < 0 ? -1 : numel * x[i];
    const int64_t u = -1;
    OAR_TRY(oar_ic_set_out(c, "Out", 0, &u, 1, oar_ic_in_dtype(c, "X", 0)));
    if (out_wanted(c, "Index", 0)) OAR_TRY(oar_ic_set_out(c, "Index", 0, &numel, 1, a->dtype));
    if (out_wanted(c, "Indices", 0)) OAR_TRY(oar_ic_set_out(c, "Indices", 0, &u, 1, a->dtype));
    if (out_wanted(c, "Counts", 0)) OAR_TRY(oar_ic_set_out(c, "Counts", 0, &u, 1, a->dtype));
    if (out_wanted(c, "Count", 0)) OAR_TRY(oar_ic_set_out(c, "Count", 0, &u, 1, a->dtype));
    return OAR_OK;
}

static int is_empty_infer(oar_infer_ctx_t *c)
{
    int n;
    if (!oar_ic_in_dims(c, "X", 0, &n)) return OAR_ERR_SHAPE;
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_BOOL);
}

static int equal_reduce_infer(oar_infer_ctx_t *c)
{
    int nx, ny;
    if (!oar_ic_in_dims(c, "X", 0, &nx) || !oar_ic_in_dims(c, "Y", 0, &ny)) return OAR_ERR_SHAPE;
    const int dx = oar_ic_in_dtype(c, "X", 0), dy = oar_ic_in_dtype(c, "Y", 0);
    if (dx >= 0 && dy >= 0 && dx != dy)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' has dtype %s but Y '%s' has %s",
                            nm(oar_ic_in_name(c, "X", 0)), nm(oar_dtype_name(dx)), nm(oar_ic_in_name(c, "Y", 0)),
                            nm(oar_dtype_name(dy)));
    const int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_BOOL);
}

#define OAR_OPS_DEFINE
#include "ops/tensor_select.h"
