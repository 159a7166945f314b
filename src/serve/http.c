/* http.c — the HTTP side over libmicrohttpd: one thread per connection (it
 * waits while sched.c's workers run the model), request bodies gathered up
 * to a bound, routing of the v2 endpoints and /metrics, JSON errors, the
 * binary tensor data extension's header, the access log. Requests in
 * flight are counted so that a stop can drain them. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>
#include "serve.h"

struct serve_http {
    struct MHD_Daemon *daemon;
    serve_http_config_t cfg;
    atomic_int inflight;
    atomic_bool draining;
};

typedef struct {
    char *body; size_t len, cap;
    bool too_large;
    double t0;                   /* the headers came */
    int status; size_t bytes;    /* what went out, for the access log */
    char peer[64], method[16], *url;
} req_ctx_t;

/* queues a response; json_len < len: the binary data extension's header */
static enum MHD_Result send_body(struct MHD_Connection *c, req_ctx_t *ctx, int status, const char *type,
                                 const char *text, size_t len, size_t json_len, const char *endpoint) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (json_len < len) {
        char n[32];
        snprintf(n, sizeof n, "%zu", json_len);
        MHD_add_response_header(r, "Inference-Header-Content-Length", n);
    }
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    serve_metrics_request(endpoint, status);
    ctx->status = status;
    ctx->bytes = len;
    return ok;
}

static enum MHD_Result send_text(struct MHD_Connection *c, req_ctx_t *ctx, int status, const char *type,
                                 const char *text, size_t len, const char *endpoint) {
    return send_body(c, ctx, status, type, text, len, len, endpoint);
}

/* sends and releases a JSON object */
static enum MHD_Result send_json(struct MHD_Connection *c, req_ctx_t *ctx, int status, json_object *o,
                                 const char *endpoint) {
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    enum MHD_Result ok = send_text(c, ctx, status, "application/json", s, len, endpoint);
    json_object_put(o);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, req_ctx_t *ctx, int status, const char *msg,
                                  const char *endpoint) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    return send_json(c, ctx, status, o, endpoint);
}

/* metadata names every dtype, also those infer does not take */
static const char *meta_dtype(int dtype) {
    const char *v2 = serve_dtype_to_v2(dtype);
    if (v2) return v2;
    switch (dtype) {
    case OAR_FP16: return "FP16";
    case OAR_INT16: return "INT16";
    case OAR_INT8: return "INT8";
    case OAR_UINT8: return "UINT8";
    default: return "UNKNOWN";
    }
}

static json_object *spec_json(const serve_spec_t *s) {
    json_object *o = json_object_new_object(), *shape = json_object_new_array();
    json_object_object_add(o, "name", json_object_new_string(s->name));
    json_object_object_add(o, "datatype", json_object_new_string(meta_dtype(s->dtype)));
    if (s->ndim < 0) json_object_array_add(shape, json_object_new_int64(-1));   /* undeclared: unknown rank */
    for (int i = 0; i < s->ndim; i++) json_object_array_add(shape, json_object_new_int64(s->dims[i]));
    json_object_object_add(o, "shape", shape);
    return o;
}

static enum MHD_Result model_metadata(struct serve_http *h, struct MHD_Connection *c, req_ctx_t *ctx) {
    serve_model_t *m = h->cfg.model;
    json_object *o = json_object_new_object(), *versions = json_object_new_array();
    json_object *ins = json_object_new_array(), *outs = json_object_new_array();
    json_object_object_add(o, "name", json_object_new_string(h->cfg.model_name));
    json_object_array_add(versions, json_object_new_string("1"));
    json_object_object_add(o, "versions", versions);
    json_object_object_add(o, "platform", json_object_new_string("oar"));
    for (int i = 0; i < serve_model_num_inputs(m); i++) json_object_array_add(ins, spec_json(serve_model_input(m, i)));
    for (int i = 0; i < serve_model_num_outputs(m); i++) json_object_array_add(outs, spec_json(serve_model_output(m, i)));
    json_object_object_add(o, "inputs", ins);
    json_object_object_add(o, "outputs", outs);
    return send_json(c, ctx, 200, o, "model_metadata");
}

static enum MHD_Result infer(struct serve_http *h, struct MHD_Connection *c, req_ctx_t *ctx) {
    char err[1024];
    serve_request_t req;
    double t0 = serve_now();
    size_t json_len = ctx->len;
    const char *hl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Inference-Header-Content-Length");
    if (hl) {
        char *end;
        unsigned long long v = strtoull(hl, &end, 10);
        if (end == hl || *end || v > ctx->len) {
            snprintf(err, sizeof err, "Inference-Header-Content-Length '%.40s' is not a length within the body's %zu bytes",
                     hl, ctx->len);
            return send_error(c, ctx, 400, err, "infer");
        }
        json_len = (size_t)v;
    }
    int status = serve_parse_request(ctx->body ? ctx->body : "", ctx->len, json_len, &req, err, sizeof err);
    /* the tensors are copies: the body need not wait in the queue with them */
    free(ctx->body);
    ctx->body = NULL;
    ctx->len = ctx->cap = 0;
    if (status) return send_error(c, ctx, status, err, "infer");
    /* the deadline: the server's, or the request's own when that is sooner */
    double deadline = h->cfg.request_timeout_s > 0 ? ctx->t0 + h->cfg.request_timeout_s : 0;
    if (req.timeout_us >= 0 && (deadline == 0 || ctx->t0 + (double)req.timeout_us * 1e-6 < deadline))
        deadline = ctx->t0 + (double)req.timeout_us * 1e-6;
    /* what the response needs of the request, which goes to the queue */
    int nflags = req.noutputs;
    bool binary_output = req.binary_output;
    char *id = req.id;
    req.id = NULL;
    int *flags = calloc((size_t)nflags + 1, sizeof *flags);
    for (int i = 0; flags && i < nflags; i++) flags[i] = req.outputs[i].binary;
    serve_result_t res;
    if (!flags) {
        status = 500;
        snprintf(err, sizeof err, "out of memory");
    } else if (deadline > 0 && serve_now() >= deadline) {
        status = 504;
        snprintf(err, sizeof err, "the request's deadline passed before it was queued");
    } else {
        status = serve_sched_infer(h->cfg.sched, &req, deadline, &res, err, sizeof err);
    }
    serve_request_free(&req);
    if (status != 200) { free(flags); free(id); return send_error(c, ctx, status, err, "infer"); }
    char *body;
    size_t len, jl;
    int rc = serve_encode_response(h->cfg.model_name, id, flags, nflags, binary_output, &res, &body, &len, &jl);
    free(flags);
    free(id);
    serve_result_free(&res);
    if (rc != 0) return send_error(c, ctx, 500, "out of memory", "infer");
    serve_metrics_inference(serve_now() - t0);
    enum MHD_Result ok = send_body(c, ctx, 200, jl < len ? "application/octet-stream" : "application/json", body, len, jl,
                                   "infer");
    free(body);
    return ok;
}

/* "/v2/models/{name}[/versions/1]{rest}": whether it names the model (404
 * otherwise); *rest gets what follows */
static bool model_path(struct serve_http *h, const char *url, const char **rest, char *err, size_t errlen) {
    const char *p = url + strlen("/v2/models/");
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n != strlen(h->cfg.model_name) || strncmp(p, h->cfg.model_name, n) != 0) {
        snprintf(err, errlen, "unknown model '%.*s' (this server serves '%s')", (int)(n > 200 ? 200 : n), p,
                 h->cfg.model_name);
        return false;
    }
    p += n;
    if (strncmp(p, "/versions/1", 11) == 0 && (p[11] == '\0' || p[11] == '/')) p += 11;
    *rest = p;
    return true;
}

static enum MHD_Result route(struct serve_http *h, struct MHD_Connection *c, const char *url, const char *method,
                             req_ctx_t *ctx) {
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0, post = strcmp(method, "POST") == 0;
    char err[512];
    if (strcmp(url, "/v2/health/live") == 0 && get) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "live", json_object_new_boolean(1));
        return send_json(c, ctx, 200, o, "health_live");
    }
    if (strcmp(url, "/v2/health/ready") == 0 && get) {
        bool ready = !atomic_load(&h->draining);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "ready", json_object_new_boolean(ready));
        return send_json(c, ctx, ready ? 200 : 503, o, "health_ready");
    }
    if ((strcmp(url, "/v2") == 0 || strcmp(url, "/v2/") == 0) && get) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string("oar"));
        json_object *ext = json_object_new_array();
        json_object_array_add(ext, json_object_new_string("binary_tensor_data"));
        json_object_object_add(o, "extensions", ext);
        return send_json(c, ctx, 200, o, "server_metadata");
    }
    if (strcmp(url, "/metrics") == 0 && get) {
        char *text = serve_metrics_render();
        if (!text) return send_error(c, ctx, 500, "out of memory", "metrics");
        /* counted before it is rendered next time: this request shows up in the following scrape */
        enum MHD_Result ok = send_text(c, ctx, 200, "text/plain; version=0.0.4", text, strlen(text), "metrics");
        free(text);
        return ok;
    }
    if (strncmp(url, "/v2/models/", 11) == 0) {
        const char *rest;
        const char *endpoint = strstr(url, "/infer") ? "infer" : strstr(url, "/ready") ? "model_ready" : "model_metadata";
        if (!model_path(h, url, &rest, err, sizeof err)) return send_error(c, ctx, 404, err, endpoint);
        if (*rest == '\0' || strcmp(rest, "/") == 0) {
            if (get) return model_metadata(h, c, ctx);
            return send_error(c, ctx, 405, "model metadata takes GET", endpoint);
        }
        if (strcmp(rest, "/ready") == 0) {
            if (!get) return send_error(c, ctx, 405, "model ready takes GET", endpoint);
            json_object *o = json_object_new_object();
            json_object_object_add(o, "name", json_object_new_string(h->cfg.model_name));
            json_object_object_add(o, "ready", json_object_new_boolean(1));
            return send_json(c, ctx, 200, o, endpoint);
        }
        if (strcmp(rest, "/infer") == 0) {
            if (!post) return send_error(c, ctx, 405, "infer takes POST", endpoint);
            if (ctx->too_large) {
                snprintf(err, sizeof err, "request body too large (limit %zu bytes, --max-body)", h->cfg.max_body);
                return send_error(c, ctx, 413, err, endpoint);
            }
            return infer(h, c, ctx);
        }
    }
    snprintf(err, sizeof err, "no endpoint %s %.200s", method, url);
    return send_error(c, ctx, 404, err, "other");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    struct serve_http *h = cls;
    req_ctx_t *ctx = *con_cls;
    if (!ctx) {
        /* first call: headers only */
        ctx = calloc(1, sizeof *ctx);
        if (!ctx) return MHD_NO;
        *con_cls = ctx;
        atomic_fetch_add(&h->inflight, 1);
        ctx->t0 = serve_now();
        snprintf(ctx->method, sizeof ctx->method, "%s", method);
        ctx->url = strdup(url);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
            const struct sockaddr_in *sa = (const struct sockaddr_in *)ci->client_addr;
            char ip[INET_ADDRSTRLEN] = "?";
            inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip);
            snprintf(ctx->peer, sizeof ctx->peer, "%s:%u", ip, (unsigned)ntohs(sa->sin_port));
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body) {
            /* answered before the body is read: MHD closes the connection after it */
            char err[160];
            snprintf(err, sizeof err, "request body too large (%s bytes, limit %zu, --max-body)", cl, h->cfg.max_body);
            return send_error(c, ctx, 413, err, strstr(url, "/infer") ? "infer" : "other");
        }
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (ctx->too_large || ctx->len + n > h->cfg.max_body) {
            /* chunked bodies have no Content-Length: drop what passes the bound */
            ctx->too_large = true;
            free(ctx->body);
            ctx->body = NULL;
            ctx->len = ctx->cap = 0;
            return MHD_YES;
        }
        if (ctx->len + n + 1 > ctx->cap) {
            size_t cap = ctx->cap ? ctx->cap : 4096;
            while (cap < ctx->len + n + 1) cap *= 2;
            char *b = realloc(ctx->body, cap);
            if (!b) { ctx->too_large = true; return MHD_YES; }
            ctx->body = b;
            ctx->cap = cap;
        }
        memcpy(ctx->body + ctx->len, upload, n);
        ctx->len += n;
        ctx->body[ctx->len] = '\0';
        return MHD_YES;
    }
    return route(h, c, url, method, ctx);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)c; (void)toe;
    struct serve_http *h = cls;
    req_ctx_t *ctx = *con_cls;
    if (!ctx) return;
    serve_access_log(ctx->peer, ctx->method, ctx->url, ctx->status, ctx->bytes, serve_now() - ctx->t0);
    free(ctx->url);
    free(ctx->body);
    free(ctx);
    *con_cls = NULL;
    atomic_fetch_sub(&h->inflight, 1);
}

int serve_http_start(const serve_http_config_t *cfg, serve_http_t **out, int *bound_port, char *err, size_t errlen) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)cfg->port);
    const char *host = strcmp(cfg->host, "localhost") == 0 ? "127.0.0.1" : cfg->host;
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        snprintf(err, errlen, "--host %s: not an IPv4 address", cfg->host);
        return -1;
    }
    struct serve_http *h = calloc(1, sizeof *h);
    if (!h) { snprintf(err, errlen, "out of memory"); return -1; }
    h->cfg = *cfg;
    atomic_init(&h->inflight, 0);
    atomic_init(&h->draining, false);
    /* ITC: MHD_quiesce_daemon needs it with internal threads */
    h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                                 MHD_USE_ERROR_LOG,
                                 0, NULL, NULL, on_request, h,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)256,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not an address of this machine)", cfg->host, cfg->port);
        free(h);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    *bound_port = info ? (int)info->port : cfg->port;
    *out = h;
    return 0;
}

int serve_http_stop(serve_http_t *h, double drain_s) {
    atomic_store(&h->draining, true);
    MHD_socket fd = MHD_quiesce_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    double until = serve_now() + drain_s;
    while (atomic_load(&h->inflight) > 0 && serve_now() < until) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    int left = atomic_load(&h->inflight);
    MHD_stop_daemon(h->daemon);
    free(h);
    return left;
}
