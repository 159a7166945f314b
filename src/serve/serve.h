/* serve.h — `oar serve`: the Open Inference Protocol (KServe v2) over HTTP
 * for a model the inference API (src/oar.h, oar_predictor_*) loads.
 * One concern per file: main.c (arguments, signals, start and drain),
 * http.c (libmicrohttpd: routing, bodies, responses), codec.c (the v2 JSON
 * requests), model.c (the predictor pool, inference, v2 JSON responses),
 * metrics.c (Prometheus counters). */
#ifndef OAR_SERVE_H
#define OAR_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <json.h>
#include "oar.h"

#define SERVE_MAX_DIMS 9

/* ---- codec.c: v2 datatypes and requests -------------------------------- */
/* "FP32" -> OAR_FP32, ...; -1 for a datatype oar does not serve */
int serve_dtype_from_v2(const char *name);
/* OAR_FP32 -> "FP32", ...; NULL for a dtype with no v2 name here */
const char *serve_dtype_to_v2(int dtype);

typedef struct {
    char *name;
    int dtype;                   /* oar_dtype_t */
    int ndim;
    int64_t dims[SERVE_MAX_DIMS];
    int64_t numel;
    void *data;                  /* numel elements of dtype, row-major */
    uint64_t *lod; int lod_len;  /* parameters.lod: one level of offsets, or none */
} serve_tensor_t;

typedef struct {
    serve_tensor_t *inputs; int ninputs;
    char **outputs; int noutputs;   /* the requested outputs; 0: all of them */
} serve_request_t;

/* Parses a v2 infer request body. Returns 0, or an HTTP status (400) with
 * err saying what is wrong. */
int serve_parse_request(const char *body, size_t len, serve_request_t *req, char *err, size_t errlen);
void serve_request_free(serve_request_t *req);

/* ---- model.c: the model and its predictors ----------------------------- */
typedef struct {
    char *name;
    int dtype;                   /* -1: undeclared */
    int ndim;                    /* -1: undeclared */
    int64_t dims[SERVE_MAX_DIMS];
    int lod_level;
} serve_spec_t;

typedef struct serve_model serve_model_t;
/* Loads `path` (a directory with __model__, or with one .pdmodel/.json
 * model; or such a model file, parameters beside it) once per worker.
 * Returns 0 or -1 with err set. */
int serve_model_open(const char *path, int workers, serve_model_t **out, char *err, size_t errlen);
void serve_model_free(serve_model_t *m);
/* the default model name: the base name of path without its extension */
char *serve_default_name(const char *path);
int serve_model_num_inputs(const serve_model_t *m);
int serve_model_num_outputs(const serve_model_t *m);
const serve_spec_t *serve_model_input(const serve_model_t *m, int i);
const serve_spec_t *serve_model_output(const serve_model_t *m, int i);
/* Runs a parsed request on a free predictor (waiting for one). Returns the
 * HTTP status: 200 with *resp the v2 response body ("outputs" only), else
 * 4xx/5xx with err. */
int serve_model_infer(serve_model_t *m, const serve_request_t *req, json_object **resp, char *err, size_t errlen);

/* ---- metrics.c: Prometheus text ---------------------------------------- */
void serve_metrics_request(const char *endpoint, int status);
void serve_metrics_inference(double seconds);
/* the exposition text (malloc'ed) */
char *serve_metrics_render(void);

/* ---- http.c ------------------------------------------------------------ */
typedef struct {
    const char *host; int port;
    size_t max_body;             /* bytes */
    const char *model_name;
    serve_model_t *model;
} serve_http_config_t;
typedef struct serve_http serve_http_t;
/* Starts listening (threads of its own). Returns 0 with *bound_port set,
 * or -1 with err. */
int serve_http_start(const serve_http_config_t *cfg, serve_http_t **out, int *bound_port, char *err, size_t errlen);
/* Stops accepting, waits up to drain_s for the requests in flight, stops.
 * Returns the number of requests still in flight when it gave up. */
int serve_http_stop(serve_http_t *h, double drain_s);

#endif
