/*
 * seq_layout.h — the sequence-to-batch layout of the recurrent ops (lstm,
 * gru), computed from a LoD on the host: index bookkeeping only, so the
 * kernels of every place build it the same way (kernels/cpu/lstm.c, gru.c
 * through sequence_batch.h; kernels/cuda/rnn_common.cu, for lstm.cu and
 * gru.cu, copies its index arrays to the device).
 *
 * A recurrent op over a LoD batch of sequences runs time step by time step;
 * to make each step one GEMM the rows of all sequences at step t are
 * gathered next to each other. The sequences are sorted by length, longest
 * first (stable, so equal lengths keep their order); step t holds the
 * sequences longer than t, in that sorted order, so the rows of step t+1 are
 * a prefix of those of step t and the recurrence from one step to the next
 * is a prefix-to-prefix product. With `reverse`, step t of a sequence is its
 * t-th row counted from its end.
 *
 *     LoD {0, 2, 5, 6}  (lengths 2, 3, 1)  ->  order {1, 0, 2}
 *     step 0: rows 2, 0, 5    step 1: rows 3, 1    step 2: row 4
 *     step_start {0, 3, 5, 6}, row_of {2, 0, 5, 3, 1, 4}
 *
 * Empty sequences take part in no step (they sort last).
 */
#ifndef OAR_OPS_SEQ_LAYOUT_H
#define OAR_OPS_SEQ_LAYOUT_H
#include <stdbool.h>
#include <stdint.h>
#include "oar.h"   /* OAR_API */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oar_seqb {
    int64_t nseq;          /* sequences */
    int64_t rows;          /* rows of the LoD tensor (= sum of lengths) */
    int64_t nsteps;        /* the longest length */
    int64_t *order;        /* [nseq] sorted position -> sequence index */
    int64_t *step_start;   /* [nsteps + 1] first batch row of each step */
    int64_t *row_of;       /* [rows] batch row -> LoD tensor row */
} oar_seqb_t;

/* Builds the layout of the sequences given by offs[0..noffs); OAR_ERR_NOMEM
 * on allocation failure (the layout is then empty and freeable). */
OAR_API int oar_seqb_make(oar_seqb_t *b, const int64_t *offs, int64_t noffs, bool reverse);
OAR_API void oar_seqb_free(oar_seqb_t *b);
/* rows of step t: [step_start[t], step_start[t + 1]) */
static inline int64_t oar_seqb_count(const oar_seqb_t *b, int64_t t)
{
    return b->step_start[t + 1] - b->step_start[t];
}

/* The previous step's row of every batch row r (the row whose hidden state
 * step r reads): for r in step t > 0, prev[r] = map[step_start[t - 1] +
 * (r - step_start[t])] with map = row_of (the previous row in the LoD
 * tensor's order) or map NULL (its batch row); for r in step 0, the
 * sequence's initial state, coded -1 - (its H0 row, order[r]). prev holds
 * rows values. */
OAR_API void oar_seqb_prev_rows(const oar_seqb_t *b, const int64_t *map, int64_t *prev);

#ifdef __cplusplus
}
#endif
#endif
