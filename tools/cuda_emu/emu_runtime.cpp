/* emu_runtime.cpp — the launches of tools/cuda_emu (see run): one block after
 * another on the launching thread, a block's threads as fibers (ucontext)
 * that switch only at barriers (__syncthreads, a warp's shuffles). A fiber
 * runs its thread to the next barrier; the block's threads take turns, in
 * thread order or reversed (alternating between blocks and launches, so a
 * read of another thread's shared-memory write that lacks a barrier sees
 * stale data in one of the orders). Fibers are made once per launching
 * thread and reused: a launch costs context switches, not thread creation.
 * A block whose threads all wait and none can go on (a barrier some thread
 * never reaches) aborts with a message instead of hanging. */
#include "cuda_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
thread_local cudaError_t emu_launch_error = cudaSuccess;

namespace {
constexpr int kMaxThreads = 1024;
constexpr size_t kStack = (size_t)256 << 10;   /* per fiber, a guard page below it */

struct Bar {
    int expected = 0, count = 0;
    unsigned long long gen = 0;   /* completions */
};
struct Fiber {
    ucontext_t ctx;
    dim3 idx;
    bool done = true;
};
struct Sched {
    ucontext_t main;
    Fiber f[kMaxThreads];
    int made = 0;
    char *stacks = nullptr;
    int cur = -1;                            /* the running fiber */
    const std::function<void()> *fn = nullptr;
    Bar block, warps[kMaxThreads / 32];
    unsigned long long progress = 0;         /* arrivals and finished threads */
    unsigned long long launches = 0;
    unsigned char xbuf[kMaxThreads][8];
};
thread_local Sched *g_s;

[[noreturn]] void die(const char *what)
{
    fprintf(stderr, "tools/cuda_emu: %s\n", what);
    abort();
}

/* a fiber's life: one emulated thread per turn, then back to the scheduler */
void fiber_main()
{
    Sched *s = g_s;
    for (;;) {
        Fiber &me = s->f[s->cur];
        (*s->fn)();
        me.done = true;
        s->progress++;
        swapcontext(&me.ctx, &s->main);
    }
}

Sched *sched(int nt)
{
    if (!g_s) {
        g_s = new Sched;
        void *m = mmap(nullptr, kStack * kMaxThreads, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) die("no memory for the fibers' stacks");
        g_s->stacks = (char *)m;
    }
    Sched *s = g_s;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (; s->made < nt; s->made++) {
        Fiber &f = s->f[s->made];
        char *st = s->stacks + (size_t)s->made * kStack;
        if (mprotect(st, page, PROT_NONE) != 0) die("mprotect of a stack guard failed");
        if (getcontext(&f.ctx) != 0) die("getcontext failed");
        f.ctx.uc_stack.ss_sp = st + page;
        f.ctx.uc_stack.ss_size = kStack - page;
        f.ctx.uc_link = nullptr;   /* fiber_main never returns */
        makecontext(&f.ctx, fiber_main, 0);
    }
    return s;
}

void arrive(Bar &b)
{
    Sched *s = g_s;
    s->progress++;
    const unsigned long long gen = b.gen;
    if (++b.count == b.expected) {
        b.count = 0;
        b.gen++;
        return;
    }
    Fiber &me = s->f[s->cur];
    while (b.gen == gen) swapcontext(&me.ctx, &s->main);
}
}  // namespace

void __syncthreads() { arrive(g_s->block); }
void emu_warp_sync() { arrive(g_s->warps[emu_tid() >> 5]); }
unsigned char *emu_xbuf(int tid) { return g_s->xbuf[tid]; }

void emu_launch(dim3 g, dim3 b, const std::function<void()> &fn)
{
    /* CUDA's limits: a bad configuration is a launch error, read by
     * cudaGetLastError (OAR_CU_LAUNCH) */
    const unsigned long long nt = (unsigned long long)b.x * b.y * b.z;
    if (nt < 1 || nt > kMaxThreads || b.z > 64 || g.x < 1 || g.y < 1 || g.z < 1 || g.y > 65535 || g.z > 65535) {
        emu_launch_error = cudaErrorInvalidConfiguration;
        return;
    }
    Sched *s = sched((int)nt);
    const int n = (int)nt;
    if (s->cur >= 0) die("a kernel launched a kernel");
    s->fn = &fn;
    blockDim = b;
    gridDim = g;
    s->block = Bar{n};
    for (int w = 0; w * 32 < n; w++) s->warps[w] = Bar{n - w * 32 < 32 ? n - w * 32 : 32};
    const unsigned long long launch = s->launches++;
    for (unsigned bz = 0; bz < g.z; bz++)
        for (unsigned by = 0; by < g.y; by++)
            for (unsigned bx = 0; bx < g.x; bx++) {
                blockIdx = dim3(bx, by, bz);
                for (int t = 0; t < n; t++) {
                    s->f[t].done = false;
                    s->f[t].idx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                }
                const bool rev = (launch + bx + by + bz) & 1;
                for (int alive = n; alive > 0;) {
                    const unsigned long long before = s->progress;
                    for (int q = 0; q < n; q++) {
                        const int i = rev ? n - 1 - q : q;
                        if (s->f[i].done) continue;
                        s->cur = i;
                        threadIdx = s->f[i].idx;
                        swapcontext(&s->main, &s->f[i].ctx);
                        if (s->f[i].done) alive--;
                    }
                    if (alive > 0 && s->progress == before)
                        die("deadlock: every live thread of a block waits at a barrier that some thread never reaches");
                }
                s->cur = -1;
            }
}

/* the fake backend's run_end (run edits spec/fixtures/fake_cuda_backend.c to
 * call it): device.cu's own run-wide range checks */
extern "C" int emu_run_end(int device) { return oarcu::run_checks_end(device); }
