/* metrics.c — Prometheus text exposition: requests by endpoint and status,
 * successful inferences, a histogram of inference latency, and one of the
 * requests each model run served (dynamic batching), and gauges of the
 * requests queued and running. One mutex: a handful of additions per
 * request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "serve.h"

#define MAX_SERIES 64
static const double BUCKETS[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define NBUCKETS (sizeof BUCKETS / sizeof BUCKETS[0])

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { const char *endpoint; int status; uint64_t count; } g_req[MAX_SERIES];
static int g_nreq;
static uint64_t g_bucket[NBUCKETS + 1];   /* last: +Inf */
static uint64_t g_infer_count;
static double g_infer_sum;
static const double BATCH_BUCKETS[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
#define NBATCH (sizeof BATCH_BUCKETS / sizeof BATCH_BUCKETS[0])
static uint64_t g_batch_bucket[NBATCH + 1], g_batch_count, g_batch_requests, g_batch_rows;

static int g_queued, g_running;

void serve_metrics_gauges(int queued, int running) {
    pthread_mutex_lock(&g_mu);
    g_queued = queued;
    g_running = running;
    pthread_mutex_unlock(&g_mu);
}

void serve_metrics_batch(int requests, int64_t rows) {
    pthread_mutex_lock(&g_mu);
    size_t b = 0;
    while (b < NBATCH && requests > BATCH_BUCKETS[b]) b++;
    g_batch_bucket[b]++;
    g_batch_count++;
    g_batch_requests += (uint64_t)requests;
    g_batch_rows += rows > 0 ? (uint64_t)rows : 0;
    pthread_mutex_unlock(&g_mu);
}

/* endpoint: one of http.c's fixed labels (static strings) */
void serve_metrics_request(const char *endpoint, int status) {
    pthread_mutex_lock(&g_mu);
    int i = 0;
    while (i < g_nreq && !(g_req[i].status == status && strcmp(g_req[i].endpoint, endpoint) == 0)) i++;
    if (i == g_nreq && g_nreq < MAX_SERIES) {
        g_req[i].endpoint = endpoint;
        g_req[i].status = status;
        g_nreq++;
    }
    if (i < g_nreq) g_req[i].count++;
    pthread_mutex_unlock(&g_mu);
}

void serve_metrics_inference(double seconds) {
    pthread_mutex_lock(&g_mu);
    size_t b = 0;
    while (b < NBUCKETS && seconds > BUCKETS[b]) b++;
    g_bucket[b]++;
    g_infer_count++;
    g_infer_sum += seconds;
    pthread_mutex_unlock(&g_mu);
}

char *serve_metrics_render(void) {
    size_t cap = 8192 + (size_t)MAX_SERIES * 128;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t k = 0;
#define EMIT(...) do { if (k < cap) k += (size_t)snprintf(out + k, cap - k, __VA_ARGS__); } while (0)
    pthread_mutex_lock(&g_mu);
    EMIT("# HELP oar_serve_requests_total HTTP requests by endpoint and status code.\n"
         "# TYPE oar_serve_requests_total counter\n");
    for (int i = 0; i < g_nreq; i++)
        EMIT("oar_serve_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n", g_req[i].endpoint, g_req[i].status,
             (unsigned long long)g_req[i].count);
    EMIT("# HELP oar_serve_inferences_total Successful inference requests.\n"
         "# TYPE oar_serve_inferences_total counter\n"
         "oar_serve_inferences_total %llu\n", (unsigned long long)g_infer_count);
    EMIT("# HELP oar_serve_inference_seconds Time from a parsed request to its response body.\n"
         "# TYPE oar_serve_inference_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        cum += g_bucket[b];
        EMIT("oar_serve_inference_seconds_bucket{le=\"%g\"} %llu\n", BUCKETS[b], (unsigned long long)cum);
    }
    cum += g_bucket[NBUCKETS];
    EMIT("oar_serve_inference_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    EMIT("oar_serve_inference_seconds_sum %.9g\noar_serve_inference_seconds_count %llu\n", g_infer_sum,
         (unsigned long long)g_infer_count);
    EMIT("# HELP oar_serve_batch_requests Requests served by one model run (dynamic batching stacks several).\n"
         "# TYPE oar_serve_batch_requests histogram\n");
    cum = 0;
    for (size_t b = 0; b < NBATCH; b++) {
        cum += g_batch_bucket[b];
        EMIT("oar_serve_batch_requests_bucket{le=\"%g\"} %llu\n", BATCH_BUCKETS[b], (unsigned long long)cum);
    }
    cum += g_batch_bucket[NBATCH];
    EMIT("oar_serve_batch_requests_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    EMIT("oar_serve_batch_requests_sum %llu\noar_serve_batch_requests_count %llu\n",
         (unsigned long long)g_batch_requests, (unsigned long long)g_batch_count);
    EMIT("# HELP oar_serve_queued_requests Requests waiting for a worker.\n"
         "# TYPE oar_serve_queued_requests gauge\noar_serve_queued_requests %d\n"
         "# HELP oar_serve_running_requests Requests in model runs now.\n"
         "# TYPE oar_serve_running_requests gauge\noar_serve_running_requests %d\n", g_queued, g_running);
    EMIT("# HELP oar_serve_batch_rows_total Rows (first-dimension entries) the model runs took.\n"
         "# TYPE oar_serve_batch_rows_total counter\noar_serve_batch_rows_total %llu\n", (unsigned long long)g_batch_rows);
    pthread_mutex_unlock(&g_mu);
#undef EMIT
    return out;
}
