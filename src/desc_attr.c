/* desc_attr.c — op desc attributes: typed setters and getters for the public
 * API, and the never-failing readers kernels and inference use.
 *
 * An op keeps its attrs as a list in insertion order; setting an existing
 * name replaces its value (and may change its type) in place. */
#include "desc.h"
#include "desc_check.h"
#include "error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const attr_type_names[] = {
    "INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS", "BOOLEAN",
    "BOOLEANS", "BLOCK", "LONG", "BLOCKS", "LONGS"};

static const char *type_name(int t)
{
    return t >= 0 && t <= OAR_ATTR_LONGS ? attr_type_names[t] : "unknown";
}

static size_t list_elem_size(int type)
{
    switch (type) {
    case OAR_ATTR_INTS: case OAR_ATTR_BLOCKS: return sizeof(int32_t);
    case OAR_ATTR_LONGS: return sizeof(int64_t);
    case OAR_ATTR_FLOATS: return sizeof(float);
    case OAR_ATTR_BOOLEANS: return sizeof(bool);
    case OAR_ATTR_STRINGS: return sizeof(char *);
    default: return 0;
    }
}

void oar_attr_value_free(oar_attr_t *a)
{
    if (a->type == OAR_ATTR_STRING) free(a->v.s);
    if (a->type == OAR_ATTR_STRINGS)
        for (int i = 0; i < a->n; i++) free(((char **)a->list)[i]);
    free(a->list);
    a->list = NULL;
    a->n = 0;
    a->v.s = NULL;
}

static int attr_index(const oar_op_desc_t *op, const char *name)
{
    if (!op || !name) return -1;
    for (int i = 0; i < op->nattrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) return i;
    return -1;
}

const oar_attr_t *oar_op_find_attr(const oar_op_desc_t *op, const char *name)
{
    int i = attr_index(op, name);
    return i >= 0 ? &op->attrs[i] : NULL;
}

/* Deep copy of a value (not the name) into *dst. */
static int value_copy(oar_attr_t *dst, const oar_attr_t *src)
{
    *dst = (oar_attr_t){0};
    dst->type = src->type;
    dst->v = src->v;
    if (src->type == OAR_ATTR_STRING) {
        dst->v.s = oar_xstrdup(src->v.s ? src->v.s : "");
        return dst->v.s ? OAR_OK : OAR_ERR_NOMEM;
    }
    size_t es = list_elem_size(src->type);
    if (es == 0 || src->n == 0) return OAR_OK;
    dst->list = oar_xcalloc((size_t)src->n, es);
    if (!dst->list) return OAR_ERR_NOMEM;
    if (src->type != OAR_ATTR_STRINGS) {
        memcpy(dst->list, src->list, (size_t)src->n * es);
        dst->n = src->n;
        return OAR_OK;
    }
    for (int i = 0; i < src->n; i++) {
        char *s = oar_xstrdup(((char **)src->list)[i]);
        if (!s) { oar_attr_value_free(dst); return OAR_ERR_NOMEM; }
        ((char **)dst->list)[i] = s;
        dst->n = i + 1;
    }
    return OAR_OK;
}

/* Stores a freshly built value under `name` (replacing any old value), taking
 * ownership of val's storage in every case. */
static int commit(oar_op_desc_t *op, const char *name, oar_attr_t *val)
{
    /* an op in a block was checked whole at insertion: keep it valid */
    int rc = oar_attr_check_attached(op, name, val);
    if (rc != OAR_OK) {
        oar_attr_value_free(val);
        return rc;
    }
    int i = attr_index(op, name);
    if (i >= 0) {
        oar_attr_value_free(&op->attrs[i]);
        val->name = op->attrs[i].name;
        op->attrs[i] = *val;
    } else {
        char *nm = oar_xstrdup(name);
        oar_attr_t *grown = nm ? oar_xrealloc(op->attrs, (size_t)(op->nattrs + 1) * sizeof *grown) : NULL;
        if (!grown) {
            free(nm);
            oar_attr_value_free(val);
            return OAR_ERR_NOMEM;
        }
        op->attrs = grown;
        val->name = nm;
        op->attrs[op->nattrs++] = *val;
    }
    oar_desc_touch_block(op->block);
    return OAR_OK;
}

static int check_target(const oar_op_desc_t *op, const char *name, const char *fn)
{
    if (!op) return oar_error(OAR_ERR_INVALID, "%s: NULL op", fn);
    if (!name || !*name)
        return oar_error(OAR_ERR_INVALID, "op '%s': %s needs a non-empty attr name", op->type, fn);
    return OAR_OK;
}

static int set_scalar(oar_op_desc_t *op, const char *name, int type, oar_attr_t val, const char *fn)
{
    OAR_TRY(check_target(op, name, fn));
    val.type = type;
    val.list = NULL;
    val.n = 0;
    return commit(op, name, &val);
}

int oar_op_desc_set_attr_int(oar_op_desc_t *op, const char *name, int32_t v)
{
    return set_scalar(op, name, OAR_ATTR_INT, (oar_attr_t){.v.i = v}, "set_attr_int");
}

int oar_op_desc_set_attr_long(oar_op_desc_t *op, const char *name, int64_t v)
{
    return set_scalar(op, name, OAR_ATTR_LONG, (oar_attr_t){.v.l = v}, "set_attr_long");
}

int oar_op_desc_set_attr_float(oar_op_desc_t *op, const char *name, float v)
{
    return set_scalar(op, name, OAR_ATTR_FLOAT, (oar_attr_t){.v.f = v}, "set_attr_float");
}

int oar_op_desc_set_attr_bool(oar_op_desc_t *op, const char *name, bool v)
{
    return set_scalar(op, name, OAR_ATTR_BOOLEAN, (oar_attr_t){.v.b = v}, "set_attr_bool");
}

int oar_op_desc_set_attr_block(oar_op_desc_t *op, const char *name, int32_t block_idx)
{
    OAR_TRY(check_target(op, name, "set_attr_block"));
    /* -1 is the "no block yet" default op definitions use for block attrs */
    if (block_idx < -1)
        return oar_error(OAR_ERR_RANGE, "op '%s': attr '%s' names block %d (must be >= -1)",
                         op->type, name, block_idx);
    return set_scalar(op, name, OAR_ATTR_BLOCK, (oar_attr_t){.v.block = block_idx}, "set_attr_block");
}

int oar_op_desc_set_attr_string(oar_op_desc_t *op, const char *name, const char *v)
{
    OAR_TRY(check_target(op, name, "set_attr_string"));
    if (!v) return oar_error(OAR_ERR_INVALID, "op '%s': attr '%s' set to a NULL string", op->type, name);
    oar_attr_t val = {.type = OAR_ATTR_STRING};
    if (!(val.v.s = oar_xstrdup(v))) return OAR_ERR_NOMEM;
    return commit(op, name, &val);
}

static int set_list(oar_op_desc_t *op, const char *name, int type, const void *v, int n, const char *fn)
{
    OAR_TRY(check_target(op, name, fn));
    if (n < 0 || (n > 0 && !v))
        return oar_error(OAR_ERR_INVALID, "op '%s': attr '%s' given %d values%s",
                         op->type, name, n, n > 0 ? " but a NULL array" : "");
    oar_attr_t src = {.type = type, .list = (void *)v, .n = n}, val;
    if (type == OAR_ATTR_STRINGS)
        for (int i = 0; i < n; i++)
            if (!((char *const *)v)[i])
                return oar_error(OAR_ERR_INVALID, "op '%s': attr '%s' string %d is NULL", op->type, name, i);
    if (type == OAR_ATTR_BLOCKS)
        for (int i = 0; i < n; i++)
            if (((const int32_t *)v)[i] < 0)
                return oar_error(OAR_ERR_RANGE, "op '%s': attr '%s' names block %d (must be >= 0)",
                                 op->type, name, ((const int32_t *)v)[i]);
    OAR_TRY(value_copy(&val, &src));
    return commit(op, name, &val);
}

int oar_op_desc_set_attr_ints(oar_op_desc_t *op, const char *name, const int32_t *v, int n)
{
    return set_list(op, name, OAR_ATTR_INTS, v, n, "set_attr_ints");
}

int oar_op_desc_set_attr_longs(oar_op_desc_t *op, const char *name, const int64_t *v, int n)
{
    return set_list(op, name, OAR_ATTR_LONGS, v, n, "set_attr_longs");
}

int oar_op_desc_set_attr_floats(oar_op_desc_t *op, const char *name, const float *v, int n)
{
    return set_list(op, name, OAR_ATTR_FLOATS, v, n, "set_attr_floats");
}

int oar_op_desc_set_attr_bools(oar_op_desc_t *op, const char *name, const bool *v, int n)
{
    return set_list(op, name, OAR_ATTR_BOOLEANS, v, n, "set_attr_bools");
}

int oar_op_desc_set_attr_strings(oar_op_desc_t *op, const char *name, const char *const *v, int n)
{
    return set_list(op, name, OAR_ATTR_STRINGS, v, n, "set_attr_strings");
}

int oar_op_desc_set_attr_blocks(oar_op_desc_t *op, const char *name, const int32_t *v, int n)
{
    return set_list(op, name, OAR_ATTR_BLOCKS, v, n, "set_attr_blocks");
}

int oar_op_desc_copy_attrs(oar_op_desc_t *dst, const oar_op_desc_t *src)
{
    if (!dst || !src) return oar_error(OAR_ERR_INVALID, "oar_op_desc_copy_attrs: NULL op");
    for (int i = 0; i < src->nattrs; i++) {
        oar_attr_t val;
        OAR_TRY(value_copy(&val, &src->attrs[i]));
        OAR_TRY(commit(dst, src->attrs[i].name, &val));
    }
    return OAR_OK;
}

int oar_op_desc_num_attrs(const oar_op_desc_t *op) { return op ? op->nattrs : 0; }

const char *oar_op_desc_attr_name(const oar_op_desc_t *op, int i)
{
    return op && i >= 0 && i < op->nattrs ? op->attrs[i].name : NULL;
}

int oar_op_desc_attr_type(const oar_op_desc_t *op, const char *name)
{
    const oar_attr_t *a = oar_op_find_attr(op, name);
    return a ? a->type : -1;
}

int oar_op_desc_remove_attr(oar_op_desc_t *op, const char *name)
{
    int i = attr_index(op, name);
    if (i < 0)
        return oar_error(OAR_ERR_NOT_FOUND, "op '%s': no attr '%s' to remove",
                         op ? op->type : "(null)", name ? name : "(null)");
    OAR_TRY(oar_attr_check_removal(op, name));
    oar_attr_value_free(&op->attrs[i]);
    free(op->attrs[i].name);
    memmove(op->attrs + i, op->attrs + i + 1, (size_t)(op->nattrs - i - 1) * sizeof *op->attrs);
    op->nattrs--;
    oar_desc_touch_block(op->block);
    return OAR_OK;
}

/* ---- checked getters ---------------------------------------------------------- */

static int lookup(const oar_op_desc_t *op, const char *name, const oar_attr_t **out)
{
    if (!op || !name) return oar_error(OAR_ERR_INVALID, "attr getter: NULL %s", op ? "name" : "op");
    *out = oar_op_find_attr(op, name);
    if (!*out) return oar_error(OAR_ERR_NOT_FOUND, "op '%s' has no attr '%s'", op->type, name);
    return OAR_OK;
}

static int wrong_type(const oar_op_desc_t *op, const oar_attr_t *a, const char *wanted)
{
    return oar_error(OAR_ERR_DTYPE, "op '%s': attr '%s' is %s, not %s",
                     op->type, a->name, type_name(a->type), wanted);
}

/* INT, LONG, BLOCK and integral FLOAT values read as int64; a FLOAT with a
 * fraction is refused rather than silently truncated. */
static int as_int64(const oar_op_desc_t *op, const oar_attr_t *a, int64_t *out, const char *wanted)
{
    switch (a->type) {
    case OAR_ATTR_INT: *out = a->v.i; return OAR_OK;
    case OAR_ATTR_LONG: *out = a->v.l; return OAR_OK;
    case OAR_ATTR_BLOCK: *out = a->v.block; return OAR_OK;
    case OAR_ATTR_FLOAT:
        if (isfinite(a->v.f) && floorf(a->v.f) == a->v.f && fabsf(a->v.f) < 9.2e18f) {
            *out = (int64_t)a->v.f;
            return OAR_OK;
        }
        return oar_error(OAR_ERR_DTYPE, "op '%s': attr '%s' is FLOAT %g, not an integral %s",
                         op->type, a->name, (double)a->v.f, wanted);
    default:
        return wrong_type(op, a, wanted);
    }
}

int oar_op_desc_get_attr_int(const oar_op_desc_t *op, const char *name, int32_t *v)
{
    const oar_attr_t *a;
    int64_t x = 0;
    OAR_TRY(lookup(op, name, &a));
    OAR_TRY(as_int64(op, a, &x, "INT"));
    if (x < INT32_MIN || x > INT32_MAX)
        return oar_error(OAR_ERR_RANGE, "op '%s': attr '%s' value %lld does not fit INT",
                         op->type, name, (long long)x);
    if (v) *v = (int32_t)x;
    return OAR_OK;
}

int oar_op_desc_get_attr_long(const oar_op_desc_t *op, const char *name, int64_t *v)
{
    const oar_attr_t *a;
    int64_t x = 0;
    OAR_TRY(lookup(op, name, &a));
    OAR_TRY(as_int64(op, a, &x, "LONG"));
    if (v) *v = x;
    return OAR_OK;
}

int oar_op_desc_get_attr_float(const oar_op_desc_t *op, const char *name, float *v)
{
    const oar_attr_t *a;
    OAR_TRY(lookup(op, name, &a));
    float x;
    switch (a->type) {
    case OAR_ATTR_FLOAT: x = a->v.f; break;
    case OAR_ATTR_INT: x = (float)a->v.i; break;
    case OAR_ATTR_LONG: x = (float)a->v.l; break;
    default: return wrong_type(op, a, "FLOAT");
    }
    if (v) *v = x;
    return OAR_OK;
}

int oar_op_desc_get_attr_bool(const oar_op_desc_t *op, const char *name, bool *v)
{
    const oar_attr_t *a;
    OAR_TRY(lookup(op, name, &a));
    if (a->type != OAR_ATTR_BOOLEAN) return wrong_type(op, a, "BOOLEAN");
    if (v) *v = a->v.b;
    return OAR_OK;
}

const char *oar_op_desc_get_attr_string(const oar_op_desc_t *op, const char *name)
{
    const oar_attr_t *a;
    if (lookup(op, name, &a) != OAR_OK) return NULL;
    if (a->type != OAR_ATTR_STRING) { wrong_type(op, a, "STRING"); return NULL; }
    return a->v.s;
}

int oar_op_desc_get_attr_list(const oar_op_desc_t *op, const char *name, const void **data, int *n)
{
    const oar_attr_t *a;
    OAR_TRY(lookup(op, name, &a));
    if (list_elem_size(a->type) == 0) return wrong_type(op, a, "a list");
    if (data) *data = a->list;
    if (n) *n = a->n;
    return OAR_OK;
}

const char *oar_op_desc_get_attr_strings_at(const oar_op_desc_t *op, const char *name, int i)
{
    const oar_attr_t *a;
    if (lookup(op, name, &a) != OAR_OK) return NULL;
    if (a->type != OAR_ATTR_STRINGS) { wrong_type(op, a, "STRINGS"); return NULL; }
    if (i < 0 || i >= a->n) {
        oar_error(OAR_ERR_RANGE, "op '%s': attr '%s' has %d strings, no index %d", op->type, name, a->n, i);
        return NULL;
    }
    return ((char **)a->list)[i];
}

/* ---- readers for kernels: never fail ------------------------------------------- */

static double num_of(const oar_attr_t *a)
{
    if (!a) return 0;
    switch (a->type) {
    case OAR_ATTR_INT: return a->v.i;
    case OAR_ATTR_LONG: return (double)a->v.l;
    case OAR_ATTR_FLOAT: return a->v.f;
    case OAR_ATTR_BOOLEAN: return a->v.b;
    case OAR_ATTR_BLOCK: return a->v.block;
    default: return 0;
    }
}

int32_t oar_attr_i(const oar_op_desc_t *op, const char *name)
{
    const oar_attr_t *a = oar_op_find_attr(op, name);
    if (a && a->type == OAR_ATTR_LONG)
        return a->v.l > INT32_MAX ? INT32_MAX : a->v.l < INT32_MIN ? INT32_MIN : (int32_t)a->v.l;
    double x = num_of(a);
    /* saturate instead of the undefined out-of-range float->int conversion */
    if (!(x == x)) return 0;
    if (x >= 2147483647.0) return INT32_MAX;
    if (x <= -2147483648.0) return INT32_MIN;
    return (int32_t)x;
}

int64_t oar_attr_l(const oar_op_desc_t *op, const char *name)
{
    const oar_attr_t *a = oar_op_find_attr(op, name);
    if (a && a->type == OAR_ATTR_LONG) return a->v.l;
    double x = num_of(a);
    if (!(x == x)) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

float oar_attr_f(const oar_op_desc_t *op, const char *name)
{
    return (float)num_of(oar_op_find_attr(op, name));
}

bool oar_attr_b(const oar_op_desc_t *op, const char *name)
{
    return num_of(oar_op_find_attr(op, name)) != 0;
}

const char *oar_attr_s(const oar_op_desc_t *op, const char *name)
{
    const oar_attr_t *a = oar_op_find_attr(op, name);
    return a && a->type == OAR_ATTR_STRING && a->v.s ? a->v.s : "";
}

static const void *list_of(const oar_op_desc_t *op, const char *name, int type, int *n)
{
    const oar_attr_t *a = oar_op_find_attr(op, name);
    bool ok = a && a->type == type;
    if (n) *n = ok ? a->n : 0;
    return ok ? a->list : NULL;
}

const int32_t *oar_attr_ints(const oar_op_desc_t *op, const char *name, int *n)
{
    return list_of(op, name, OAR_ATTR_INTS, n);
}

const int64_t *oar_attr_longs(const oar_op_desc_t *op, const char *name, int *n)
{
    return list_of(op, name, OAR_ATTR_LONGS, n);
}

const float *oar_attr_floats(const oar_op_desc_t *op, const char *name, int *n)
{
    return list_of(op, name, OAR_ATTR_FLOATS, n);
}

int oar_attr_block(const oar_op_desc_t *op, const char *name)
{
    const oar_attr_t *a = oar_op_find_attr(op, name);
    return a && a->type == OAR_ATTR_BLOCK ? a->v.block : -1;
}
