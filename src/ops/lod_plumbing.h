/* lod_plumbing.h — place-neutral tensor plumbing of the definition layer,
 * shared by the control-flow and LoD/array ops (src/ops/control_flow.c,
 * recurrent.c, array_ops.c, lod_*.c; they run without kernels): zeros, sums,
 * row copies, and a LoD "unit" view (the sequences of one LoD level, or the
 * rows when the tensor has no LoD that deep) with a gatherer that builds
 * tensors out of units of other tensors. */
#ifndef OAR_OPS_LOD_PLUMBING_H
#define OAR_OPS_LOD_PLUMBING_H
#include "op.h"

/* moves t's data to host memory when it is on a device (control-flow ops
 * read values: conditions, indices, masks, rows) */
int oar_cf_host(const oar_tensor_t *t);
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

/* out's LoD := the LoDs of xs[0..n) joined, offsets shifted, as rows of
 * tensors concatenated along axis 0 (concat on every place); cleared when
 * the inputs do not all have the same number of levels */
OAR_API int oar_cf_concat_lod(int n, oar_tensor_t *const *xs, oar_tensor_t *out);

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
/* ---- op plumbing (array_ops.c, lod_rank_ops.c) ---------------------------- */
/* the name of input slot arg 0, "?" when absent */
const char *oar_cf_in_name(oar_kernel_ctx_t *k, const char *slot);
/* a LoD tensor input with a value (zero-size counts); errors name the op and slot */
int oar_cf_tensor_in(oar_kernel_ctx_t *k, const char *slot, oar_tensor_t **out);
/* an optional tensor input: NULL when absent or never written */
oar_tensor_t *oar_cf_tensor_opt(oar_kernel_ctx_t *k, const char *slot);
/* the tensor of output slot arg 0 (NULL with an error) */
oar_tensor_t *oar_cf_tensor_out(oar_kernel_ctx_t *k, const char *slot);
/* Out := int64 [1] holding v (lengths and counts) */
int oar_cf_scalar_int64_out(oar_kernel_ctx_t *k, int64_t v);
/* a step index: one int64/int32 element, not negative */
int oar_cf_index_in(oar_kernel_ctx_t *k, const char *slot, int64_t *out);
/* the array of an input; a never-written variable reads as the empty array */
int oar_cf_array_in(oar_kernel_ctx_t *k, const char *slot, oar_tensor_array_t **out);
int oar_cf_array_out(oar_kernel_ctx_t *k, const char *slot, oar_tensor_array_t **out);
int oar_cf_table_in(oar_kernel_ctx_t *k, const char *slot, const oar_rank_table_t **out);
/* item i of a := a new reference sharing t (the array grows to i + 1) */
int oar_cf_array_set(oar_tensor_array_t *a, int64_t i, const oar_tensor_t *t);
/* item i of a gradient array += g (the first contribution is shared) */
int oar_cf_array_accumulate(oar_tensor_array_t *a, int64_t i, const oar_tensor_t *g, const char *what);
/* compile time: out gets in's shape (batch dim -1 when batch_unknown) and dtype, when known */
int oar_cf_infer_like(oar_infer_ctx_t *c, const char *in, const char *out, bool batch_unknown);
int oar_cf_set_lod_level(oar_infer_ctx_t *c, const char *out, int level);
/* Out: int64 [1] */
int oar_cf_scalar_int64_infer(oar_infer_ctx_t *c);
/* output slot "S@GRAD" for fwd slot S, also read in place as input slot "S@GRAD" */
int oar_cf_inplace_array_grad(oar_grad_ctx_t *g, oar_op_desc_t *op, const char *fwd_slot);
/* X@GRAD like X */
int oar_cf_x_grad_infer(oar_infer_ctx_t *c);
/* X@GRAD is a tensor array (the gradient of an array input) */
int oar_cf_array_grad_infer(oar_infer_ctx_t *c);
/* The grad maker of an op whose one differentiable input is X: unless X is in
 * the no_grad set, grad op `type` reads the forward inputs `ins`
 * (NULL-terminated) and Out@GRAD and writes X@GRAD, which it also reads in
 * place when X is a tensor array (`x_is_array`). */
int oar_cf_x_grad_maker(oar_grad_ctx_t *g, const char *type, const char *const *ins, bool x_is_array);
#endif
