/* seq_lod.h — the place-neutral LoD work of the sequence ops' kernels
 * (kernels/cpu/sequence*.c, kernels/cuda/sequence*.cu): the checked last
 * LoD level of an input, the levels a pooled output keeps, and
 * sequence_expand's plan and output LoD. LoDs live on the host on every
 * place; kernels copy what their device code needs. */
#ifndef OAR_OPS_SEQ_LOD_H
#define OAR_OPS_SEQ_LOD_H
#include "op.h"


/* The last LoD level of input `slot` (`name` in errors) of tensor t: its
 * offsets and their count; an error unless it ends at t's row count. */
int oar_seq_lod_last(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t *t, const int64_t **offs,
                     int64_t *noffs);

/* output `slot` (when present) gets the LoD levels of x above the last one
 * (none when x has one level): a pooled output */
int oar_seq_set_upper_lod(oar_kernel_ctx_t *k, int slot, const oar_tensor_t *x);

/* sequence_expand: X's sequence i (its LoD's, or row i when X has none)
 * repeated ref[i + 1] - ref[i] times, ref being Y's LoD at ref_level. With
 * nref <= 1 there is nothing to repeat by and Out is X. */
typedef struct oar_seq_expand {
    const int64_t *ref; int64_t nref;   /* Y's offsets at ref_level */
    const int64_t *xo;                  /* X's offsets (nref of them), NULL: one row per sequence */
    int64_t xrows;                      /* X's rows */
} oar_seq_expand_t;

/* Checks Y (input OAR_SEQEXP_Y) and ref_level (the decoded attrs) against
 * X and fills the plan. */
int oar_seq_expand_plan(oar_kernel_ctx_t *k, const oar_tensor_t *x, oar_seq_expand_t *p);
/* first row and row count of X's sequence i < nref - 1, and its repeats */
static inline int64_t oar_seq_expand_start(const oar_seq_expand_t *p, int64_t i) { return p->xo ? p->xo[i] : i; }
static inline int64_t oar_seq_expand_len(const oar_seq_expand_t *p, int64_t i)
{
    return p->xo ? p->xo[i + 1] - p->xo[i] : 1;
}
static inline int64_t oar_seq_expand_reps(const oar_seq_expand_t *p, int64_t i) { return p->ref[i + 1] - p->ref[i]; }
/* Out's row count: the sum of repeats x lengths (X's rows when nref <= 1) */
int64_t oar_seq_expand_rows(const oar_seq_expand_t *p);
/* Checks that Out (output OAR_SEQEXP_OUT, `orows` rows) has the expansion's
 * row count and sets its LoD: one sequence per copy when X has a LoD, X's
 * LoD when nref <= 1, none otherwise. */
int oar_seq_expand_set_lod(oar_kernel_ctx_t *k, const oar_tensor_t *x, const oar_seq_expand_t *p, int64_t orows);
#endif
