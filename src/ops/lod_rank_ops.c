/* lod_rank_ops.c — LoD rank tables and the ops DynamicRNN builds on them:
 * lod_rank_table (a level's sequences sorted by length, longest first),
 * max_sequence_len, lod_tensor_to_array (one item per step, holding that
 * step of every sequence still running), array_to_lod_tensor (back),
 * shrink_rnn_memory (a memory cut to the sequences still running) and
 * reorder_lod_tensor_by_rank, with their grads (array gradients accumulate
 * in place, see array_ops.c). The ops are declared in lod_rank_ops.ops;
 * this file holds their inference, grad makers and runs. */
#include "op.h"
#include "lod_plumbing.h"
#include "ops/lod_rank_ops.h"   /* generated from lod_rank_ops.ops: the attribute structs */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- lod_rank_table, max_sequence_len ------------------------------------- */

static int rank_table_infer(oar_infer_ctx_t *c)
{
    return oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_LOD_RANK_TABLE);
}

static int cmp_rank(const void *a, const void *b)
{
    const oar_rank_item_t *x = a, *y = b;
    if (x->length != y->length) return x->length > y->length ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;   /* stable: by index */
}

static int rank_table_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    int level = ((const oar_rank_table_attrs_t *)oar_k_attrs(k))->level;
    if (x->lod_levels <= level)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' has %d LoD levels; a rank table of level %d needs "
                           "more than %d", oar_cf_in_name(k, "X"), x->lod_levels, level, level);
    if (level > 1)
        return oar_k_error(k, OAR_ERR_UNSUPPORTED, "rank tables of level %d are not supported (levels 0 and 1 are)",
                           level);
    oar_variable_t *ov = oar_k_out_var(k, "Out", 0);
    oar_rank_table_t *t = ov ? oar_var_rank_table(ov) : NULL;
    if (!t) return ov ? OAR_ERR_DTYPE : oar_k_error(k, OAR_ERR_NOT_FOUND, "output Out is missing");
    const int64_t *lod = x->lod[level];
    int64_t n = x->lod_size[level] - 1;
    oar_rank_item_t *items = oar_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *items);
    int64_t *coarse = NULL;
    int64_t ncoarse = level > 0 ? x->lod_size[0] : 0;
    if (items && ncoarse > 0 && (coarse = oar_xmalloc((size_t)ncoarse * sizeof *coarse)))
        memcpy(coarse, x->lod[0], (size_t)ncoarse * sizeof *coarse);
    if (!items || (ncoarse > 0 && !coarse)) { free(items); free(coarse); return OAR_ERR_NOMEM; }
    for (int64_t i = 0; i < n; i++) {
        items[i].index = i;
        items[i].length = lod[i + 1] - lod[i];
    }
    qsort(items, (size_t)n, sizeof *items, cmp_rank);
    free(t->items);
    free(t->coarse_lod);
    t->level = level;
    t->items = items;
    t->n = n;
    t->coarse_lod = coarse;
    t->coarse_n = ncoarse;
    return OAR_OK;
}

static int max_len_run(oar_kernel_ctx_t *k)
{
    const oar_rank_table_t *t = NULL;
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    return oar_cf_scalar_int64_out(k, t->n > 0 ? t->items[0].length : 0);
}

/* The table must describe x's LoD at its level: same sequence count and lengths. */
static int check_table(oar_kernel_ctx_t *k, const oar_rank_table_t *t, const oar_tensor_t *x, const char *slot)
{
    if (x->lod_levels <= t->level)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %d LoD levels; the rank table is of level %d",
                           slot, oar_cf_in_name(k, slot), x->lod_levels, t->level);
    int64_t n = x->lod_size[t->level] - 1;
    if (n != t->n)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld sequences at LoD level %d; the rank table "
                           "has %lld", slot, oar_cf_in_name(k, slot), (long long)n, t->level, (long long)t->n);
    for (int64_t r = 0; r < t->n; r++) {
        int64_t u = t->items[r].index;
        if (x->lod[t->level][u + 1] - x->lod[t->level][u] != t->items[r].length)
            return oar_k_error(k, OAR_ERR_SHAPE, "sequence %lld of %s '%s' has length %lld; the rank table says %lld",
                               (long long)u, slot, oar_cf_in_name(k, slot),
                               (long long)(x->lod[t->level][u + 1] - x->lod[t->level][u]), (long long)t->items[r].length);
    }
    return OAR_OK;
}

/* ---- lod_tensor_to_array ----------------------------------------------------- */
/* Item t holds element t of every sequence longer than t, in rank order. */
static int lta_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_ic_set_out_var_type(c, "Out", 0, OAR_VAR_LOD_TENSOR_ARRAY));
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", true));
    return oar_cf_set_lod_level(c, "Out", oar_ic_in_lod_level(c, "X", 0) - 1);
}

static int64_t count_longer(const oar_rank_table_t *t, int64_t step)
{
    int64_t c = 0;
    while (c < t->n && t->items[c].length > step) c++;
    return c;
}

static int lta_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    const oar_rank_table_t *t = NULL;
    oar_tensor_array_t *a = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    OAR_TRY(check_table(k, t, x, "X"));
    OAR_TRY(oar_cf_array_out(k, "Out", &a));
    int64_t steps = t->n > 0 ? t->items[0].length : 0;
    if (steps >= INT_MAX) return oar_k_error(k, OAR_ERR_RANGE, "sequences of %lld steps", (long long)steps);
    OAR_TRY(oar_array_resize(a, 0));
    OAR_TRY(oar_array_resize(a, (int)steps));
    int lv = t->level;
    for (int64_t s = 0; s < steps; s++) {
        oar_cf_gather_t g;
        int rc = oar_cf_gather_init(&g, oar_cf_unit_levels(x, lv + 1));
        for (int64_t r = 0; r < count_longer(t, s) && rc == OAR_OK; r++)
            rc = oar_cf_gather_add(&g, x, lv + 1, x->lod[lv][t->items[r].index] + s);
        oar_tensor_t *item = NULL;
        if (rc == OAR_OK) rc = oar_tensor_new_empty(&item);
        if (rc == OAR_OK) rc = oar_cf_gather_finish(&g, item, x, 0, NULL, NULL);
        oar_cf_gather_free(&g);
        if (rc != OAR_OK) { oar_tensor_free(item); return rc; }
        a->items[s] = item;
    }
    return OAR_OK;
}

static int lta_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "lod_tensor_to_array_grad", (const char *const[]){"X", "RankTable", NULL}, false);
}

/* X@GRAD: zeros like X, then each gradient item's rows back where they came from */
static int lta_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    const oar_rank_table_t *t = NULL;
    oar_tensor_array_t *ga = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    OAR_TRY(check_table(k, t, x, "X"));
    OAR_TRY(oar_cf_array_in(k, "Out@GRAD", &ga));
    oar_tensor_t *out = oar_cf_tensor_out(k, "X@GRAD");
    if (!out) return OAR_ERR_INVALID;
    OAR_TRY(oar_cf_zeros_like(out, x));
    OAR_TRY(oar_tensor_copy_lod(out, x));
    int lv = t->level;
    for (int64_t s = 0; s < ga->n; s++) {
        const oar_tensor_t *item = ga->items[s];
        if (!item || item->dtype < 0) continue;
        int64_t off = 0;
        for (int64_t r = 0; r < count_longer(t, s); r++) {
            int64_t r0, r1;
            oar_cf_unit_rows(x, lv + 1, x->lod[lv][t->items[r].index] + s, &r0, &r1);
            if (off + (r1 - r0) > (item->ndim ? item->dims[0] : 0))
                return oar_k_error(k, OAR_ERR_SHAPE, "gradient item %lld of '%s' has %lld rows, fewer than step %lld "
                                   "of '%s' holds", (long long)s, oar_cf_in_name(k, "Out@GRAD"),
                                   (long long)(item->ndim ? item->dims[0] : 0), (long long)s, oar_cf_in_name(k, "X"));
            OAR_TRY(oar_cf_copy_rows(out, r0, item, off, r1 - r0));
            off += r1 - r0;
        }
    }
    return OAR_OK;
}

/* ---- array_to_lod_tensor ------------------------------------------------------ */
/* Out's sequence u (in the original order) is element t of item t, at the
 * rank position r of u, for t below u's length. */
static int atl_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", true));
    return oar_cf_set_lod_level(c, "Out", oar_ic_in_lod_level(c, "X", 0) + 1);
}

/* rank position of each sequence (caller frees) */
static int64_t *rank_positions(const oar_rank_table_t *t)
{
    int64_t *pos = oar_xmalloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *pos);
    if (!pos) return NULL;
    for (int64_t r = 0; r < t->n; r++) pos[t->items[r].index] = r;
    return pos;
}

/* the items of a the table needs, checked: item s holds count_longer(s) units */
static int check_items(oar_kernel_ctx_t *k, const oar_rank_table_t *t, const oar_tensor_array_t *a,
                       const char *slot, const oar_tensor_t **like)
{
    int64_t steps = t->n > 0 ? t->items[0].length : 0;
    *like = NULL;
    if (a->n < steps)
        return oar_k_error(k, OAR_ERR_SHAPE, "array %s '%s' has %d items; the rank table's longest sequence has %lld steps",
                           slot, oar_cf_in_name(k, slot), a->n, (long long)steps);
    for (int64_t s = 0; s < steps; s++) {
        const oar_tensor_t *it = a->items[s];
        if (!it || it->dtype < 0)
            return oar_k_error(k, OAR_ERR_NOT_FOUND, "item %lld of array %s '%s' was never written", (long long)s,
                               slot, oar_cf_in_name(k, slot));
        if (oar_cf_units(it, 0) != count_longer(t, s))
            return oar_k_error(k, OAR_ERR_SHAPE, "item %lld of array %s '%s' holds %lld sequences/rows; %lld sequences "
                               "are longer than %lld steps", (long long)s, slot, oar_cf_in_name(k, slot),
                               (long long)oar_cf_units(it, 0), (long long)count_longer(t, s), (long long)s);
        if (!*like) *like = it;
    }
    return OAR_OK;
}

static int atl_run(oar_kernel_ctx_t *k)
{
    oar_tensor_array_t *a = NULL;
    const oar_rank_table_t *t = NULL;
    const oar_tensor_t *like = NULL;
    OAR_TRY(oar_cf_array_in(k, "X", &a));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    OAR_TRY(check_items(k, t, a, "X", &like));
    if (!like)
        return oar_k_error(k, OAR_ERR_SHAPE, "array X '%s' has no items to build a tensor from (all sequences are empty)",
                           oar_cf_in_name(k, "X"));
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    int64_t *pos = rank_positions(t);
    int64_t *offs = oar_xmalloc((size_t)(t->n + 1) * sizeof *offs);
    oar_cf_gather_t g;
    int rc = pos && offs ? oar_cf_gather_init(&g, oar_cf_unit_levels(like, 0)) : OAR_ERR_NOMEM;
    if (rc == OAR_OK) {
        offs[0] = 0;
        for (int64_t u = 0; u < t->n && rc == OAR_OK; u++) {
            int64_t len = t->items[pos[u]].length;
            offs[u + 1] = offs[u] + len;
            for (int64_t s = 0; s < len && rc == OAR_OK; s++) rc = oar_cf_gather_add(&g, a->items[s], 0, pos[u]);
        }
        const int64_t *top[2];
        int64_t top_n[2];
        int ntop = 0;
        if (t->level > 0) { top[ntop] = t->coarse_lod; top_n[ntop++] = t->coarse_n; }
        top[ntop] = offs;
        top_n[ntop++] = t->n + 1;
        if (rc == OAR_OK) rc = oar_cf_gather_finish(&g, out, like, ntop, top, top_n);
        oar_cf_gather_free(&g);
    }
    free(pos);
    free(offs);
    return rc;
}

static int atl_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "array_to_lod_tensor_grad", (const char *const[]){"X", "RankTable", NULL}, true);
}

/* item s of X@GRAD += the rows of Out@GRAD that came from item s */
static int atl_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_array_t *a = NULL, *ga = NULL;
    const oar_rank_table_t *t = NULL;
    const oar_tensor_t *like = NULL;
    oar_tensor_t *og = NULL;
    OAR_TRY(oar_cf_array_in(k, "X", &a));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    OAR_TRY(check_items(k, t, a, "X", &like));
    OAR_TRY(oar_cf_tensor_in(k, "Out@GRAD", &og));
    OAR_TRY(oar_cf_array_out(k, "X@GRAD", &ga));
    int64_t steps = t->n > 0 ? t->items[0].length : 0;
    oar_tensor_t **parts = oar_xcalloc((size_t)(steps > 0 ? steps : 1), sizeof *parts);
    int64_t *pos = rank_positions(t);
    int rc = parts && pos ? OAR_OK : OAR_ERR_NOMEM;
    for (int64_t s = 0; s < steps && rc == OAR_OK; s++) rc = oar_cf_new_zeros_like(a->items[s], &parts[s]);
    int64_t off = 0, orows = og->ndim ? og->dims[0] : 0;
    for (int64_t u = 0; u < t->n && rc == OAR_OK; u++)
        for (int64_t s = 0; s < t->items[pos[u]].length && rc == OAR_OK; s++) {
            int64_t r0, r1;
            oar_cf_unit_rows(a->items[s], 0, pos[u], &r0, &r1);
            if (off + r1 - r0 > orows)
                rc = oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' has %lld rows, fewer than the output it is the gradient of",
                                 oar_cf_in_name(k, "Out@GRAD"), (long long)orows);
            else rc = oar_cf_copy_rows(parts[s], r0, og, off, r1 - r0);
            off += r1 - r0;
        }
    for (int64_t s = 0; s < steps && rc == OAR_OK; s++)
        rc = oar_cf_array_accumulate(ga, s, parts[s], oar_k_out_name(k, "X@GRAD", 0));
    for (int64_t s = 0; parts && s < steps; s++) oar_tensor_free(parts[s]);
    free(parts);
    free(pos);
    return rc;
}

/* ---- shrink_rnn_memory -------------------------------------------------------- */
/* Out = the first k sequences (rows) of X, k = the sequences longer than I. */
static int shrink_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", true));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int shrink_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    int64_t i = 0;
    const oar_rank_table_t *t = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_index_in(k, "I", &i));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    int64_t keep = count_longer(t, i);
    if (keep > oar_cf_units(x, 0))
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' has %lld sequences/rows; step %lld needs %lld",
                           oar_cf_in_name(k, "X"), (long long)oar_cf_units(x, 0), (long long)i, (long long)keep);
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    oar_cf_gather_t g;
    int rc = oar_cf_gather_init(&g, oar_cf_unit_levels(x, 0));
    for (int64_t u = 0; u < keep && rc == OAR_OK; u++) rc = oar_cf_gather_add(&g, x, 0, u);
    if (rc == OAR_OK) rc = oar_cf_gather_finish(&g, out, x, 0, NULL, NULL);
    oar_cf_gather_free(&g);
    return rc;
}

static int shrink_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "shrink_rnn_memory_grad", (const char *const[]){"X", NULL}, false);
}

/* X@GRAD: Out@GRAD in the first rows, zeros below */
static int shrink_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    oar_tensor_t *og = oar_cf_tensor_opt(k, "Out@GRAD");
    oar_tensor_t *out = oar_cf_tensor_out(k, "X@GRAD");
    if (!out) return OAR_ERR_INVALID;
    OAR_TRY(oar_cf_zeros_like(out, x));
    OAR_TRY(oar_tensor_copy_lod(out, x));
    if (!og) return OAR_OK;
    int64_t n = og->ndim ? og->dims[0] : 0;
    if (n > (x->ndim ? x->dims[0] : 0))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' has %lld rows, more than X '%s' (%lld)", oar_cf_in_name(k, "Out@GRAD"),
                           (long long)n, oar_cf_in_name(k, "X"), (long long)(x->ndim ? x->dims[0] : 0));
    return oar_cf_copy_rows(out, 0, og, 0, n);
}

/* ---- reorder_lod_tensor_by_rank --------------------------------------------------- */
/* Out's r-th sequence (row, without LoD) is X's items[r].index-th. */
static int reorder_infer(oar_infer_ctx_t *c)
{
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", false));
    return oar_ic_share_lod(c, "X", 0, "Out", 0);
}

static int check_reorder(oar_kernel_ctx_t *k, const oar_rank_table_t *t, const oar_tensor_t *x)
{
    if (oar_cf_units(x, 0) != t->n)
        return oar_k_error(k, OAR_ERR_SHAPE, "input X '%s' has %lld sequences/rows; the rank table orders %lld",
                           oar_cf_in_name(k, "X"), (long long)oar_cf_units(x, 0), (long long)t->n);
    return OAR_OK;
}

static int reorder_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL;
    const oar_rank_table_t *t = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    OAR_TRY(check_reorder(k, t, x));
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    oar_cf_gather_t g;
    int rc = oar_cf_gather_init(&g, oar_cf_unit_levels(x, 0));
    for (int64_t r = 0; r < t->n && rc == OAR_OK; r++) rc = oar_cf_gather_add(&g, x, 0, t->items[r].index);
    if (rc == OAR_OK) rc = oar_cf_gather_finish(&g, out, x, 0, NULL, NULL);
    oar_cf_gather_free(&g);
    return rc;
}

static int reorder_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "reorder_lod_tensor_by_rank_grad",
                               (const char *const[]){"X", "RankTable", NULL}, false);
}

static int reorder_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL, *og = NULL;
    const oar_rank_table_t *t = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_table_in(k, "RankTable", &t));
    OAR_TRY(oar_cf_tensor_in(k, "Out@GRAD", &og));
    OAR_TRY(check_reorder(k, t, x));
    oar_tensor_t *out = oar_cf_tensor_out(k, "X@GRAD");
    if (!out) return OAR_ERR_INVALID;
    OAR_TRY(oar_cf_zeros_like(out, x));
    OAR_TRY(oar_tensor_copy_lod(out, x));
    int64_t off = 0, orows = og->ndim ? og->dims[0] : 0;
    for (int64_t r = 0; r < t->n; r++) {
        int64_t r0, r1;
        oar_cf_unit_rows(x, 0, t->items[r].index, &r0, &r1);
        if (off + r1 - r0 > orows)
            return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' has %lld rows; X '%s' has more",
                               oar_cf_in_name(k, "Out@GRAD"), (long long)orows, oar_cf_in_name(k, "X"));
        OAR_TRY(oar_cf_copy_rows(out, r0, og, off, r1 - r0));
        off += r1 - r0;
    }
    return OAR_OK;
}

/* ---- lod_reset ------------------------------------------------------------------ */
/* Out shares X's data with a new LoD: Y's LoD when Y has one, else Y's values
 * (int32/int64 offsets), else attr target_lod; with append=true that level
 * is added below X's levels. The grad passes Out@GRAD back with X's LoD. */

static int reset_infer(oar_infer_ctx_t *c)
{
    const oar_lod_reset_attrs_t *a = oar_ic_attrs(c);
    if (!a) return OAR_ERR_INVALID;
    OAR_TRY(oar_cf_infer_like(c, "X", "Out", false));
    int have = oar_ic_in_lod_level(c, "X", 0);
    int levels = 1;
    if (oar_ic_in_count(c, "Y") > 0 && oar_ic_in_lod_level(c, "Y", 0) > 0) levels = oar_ic_in_lod_level(c, "Y", 0);
    else if (a->append && have > 0) levels = have + 1;
    return oar_cf_set_lod_level(c, "Out", levels);
}

static int reset_run(oar_kernel_ctx_t *k)
{
    const oar_lod_reset_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *x = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    oar_tensor_t *y = oar_cf_tensor_opt(k, "Y");
    oar_tensor_t *out = oar_cf_tensor_out(k, "Out");
    if (!out) return OAR_ERR_INVALID;
    int64_t rows = x->ndim ? x->dims[0] : 1;
    if (y && y->lod_levels > 0) {
        int64_t last = y->lod[y->lod_levels - 1][y->lod_size[y->lod_levels - 1] - 1];
        if (last != rows)
            return oar_k_error(k, OAR_ERR_SHAPE, "Y '%s' has a LoD over %lld rows; X '%s' has %lld",
                               oar_cf_in_name(k, "Y"), (long long)last, oar_cf_in_name(k, "X"), (long long)rows);
        OAR_TRY(oar_tensor_share(out, x));
        return oar_tensor_copy_lod(out, y);
    }
    int64_t n = 0;
    int64_t *offs = NULL;
    if (y) {
        OAR_TRY(oar_cf_host(y));
        n = oar_tensor_numel_of(y);
        if (y->dtype != OAR_INT32 && y->dtype != OAR_INT64)
            return oar_k_error(k, OAR_ERR_DTYPE, "Y '%s' holds offsets: it must be int32 or int64, it is %s",
                               oar_cf_in_name(k, "Y"), oar_dtype_name(y->dtype) ? oar_dtype_name(y->dtype) : "?");
        if (n > 0 && !(offs = oar_xmalloc((size_t)n * sizeof *offs))) return OAR_ERR_NOMEM;
        for (int64_t i = 0; i < n; i++)
            offs[i] = y->dtype == OAR_INT32 ? ((const int32_t *)y->buf->data)[i] : ((const int64_t *)y->buf->data)[i];
    } else {
        oar_ints_t t = a->target_lod;
        n = t.n;
        if (n > 0 && !(offs = oar_xmalloc((size_t)n * sizeof *offs))) return OAR_ERR_NOMEM;
        for (int64_t i = 0; i < n; i++) offs[i] = t.v[i];
    }
    int rc = OAR_OK;
    if (n < 2 || offs[0] != 0 || offs[n - 1] != rows)
        rc = oar_k_error(k, OAR_ERR_SHAPE, "the target LoD must have at least 2 offsets, start at 0 and end at X's %lld "
                         "rows (X is '%s')", (long long)rows, oar_cf_in_name(k, "X"));
    for (int64_t i = 1; i < n && rc == OAR_OK; i++)
        if (offs[i] < offs[i - 1])
            rc = oar_k_error(k, OAR_ERR_SHAPE, "the target LoD decreases at offset %lld (%lld after %lld)", (long long)i,
                             (long long)offs[i], (long long)offs[i - 1]);
    bool append = a->append && x->lod_levels > 0;
    int levels = append ? x->lod_levels + 1 : 1;
    if (rc == OAR_OK && levels > OAR_MAX_LOD) rc = oar_k_error(k, OAR_ERR_SHAPE, "appending makes %d LoD levels", levels);
    if (rc == OAR_OK) rc = oar_tensor_share(out, x);
    if (rc == OAR_OK) {
        const int64_t *lod[OAR_MAX_LOD];
        int64_t sizes[OAR_MAX_LOD];
        for (int l = 0; l < levels - 1; l++) { lod[l] = x->lod[l]; sizes[l] = x->lod_size[l]; }
        lod[levels - 1] = offs;
        sizes[levels - 1] = n;
        /* appended, the new level splits the rows and X's last level must
         * count its sequences: the LoD is checked like any other */
        rc = oar_tensor_set_lod(out, levels, lod, sizes);
        if (rc != OAR_OK && append) oar_error_prefix("lod_reset: appending a level to X's LoD: ");
    }
    free(offs);
    return rc;
}

static int reset_grad(oar_grad_ctx_t *g)
{
    return oar_cf_x_grad_maker(g, "lod_reset_grad", (const char *const[]){"X", NULL}, false);
}

static int reset_grad_run(oar_kernel_ctx_t *k)
{
    oar_tensor_t *x = NULL, *og = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "X", &x));
    OAR_TRY(oar_cf_tensor_in(k, "Out@GRAD", &og));
    if (oar_tensor_numel_of(og) != oar_tensor_numel_of(x))
        return oar_k_error(k, OAR_ERR_SHAPE, "Out@GRAD '%s' has %lld elements, X '%s' %lld", oar_cf_in_name(k, "Out@GRAD"),
                           (long long)oar_tensor_numel_of(og), oar_cf_in_name(k, "X"), (long long)oar_tensor_numel_of(x));
    oar_tensor_t *out = oar_cf_tensor_out(k, "X@GRAD");
    if (!out) return OAR_ERR_INVALID;
    OAR_TRY(oar_tensor_share(out, og));
    OAR_TRY(oar_tensor_resize(out, x->dims, x->ndim));
    return oar_tensor_copy_lod(out, x);
}

#define OAR_OPS_DEFINE
#include "ops/lod_rank_ops.h"
