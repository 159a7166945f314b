/* desc.c — in-memory program descriptions: programs, blocks, var descs, and
 * the slots of op descs. Attributes live in desc_attr.c, protobuf in
 * desc_pb.c, whole-program checks in desc_validate.c.
 *
 * Var and op descs are allocated one by one so the pointers handed out stay
 * valid while a block grows. Every setter bumps the owning program's version,
 * which executors use (with the program's uid) to invalidate prepared state. */
#include "desc.h"
#include "error.h"
#include "op.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t g_next_uid;

static uint64_t next_uid(void) { return atomic_fetch_add(&g_next_uid, 1) + 1; }

void oar_free(void *ptr) { free(ptr); }

void oar_strings_free(char **s, int n)
{
    if (!s) return;
    for (int i = 0; i < n; i++) free(s[i]);
    free(s);
}

void oar_program_touch(oar_program_t *p)
{
    if (p) p->version++;
}

void oar_desc_touch_block(oar_block_t *b)
{
    if (b) oar_program_touch(b->program);
}

/* ---- type names ---------------------------------------------------------- */

bool oar_desc_dtype_valid(int dtype)
{
    switch (dtype) {
    case OAR_BOOL: case OAR_INT16: case OAR_INT32: case OAR_INT64:
    case OAR_FP16: case OAR_FP32: case OAR_FP64: case OAR_UINT8: case OAR_INT8:
        return true;
    default:
        return false;
    }
}

bool oar_desc_var_type_valid(int t)
{
    switch (t) {
    case OAR_VAR_LOD_TENSOR: case OAR_VAR_SELECTED_ROWS: case OAR_VAR_FEED_MINIBATCH:
    case OAR_VAR_FETCH_LIST: case OAR_VAR_STEP_SCOPES: case OAR_VAR_LOD_RANK_TABLE:
    case OAR_VAR_LOD_TENSOR_ARRAY: case OAR_VAR_RAW:
        return true;
    default:
        return false;
    }
}

const char *oar_desc_type_name(int t)
{
    static const char *const names[] = {
        "BOOL", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "LOD_TENSOR",
        "SELECTED_ROWS", "FEED_MINIBATCH", "FETCH_LIST", "STEP_SCOPES", "LOD_RANK_TABLE",
        "LOD_TENSOR_ARRAY", "PLACE_LIST", "READER", "FETCH_VAR_LIST", "RAW", "TUPLE",
        "SIZE_T", "UINT8", "INT8"};
    if (t < 0 || t >= (int)(sizeof names / sizeof names[0])) return "unknown";
    return names[t];
}

/* ---- freeing --------------------------------------------------------------- */

static void var_free(oar_var_desc_t *v)
{
    if (!v) return;
    free(v->name);
    free(v);
}

static void slots_free(oar_op_slot_t *s, int n)
{
    for (int i = 0; i < n; i++) {
        free(s[i].slot);
        for (int j = 0; j < s[i].nargs; j++) free(s[i].args[j]);
        free(s[i].args);
    }
    free(s);
}

static void op_free(oar_op_desc_t *op)
{
    if (!op) return;
    free(op->type);
    slots_free(op->inputs, op->ninputs);
    slots_free(op->outputs, op->noutputs);
    for (int i = 0; i < op->nattrs; i++) {
        oar_attr_value_free(&op->attrs[i]);
        free(op->attrs[i].name);
    }
    free(op->attrs);
    free(op);
}

static void block_free(oar_block_t *b)
{
    if (!b) return;
    for (int i = 0; i < b->nvars; i++) var_free(b->vars[i]);
    free(b->vars);
    oar_strmap_free(&b->var_index);
    for (int i = 0; i < b->nops; i++) op_free(b->ops[i]);
    free(b->ops);
    free(b);
}

void oar_program_free(oar_program_t *p)
{
    if (!p) return;
    for (int i = 0; i < p->nblocks; i++) block_free(p->blocks[i]);
    free(p->blocks);
    free(p);
}

/* ---- programs ---------------------------------------------------------------- */

/* appends a block without checking parent_idx (parse sets raw values and
 * validates afterwards) */
static int add_block(oar_program_t *p, int parent_idx, oar_block_t **out)
{
    OAR_TRY(oar_grow((void **)&p->blocks, &p->capb, p->nblocks + 1, sizeof *p->blocks));
    oar_block_t *b = oar_xcalloc(1, sizeof *b);
    if (!b) return OAR_ERR_NOMEM;
    b->idx = p->nblocks;
    b->parent_idx = parent_idx;
    b->forward_block_idx = -1;
    b->program = p;
    p->blocks[p->nblocks++] = b;
    oar_program_touch(p);
    if (out) *out = b;
    return OAR_OK;
}

static int program_alloc(oar_program_t **out)
{
    oar_program_t *p = oar_xcalloc(1, sizeof *p);
    if (!p) return OAR_ERR_NOMEM;
    p->version = 1;
    p->uid = next_uid();
    *out = p;
    return OAR_OK;
}

int oar_program_new(oar_program_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_program_new: NULL out pointer");
    oar_program_t *p;
    OAR_TRY(program_alloc(&p));
    int rc = add_block(p, -1, NULL);
    if (rc != OAR_OK) { oar_program_free(p); return rc; }
    *out = p;
    return OAR_OK;
}

int oar_program_num_blocks(const oar_program_t *p) { return p ? p->nblocks : 0; }

oar_block_t *oar_program_block(oar_program_t *p, int idx)
{
    if (!p || idx < 0 || idx >= p->nblocks) return NULL;
    return p->blocks[idx];
}

uint64_t oar_program_version(const oar_program_t *p) { return p ? p->version : 0; }

int oar_program_append_block(oar_program_t *p, int parent_idx, oar_block_t **out)
{
    if (!p) return oar_error(OAR_ERR_INVALID, "oar_program_append_block: NULL program");
    if (parent_idx < 0 || parent_idx >= p->nblocks)
        return oar_error(OAR_ERR_RANGE,
                         "append_block: parent block %d out of range (program has %d blocks)",
                         parent_idx, p->nblocks);
    return add_block(p, parent_idx, out);
}

/* ---- blocks --------------------------------------------------------------------- */

int oar_block_idx(const oar_block_t *b) { return b ? b->idx : -1; }
int oar_block_parent_idx(const oar_block_t *b) { return b ? b->parent_idx : -1; }
int oar_block_forward_block_idx(const oar_block_t *b) { return b ? b->forward_block_idx : -1; }
oar_program_t *oar_block_program(oar_block_t *b) { return b ? b->program : NULL; }
int oar_block_num_vars(const oar_block_t *b) { return b ? b->nvars : 0; }
int oar_block_num_ops(const oar_block_t *b) { return b ? b->nops : 0; }

int oar_block_set_forward_block_idx(oar_block_t *b, int idx)
{
    if (!b) return oar_error(OAR_ERR_INVALID, "oar_block_set_forward_block_idx: NULL block");
    int n = b->program ? b->program->nblocks : 0;
    if (idx < -1 || idx >= n)
        return oar_error(OAR_ERR_RANGE,
                         "block %d: forward_block_idx %d out of range (-1 or 0..%d)",
                         b->idx, idx, n - 1);
    b->forward_block_idx = idx;
    oar_desc_touch_block(b);
    return OAR_OK;
}

oar_var_desc_t *oar_block_var_at(oar_block_t *b, int i)
{
    if (!b || i < 0 || i >= b->nvars) return NULL;
    return b->vars[i];
}

oar_var_desc_t *oar_block_find_var(oar_block_t *b, const char *name)
{
    if (!b || !name) return NULL;
    int i = oar_strmap_get(&b->var_index, name);
    return i >= 0 ? b->vars[i] : NULL;
}

/* Fluid's lookup, with a grad block's forward block first: the block, then
 * for a grad block (forward_block_idx set) the forward block it
 * differentiates and that block's chain (grad ops read the forward
 * sub-block's vars, which shadow outer ones of the same name), then the
 * parent, and so on. Bounded so that a malformed (cyclic) chain cannot loop. */
static oar_var_desc_t *find_var_linked(oar_block_t *b, const char *name, int depth)
{
    int steps = 0, limit = b && b->program ? b->program->nblocks : 1;
    for (oar_block_t *c = b; c; c = oar_program_block(c->program, c->parent_idx)) {
        oar_var_desc_t *v = oar_block_find_var(c, name);
        if (v) return v;
        if (c->forward_block_idx >= 0 && c->forward_block_idx != c->idx && depth < limit) {
            v = find_var_linked(oar_program_block(c->program, c->forward_block_idx), name, depth + 1);
            if (v) return v;
        }
        if (++steps > limit) return NULL;
    }
    return NULL;
}

oar_var_desc_t *oar_block_find_var_recursive(oar_block_t *b, const char *name)
{
    return find_var_linked(b, name, 0);
}

int oar_block_var_new(oar_block_t *b, const char *name, oar_var_desc_t **out)
{
    if (!b) return oar_error(OAR_ERR_INVALID, "oar_block_var_new: NULL block");
    if (!name || !*name)
        return oar_error(OAR_ERR_INVALID, "block %d: a variable needs a non-empty name", b->idx);
    if (oar_block_find_var(b, name))
        return oar_error(OAR_ERR_INVALID, "block %d: variable '%s' already exists", b->idx, name);
    OAR_TRY(oar_grow((void **)&b->vars, &b->capv, b->nvars + 1, sizeof *b->vars));
    oar_var_desc_t *v = oar_xcalloc(1, sizeof *v);
    if (!v) return OAR_ERR_NOMEM;
    v->name = oar_xstrdup(name);
    if (!v->name) { free(v); return OAR_ERR_NOMEM; }
    v->type = OAR_VAR_LOD_TENSOR;
    v->dtype = OAR_FP32;
    v->ndim = -1;
    v->block = b;
    int rc = oar_strmap_put(&b->var_index, v->name, b->nvars);
    if (rc != OAR_OK) { var_free(v); return rc; }
    b->vars[b->nvars++] = v;
    oar_desc_touch_block(b);
    if (out) *out = v;
    return OAR_OK;
}

int oar_block_remove_var(oar_block_t *b, const char *name)
{
    if (!b || !name) return oar_error(OAR_ERR_INVALID, "oar_block_remove_var: NULL %s", b ? "name" : "block");
    int i = oar_strmap_get(&b->var_index, name);
    if (i < 0) return oar_error(OAR_ERR_NOT_FOUND, "block %d: no variable '%s' to remove", b->idx, name);
    oar_strmap_del(&b->var_index, name);
    var_free(b->vars[i]);
    memmove(b->vars + i, b->vars + i + 1, (size_t)(b->nvars - i - 1) * sizeof *b->vars);
    b->nvars--;
    /* re-pointing existing keys never grows the map, so these puts cannot fail */
    for (int j = i; j < b->nvars; j++) (void)oar_strmap_put(&b->var_index, b->vars[j]->name, j);
    oar_desc_touch_block(b);
    return OAR_OK;
}

oar_op_desc_t *oar_block_op_at(oar_block_t *b, int i)
{
    if (!b || i < 0 || i >= b->nops) return NULL;
    return b->ops[i];
}

int oar_block_insert_op_raw(oar_block_t *b, int pos, oar_op_desc_t *op)
{
    if (!b || !op) return oar_error(OAR_ERR_INVALID, "insert_op: NULL %s", b ? "op" : "block");
    if (op->block)
        return oar_error(OAR_ERR_INVALID, "insert_op: op '%s' already belongs to block %d",
                         op->type, op->block->idx);
    if (pos == -1) pos = b->nops;
    if (pos < 0 || pos > b->nops)
        return oar_error(OAR_ERR_RANGE, "insert_op: position %d out of range for block %d with %d ops",
                         pos, b->idx, b->nops);
    OAR_TRY(oar_grow((void **)&b->ops, &b->capo, b->nops + 1, sizeof *b->ops));
    memmove(b->ops + pos + 1, b->ops + pos, (size_t)(b->nops - pos) * sizeof *b->ops);
    b->ops[pos] = op;
    b->nops++;
    op->block = b;
    oar_desc_touch_block(b);
    return OAR_OK;
}

int oar_block_append_op_raw(oar_block_t *b, oar_op_desc_t *op)
{
    return oar_block_insert_op_raw(b, -1, op);
}

int oar_block_remove_op(oar_block_t *b, int pos)
{
    if (!b) return oar_error(OAR_ERR_INVALID, "oar_block_remove_op: NULL block");
    if (pos < 0 || pos >= b->nops)
        return oar_error(OAR_ERR_RANGE, "remove_op: position %d out of range for block %d with %d ops",
                         pos, b->idx, b->nops);
    op_free(b->ops[pos]);
    memmove(b->ops + pos, b->ops + pos + 1, (size_t)(b->nops - pos - 1) * sizeof *b->ops);
    b->nops--;
    oar_desc_touch_block(b);
    return OAR_OK;
}

/* ---- var descs ------------------------------------------------------------------- */

#define VAR_CHECK(v, fn) \
    do { if (!(v)) return oar_error(OAR_ERR_INVALID, fn ": NULL var desc"); } while (0)

const char *oar_var_desc_name(const oar_var_desc_t *v) { return v ? v->name : NULL; }
int oar_var_desc_type(const oar_var_desc_t *v) { return v ? v->type : -1; }
int oar_var_desc_dtype(const oar_var_desc_t *v) { return v ? v->dtype : -1; }
int oar_var_desc_ndim(const oar_var_desc_t *v) { return v ? v->ndim : -1; }
const int64_t *oar_var_desc_dims(const oar_var_desc_t *v) { return v ? v->dims : NULL; }
int oar_var_desc_lod_level(const oar_var_desc_t *v) { return v ? v->lod_level : 0; }
bool oar_var_desc_persistable(const oar_var_desc_t *v) { return v && v->persistable; }
bool oar_var_desc_stop_gradient(const oar_var_desc_t *v) { return v && v->stop_gradient; }
bool oar_var_desc_need_check_feed(const oar_var_desc_t *v) { return v && v->need_check_feed; }

int oar_var_desc_set_type(oar_var_desc_t *v, int var_type)
{
    VAR_CHECK(v, "oar_var_desc_set_type");
    if (!oar_desc_var_type_valid(var_type))
        return oar_error(OAR_ERR_INVALID, "var '%s': unsupported variable type %d (%s)",
                         v->name, var_type, oar_desc_type_name(var_type));
    v->type = var_type;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_var_desc_set_dtype(oar_var_desc_t *v, int dtype)
{
    VAR_CHECK(v, "oar_var_desc_set_dtype");
    if (!oar_desc_dtype_valid(dtype))
        return oar_error(OAR_ERR_DTYPE, "var '%s': invalid dtype %d", v->name, dtype);
    v->dtype = dtype;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_desc_check_dims(const int64_t *dims, int ndim, const char *var)
{
    char buf[256];
    if (ndim < 0 || ndim > OAR_MAX_DIMS)
        return oar_error(OAR_ERR_SHAPE, "var '%s': rank %d out of range (0..%d)", var, ndim, OAR_MAX_DIMS);
    if (ndim > 0 && !dims)
        return oar_error(OAR_ERR_SHAPE, "var '%s': NULL dims for rank %d", var, ndim);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < -1)
            return oar_error(OAR_ERR_SHAPE, "var '%s': dimension %d of shape %s is %lld (must be >= -1)",
                             var, i, oar_shape_str(dims, ndim, buf, sizeof buf), (long long)dims[i]);
        if (dims[i] >= 0 && __builtin_mul_overflow(n, dims[i], &n))
            return oar_error(OAR_ERR_SHAPE, "var '%s': shape %s has more elements than int64 holds",
                             var, oar_shape_str(dims, ndim, buf, sizeof buf));
    }
    return OAR_OK;
}

int oar_var_desc_set_shape(oar_var_desc_t *v, const int64_t *dims, int ndim)
{
    VAR_CHECK(v, "oar_var_desc_set_shape");
    OAR_TRY(oar_desc_check_dims(dims, ndim, v->name));
    if (ndim > 0) memcpy(v->dims, dims, (size_t)ndim * sizeof *dims);
    v->ndim = ndim;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_var_desc_set_lod_level(oar_var_desc_t *v, int lod_level)
{
    VAR_CHECK(v, "oar_var_desc_set_lod_level");
    if (lod_level < 0 || lod_level > OAR_MAX_LOD)
        return oar_error(OAR_ERR_RANGE, "var '%s': lod_level %d out of range (0..%d)",
                         v->name, lod_level, OAR_MAX_LOD);
    v->lod_level = lod_level;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_var_desc_set_persistable(oar_var_desc_t *v, bool p)
{
    VAR_CHECK(v, "oar_var_desc_set_persistable");
    v->persistable = p;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_var_desc_set_stop_gradient(oar_var_desc_t *v, bool s)
{
    VAR_CHECK(v, "oar_var_desc_set_stop_gradient");
    v->stop_gradient = s;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_var_desc_set_need_check_feed(oar_var_desc_t *v, bool c)
{
    VAR_CHECK(v, "oar_var_desc_set_need_check_feed");
    v->need_check_feed = c;
    oar_desc_touch_block(v->block);
    return OAR_OK;
}

int oar_var_desc_copy_from(oar_var_desc_t *dst, const oar_var_desc_t *src)
{
    if (!dst || !src) return oar_error(OAR_ERR_INVALID, "oar_var_desc_copy_from: NULL var desc");
    dst->type = src->type;
    dst->dtype = src->dtype;
    dst->ndim = src->ndim;
    memcpy(dst->dims, src->dims, sizeof dst->dims);
    dst->lod_level = src->lod_level;
    dst->persistable = src->persistable;
    dst->stop_gradient = src->stop_gradient;
    dst->need_check_feed = src->need_check_feed;
    oar_desc_touch_block(dst->block);
    return OAR_OK;
}

/* ---- op descs: type and slots ----------------------------------------------------- */

int oar_op_desc_new(const char *type, oar_op_desc_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_op_desc_new: NULL out pointer");
    if (!type || !*type) return oar_error(OAR_ERR_INVALID, "oar_op_desc_new: an op needs a non-empty type");
    oar_op_desc_t *op = oar_xcalloc(1, sizeof *op);
    if (!op) return OAR_ERR_NOMEM;
    op->type = oar_xstrdup(type);
    if (!op->type) { free(op); return OAR_ERR_NOMEM; }
    *out = op;
    return OAR_OK;
}

void oar_op_desc_free(oar_op_desc_t *op)
{
    if (!op) return;
    if (op->block) {
        /* freeing an op its block still points at would leave a dangling pointer */
        oar_error(OAR_ERR_INVALID, "oar_op_desc_free: op '%s' belongs to block %d; "
                  "remove it with oar_block_remove_op", op->type, op->block->idx);
        return;
    }
    op_free(op);
}

const char *oar_op_desc_type(const oar_op_desc_t *op) { return op ? op->type : NULL; }

static const oar_op_slot_t *find_slot(const oar_op_slot_t *s, int n, const char *slot)
{
    if (!slot) return NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(s[i].slot, slot) == 0) return &s[i];
    return NULL;
}

const oar_op_slot_t *oar_op_find_input(const oar_op_desc_t *op, const char *slot)
{
    return op ? find_slot(op->inputs, op->ninputs, slot) : NULL;
}

const oar_op_slot_t *oar_op_find_output(const oar_op_desc_t *op, const char *slot)
{
    return op ? find_slot(op->outputs, op->noutputs, slot) : NULL;
}

static char **copy_names(const char *const *names, int n, const oar_op_desc_t *op,
                         const char *slot, int *rc)
{
    char **args = oar_xcalloc((size_t)(n > 0 ? n : 1), sizeof *args);
    if (!args) { *rc = OAR_ERR_NOMEM; return NULL; }
    for (int i = 0; i < n; i++) {
        if (!names[i] || !*names[i]) {
            *rc = oar_error(OAR_ERR_INVALID, "op '%s': argument %d of slot '%s' is %s",
                            op->type, i, slot, names[i] ? "an empty name" : "NULL");
        } else if (!(args[i] = oar_xstrdup(names[i]))) {
            *rc = OAR_ERR_NOMEM;
        }
        if (*rc != OAR_OK) {
            for (int j = 0; j < i; j++) free(args[j]);
            free(args);
            return NULL;
        }
    }
    return args;
}

/* Replaces the argument list of `slot`, or appends the slot; the op is left
 * unchanged on failure. */
static int set_slot(oar_op_desc_t *op, bool input, const char *slot,
                    const char *const *names, int n)
{
    const char *what = input ? "input" : "output";
    if (!op) return oar_error(OAR_ERR_INVALID, "oar_op_desc_set_%s: NULL op", what);
    if (!slot || !*slot)
        return oar_error(OAR_ERR_INVALID, "op '%s': %s slot name must be non-empty", op->type, what);
    if (n < 0 || (n > 0 && !names))
        return oar_error(OAR_ERR_INVALID, "op '%s': %s slot '%s' given %d names%s",
                         op->type, what, slot, n, n > 0 ? " but a NULL array" : "");
    /* an op in a block was checked whole at insertion: keep what kernels rely on */
    const oar_op_def_t *def = op->block ? oar_registry_op(op->type) : NULL;
    const oar_slot_def_t *sd = def ? (input ? oar_registry_input_slot(def, slot) : oar_registry_output_slot(def, slot)) : NULL;
    if (sd && !(sd->flags & OAR_SLOT_DISPENSABLE)) {
        bool empty = n == 0;
        size_t tl = strlen(op->type);
        bool grad_op = tl > 5 && strcmp(op->type + tl - 5, "_grad") == 0;
        for (int j = 0; !input && !grad_op && j < n && !empty; j++)
            empty = names[j] && strcmp(names[j], OAR_EMPTY_VAR) == 0;
        if (empty)
            return oar_error(OAR_ERR_INVALID, "op '%s' (block %d): %s slot '%s' is required; it cannot be left empty",
                             op->type, op->block->idx, what, slot);
    }
    int rc = OAR_OK;
    char **args = copy_names(names, n, op, slot, &rc);
    if (!args) return rc;
    oar_op_slot_t **slots = input ? &op->inputs : &op->outputs;
    int *nslots = input ? &op->ninputs : &op->noutputs;
    oar_op_slot_t *s = (oar_op_slot_t *)find_slot(*slots, *nslots, slot);
    if (s) {
        for (int j = 0; j < s->nargs; j++) free(s->args[j]);
        free(s->args);
    } else {
        char *name = oar_xstrdup(slot);
        oar_op_slot_t *grown = name ? oar_xrealloc(*slots, (size_t)(*nslots + 1) * sizeof **slots) : NULL;
        if (!grown) {
            free(name);
            for (int j = 0; j < n; j++) free(args[j]);
            free(args);
            return OAR_ERR_NOMEM;
        }
        *slots = grown;
        s = &grown[(*nslots)++];
        s->slot = name;
    }
    s->args = args;
    s->nargs = n;
    oar_desc_touch_block(op->block);
    return OAR_OK;
}

int oar_op_desc_set_input(oar_op_desc_t *op, const char *slot, const char *const *names, int n)
{
    return set_slot(op, true, slot, names, n);
}

int oar_op_desc_set_output(oar_op_desc_t *op, const char *slot, const char *const *names, int n)
{
    return set_slot(op, false, slot, names, n);
}

int oar_op_desc_num_inputs(const oar_op_desc_t *op) { return op ? op->ninputs : 0; }
int oar_op_desc_num_outputs(const oar_op_desc_t *op) { return op ? op->noutputs : 0; }

const char *oar_op_desc_input_slot(const oar_op_desc_t *op, int i)
{
    return op && i >= 0 && i < op->ninputs ? op->inputs[i].slot : NULL;
}

const char *oar_op_desc_output_slot(const oar_op_desc_t *op, int i)
{
    return op && i >= 0 && i < op->noutputs ? op->outputs[i].slot : NULL;
}

int oar_op_desc_input_count(const oar_op_desc_t *op, const char *slot)
{
    const oar_op_slot_t *s = oar_op_find_input(op, slot);
    return s ? s->nargs : -1;
}

int oar_op_desc_output_count(const oar_op_desc_t *op, const char *slot)
{
    const oar_op_slot_t *s = oar_op_find_output(op, slot);
    return s ? s->nargs : -1;
}

const char *oar_op_desc_input_arg(const oar_op_desc_t *op, const char *slot, int i)
{
    const oar_op_slot_t *s = oar_op_find_input(op, slot);
    return s && i >= 0 && i < s->nargs ? s->args[i] : NULL;
}

const char *oar_op_desc_output_arg(const oar_op_desc_t *op, const char *slot, int i)
{
    const oar_op_slot_t *s = oar_op_find_output(op, slot);
    return s && i >= 0 && i < s->nargs ? s->args[i] : NULL;
}

/* Renames every occurrence; copies are made first so a failed allocation
 * leaves the op as it was. */
static int rename_args(oar_op_desc_t *op, bool input, const char *from, const char *to)
{
    const char *what = input ? "input" : "output";
    if (!op) return oar_error(OAR_ERR_INVALID, "oar_op_desc_rename_%s: NULL op", what);
    if (!from || !to || !*to)
        return oar_error(OAR_ERR_INVALID, "op '%s': rename_%s needs two non-empty names", op->type, what);
    oar_op_slot_t *slots = input ? op->inputs : op->outputs;
    int nslots = input ? op->ninputs : op->noutputs, count = 0;
    for (int i = 0; i < nslots; i++)
        for (int j = 0; j < slots[i].nargs; j++) count += strcmp(slots[i].args[j], from) == 0;
    if (count == 0) return OAR_OK;
    char **fresh = oar_xcalloc((size_t)count, sizeof *fresh);
    if (!fresh) return OAR_ERR_NOMEM;
    for (int k = 0; k < count; k++) {
        if (!(fresh[k] = oar_xstrdup(to))) {
            oar_strings_free(fresh, k);
            return OAR_ERR_NOMEM;
        }
    }
    int k = 0;
    for (int i = 0; i < nslots; i++)
        for (int j = 0; j < slots[i].nargs; j++)
            if (strcmp(slots[i].args[j], from) == 0) {
                free(slots[i].args[j]);
                slots[i].args[j] = fresh[k++];
            }
    free(fresh);
    oar_desc_touch_block(op->block);
    return OAR_OK;
}

int oar_op_desc_rename_input(oar_op_desc_t *op, const char *from, const char *to)
{
    return rename_args(op, true, from, to);
}

int oar_op_desc_rename_output(oar_op_desc_t *op, const char *from, const char *to)
{
    return rename_args(op, false, from, to);
}

static int copy_slots(oar_op_slot_t **dst, int *ndst, const oar_op_slot_t *src, int n)
{
    if (n == 0) return OAR_OK;
    *dst = oar_xcalloc((size_t)n, sizeof **dst);
    if (!*dst) return OAR_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        oar_op_slot_t *d = &(*dst)[i];
        *ndst = i + 1;   /* counts partially built slots so op_free releases them */
        if (!(d->slot = oar_xstrdup(src[i].slot))) return OAR_ERR_NOMEM;
        if (!(d->args = oar_xcalloc((size_t)(src[i].nargs > 0 ? src[i].nargs : 1), sizeof *d->args)))
            return OAR_ERR_NOMEM;
        for (int j = 0; j < src[i].nargs; j++) {
            if (!(d->args[j] = oar_xstrdup(src[i].args[j]))) return OAR_ERR_NOMEM;
            d->nargs = j + 1;
        }
    }
    return OAR_OK;
}

int oar_op_desc_copy(const oar_op_desc_t *src, oar_op_desc_t **out)
{
    if (!src || !out) return oar_error(OAR_ERR_INVALID, "oar_op_desc_copy: NULL %s", src ? "out" : "op");
    oar_op_desc_t *op;
    OAR_TRY(oar_op_desc_new(src->type, &op));
    int rc = copy_slots(&op->inputs, &op->ninputs, src->inputs, src->ninputs);
    if (rc == OAR_OK) rc = copy_slots(&op->outputs, &op->noutputs, src->outputs, src->noutputs);
    if (rc == OAR_OK) rc = oar_op_desc_copy_attrs(op, src);
    if (rc != OAR_OK) { op_free(op); return rc; }
    op->is_target = src->is_target;
    *out = op;
    return OAR_OK;
}

/* "op 'mul' (block 0, #3, created at train.lua:12)" */
const char *oar_op_context(const oar_op_desc_t *op, char *buf, size_t n)
{
    if (!buf || n == 0) return buf;
    if (!op) { snprintf(buf, n, "op (null)"); return buf; }
    const char *where = NULL;
    const oar_attr_t *cs = oar_op_find_attr(op, "op_callstack");
    if (cs && cs->type == OAR_ATTR_STRINGS && cs->n > 0 && ((char **)cs->list)[0][0])
        where = ((char **)cs->list)[0];
    const oar_block_t *b = op->block;
    char pos[64];
    if (b) {
        int index = -1;
        for (int i = 0; i < b->nops; i++)
            if (b->ops[i] == op) { index = i; break; }
        snprintf(pos, sizeof pos, "block %d, #%d", b->idx, index);
    } else {
        snprintf(pos, sizeof pos, "not in a block");
    }
    if (where) snprintf(buf, n, "op '%s' (%s, created at %s)", op->type, pos, where);
    else snprintf(buf, n, "op '%s' (%s)", op->type, pos);
    return buf;
}

/* ---- clone ------------------------------------------------------------------------- */

static int clone_block(oar_program_t *p, const oar_block_t *src)
{
    oar_block_t *b;
    OAR_TRY(add_block(p, src->parent_idx, &b));
    b->idx = src->idx;
    b->forward_block_idx = src->forward_block_idx;
    for (int i = 0; i < src->nvars; i++) {
        oar_var_desc_t *v;
        OAR_TRY(oar_block_var_new(b, src->vars[i]->name, &v));
        OAR_TRY(oar_var_desc_copy_from(v, src->vars[i]));
    }
    for (int i = 0; i < src->nops; i++) {
        oar_op_desc_t *op;
        OAR_TRY(oar_op_desc_copy(src->ops[i], &op));
        int rc = oar_block_insert_op_raw(b, -1, op);
        if (rc != OAR_OK) { op_free(op); return rc; }
    }
    return OAR_OK;
}

int oar_program_clone(const oar_program_t *src, oar_program_t **out)
{
    if (!src || !out) return oar_error(OAR_ERR_INVALID, "oar_program_clone: NULL %s", src ? "out" : "program");
    oar_program_t *p;
    OAR_TRY(program_alloc(&p));
    for (int i = 0; i < src->nblocks; i++) {
        int rc = clone_block(p, src->blocks[i]);
        if (rc != OAR_OK) { oar_program_free(p); return rc; }
    }
    p->version = src->version;
    p->fluid_version = src->fluid_version;
    *out = p;
    return OAR_OK;
}

/* ---- work bounds (not serialized) ----------------------------------------- */
int oar_program_set_max_while_iterations(oar_program_t *p, int64_t n)
{
    if (!p) return oar_error(OAR_ERR_INVALID, "oar_program_set_max_while_iterations: NULL program");
    if (n < 0) return oar_error(OAR_ERR_INVALID, "max_while_iterations %lld is negative", (long long)n);
    p->max_while_iterations = n;
    return OAR_OK;
}

int64_t oar_program_max_while_iterations(const oar_program_t *p) { return p ? p->max_while_iterations : 0; }
