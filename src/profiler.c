/* profiler.c — per-op-type wall time, collected by the executor while the
 * "profile" flag is set (Fluid's profiler, at op granularity). Off, it costs
 * the executor one branch per op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "error.h"
#include "profiler.h"
#include "strmap.h"

int oar_flag_profile = 0;

typedef struct { char *type; double seconds; int64_t calls; } entry_t;
static entry_t *g_entries;
static int g_n, g_cap;
static oar_strmap_t g_index;
static char *g_report;
static int64_t g_run_peak;     /* the largest run peak since the last reset */

void oar_profile_run_peak(int64_t bytes) {
    if (bytes > g_run_peak) g_run_peak = bytes;
}

int64_t oar_profile_peak_bytes(void) { return g_run_peak; }

double oar_profile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void oar_profile_add(const char *type, double seconds) {
    int i = oar_strmap_get(&g_index, type);
    if (i < 0) {
        if (oar_grow((void **)&g_entries, &g_cap, g_n + 1, sizeof *g_entries) != OAR_OK) return;
        char *copy = oar_xstrdup(type);
        if (!copy) return;
        if (oar_strmap_put(&g_index, copy, g_n) != OAR_OK) { free(copy); return; }
        g_entries[g_n] = (entry_t){copy, 0, 0};
        i = g_n++;
    }
    g_entries[i].seconds += seconds;
    g_entries[i].calls++;
}

void oar_profile_reset(void) {
    oar_strmap_clear(&g_index);
    for (int i = 0; i < g_n; i++) free(g_entries[i].type);
    g_n = 0;
    g_run_peak = 0;
}

static int by_time(const void *a, const void *b) {
    double x = ((const entry_t *)a)->seconds, y = ((const entry_t *)b)->seconds;
    return (x < y) - (x > y);
}

const char *oar_profile_report(void) {
    free(g_report);
    g_report = NULL;
    entry_t *sorted = oar_xmalloc(sizeof *sorted * (size_t)(g_n ? g_n : 1));
    if (!sorted) return NULL;
    memcpy(sorted, g_entries, sizeof *sorted * (size_t)g_n);
    qsort(sorted, (size_t)g_n, sizeof *sorted, by_time);
    double total = 0;
    for (int i = 0; i < g_n; i++) total += sorted[i].seconds;
    size_t cap = 128 + (size_t)g_n * 128, len = 0;
    g_report = oar_xmalloc(cap);
    if (!g_report) { free(sorted); return NULL; }
    len += (size_t)snprintf(g_report + len, cap - len, "%-32s %10s %12s %10s %7s\n", "op", "calls", "total ms", "avg us", "share");
    for (int i = 0; i < g_n; i++)
        len += (size_t)snprintf(g_report + len, cap - len, "%-32s %10lld %12.3f %10.2f %6.1f%%\n", sorted[i].type,
                                (long long)sorted[i].calls, sorted[i].seconds * 1e3,
                                sorted[i].seconds * 1e6 / (double)sorted[i].calls,
                                total > 0 ? 100.0 * sorted[i].seconds / total : 0.0);
    len += (size_t)snprintf(g_report + len, cap - len, "%-32s %10s %12.3f\n", "total", "", total * 1e3);
    snprintf(g_report + len, cap - len, "peak memory of a run: %.3f MiB above what was live when it started\n",
             (double)g_run_peak / (1024.0 * 1024.0));
    free(sorted);
    return g_report;
}
