/* seq_args.h — argument helpers of the sequence kernels (sequence.c,
 * sequence_conv.c): inputs and outputs by the definitions' slot indices
 * (src/ops/sequence.h); names are for messages only. */
#ifndef OAR_KERNELS_CPU_SEQ_ARGS_H
#define OAR_KERNELS_CPU_SEQ_ARGS_H
#include "op.h"

static inline const char *oar_seq_nm(const char *s) { return s ? s : "?"; }

/* input `slot` holding data of dtype (any when -1); with `optional`, *t is
 * NULL (OK) when the slot is not given */
static inline int oar_seq_in(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, bool optional,
                             const oar_tensor_t **t, const void **p)
{
    *t = oar_k_input(k, slot, 0);
    *p = NULL;
    if (!*t) {
        if (optional && !oar_k_input_var(k, slot, 0)) return OAR_OK;
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name,
                           oar_seq_nm(oar_k_input_name(k, slot, 0)));
    }
    if (dtype >= 0 && (*t)->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name,
                           oar_seq_nm(oar_k_input_name(k, slot, 0)), oar_seq_nm(oar_dtype_name((*t)->dtype)),
                           oar_seq_nm(oar_dtype_name(dtype)));
    *p = oar_tensor_data((oar_tensor_t *)*t);
    if (!*p && oar_tensor_numel_of(*t) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' holds no data", name,
                           oar_seq_nm(oar_k_input_name(k, slot, 0)));
    return OAR_OK;
}

/* writable data of output `slot` holding numel elements; *p NULL (OK) when
 * the output is absent or @EMPTY@ and `optional` */
static inline int oar_seq_out(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel,
                              bool optional, void **p)
{
    *p = NULL;
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) {
        if (optional) return OAR_OK;
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", name);
    }
    if (oar_tensor_numel_of(t) != numel) {
        char b[160];
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has shape %s, expected %lld elements", name,
                           oar_seq_nm(oar_k_output_name(k, slot, 0)), oar_shape_str(t->dims, t->ndim, b, sizeof b),
                           (long long)numel);
    }
    *p = oar_k_output_data(k, slot, 0, dtype);
    if (!*p) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate output %s", name);
    return OAR_OK;
}

/* the LoD level the sequence ops work on (the last one) of input `slot`'s
 * tensor t: an error when t has no LoD or its last offset is not its row count */
static inline int oar_seq_lod(oar_kernel_ctx_t *k, int slot, const char *name, const oar_tensor_t *t,
                              const int64_t **offs, int64_t *noffs)
{
    *offs = NULL;
    *noffs = 0;
    if (t->lod_levels < 1)
        return oar_k_error(k, OAR_ERR_INVALID, "input %s '%s' has no LoD; a LoD tensor (level >= 1) is required",
                           name, oar_seq_nm(oar_k_input_name(k, slot, 0)));
    int l = t->lod_levels - 1;
    *offs = t->lod[l];
    *noffs = t->lod_size[l];
    int64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (*noffs < 1 || (*offs)[*noffs - 1] != rows)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s': LoD level %d ends at %lld but the tensor has %lld rows",
                           name, oar_seq_nm(oar_k_input_name(k, slot, 0)), l,
                           (long long)(*noffs > 0 ? (*offs)[*noffs - 1] : 0), (long long)rows);
    return OAR_OK;
}
#endif
