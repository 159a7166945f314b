/* lod_split_merge.c — split_lod_tensor and merge_lod_tensor (IfElse's
 * plumbing) and their grads.
 *
 * Both work on the units of LoD level `level`: the sequences of that level
 * when the tensor has one, its rows otherwise. split_lod_tensor sends unit i
 * of X to OutTrue when Mask[i] is true, else to OutFalse (either may get no
 * unit: a tensor of 0 rows). merge_lod_tensor interleaves units of InTrue and
 * InFalse back in Mask order; an input that receives no unit may be a
 * variable that was never written (the branch that made it did not run).
 * The ops are declared in lod_split_merge.ops; this file holds their
 * inference, grad makers and runs. */
#include "op.h"
#include "lod_plumbing.h"
#include "ops/lod_split_merge.h"   /* generated from lod_split_merge.ops: the attribute struct */

#include <stdlib.h>
#include <string.h>

static const char *in_name(oar_kernel_ctx_t *k, const char *slot)
{
    const char *n = oar_k_in_name(k, slot, 0);
    return n ? n : "?";
}

/* a tensor input with a value, or NULL (with *rc set when it is required) */
static oar_tensor_t *tensor_in(oar_kernel_ctx_t *k, const char *slot, bool required, int *rc)
{
    oar_variable_t *v = oar_k_in_var(k, slot, 0);
    oar_tensor_t *t = v && v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor : NULL;
    if (t && t->dtype >= 0) return t;
    if (v && v->type != 0 && v->type != OAR_VAR_LOD_TENSOR)
        *rc = oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' must be a LoD tensor", slot, in_name(k, slot));
    else if (required)
        *rc = oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, in_name(k, slot));
    return NULL;
}

static oar_tensor_t *tensor_out(oar_kernel_ctx_t *k, const char *slot)
{
    oar_variable_t *v = oar_k_out_var(k, slot, 0);
    if (!v) {
        oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s is missing", slot);
        return NULL;
    }
    oar_tensor_t *t = oar_var_tensor(v);
    if (!t) oar_error_prefix("%s: output %s: ", oar_k_op(k)->type, slot);
    return t;
}

/* the mask as bools (caller frees); numel into *n */
static int read_mask(oar_kernel_ctx_t *k, bool **out, int64_t *n, int64_t *ntrue)
{
    int rc = OAR_OK;
    oar_tensor_t *m = tensor_in(k, "Mask", true, &rc);
    if (!m) return rc;
    int64_t cnt = oar_tensor_numel_of(m);
    if (cnt > 0 && !oar_tensor_has_data(m))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input Mask '%s' has no data", in_name(k, "Mask"));
    OAR_TRY(oar_cf_host(m));
    bool *b = oar_xmalloc((size_t)(cnt > 0 ? cnt : 1));
    if (!b) return OAR_ERR_NOMEM;
    const void *d = cnt > 0 ? m->buf->data : NULL;
    int64_t t = 0;
    for (int64_t i = 0; i < cnt; i++) {
        switch (m->dtype) {
        case OAR_BOOL: case OAR_UINT8: case OAR_INT8: b[i] = ((const uint8_t *)d)[i] != 0; break;
        case OAR_INT32: b[i] = ((const int32_t *)d)[i] != 0; break;
        case OAR_INT64: b[i] = ((const int64_t *)d)[i] != 0; break;
        default:
            free(b);
            return oar_k_error(k, OAR_ERR_DTYPE, "input Mask '%s' must be bool (or an integer type), it is %s",
                               in_name(k, "Mask"), oar_dtype_name(m->dtype) ? oar_dtype_name(m->dtype) : "?");
        }
        t += b[i];
    }
    *out = b;
    *n = cnt;
    *ntrue = t;
    return OAR_OK;
}

static int check_units(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *t, int level, int64_t want,
                       const char *why)
{
    int64_t have = t ? oar_cf_units(t, level) : 0;
    if (have != want)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld %s at level %d, expected %lld (%s)", slot,
                           in_name(k, slot), (long long)have, t && t->lod_levels > level ? "sequences" : "rows", level,
                           (long long)want, why);
    return OAR_OK;
}

/* ---- compile-time inference ---------------------------------------------- */

static int like_batch(oar_infer_ctx_t *c, const char *in, const char *out)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, in, 0, &nd);
    if (!d) { oar_clear_error(); return OAR_OK; }
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    if (nd > 0) dims[0] = -1;
    OAR_TRY(oar_ic_set_out(c, out, 0, dims, nd, oar_ic_in_dtype(c, in, 0)));
    return oar_ic_share_lod(c, in, 0, out, 0);
}

static int split_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(like_batch(c, "X", "OutTrue"));
    return like_batch(c, "X", "OutFalse");
}

static int merge_infer(oar_infer_ctx_t *c)
{
    int nd;
    const char *src = oar_ic_in_dims(c, "InTrue", 0, &nd) ? "InTrue" : "InFalse";
    oar_clear_error();
    return like_batch(c, src, "Out");
}

/* ---- split_lod_tensor ---------------------------------------------------------- */

static int split_run(oar_kernel_ctx_t *k)
{
    int rc = OAR_OK, level = ((const oar_lod_split_merge_attrs_t *)oar_k_attrs(k))->level;
    oar_tensor_t *x = tensor_in(k, "X", true, &rc);
    if (!x) return rc;
    bool *mask = NULL;
    int64_t n = 0, ntrue = 0;
    OAR_TRY(read_mask(k, &mask, &n, &ntrue));
    rc = check_units(k, "X", x, level, n, "Mask has one entry per unit");
    oar_tensor_t *ot = rc == OAR_OK ? tensor_out(k, "OutTrue") : NULL;
    oar_tensor_t *of = ot ? tensor_out(k, "OutFalse") : NULL;
    if (rc == OAR_OK && !of) rc = OAR_ERR_INVALID;
    oar_cf_gather_t gt, gf;
    memset(&gt, 0, sizeof gt);
    memset(&gf, 0, sizeof gf);
    int levels = oar_cf_unit_levels(x, level);
    if (rc == OAR_OK) rc = oar_cf_gather_init(&gt, levels);
    if (rc == OAR_OK) rc = oar_cf_gather_init(&gf, levels);
    for (int64_t i = 0; i < n && rc == OAR_OK; i++) rc = oar_cf_gather_add(mask[i] ? &gt : &gf, x, level, i);
    if (rc == OAR_OK) rc = oar_cf_gather_finish(&gt, ot, x, 0, NULL, NULL);
    if (rc == OAR_OK) rc = oar_cf_gather_finish(&gf, of, x, 0, NULL, NULL);
    oar_cf_gather_free(&gt);
    oar_cf_gather_free(&gf);
    free(mask);
    return rc;
}

static int split_grad(oar_grad_ctx_t *g)
{
    const oar_op_desc_t *f = oar_gc_fwd(g);
    if (oar_gc_no_grad(g, oar_op_desc_input_arg(f, "X", 0))) return OAR_OK;
    oar_op_desc_t *op = oar_gc_new_op(g, "split_lod_tensor_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Mask"));
    OAR_TRY(oar_gc_out_grad(g, op, "OutTrue"));
    OAR_TRY(oar_gc_out_grad(g, op, "OutFalse"));
    return oar_gc_in_grad(g, op, "X");
}

/* X@GRAD: zeros like X, each unit's rows taken from the side it went to (a
 * side whose gradient never arrived contributes zeros) */

static int x_grad_infer(oar_infer_ctx_t *c)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, "X", 0, &nd);
    if (!d) { oar_clear_error(); return OAR_OK; }
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    OAR_TRY(oar_ic_set_out(c, "X@GRAD", 0, dims, nd, oar_ic_in_dtype(c, "X", 0)));
    return oar_ic_share_lod(c, "X", 0, "X@GRAD", 0);
}

/* rows of the side gradient: it must hold the side's units in order */
static int side_rows(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *g, int64_t need)
{
    int64_t have = g->ndim ? g->dims[0] : 0;
    if (have != need)
        return oar_k_error(k, OAR_ERR_SHAPE, "%s '%s' has %lld rows; the units sent that way have %lld", slot,
                           in_name(k, slot), (long long)have, (long long)need);
    return OAR_OK;
}

static int split_grad_run(oar_kernel_ctx_t *k)
{
    int rc = OAR_OK, level = ((const oar_lod_split_merge_attrs_t *)oar_k_attrs(k))->level;
    oar_tensor_t *x = tensor_in(k, "X", true, &rc);
    if (!x) return rc;
    oar_tensor_t *gt = tensor_in(k, "OutTrue@GRAD", false, &rc);
    oar_tensor_t *gf = tensor_in(k, "OutFalse@GRAD", false, &rc);
    OAR_TRY(rc);
    bool *mask = NULL;
    int64_t n = 0, ntrue = 0;
    OAR_TRY(read_mask(k, &mask, &n, &ntrue));
    rc = check_units(k, "X", x, level, n, "Mask has one entry per unit");
    int64_t need_t = 0, need_f = 0;
    for (int64_t i = 0; i < n && rc == OAR_OK; i++) {
        int64_t r0, r1;
        oar_cf_unit_rows(x, level, i, &r0, &r1);
        if (mask[i]) need_t += r1 - r0; else need_f += r1 - r0;
    }
    if (rc == OAR_OK && gt) rc = side_rows(k, "OutTrue@GRAD", gt, need_t);
    if (rc == OAR_OK && gf) rc = side_rows(k, "OutFalse@GRAD", gf, need_f);
    oar_tensor_t *out = rc == OAR_OK ? tensor_out(k, "X@GRAD") : NULL;
    if (rc == OAR_OK && !out) rc = OAR_ERR_INVALID;
    if (rc == OAR_OK) rc = oar_cf_zeros_like(out, x);
    if (rc == OAR_OK) rc = oar_tensor_copy_lod(out, x);
    int64_t ot = 0, of = 0;
    for (int64_t i = 0; i < n && rc == OAR_OK; i++) {
        int64_t r0, r1;
        oar_cf_unit_rows(x, level, i, &r0, &r1);
        const oar_tensor_t *src = mask[i] ? gt : gf;
        int64_t *off = mask[i] ? &ot : &of;
        if (src) rc = oar_cf_copy_rows(out, r0, src, *off, r1 - r0);
        *off += r1 - r0;
    }
    free(mask);
    return rc;
}

/* ---- merge_lod_tensor -------------------------------------------------------------- */

/* the two sides, checked against the mask; *like is one that has a value */
static int merge_sides(oar_kernel_ctx_t *k, int level, int64_t ntrue, int64_t nfalse, oar_tensor_t **it,
                       oar_tensor_t **if_, const oar_tensor_t **like)
{
    int rc = OAR_OK;
    *it = tensor_in(k, "InTrue", false, &rc);
    *if_ = tensor_in(k, "InFalse", false, &rc);
    OAR_TRY(rc);
    if (ntrue > 0 || *it) OAR_TRY(check_units(k, "InTrue", *it, level, ntrue, "the Mask entries that are true"));
    if (nfalse > 0 || *if_) OAR_TRY(check_units(k, "InFalse", *if_, level, nfalse, "the Mask entries that are false"));
    *like = *it ? *it : *if_;
    if (!*like && ntrue + nfalse > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "neither InTrue '%s' nor InFalse '%s' has a value", in_name(k, "InTrue"),
                           in_name(k, "InFalse"));
    if (*it && *if_ && ((*it)->dtype != (*if_)->dtype || oar_cf_row_bytes(*it) != oar_cf_row_bytes(*if_) ||
                        oar_cf_unit_levels(*it, level) != oar_cf_unit_levels(*if_, level))) {
        char a[128], b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "InTrue '%s' (%s %s, %d LoD levels) and InFalse '%s' (%s %s, %d LoD levels) "
                           "do not agree", in_name(k, "InTrue"), oar_shape_str((*it)->dims, (*it)->ndim, a, sizeof a),
                           oar_dtype_name((*it)->dtype), (*it)->lod_levels, in_name(k, "InFalse"),
                           oar_shape_str((*if_)->dims, (*if_)->ndim, b, sizeof b), oar_dtype_name((*if_)->dtype),
                           (*if_)->lod_levels);
    }
    return OAR_OK;
}

/* Out with 0 rows, its other dims and dtype from its declaration */
static int empty_like_desc(oar_kernel_ctx_t *k, oar_tensor_t *out)
{
    const oar_op_desc_t *op = oar_k_op(k);
    const char *name = oar_k_out_name(k, "Out", 0);
    const oar_var_desc_t *v = op->block && name ? oar_block_find_var_recursive(op->block, name) : NULL;
    char b[128];
    if (!v || v->ndim < 1 || v->dtype < 0)
        return oar_k_error(k, OAR_ERR_SHAPE, "the batch is empty and Out '%s' has no declared shape to give its 0 rows",
                           name ? name : "?");
    int64_t dims[OAR_MAX_DIMS];
    for (int i = 0; i < v->ndim; i++) {
        dims[i] = i == 0 ? 0 : v->dims[i];
        if (dims[i] < 0)
            return oar_k_error(k, OAR_ERR_SHAPE, "the batch is empty and Out '%s' is declared %s: its row shape is unknown",
                               name, oar_shape_str(v->dims, v->ndim, b, sizeof b));
    }
    oar_tensor_reset(out);
    oar_tensor_clear_lod(out);
    OAR_TRY(oar_tensor_resize(out, dims, v->ndim));
    return oar_tensor_mutable(out, v->dtype) ? OAR_OK : OAR_ERR_NOMEM;
}

static int merge_run(oar_kernel_ctx_t *k)
{
    int rc = OAR_OK, level = ((const oar_lod_split_merge_attrs_t *)oar_k_attrs(k))->level;
    oar_tensor_t *x = tensor_in(k, "X", false, &rc);
    OAR_TRY(rc);
    bool *mask = NULL;
    int64_t n = 0, ntrue = 0;
    OAR_TRY(read_mask(k, &mask, &n, &ntrue));
    oar_tensor_t *it = NULL, *if_ = NULL;
    const oar_tensor_t *like = NULL;
    rc = merge_sides(k, level, ntrue, n - ntrue, &it, &if_, &like);
    oar_tensor_t *out = rc == OAR_OK ? tensor_out(k, "Out") : NULL;
    if (rc == OAR_OK && !out) rc = OAR_ERR_INVALID;
    if (rc == OAR_OK && !like) {   /* an empty batch: neither side ran */
        free(mask);
        return empty_like_desc(k, out);
    }
    /* levels above `level` come from X, which holds the complete LoD */
    int top = 0;
    if (rc == OAR_OK && level > 0) {
        if (!x || x->lod_levels < level || x->lod_size[level - 1] - 1 != n)
            rc = oar_k_error(k, OAR_ERR_SHAPE, "merging at level %d needs X '%s' with the upper LoD levels over %lld units",
                             level, in_name(k, "X"), (long long)n);
        top = level;
    }
    oar_cf_gather_t g;
    memset(&g, 0, sizeof g);
    if (rc == OAR_OK) rc = oar_cf_gather_init(&g, oar_cf_unit_levels(like, level));
    int64_t ti = 0, fi = 0;
    for (int64_t i = 0; i < n && rc == OAR_OK; i++)
        rc = mask[i] ? oar_cf_gather_add(&g, it, level, ti++) : oar_cf_gather_add(&g, if_, level, fi++);
    if (rc == OAR_OK)
        rc = oar_cf_gather_finish(&g, out, like, top, top ? (const int64_t *const *)x->lod : NULL,
                                  top ? x->lod_size : NULL);
    oar_cf_gather_free(&g);
    free(mask);
    return rc;
}

static int merge_grad(oar_grad_ctx_t *g)
{
    oar_op_desc_t *op = oar_gc_new_op(g, "merge_lod_tensor_grad");
    if (!op) return OAR_ERR_NOMEM;
    OAR_TRY(oar_gc_in(g, op, "X"));
    OAR_TRY(oar_gc_in(g, op, "Mask"));
    OAR_TRY(oar_gc_in(g, op, "InTrue"));
    OAR_TRY(oar_gc_in(g, op, "InFalse"));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    OAR_TRY(oar_gc_in_grad(g, op, "InTrue"));
    return oar_gc_in_grad(g, op, "InFalse");
}

/* InTrue@GRAD/InFalse@GRAD: the rows of Out@GRAD each side contributed; a side
 * that contributed nothing gets 0 rows shaped like Out@GRAD's */

static int merge_grad_infer(oar_infer_ctx_t *c)
{
    const char *slots[2][2] = {{"InTrue", "InTrue@GRAD"}, {"InFalse", "InFalse@GRAD"}};
    for (int s = 0; s < 2; s++) {
        const char *name = oar_ic_out_name(c, slots[s][1], 0);
        if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) continue;
        int nd;
        const int64_t *d = oar_ic_in_dims(c, slots[s][0], 0, &nd);
        if (!d) { oar_clear_error(); continue; }
        int64_t dims[OAR_MAX_DIMS];
        memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
        OAR_TRY(oar_ic_set_out(c, slots[s][1], 0, dims, nd, oar_ic_in_dtype(c, slots[s][0], 0)));
    }
    return OAR_OK;
}

/* a side's gradient tensor: zeros like the side (or 0 rows like og) */
static int side_grad(oar_kernel_ctx_t *k, const char *slot, const oar_tensor_t *side, const oar_tensor_t *og,
                     oar_tensor_t **out)
{
    *out = NULL;
    const char *name = oar_k_out_name(k, slot, 0);
    if (!name || strcmp(name, OAR_EMPTY_VAR) == 0) return OAR_OK;
    oar_tensor_t *t = tensor_out(k, slot);
    if (!t) return OAR_ERR_INVALID;
    if (side) {
        OAR_TRY(oar_cf_zeros_like(t, side));
        OAR_TRY(oar_tensor_copy_lod(t, side));
    } else {
        int64_t dims[OAR_MAX_DIMS];
        int nd = og->ndim > 0 ? og->ndim : 1;
        for (int i = 1; i < nd; i++) dims[i] = og->dims[i];
        dims[0] = 0;
        oar_tensor_reset(t);
        OAR_TRY(oar_tensor_resize(t, dims, nd));
        if (!oar_tensor_mutable(t, og->dtype)) return OAR_ERR_NOMEM;
    }
    *out = t;
    return OAR_OK;
}

static int merge_grad_run(oar_kernel_ctx_t *k)
{
    int rc = OAR_OK, level = ((const oar_lod_split_merge_attrs_t *)oar_k_attrs(k))->level;
    oar_tensor_t *og = tensor_in(k, "Out@GRAD", true, &rc);
    if (!og) return rc;
    bool *mask = NULL;
    int64_t n = 0, ntrue = 0;
    OAR_TRY(read_mask(k, &mask, &n, &ntrue));
    oar_tensor_t *it = NULL, *if_ = NULL, *gt = NULL, *gf = NULL;
    const oar_tensor_t *like = NULL;
    rc = merge_sides(k, level, ntrue, n - ntrue, &it, &if_, &like);
    if (rc == OAR_OK) rc = side_grad(k, "InTrue@GRAD", it, og, &gt);
    if (rc == OAR_OK) rc = side_grad(k, "InFalse@GRAD", if_, og, &gf);
    int64_t off = 0, ti = 0, fi = 0, orows = og->ndim ? og->dims[0] : 0;
    for (int64_t i = 0; i < n && rc == OAR_OK; i++) {
        const oar_tensor_t *side = mask[i] ? it : if_;
        oar_tensor_t *dst = mask[i] ? gt : gf;
        int64_t r0, r1;
        oar_cf_unit_rows(side, level, mask[i] ? ti++ : fi++, &r0, &r1);
        if (off + r1 - r0 > orows) {
            rc = oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' has %lld rows; the merged output had more",
                             in_name(k, "Out@GRAD"), (long long)orows);
            break;
        }
        if (dst) rc = oar_cf_copy_rows(dst, r0, og, off, r1 - r0);
        off += r1 - r0;
    }
    free(mask);
    return rc;
}

#define OAR_OPS_DEFINE
#include "ops/lod_split_merge.h"
