/* backend_count.c — kernel calls per (op type, place), counted by the
 * executor while the flag count_kernels is on: a spec can tell that an op
 * ran its CUDA kernel rather than the CPU fallback. Off by default (the
 * per-op path then pays one branch). */
#include <pthread.h>
#include <stdlib.h>
#include "backend_count.h"
#include "error.h"
#include "op.h"
#include "strmap.h"

int oar_flag_count_kernels = 0;

typedef struct { char *type; int64_t calls[2]; } count_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static oar_strmap_t g_index;
static count_t *g_counts;
static int g_n, g_cap;

void oar_kernel_count(const char *op_type, int place)
{
    if (!op_type || place < 0 || place > 1) return;
    pthread_mutex_lock(&g_lock);
    int i = oar_strmap_get(&g_index, op_type);
    if (i < 0 && g_n == g_cap) {
        int cap = g_cap ? g_cap * 2 : 64;
        count_t *c = realloc(g_counts, sizeof *c * (size_t)cap);
        if (c) { g_counts = c; g_cap = cap; }
    }
    if (i < 0 && g_n < g_cap) {
        char *key = oar_xstrdup(op_type);
        if (key && oar_strmap_put(&g_index, key, g_n) == OAR_OK) {
            g_counts[g_n] = (count_t){.type = key};
            i = g_n++;
        } else {
            free(key);
        }
    }
    if (i >= 0) g_counts[i].calls[place]++;
    pthread_mutex_unlock(&g_lock);
}

int64_t oar_kernel_calls(const char *op_type, int place)
{
    if (!op_type || place < 0 || place > 1) return 0;
    pthread_mutex_lock(&g_lock);
    int i = oar_strmap_get(&g_index, op_type);
    int64_t n = i >= 0 ? g_counts[i].calls[place] : 0;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void oar_kernel_calls_reset(void)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n; i++) g_counts[i].calls[0] = g_counts[i].calls[1] = 0;
    pthread_mutex_unlock(&g_lock);
}

bool oar_kernel_registered(const char *op_type, int place, int dtype)
{
    return oar_registry_kernel(op_type, place, dtype) != NULL;
}
