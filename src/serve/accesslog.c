/* accesslog.c — --access-log FILE|-: one line per request, written when
 * its response has gone out (or the connection ended without one):
 *   2026-11-28T15:40:46.123Z 127.0.0.1:50312 POST /v2/models/mlp/infer 200 412 1.234ms
 * time (UTC), peer, method, path, status (0: no response), response body
 * bytes, latency from the request's headers to its end. One mutex; each line
 * is flushed, so a crash loses none and `tail -f` sees them at once. */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include "serve.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_log;
static bool g_own;

int serve_access_log_open(const char *path, char *err, size_t errlen) {
    if (strcmp(path, "-") == 0) { g_log = stdout; g_own = false; return 0; }
    g_log = fopen(path, "a");
    if (!g_log) { snprintf(err, errlen, "--access-log %s: cannot open it for appending", path); return -1; }
    g_own = true;
    return 0;
}

/* what goes on the line of a path: printable ASCII without spaces */
static void clean(const char *s, char *out, size_t cap) {
    size_t k = 0;
    for (; s && *s && k + 1 < cap; s++) out[k++] = (*s > ' ' && *s < 127) ? *s : '?';
    out[k] = '\0';
}

void serve_access_log(const char *peer, const char *method, const char *url, int status, size_t bytes, double seconds) {
    if (!g_log) return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char when[32], m[16], u[512];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    clean(method, m, sizeof m);
    clean(url, u, sizeof u);
    pthread_mutex_lock(&g_mu);
    fprintf(g_log, "%s.%03dZ %s %s %s %d %zu %.3fms\n", when, (int)(tv.tv_usec / 1000), peer && *peer ? peer : "-",
            *m ? m : "-", *u ? u : "-", status, bytes, seconds * 1e3);
    fflush(g_log);
    pthread_mutex_unlock(&g_mu);
}

void serve_access_log_close(void) {
    pthread_mutex_lock(&g_mu);
    if (g_log && g_own) fclose(g_log);
    g_log = NULL;
    pthread_mutex_unlock(&g_mu);
}
