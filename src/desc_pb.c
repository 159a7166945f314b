/* desc_pb.c — ProgramDesc protobuf bytes <-> in-memory descs (protobuf-c).
 *
 * The bytes follow Fluid's framework.proto. Two representation choices:
 *  - A tensor var's shape is written as its dims; a shape never set (ndim -1)
 *    is written as no dims, like Fluid writes an unset shape. On parse, a
 *    tensor desc with no dims therefore becomes ndim 0: Fluid 1.x does not
 *    tell a rank-0 shape from an unset one, and neither can these bytes.
 *  - A var of a tensor kind whose bytes carry no tensor desc at all (Fluid
 *    writes none until a shape or dtype is set) keeps the defaults of a new
 *    var desc: FP32, unknown shape.
 * Parsing converts first and validates the whole program afterwards, so the
 * conversion only guards what it needs for memory safety. */
#include "desc.h"
#include "desc_check.h"
#include "error.h"
#include "framework.pb-c.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Paddle__Framework__Proto__ProgramDesc PbProgram;
typedef Paddle__Framework__Proto__BlockDesc PbBlock;
typedef Paddle__Framework__Proto__VarDesc PbVar;
typedef Paddle__Framework__Proto__VarType PbVarType;
typedef Paddle__Framework__Proto__VarType__TensorDesc PbTensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorDesc PbLoDTensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorArrayDesc PbTensorArray;
typedef Paddle__Framework__Proto__OpDesc PbOp;
typedef Paddle__Framework__Proto__OpDesc__Var PbSlot;
typedef Paddle__Framework__Proto__OpDesc__Attr PbAttr;
typedef Paddle__Framework__Proto__Version PbVersion;

/* ---- serialize ----------------------------------------------------------------- */

/* Every temporary message struct is recorded here and freed at once; strings
 * and most arrays are borrowed from the descs. */
typedef struct arena {
    void **ptrs; int n, cap;
    int rc;                    /* why a builder returned NULL */
} arena_t;

static void *aalloc(arena_t *a, size_t count, size_t size)
{
    void *p = NULL;
    if (oar_grow((void **)&a->ptrs, &a->cap, a->n + 1, sizeof *a->ptrs) == OAR_OK)
        p = oar_xcalloc(count ? count : 1, size);
    if (p) a->ptrs[a->n++] = p;
    else a->rc = OAR_ERR_NOMEM;
    return p;
}

static void arena_free(arena_t *a)
{
    for (int i = 0; i < a->n; i++) free(a->ptrs[i]);
    free(a->ptrs);
}

static PbTensor *tensor_msg(arena_t *ar, const oar_var_desc_t *v, const oar_block_t *b)
{
    if (!oar_desc_dtype_valid(v->dtype)) {
        ar->rc = oar_error(OAR_ERR_INVALID, "serialize: var '%s' in block %d has no valid dtype (%d)",
                           v->name, b->idx, v->dtype);
        return NULL;
    }
    PbTensor *t = aalloc(ar, 1, sizeof *t);
    if (!t) return NULL;
    paddle__framework__proto__var_type__tensor_desc__init(t);
    t->data_type = (Paddle__Framework__Proto__VarType__Type)v->dtype;
    if (v->ndim > 0) {
        t->n_dims = (size_t)v->ndim;
        t->dims = (int64_t *)v->dims;
    }
    return t;
}

static PbVar *var_msg(arena_t *ar, const oar_var_desc_t *v, const oar_block_t *b)
{
    PbVar *m = aalloc(ar, 1, sizeof *m);
    PbVarType *vt = aalloc(ar, 1, sizeof *vt);
    if (!m || !vt) return NULL;
    paddle__framework__proto__var_desc__init(m);
    paddle__framework__proto__var_type__init(vt);
    m->name = v->name;
    m->type = vt;
    vt->type = (Paddle__Framework__Proto__VarType__Type)v->type;
    if (v->type == OAR_VAR_LOD_TENSOR) {
        PbLoDTensor *lt = aalloc(ar, 1, sizeof *lt);
        if (!lt) return NULL;
        paddle__framework__proto__var_type__lo_dtensor_desc__init(lt);
        if (!(lt->tensor = tensor_msg(ar, v, b))) return NULL;
        lt->has_lod_level = v->lod_level != 0;
        lt->lod_level = v->lod_level;
        vt->lod_tensor = lt;
    } else if (v->type == OAR_VAR_LOD_TENSOR_ARRAY) {
        PbTensorArray *ta = aalloc(ar, 1, sizeof *ta);
        if (!ta) return NULL;
        paddle__framework__proto__var_type__lo_dtensor_array_desc__init(ta);
        if (!(ta->tensor = tensor_msg(ar, v, b))) return NULL;
        ta->has_lod_level = v->lod_level != 0;
        ta->lod_level = v->lod_level;
        vt->tensor_array = ta;
    } else if (v->type == OAR_VAR_SELECTED_ROWS) {
        if (!(vt->selected_rows = tensor_msg(ar, v, b))) return NULL;
    }
    /* Fluid always records persistable; the other flags only when set */
    m->has_persistable = 1;
    m->persistable = v->persistable;
    m->has_need_check_feed = v->need_check_feed;
    m->need_check_feed = v->need_check_feed;
    m->has_stop_gradient = v->stop_gradient;
    m->stop_gradient = v->stop_gradient;
    return m;
}

static PbSlot **slots_msg(arena_t *ar, const oar_op_slot_t *s, int n)
{
    PbSlot **arr = aalloc(ar, (size_t)n, sizeof *arr);
    if (!arr) return NULL;
    for (int i = 0; i < n; i++) {
        PbSlot *m = aalloc(ar, 1, sizeof *m);
        if (!m) return NULL;
        paddle__framework__proto__op_desc__var__init(m);
        m->parameter = s[i].slot;
        m->n_arguments = (size_t)s[i].nargs;
        m->arguments = s[i].args;
        arr[i] = m;
    }
    return arr;
}

static PbAttr *attr_msg(arena_t *ar, const oar_attr_t *a)
{
    PbAttr *m = aalloc(ar, 1, sizeof *m);
    if (!m) return NULL;
    paddle__framework__proto__op_desc__attr__init(m);
    m->name = a->name;
    m->type = (Paddle__Framework__Proto__AttrType)a->type;
    size_t n = (size_t)a->n;
    switch (a->type) {
    case OAR_ATTR_INT: m->has_i = 1; m->i = a->v.i; break;
    case OAR_ATTR_FLOAT: m->has_f = 1; m->f = a->v.f; break;
    case OAR_ATTR_STRING: m->s = a->v.s; break;
    case OAR_ATTR_BOOLEAN: m->has_b = 1; m->b = a->v.b; break;
    case OAR_ATTR_BLOCK: m->has_block_idx = 1; m->block_idx = a->v.block; break;
    case OAR_ATTR_LONG: m->has_l = 1; m->l = a->v.l; break;
    case OAR_ATTR_INTS: m->n_ints = n; m->ints = a->list; break;
    case OAR_ATTR_FLOATS: m->n_floats = n; m->floats = a->list; break;
    case OAR_ATTR_STRINGS: m->n_strings = n; m->strings = a->list; break;
    case OAR_ATTR_BLOCKS: m->n_blocks_idx = n; m->blocks_idx = a->list; break;
    case OAR_ATTR_LONGS: m->n_longs = n; m->longs = a->list; break;
    case OAR_ATTR_BOOLEANS: {
        /* protobuf-c's bool is an int: widen */
        protobuf_c_boolean *bs = aalloc(ar, n, sizeof *bs);
        if (!bs) return NULL;
        for (size_t i = 0; i < n; i++) bs[i] = ((const bool *)a->list)[i];
        m->n_bools = n;
        m->bools = bs;
        break;
    }
    default:
        ar->rc = oar_error(OAR_ERR_INVALID, "serialize: attr '%s' has unknown type %d", a->name, a->type);
        return NULL;
    }
    return m;
}

static PbOp *op_msg(arena_t *ar, const oar_op_desc_t *op)
{
    PbOp *m = aalloc(ar, 1, sizeof *m);
    if (!m) return NULL;
    paddle__framework__proto__op_desc__init(m);
    m->type = op->type;
    if (!(m->inputs = slots_msg(ar, op->inputs, op->ninputs))) return NULL;
    m->n_inputs = (size_t)op->ninputs;
    if (!(m->outputs = slots_msg(ar, op->outputs, op->noutputs))) return NULL;
    m->n_outputs = (size_t)op->noutputs;
    if (!(m->attrs = aalloc(ar, (size_t)op->nattrs, sizeof *m->attrs))) return NULL;
    for (int i = 0; i < op->nattrs; i++)
        if (!(m->attrs[i] = attr_msg(ar, &op->attrs[i]))) return NULL;
    m->n_attrs = (size_t)op->nattrs;
    m->has_is_target = op->is_target;
    m->is_target = op->is_target;
    return m;
}

static PbBlock *block_msg(arena_t *ar, const oar_block_t *b)
{
    PbBlock *m = aalloc(ar, 1, sizeof *m);
    if (!m) return NULL;
    paddle__framework__proto__block_desc__init(m);
    m->idx = b->idx;
    m->parent_idx = b->parent_idx;
    m->has_forward_block_idx = b->forward_block_idx != -1;
    m->forward_block_idx = b->forward_block_idx;
    if (!(m->vars = aalloc(ar, (size_t)b->nvars, sizeof *m->vars))) return NULL;
    for (int i = 0; i < b->nvars; i++)
        if (!(m->vars[i] = var_msg(ar, b->vars[i], b))) return NULL;
    m->n_vars = (size_t)b->nvars;
    if (!(m->ops = aalloc(ar, (size_t)b->nops, sizeof *m->ops))) return NULL;
    for (int i = 0; i < b->nops; i++)
        if (!(m->ops[i] = op_msg(ar, b->ops[i]))) return NULL;
    m->n_ops = (size_t)b->nops;
    return m;
}

int oar_program_serialize(const oar_program_t *p, void **bytes, size_t *n)
{
    if (!p || !bytes || !n)
        return oar_error(OAR_ERR_INVALID, "oar_program_serialize: NULL %s", !p ? "program" : "output");
    arena_t ar = {0};
    int rc;
    PbProgram m = PADDLE__FRAMEWORK__PROTO__PROGRAM_DESC__INIT;
    PbVersion ver = PADDLE__FRAMEWORK__PROTO__VERSION__INIT;
    ver.has_version = 1;
    ver.version = p->fluid_version;
    m.version = &ver;
    m.n_blocks = (size_t)p->nblocks;
    if (!(m.blocks = aalloc(&ar, (size_t)p->nblocks, sizeof *m.blocks))) { rc = ar.rc; goto done; }
    for (int i = 0; i < p->nblocks; i++)
        if (!(m.blocks[i] = block_msg(&ar, p->blocks[i]))) { rc = ar.rc; goto done; }
    size_t size = protobuf_c_message_get_packed_size(&m.base);
    /* plain malloc: the caller releases the buffer with oar_free */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        rc = oar_error(OAR_ERR_NOMEM, "serialize: out of memory for %zu bytes", size);
        goto done;
    }
    size_t written = protobuf_c_message_pack(&m.base, buf);
    if (written != size) {
        free(buf);
        rc = oar_error(OAR_ERR_INVALID, "serialize: packed %zu bytes, expected %zu", written, size);
        goto done;
    }
    *bytes = buf;
    *n = size;
    rc = OAR_OK;
done:
    arena_free(&ar);
    return rc;
}

/* ---- parse ---------------------------------------------------------------------- */

/* Re-raises a conversion failure as OAR_ERR_FORMAT with where it happened;
 * allocation failures and unsupported kinds keep their status. */
static int malformed(int rc, const char *where)
{
    if (rc == OAR_ERR_NOMEM) return rc;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", oar_last_error());
    return oar_error(OAR_ERR_FORMAT, "malformed ProgramDesc: %s%s%s", where ? where : "",
                     where ? ": " : "", msg);
}

static int tensor_from(oar_var_desc_t *v, const PbTensor *t, const char *where)
{
    if (!t) return OAR_OK;
    if (t->n_dims > OAR_MAX_DIMS)
        return oar_error(OAR_ERR_FORMAT, "malformed ProgramDesc: %s: var '%s' has rank %zu (at most %d)",
                         where, v->name, t->n_dims, OAR_MAX_DIMS);
    v->dtype = (int)t->data_type;
    v->ndim = (int)t->n_dims;
    if (t->n_dims) memcpy(v->dims, t->dims, t->n_dims * sizeof *t->dims);
    /* Paddle's compile-time products of unknown dims (instance_norm's
     * SavedMean is N * C = -3) are unknown dims */
    for (size_t i = 0; i < t->n_dims; i++)
        if (v->dims[i] < -1) v->dims[i] = -1;
    return OAR_OK;
}

static int var_from(oar_block_t *b, const PbVar *m, const char *where)
{
    oar_var_desc_t *v;
    int rc = oar_block_var_new(b, m->name, &v);
    if (rc != OAR_OK) return malformed(rc, NULL);   /* the message names block and var */
    const PbVarType *vt = m->type;
    int t = (int)vt->type;
    if (!oar_desc_var_type_valid(t)) {
        bool known_kind = t == 14 || t == 15 || t == 16 || t == 18;   /* PLACE_LIST .. TUPLE */
        return oar_error(known_kind ? OAR_ERR_UNSUPPORTED : OAR_ERR_FORMAT,
                         "%s ProgramDesc: %s: var '%s' has type %s (%d), %s",
                         known_kind ? "unsupported" : "malformed", where, m->name, oar_desc_type_name(t), t,
                         known_kind ? "which oar does not support" : "not a variable kind");
    }
    v->type = t;
    if (t == OAR_VAR_LOD_TENSOR && vt->lod_tensor) {
        OAR_TRY(tensor_from(v, vt->lod_tensor->tensor, where));
        v->lod_level = vt->lod_tensor->lod_level;
    } else if (t == OAR_VAR_LOD_TENSOR_ARRAY && vt->tensor_array) {
        OAR_TRY(tensor_from(v, vt->tensor_array->tensor, where));
        v->lod_level = vt->tensor_array->lod_level;
    } else if (t == OAR_VAR_SELECTED_ROWS) {
        OAR_TRY(tensor_from(v, vt->selected_rows, where));
    }
    v->persistable = m->persistable;
    v->need_check_feed = m->need_check_feed;
    v->stop_gradient = m->stop_gradient;
    return OAR_OK;
}

static int set_attr_from(oar_op_desc_t *op, const PbAttr *a)
{
    switch ((int)a->type) {
    case OAR_ATTR_INT: return oar_op_desc_set_attr_int(op, a->name, a->i);
    case OAR_ATTR_FLOAT: return oar_op_desc_set_attr_float(op, a->name, a->f);
    case OAR_ATTR_STRING: return oar_op_desc_set_attr_string(op, a->name, a->s ? a->s : "");
    case OAR_ATTR_BOOLEAN: return oar_op_desc_set_attr_bool(op, a->name, a->b);
    case OAR_ATTR_BLOCK: return oar_op_desc_set_attr_block(op, a->name, a->block_idx);
    case OAR_ATTR_LONG: return oar_op_desc_set_attr_long(op, a->name, a->l);
    case OAR_ATTR_INTS: return oar_op_desc_set_attr_ints(op, a->name, a->ints, (int)a->n_ints);
    case OAR_ATTR_FLOATS: return oar_op_desc_set_attr_floats(op, a->name, a->floats, (int)a->n_floats);
    case OAR_ATTR_LONGS: return oar_op_desc_set_attr_longs(op, a->name, a->longs, (int)a->n_longs);
    case OAR_ATTR_BLOCKS:
        return oar_op_desc_set_attr_blocks(op, a->name, a->blocks_idx, (int)a->n_blocks_idx);
    case OAR_ATTR_STRINGS:
        return oar_op_desc_set_attr_strings(op, a->name, (const char *const *)a->strings,
                                            (int)a->n_strings);
    case OAR_ATTR_BOOLEANS: {
        bool *bs = oar_xcalloc(a->n_bools ? a->n_bools : 1, sizeof *bs);
        if (!bs) return OAR_ERR_NOMEM;
        for (size_t i = 0; i < a->n_bools; i++) bs[i] = a->bools[i] != 0;
        int rc = oar_op_desc_set_attr_bools(op, a->name, bs, (int)a->n_bools);
        free(bs);
        return rc;
    }
    /* Paddle 2.x/3.x list types: Paddle writes them empty as defaults
     * (assign_value's fp64_values); an empty one carries nothing and is
     * left out, one with values is refused, oar cannot store it */
    case 12: if (a->n_float64s == 0) return OAR_OK; break;                      /* FLOAT64S */
    case 14: if (a->n_vars_name == 0) return OAR_OK; break;                     /* VARS */
    case 17: if (a->n_scalars == 0) return OAR_OK; break;                       /* SCALARS */
    default: break;
    }
    static const char *const later[] = {"FLOAT64S", "VAR", "VARS", "FLOAT64", "SCALAR", "SCALARS"};
    if (a->type >= 12 && a->type <= 17)
        return oar_error(OAR_ERR_UNSUPPORTED, "op '%s': attr '%s' is a Paddle %s attribute with a value; oar "
                         "does not support that attribute type", op->type, a->name, later[a->type - 12]);
    return oar_error(OAR_ERR_FORMAT, "op '%s': attr '%s' has unknown type %d", op->type, a->name, (int)a->type);
}

static int op_fill(oar_op_desc_t *op, const PbOp *m)
{
    for (int pass = 0; pass < 2; pass++) {
        PbSlot **slots = pass ? m->outputs : m->inputs;
        size_t n = pass ? m->n_outputs : m->n_inputs;
        for (size_t i = 0; i < n; i++) {
            const char *slot = slots[i]->parameter;
            if ((pass ? oar_op_find_output(op, slot) : oar_op_find_input(op, slot)))
                return oar_error(OAR_ERR_FORMAT, "op '%s': %s slot '%s' appears twice", op->type,
                                 pass ? "output" : "input", slot);
            if (slots[i]->n_arguments > INT_MAX)
                return oar_error(OAR_ERR_FORMAT, "op '%s': slot '%s' has too many arguments", op->type, slot);
            const char *const *args = (const char *const *)slots[i]->arguments;
            int na = (int)slots[i]->n_arguments;
            OAR_TRY(pass ? oar_op_desc_set_output(op, slot, args, na) : oar_op_desc_set_input(op, slot, args, na));
        }
    }
    /* an attr given twice: the later one holds, as in Paddle's OpDesc (which
     * reads attrs into a map); Paddle 2.6 itself writes the extra attrs
     * (use_mkldnn, mkldnn_data_type, ...) twice for some ops in sub-blocks */
    for (size_t i = 0; i < m->n_attrs; i++) OAR_TRY(set_attr_from(op, m->attrs[i]));
    op->is_target = m->is_target;
    return OAR_OK;
}

static int op_from(oar_block_t *b, const PbOp *m, const char *where)
{
    oar_op_desc_t *op;
    int rc = oar_op_desc_new(m->type, &op);
    if (rc != OAR_OK) return malformed(rc, where);
    rc = op_fill(op, m);
    if (rc == OAR_OK) rc = oar_block_append_op_raw(b, op);
    if (rc != OAR_OK) {
        oar_op_desc_free(op);
        return malformed(rc, where);   /* the message names the op type */
    }
    return OAR_OK;
}

static int block_from(oar_program_t *p, int i, const PbBlock *m)
{
    oar_block_t *b;
    if (i == 0) b = oar_program_block(p, 0);
    else OAR_TRY(oar_program_append_block(p, 0, &b));
    /* raw values: oar_program_validate judges them once every block exists */
    b->idx = m->idx;
    b->parent_idx = m->parent_idx;
    b->forward_block_idx = m->has_forward_block_idx ? m->forward_block_idx : -1;
    if (m->n_vars > INT_MAX || m->n_ops > INT_MAX)
        return oar_error(OAR_ERR_FORMAT, "malformed ProgramDesc: block %d has too many vars or ops", i);
    char where[64];
    for (size_t k = 0; k < m->n_vars; k++) {
        snprintf(where, sizeof where, "block %d, var #%zu", i, k);
        OAR_TRY(var_from(b, m->vars[k], where));
    }
    for (size_t k = 0; k < m->n_ops; k++) {
        snprintf(where, sizeof where, "block %d, op #%zu", i, k);
        OAR_TRY(op_from(b, m->ops[k], where));
    }
    return OAR_OK;
}

int oar_program_parse(const void *bytes, size_t n, oar_program_t **out)
{
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_program_parse: NULL out pointer");
    if (!bytes && n > 0) return oar_error(OAR_ERR_INVALID, "oar_program_parse: NULL bytes with length %zu", n);
    static const uint8_t empty[1];
    PbProgram *m = paddle__framework__proto__program_desc__unpack(NULL, n, bytes ? bytes : empty);
    if (!m)
        return oar_error(OAR_ERR_FORMAT,
                         "malformed ProgramDesc: %zu bytes do not decode as a ProgramDesc "
                         "(truncated, corrupt, or missing a required field)", n);
    int rc;
    oar_program_t *p = NULL;
    if (m->n_blocks == 0) {
        rc = oar_error(OAR_ERR_FORMAT, "malformed ProgramDesc: no blocks (a program has at least block 0)");
        goto done;
    }
    if (m->n_blocks > INT_MAX) {
        rc = oar_error(OAR_ERR_FORMAT, "malformed ProgramDesc: %zu blocks", m->n_blocks);
        goto done;
    }
    if ((rc = oar_program_new(&p)) != OAR_OK) goto done;
    for (size_t i = 0; i < m->n_blocks && rc == OAR_OK; i++) rc = block_from(p, (int)i, m->blocks[i]);
    if (rc != OAR_OK) goto done;
    p->fluid_version = m->version && m->version->has_version ? m->version->version : 0;
    rc = oar_program_normalize(p);
    if (rc == OAR_OK) rc = oar_program_validate(p);
done:
    paddle__framework__proto__program_desc__free_unpacked(m, NULL);
    if (rc != OAR_OK) {
        oar_program_free(p);
        return rc;
    }
    *out = p;
    return OAR_OK;
}
