/* codec.c — the v2 (Open Inference Protocol) JSON request codec: parses
 * {"inputs":[{"name","shape","datatype","data"[,"parameters":{"lod":[..]}]}],
 *  "outputs":[{"name"}]} into typed, flat, row-major buffers. Every check
 * names the input and what is wrong: the body comes from the network. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve.h"

static const struct { const char *v2; int dtype; } DTYPES[] = {
    { "FP32", OAR_FP32 }, { "FP64", OAR_FP64 }, { "INT32", OAR_INT32 },
    { "INT64", OAR_INT64 }, { "BOOL", OAR_BOOL },
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

int serve_dtype_from_v2(const char *name) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (strcmp(DTYPES[i].v2, name) == 0) return DTYPES[i].dtype;
    return -1;
}

const char *serve_dtype_to_v2(int dtype) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].dtype == dtype) return DTYPES[i].v2;
    return NULL;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return 400;
}

/* a JSON number that is an integer (json-c keeps 3 and 3.0 apart) */
static bool get_int(json_object *v, int64_t *out) {
    if (json_object_get_type(v) != json_type_int) return false;
    *out = json_object_get_int64(v);
    return true;
}

/* Fills t->data from the flat JSON array `data` (numel already checked). */
static int decode_data(serve_tensor_t *t, json_object *data, char *err, size_t errlen) {
    size_t esz = oar_dtype_size(t->dtype);
    t->data = calloc(t->numel > 0 ? (size_t)t->numel : 1, esz);
    if (!t->data) return fail(err, errlen, "input '%s': out of memory for %lld elements", t->name, (long long)t->numel);
    for (int64_t i = 0; i < t->numel; i++) {
        json_object *v = json_object_array_get_idx(data, (size_t)i);
        enum json_type jt = json_object_get_type(v);
        int64_t iv;
        switch (t->dtype) {
        case OAR_FP32: case OAR_FP64: {
            if (jt != json_type_double && jt != json_type_int)
                return fail(err, errlen, "input '%s': data[%lld] is not a number", t->name, (long long)i);
            double d = json_object_get_double(v);
            if (t->dtype == OAR_FP32) ((float *)t->data)[i] = (float)d;
            else ((double *)t->data)[i] = d;
            break;
        }
        case OAR_INT32: case OAR_INT64:
            if (!get_int(v, &iv))
                return fail(err, errlen, "input '%s': data[%lld] is not an integer", t->name, (long long)i);
            if (t->dtype == OAR_INT32) {
                if (iv < INT32_MIN || iv > INT32_MAX)
                    return fail(err, errlen, "input '%s': data[%lld] = %lld is out of INT32's range", t->name,
                                (long long)i, (long long)iv);
                ((int32_t *)t->data)[i] = (int32_t)iv;
            } else {
                ((int64_t *)t->data)[i] = iv;
            }
            break;
        case OAR_BOOL:
            if (jt == json_type_boolean) ((uint8_t *)t->data)[i] = json_object_get_boolean(v) ? 1 : 0;
            else if (get_int(v, &iv) && (iv == 0 || iv == 1)) ((uint8_t *)t->data)[i] = (uint8_t)iv;
            else return fail(err, errlen, "input '%s': data[%lld] is not a boolean", t->name, (long long)i);
            break;
        default:
            return fail(err, errlen, "input '%s': unsupported dtype", t->name);
        }
    }
    return 0;
}

static int parse_lod(serve_tensor_t *t, json_object *params, char *err, size_t errlen) {
    json_object *lod;
    if (!params || !json_object_object_get_ex(params, "lod", &lod)) return 0;
    if (!json_object_is_type(lod, json_type_array))
        return fail(err, errlen, "input '%s': parameters.lod is not an array of offsets", t->name);
    size_t n = json_object_array_length(lod);
    if (n < 2 || n > (size_t)INT32_MAX)
        return fail(err, errlen, "input '%s': parameters.lod needs at least 2 offsets (0, ..., rows)", t->name);
    t->lod = malloc(n * sizeof *t->lod);
    if (!t->lod) return fail(err, errlen, "input '%s': out of memory", t->name);
    t->lod_len = (int)n;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        if (!get_int(json_object_array_get_idx(lod, i), &v) || v < 0 || (i > 0 && (uint64_t)v < t->lod[i - 1]))
            return fail(err, errlen, "input '%s': parameters.lod[%zu] is not a non-decreasing offset", t->name, i);
        t->lod[i] = (uint64_t)v;
    }
    if (t->lod[0] != 0 || (t->ndim > 0 && t->lod[n - 1] != (uint64_t)t->dims[0]))
        return fail(err, errlen, "input '%s': parameters.lod must run from 0 to the batch size %lld", t->name,
                    (long long)(t->ndim > 0 ? t->dims[0] : 0));
    return 0;
}

static int parse_input(json_object *in, size_t index, serve_tensor_t *t, char *err, size_t errlen) {
    json_object *name, *shape, *datatype, *data, *params = NULL;
    if (!json_object_is_type(in, json_type_object))
        return fail(err, errlen, "inputs[%zu] is not an object", index);
    if (!json_object_object_get_ex(in, "name", &name) || !json_object_is_type(name, json_type_string))
        return fail(err, errlen, "inputs[%zu] has no \"name\" string", index);
    t->name = strdup(json_object_get_string(name));
    if (!t->name) return fail(err, errlen, "out of memory");
    if (!json_object_object_get_ex(in, "datatype", &datatype) || !json_object_is_type(datatype, json_type_string))
        return fail(err, errlen, "input '%s' has no \"datatype\" string", t->name);
    t->dtype = serve_dtype_from_v2(json_object_get_string(datatype));
    if (t->dtype < 0)
        return fail(err, errlen, "input '%s': datatype \"%s\" is not one of FP32, FP64, INT32, INT64, BOOL", t->name,
                    json_object_get_string(datatype));
    if (!json_object_object_get_ex(in, "shape", &shape) || !json_object_is_type(shape, json_type_array))
        return fail(err, errlen, "input '%s' has no \"shape\" array", t->name);
    size_t nd = json_object_array_length(shape);
    if (nd > SERVE_MAX_DIMS) return fail(err, errlen, "input '%s': shape has %zu dims (at most %d)", t->name, nd, SERVE_MAX_DIMS);
    t->ndim = (int)nd;
    int64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        int64_t d;
        if (!get_int(json_object_array_get_idx(shape, i), &d) || d < 0)
            return fail(err, errlen, "input '%s': shape[%zu] is not a non-negative integer", t->name, i);
        t->dims[i] = d;
        /* the body bounds the data, so a product past it is wrong anyway */
        if (d != 0 && numel > INT64_MAX / d) return fail(err, errlen, "input '%s': shape's product overflows", t->name);
        numel *= d;
    }
    t->numel = numel;
    if (!json_object_object_get_ex(in, "data", &data) || !json_object_is_type(data, json_type_array))
        return fail(err, errlen, "input '%s' has no \"data\" array (flat, row-major)", t->name);
    size_t n = json_object_array_length(data);
    if ((int64_t)n != numel)
        return fail(err, errlen, "input '%s': data has %zu elements but shape holds %lld", t->name, n, (long long)numel);
    int rc = decode_data(t, data, err, errlen);
    if (rc) return rc;
    json_object_object_get_ex(in, "parameters", &params);
    return parse_lod(t, params, err, errlen);
}

int serve_parse_request(const char *body, size_t len, serve_request_t *req, char *err, size_t errlen) {
    memset(req, 0, sizeof *req);
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok) return fail(err, errlen, "out of memory");
    json_object *root = len > 0 ? json_tokener_parse_ex(tok, body, (int)len) : NULL;
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = 0;
    if (!root || jerr != json_tokener_success) {
        rc = fail(err, errlen, "bad JSON: %s", len == 0 ? "empty body"
                  : jerr == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(jerr));
        goto done;
    }
    for (size_t i = end; i < len; i++)
        if (!strchr(" \t\r\n", body[i])) { rc = fail(err, errlen, "bad JSON: text after the value at byte %zu", i); goto done; }
    json_object *inputs, *outputs;
    if (!json_object_is_type(root, json_type_object)) { rc = fail(err, errlen, "the body is not a JSON object"); goto done; }
    if (!json_object_object_get_ex(root, "inputs", &inputs) || !json_object_is_type(inputs, json_type_array)) {
        rc = fail(err, errlen, "the body has no \"inputs\" array");
        goto done;
    }
    size_t n = json_object_array_length(inputs);
    req->inputs = calloc(n ? n : 1, sizeof *req->inputs);
    if (!req->inputs) { rc = fail(err, errlen, "out of memory"); goto done; }
    for (size_t i = 0; i < n && rc == 0; i++) {
        req->ninputs = (int)i + 1;
        rc = parse_input(json_object_array_get_idx(inputs, i), i, &req->inputs[i], err, errlen);
    }
    for (int i = 0; i < req->ninputs && rc == 0; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(req->inputs[i].name, req->inputs[j].name) == 0) { rc = fail(err, errlen, "input '%s' is given twice", req->inputs[i].name); break; }
    if (rc == 0 && json_object_object_get_ex(root, "outputs", &outputs)) {
        if (!json_object_is_type(outputs, json_type_array)) { rc = fail(err, errlen, "\"outputs\" is not an array"); goto done; }
        size_t m = json_object_array_length(outputs);
        req->outputs = calloc(m ? m : 1, sizeof *req->outputs);
        if (!req->outputs) { rc = fail(err, errlen, "out of memory"); goto done; }
        for (size_t i = 0; i < m && rc == 0; i++) {
            json_object *o = json_object_array_get_idx(outputs, i), *name;
            if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "name", &name) ||
                !json_object_is_type(name, json_type_string)) {
                rc = fail(err, errlen, "outputs[%zu] has no \"name\" string", i);
                break;
            }
            req->outputs[i] = strdup(json_object_get_string(name));
            req->noutputs = (int)i + 1;
            if (!req->outputs[i]) rc = fail(err, errlen, "out of memory");
        }
    }
done:
    json_object_put(root);
    if (rc) serve_request_free(req);
    return rc;
}

void serve_request_free(serve_request_t *req) {
    for (int i = 0; i < req->ninputs; i++) {
        free(req->inputs[i].name);
        free(req->inputs[i].data);
        free(req->inputs[i].lod);
    }
    free(req->inputs);
    for (int i = 0; i < req->noutputs; i++) free(req->outputs[i]);
    free(req->outputs);
    memset(req, 0, sizeof *req);
}
