/* desc_opcheck.c — an op desc against its definition: the one check every
 * op passes whichever way it arrives (inserted by Block:append_op, parsed
 * from a model file, an attr set on an attached op). Kernels trust what
 * passes: required slots are present, attrs have their declared types and
 * ranges, missing attrs hold their declared defaults, and block attrs name a
 * sub-block that exists and does not lead back to the op's own block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "desc_check.h"

static const char *attr_type_name(int t)
{
    static const char *names[] = {"INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS",
                                  "BOOLEAN", "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS"};
    return (t >= 0 && t <= 11) ? names[t] : "?";
}

/* Writes the declared default of ad (empty for lists, none for BLOCK). */
static int set_default(oar_op_desc_t *op, const oar_attr_def_t *ad)
{
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

static bool is_list_type(int t)
{
    return t == OAR_ATTR_INTS || t == OAR_ATTR_LONGS || t == OAR_ATTR_FLOATS || t == OAR_ATTR_BOOLEANS ||
           t == OAR_ATTR_STRINGS || t == OAR_ATTR_BLOCKS;
}

/* Brings a present attr to its declared type where the conversion is exact
 * (INT <-> LONG, INT/LONG -> FLOAT, INTS <-> LONGS, an empty list of any kind). */
static int convert(oar_op_desc_t *op, const oar_attr_def_t *ad, const oar_attr_t *a, int have)
{
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
    return OAR_OK;
}

/* a declared set of choices: the value must be one of them. A program
 * parsed from bytes may hold "" where its writer left a required string
 * unset (Paddle's serializer does): that is refused when the op runs (the
 * decoder names it), not when the program loads. */
static int check_choice(const oar_attr_def_t *ad, const oar_attr_t *a, bool strict)
{
    const char *v = a->v.s ? a->v.s : "";
    if (!strict && !v[0]) return OAR_OK;
    if (oar_attr_choice_index(ad->choices, v) < 0)
        return oar_error(OAR_ERR_INVALID, "attr '%s' = '%s' is not one of the choices (%s%s)", ad->name, v,
                         ad->choices[0] == '|' ? "''" : "", ad->choices);
    return OAR_OK;
}

static int check_value(const oar_attr_def_t *ad, const oar_attr_t *a, bool strict)
{
    if (ad->choices && a->type == OAR_ATTR_STRING && ad->type == OAR_ATTR_STRING) return check_choice(ad, a, strict);
    return oar_attr_check_range(ad, a);
}

int oar_attr_check_range(const oar_attr_def_t *ad, const oar_attr_t *a)
{
    if (ad->choices && a->type == OAR_ATTR_STRING && ad->type == OAR_ATTR_STRING) {
        if (oar_attr_choice_index(ad->choices, a->v.s ? a->v.s : "") < 0)
            return oar_error(OAR_ERR_INVALID, "attr '%s' = '%s' is not one of the choices (%s%s)", ad->name,
                             a->v.s ? a->v.s : "", ad->choices[0] == '|' ? "''" : "", ad->choices);
        return OAR_OK;
    }
    if (!(ad->min < ad->max) || a->type != ad->type) return OAR_OK;
    double x;
    switch (ad->type) {
    case OAR_ATTR_INT: x = a->v.i; break;
    case OAR_ATTR_LONG: x = (double)a->v.l; break;
    case OAR_ATTR_FLOAT: x = a->v.f; break;
    default: return OAR_OK;
    }
    if (!(x >= ad->min && x <= ad->max))
        return oar_error(OAR_ERR_RANGE, "attr '%s' = %g is outside [%g, %g]", ad->name, x, ad->min, ad->max);
    return OAR_OK;
}

static int check_attr(oar_op_desc_t *op, const oar_attr_def_t *ad, bool strict)
{
    const oar_attr_t *a = oar_op_find_attr(op, ad->name);
    if (!a) {
        if (ad->required) return oar_error(OAR_ERR_INVALID, "attr '%s' (%s) is required", ad->name, attr_type_name(ad->type));
        return set_default(op, ad);
    }
    if (a->type != ad->type) OAR_TRY(convert(op, ad, a, a->type));
    return check_value(ad, oar_op_find_attr(op, ad->name), strict);
}

/* unknown slots: refused when strict (insertion); a parsed model may carry
 * slots of a newer Fluid that oar's kernels never read */
static int check_slots(const char *op_type, const oar_slot_def_t *defs, const oar_op_slot_t *have, int nhave,
                       const char *kind, bool strict)
{
    for (int i = 0; i < nhave; i++) {
        const oar_slot_def_t *sd = NULL;
        for (const oar_slot_def_t *d = defs; d && d->name; d++)
            if (strcmp(d->name, have[i].slot) == 0) { sd = d; break; }
        if (!sd) {
            if (!strict) continue;
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
        /* a forward kernel writes a required output: "no variable" there is a
         * model bug (grad kernels skip outputs the backward pass left @EMPTY@) */
        size_t tl = strlen(op_type);
        bool grad_op = tl > 5 && strcmp(op_type + tl - 5, "_grad") == 0;
        if (strcmp(kind, "output") == 0 && !grad_op)
            for (int j = 0; j < s->nargs; j++)
                if (strcmp(s->args[j], OAR_EMPTY_VAR) == 0)
                    return oar_error(OAR_ERR_INVALID, "output slot '%s' is required but argument %d is %s",
                                     d->name, j, OAR_EMPTY_VAR);
    }
    return OAR_OK;
}

int oar_op_check_def(oar_op_desc_t *op, const oar_op_def_t *def, bool strict_slots)
{
    OAR_TRY(check_slots(op->type, def->inputs, op->inputs, op->ninputs, "input", strict_slots));
    OAR_TRY(check_slots(op->type, def->outputs, op->outputs, op->noutputs, "output", strict_slots));
    for (const oar_attr_def_t *ad = def->attrs; ad && ad->name; ad++) OAR_TRY(check_attr(op, ad, strict_slots));
    return OAR_OK;
}

int oar_op_check_def_const(const oar_op_desc_t *op, const oar_op_def_t *def)
{
    OAR_TRY(check_slots(op->type, def->inputs, op->inputs, op->ninputs, "input", false));
    OAR_TRY(check_slots(op->type, def->outputs, op->outputs, op->noutputs, "output", false));
    for (const oar_attr_def_t *ad = def->attrs; ad && ad->name; ad++) {
        const oar_attr_t *a = oar_op_find_attr(op, ad->name);
        if (a) OAR_TRY(check_value(ad, a, false));
    }
    return OAR_OK;
}

/* ---- block references ------------------------------------------------------ */

/* Does running block `from` (its ops' BLOCK/BLOCKS attrs, transitively) ever
 * run block `to`? Iterative: the program may be hostile. */
bool oar_program_block_reaches(const oar_program_t *p, int from, int to)
{
    int n = p->nblocks;
    if (from < 0 || from >= n || to < 0 || to >= n) return false;
    if (from == to) return true;
    char *seen = oar_xcalloc((size_t)n, 1);
    int *stack = oar_xcalloc((size_t)n, sizeof *stack);
    bool found = false;
    if (!seen || !stack) { free(seen); free(stack); return true; }  /* out of memory: refuse to be sure */
    int top = 0;
    stack[top++] = from;
    seen[from] = 1;
    while (top > 0 && !found) {
        const oar_block_t *b = p->blocks[stack[--top]];
        for (int j = 0; j < b->nops && !found; j++) {
            const oar_op_desc_t *op = b->ops[j];
            for (int k = 0; k < op->nattrs && !found; k++) {
                const oar_attr_t *a = &op->attrs[k];
                int cnt = a->type == OAR_ATTR_BLOCK ? 1 : a->type == OAR_ATTR_BLOCKS ? a->n : 0;
                for (int t = 0; t < cnt; t++) {
                    int v = a->type == OAR_ATTR_BLOCK ? a->v.block : ((const int32_t *)a->list)[t];
                    if (v < 0 || v >= n || seen[v]) continue;
                    if (v == to) { found = true; break; }
                    seen[v] = 1;
                    stack[top++] = v;
                }
            }
        }
    }
    free(seen);
    free(stack);
    return found;
}

int oar_block_check_sub_block(const oar_block_t *b, const char *attr, int target)
{
    if (target == -1) return OAR_OK;   /* not set yet */
    const oar_program_t *p = b->program;
    int n = p ? p->nblocks : 0;
    if (target < 1 || target >= n || target == b->idx)
        return oar_error(OAR_ERR_RANGE, "attr '%s' names block %d (a sub-block must exist and be neither "
                         "block 0 nor the op's own block %d; the program has %d blocks)", attr, target, b->idx, n);
    if (oar_program_block_reaches(p, target, b->idx))
        return oar_error(OAR_ERR_RANGE, "attr '%s' names block %d, which runs block %d again "
                         "(sub-block references would form a cycle)", attr, target, b->idx);
    return OAR_OK;
}

int oar_op_check_block_attrs(const oar_op_desc_t *op, const oar_block_t *b)
{
    for (int k = 0; k < op->nattrs; k++) {
        const oar_attr_t *a = &op->attrs[k];
        if (a->type == OAR_ATTR_BLOCK) OAR_TRY(oar_block_check_sub_block(b, a->name, a->v.block));
        if (a->type == OAR_ATTR_BLOCKS)
            for (int t = 0; t < a->n; t++) {
                int v = ((const int32_t *)a->list)[t];
                if (v == -1) return oar_error(OAR_ERR_RANGE, "attr '%s' item %d names no block", a->name, t);
                OAR_TRY(oar_block_check_sub_block(b, a->name, v));
            }
    }
    return OAR_OK;
}

/* ---- an attr set on an op already in a block -------------------------------- */
int oar_attr_check_attached(const oar_op_desc_t *op, const char *name, const oar_attr_t *val)
{
    if (!op->block) return OAR_OK;   /* a detached op is checked when inserted */
    const oar_op_def_t *def = oar_registry_op(op->type);
    const oar_attr_def_t *ad = def ? oar_registry_attr_def(def, name) : NULL;
    int rc = OAR_OK;
    if (ad && ad->type != val->type)
        rc = oar_error(OAR_ERR_DTYPE, "attr '%s' must be %s, got %s", name, attr_type_name(ad->type),
                       attr_type_name(val->type));
    if (rc == OAR_OK && ad) rc = oar_attr_check_range(ad, val);
    if (rc == OAR_OK && val->type == OAR_ATTR_BLOCK) rc = oar_block_check_sub_block(op->block, name, val->v.block);
    if (rc == OAR_OK && val->type == OAR_ATTR_BLOCKS)
        for (int t = 0; t < val->n && rc == OAR_OK; t++)
            rc = oar_block_check_sub_block(op->block, name, ((const int32_t *)val->list)[t]);
    if (rc != OAR_OK) oar_error_prefix("op '%s' (block %d): ", op->type, op->block->idx);
    return rc;
}

int oar_attr_check_removal(const oar_op_desc_t *op, const char *name)
{
    if (!op->block) return OAR_OK;
    const oar_op_def_t *def = oar_registry_op(op->type);
    const oar_attr_def_t *ad = def && def->attrs ? oar_registry_attr_def(def, name) : NULL;
    /* the attrs every op declares (op_role, ...) are bookkeeping; the op's own are read by its kernels */
    for (const oar_attr_def_t *d = def ? def->attrs : NULL; ad && d && d->name; d++)
        if (d == ad)
            return oar_error(OAR_ERR_INVALID, "op '%s' (block %d): attr '%s' is declared by the op and cannot be "
                             "removed (set it instead)", op->type, op->block->idx, name);
    return OAR_OK;
}
