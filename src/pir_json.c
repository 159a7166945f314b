/* pir_json.c — reads Paddle 3's PIR JSON with json-c and builds the Fluid
 * ProgramDesc that pir_json_ops.c fills op by op (see pir_json.h for the
 * schema). Every field is checked: a malformed or hostile document gets an
 * error naming the op and the field, never a crash. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "pir_json.h"

#define MAX_VALUE_ID (1 << 24)
#define JSON_DEPTH 512

/* ---- values ----------------------------------------------------------------- */
pir_value_t *pir_value(pir_ctx_t *c, int64_t id) {
    if (id <= 0 || id >= c->nvals || !c->vals[id].defined) return NULL;
    return &c->vals[id];
}

pir_value_t *pir_in(pir_ctx_t *c, const pir_op_t *op, int i) {
    return i < op->nin ? pir_value(c, op->in[i]) : NULL;
}

static int define_value(pir_ctx_t *c, int64_t id, pir_value_t **out) {
    if (id <= 0 || id > MAX_VALUE_ID)
        return oar_error(OAR_ERR_FORMAT, "value id %lld is out of range", (long long)id);
    if (id >= c->nvals) {
        int64_t n = c->nvals ? c->nvals : 64;
        while (n <= id) n *= 2;
        pir_value_t *v = oar_xrealloc(c->vals, (size_t)n * sizeof *v);
        if (!v) return OAR_ERR_NOMEM;
        memset(v + c->nvals, 0, (size_t)(n - c->nvals) * sizeof *v);
        c->vals = v;
        c->nvals = n;
    }
    if (c->vals[id].defined) return oar_error(OAR_ERR_FORMAT, "value %%%lld is defined twice", (long long)id);
    pir_value_t *v = &c->vals[id];
    v->defined = true;
    v->dtype = -1;
    v->ndim = -1;
    *out = v;
    return OAR_OK;
}

/* ---- json helpers ------------------------------------------------------------- */
static json_object *get(json_object *o, const char *key) {
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v)) return NULL;
    return v;
}

static bool is_array(json_object *o) { return o && json_object_is_type(o, json_type_array); }
static bool is_num(json_object *o) {
    return o && (json_object_is_type(o, json_type_int) || json_object_is_type(o, json_type_double));
}
static const char *str_of(json_object *o) {
    return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

/* the name after the dialect prefix: "0.t_f32" -> "t_f32" */
static const char *short_id(json_object *o) {
    const char *s = str_of(get(o, "#"));
    if (!s) return NULL;
    const char *dot = strchr(s, '.');
    return dot ? dot + 1 : s;
}

int pir_dtype_from_name(const char *s) {
    static const struct { const char *pir, *fluid; int dt; } map[] = {
        {"t_f32", "float32", OAR_FP32}, {"t_f64", "float64", OAR_FP64}, {"t_f16", "float16", OAR_FP16},
        {"t_i32", "int32", OAR_INT32}, {"t_i64", "int64", OAR_INT64}, {"t_i16", "int16", OAR_INT16},
        {"t_i8", "int8", OAR_INT8}, {"t_ui8", "uint8", OAR_UINT8}, {"t_bool", "bool", OAR_BOOL},
    };
    if (!s) return -1;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(s, map[i].pir) == 0 || strcmp(s, map[i].fluid) == 0) return map[i].dt;
    return -1;
}

/* A value's type: {"#": "0.t_dtensor", "D": [dtype, dims, layout, lod, offset]},
 * a vector ("0.t_vec") or a NULL type (an absent output). */
static int read_type(json_object *tt, pir_value_t *v) {
    const char *kind = short_id(tt);
    if (!kind) return oar_error(OAR_ERR_FORMAT, "a value has no type");
    if (strcmp(kind, "t_vec") == 0 || strcmp(kind, "NULL") == 0 || strcmp(str_of(get(tt, "#")), "NULL") == 0)
        return OAR_OK;
    if (strcmp(kind, "t_dtensor") != 0)
        return oar_error(OAR_ERR_UNSUPPORTED, "values of type '%s' are not supported (only dense tensors)",
                         str_of(get(tt, "#")));
    json_object *d = get(tt, "D");
    if (!is_array(d) || json_object_array_length(d) < 2)
        return oar_error(OAR_ERR_FORMAT, "a dense tensor type has no [dtype, dims, ...] data");
    const char *dt = short_id(json_object_array_get_idx(d, 0));
    v->dtype = pir_dtype_from_name(dt);
    if (v->dtype < 0)
        return oar_error(OAR_ERR_UNSUPPORTED, "tensors of element type '%s' are not supported", dt ? dt : "?");
    json_object *dims = json_object_array_get_idx(d, 1);
    if (!is_array(dims) || json_object_array_length(dims) > OAR_MAX_DIMS)
        return oar_error(OAR_ERR_FORMAT, "a dense tensor type has bad dims (at most %d)", OAR_MAX_DIMS);
    v->ndim = (int)json_object_array_length(dims);
    for (int i = 0; i < v->ndim; i++) {
        json_object *x = json_object_array_get_idx(dims, (size_t)i);
        if (!is_num(x)) return oar_error(OAR_ERR_FORMAT, "dim %d is not a number", i);
        int64_t dim = json_object_get_int64(x);
        if (dim < -1) return oar_error(OAR_ERR_FORMAT, "dim %d is %lld", i, (long long)dim);
        v->dims[i] = dim;
    }
    json_object *lod = json_object_array_length(d) > 3 ? json_object_array_get_idx(d, 3) : NULL;
    v->lod_level = is_array(lod) ? (int)json_object_array_length(lod) : 0;
    return OAR_OK;
}

/* ---- attributes --------------------------------------------------------------- */
json_object *pir_attr(const pir_op_t *op, const char *name) {
    if (!is_array(op->attrs)) return NULL;
    size_t n = json_object_array_length(op->attrs);
    for (size_t i = 0; i < n; i++) {
        json_object *a = json_object_array_get_idx(op->attrs, i);
        const char *an = str_of(get(a, "N"));
        if (an && strcmp(an, name) == 0) return get(a, "AT");
    }
    return NULL;
}

static bool num_of(json_object *at, double *v) {
    json_object *d = get(at, "D");
    if (is_num(d)) { *v = json_object_get_double(d); return true; }
    if (d && json_object_is_type(d, json_type_boolean)) { *v = json_object_get_boolean(d) ? 1 : 0; return true; }
    /* a scalar attribute may be written as a string ("inf", "nan") */
    const char *s = str_of(d);
    if (s && strcmp(short_id(at) ? short_id(at) : "", "a_str") != 0) {
        char *end;
        double x = strtod(s, &end);
        if (end != s && !*end) { *v = x; return true; }
    }
    return false;
}

bool pir_attr_num(const pir_op_t *op, const char *name, double *v) { return num_of(pir_attr(op, name), v); }

bool pir_attr_bool(const pir_op_t *op, const char *name, bool *v) {
    double x;
    if (!pir_attr_num(op, name, &x)) return false;
    *v = x != 0;
    return true;
}

const char *pir_attr_str(const pir_op_t *op, const char *name) { return str_of(get(pir_attr(op, name), "D")); }

/* a_array (list of typed attrs) or a_intarray (list of numbers) */
static bool nums_of(json_object *at, double *v, int max, int *n) {
    json_object *d = get(at, "D");
    if (!is_array(d) || (int)json_object_array_length(d) > max) return false;
    *n = (int)json_object_array_length(d);
    for (int i = 0; i < *n; i++) {
        json_object *x = json_object_array_get_idx(d, (size_t)i);
        if (is_num(x)) v[i] = json_object_get_double(x);
        else if (!num_of(x, &v[i])) return false;
    }
    return true;
}

bool pir_attr_nums(const pir_op_t *op, const char *name, double *v, int max, int *n) {
    return nums_of(pir_attr(op, name), v, max, n);
}

/* ---- setting Fluid attributes --------------------------------------------------- */
int pir_set_num(oar_op_desc_t *op, const char *name, double v) {
    int t = oar_op_attr_type(oar_op_desc_type(op), name);
    if (t < 0) t = v == floor(v) && fabs(v) < 2147483648.0 ? OAR_ATTR_INT : OAR_ATTR_FLOAT;
    switch (t) {
    case OAR_ATTR_INT:
        if (!(v >= INT32_MIN && v <= INT32_MAX))
            return oar_error(OAR_ERR_RANGE, "attr '%s' = %g does not fit an int", name, v);
        return oar_op_desc_set_attr_int(op, name, (int32_t)v);
    case OAR_ATTR_LONG: return oar_op_desc_set_attr_long(op, name, (int64_t)v);
    case OAR_ATTR_FLOAT: return oar_op_desc_set_attr_float(op, name, (float)v);
    case OAR_ATTR_BOOLEAN: return oar_op_desc_set_attr_bool(op, name, v != 0);
    default: return oar_error(OAR_ERR_FORMAT, "attr '%s' of '%s' is not a number", name, oar_op_desc_type(op));
    }
}

int pir_set_nums(oar_op_desc_t *op, const char *name, const double *v, int n) {
    int t = oar_op_attr_type(oar_op_desc_type(op), name);
    if (t < 0) t = OAR_ATTR_INTS;
    int rc = OAR_OK;
    void *buf = oar_xmalloc((size_t)(n ? n : 1) * 8);
    if (!buf) return OAR_ERR_NOMEM;
    switch (t) {
    case OAR_ATTR_INTS:
        for (int i = 0; i < n && rc == OAR_OK; i++) {
            if (!(v[i] >= INT32_MIN && v[i] <= INT32_MAX))
                rc = oar_error(OAR_ERR_RANGE, "attr '%s'[%d] = %g does not fit an int", name, i, v[i]);
            ((int32_t *)buf)[i] = (int32_t)v[i];
        }
        if (rc == OAR_OK) rc = oar_op_desc_set_attr_ints(op, name, buf, n);
        break;
    case OAR_ATTR_LONGS:
        for (int i = 0; i < n; i++) ((int64_t *)buf)[i] = (int64_t)v[i];
        rc = oar_op_desc_set_attr_longs(op, name, buf, n);
        break;
    case OAR_ATTR_FLOATS:
        for (int i = 0; i < n; i++) ((float *)buf)[i] = (float)v[i];
        rc = oar_op_desc_set_attr_floats(op, name, buf, n);
        break;
    default:
        rc = oar_error(OAR_ERR_FORMAT, "attr '%s' of '%s' is not a list of numbers", name, oar_op_desc_type(op));
    }
    free(buf);
    return rc;
}

int pir_copy_attr(const pir_op_t *pop, oar_op_desc_t *op, const char *pir_name, const char *fluid_name) {
    json_object *at = pir_attr(pop, pir_name);
    if (!at) return OAR_OK;   /* absent: the Fluid op's default */
    json_object *d = get(at, "D");
    const char *kind = short_id(at);
    if (kind && strcmp(kind, "a_str") == 0) {
        const char *s = str_of(d);
        return oar_op_desc_set_attr_string(op, fluid_name, s ? s : "");
    }
    if (d && json_object_is_type(d, json_type_boolean)) return oar_op_desc_set_attr_bool(op, fluid_name, json_object_get_boolean(d));
    if (is_array(d)) {
        double v[OAR_MAX_DIMS * 8];
        int n = 0;
        if (!nums_of(at, v, (int)(sizeof v / sizeof *v), &n))
            return oar_error(OAR_ERR_FORMAT, "attr '%s' is not a short list of numbers", pir_name);
        return pir_set_nums(op, fluid_name, v, n);
    }
    double x;
    if (!num_of(at, &x)) return oar_error(OAR_ERR_FORMAT, "attr '%s' has no value", pir_name);
    return pir_set_num(op, fluid_name, x);
}

/* ---- variables ------------------------------------------------------------------ */
static int declare_var(pir_ctx_t *c, const char *name, const pir_value_t *v) {
    oar_var_desc_t *d = oar_block_find_var(c->block, name);
    if (d) return OAR_OK;
    OAR_TRY(oar_block_var_new(c->block, name, &d));
    OAR_TRY(oar_var_desc_set_type(d, OAR_VAR_LOD_TENSOR));
    if (v->dtype >= 0) OAR_TRY(oar_var_desc_set_dtype(d, v->dtype));
    if (v->ndim >= 0) OAR_TRY(oar_var_desc_set_shape(d, v->dims, v->ndim));
    if (v->lod_level > 0) OAR_TRY(oar_var_desc_set_lod_level(d, v->lod_level));
    if (v->persistable) OAR_TRY(oar_var_desc_set_persistable(d, true));
    return OAR_OK;
}

int pir_emit(pir_ctx_t *c, oar_op_desc_t *op) {
    int rc = oar_block_insert_op(c->block, -1, op);
    if (rc != OAR_OK) {
        oar_error_prefix("as Fluid op '%s': ", oar_op_desc_type(op));
        oar_op_desc_free(op);
    }
    return rc;
}

static int materialize_const(pir_ctx_t *c, int64_t id, pir_value_t *v) {
    char name[48];
    snprintf(name, sizeof name, "pir_%lld", (long long)id);
    v->name = oar_xstrdup(name);
    if (!v->name) return OAR_ERR_NOMEM;
    OAR_TRY(declare_var(c, v->name, v));
    bool same = true;
    for (int i = 1; i < v->nconst; i++) same = same && v->cvals[i] == v->cvals[0];
    int64_t numel = 1;
    for (int i = 0; i < v->ndim && numel <= PIR_MAX_CONST; i++) numel *= v->dims[i] < 0 ? 0 : v->dims[i];
    oar_op_desc_t *op;
    int rc;
    if (same && v->nconst > 0) {
        OAR_TRY(oar_op_desc_new("fill_constant", &op));
        double shape[OAR_MAX_DIMS];
        for (int i = 0; i < v->ndim; i++) shape[i] = (double)v->dims[i];
        rc = pir_set_nums(op, "shape", shape, v->ndim);
        if (rc == OAR_OK) rc = pir_set_num(op, "value", v->cvals[0]);
    } else {
        if (numel != v->nconst)
            return oar_error(OAR_ERR_FORMAT, "constant %%%lld holds %d values for %lld elements", (long long)id,
                             v->nconst, (long long)numel);
        OAR_TRY(oar_op_desc_new("assign_value", &op));
        double shape[OAR_MAX_DIMS];
        for (int i = 0; i < v->ndim; i++) shape[i] = (double)v->dims[i];
        rc = pir_set_nums(op, "shape", shape, v->ndim);
        const char *slot = v->dtype == OAR_INT64 ? "int64_values" : v->dtype == OAR_INT32 ? "int32_values"
                         : v->dtype == OAR_BOOL ? "bool_values" : "fp32_values";
        if (rc == OAR_OK) rc = pir_set_nums(op, slot, v->cvals, v->nconst);
    }
    if (rc == OAR_OK) rc = pir_set_num(op, "dtype", v->dtype);
    const char *outs[1] = {v->name};
    if (rc == OAR_OK) rc = oar_op_desc_set_output(op, "Out", outs, 1);
    if (rc != OAR_OK) { oar_op_desc_free(op); return rc; }
    return pir_emit(c, op);
}

int pir_in_name(pir_ctx_t *c, const pir_op_t *op, int i, const char **name) {
    int64_t id = i < op->nin ? op->in[i] : 0;
    pir_value_t *v = pir_value(c, id);
    if (!v) return oar_error(OAR_ERR_FORMAT, "input %d (value %%%lld) is absent or not yet defined", i, (long long)id);
    if (v->members) return oar_error(OAR_ERR_FORMAT, "input %d is a list where a tensor is expected", i);
    if (!v->name && v->is_const) OAR_TRY(materialize_const(c, id, v));
    if (!v->name) return oar_error(OAR_ERR_FORMAT, "input %d (value %%%lld) has no variable", i, (long long)id);
    *name = v->name;
    return OAR_OK;
}

int pir_in_names(pir_ctx_t *c, const pir_op_t *op, int i, const char ***names, int *n) {
    pir_value_t *v = pir_in(c, op, i);
    if (!v || !v->members) return oar_error(OAR_ERR_FORMAT, "input %d is not a list (builtin.combine)", i);
    const char **out = oar_xcalloc((size_t)(v->nmembers ? v->nmembers : 1), sizeof *out);
    if (!out) return OAR_ERR_NOMEM;
    pir_op_t fake = {.in = v->members, .nin = v->nmembers};
    for (int k = 0; k < v->nmembers; k++) {
        int rc = pir_in_name(c, &fake, k, &out[k]);
        if (rc != OAR_OK) { free(out); return rc; }
    }
    *names = out;
    *n = v->nmembers;
    return OAR_OK;
}

int pir_out_name(pir_ctx_t *c, const pir_op_t *op, int i, const char *alias, const char **name) {
    int64_t id = i < op->nout ? op->out[i] : 0;
    pir_value_t *v = pir_value(c, id);
    if (!v) return oar_error(OAR_ERR_FORMAT, "output %d is missing", i);
    if (!v->name) {
        char buf[48];
        if (!alias) snprintf(buf, sizeof buf, "pir_%lld", (long long)id);
        v->name = oar_xstrdup(alias ? alias : buf);
        if (!v->name) return OAR_ERR_NOMEM;
    }
    OAR_TRY(declare_var(c, v->name, v));
    *name = v->name;
    return OAR_OK;
}

int pir_in_const(pir_ctx_t *c, const pir_op_t *op, int i, double *vals, int max, int *n) {
    pir_value_t *v = pir_in(c, op, i);
    if (!v || !v->is_const)
        return oar_error(OAR_ERR_UNSUPPORTED, "input %d must be a constant (pd_op.full or full_int_array); a "
                         "computed value there is not supported", i);
    if (v->nconst > max) return oar_error(OAR_ERR_FORMAT, "input %d holds %d values (at most %d)", i, v->nconst, max);
    memcpy(vals, v->cvals, (size_t)v->nconst * sizeof *vals);
    *n = v->nconst;
    return OAR_OK;
}

/* ---- the document ----------------------------------------------------------------- */
static int read_ids(json_object *arr, int64_t **ids, int *n, const char *what) {
    *ids = NULL;
    *n = 0;
    if (!arr) return OAR_OK;
    bool single = json_object_is_type(arr, json_type_object);
    if (!single && !is_array(arr)) return oar_error(OAR_ERR_FORMAT, "'%s' is neither a list nor a value", what);
    int count = single ? 1 : (int)json_object_array_length(arr);
    *ids = oar_xcalloc((size_t)(count ? count : 1), sizeof **ids);
    if (!*ids) return OAR_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        json_object *e = single ? arr : json_object_array_get_idx(arr, (size_t)i);
        json_object *id = get(e, "%");
        if (!is_num(id)) return oar_error(OAR_ERR_FORMAT, "'%s'[%d] has no value id", what, i);
        (*ids)[i] = json_object_get_int64(id);
    }
    *n = count;
    return OAR_OK;
}

static void op_name(const char *raw, char *out, size_t n) {
    static const char *dialects[] = {"builtin", "pd_op", "cf", "pd_kernel", "dist"};
    if (strcmp(raw, "p") == 0) { snprintf(out, n, "builtin.parameter"); return; }
    char *end;
    long d = strtol(raw, &end, 10);
    if (end != raw && *end == '.' && d >= 0 && d < (long)(sizeof dialects / sizeof *dialects))
        snprintf(out, n, "%s.%s", dialects[d], end + 1);
    else
        snprintf(out, n, "%s", raw);
}

static int parameter(pir_ctx_t *c, json_object *jop, const pir_op_t *op) {
    /* compressed: "A": [.., .., .., "name"]; plain: {"N": "parameter_name"} */
    const char *name = pir_attr_str(op, "parameter_name");
    json_object *a = get(jop, "A");
    if (!name && is_array(a) && json_object_array_length(a) > 0)
        name = str_of(json_object_array_get_idx(a, json_object_array_length(a) - 1));
    if (!name || !*name) return oar_error(OAR_ERR_FORMAT, "a parameter has no name");
    if (op->nout != 1) return oar_error(OAR_ERR_FORMAT, "a parameter has %d values", op->nout);
    pir_value_t *v = pir_value(c, op->out[0]);
    if (!v) return oar_error(OAR_ERR_FORMAT, "parameter '%s' has no value", name);
    v->persistable = true;
    const char *unused;
    return pir_out_name(c, op, 0, name, &unused);
}

static int read_op(pir_ctx_t *c, json_object *jop) {
    pir_op_t op = {0};
    const char *raw = str_of(get(jop, "#"));
    if (!raw) return oar_error(OAR_ERR_FORMAT, "an op has no name");
    op_name(raw, op.name, sizeof op.name);
    c->op_name = op.name;
    if (get(jop, "regions"))
        return oar_error(OAR_ERR_UNSUPPORTED, "ops with nested regions (control flow) are not supported");
    op.attrs = strcmp(raw, "p") == 0 ? NULL : get(jop, "A");
    int rc = read_ids(get(jop, "I"), &op.in, &op.nin, "I");
    if (rc == OAR_OK) rc = read_ids(get(jop, "O"), &op.out, &op.nout, "O");
    /* declare the results with their types */
    json_object *outs = get(jop, "O");
    for (int i = 0; rc == OAR_OK && i < op.nout; i++) {
        json_object *o = json_object_is_type(outs, json_type_object) ? outs : json_object_array_get_idx(outs, (size_t)i);
        pir_value_t *v = NULL;
        if (op.out[i] == 0) continue;   /* an unused optional result */
        rc = define_value(c, op.out[i], &v);
        if (rc == OAR_OK) rc = read_type(get(o, "TT"), v);
    }
    if (rc == OAR_OK) {
        if (strcmp(op.name, "builtin.parameter") == 0) rc = parameter(c, jop, &op);
        else rc = pir_translate_op(c, &op);
    }
    free(op.in);
    free(op.out);
    return rc;
}

static int translate(pir_ctx_t *c, json_object *root) {
    json_object *base = get(root, "base_code");
    const char *magic = str_of(get(base, "magic"));
    if (!magic || strcmp(magic, "pir") != 0)
        return oar_error(OAR_ERR_FORMAT, "not a PIR program: base_code.magic is not \"pir\"");
    json_object *regions = get(get(root, "program"), "regions");
    if (!is_array(regions) || json_object_array_length(regions) != 1)
        return oar_error(OAR_ERR_FORMAT, "the program must have exactly one region");
    json_object *blocks = get(json_object_array_get_idx(regions, 0), "blocks");
    if (!is_array(blocks) || json_object_array_length(blocks) != 1)
        return oar_error(OAR_ERR_FORMAT, "the program's region must have exactly one block");
    json_object *ops = get(json_object_array_get_idx(blocks, 0), "ops");
    if (!is_array(ops)) return oar_error(OAR_ERR_FORMAT, "the block has no ops list");
    /* Fluid's feed and fetch lists */
    oar_var_desc_t *d;
    OAR_TRY(oar_block_var_new(c->block, "feed", &d));
    OAR_TRY(oar_var_desc_set_type(d, OAR_VAR_FEED_MINIBATCH));
    OAR_TRY(oar_var_desc_set_persistable(d, true));
    OAR_TRY(oar_block_var_new(c->block, "fetch", &d));
    OAR_TRY(oar_var_desc_set_type(d, OAR_VAR_FETCH_LIST));
    OAR_TRY(oar_var_desc_set_persistable(d, true));
    size_t n = json_object_array_length(ops);
    for (size_t i = 0; i < n; i++) {
        c->op_index = (int)i;
        c->op_name = "?";
        int rc = read_op(c, json_object_array_get_idx(ops, i));
        if (rc != OAR_OK) {
            oar_error_prefix("PIR op #%zu '%s': ", i, c->op_name);
            return rc;
        }
    }
    return OAR_OK;
}

int oar_pir_json_translate(const void *bytes, size_t n, oar_program_t **out) {
    if (!bytes || !out) return oar_error(OAR_ERR_INVALID, "PIR JSON: NULL bytes or output");
    if (n > INT_MAX) return oar_error(OAR_ERR_NOMEM, "PIR JSON: %zu bytes is too large", n);
    json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
    if (!tok) return oar_error(OAR_ERR_NOMEM, "PIR JSON: out of memory");
    json_object *root = json_tokener_parse_ex(tok, bytes, (int)n);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root || jerr != json_tokener_success) {
        json_object_put(root);
        return oar_error(OAR_ERR_FORMAT, "PIR JSON: %s at byte %zu", json_tokener_error_desc(jerr), used);
    }
    for (const char *p = (const char *)bytes + used; p < (const char *)bytes + n; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            json_object_put(root);
            return oar_error(OAR_ERR_FORMAT, "PIR JSON: text after the document at byte %zu", used);
        }
    pir_ctx_t c = {0};
    oar_program_t *prog = NULL;
    int rc = oar_program_new(&prog);
    if (rc == OAR_OK) {
        c.block = oar_program_block(prog, 0);
        rc = translate(&c, root);
    }
    /* a 0-D value (Paddle 2.5+) keeps its rank where oar's inference, after
     * Fluid 1.8, made it [1]: fetching it then gives what Paddle gives */
    for (int64_t i = 0; rc == OAR_OK && i < c.nvals; i++) {
        pir_value_t *v = &c.vals[i];
        oar_var_desc_t *d = v->defined && v->name && v->ndim == 0 ? oar_block_find_var(c.block, v->name) : NULL;
        if (d) rc = oar_var_desc_set_shape(d, NULL, 0);
    }
    if (rc == OAR_OK) rc = oar_program_validate(prog);
    for (int64_t i = 0; i < c.nvals; i++) { free(c.vals[i].name); free(c.vals[i].members); }
    free(c.vals);
    json_object_put(root);
    if (rc != OAR_OK) { oar_program_free(prog); return rc; }
    *out = prog;
    return OAR_OK;
}

/* The public entry: JSON starts with '{' (after blanks); a ProgramDesc
 * protobuf starts with field 1 (blocks), tag byte 0x0A. */
int oar_program_parse_model(const void *bytes, size_t n, oar_program_t **out) {
    if (!out) return oar_error(OAR_ERR_INVALID, "oar_program_parse_model: NULL out");
    if (!bytes && n) return oar_error(OAR_ERR_INVALID, "oar_program_parse_model: NULL bytes");
    const char *p = bytes;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t')) i++;
    if (i < n && p[i] == '{') return oar_pir_json_translate(bytes, n, out);
    return oar_program_parse(bytes, n, out);
}
