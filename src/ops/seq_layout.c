/*
 * seq_layout.c — the sequence-to-batch layout of lstm/gru from a LoD (see
 * seq_layout.h).
 */
#include <stdlib.h>
#include <string.h>
#include "op.h"
#include "seq_layout.h"

typedef struct { int64_t len, idx; } len_idx_t;

static int by_len_desc(const void *a, const void *b)
{
    const len_idx_t *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

void oar_seqb_free(oar_seqb_t *b)
{
    free(b->order);
    free(b->step_start);
    free(b->row_of);
    memset(b, 0, sizeof *b);
}

int oar_seqb_make(oar_seqb_t *b, const int64_t *offs, int64_t noffs, bool reverse)
{
    memset(b, 0, sizeof *b);
    b->nseq = noffs > 0 ? noffs - 1 : 0;
    b->rows = noffs > 0 ? offs[noffs - 1] - offs[0] : 0;
    int64_t maxlen = 0;
    for (int64_t s = 0; s < b->nseq; s++)
        if (offs[s + 1] - offs[s] > maxlen) maxlen = offs[s + 1] - offs[s];
    b->nsteps = maxlen;
    len_idx_t *li = oar_xmalloc(sizeof *li * (size_t)(b->nseq > 0 ? b->nseq : 1));
    b->order = oar_xmalloc(sizeof *b->order * (size_t)(b->nseq > 0 ? b->nseq : 1));
    b->step_start = oar_xmalloc(sizeof *b->step_start * (size_t)(maxlen + 1));
    b->row_of = oar_xmalloc(sizeof *b->row_of * (size_t)(b->rows > 0 ? b->rows : 1));
    if (!li || !b->order || !b->step_start || !b->row_of) {
        free(li);
        oar_seqb_free(b);
        return OAR_ERR_NOMEM;
    }
    for (int64_t s = 0; s < b->nseq; s++) {
        li[s].len = offs[s + 1] - offs[s];
        li[s].idx = s;
    }
    if (b->nseq > 1) qsort(li, (size_t)b->nseq, sizeof *li, by_len_desc);
    for (int64_t s = 0; s < b->nseq; s++) b->order[s] = li[s].idx;
    /* step t holds the sorted prefix of sequences longer than t */
    int64_t r = 0, alive = b->nseq;
    for (int64_t t = 0; t < maxlen; t++) {
        while (alive > 0 && li[alive - 1].len <= t) alive--;
        b->step_start[t] = r;
        for (int64_t s = 0; s < alive; s++) {
            int64_t q = li[s].idx, len = li[s].len;
            b->row_of[r++] = offs[q] + (reverse ? len - 1 - t : t);
        }
    }
    b->step_start[maxlen] = r;
    free(li);
    return OAR_OK;
}

void oar_seqb_prev_rows(const oar_seqb_t *b, const int64_t *map, int64_t *prev)
{
    for (int64_t t = 0; t < b->nsteps; t++) {
        const int64_t s0 = b->step_start[t], n = oar_seqb_count(b, t);
        for (int64_t s = 0; s < n; s++) {
            if (t == 0) { prev[s0 + s] = -1 - b->order[s]; continue; }
            const int64_t p = b->step_start[t - 1] + s;
            prev[s0 + s] = map ? map[p] : p;
        }
    }
}
