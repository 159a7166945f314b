/*
 * args.cu — cuda_common.h's checked access to an op's inputs and outputs
 * (by slot index, on the kernel's device). Host code only, kept apart from
 * device.cu so that tools/cuda_emu compiles and runs these very checks.
 */
#include "cuda_common.h"

namespace oarcu {

/* input tensor t, slot `slot` holding variable `name`, checked for in_tensor */
static int check_in(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *slot, const char *name, int dtype,
                    int64_t numel, const void **p)
{
    if (!t || t->dtype < 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", slot, name);
    if (dtype >= 0 && t->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", slot, name,
                           nm(oar_dtype_name(t->dtype)), nm(oar_dtype_name(dtype)));
    int64_t n = oar_tensor_numel_of(t);
    if (numel >= 0 && n != numel) {
        char b[128];
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has shape %s (%lld elements), expected %lld elements",
                           slot, name, oar_shape_str(t->dims, t->ndim, b, sizeof b), (long long)n,
                           (long long)numel);
    }
    if (n == 0) return OAR_OK;
    if (!oar_tensor_has_data(t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no data", slot, name);
    const oar_buffer_t *b = t->buf;
    if (b->place != OAR_PLACE_CUDA || b->device != oar_k_device(k))
        return oar_k_error(k, OAR_ERR_INVALID, "input %s '%s' is not on CUDA device %d", slot, name, oar_k_device(k));
    *p = b->data;
    return OAR_OK;
}

/* output t of slot `slot` (variable `name`) exists and has numel elements (-1: any) */
static int check_out(oar_kernel_ctx_t *k, const oar_tensor_t *t, const char *slot, const char *name,
                     int64_t numel)
{
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", slot);
    if (numel >= 0 && oar_tensor_numel_of(t) != numel)
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has %lld elements, expected %lld", slot,
                           name, (long long)oar_tensor_numel_of(t), (long long)numel);
    return OAR_OK;
}

int in_checked(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, bool optional, bool need_data,
               const oar_tensor_t **t, const void **p)
{
    *p = nullptr;
    *t = oar_k_input(k, slot, 0);
    const char *vn = nm(oar_k_input_name(k, slot, 0));
    if (!*t) {
        if (optional) return OAR_OK;
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name, vn);
    }
    if (dtype >= 0 && (*t)->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name, vn,
                           nm(oar_dtype_name((*t)->dtype)), nm(oar_dtype_name(dtype)));
    if (!need_data || oar_tensor_numel_of(*t) == 0) return OAR_OK;
    if (!oar_tensor_has_data(*t))
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' holds no data", name, vn);
    if ((*t)->buf->place != OAR_PLACE_CUDA || (*t)->buf->device != oar_k_device(k))
        return oar_k_error(k, OAR_ERR_INVALID, "input %s '%s' is not on CUDA device %d", name, vn, oar_k_device(k));
    *p = (*t)->buf->data;
    return OAR_OK;
}

/* ---- by slot index ---------------------------------------------------------- */
const char *in_slot_name(const oar_kernel_ctx_t *k, int slot)
{
    return nm(oar_k_input_slot_name(k, slot));
}

const char *out_slot_name(const oar_kernel_ctx_t *k, int slot)
{
    return nm(oar_k_output_slot_name(k, slot));
}

int in_tensor_at(oar_kernel_ctx_t *k, int slot, int i, int dtype, int64_t numel,
                 const oar_tensor_t **t, const void **p)
{
    *p = nullptr;
    *t = oar_k_input(k, slot, i);
    return check_in(k, *t, in_slot_name(k, slot), nm(oar_k_input_name(k, slot, i)), dtype, numel, p);
}

int out_data_at(oar_kernel_ctx_t *k, int slot, int i, int dtype, int64_t numel, void **p)
{
    *p = nullptr;
    const char *sn = out_slot_name(k, slot);
    OAR_TRY(check_out(k, oar_k_output(k, slot, i), sn, nm(oar_k_output_name(k, slot, i)), numel));
    *p = oar_k_output_data(k, slot, i, dtype);
    if (!*p) {
        oar_error_prefix("%s: output %s: ", oar_k_op(k)->type, sn);
        return OAR_ERR_NOMEM;
    }
    return OAR_OK;
}

int out_data_opt_at(oar_kernel_ctx_t *k, int slot, int i, int dtype, int64_t numel, void **p)
{
    *p = nullptr;
    if (!oar_k_output(k, slot, i)) return OAR_OK;
    return out_data_at(k, slot, i, dtype, numel, p);
}

}  // namespace oarcu
