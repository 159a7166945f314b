/* allreduce_cold.c — why an all-reduce inside a training step costs more
 * than bench/allreduce_bench.c measures (issue 10), and what the other ways
 * of doing it on one machine would cost. The MLP's 2.1 MB of gradients,
 * reduced in place, timed per call after a barrier, with
 * (0) the same buffer every call (warm, as the microbenchmark), (1) the buffer
 * rewritten before each call and 8 MB of other data written (as a GEMM leaves
 * it), (2) four buffers in turn, (3) both; for four implementations:
 *   mpi   MPI_Allreduce (what oar uses)
 *   impi  MPI_Iallreduce completed by an MPI_Test loop (what overlapping the
 *         reduction with the backward pass would have to use)
 *   rsag  MPI_Reduce_scatter_block then MPI_Allgather (what a sharded
 *         optimizer would use: each worker updates its part of the parameters)
 *   shm   a reduce-scatter / all-gather written by hand over an MPI-3 shared
 *         window (MPI_Win_allocate_shared): an experiment only, oar does not
 *         use it (a home-made collective; the issue asks for the engine's)
 * With HUGE=1 the buffers are 2 MiB transparent huge pages, as oar's memory
 * pool gives blocks of 1 MiB or more (src/mempool.c).
 *   mpicc -O3 -march=native bench/allreduce_cold.c -o build/allreduce_cold
 *   mpirun --allow-run-as-root -np 2 [-x HUGE=1] build/allreduce_cold [mpi|impi|rsag|shm]... */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int rank, size;

/* ---- the shared-window experiment (2 ranks or more, one machine) -------- */
static MPI_Win win;
static float **slot[2];   /* two sets of per-rank slots, used in turn */
static int phase;

static void shm_init(long count)
{
    float *mine;
    MPI_Win_allocate_shared(2 * count * (MPI_Aint)sizeof(float), sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &mine, &win);
    for (int s = 0; s < 2; s++) slot[s] = malloc(size * sizeof(float *));
    for (int q = 0; q < size; q++) {
        MPI_Aint bytes;
        int unit;
        float *p;
        MPI_Win_shared_query(win, q, &bytes, &unit, &p);
        slot[0][q] = p;
        slot[1][q] = p + count;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
}

static void shm_fence(void)
{
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
}

/* Rank r owns chunk r: it publishes the chunks the others own, sums its own
 * from everyone's slots, publishes the sum, then copies the others' sums.
 * Two sets of slots in turn: a rank still reading set k when its peer starts
 * the next call is safe, and the first fence of that call orders the one after. */
static void shm_allreduce(float *g, long n)
{
    float **S = slot[phase];
    phase ^= 1;
    long per = (n + size - 1) / size;
    for (int q = 0; q < size; q++) {
        long a = q * per, b = a + per < n ? a + per : n;
        if (q != rank && a < b) memcpy(S[rank] + a, g + a, (size_t)(b - a) * sizeof(float));
    }
    shm_fence();
    long a = rank * per, b = a + per < n ? a + per : n;
    for (int q = 0; q < size; q++) {
        if (q == rank) continue;
        const float *restrict o = S[q];
        float *restrict mine = g;
        for (long i = a; i < b; i++) mine[i] += o[i];
    }
    if (a < b) memcpy(S[rank] + a, g + a, (size_t)(b - a) * sizeof(float));
    shm_fence();
    for (int q = 0; q < size; q++) {
        long a2 = q * per, b2 = a2 + per < n ? a2 + per : n;
        if (q != rank && a2 < b2) memcpy(g + a2, S[q] + a2, (size_t)(b2 - a2) * sizeof(float));
    }
}

static void reduce(const char *impl, float *b, int count)
{
    if (!strcmp(impl, "shm")) {
        shm_allreduce(b, count);
    } else if (!strcmp(impl, "impi")) {
        MPI_Request rq;
        MPI_Iallreduce(MPI_IN_PLACE, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq);
        int done = 0;
        while (!done) MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    } else if (!strcmp(impl, "rsag")) {
        int per = count / size;   /* count is a multiple of the worker count */
        MPI_Reduce_scatter_block(MPI_IN_PLACE, b, per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        memmove(b + rank * per, b, per * sizeof(float));
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, per, MPI_FLOAT, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(MPI_IN_PLACE, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int count = 535818, iters = 300;
    const int huge = getenv("HUGE") && strcmp(getenv("HUGE"), "0") != 0;
    float *bufs[4];
    for (int b = 0; b < 4; b++) {
        if (huge) {   /* as oar's pool allocates blocks of 1 MiB or more */
            bufs[b] = aligned_alloc(2 << 20, 4 << 20);
            madvise(bufs[b], 4 << 20, MADV_HUGEPAGE);
        } else {
            bufs[b] = malloc(count * sizeof(float));
        }
        for (int i = 0; i < count; i++) bufs[b][i] = 1.0f;
    }
    float *scratch = malloc(8 << 20);
    shm_init(count);
    const char *all[] = {"mpi"};
    int nimpl = argc > 1 ? argc - 1 : 1;
    for (int k = 0; k < nimpl; k++) {
        const char *impl = argc > 1 ? argv[k + 1] : all[0];
        for (int mode = 0; mode < 4; mode++) {
            double tot = 0;
            int wrong = 0;
            for (int it = 0; it < iters; it++) {
                float *b = (mode == 2 || mode == 3) ? bufs[it & 3] : bufs[0];
                if (mode == 1 || mode == 3) {
                    for (int i = 0; i < count; i++) b[i] = (float)((i + rank) & 7);
                    memset(scratch, it, 8 << 20);
                }
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                reduce(impl, b, count);
                tot += MPI_Wtime() - t0;
                if (mode == 1 || mode == 3) {   /* every element is the sum over the ranks */
                    float want = 0;
                    for (int q = 0; q < size; q++) want += (float)((count - 1 + q) & 7);
                    wrong += b[count - 1] != want;
                }
            }
            double worst;
            MPI_Allreduce(&tot, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (rank == 0)
                printf("%-4s mode %d (%s): %.1f us%s\n", impl, mode,
                       mode == 0   ? "warm, same buffer"
                       : mode == 1 ? "rewritten + 8MB evict, same buffer"
                       : mode == 2 ? "rotating 4 buffers"
                                   : "rotating + rewritten + evict",
                       worst / iters * 1e6, wrong ? "  WRONG RESULTS" : "");
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
