/* fuzz_serve.c — libFuzzer target for `oar serve`'s request parser
 * (src/serve/codec.c: serve_parse_request), the bytes an HTTP client sends.
 *
 * An input starting with 'B' and at least 5 bytes long is a body in the
 * binary tensor data extension: bytes 1..4 (little-endian, modulo what is
 * left plus one) give the JSON header's length, the rest is the body;
 * anything else is a JSON body on its own. A rejected request must come
 * back 400 with a message and an empty request; an accepted one must hold
 * tensors that agree with themselves (a known datatype, at most
 * SERVE_MAX_DIMS dims, numel their product, data, BOOL bytes 0 or 1, LoD
 * offsets from 0 to the first dimension, non-decreasing), and its inputs,
 * written back as a response by serve_encode_response both as JSON numbers
 * and as binary data, must read back the same: the JSON well-formed, each
 * output's name, datatype and shape those of the input, the binary bytes
 * identical, the JSON numbers equal to the values (NaN and infinities as
 * null). Any violation aborts (a finding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve.h"

static void finding(const char *what) {
    fprintf(stderr, "fuzz_serve: %s\n", what);
    abort();
}

static void check_tensor(const serve_tensor_t *t) {
    if (!t->name) finding("an accepted input has no name");
    if (!serve_dtype_to_v2(t->dtype)) finding("an accepted input has a datatype with no v2 name");
    if (t->ndim < 0 || t->ndim > SERVE_MAX_DIMS) finding("an accepted input has a bad rank");
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->dims[i] < 0) finding("an accepted input has a negative dim");
        n *= t->dims[i];
    }
    if (n != t->numel) finding("numel is not the product of the dims");
    if (!t->data) finding("an accepted input has no data");
    if (t->dtype == OAR_BOOL)
        for (int64_t i = 0; i < t->numel; i++)
            if (((const uint8_t *)t->data)[i] > 1) finding("a BOOL byte is neither 0 nor 1");
    if (t->lod_len > 0) {
        if (!t->lod || t->lod_len < 2 || t->lod[0] != 0) finding("LoD offsets do not start at 0");
        for (int i = 1; i < t->lod_len; i++)
            if (t->lod[i] < t->lod[i - 1]) finding("LoD offsets decrease");
        if (t->ndim > 0 && t->lod[t->lod_len - 1] != (uint64_t)t->dims[0]) finding("LoD does not end at the first dim");
    }
}

/* the inputs as a response, JSON numbers or binary; checks it reads back */
static void round_trip(const serve_request_t *req, bool binary) {
    serve_result_t res = { req->inputs, req->ninputs };   /* borrowed: not freed here */
    char *body;
    size_t len, jl;
    if (serve_encode_response("m", req->id, NULL, 0, binary, &res, &body, &len, &jl) != 0) finding("encoding failed");
    if (jl > len || (!binary && jl != len)) finding("the JSON length is past the body");
    json_tokener *tok = json_tokener_new();
    json_object *root = json_tokener_parse_ex(tok, body, (int)jl), *outs;
    if (!root || json_tokener_get_parse_end(tok) != jl) finding("the response's JSON does not parse to its end");
    json_tokener_free(tok);
    if (!json_object_object_get_ex(root, "outputs", &outs) || json_object_array_length(outs) != (size_t)req->ninputs)
        finding("the response does not list every tensor");
    json_object *id;
    if (req->id && (!json_object_object_get_ex(root, "id", &id) || strcmp(json_object_get_string(id), req->id) != 0))
        finding("the request's id did not come back");
    size_t off = jl;
    for (int i = 0; i < req->ninputs; i++) {
        const serve_tensor_t *t = &req->inputs[i];
        json_object *o = json_object_array_get_idx(outs, (size_t)i), *v, *shape, *data, *params, *size;
        if (!json_object_object_get_ex(o, "name", &v) || strcmp(json_object_get_string(v), t->name) != 0)
            finding("a name changed");
        if (!json_object_object_get_ex(o, "datatype", &v) || serve_dtype_from_v2(json_object_get_string(v)) != t->dtype)
            finding("a datatype changed");
        if (!json_object_object_get_ex(o, "shape", &shape) || json_object_array_length(shape) != (size_t)t->ndim)
            finding("a rank changed");
        for (int d = 0; d < t->ndim; d++)
            if (json_object_get_int64(json_object_array_get_idx(shape, (size_t)d)) != t->dims[d]) finding("a dim changed");
        size_t bytes = (size_t)t->numel * oar_dtype_size(t->dtype);
        if (binary) {
            if (!json_object_object_get_ex(o, "parameters", &params) ||
                !json_object_object_get_ex(params, "binary_data_size", &size) ||
                (size_t)json_object_get_int64(size) != bytes || off + bytes > len)
                finding("a binary output's size is wrong");
            if (bytes && memcmp(body + off, t->data, bytes) != 0) finding("binary data changed");
            off += bytes;
            continue;
        }
        if (!json_object_object_get_ex(o, "data", &data) || json_object_array_length(data) != (size_t)t->numel)
            finding("a JSON output has the wrong number of values");
        for (int64_t k = 0; k < t->numel; k++) {
            json_object *e = json_object_array_get_idx(data, (size_t)k);
            bool same;
            switch (t->dtype) {
            case OAR_FP32: {
                float x = ((const float *)t->data)[k];
                same = isfinite(x) ? e && (float)json_object_get_double(e) == x : e == NULL;
                break;
            }
            case OAR_FP64: {
                double x = ((const double *)t->data)[k];
                same = isfinite(x) ? e && json_object_get_double(e) == x : e == NULL;
                break;
            }
            case OAR_INT32: same = json_object_get_int64(e) == ((const int32_t *)t->data)[k]; break;
            case OAR_INT64: same = json_object_get_int64(e) == ((const int64_t *)t->data)[k]; break;
            default: same = json_object_get_boolean(e) == (((const uint8_t *)t->data)[k] != 0); break;
            }
            if (!same) finding("a JSON value changed");
        }
    }
    if (binary && off != len) finding("binary bytes left over");
    json_object_put(root);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *body = (const char *)data;
    size_t len = size, json_len = size;
    if (size >= 5 && data[0] == 'B') {
        uint32_t h = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24;
        body += 5;
        len -= 5;
        json_len = h % (len + 1);
    }
    serve_request_t req;
    char err[512] = "";
    int rc = serve_parse_request(body, len, json_len, &req, err, sizeof err);
    if (rc != 0) {
        if (rc != 400) finding("a rejected request is not a 400");
        if (!err[0]) finding("a rejected request left no message");
        if (req.inputs || req.ninputs || req.outputs || req.noutputs) finding("a rejected request is not empty");
        return 0;
    }
    if (req.ninputs < 0 || req.noutputs < 0 || req.timeout_us < -1) finding("bad counts");
    for (int i = 0; i < req.ninputs; i++) {
        check_tensor(&req.inputs[i]);
        for (int j = 0; j < i; j++)
            if (strcmp(req.inputs[i].name, req.inputs[j].name) == 0) finding("an input name is given twice");
    }
    for (int i = 0; i < req.noutputs; i++)
        if (!req.outputs[i].name || req.outputs[i].binary < -1 || req.outputs[i].binary > 1) finding("bad output");
    round_trip(&req, false);
    round_trip(&req, true);
    serve_request_free(&req);
    return 0;
}
