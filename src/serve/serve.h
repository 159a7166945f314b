/* serve.h — `oar serve`: the Open Inference Protocol (KServe v2) over HTTP
 * for a model the inference API (src/oar.h, oar_predictor_*) loads.
 * One concern per file: main.c (arguments, signals, start and drain),
 * http.c (libmicrohttpd: routing, bodies, responses), codec.c (the v2 wire
 * format: requests in, responses out), model.c (the predictors, checks, one
 * run), batch.c (stacking requests into one run and splitting it back),
 * sched.c (the queue, the worker threads, deadlines), metrics.c
 * (Prometheus counters), accesslog.c (one line per request). */
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
    char *name;
    int binary;                  /* parameters.binary_data: 1, 0, or -1 when not given */
} serve_output_req_t;

typedef struct {
    serve_tensor_t *inputs; int ninputs;
    serve_output_req_t *outputs; int noutputs;   /* the requested outputs; 0: all of them */
    bool binary_output;          /* parameters.binary_data_output */
    int64_t timeout_us;          /* parameters.timeout_ms or Triton's timeout (us); -1: none */
    char *id;                    /* the request's "id", echoed in the response; NULL: none */
} serve_request_t;

/* Parses a v2 infer request body: its first json_len bytes are the JSON
 * (json_len = len without the binary data extension), the inputs' binary
 * data follows. Returns 0, or an HTTP status (400) with err saying what is
 * wrong (and *req empty). */
int serve_parse_request(const char *body, size_t len, size_t json_len, serve_request_t *req, char *err, size_t errlen);
void serve_request_free(serve_request_t *req);
void serve_tensor_clear(serve_tensor_t *t);

/* the outputs of one request, in the order the response lists them */
typedef struct {
    serve_tensor_t *outputs; int noutputs;
} serve_result_t;
void serve_result_free(serve_result_t *r);
/* The v2 response body (malloc'ed into *body, *len bytes): JSON, then the
 * raw bytes of the outputs asked for in binary; id: the request's, or NULL
 * (binary_asked[i]: the
 * request's outputs[i].binary, nasked of them; binary_output: its
 * parameters.binary_data_output, for the others); *json_len: the JSON's
 * bytes (the Inference-Header-Content-Length when less than *len).
 * Returns 0, or -1 out of memory. */
int serve_encode_response(const char *model_name, const char *id, const int *binary_asked, int nasked,
                          bool binary_output, const serve_result_t *res, char **body, size_t *len, size_t *json_len);

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
/* A request against what the model declares (inputs, dtypes, shapes,
 * outputs). Returns 0, or 400 with err. */
int serve_model_check(const serve_model_t *m, const serve_request_t *req, char *err, size_t errlen);
/* Runs `inputs` on worker w's predictor; *outs gets a copy of every output
 * of the model (serve_model_num_outputs of them, each freed with
 * serve_tensor_clear, the array with free). Returns the HTTP status: 200,
 * else 4xx/5xx with err. Only worker w's thread may call it. */
int serve_model_run(serve_model_t *m, int w, const serve_tensor_t *inputs, int ninputs, serve_tensor_t **outs,
                    char *err, size_t errlen);
/* oar_predictor_cancel on worker w's run in progress (any thread) */
void serve_model_cancel(serve_model_t *m, int w);
/* Moves the outputs `req` asks for (all, in the model's order, when it
 * names none) from `all` (the model's outputs) into *res. Returns 0 or -1
 * out of memory. */
int serve_model_select(const serve_model_t *m, const serve_request_t *req, serve_tensor_t *all, serve_result_t *res);

/* ---- batch.c: dynamic batching ------------------------------------------ */
/* The rows a request stacks along the batch dimension, or -1 when it must
 * run alone (an input with LoD or no dims; the model declares no free
 * first dimension; the inputs disagree on their first dimension). */
int64_t serve_batch_rows(const serve_model_t *m, const serve_request_t *req);
/* whether two batchable requests stack: the same dtypes and non-batch dims */
bool serve_batch_compatible(const serve_model_t *m, const serve_request_t *a, const serve_request_t *b);
/* Runs n compatible requests as one on worker w: their inputs stacked, the
 * outputs split back by rows. status[i] and res[i] per request (err[i]
 * ERRLEN bytes). Falls back to one run per request when an output's first
 * dimension is not the batch's rows, and returns 1 then (0 otherwise).
 * pad (batching is on): a lone one-row request runs as two rows, the way
 * it would in a batch, so that its bits do not depend on batching. */
#define SERVE_ERRLEN 512
int serve_batch_run(serve_model_t *m, int w, serve_request_t *const *reqs, int n, bool pad, int *status,
                    serve_result_t *res, char (*err)[SERVE_ERRLEN]);

/* ---- sched.c: the request queue and the workers -------------------------- */
typedef struct serve_sched serve_sched_t;
/* Starts `workers` threads, one per predictor of m; max_batch > 1 stacks
 * up to that many rows of compatible requests, waiting up to
 * batch_timeout_ms after the first for more. Returns 0 or -1 with err. */
int serve_sched_start(serve_model_t *m, int workers, int max_batch, int batch_timeout_ms, serve_sched_t **out,
                      char *err, size_t errlen);
/* Checks and queues a request (taking *req over: it is left empty) and
 * waits for its result until `deadline` (CLOCK_MONOTONIC seconds; 0: none).
 * Returns the HTTP status: 200 with *res, 504 past the deadline, else
 * 4xx/5xx; err says why. */
int serve_sched_infer(serve_sched_t *s, serve_request_t *req, double deadline, serve_result_t *res, char *err,
                      size_t errlen);
/* Stops the workers (after the HTTP side has drained) and frees s. */
void serve_sched_stop(serve_sched_t *s);
double serve_now(void);   /* CLOCK_MONOTONIC seconds */

/* ---- metrics.c: Prometheus text ---------------------------------------- */
void serve_metrics_request(const char *endpoint, int status);
void serve_metrics_inference(double seconds);
/* one model run of `requests` requests (`rows` rows stacked) */
void serve_metrics_batch(int requests, int64_t rows);
/* requests waiting for a worker, and in model runs now (sched.c) */
void serve_metrics_gauges(int queued, int running);
/* the exposition text (malloc'ed) */
char *serve_metrics_render(void);

/* ---- accesslog.c: one line per request ---------------------------------- */
/* path: a file (appended to) or "-" (stdout). Returns 0 or -1 with err. */
int serve_access_log_open(const char *path, char *err, size_t errlen);
/* time, peer, method, path, status, bytes, latency; no-op when not open */
void serve_access_log(const char *peer, const char *method, const char *url, int status, size_t bytes, double seconds);
void serve_access_log_close(void);

/* ---- http.c ------------------------------------------------------------ */
typedef struct {
    const char *host; int port;
    size_t max_body;             /* bytes */
    const char *model_name;
    serve_model_t *model;
    serve_sched_t *sched;
    double request_timeout_s;    /* --request-timeout-ms / 1000; 0: none */
} serve_http_config_t;
typedef struct serve_http serve_http_t;
/* Starts listening (threads of its own). Returns 0 with *bound_port set,
 * or -1 with err. */
int serve_http_start(const serve_http_config_t *cfg, serve_http_t **out, int *bound_port, char *err, size_t errlen);
/* Stops accepting, waits up to drain_s for the requests in flight, stops.
 * Returns the number of requests still in flight when it gave up. */
int serve_http_stop(serve_http_t *h, double drain_s);

#endif
