/* lod_plumbing.c — tensor plumbing for the control-flow and LoD/array ops
 * (see lod_plumbing.h): zeros, elementwise sums of gradients, row copies
 * and the LoD unit gatherer. */
#include "lod_plumbing.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int oar_cf_host(const oar_tensor_t *t)
{
    if (!oar_tensor_has_data(t) || t->buf->place == OAR_PLACE_CPU) return OAR_OK;
    return oar_tensor_to_place((oar_tensor_t *)t, OAR_PLACE_CPU, 0);
}

size_t oar_cf_row_bytes(const oar_tensor_t *t)
{
    size_t n = oar_dtype_size(t->dtype);
    for (int i = 1; i < t->ndim; i++) n *= (size_t)t->dims[i];
    return n;
}

int oar_cf_zeros_like(oar_tensor_t *dst, const oar_tensor_t *like)
{
    if (!dst || !like) return oar_error(OAR_ERR_INVALID, "zeros_like: NULL tensor");
    if (like->dtype < 0) return oar_error(OAR_ERR_INVALID, "zeros_like: the model tensor has no dtype");
    oar_tensor_reset(dst);
    OAR_TRY(oar_tensor_resize(dst, like->dims, like->ndim));
    if (!oar_tensor_mutable(dst, like->dtype)) return OAR_ERR_NOMEM;
    return OAR_OK;   /* fresh buffers are zeroed */
}

int oar_cf_new_zeros_like(const oar_tensor_t *like, oar_tensor_t **out)
{
    oar_tensor_t *t;
    OAR_TRY(oar_tensor_new_empty(&t));
    int rc = oar_cf_zeros_like(t, like);
    if (rc != OAR_OK) { oar_tensor_free(t); return rc; }
    *out = t;
    return OAR_OK;
}

#define ADD_LOOP(T) do { T *a_ = acc->buf->data; const T *x_ = x->buf->data; \
    for (int64_t i = 0; i < n; i++) a_[i] += x_[i]; } while (0)

int oar_cf_add_into(oar_tensor_t *acc, const oar_tensor_t *x, const char *what)
{
    if (!oar_tensor_has_data(acc) || !oar_tensor_has_data(x))
        return oar_error(OAR_ERR_INVALID, "adding gradients of '%s': a tensor has no data", what);
    OAR_TRY(oar_cf_host(acc));
    OAR_TRY(oar_cf_host(x));
    int64_t n = oar_tensor_numel_of(acc);
    if (n != oar_tensor_numel_of(x) || acc->dtype != x->dtype) {
        char a[128], b[128];
        return oar_error(OAR_ERR_SHAPE, "adding gradients of '%s': %s %s and %s %s do not match", what,
                         oar_shape_str(acc->dims, acc->ndim, a, sizeof a), oar_dtype_name(acc->dtype),
                         oar_shape_str(x->dims, x->ndim, b, sizeof b), oar_dtype_name(x->dtype));
    }
    switch (acc->dtype) {
    case OAR_FP32: ADD_LOOP(float); break;
    case OAR_FP64: ADD_LOOP(double); break;
    case OAR_INT32: ADD_LOOP(int32_t); break;
    case OAR_INT64: ADD_LOOP(int64_t); break;
    default:
        return oar_error(OAR_ERR_UNSUPPORTED, "adding gradients of '%s': dtype %s is not summed",
                         what, oar_dtype_name(acc->dtype) ? oar_dtype_name(acc->dtype) : "?");
    }
    return OAR_OK;
}

int oar_cf_copy_rows(oar_tensor_t *dst, int64_t d0, const oar_tensor_t *src, int64_t s0, int64_t n)
{
    if (n <= 0) return OAR_OK;
    size_t rb = oar_cf_row_bytes(src);
    if (dst->dtype != src->dtype || oar_cf_row_bytes(dst) != rb)
        return oar_error(OAR_ERR_SHAPE, "row copy: rows of %zu bytes (%s) into rows of %zu bytes (%s)", rb,
                         oar_dtype_name(src->dtype), oar_cf_row_bytes(dst), oar_dtype_name(dst->dtype));
    if (s0 < 0 || d0 < 0 || s0 + n > (src->ndim ? src->dims[0] : 1) || d0 + n > (dst->ndim ? dst->dims[0] : 1))
        return oar_error(OAR_ERR_RANGE, "row copy: rows [%lld, %lld) into [%lld, %lld) out of range",
                         (long long)s0, (long long)(s0 + n), (long long)d0, (long long)(d0 + n));
    if (!oar_tensor_has_data((oar_tensor_t *)src) || !oar_tensor_has_data(dst))
        return oar_error(OAR_ERR_INVALID, "row copy: a tensor has no data");
    OAR_TRY(oar_cf_host(src));
    OAR_TRY(oar_cf_host(dst));
    memcpy((char *)dst->buf->data + (size_t)d0 * rb, (const char *)src->buf->data + (size_t)s0 * rb,
           (size_t)n * rb);
    return OAR_OK;
}

/* ---- LoD units ----------------------------------------------------------- */

int64_t oar_cf_units(const oar_tensor_t *t, int level)
{
    if (t->lod_levels > level) return t->lod_size[level] - 1;
    return t->ndim > 0 ? t->dims[0] : 1;
}

void oar_cf_unit_rows(const oar_tensor_t *t, int level, int64_t u, int64_t *r0, int64_t *r1)
{
    int64_t a = u, b = u + 1;
    for (int l = level; l < t->lod_levels; l++) {
        a = t->lod[l][a];
        b = t->lod[l][b];
    }
    *r0 = a;
    *r1 = b;
}

int oar_cf_unit_levels(const oar_tensor_t *t, int level)
{
    return t->lod_levels > level ? t->lod_levels - level : 0;
}

static int push64(int64_t **v, int64_t *n, int64_t *cap, int64_t x)
{
    if (*n == *cap) {
        int64_t nc = *cap ? *cap * 2 : 16;
        int64_t *p = oar_xrealloc(*v, (size_t)nc * sizeof *p);
        if (!p) return OAR_ERR_NOMEM;
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return OAR_OK;
}

int oar_cf_gather_init(oar_cf_gather_t *g, int levels)
{
    memset(g, 0, sizeof *g);
    if (levels < 0 || levels > OAR_MAX_LOD)
        return oar_error(OAR_ERR_INVALID, "gather: %d LoD levels (at most %d)", levels, OAR_MAX_LOD);
    g->levels = levels;
    for (int k = 0; k < levels; k++) OAR_TRY(push64(&g->lod[k], &g->n[k], &g->cap[k], 0));
    return OAR_OK;
}

int oar_cf_gather_add(oar_cf_gather_t *g, const oar_tensor_t *src, int level, int64_t u)
{
    int have = oar_cf_unit_levels(src, level);
    if (have != g->levels)
        return oar_error(OAR_ERR_SHAPE, "gather: a unit with %d LoD levels among units with %d", have, g->levels);
    if (u < 0 || u >= oar_cf_units(src, level))
        return oar_error(OAR_ERR_RANGE, "gather: unit %lld of %lld", (long long)u, (long long)oar_cf_units(src, level));
    int64_t a = u, b = u + 1;
    for (int k = 0; k < g->levels; k++) {
        const int64_t *lod = src->lod[level + k];
        for (int64_t j = a; j < b; j++)
            OAR_TRY(push64(&g->lod[k], &g->n[k], &g->cap[k], g->lod[k][g->n[k] - 1] + lod[j + 1] - lod[j]));
        a = lod[a];
        b = lod[b];
    }
    if (g->npieces == g->cappieces) {
        int64_t nc = g->cappieces ? g->cappieces * 2 : 16;
        struct oar_cf_piece *p = oar_xrealloc(g->pieces, (size_t)nc * sizeof *p);
        if (!p) return OAR_ERR_NOMEM;
        g->pieces = p;
        g->cappieces = nc;
    }
    g->pieces[g->npieces].src = src;
    g->pieces[g->npieces].r0 = a;
    g->pieces[g->npieces].r1 = b;
    g->npieces++;
    g->rows += b - a;
    return OAR_OK;
}

int oar_cf_gather_finish(oar_cf_gather_t *g, oar_tensor_t *dst, const oar_tensor_t *like,
                         int extra_top, const int64_t *const *top, const int64_t *top_n)
{
    if (!like || like->dtype < 0) return oar_error(OAR_ERR_INVALID, "gather: no model tensor for the result");
    if (extra_top + g->levels > OAR_MAX_LOD)
        return oar_error(OAR_ERR_INVALID, "gather: %d LoD levels (at most %d)", extra_top + g->levels, OAR_MAX_LOD);
    int64_t dims[OAR_MAX_DIMS];
    int nd = like->ndim > 0 ? like->ndim : 1;
    for (int i = 1; i < nd; i++) dims[i] = like->dims[i];
    dims[0] = g->rows;
    size_t rb = oar_cf_row_bytes(like);
    for (int64_t i = 0; i < g->npieces; i++) {
        const oar_tensor_t *s = g->pieces[i].src;
        if (s->dtype != like->dtype || oar_cf_row_bytes(s) != rb) {
            char a[128], b[128];
            return oar_error(OAR_ERR_SHAPE, "gather: rows of shape %s %s cannot join rows of shape %s %s",
                             oar_shape_str(s->dims, s->ndim, a, sizeof a), oar_dtype_name(s->dtype),
                             oar_shape_str(like->dims, like->ndim, b, sizeof b), oar_dtype_name(like->dtype));
        }
        if (g->pieces[i].r1 > g->pieces[i].r0 && !oar_tensor_has_data((oar_tensor_t *)s))
            return oar_error(OAR_ERR_INVALID, "gather: a source tensor has no data");
        OAR_TRY(oar_cf_host(s));
    }
    oar_tensor_reset(dst);
    OAR_TRY(oar_tensor_resize(dst, dims, nd));
    char *out = oar_tensor_mutable(dst, like->dtype);
    if (!out) return OAR_ERR_NOMEM;
    int64_t at = 0;
    for (int64_t i = 0; i < g->npieces; i++) {
        int64_t n = g->pieces[i].r1 - g->pieces[i].r0;
        if (n > 0) memcpy(out + (size_t)at * rb, (const char *)g->pieces[i].src->buf->data + (size_t)g->pieces[i].r0 * rb,
                          (size_t)n * rb);
        at += n;
    }
    int levels = extra_top + g->levels;
    if (levels == 0) return OAR_OK;
    const int64_t *offs[OAR_MAX_LOD];
    int64_t sizes[OAR_MAX_LOD];
    for (int l = 0; l < extra_top; l++) { offs[l] = top[l]; sizes[l] = top_n[l]; }
    for (int k = 0; k < g->levels; k++) { offs[extra_top + k] = g->lod[k]; sizes[extra_top + k] = g->n[k]; }
    return oar_tensor_set_lod(dst, levels, offs, sizes);
}

void oar_cf_gather_free(oar_cf_gather_t *g)
{
    for (int k = 0; k < OAR_MAX_LOD; k++) free(g->lod[k]);
    free(g->pieces);
    memset(g, 0, sizeof *g);
}

/* ---- op plumbing shared by the array and rank-table ops ------------------ */

const char *oar_cf_in_name(oar_kernel_ctx_t *k, const char *slot)
{
    const char *n = oar_k_in_name(k, slot, 0);
    return n ? n : "?";
}

/* a tensor input that holds a value (a zero-size tensor counts) */
int oar_cf_tensor_in(oar_kernel_ctx_t *k, const char *slot, oar_tensor_t **out)
{
    oar_variable_t *v = oar_k_in_var(k, slot, 0);
    oar_tensor_t *t = v && v->type == OAR_VAR_LOD_TENSOR ? v->u.tensor : NULL;
    if (!v || v->type == 0 || !t || t->dtype < 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, oar_cf_in_name(k, slot));
    int rc = oar_cf_host(t);
    if (rc != OAR_OK) {
        oar_error_prefix("%s: input %s '%s' to the host: ", oar_k_op(k)->type, slot, oar_cf_in_name(k, slot));
        return rc;
    }
    *out = t;
    return OAR_OK;
}

/* an optional tensor input: NULL when absent or never written */
oar_tensor_t *oar_cf_tensor_opt(oar_kernel_ctx_t *k, const char *slot)
{
    oar_variable_t *v = oar_k_in_var(k, slot, 0);
    if (!v || v->type != OAR_VAR_LOD_TENSOR || !v->u.tensor || v->u.tensor->dtype < 0) return NULL;
    return v->u.tensor;
}

oar_tensor_t *oar_cf_tensor_out(oar_kernel_ctx_t *k, const char *slot)
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

/* the step index in input `slot`: one integer element, not negative */
int oar_cf_index_in(oar_kernel_ctx_t *k, const char *slot, int64_t *out)
{
    oar_tensor_t *t = NULL;
    OAR_TRY(oar_cf_tensor_in(k, slot, &t));
    if (oar_tensor_numel_of(t) != 1 || !oar_tensor_has_data(t)) {
        char b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "index %s '%s' must hold one element, it has shape %s", slot,
                           oar_cf_in_name(k, slot), oar_shape_str(t->dims, t->ndim, b, sizeof b));
    }
    int64_t i = 0;
    switch (t->dtype) {
    case OAR_INT64: i = *(const int64_t *)t->buf->data; break;
    case OAR_INT32: i = *(const int32_t *)t->buf->data; break;
    default:
        return oar_k_error(k, OAR_ERR_DTYPE, "index %s '%s' must be int64 or int32, it is %s", slot,
                           oar_cf_in_name(k, slot), oar_dtype_name(t->dtype) ? oar_dtype_name(t->dtype) : "?");
    }
    if (i < 0 || i >= INT_MAX)
        return oar_k_error(k, OAR_ERR_RANGE, "index %s '%s' is %lld; array indices run from 0 to %d", slot,
                           oar_cf_in_name(k, slot), (long long)i, INT_MAX - 1);
    *out = i;
    return OAR_OK;
}

/* the array of an input; a never-written variable reads as the empty array */
int oar_cf_array_in(oar_kernel_ctx_t *k, const char *slot, oar_tensor_array_t **out)
{
    static oar_tensor_array_t empty;
    oar_variable_t *v = oar_k_in_var(k, slot, 0);
    if (!v || v->type == 0) { *out = &empty; return OAR_OK; }
    if (v->type != OAR_VAR_LOD_TENSOR_ARRAY)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' must be a tensor array", slot, oar_cf_in_name(k, slot));
    *out = v->u.array;
    return OAR_OK;
}

int oar_cf_array_out(oar_kernel_ctx_t *k, const char *slot, oar_tensor_array_t **out)
{
    oar_variable_t *v = oar_k_out_var(k, slot, 0);
    if (!v) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s is missing", slot);
    *out = oar_var_array(v);
    if (!*out) {
        oar_error_prefix("%s: output %s: ", oar_k_op(k)->type, slot);
        return OAR_ERR_DTYPE;
    }
    return OAR_OK;
}

int oar_cf_table_in(oar_kernel_ctx_t *k, const char *slot, const oar_rank_table_t **out)
{
    oar_variable_t *v = oar_k_in_var(k, slot, 0);
    if (!v || v->type != OAR_VAR_LOD_RANK_TABLE)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' must be a LoD rank table (made by lod_rank_table)",
                           slot, oar_cf_in_name(k, slot));
    *out = v->u.rank;
    return OAR_OK;
}

int oar_cf_scalar_int64_out(oar_kernel_ctx_t *k, int64_t v)
{
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    int64_t one = 1;
    OAR_TRY(oar_tensor_resize(out, &one, 1));
    int64_t *p = oar_tensor_mutable(out, OAR_INT64);
    if (!p) return OAR_ERR_NOMEM;
    *p = v;
    return OAR_OK;
}

/* replaces item i of a (growing it) with a new reference sharing t */
int oar_cf_array_set(oar_tensor_array_t *a, int64_t i, const oar_tensor_t *t)
{
    if (i >= a->n) OAR_TRY(oar_array_resize(a, (int)i + 1));
    oar_tensor_t *item = NULL;
    OAR_TRY(oar_tensor_new_empty(&item));
    int rc = oar_tensor_share(item, t);
    if (rc != OAR_OK) { oar_tensor_free(item); return rc; }
    oar_tensor_free(a->items[i]);
    a->items[i] = item;
    return OAR_OK;
}

/* item i of a gradient array += g (the first contribution is shared) */
int oar_cf_array_accumulate(oar_tensor_array_t *a, int64_t i, const oar_tensor_t *g, const char *what)
{
    const oar_tensor_t *have = i < a->n ? a->items[i] : NULL;
    if (!have || have->dtype < 0) return oar_cf_array_set(a, i, g);
    oar_tensor_t *sum = NULL;
    OAR_TRY(oar_tensor_copy(have, &sum));
    int rc = oar_cf_add_into(sum, g, what);
    if (rc == OAR_OK) rc = oar_cf_array_set(a, i, sum);
    oar_tensor_free(sum);
    return rc;
}

/* ---- compile-time inference helpers ------------------------------------- */

/* out slot i gets in slot j's shape and dtype when they are known */
int oar_cf_infer_like(oar_infer_ctx_t *c, const char *in, const char *out, bool batch_unknown)
{
    int nd;
    const int64_t *d = oar_ic_in_dims(c, in, 0, &nd);
    if (!d) { oar_clear_error(); return OAR_OK; }
    int64_t dims[OAR_MAX_DIMS];
    memcpy(dims, d, sizeof(int64_t) * (size_t)nd);
    if (batch_unknown && nd > 0) dims[0] = -1;
    return oar_ic_set_out(c, out, 0, dims, nd, oar_ic_in_dtype(c, in, 0));
}

int oar_cf_set_lod_level(oar_infer_ctx_t *c, const char *out, int level)
{
    return oar_ic_set_out_lod_level(c, out, 0, level < 0 ? 0 : level);
}

int oar_cf_scalar_int64_infer(oar_infer_ctx_t *c)
{
    int64_t one = 1;
    return oar_ic_set_out(c, "Out", 0, &one, 1, OAR_INT64);
}

/* a grad op with input slot "S@GRAD" read in place and output slot "S@GRAD" */
int oar_cf_inplace_array_grad(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot)
{
    char gslot[64];
    snprintf(gslot, sizeof gslot, "%s%s", fwd_slot, OAR_GRAD_SUFFIX);
    OAR_TRY(oar_gc_in_grad(g, op, fwd_slot));
    int n = oar_op_desc_output_count(op, gslot);
    if (n <= 0) return OAR_OK;
    const char *names[1] = {oar_op_desc_output_arg(op, gslot, 0)};
    return oar_op_desc_set_input(op, gslot, names, 1);
}

int oar_cf_x_grad_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_cf_infer_like(c, "X", "X@GRAD", false));
    return oar_cf_set_lod_level(c, "X@GRAD", oar_ic_in_lod_level(c, "X", 0));
}

int oar_cf_array_grad_infer(oar_infer_ctx_t *c)
{
    return oar_ic_set_out_var_type(c, "X@GRAD", 0, OAR_VAR_LOD_TENSOR_ARRAY);
}

int oar_cf_x_grad_maker(oar_grad_ctx_t *g, const char *type, const char *const *ins, bool x_is_array)
{
    if (oar_gc_no_grad(g, oar_op_desc_input_arg(oar_gc_fwd(g), "X", 0))) return OAR_OK;
    oar_op_desc_t *op = oar_gc_new_op(g, type);
    if (!op) return OAR_ERR_NOMEM;
    for (const char *const *in = ins; *in; in++) OAR_TRY(oar_gc_in(g, op, *in));
    OAR_TRY(oar_gc_out_grad(g, op, "Out"));
    return x_is_array ? oar_cf_inplace_array_grad(g, op, "X") : oar_gc_in_grad(g, op, "X");
}

int oar_cf_concat_lod(int n, oar_tensor_t *const *xs, oar_tensor_t *out)
{
    int levels = xs[0]->lod_levels;
    for (int i = 1; i < n; i++)
        if (xs[i]->lod_levels != levels) levels = 0;
    oar_tensor_clear_lod(out);
    if (levels == 0) return OAR_OK;
    int64_t *lod[OAR_MAX_LOD] = {NULL}, size[OAR_MAX_LOD];
    int rc = OAR_OK;
    for (int l = 0; l < levels && rc == OAR_OK; l++) {
        int64_t total = 1;
        for (int i = 0; i < n; i++) total += xs[i]->lod_size[l] - 1;
        if (!(lod[l] = oar_xmalloc(sizeof(int64_t) * (size_t)total))) { rc = OAR_ERR_NOMEM; break; }
        size[l] = total;
        int64_t j = 0, shift = 0;
        lod[l][j++] = 0;
        for (int i = 0; i < n; i++) {
            const int64_t *o = xs[i]->lod[l];
            int64_t m = xs[i]->lod_size[l];
            for (int64_t q = 1; q < m; q++) lod[l][j++] = shift + o[q] - o[0];
            shift += o[m - 1] - o[0];
        }
    }
    if (rc == OAR_OK) {
        rc = oar_tensor_set_lod(out, levels, (const int64_t *const *)lod, size);
        if (rc != OAR_OK) oar_error_prefix("concat: joining the LoDs of X: ");
    }
    for (int l = 0; l < levels; l++) free(lod[l]);
    return rc;
}
