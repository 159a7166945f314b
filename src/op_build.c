/* op_build.c — inserting an op into a block: check it against its
 * definition (slots, attr types, ranges, defaults), declare its missing
 * output vars, run compile-time inference, and only then take ownership.
 * On any failure the block is left exactly as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "attr_check.h"
#include "desc_check.h"

/* Context for errors about an op not yet in a block. */
static void prefix_context(const oar_op_desc_t *op, const oar_block_t *b, int pos) {
    const oar_attr_t *cs = oar_op_find_attr(op, "op_callstack");
    const char *where = (cs && cs->type == OAR_ATTR_STRINGS && cs->n > 0) ? ((char **)cs->list)[0] : NULL;
    if (where)
        oar_error_prefix("op '%s' (block %d, #%d, created at %s): ", op->type, b->idx, pos, where);
    else
        oar_error_prefix("op '%s' (block %d, #%d): ", op->type, b->idx, pos);
}

static int validate_and_infer(oar_block_t *b, oar_op_desc_t *op, const oar_op_def_t *def,
                              const char **created, int *ncreated) {
    OAR_TRY(oar_op_check_def(op, def, true));
    OAR_TRY(oar_op_check_block_attrs(op, b));
    OAR_TRY(oar_op_check_attrs(op));
    for (int i = 0; i < op->ninputs; i++)
        for (int j = 0; j < op->inputs[i].nargs; j++) {
            const char *n = op->inputs[i].args[j];
            if (strcmp(n, OAR_EMPTY_VAR) != 0 && !oar_block_find_var_recursive(b, n))
                return oar_error(OAR_ERR_NOT_FOUND, "input '%s' of slot '%s' is not a variable of block %d or its parents",
                                 n, op->inputs[i].slot, b->idx);
        }
    for (int i = 0; i < op->noutputs; i++)
        for (int j = 0; j < op->outputs[i].nargs; j++) {
            const char *n = op->outputs[i].args[j];
            if (strcmp(n, OAR_EMPTY_VAR) == 0 || oar_block_find_var_recursive(b, n)) continue;
            oar_var_desc_t *v;
            OAR_TRY(oar_block_var_new(b, n, &v));
            created[(*ncreated)++] = v->name;
        }
    if (def->infer) {
        oar_infer_ctx_t c = {.runtime = false, .op = op, .block = b, .k = NULL, .def = def, .attrs = NULL};
        const int rc = def->infer(&c);
        free(c.attrs);
        OAR_TRY(rc);
    }
    return OAR_OK;
}

static int count_outputs(const oar_op_desc_t *op) {
    int n = 0;
    for (int i = 0; i < op->noutputs; i++) n += op->outputs[i].nargs;
    return n;
}

int oar_block_insert_op(oar_block_t *b, int pos, oar_op_desc_t *op) {
    if (!b || !op) return oar_error(OAR_ERR_INVALID, "oar_block_insert_op: NULL %s", b ? "op" : "block");
    if (op->block) return oar_error(OAR_ERR_INVALID, "op '%s' already belongs to a block", op->type);
    if (pos < -1 || pos > b->nops) return oar_error(OAR_ERR_RANGE, "insert position %d outside [-1, %d]", pos, b->nops);
    int at = pos < 0 ? b->nops : pos;
    const oar_op_def_t *def = oar_registry_op(op->type);
    if (!def) {
        oar_error(OAR_ERR_NOT_FOUND, "unknown op type '%s'", op->type);
        prefix_context(op, b, at);
        return OAR_ERR_NOT_FOUND;
    }
    int nout = count_outputs(op);
    const char **created = oar_xcalloc((size_t)(nout + 1), sizeof *created);
    if (!created) return OAR_ERR_NOMEM;
    int ncreated = 0;
    /* inference may rewrite shapes of existing output vars: remember them */
    oar_var_desc_t *saved = oar_xcalloc((size_t)(nout + 1), sizeof *saved);
    oar_var_desc_t **targets = oar_xcalloc((size_t)(nout + 1), sizeof *targets);
    if (!saved || !targets) { free(created); free(saved); free(targets); return OAR_ERR_NOMEM; }
    int nsaved = 0;
    for (int i = 0; i < op->noutputs; i++)
        for (int j = 0; j < op->outputs[i].nargs; j++) {
            oar_var_desc_t *v = oar_block_find_var_recursive(b, op->outputs[i].args[j]);
            if (v) { saved[nsaved] = *v; targets[nsaved++] = v; }
        }
    int rc = validate_and_infer(b, op, def, created, &ncreated);
    if (rc == OAR_OK) rc = oar_block_insert_op_raw(b, at, op);
    if (rc != OAR_OK) {
        for (int i = 0; i < nsaved; i++) {
            oar_var_desc_t *v = targets[i];
            v->type = saved[i].type; v->dtype = saved[i].dtype; v->ndim = saved[i].ndim;
            memcpy(v->dims, saved[i].dims, sizeof v->dims); v->lod_level = saved[i].lod_level;
        }
        for (int i = ncreated - 1; i >= 0; i--) oar_block_remove_var(b, created[i]);
        prefix_context(op, b, at);
    }
    free(created); free(saved); free(targets);
    return rc;
}
