/* kernel_ctx.c — what a kernel sees of the op it runs: its inputs and
 * outputs (resolved to variables once per block run), attrs, scope. Slot
 * lookup is a scan of the op's few slots; no hashing happens here. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "exec.h"
#include "scope.h"

/* Name lookup for code off the per-op path. Declared slots carry the
 * definition's string, which the linker merges with identical literals in
 * kernels, so the pointer test usually settles it. */
const oar_pslot_t *oar_pslot_find(const oar_pslot_t *slots, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (slots[i].name == name) return &slots[i];
    for (int i = 0; i < n; i++)
        if (strcmp(slots[i].name, name) == 0) return &slots[i];
    return NULL;
}

oar_variable_t *oar_k_var(oar_kernel_ctx_t *k, const oar_pslot_t *s, int i) {
    if (!s || i < 0 || i >= s->n || s->ids[i] < 0) return NULL;
    return k->vars[s->ids[i]];
}

const oar_op_desc_t *oar_k_op(const oar_kernel_ctx_t *k) { return k->op->desc; }

int oar_k_in_count(const oar_kernel_ctx_t *k, const char *slot) {
    const oar_pslot_t *s = oar_pslot_find(k->op->ins, k->op->nins, slot);
    return s ? s->n : 0;
}

int oar_k_out_count(const oar_kernel_ctx_t *k, const char *slot) {
    const oar_pslot_t *s = oar_pslot_find(k->op->outs, k->op->nouts, slot);
    return s ? s->n : 0;
}

static const char *arg_name(const oar_kernel_ctx_t *k, const char *slot, int i, bool input) {
    const oar_op_slot_t *s = input ? oar_op_find_input(k->op->desc, slot) : oar_op_find_output(k->op->desc, slot);
    return (s && i >= 0 && i < s->nargs) ? s->args[i] : NULL;
}

const char *oar_k_in_name(const oar_kernel_ctx_t *k, const char *slot, int i) { return arg_name(k, slot, i, true); }
const char *oar_k_out_name(const oar_kernel_ctx_t *k, const char *slot, int i) { return arg_name(k, slot, i, false); }

oar_variable_t *oar_k_in_var(oar_kernel_ctx_t *k, const char *slot, int i) {
    return oar_k_var(k, oar_pslot_find(k->op->ins, k->op->nins, slot), i);
}

oar_variable_t *oar_k_out_var(oar_kernel_ctx_t *k, const char *slot, int i) {
    return oar_k_var(k, oar_pslot_find(k->op->outs, k->op->nouts, slot), i);
}

static oar_tensor_t *var_tensor(oar_variable_t *v) {
    if (!v) return NULL;
    if (v->type == OAR_VAR_SELECTED_ROWS) return v->u.rows->value;
    if (v->type != 0 && v->type != OAR_VAR_LOD_TENSOR) return NULL;
    return oar_var_tensor(v);
}

oar_tensor_t *oar_k_in(oar_kernel_ctx_t *k, const char *slot, int i) {
    oar_variable_t *v = oar_k_in_var(k, slot, i);
    if (!v || v->type == 0) return NULL; /* absent or never written */
    return var_tensor(v);
}

oar_tensor_t *oar_k_out(oar_kernel_ctx_t *k, const char *slot, int i) {
    return var_tensor(oar_k_out_var(k, slot, i));
}

/* writable data of an output; the memory plan's in-place pair writes into
 * the dying input's buffer, which it deliberately shares */
static void *out_data(oar_kernel_ctx_t *k, oar_tensor_t *t, int dtype) {
    if (k->inplace_buf && t->buf == k->inplace_buf) {
        size_t bytes;
        if (oar_tensor_bytes_for(t, dtype, &bytes) == OAR_OK && bytes <= t->buf->bytes) {
            t->dtype = dtype;
            oar_tensor_touch(t);   /* written: what kernels derived from the data goes */
            return t->buf->data;
        }
    }
    if (k->op && (k->op->def->flags & OAR_OP_WRITES_OUTPUTS)) return oar_tensor_mutable_raw_on(t, dtype, k->place, k->device);
    return oar_tensor_mutable_on(t, dtype, k->place, k->device);
}

void *oar_k_out_data(oar_kernel_ctx_t *k, const char *slot, int i, int dtype) {
    oar_tensor_t *t = oar_k_out(k, slot, i);
    if (!t) {
        oar_error(OAR_ERR_NOT_FOUND, "%s: output slot '%s' has no tensor variable %d", k->op->desc->type, slot, i);
        return NULL;
    }
    return out_data(k, t, dtype);
}

/* ---- by slot index (the definition's order) ------------------------------ */
static const oar_pslot_t *in_slot(const oar_kernel_ctx_t *k, int slot) {
    return slot >= 0 && slot < k->op->nins ? &k->op->ins[slot] : NULL;
}

static const oar_pslot_t *out_slot(const oar_kernel_ctx_t *k, int slot) {
    return slot >= 0 && slot < k->op->nouts ? &k->op->outs[slot] : NULL;
}

int oar_k_nin(const oar_kernel_ctx_t *k, int slot) {
    const oar_pslot_t *s = in_slot(k, slot);
    return s ? s->n : 0;
}

int oar_k_nout(const oar_kernel_ctx_t *k, int slot) {
    const oar_pslot_t *s = out_slot(k, slot);
    return s ? s->n : 0;
}

oar_variable_t *oar_k_input_var(oar_kernel_ctx_t *k, int slot, int i) { return oar_k_var(k, in_slot(k, slot), i); }
oar_variable_t *oar_k_output_var(oar_kernel_ctx_t *k, int slot, int i) { return oar_k_var(k, out_slot(k, slot), i); }

oar_tensor_t *oar_k_input(oar_kernel_ctx_t *k, int slot, int i) {
    oar_variable_t *v = oar_k_input_var(k, slot, i);
    if (!v || v->type == 0) return NULL;
    return var_tensor(v);
}

oar_tensor_t *oar_k_output(oar_kernel_ctx_t *k, int slot, int i) { return var_tensor(oar_k_output_var(k, slot, i)); }

void *oar_k_output_data(oar_kernel_ctx_t *k, int slot, int i, int dtype) {
    oar_tensor_t *t = oar_k_output(k, slot, i);
    if (!t) {
        const oar_pslot_t *s = out_slot(k, slot);
        oar_error(OAR_ERR_NOT_FOUND, "%s: output slot '%s' has no tensor variable %d", k->op->desc->type,
                  s ? s->name : "?", i);
        return NULL;
    }
    return out_data(k, t, dtype);
}

int oar_k_input_sized(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel, const void **p) {
    *p = NULL;
    const oar_tensor_t *t = oar_k_input(k, slot, 0);
    const char *vn = oar_k_input_name(k, slot, 0);
    if (!vn) vn = "?";
    if (!t) return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no value", name, vn);
    if (dtype >= 0 && t->dtype != dtype)
        return oar_k_error(k, OAR_ERR_DTYPE, "input %s '%s' has dtype %s, expected %s", name, vn,
                           oar_dtype_name(t->dtype), oar_dtype_name(dtype));
    if (numel >= 0 && oar_tensor_numel_of(t) != numel)
        return oar_k_error(k, OAR_ERR_SHAPE, "input %s '%s' has %lld elements, expected %lld", name, vn,
                           (long long)oar_tensor_numel_of(t), (long long)numel);
    *p = oar_tensor_data((oar_tensor_t *)t);
    if (!*p && oar_tensor_numel_of(t) > 0)
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "input %s '%s' has no data", name, vn);
    return OAR_OK;
}

int oar_k_output_sized(oar_kernel_ctx_t *k, int slot, const char *name, int dtype, int64_t numel, bool optional,
                       void **p) {
    *p = NULL;
    oar_tensor_t *t = oar_k_output(k, slot, 0);
    if (!t) {
        if (optional) return OAR_OK;
        return oar_k_error(k, OAR_ERR_NOT_FOUND, "output %s has no tensor variable", name);
    }
    if (oar_tensor_numel_of(t) != numel) {
        char b[160];
        const char *vn = oar_k_output_name(k, slot, 0);
        return oar_k_error(k, OAR_ERR_SHAPE, "output %s '%s' has shape %s, expected %lld elements", name,
                           vn ? vn : "?", oar_shape_str(t->dims, t->ndim, b, sizeof b), (long long)numel);
    }
    *p = out_data(k, t, dtype);
    if (!*p) return oar_k_error(k, OAR_ERR_NOMEM, "cannot allocate output %s: %s", name, oar_last_error());
    return OAR_OK;
}

void *oar_k_output_resized(oar_kernel_ctx_t *k, int slot, const int64_t *dims, int ndim, int dtype) {
    oar_variable_t *v = oar_k_output_var(k, slot, 0);
    const oar_pslot_t *s = out_slot(k, slot);
    oar_tensor_t *t = NULL;
    if (v && oar_variable_type(v) == OAR_VAR_SELECTED_ROWS) {
        oar_selected_rows_t *sr = oar_var_selected_rows(v);
        if (sr && !sr->value && oar_tensor_new_empty(&sr->value) != OAR_OK) return NULL;
        t = sr ? sr->value : NULL;
    } else {
        t = oar_k_output(k, slot, 0);
    }
    if (!t) {
        oar_error(OAR_ERR_NOT_FOUND, "%s: output slot '%s' has no tensor variable", k->op->desc->type,
                  s ? s->name : "?");
        return NULL;
    }
    if (oar_tensor_resize(t, dims, ndim) != OAR_OK) {
        oar_error_prefix("%s: output '%s': ", k->op->desc->type, s ? s->name : "?");
        return NULL;
    }
    return out_data(k, t, dtype);
}

static const char *slot_arg_name(const oar_kernel_ctx_t *k, const oar_pslot_t *s, int i) {
    if (!s || i < 0 || i >= s->n) return NULL;
    return s->ids[i] >= 0 ? k->prep->names[s->ids[i]] : OAR_EMPTY_VAR;
}

const char *oar_k_input_name(const oar_kernel_ctx_t *k, int slot, int i) { return slot_arg_name(k, in_slot(k, slot), i); }
const char *oar_k_output_name(const oar_kernel_ctx_t *k, int slot, int i) { return slot_arg_name(k, out_slot(k, slot), i); }

/* These and the accessors above are all a device backend sees of the
 * context: the structs stay the executor's (exec.h) to change. */
const char *oar_k_input_slot_name(const oar_kernel_ctx_t *k, int slot) {
    const oar_pslot_t *s = k->op ? in_slot(k, slot) : NULL;
    return s ? s->name : NULL;
}

const char *oar_k_output_slot_name(const oar_kernel_ctx_t *k, int slot) {
    const oar_pslot_t *s = k->op ? out_slot(k, slot) : NULL;
    return s ? s->name : NULL;
}

int oar_k_device(const oar_kernel_ctx_t *k) { return k->device; }
const char *oar_k_context(const oar_kernel_ctx_t *k) { return k->op ? k->op->context : NULL; }
/* An op whose definition decodes nothing has no struct; a kernel that reads
 * one anyway (a definition that forgot its decode step, as lookup_table_v2
 * once did) gets zeros rather than a NULL dereference. */
const void *oar_k_attrs(const oar_kernel_ctx_t *k) {
    static const double zeros[64];
    return k->op->attrs ? k->op->attrs : (const void *)zeros;
}

void *oar_k_state(const oar_kernel_ctx_t *k) { return k->op->kstate; }

void oar_k_set_state(oar_kernel_ctx_t *k, void *state, void (*free_fn)(void *)) {
    /* the prepared op is the executor's, const to kernels but for this */
    oar_prep_op_t *op = (oar_prep_op_t *)k->op;
    if (op->kstate && op->kstate_free && op->kstate != state) op->kstate_free(op->kstate);
    op->kstate = state;
    op->kstate_free = free_fn;
}

bool oar_k_grad_follows(const oar_kernel_ctx_t *k) {
    oar_prep_op_t *op = (oar_prep_op_t *)k->op;   /* a cache in the executor's prepared op */
    if (op->grad_follows < 0) op->grad_follows = oar_prep_grad_follows(k->prep, (int)(op - k->prep->ops));
    return op->grad_follows > 0;
}

oar_scope_t *oar_k_scope(oar_kernel_ctx_t *k) { return k->scope; }
oar_program_t *oar_k_program(oar_kernel_ctx_t *k) { return k->prep->program; }
int oar_k_dtype(const oar_kernel_ctx_t *k) { return k->dtype; }

int oar_k_run_block(oar_kernel_ctx_t *k, int block_idx, oar_scope_t *scope) {
    return oar_executor_run_block(k->exe, k->prep->program, block_idx, scope);
}

int oar_k_error(oar_kernel_ctx_t *k, int status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return oar_error(status, "%s: %s", k->op->desc->type, msg);
}
