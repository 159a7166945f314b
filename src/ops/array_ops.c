/* array_ops.c — tensor arrays, the state of Fluid's While and DynamicRNN
 * programs: write_to_array, read_from_array, lod_array_length,
 * fill_zeros_like_array, rnn_memory_helper, and their grads. The rank-table
 * ops that turn LoD sequences into arrays and back are in lod_rank_ops.c,
 * split_lod_tensor/merge_lod_tensor in lod_split_merge.c.
 *
 * Gradients of arrays are arrays whose missing items read as zeros, so "no
 * gradient yet" is the empty array (fill_zeros_like_array). Every grad op
 * that writes an array gradient also reads it (in place): contributions to
 * one array gradient accumulate item by item, across ops and loop steps,
 * without a `sum` over arrays. Array items are never modified in place; a
 * write replaces the item (sharing the written tensor's buffer, which
 * copy-on-write protects). The ops are declared in array_ops.ops; this file
 * holds their inference, grad makers and runs. */
#include "op.h"
#include "lod_plumbing.h"

#include <stdio.h>
#include <string.h>

/* ---- write_to_array ------------------------------------------------------- */

static int wta_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_LOD_TENSOR_ARRAY));
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", false));
    return oar_cf_set_lod_level(c, "Out", oar_ic_in_lod_level(c, "X", 0));
}

static int wta_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    int64_t i = 0;
    oar_tensor_array_t *a = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_index_in(k, "I", &i));
    OAR_TRY(oar_cf_array_out(k, "Out", &a));
    return oar_cf_array_set(a, i, x);
}

static int wta_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "write_to_array_grad", (const char *const[]){"X", "I", NULL}, false);
}

/* X@GRAD = item I of Out@GRAD, zeros shaped like X when there is none */
static int wta_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    int64_t i = 0;
    oar_tensor_array_t *ga = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_index_in(k, "I", &i));
    OAR_TRY(oar_cf_array_in(k, "Out@GRAD", &ga));
    oar_tensor_t *out = oar_cf_tensor_out(k, "X@GRAD");
    if (!out) return OAR_ERR_INVALID;
    const oar_tensor_t *item = i < ga->n ? ga->items[i] : NULL;
    if (!item || item->dtype < 0) return oar_cf_zeros_like(out, x);
    if (oar_tensor_numel_of(item) != oar_tensor_numel_of(x)) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "gradient item %lld of '%s' has shape %s but the written '%s' has %s",
                           (long long)i, oar_cf_in_name(k, "Out@GRAD"), oar_shape_str(item->dims, item->ndim, a, sizeof a),
                           oar_cf_in_name(k, "X"), oar_shape_str(x->dims, x->ndim, b, sizeof b));
    }
    return oar_tensor_share(out, item);
}

/* ---- read_from_array -------------------------------------------------------- */

static int rfa_infer(oar_infer_ctx_t *c)
{
    int vt = oar_ic_in_var_type(c, "X", 0);
    if (vt > 0 && vt != OAR_VAR_LOD_TENSOR_ARRAY)
        return oar_ic_error(c, OAR_ERR_DTYPE, "input X '%s' must be a tensor array", oar_ic_in_name(c, "X", 0));
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", false));
    return oar_cf_set_lod_level(c, "Out", oar_ic_in_lod_level(c, "X", 0));
}

static int rfa_run(oar_kernel_ctx_t *k)
{
    oar_tensor_array_t *a = NULL;
    int64_t i = 0;
    OAR_TRY(oar_cf_array_in(k, "X", &a));
    OAR_TRY(oar_cf_index_in(k, "I", &i));
    if (i >= a->n || !a->items[i] || a->items[i]->dtype < 0)
        return oar_k_error(k, OAR_ERR_RANGE, "item %lld of array '%s' was never written (the array has %d items)",
                           (long long)i, oar_cf_in_name(k, "X"), a->n);
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    return oar_tensor_share(out, a->items[i]);
}

static int rfa_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "read_from_array_grad", (const char *const[]){"I", NULL}, true);
}

/* item I of X@GRAD += Out@GRAD */
static int rfa_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *og = NULL;
    int64_t i = 0;
    oar_tensor_array_t *ga = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "Out@GRAD", &og));
    OAR_TRY(oar_cf_index_in(k, "I", &i));
    OAR_TRY(oar_cf_array_out(k, "X@GRAD", &ga));
    int rc = oar_cf_array_accumulate(ga, i, og, oar_k_out_name(k, "X@GRAD", 0));
    if (rc != OAR_OK) oar_error_prefix("%s: item %lld: ", oar_k_op(k)->type, (long long)i);
    return rc;
}

/* ---- array_length, fill_zeros_like_array ----------------------------------- */

static int array_length_run(oar_kernel_ctx_t *k)
{
    oar_tensor_array_t *a = NULL;
    OAR_TRY(oar_cf_array_in(k, "X", &a));
    return oar_cf_scalar_int64_out(k, a->n);
}

/* The gradient of an array nothing has contributed to yet: no items, each of
 * which reads as zeros. The backward pass emits it where a grad op reads an
 * array gradient no earlier grad op wrote. */
static int fzla_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_LOD_TENSOR_ARRAY));
    return oar_cf_infer_like(c, "X", "Out", false);
}

static int fzla_run(oar_kernel_ctx_t *k)
{
    oar_tensor_array_t *a = NULL;
    OAR_TRY(oar_cf_array_out(k, "Out", &a));
    return oar_array_resize(a, 0);
}

/* ---- rnn_memory_helper -------------------------------------------------------- */
/* Out shares X; the grad passes Out@GRAD through, zeros when none arrived. */
static int rmh_infer(oar_infer_ctx_t *c) { return oar_infer_same_as(c, "X", "Out"); }

static int rmh_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    return oar_tensor_share(out, x);
}

static int rmh_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "rnn_memory_helper_grad", (const char *const[]){"X", NULL}, false);
}

static int rmh_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    oar_tensor_t *og = oar_cf_tensor_opt(k, "Out@GRAD");
    oar_tensor_t *out = oar_cf_tensor_out(k, "X@GRAD");
    if (!out) return OAR_ERR_INVALID;
    if (!og) return oar_cf_zeros_like(out, x);
    if (oar_tensor_numel_of(og) != oar_tensor_numel_of(x)) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' has shape %s but X '%s' has %s", oar_cf_in_name(k, "Out@GRAD"),
                           oar_shape_str(og->dims, og->ndim, a, sizeof a), oar_cf_in_name(k, "X"),
                           oar_shape_str(x->dims, x->ndim, b, sizeof b));
    }
    return oar_tensor_share(out, og);
}

#define OAR_OPS_DEFINE
#include "ops/array_ops.h"
