/* control_flow.c — tensor plumbing for the control-flow and LoD/array ops
 * (see control_flow.h): zeros, elementwise sums of gradients, row copies
 * and the LoD unit gatherer. */
#include "control_flow.h"

#include <stdlib.h>
#include <string.h>

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
