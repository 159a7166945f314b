/* control_flow.h — tensor plumbing shared by the control-flow and LoD/array
 * ops (src/ops/control_flow.c, recurrent.c, array_ops.c): zeros, sums,
 * row copies, and a LoD "unit" view (the sequences of one LoD level, or the
 * rows when the tensor has no LoD that deep) with a gatherer that builds
 * tensors out of units of other tensors. */
#ifndef OAR_KERNELS_CPU_CONTROL_FLOW_H
#define OAR_KERNELS_CPU_CONTROL_FLOW_H
#include "op.h"

/* bytes of one row (dims[1:] elements) of t */
size_t oar_cf_row_bytes(const oar_tensor_t *t);

/* dst := zeros with the dims and dtype of `like` (no LoD). dtype -1 keeps like's. */
int oar_cf_zeros_like(oar_tensor_t *dst, const oar_tensor_t *like);
/* a new tensor of zeros shaped like `like` */
int oar_cf_new_zeros_like(const oar_tensor_t *like, oar_tensor_t **out);
/* acc += x elementwise; acc must own its buffer alone (a copy made by the
 * caller). Shapes (element counts) and dtypes must agree: `what` names the
 * value in errors. Float32/float64/int32/int64. */
int oar_cf_add_into(oar_tensor_t *acc, const oar_tensor_t *x, const char *what);
/* copies n rows: dst rows [d0, d0+n) := src rows [s0, s0+n); same dtype and row size */
int oar_cf_copy_rows(oar_tensor_t *dst, int64_t d0, const oar_tensor_t *src, int64_t s0, int64_t n);

/* ---- LoD units ---------------------------------------------------------- */
/* Units of t at `level`: the sequences of LoD level `level` when t has more
 * than `level` levels, else its rows. */
int64_t oar_cf_units(const oar_tensor_t *t, int level);
/* rows [r0, r1) of unit u */
void oar_cf_unit_rows(const oar_tensor_t *t, int level, int64_t u, int64_t *r0, int64_t *r1);
/* LoD levels below the unit level that a gathered tensor carries */
int oar_cf_unit_levels(const oar_tensor_t *t, int level);

/* Builds a tensor out of units taken from source tensors, in order: the rows
 * are concatenated and the LoD rebuilt (one level for the units themselves
 * when they are sequences, then the levels below). */
typedef struct oar_cf_gather {
    int levels;                          /* LoD levels of the result */
    int64_t *lod[OAR_MAX_LOD]; int64_t n[OAR_MAX_LOD], cap[OAR_MAX_LOD];
    int64_t rows;
    struct oar_cf_piece { const oar_tensor_t *src; int64_t r0, r1; } *pieces;
    int64_t npieces, cappieces;
} oar_cf_gather_t;

/* levels: LoD levels the result has (all sources must agree) */
int oar_cf_gather_init(oar_cf_gather_t *g, int levels);
/* appends unit u of src at `level` (whose unit levels must equal g->levels) */
int oar_cf_gather_add(oar_cf_gather_t *g, const oar_tensor_t *src, int level, int64_t u);
/* writes the result into dst: dims [rows, like's row dims], dtype of like,
 * LoD with `extra_top` levels prepended (may be NULL/0) */
int oar_cf_gather_finish(oar_cf_gather_t *g, oar_tensor_t *dst, const oar_tensor_t *like,
                         int extra_top, const int64_t *const *top, const int64_t *top_n);
void oar_cf_gather_free(oar_cf_gather_t *g);
#endif
