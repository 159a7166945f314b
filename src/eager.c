/* eager.c — eager mode: one registered op run at once on tensors.
 *
 * An eager op is the op inserted alone into a one-block program and
 * prepared as the executor prepares blocks (prepare.c): definition, checked
 * slots, decoded attrs, kernels per dtype, the run-time inference memo. A
 * run binds the caller's tensors to the prepared var table and runs the op
 * through the executor's own per-op path (oar_executor_run_prepared_op), so
 * an eager call and a program run the same checks, inference and kernels.
 * The Lua side keeps one eager op per (op type, attrs, arity) and reuses it,
 * so a call costs the binding, the memo replay and the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backward_pass.h"
#include "desc_check.h"
#include "exec.h"
#include "scope.h"
#include "variable.h"

struct oar_eager_op {
    oar_program_t *prog;          /* owns the checked desc */
    const oar_op_desc_t *desc;
    oar_prepared_t *prep;
    oar_scope_t *scope;           /* holds the bound variables */
    oar_variable_t **vars;        /* per var table entry */
    int *in_ids, nin;             /* var table id per positional argument, -1 @EMPTY@ */
    int *out_ids, nout;
    oar_executor_t *exe;
};

/* one executor per place and device, shared by every eager op (they hold no
 * per-run state between calls) */
static oar_executor_t *g_cpu_exe;

static int executor_for(int place, int device, oar_executor_t **out) {
    if (place == OAR_PLACE_CPU) {
        if (!g_cpu_exe) OAR_TRY(oar_executor_new(OAR_PLACE_CPU, 0, &g_cpu_exe));
        *out = g_cpu_exe;
        return OAR_OK;
    }
    return oar_executor_new(place, device, out);   /* owned by the eager op */
}

void oar_eager_op_free(oar_eager_op_t *e) {
    if (!e) return;
    oar_prepared_free(e->prep);
    if (e->scope) oar_scope_free(e->scope);
    oar_program_free(e->prog);
    if (e->exe && e->exe != g_cpu_exe) oar_executor_free(e->exe);
    free(e->vars); free(e->in_ids); free(e->out_ids);
    free(e);
}

static int count_slot_args(const oar_op_slot_t *s, int n) {
    int c = 0;
    for (int i = 0; i < n; i++) c += s[i].nargs;
    return c;
}

static int positions(oar_eager_op_t *e, const oar_op_slot_t *s, int n, int **ids, int *count) {
    *count = count_slot_args(s, n);
    *ids = oar_xcalloc((size_t)(*count ? *count : 1), sizeof **ids);
    if (!*ids) return OAR_ERR_NOMEM;
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < s[i].nargs; a++)
            (*ids)[k++] = strcmp(s[i].args[a], OAR_EMPTY_VAR) == 0 ? -1 : oar_prepared_find(e->prep, s[i].args[a]);
    return OAR_OK;
}

int oar_eager_op_new(const oar_op_desc_t *op, int place, int device, oar_eager_op_t **out) {
    if (!op || !out) return oar_error(OAR_ERR_INVALID, "oar_eager_op_new: NULL %s", op ? "out" : "op");
    *out = NULL;
    const oar_op_def_t *def = oar_registry_op(op->type);
    if (!def) return oar_error(OAR_ERR_NOT_FOUND, "unknown op type '%s'", op->type);
    if (def->flags & OAR_OP_NO_KERNEL)
        return oar_error(OAR_ERR_UNSUPPORTED, "op '%s' runs sub-blocks or scopes, not in eager mode", op->type);
    oar_eager_op_t *e = oar_xcalloc(1, sizeof *e);
    if (!e) return OAR_ERR_NOMEM;
    oar_op_desc_t *d = NULL;
    int rc = oar_op_desc_copy(op, &d);
    /* the checks of insertion: slots, attr types and ranges, defaults */
    if (rc == OAR_OK && (rc = oar_op_check_def(d, def, true)) != OAR_OK) oar_error_prefix("op '%s': ", op->type);
    if (rc == OAR_OK) rc = oar_program_new(&e->prog);
    if (rc == OAR_OK) rc = oar_block_insert_op_raw(oar_program_block(e->prog, 0), -1, d);
    if (rc == OAR_OK) { e->desc = d; d = NULL; }
    if (rc == OAR_OK) rc = oar_prepare_block(place, e->prog, 0, false, &e->prep);
    if (rc == OAR_OK) {
        /* no block or position to name: the caller adds where it was called */
        size_t n = strlen(op->type) + sizeof "op ''";
        char *c = oar_xmalloc(n);
        if (!c) rc = OAR_ERR_NOMEM;
        else {
            snprintf(c, n, "op '%s'", op->type);
            free(e->prep->ops[0].context);
            e->prep->ops[0].context = c;
        }
    }
    if (rc == OAR_OK) rc = oar_scope_new(&e->scope);
    if (rc == OAR_OK && !(e->vars = oar_xcalloc((size_t)(e->prep->nnames ? e->prep->nnames : 1), sizeof *e->vars)))
        rc = OAR_ERR_NOMEM;
    for (int i = 0; rc == OAR_OK && i < e->prep->nnames; i++) rc = oar_scope_var(e->scope, e->prep->names[i], &e->vars[i]);
    if (rc == OAR_OK) rc = positions(e, op->inputs, op->ninputs, &e->in_ids, &e->nin);
    if (rc == OAR_OK) rc = positions(e, op->outputs, op->noutputs, &e->out_ids, &e->nout);
    if (rc == OAR_OK) rc = executor_for(place, device, &e->exe);
    if (rc != OAR_OK) {
        if (d) oar_op_desc_free(d);
        oar_eager_op_free(e);
        return rc;
    }
    *out = e;
    return OAR_OK;
}

const oar_op_desc_t *oar_eager_op_desc(const oar_eager_op_t *e) { return e ? e->desc : NULL; }
int oar_eager_op_num_inputs(const oar_eager_op_t *e) { return e ? e->nin : 0; }
int oar_eager_op_num_outputs(const oar_eager_op_t *e) { return e ? e->nout : 0; }

static void bind(oar_variable_t *v, oar_tensor_t *t) {
    oar_variable_clear(v);
    v->type = OAR_VAR_LOD_TENSOR;
    v->u.tensor = oar_tensor_retain(t);
}

int oar_eager_op_run(oar_eager_op_t *e, oar_tensor_t *const *ins, int nin, oar_tensor_t **outs, int nout) {
    if (!e) return oar_error(OAR_ERR_INVALID, "oar_eager_op_run: NULL op");
    if (nin != e->nin || nout != e->nout || (nin && !ins) || (nout && !outs))
        return oar_error(OAR_ERR_INVALID, "op '%s': %d inputs and %d outputs given, it takes %d and %d",
                         e->desc->type, nin, nout, e->nin, e->nout);
    bool small[64] = {0};
    bool *made = nout <= 64 ? small : oar_xcalloc((size_t)nout, sizeof *made);
    if (!made) return OAR_ERR_NOMEM;
    for (int i = 0; i < nin; i++)
        if (e->in_ids[i] >= 0 && ins[i]) bind(e->vars[e->in_ids[i]], ins[i]);
    int rc = OAR_OK;
    for (int i = 0; i < nout && rc == OAR_OK; i++) {
        int id = e->out_ids[i];
        if (id < 0) continue;
        oar_variable_t *v = e->vars[id];
        if (outs[i]) {
            bind(v, outs[i]);
        } else if (v->type == OAR_VAR_LOD_TENSOR) {   /* an output named like an input: in place */
            outs[i] = oar_tensor_retain(v->u.tensor);
            made[i] = true;
        } else {
            rc = oar_tensor_new_empty(&outs[i]);
            if (rc == OAR_OK) {
                bind(v, outs[i]);
                made[i] = true;
            }
        }
    }
    if (rc == OAR_OK) rc = oar_executor_run_prepared_op(e->exe, e->prep, 0, e->vars, e->scope);
    /* the cache must not keep the caller's tensors alive */
    for (int i = 0; i < e->prep->nnames; i++) oar_variable_clear(e->vars[i]);
    if (rc != OAR_OK)
        for (int i = 0; i < nout; i++)
            if (made[i]) { oar_tensor_free(outs[i]); outs[i] = NULL; }
    if (made != small) free(made);
    return rc;
}

int oar_eager_grad_ops(const oar_op_desc_t *fwd, const char *const *no_grad, int nno_grad,
                       oar_op_desc_t ***ops, int *nops) {
    return oar_bw_op_grad_descs(fwd, no_grad, nno_grad, ops, nops);
}

void oar_op_descs_free(oar_op_desc_t **ops, int n) {
    if (!ops) return;
    for (int i = 0; i < n; i++)
        if (ops[i] && !ops[i]->block) oar_op_desc_free(ops[i]);
    free(ops);
}
