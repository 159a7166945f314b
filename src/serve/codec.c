/* codec.c — the v2 (Open Inference Protocol) wire format, both ways.
 * Requests: {"inputs":[{"name","shape","datatype","data"|"parameters":
 * {"binary_data_size":N}[,"parameters":{"lod":[..]}]}], "outputs":[{"name"
 * [,"parameters":{"binary_data":B}]}], "parameters":{"binary_data_output":B,
 * "timeout_ms":MS | "timeout":US}, "id":S} into typed, flat, row-major buffers; with
 * the binary tensor data extension the JSON is the body's first json_len
 * bytes (the Inference-Header-Content-Length header) and the inputs' raw
 * bytes follow it in input order. Responses: the outputs as JSON numbers,
 * or as raw bytes after the JSON for those asked for in binary. Every check
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

/* the raw bytes of a binary input: the next `size` bytes after the JSON */
typedef struct { const char *p; size_t len, used; } binary_t;

static int binary_data(serve_tensor_t *t, json_object *params, binary_t *bin, bool *taken, char *err, size_t errlen) {
    json_object *size;
    *taken = false;
    if (!params || !json_object_object_get_ex(params, "binary_data_size", &size)) return 0;
    int64_t n;
    if (!get_int(size, &n) || n < 0)
        return fail(err, errlen, "input '%s': parameters.binary_data_size is not a non-negative integer", t->name);
    size_t esz = oar_dtype_size(t->dtype);
    if ((uint64_t)n != (uint64_t)t->numel * esz)
        return fail(err, errlen, "input '%s': binary_data_size %lld, but shape and datatype make %lld bytes", t->name,
                    (long long)n, (long long)t->numel * (long long)esz);
    if ((uint64_t)n > bin->len - bin->used)
        return fail(err, errlen, "input '%s': binary_data_size %lld, but only %zu bytes follow the JSON", t->name,
                    (long long)n, bin->len - bin->used);
    t->data = malloc(n > 0 ? (size_t)n : 1);
    if (!t->data) return fail(err, errlen, "input '%s': out of memory for %lld bytes", t->name, (long long)n);
    memcpy(t->data, bin->p + bin->used, (size_t)n);
    bin->used += (size_t)n;
    if (t->dtype == OAR_BOOL)
        for (int64_t i = 0; i < t->numel; i++)
            if (((uint8_t *)t->data)[i] > 1)
                return fail(err, errlen, "input '%s': binary BOOL byte %lld is %u (0 or 1)", t->name, (long long)i,
                            ((uint8_t *)t->data)[i]);
    *taken = true;
    return 0;
}

static int parse_input(json_object *in, size_t index, serve_tensor_t *t, binary_t *bin, char *err, size_t errlen) {
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
        if (d != 0 && numel > (INT64_MAX / 8) / d) return fail(err, errlen, "input '%s': shape's product overflows", t->name);
        numel *= d;
    }
    t->numel = numel;
    json_object_object_get_ex(in, "parameters", &params);
    if (params && !json_object_is_type(params, json_type_object))
        return fail(err, errlen, "input '%s': \"parameters\" is not an object", t->name);
    bool binary;
    int rc = binary_data(t, params, bin, &binary, err, errlen);
    if (rc) return rc;
    if (binary) {
        if (json_object_object_get_ex(in, "data", &data))
            return fail(err, errlen, "input '%s' has both \"data\" and parameters.binary_data_size", t->name);
    } else {
        if (!json_object_object_get_ex(in, "data", &data) || !json_object_is_type(data, json_type_array))
            return fail(err, errlen, "input '%s' has no \"data\" array (flat, row-major)", t->name);
        size_t n = json_object_array_length(data);
        if ((int64_t)n != numel)
            return fail(err, errlen, "input '%s': data has %zu elements but shape holds %lld", t->name, n, (long long)numel);
        rc = decode_data(t, data, err, errlen);
        if (rc) return rc;
    }
    return parse_lod(t, params, err, errlen);
}

/* a boolean parameter: 1, 0, or -1 when absent */
static int bool_param(json_object *params, const char *key, int *out, char *err, size_t errlen) {
    json_object *v;
    *out = -1;
    if (!params || !json_object_object_get_ex(params, key, &v)) return 0;
    if (!json_object_is_type(v, json_type_boolean)) return fail(err, errlen, "parameters.%s is not a boolean", key);
    *out = json_object_get_boolean(v) ? 1 : 0;
    return 0;
}

/* the request's parameters: binary_data_output, and a deadline in
 * timeout_ms (milliseconds) or Triton's timeout (microseconds) */
static int parse_params(json_object *root, serve_request_t *req, char *err, size_t errlen) {
    json_object *params, *v;
    req->timeout_us = -1;
    if (!json_object_object_get_ex(root, "parameters", &params)) return 0;
    if (!json_object_is_type(params, json_type_object)) return fail(err, errlen, "\"parameters\" is not an object");
    int b;
    if (bool_param(params, "binary_data_output", &b, err, errlen)) return 400;
    req->binary_output = b == 1;
    static const struct { const char *key; int64_t scale; } T[] = { { "timeout_ms", 1000 }, { "timeout", 1 } };
    for (size_t i = 0; i < 2; i++) {
        int64_t t;
        if (!json_object_object_get_ex(params, T[i].key, &v)) continue;
        if (!get_int(v, &t) || t < 0 || t > INT64_MAX / 1000)
            return fail(err, errlen, "parameters.%s is not a non-negative integer", T[i].key);
        if (req->timeout_us < 0 || t * T[i].scale < req->timeout_us) req->timeout_us = t * T[i].scale;
    }
    return 0;
}

static int parse_outputs(json_object *outputs, serve_request_t *req, char *err, size_t errlen) {
    if (!json_object_is_type(outputs, json_type_array)) return fail(err, errlen, "\"outputs\" is not an array");
    size_t m = json_object_array_length(outputs);
    req->outputs = calloc(m ? m : 1, sizeof *req->outputs);
    if (!req->outputs) return fail(err, errlen, "out of memory");
    for (size_t i = 0; i < m; i++) {
        json_object *o = json_object_array_get_idx(outputs, i), *name, *params = NULL;
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "name", &name) ||
            !json_object_is_type(name, json_type_string))
            return fail(err, errlen, "outputs[%zu] has no \"name\" string", i);
        req->outputs[i].name = strdup(json_object_get_string(name));
        req->noutputs = (int)i + 1;
        if (!req->outputs[i].name) return fail(err, errlen, "out of memory");
        json_object_object_get_ex(o, "parameters", &params);
        if (params && !json_object_is_type(params, json_type_object))
            return fail(err, errlen, "outputs[%zu]: \"parameters\" is not an object", i);
        if (bool_param(params, "binary_data", &req->outputs[i].binary, err, errlen)) return 400;
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->outputs[j].name, req->outputs[i].name) == 0)
                return fail(err, errlen, "output '%s' is asked for twice", req->outputs[i].name);
    }
    return 0;
}

int serve_parse_request(const char *body, size_t len, size_t json_len, serve_request_t *req, char *err, size_t errlen) {
    memset(req, 0, sizeof *req);
    req->timeout_us = -1;
    if (json_len > len) return fail(err, errlen, "Inference-Header-Content-Length %zu is past the body's %zu bytes", json_len, len);
    if (json_len > (size_t)INT32_MAX) return fail(err, errlen, "the JSON header is too large");
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok) return fail(err, errlen, "out of memory");
    json_object *root = json_len > 0 ? json_tokener_parse_ex(tok, body, (int)json_len) : NULL;
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = 0;
    if (!root || jerr != json_tokener_success) {
        rc = fail(err, errlen, "bad JSON: %s", json_len == 0 ? "empty body"
                  : jerr == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(jerr));
        goto done;
    }
    for (size_t i = end; i < json_len; i++)
        if (!strchr(" \t\r\n", body[i])) { rc = fail(err, errlen, "bad JSON: text after the value at byte %zu", i); goto done; }
    json_object *inputs, *outputs;
    if (!json_object_is_type(root, json_type_object)) { rc = fail(err, errlen, "the body is not a JSON object"); goto done; }
    if (!json_object_object_get_ex(root, "inputs", &inputs) || !json_object_is_type(inputs, json_type_array)) {
        rc = fail(err, errlen, "the body has no \"inputs\" array");
        goto done;
    }
    rc = parse_params(root, req, err, errlen);
    if (rc) goto done;
    json_object *id;
    if (json_object_object_get_ex(root, "id", &id)) {
        if (!json_object_is_type(id, json_type_string)) { rc = fail(err, errlen, "\"id\" is not a string"); goto done; }
        req->id = strdup(json_object_get_string(id));
        if (!req->id) { rc = fail(err, errlen, "out of memory"); goto done; }
    }
    size_t n = json_object_array_length(inputs);
    req->inputs = calloc(n ? n : 1, sizeof *req->inputs);
    if (!req->inputs) { rc = fail(err, errlen, "out of memory"); goto done; }
    binary_t bin = { body + json_len, len - json_len, 0 };
    for (size_t i = 0; i < n && rc == 0; i++) {
        req->ninputs = (int)i + 1;
        rc = parse_input(json_object_array_get_idx(inputs, i), i, &req->inputs[i], &bin, err, errlen);
    }
    if (rc == 0 && bin.used != bin.len)
        rc = fail(err, errlen, "%zu bytes follow the JSON, but the binary inputs take %zu", bin.len, bin.used);
    for (int i = 0; i < req->ninputs && rc == 0; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(req->inputs[i].name, req->inputs[j].name) == 0) { rc = fail(err, errlen, "input '%s' is given twice", req->inputs[i].name); break; }
    if (rc == 0 && json_object_object_get_ex(root, "outputs", &outputs)) rc = parse_outputs(outputs, req, err, errlen);
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
    for (int i = 0; i < req->noutputs; i++) free(req->outputs[i].name);
    free(req->outputs);
    free(req->id);
    memset(req, 0, sizeof *req);
    req->timeout_us = -1;
}

void serve_tensor_clear(serve_tensor_t *t) {
    free(t->name);
    free(t->data);
    free(t->lod);
    memset(t, 0, sizeof *t);
}

void serve_result_free(serve_result_t *r) {
    for (int i = 0; i < r->noutputs; i++) serve_tensor_clear(&r->outputs[i]);
    free(r->outputs);
    memset(r, 0, sizeof *r);
}

static json_object *number(double v, const char *fmt) {
    if (!isfinite(v)) return NULL;   /* JSON has no NaN/Inf: null */
    char buf[40];
    snprintf(buf, sizeof buf, fmt, v);
    return json_object_new_double_s(v, buf);
}

static json_object *json_data(const serve_tensor_t *t) {
    json_object *arr = json_object_new_array_ext(t->numel > 0 ? (int)t->numel : 1);
    for (int64_t i = 0; arr && i < t->numel; i++) {
        json_object *v = NULL;
        switch (t->dtype) {
        case OAR_FP32: v = number(((const float *)t->data)[i], "%.9g"); break;
        case OAR_FP64: v = number(((const double *)t->data)[i], "%.17g"); break;
        case OAR_INT32: v = json_object_new_int(((const int32_t *)t->data)[i]); break;
        case OAR_INT64: v = json_object_new_int64(((const int64_t *)t->data)[i]); break;
        case OAR_BOOL: v = json_object_new_boolean(((const uint8_t *)t->data)[i] != 0); break;
        }
        json_object_array_add(arr, v);
    }
    return arr;
}

int serve_encode_response(const char *model_name, const char *id, const int *binary_asked, int nasked,
                          bool binary_output, const serve_result_t *res, char **body, size_t *len, size_t *json_len) {
    *body = NULL;
    *len = *json_len = 0;
    json_object *o = json_object_new_object(), *outs = json_object_new_array();
    if (!o || !outs) { json_object_put(o); json_object_put(outs); return -1; }
    /* model_name first, as the protocol's examples show */
    json_object_object_add(o, "model_name", json_object_new_string(model_name));
    json_object_object_add(o, "model_version", json_object_new_string("1"));
    if (id) json_object_object_add(o, "id", json_object_new_string(id));
    size_t nbin = 0;
    bool *binary = calloc((size_t)res->noutputs + 1, sizeof *binary);
    if (!binary) { json_object_put(o); json_object_put(outs); return -1; }
    for (int i = 0; i < res->noutputs; i++) {
        const serve_tensor_t *t = &res->outputs[i];
        /* an output's own binary_data wins over the request's binary_data_output */
        int asked = i < nasked ? binary_asked[i] : -1;
        binary[i] = asked == 1 || (asked == -1 && binary_output);
        json_object *e = json_object_new_object(), *shape = json_object_new_array(), *params = NULL;
        json_object_object_add(e, "name", json_object_new_string(t->name));
        json_object_object_add(e, "datatype", json_object_new_string(serve_dtype_to_v2(t->dtype)));
        for (int d = 0; d < t->ndim; d++) json_object_array_add(shape, json_object_new_int64(t->dims[d]));
        json_object_object_add(e, "shape", shape);
        if (t->lod_len > 0 || binary[i]) params = json_object_new_object();
        if (t->lod_len > 0) {
            json_object *lod = json_object_new_array();
            for (int k = 0; k < t->lod_len; k++) json_object_array_add(lod, json_object_new_int64((int64_t)t->lod[k]));
            json_object_object_add(params, "lod", lod);
        }
        if (binary[i]) {
            size_t bytes = (size_t)t->numel * oar_dtype_size(t->dtype);
            json_object_object_add(params, "binary_data_size", json_object_new_int64((int64_t)bytes));
            nbin += bytes;
        }
        if (params) json_object_object_add(e, "parameters", params);
        if (!binary[i]) json_object_object_add(e, "data", json_data(t));
        json_object_array_add(outs, e);
    }
    json_object_object_add(o, "outputs", outs);
    size_t jl;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &jl);
    char *b = s ? malloc(jl + nbin + 1) : NULL;
    if (b) {
        memcpy(b, s, jl);
        size_t k = jl;
        for (int i = 0; i < res->noutputs; i++) {
            if (!binary[i]) continue;
            size_t bytes = (size_t)res->outputs[i].numel * oar_dtype_size(res->outputs[i].dtype);
            if (bytes) memcpy(b + k, res->outputs[i].data, bytes);
            k += bytes;
        }
        b[k] = '\0';
        *body = b;
        *len = k;
        *json_len = jl;
    }
    free(binary);
    json_object_put(o);
    return b ? 0 : -1;
}
