/* op_build.c — inserting an op into a block: check it against its
 * definition (slots, attr types, ranges, defaults), declare its missing
 * output vars, run compile-time inference, and only then take ownership.
 * On any failure the block is left exactly as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "attr_check.h"

static const char *attr_type_name(int t) {
    static const char *names[] = {"INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS",
                                  "BOOLEAN", "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS"};
    return (t >= 0 && t <= 11) ? names[t] : "?";
}

/* Brings a present attr to its declared type where the conversion is exact
 * (INT <-> LONG, INT/LONG -> FLOAT, INTS <-> LONGS), checks ranges. */
/* Writes the declared default of ad (empty for lists, none for BLOCK). */
static int set_default(oar_op_desc_t *op, const oar_attr_def_t *ad) {
    switch (ad->type) {
    case OAR_ATTR_INT: return oar_op_desc_set_attr_int(op, ad->name, (int32_t)ad->def);
    case OAR_ATTR_LONG: return oar_op_desc_set_attr_long(op, ad->name, (int64_t)ad->def);
    case OAR_ATTR_FLOAT: return oar_op_desc_set_attr_float(op, ad->name, (float)ad->def);
    case OAR_ATTR_BOOLEAN: return oar_op_desc_set_attr_bool(op, ad->name, ad->def != 0);
    case OAR_ATTR_STRING: return oar_op_desc_set_attr_string(op, ad->name, ad->def_str ? ad->def_str : "");
    case OAR_ATTR_INTS: return oar_op_desc_set_attr_ints(op, ad->name, NULL, 0);
    case OAR_ATTR_LONGS: return oar_op_desc_set_attr_longs(op, ad->name, NULL, 0);
    case OAR_ATTR_FLOATS: return oar_op_desc_set_attr_floats(op, ad->name, NULL, 0);
    case OAR_ATTR_STRINGS: return oar_op_desc_set_attr_strings(op, ad->name, NULL, 0);
    case OAR_ATTR_BOOLEANS: return oar_op_desc_set_attr_bools(op, ad->name, NULL, 0);
    case OAR_ATTR_BLOCKS: return oar_op_desc_set_attr_blocks(op, ad->name, NULL, 0);
    case OAR_ATTR_BLOCK: return OAR_OK;
    default: return oar_error(OAR_ERR_INVALID, "attr '%s' has an unknown declared type", ad->name);
    }
}

static bool is_list_type(int t) {
    return t == OAR_ATTR_INTS || t == OAR_ATTR_LONGS || t == OAR_ATTR_FLOATS || t == OAR_ATTR_BOOLEANS ||
           t == OAR_ATTR_STRINGS || t == OAR_ATTR_BLOCKS;
}

static int check_attr(oar_op_desc_t *op, const oar_attr_def_t *ad) {
    int have = oar_op_desc_attr_type(op, ad->name);
    if (have < 0) {
        if (ad->required) return oar_error(OAR_ERR_INVALID, "attr '%s' (%s) is required", ad->name, attr_type_name(ad->type));
        return set_default(op, ad);
    }
    if (have != ad->type) {
        const oar_attr_t *a = oar_op_find_attr(op, ad->name);
        bool ok = false;
        if (ad->type == OAR_ATTR_LONG && have == OAR_ATTR_INT)
            ok = oar_op_desc_set_attr_long(op, ad->name, a->v.i) == OAR_OK;
        else if (ad->type == OAR_ATTR_INT && have == OAR_ATTR_LONG && a->v.l >= INT32_MIN && a->v.l <= INT32_MAX)
            ok = oar_op_desc_set_attr_int(op, ad->name, (int32_t)a->v.l) == OAR_OK;
        else if (ad->type == OAR_ATTR_FLOAT && have == OAR_ATTR_INT)
            ok = oar_op_desc_set_attr_float(op, ad->name, (float)a->v.i) == OAR_OK;
        else if (ad->type == OAR_ATTR_FLOAT && have == OAR_ATTR_LONG)
            ok = oar_op_desc_set_attr_float(op, ad->name, (float)a->v.l) == OAR_OK;
        else if (is_list_type(ad->type) && is_list_type(have) && a->n == 0)
            ok = set_default(op, ad) == OAR_OK;
        else if (ad->type == OAR_ATTR_LONGS && have == OAR_ATTR_INTS) {
            int64_t *tmp = oar_xmalloc(sizeof(int64_t) * (size_t)(a->n ? a->n : 1));
            if (!tmp) return OAR_ERR_NOMEM;
            for (int i = 0; i < a->n; i++) tmp[i] = ((const int32_t *)a->list)[i];
            ok = oar_op_desc_set_attr_longs(op, ad->name, tmp, a->n) == OAR_OK;
            free(tmp);
        } else if (ad->type == OAR_ATTR_INTS && have == OAR_ATTR_LONGS) {
            int32_t *tmp = oar_xmalloc(sizeof(int32_t) * (size_t)(a->n ? a->n : 1));
            if (!tmp) return OAR_ERR_NOMEM;
            ok = true;
            for (int i = 0; i < a->n; i++) {
                int64_t x = ((const int64_t *)a->list)[i];
                if (x < INT32_MIN || x > INT32_MAX) ok = false;
                tmp[i] = (int32_t)x;
            }
            ok = ok && oar_op_desc_set_attr_ints(op, ad->name, tmp, a->n) == OAR_OK;
            free(tmp);
        } else if (ad->type == OAR_ATTR_FLOATS && (have == OAR_ATTR_INTS || have == OAR_ATTR_LONGS)) {
            float *tmp = oar_xmalloc(sizeof(float) * (size_t)(a->n ? a->n : 1));
            if (!tmp) return OAR_ERR_NOMEM;
            for (int i = 0; i < a->n; i++)
                tmp[i] = have == OAR_ATTR_INTS ? (float)((const int32_t *)a->list)[i] : (float)((const int64_t *)a->list)[i];
            ok = oar_op_desc_set_attr_floats(op, ad->name, tmp, a->n) == OAR_OK;
            free(tmp);
        }
        if (!ok) return oar_error(OAR_ERR_DTYPE, "attr '%s' must be %s, got %s", ad->name,
                                  attr_type_name(ad->type), attr_type_name(have));
    }
    if (ad->min < ad->max) {
        double x;
        switch (ad->type) {
        case OAR_ATTR_INT: x = oar_attr_i(op, ad->name); break;
        case OAR_ATTR_LONG: x = (double)oar_attr_l(op, ad->name); break;
        case OAR_ATTR_FLOAT: x = oar_attr_f(op, ad->name); break;
        default: return OAR_OK;
        }
        if (!(x >= ad->min && x <= ad->max))
            return oar_error(OAR_ERR_RANGE, "attr '%s' = %g is outside [%g, %g]", ad->name, x, ad->min, ad->max);
    }
    return OAR_OK;
}

static int check_slots(const oar_op_desc_t *op, const oar_slot_def_t *defs,
                       const oar_op_slot_t *have, int nhave, const char *kind) {
    for (int i = 0; i < nhave; i++) {
        const oar_slot_def_t *sd = NULL;
        for (const oar_slot_def_t *d = defs; d && d->name; d++)
            if (strcmp(d->name, have[i].slot) == 0) { sd = d; break; }
        if (!sd) {
            char known[256] = "";
            for (const oar_slot_def_t *d = defs; d && d->name; d++) {
                strncat(known, d->name, sizeof known - strlen(known) - 3);
                if ((d + 1)->name) strncat(known, ", ", sizeof known - strlen(known) - 1);
            }
            return oar_error(OAR_ERR_INVALID, "unknown %s slot '%s' (the op has: %s)", kind, have[i].slot, known);
        }
        if (have[i].nargs > 1 && !(sd->flags & OAR_SLOT_DUPLICABLE))
            return oar_error(OAR_ERR_INVALID, "%s slot '%s' takes one variable, got %d", kind, sd->name, have[i].nargs);
        for (int j = 0; j < have[i].nargs; j++)
            if (!have[i].args[j] || !have[i].args[j][0])
                return oar_error(OAR_ERR_INVALID, "%s slot '%s' argument %d has an empty name", kind, sd->name, j);
    }
    for (const oar_slot_def_t *d = defs; d && d->name; d++) {
        if (d->flags & OAR_SLOT_DISPENSABLE) continue;
        const oar_op_slot_t *s = NULL;
        for (int i = 0; i < nhave; i++)
            if (strcmp(have[i].slot, d->name) == 0) s = &have[i];
        if (!s || s->nargs == 0) return oar_error(OAR_ERR_INVALID, "missing %s slot '%s'", kind, d->name);
    }
    (void)op;
    return OAR_OK;
}

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
    OAR_TRY(check_slots(op, def->inputs, op->inputs, op->ninputs, "input"));
    OAR_TRY(check_slots(op, def->outputs, op->outputs, op->noutputs, "output"));
    for (const oar_attr_def_t *ad = def->attrs; ad && ad->name; ad++) OAR_TRY(check_attr(op, ad));
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
        oar_infer_ctx_t c = {.runtime = false, .op = op, .block = b, .k = NULL};
        OAR_TRY(def->infer(&c));
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
