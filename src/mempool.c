/* mempool.c — best-fit cache of large blocks (>= 64 KiB). Small blocks go
 * straight to malloc, whose own bins already serve them well. A cached block
 * is reused for a request of at least half its size.
 *
 * Blocks of 1 MiB or more are whole 2 MiB pages, aligned and marked for
 * transparent huge pages (Linux, THP in "madvise" or "always" mode): one TLB
 * entry per 2 MiB instead of 512, and above all one page to pin instead of
 * 512 when OpenMPI's single-copy transport (CMA) reads the block from
 * another process, which made the all-reduce of the MLP's gradients 40 %
 * faster (bench/allreduce_cold.c, HUGE=1). OAR_HUGEPAGES=0 turns it off. */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "mempool.h"

#define ALIGN 64
#define POOL_MIN ((size_t)64 << 10)
#define SLOTS 128

typedef struct { void *p; size_t cap; } block_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static block_t g_blocks[SLOTS];
static int g_n;
static size_t g_cached, g_limit;

static size_t limit(void) {
    if (!g_limit) {
        const char *env = getenv("OAR_POOL_LIMIT_MB");
        long mb = env ? strtol(env, NULL, 10) : 512;
        g_limit = (size_t)(mb < 0 ? 0 : mb) << 20;
        if (!g_limit) g_limit = 1;  /* 0 disables caching: nothing fits in 1 byte */
    }
    return g_limit;
}

#define HUGE_MIN ((size_t)1 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static bool huge_pages(void) {
    static int on = -1;   /* read once; a race only reads the same value twice */
    if (on < 0) {
        const char *env = getenv("OAR_HUGEPAGES");
        on = !(env && strcmp(env, "0") == 0);
    }
    return on;
}

static size_t round_up(size_t bytes) {
    size_t cap = bytes ? (bytes + ALIGN - 1) / ALIGN * ALIGN : ALIGN;
    if (cap >= HUGE_MIN && huge_pages()) cap = (cap + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    else if (cap >= POOL_MIN) cap = (cap + 4095) / 4096 * 4096;   /* whole pages */
    return cap;
}

/* a fresh block from the C library; huge-page sized ones on a huge-page boundary */
static void *fresh(size_t want) {
    void *p = NULL;
    bool huge = want >= HUGE_MIN && want % HUGE_PAGE == 0 && huge_pages();
    if (posix_memalign(&p, huge ? HUGE_PAGE : ALIGN, want) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (huge) (void)madvise(p, want, MADV_HUGEPAGE);   /* advice only: refused is fine */
#endif
    return p;
}

/* Small blocks (up to SMALL_MAX bytes, in 64-byte classes) are kept per
 * thread in LIFO stacks: a run allocates and frees thousands of tiny
 * temporaries (scalars, bias rows), which posix_memalign/free would otherwise
 * churn and fragment. Each class keeps at most SMALL_KEEP blocks. */
#define SMALL_MAX 1024
#define SMALL_CLASSES (SMALL_MAX / ALIGN)
#define SMALL_KEEP 4096
typedef struct { void *p[SMALL_KEEP]; int n; } small_stack_t;
static _Thread_local small_stack_t *t_small[SMALL_CLASSES];

static void *small_pop(size_t want) {
    small_stack_t *st = t_small[want / ALIGN - 1];
    return st && st->n > 0 ? st->p[--st->n] : NULL;
}

static bool small_push(void *p, size_t cap) {
    small_stack_t **slot = &t_small[cap / ALIGN - 1];
    if (!*slot) *slot = calloc(1, sizeof **slot);   /* freed at process exit */
    if (!*slot || (*slot)->n >= SMALL_KEEP) return false;
    (*slot)->p[(*slot)->n++] = p;
    return true;
}

void *oar_pool_alloc(size_t bytes, size_t *cap) {
    if (bytes > SIZE_MAX - 8192) return NULL;
    size_t want = round_up(bytes);
    if (want <= SMALL_MAX) {
        void *p = small_pop(want);
        if (p) { *cap = want; return p; }
    }
    if (want >= POOL_MIN) {
        pthread_mutex_lock(&g_lock);
        int best = -1;
        for (int i = 0; i < g_n; i++)
            if (g_blocks[i].cap >= want && g_blocks[i].cap / 2 <= want &&
                (best < 0 || g_blocks[i].cap < g_blocks[best].cap))
                best = i;
        if (best >= 0) {
            block_t b = g_blocks[best];
            g_blocks[best] = g_blocks[--g_n];
            g_cached -= b.cap;
            pthread_mutex_unlock(&g_lock);
            *cap = b.cap;
            return b.p;
        }
        pthread_mutex_unlock(&g_lock);
    }
    void *p = fresh(want);
    if (!p) return NULL;
    *cap = want;
    return p;
}

void oar_pool_free(void *p, size_t cap) {
    if (!p) return;
    if (cap <= SMALL_MAX && cap % ALIGN == 0 && small_push(p, cap)) return;
    if (cap >= POOL_MIN) {
        pthread_mutex_lock(&g_lock);
        if (g_n < SLOTS && g_cached + cap <= limit()) {
            g_blocks[g_n++] = (block_t){p, cap};
            g_cached += cap;
            pthread_mutex_unlock(&g_lock);
            return;
        }
        pthread_mutex_unlock(&g_lock);
    }
    free(p);
}

size_t oar_pool_cached(void) {
    pthread_mutex_lock(&g_lock);
    size_t n = g_cached;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void oar_pool_trim(void) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_n; i++) free(g_blocks[i].p);
    g_n = 0;
    g_cached = 0;
    pthread_mutex_unlock(&g_lock);
}
