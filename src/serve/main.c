/* main.c — the oar-serve program (`oar serve` execs it): arguments, model
 * loading, then the main thread waits in sigwait for SIGTERM/SIGINT while
 * libmicrohttpd's threads serve; on the signal it drains and exits 0.
 * Signals are blocked before any thread starts, so that they all inherit
 * the mask and only sigwait sees them. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve.h"

#define DRAIN_S 30.0

static const char USAGE[] =
    "usage: oar serve MODEL [--name N] [--host 127.0.0.1] [--port 8000] [--threads T]\n"
    "                 [--max-batch B] [--batch-timeout-ms MS] [--max-body BYTES]\n"
    "                 [--request-timeout-ms MS] [--access-log FILE|-]\n"
    "Serves MODEL (a directory written by oar.io.save_inference_model or Fluid, or a\n"
    ".pdmodel/.json model file with its .pdiparams beside it) over HTTP with the Open\n"
    "Inference Protocol (KServe v2): /v2/health/live, /v2/health/ready, /v2/models/N,\n"
    "/v2/models/N/ready, /v2/models/N/infer, and /metrics (Prometheus).\n"
    "  --name N               the model's name (default: MODEL's base name)\n"
    "  --host H               IPv4 address to listen on (default 127.0.0.1)\n"
    "  --port P               port (default 8000; 0: any free port, printed)\n"
    "  --threads T            worker threads, each with its own predictor (default 1)\n"
    "  --max-batch B          dynamic batching: stack up to B rows of queued requests\n"
    "                         of the same shapes (no LoD) into one run (default 1: off)\n"
    "  --batch-timeout-ms MS  how long a batch waits for more requests (default 0:\n"
    "                         only those already queued)\n"
    "  --max-body BYTES       largest request body (default 67108864)\n"
    "  --request-timeout-ms MS  a request not answered within MS gets a 504 (default\n"
    "                         0: none); a request's parameters.timeout_ms may be shorter\n"
    "  --access-log FILE|-    one line per request (time, peer, method, path, status,\n"
    "                         bytes, latency) appended to FILE, or to stdout\n"
    "SIGTERM or SIGINT: stop accepting, finish the requests in flight, exit 0.\n";

static int parse_long(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "oar serve: %s wants an integer in [%ld, %ld], got %s\n", flag, lo, hi, v ? v : "nothing");
        return -1;
    }
    *out = x;
    return 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *name = NULL, *host = "127.0.0.1";
    const char *access_log = NULL;
    long port = 8000, threads = 1, max_batch = 1, batch_timeout = 0, max_body = 64L << 20, request_timeout = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(USAGE, stdout); return 0; }
        else if (strcmp(a, "--name") == 0 && v) { name = v; i++; }
        else if (strcmp(a, "--host") == 0 && v) { host = v; i++; }
        else if (strcmp(a, "--port") == 0) { rc = parse_long(a, v, 0, 65535, &port); i++; }
        else if (strcmp(a, "--threads") == 0) { rc = parse_long(a, v, 1, 256, &threads); i++; }
        else if (strcmp(a, "--max-batch") == 0) { rc = parse_long(a, v, 1, 1 << 20, &max_batch); i++; }
        else if (strcmp(a, "--batch-timeout-ms") == 0) { rc = parse_long(a, v, 0, 60000, &batch_timeout); i++; }
        else if (strcmp(a, "--max-body") == 0) { rc = parse_long(a, v, 1024, 1L << 30, &max_body); i++; }
        else if (strcmp(a, "--request-timeout-ms") == 0) { rc = parse_long(a, v, 0, 3600000, &request_timeout); i++; }
        else if (strcmp(a, "--access-log") == 0 && v) { access_log = v; i++; }
        else if (a[0] == '-' || model_path) {
            fprintf(stderr, "oar serve: unexpected argument %s\n%s", a, USAGE);
            return 2;
        } else model_path = a;
        if (rc) return 2;
    }
    if (!model_path) { fputs(USAGE, stderr); return 2; }
    if (!name || !*name || strchr(name, '/')) {
        if (name) { fprintf(stderr, "oar serve: --name must be non-empty without '/'\n"); return 2; }
    }

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    /* a client that hangs up mid-response must not end the server */
    signal(SIGPIPE, SIG_IGN);

    char err[1024];
    if (access_log && serve_access_log_open(access_log, err, sizeof err) != 0) {
        fprintf(stderr, "oar serve: %s\n", err);
        return 1;
    }
    serve_model_t *model;
    if (serve_model_open(model_path, (int)threads, &model, err, sizeof err) != 0) {
        fprintf(stderr, "oar serve: %s\n", err);
        serve_access_log_close();
        return 1;
    }
    serve_sched_t *sched;
    if (serve_sched_start(model, (int)threads, (int)max_batch, (int)batch_timeout, &sched, err, sizeof err) != 0) {
        fprintf(stderr, "oar serve: %s\n", err);
        serve_model_free(model);
        serve_access_log_close();
        return 1;
    }
    char *default_name = serve_default_name(model_path);
    serve_http_config_t cfg = { .host = host, .port = (int)port, .max_body = (size_t)max_body,
                                .model_name = name ? name : default_name, .model = model, .sched = sched,
                                .request_timeout_s = (double)request_timeout / 1000.0 };
    serve_http_t *http;
    int bound;
    if (serve_http_start(&cfg, &http, &bound, err, sizeof err) != 0) {
        fprintf(stderr, "oar serve: %s\n", err);
        serve_sched_stop(sched);
        serve_model_free(model);
        serve_access_log_close();
        free(default_name);
        return 1;
    }
    for (int i = 0; max_batch > 1 && i < serve_model_num_inputs(model); i++) {
        const serve_spec_t *in = serve_model_input(model, i);
        if (in->ndim >= 1 && in->dims[0] < 0 && in->lod_level == 0) continue;
        fprintf(stderr, "oar serve: note: input '%s' %s: dynamic batching is off, each request runs on its own\n",
                in->name, in->lod_level > 0 ? "has LoD" : "declares no free first (batch) dimension");
        break;
    }
    printf("oar serve: model '%s' on http://%s:%d (%ld thread%s", cfg.model_name, host, bound, threads,
           threads == 1 ? "" : "s");
    if (max_batch > 1) printf(", dynamic batching up to %ld rows, %ld ms", max_batch, batch_timeout);
    printf(")\n");
    fflush(stdout);

    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    fprintf(stderr, "oar serve: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    int left = serve_http_stop(http, DRAIN_S);
    if (left > 0) fprintf(stderr, "oar serve: %d request(s) still running after %.0f s; stopped anyway\n", left, DRAIN_S);
    serve_sched_stop(sched);
    serve_model_free(model);
    serve_access_log_close();
    free(default_name);
    return 0;
}
