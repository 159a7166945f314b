/* infer_memo.c — run-time inference, replayed. A static program feeds the
 * same shapes step after step, so an op whose inputs keep their var types,
 * dtypes and dims (and carry no LoD) gets the output dims and dtypes its
 * inference produced last time, without running it again. Inference that
 * read an input's values (a shape or K tensor) is never replayed. */
#include <string.h>
#include "exec.h"

/* the signature of input argument `id` now; false when it cannot be memoized */
static bool input_sig(oar_variable_t **vars, int id, oar_memo_in_t *m) {
    memset(m, 0, sizeof *m);
    if (id < 0) { m->type = -2; return true; }
    oar_variable_t *v = vars[id];
    m->type = v->type;
    if (v->type != OAR_VAR_LOD_TENSOR) return v->type == 0;
    const oar_tensor_t *t = v->u.tensor;
    if (t->lod_levels > 0) return false;
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    memcpy(m->dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
    return true;
}

static bool inputs_unchanged(const oar_kernel_ctx_t *k, const oar_prep_op_t *op) {
    int j = 0;
    for (int s = 0; s < op->nins; s++)
        for (int a = 0; a < op->ins[s].n; a++, j++) {
            oar_memo_in_t now;
            if (!input_sig(k->vars, op->ins[s].ids[a], &now)) return false;
            const oar_memo_in_t *was = &op->memo_in[j];
            if (now.type != was->type || now.dtype != was->dtype || now.ndim != was->ndim ||
                memcmp(now.dims, was->dims, sizeof(int64_t) * (size_t)now.ndim) != 0)
                return false;
        }
    return true;
}

static int replay(oar_kernel_ctx_t *k, const oar_prep_op_t *op) {
    int j = 0;
    for (int s = 0; s < op->nouts; s++)
        for (int a = 0; a < op->outs[s].n; a++, j++) {
            const oar_memo_out_t *m = &op->memo_out[j];
            int id = op->outs[s].ids[a];
            if (id < 0 || m->ndim < 0) continue;
            oar_tensor_t *t = oar_var_tensor(k->vars[id]);
            if (!t) return OAR_ERR_DTYPE;
            OAR_TRY(oar_tensor_resize(t, m->dims, m->ndim));
            if (m->dtype >= 0) t->dtype = m->dtype;
        }
    return OAR_OK;
}

/* records inputs and outputs after a real inference; false: not memoizable */
static bool record(const oar_kernel_ctx_t *k, oar_prep_op_t *op, bool *never) {
    int j = 0;
    for (int s = 0; s < op->nins; s++)
        for (int a = 0; a < op->ins[s].n; a++, j++) {
            int id = op->ins[s].ids[a];
            if (!input_sig(k->vars, id, &op->memo_in[j])) {
                /* other payloads (arrays, rows) never; a LoD this time only */
                *never = id >= 0 && k->vars[id]->type != OAR_VAR_LOD_TENSOR;
                return false;
            }
        }
    j = 0;
    for (int s = 0; s < op->nouts; s++)
        for (int a = 0; a < op->outs[s].n; a++, j++) {
            oar_memo_out_t *m = &op->memo_out[j];
            int id = op->outs[s].ids[a];
            m->ndim = -1;
            if (id < 0) continue;
            oar_variable_t *v = k->vars[id];
            if (v->type == 0) continue;            /* inference left it alone */
            if (v->type != OAR_VAR_LOD_TENSOR || v->u.tensor->lod_levels > 0) { *never = true; return false; }
            const oar_tensor_t *t = v->u.tensor;
            m->dtype = t->dtype;
            m->ndim = t->ndim;
            memcpy(m->dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
        }
    return true;
}

int oar_infer_runtime_memo(oar_kernel_ctx_t *k) {
    oar_prep_op_t *op = (oar_prep_op_t *)k->op;   /* the memo is the prepared op's own cache */
    if (op->memo_state == OAR_MEMO_NEVER) return oar_infer_runtime(k);
    if (op->memo_state == OAR_MEMO_VALID && inputs_unchanged(k, op)) return replay(k, op);
    k->infer_read_values = false;
    op->memo_state = OAR_MEMO_EMPTY;
    OAR_TRY(oar_infer_runtime(k));
    if (k->infer_read_values) { op->memo_state = OAR_MEMO_NEVER; return OAR_OK; }
    bool never = false;
    if (record(k, op, &never)) op->memo_state = OAR_MEMO_VALID;
    else if (never) op->memo_state = OAR_MEMO_NEVER;
    return OAR_OK;
}
