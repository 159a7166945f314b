/* beam_search.c — Fluid 1.8's beam_search (one step of beam search over
 * LoD level-2 candidates) and beam_search_decode (the hypotheses,
 * backtracked through every step's LoD). Declared in beam_search.ops; this
 * file holds their inference and runs. Both run on the host: the work is a
 * small sort plus LoD bookkeeping, and the output sizes depend on the data.
 * The selection order, the tie-breaks and the pruning follow Fluid's
 * math/beam_search.cc and beam_search_decode_op.h exactly, since decoded
 * sentences of a loaded program must match Fluid's. */
#include "op.h"
#include "lod_plumbing.h"
#include "ops/beam_search.h"   /* generated: the attribute structs */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a float32/float64 element of t as a double */
static double elem(const oar_tensor_t *t, int64_t i)
{
    return t->dtype == OAR_FP32 ? (double)((const float *)t->buf->data)[i] : ((const double *)t->buf->data)[i];
}

static int check_float(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *slot)
{
    if (t->dtype == OAR_FP32 || t->dtype == OAR_FP64) return OAR_OK;
    return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' must be float32 or float64", slot, oar_cf_in_name(k, slot));
}

static int check_int64(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *slot)
{
    if (t->dtype == OAR_INT64) return OAR_OK;
    return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' must be int64", slot, oar_cf_in_name(k, slot));
}

static int check_lod2(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *slot, const char *what)
{
    if (t->lod_levels == 2) return OAR_OK;
    return oar_k_error(k, OAR_ERR_SHAPE, "%s %s '%s' must have a LoD of level 2 (sources -> prefixes -> "
                       "candidates); it has %d levels", what, slot, oar_cf_in_name(k, slot), t->lod_levels);
}

/* Sizes an output tensor: dims, dtype, and (when lod0) a 2-level LoD. */
static int set_out(oar_kernel_ctx_t *k, const char *slot, const int64_t *dims, int nd, int dtype,
                   const void *data, size_t bytes, const int64_t *lod0, int64_t n0, const int64_t *lod1, int64_t n1)
{
    oar_tensor_t *t = oar_cf_tensor_out(k, slot);
    if (!t) return OAR_ERR_INVALID;
    OAR_TRY(oar_tensor_resize(t, dims, nd));
    void *p = oar_tensor_mutable(t, dtype);
    if (!p && bytes > 0) return OAR_ERR_NOMEM;
    if (bytes > 0) memcpy(p, data, bytes);
    if (!lod0) { oar_tensor_clear_lod(t); return OAR_OK; }
    const int64_t *offs[2] = { lod0, lod1 };
    const int64_t sizes[2] = { n0, n1 };
    return oar_tensor_set_lod(t, 2, offs, sizes);
}

/* ---- beam_search ------------------------------------------------------------ */

static int bs_infer(oar_infer_ctx_t *c)
{
    int sdt = oar_ic_in_dtype(c, "scores", 0);
    int64_t d2[2] = { -1, 1 }, d1 = -1;
    OAR_TRY(oar_ic_set_out(c, "selected_ids", 0, d2, 2, OAR_INT64));
    OAR_TRY(oar_cf_set_lod_level(c, "selected_ids", 2));
    OAR_TRY(oar_ic_set_out(c, "selected_scores", 0, d2, 2, sdt));
    OAR_TRY(oar_cf_set_lod_level(c, "selected_scores", 2));
    if (oar_ic_out_present(c, "parent_idx")) OAR_TRY(oar_ic_set_out(c, "parent_idx", 0, &d1, 1, OAR_INT32));
    return OAR_OK;
}

typedef struct { int64_t offset, id; double score; } bs_item_t;

/* Fluid's order: a lower score, or an equal score at an earlier prefix */
static int item_less(const bs_item_t *a, const bs_item_t *b)
{
    return a->score < b->score || (a->score == b->score && a->offset < b->offset);
}

/* Fluid's insertion into the sorted top list (best first): an item not
 * below the last one replaces it when the list is full. */
static void insert_top(bs_item_t *top, int64_t *n, int64_t beam, bs_item_t it)
{
    if (*n < beam) (*n)++;
    else if (item_less(&it, &top[beam - 1])) return;
    for (int64_t j = *n - 2; j >= 0; j--) {
        if (item_less(&top[j], &it)) top[j + 1] = top[j];
        else { top[j + 1] = it; return; }
    }
    top[0] = it;
}

static int bs_run(oar_kernel_ctx_t *k)
{
    const oar_beam_search_attrs_t *a = oar_k_attrs(k);
    oar_tensor_t *pre_ids = NULL, *pre_scores = NULL, *scores = NULL;
    OAR_TRY(oar_cf_tensor_in(k, "pre_ids", &pre_ids));
    OAR_TRY(oar_cf_tensor_in(k, "pre_scores", &pre_scores));
    OAR_TRY(oar_cf_tensor_in(k, "scores", &scores));
    oar_tensor_t *ids = oar_cf_tensor_opt(k, "ids");
    OAR_TRY(check_int64(k, pre_ids, "pre_ids"));
    OAR_TRY(check_float(k, scores, "scores"));
    OAR_TRY(check_lod2(k, scores, "scores", "input"));
    if (pre_scores->dtype != scores->dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input pre_scores '%s' must have the dtype of scores '%s'",
                           oar_cf_in_name(k, "pre_scores"), oar_cf_in_name(k, "scores"));
    if (a->level >= scores->lod_levels)
        return oar_k_error(k, OAR_ERR_INVALID, "level %d: input scores '%s' has %d LoD levels", a->level,
                           oar_cf_in_name(k, "scores"), scores->lod_levels);
    int64_t rows = scores->ndim > 0 ? scores->dims[0] : 0, total = oar_tensor_numel_of(scores);
    int64_t width = rows > 0 ? total / rows : 0;
    if (ids) {
        OAR_TRY(check_int64(k, ids, "ids"));
        /* Fluid reads only ids' data; a LoD it carries (top_k shares scores') must be scores' kind */
        if (ids->lod_levels > 0) OAR_TRY(check_lod2(k, ids, "ids", "input"));
        if (oar_tensor_numel_of(ids) != total || (ids->ndim > 0 ? ids->dims[0] : 0) != rows)
            return oar_k_error(k, OAR_ERR_SHAPE, "input ids '%s' must have the shape of scores '%s' (%lld rows, "
                               "%lld elements); it has %lld rows, %lld elements", oar_cf_in_name(k, "ids"),
                               oar_cf_in_name(k, "scores"), (long long)rows, (long long)total,
                               (long long)(ids->ndim > 0 ? ids->dims[0] : 0), (long long)oar_tensor_numel_of(ids));
    }
    if (oar_tensor_numel_of(pre_ids) != rows || oar_tensor_numel_of(pre_scores) != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "inputs pre_ids '%s' (%lld elements) and pre_scores '%s' (%lld) must "
                           "hold one value per prefix: scores '%s' has %lld rows", oar_cf_in_name(k, "pre_ids"),
                           (long long)oar_tensor_numel_of(pre_ids), oar_cf_in_name(k, "pre_scores"),
                           (long long)oar_tensor_numel_of(pre_scores), oar_cf_in_name(k, "scores"), (long long)rows);

    /* the sources' prefix (row) offsets: level `level` taken down to rows */
    int64_t nsrc1 = scores->lod_size[a->level];
    int64_t *high = oar_xmalloc((size_t)nsrc1 * sizeof *high);
    if (!high) return OAR_ERR_NOMEM;
    for (int64_t i = 0; i < nsrc1; i++) {
        int64_t v = scores->lod[a->level][i];
        for (int l = a->level + 1; l < scores->lod_levels; l++) v = scores->lod[l][v];
        high[i] = v;
    }
    if (nsrc1 < 1 || high[nsrc1 - 1] != rows) {
        free(high);
        return oar_k_error(k, OAR_ERR_SHAPE, "the LoD of input scores '%s' does not end at its %lld rows",
                           oar_cf_in_name(k, "scores"), (long long)rows);
    }
    const int64_t *pid = pre_ids->buf ? pre_ids->buf->data : NULL, *cid = ids ? ids->buf->data : NULL;
    const int f32 = scores->dtype == OAR_FP32;
    /* a source keeps at most its candidates: one per finished prefix, width per other */
    int64_t cap = rows * (width > 1 ? width : 1);
    int64_t beam = a->beam_size < cap ? a->beam_size : cap;
    bs_item_t *top = oar_xmalloc((size_t)(beam > 0 ? beam : 1) * sizeof *top);
    int64_t *out_ids = oar_xmalloc((size_t)(cap > 0 ? cap : 1) * sizeof *out_ids);
    double *out_sc = oar_xmalloc((size_t)(cap > 0 ? cap : 1) * sizeof *out_sc);
    int32_t *parent = oar_xmalloc((size_t)(cap > 0 ? cap : 1) * sizeof *parent);
    int64_t *low = oar_xmalloc((size_t)(rows + 1) * sizeof *low);
    int rc = (top && out_ids && out_sc && parent && low) ? OAR_OK : OAR_ERR_NOMEM;
    int64_t nout = 0;
    for (int64_t s = 0; s + 1 < nsrc1 && rc == OAR_OK; s++) {
        int64_t n = 0;
        for (int64_t r = high[s]; r < high[s + 1]; r++) {
            double pre = elem(pre_scores, r);
            if (pid[r] == a->end_id) {   /* finished: carried once, as is */
                insert_top(top, &n, beam, (bs_item_t){ r, a->end_id, pre });
                continue;
            }
            for (int64_t d = 0; d < width; d++) {
                int64_t i = r * width + d;
                double v = elem(scores, i), sc;
                if (a->is_accumulated) sc = v;
                else if (f32) sc = (double)((float)pre + logf((float)v));   /* Fluid adds in float */
                else sc = pre + log(v);
                insert_top(top, &n, beam, (bs_item_t){ r, cid ? cid[i] : d, sc });
            }
        }
        /* a source whose every kept pair is end_id after end_id is done: pruned */
        int done = 1;
        for (int64_t j = 0; j < n && done; j++) done = top[j].id == a->end_id && pid[top[j].offset] == a->end_id;
        if (done) n = 0;
        /* grouped by prefix, best first within a prefix */
        for (int64_t r = high[s]; r < high[s + 1]; r++) {
            low[r] = nout;
            for (int64_t j = 0; j < n; j++) {
                if (top[j].offset != r) continue;
                out_ids[nout] = top[j].id;
                out_sc[nout] = top[j].score;
                parent[nout] = (int32_t)r;
                nout++;
            }
        }
    }
    if (rc == OAR_OK) {
        low[rows] = nout;
        int64_t dims[2] = { nout, 1 };
        void *sc = out_sc;
        if (f32) {   /* narrow in place: each float lands before the doubles still unread */
            float *f = (float *)out_sc;
            for (int64_t i = 0; i < nout; i++) f[i] = (float)out_sc[i];
        }
        size_t esz = f32 ? sizeof(float) : sizeof(double);
        rc = set_out(k, "selected_ids", dims, 2, OAR_INT64, out_ids, (size_t)nout * sizeof *out_ids, high, nsrc1,
                     low, rows + 1);
        if (rc == OAR_OK)
            rc = set_out(k, "selected_scores", dims, 2, scores->dtype, sc, (size_t)nout * esz, high, nsrc1, low,
                         rows + 1);
        if (rc == OAR_OK && oar_k_out_var(k, "parent_idx", 0))
            rc = set_out(k, "parent_idx", &nout, 1, OAR_INT32, parent, (size_t)nout * sizeof *parent, NULL, 0, NULL,
                         0);
    }
    free(high); free(top); free(out_ids); free(out_sc); free(parent); free(low);
    return rc;
}

/* ---- beam_search_decode --------------------------------------------------------- */

static int bsd_infer(oar_infer_ctx_t *c)
{
    int64_t d = -1;
    OAR_TRY(oar_ic_set_out(c, "SentenceIds", 0, &d, 1, OAR_INT64));
    OAR_TRY(oar_cf_set_lod_level(c, "SentenceIds", 2));
    OAR_TRY(oar_ic_set_out(c, "SentenceScores", 0, &d, 1, oar_ic_in_dtype(c, "Scores", 0)));
    return oar_cf_set_lod_level(c, "SentenceScores", 2);
}

/* one hypothesis, built backwards: words from the last step to the first */
typedef struct { int64_t *ids; double *sc; int64_t n, cap; int64_t src, order; } bsd_sent_t;

static int sent_push(bsd_sent_t *s, int64_t id, double sc)
{
    if (s->n == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 8;
        int64_t *ni = oar_xrealloc(s->ids, (size_t)cap * sizeof *ni);
        if (!ni) return OAR_ERR_NOMEM;
        s->ids = ni;
        double *ns = oar_xrealloc(s->sc, (size_t)cap * sizeof *ns);
        if (!ns) return OAR_ERR_NOMEM;
        s->sc = ns;
        s->cap = cap;
    }
    s->ids[s->n] = id;
    s->sc[s->n] = sc;
    s->n++;
    return OAR_OK;
}

/* by source, then by the last step's score, best first; ties keep their order */
static int cmp_sent(const void *pa, const void *pb)
{
    const bsd_sent_t *a = pa, *b = pb;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    double x = a->sc[0], y = b->sc[0];
    if (x != y) return x > y ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* checks step s's items and moves them to the host */
static int bsd_step(oar_kernel_ctx_t *k, const oar_tensor_array_t *ia, const oar_tensor_array_t *sa, int s,
                    int64_t nsrc, int sdt, oar_tensor_t **it, oar_tensor_t **st)
{
    oar_tensor_t *i = s < ia->n ? ia->items[s] : NULL, *c = s < sa->n ? sa->items[s] : NULL;
    if (!i || i->dtype < 0 || !c || c->dtype < 0)
        return oar_k_error(k, OAR_ERR_INVALID, "step %d of Ids '%s' or Scores '%s' was never written", s,
                           oar_cf_in_name(k, "Ids"), oar_cf_in_name(k, "Scores"));
    if (i->dtype != OAR_INT64)
        return oar_k_error(k, OAR_ERR_DTYPE, "step %d of Ids '%s' must be int64", s, oar_cf_in_name(k, "Ids"));
    if (c->dtype != sdt || (sdt != OAR_FP32 && sdt != OAR_FP64))
        return oar_k_error(k, OAR_ERR_DTYPE, "step %d of Scores '%s' must be float32 or float64, as every step",
                           s, oar_cf_in_name(k, "Scores"));
    if (i->lod_levels != 2)
        return oar_k_error(k, OAR_ERR_SHAPE, "step %d of Ids '%s' must have a LoD of level 2 (sources -> prefixes "
                           "-> candidates); it has %d levels", s, oar_cf_in_name(k, "Ids"), i->lod_levels);
    int64_t rows = i->ndim > 0 ? i->dims[0] : 0;
    if (i->lod_size[0] != nsrc + 1 || i->lod[0][nsrc] != i->lod_size[1] - 1 || i->lod[1][i->lod_size[1] - 1] != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "step %d of Ids '%s': its LoD must list %lld sources, then one entry "
                           "per prefix ending at its %lld rows", s, oar_cf_in_name(k, "Ids"), (long long)nsrc,
                           (long long)rows);
    if (oar_tensor_numel_of(i) != rows || oar_tensor_numel_of(c) != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "step %d: Ids '%s' (%lld elements) and Scores '%s' (%lld) must hold "
                           "one value per row", s, oar_cf_in_name(k, "Ids"), (long long)oar_tensor_numel_of(i),
                           oar_cf_in_name(k, "Scores"), (long long)oar_tensor_numel_of(c));
    OAR_TRY(oar_cf_host(i));
    OAR_TRY(oar_cf_host(c));
    *it = i;
    *st = c;
    return OAR_OK;
}

static int bsd_run(oar_kernel_ctx_t *k)
{
    const oar_bsd_attrs_t *a = oar_k_attrs(k);
    oar_tensor_array_t *ia = NULL, *sa = NULL;
    OAR_TRY(oar_cf_array_in(k, "Ids", &ia));
    OAR_TRY(oar_cf_array_in(k, "Scores", &sa));
    if (ia->n < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "input Ids '%s' is empty: no step was decoded", oar_cf_in_name(k, "Ids"));
    if (ia->n != sa->n)
        return oar_k_error(k, OAR_ERR_SHAPE, "inputs Ids '%s' (%d steps) and Scores '%s' (%d) must have as many "
                           "steps", oar_cf_in_name(k, "Ids"), ia->n, oar_cf_in_name(k, "Scores"), sa->n);
    const oar_tensor_t *i0 = ia->items[0], *s0 = sa->items[0];
    if (!i0 || i0->lod_levels != 2 || i0->lod_size[0] < 2)
        return oar_k_error(k, OAR_ERR_SHAPE, "step 0 of Ids '%s' must have a LoD of level 2 with a source or more",
                           oar_cf_in_name(k, "Ids"));
    const int64_t nsrc = i0->lod_size[0] - 1, beam = a->beam_size;
    const int sdt = s0 ? s0->dtype : -1;
    /* beam_size hypotheses per source at most; prefix[] holds, per
     * hypothesis, the row of the current step it continues from */
    bsd_sent_t *sent = oar_xcalloc((size_t)(nsrc * beam), sizeof *sent);
    int64_t *prefix = oar_xmalloc((size_t)(nsrc * beam) * sizeof *prefix);
    int64_t *nhyp = oar_xcalloc((size_t)nsrc, sizeof *nhyp);
    int rc = sent && prefix && nhyp ? OAR_OK : OAR_ERR_NOMEM;
    for (int s = ia->n - 1; s >= 0 && rc == OAR_OK; s--) {
        oar_tensor_t *it = NULL, *st = NULL;
        if ((rc = bsd_step(k, ia, sa, s, nsrc, sdt, &it, &st)) != OAR_OK) break;
        const int64_t *id = it->buf ? it->buf->data : NULL, *l0 = it->lod[0], *l1 = it->lod[1];
        for (int64_t src = 0; src < nsrc && rc == OAR_OK; src++) {
            bsd_sent_t *sv = sent + src * beam;
            int64_t *pv = prefix + src * beam;
            if (l0[src] > l0[src + 1]) { rc = OAR_ERR_SHAPE; break; }
            if (nhyp[src] == 0) {   /* finished (pruned) at this step or the last step: start here */
                for (int64_t p = l0[src]; p < l0[src + 1] && rc == OAR_OK; p++) {
                    for (int64_t c = l1[p]; c < l1[p + 1] && rc == OAR_OK; c++) {
                        if (nhyp[src] == beam) {
                            rc = oar_k_error(k, OAR_ERR_SHAPE, "step %d of Ids '%s': source %lld has more than "
                                             "beam_size %lld candidates", s, oar_cf_in_name(k, "Ids"),
                                             (long long)src, (long long)beam);
                            break;
                        }
                        int64_t h = nhyp[src]++;
                        pv[h] = p;
                        sv[h].src = src;
                        sv[h].order = h;
                        rc = sent_push(&sv[h], id[c], elem(st, c));
                    }
                }
                continue;
            }
            /* follow each hypothesis back: its row here, then the prefix that row extends */
            int64_t p = l0[src], start = l1[p], seen = l1[p + 1] - l1[p];
            for (int64_t h = 0; h < nhyp[src] && rc == OAR_OK; h++) {
                int64_t c = pv[h];
                if (c < start || c >= l1[l0[src + 1]]) {
                    rc = oar_k_error(k, OAR_ERR_SHAPE, "step %d of Ids '%s': source %lld has no row %lld (the next "
                                     "step's LoD names it)", s, oar_cf_in_name(k, "Ids"), (long long)src, (long long)c);
                    break;
                }
                if (id[c] != a->end_id || sv[h].n == 0) rc = sent_push(&sv[h], id[c], elem(st, c));   /* one end_id */
                while (start + seen <= c) {   /* rows come in order: walk to the prefix holding c */
                    p++;
                    seen += l1[p + 1] - l1[p];
                }
                pv[h] = p;
            }
        }
    }
    if (rc == OAR_OK) {
        /* gather the hypotheses (empty slots have no words), sort each source's */
        int64_t nsent = 0, words = 0;
        for (int64_t i = 0; i < nsrc * beam; i++) {
            if (sent[i].n == 0) continue;
            if (nsent != i) { sent[nsent] = sent[i]; sent[i] = (bsd_sent_t){ 0 }; }
            words += sent[nsent++].n;
        }
        qsort(sent, (size_t)nsent, sizeof *sent, cmp_sent);
        int64_t *l0 = oar_xmalloc((size_t)(nsrc + 1) * sizeof *l0), *l1 = oar_xmalloc((size_t)(nsent + 1) * sizeof *l1);
        int64_t *ids = oar_xmalloc((size_t)(words ? words : 1) * sizeof *ids);
        double *sc = oar_xmalloc((size_t)(words ? words : 1) * sizeof *sc);
        if (!l0 || !l1 || !ids || !sc) rc = OAR_ERR_NOMEM;
        if (rc == OAR_OK) {
            int64_t w = 0, h = 0;
            l1[0] = 0;
            for (int64_t src = 0; src < nsrc; src++) {
                l0[src] = h;
                for (; h < nsent && sent[h].src == src; h++) {
                    for (int64_t j = sent[h].n - 1; j >= 0; j--, w++) { ids[w] = sent[h].ids[j]; sc[w] = sent[h].sc[j]; }
                    l1[h + 1] = w;
                }
            }
            l0[nsrc] = h;
            if (sdt == OAR_FP32) {
                float *f = (float *)sc;
                for (int64_t i = 0; i < words; i++) f[i] = (float)sc[i];
            }
            size_t esz = sdt == OAR_FP32 ? sizeof(float) : sizeof(double);
            rc = set_out(k, "SentenceIds", &words, 1, OAR_INT64, ids, (size_t)words * sizeof *ids, l0, nsrc + 1, l1,
                         nsent + 1);
            if (rc == OAR_OK)
                rc = set_out(k, "SentenceScores", &words, 1, sdt, sc, (size_t)words * esz, l0, nsrc + 1, l1, nsent + 1);
        }
        free(l0); free(l1); free(ids); free(sc);
    }
    if (sent)
        for (int64_t i = 0; i < nsrc * beam; i++) { free(sent[i].ids); free(sent[i].sc); }
    free(sent); free(prefix); free(nhyp);
    return rc;
}

#define OAR_OPS_DEFINE
#include "ops/beam_search.h"
