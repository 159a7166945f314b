/* allreduce_cold.c — why an all-reduce inside a training step costs 2-3x
 * what bench/allreduce_bench.c measures (issue 10): the MLP's 2.1 MB of
 * gradients, MPI_Allreduce in place, timed per call after a barrier, with
 * (0) the same buffer every call (warm, as the microbenchmark), (1) the buffer
 * rewritten before each call and 8 MB of other data written (as a GEMM leaves
 * it), (2) four buffers in turn, (3) both.
 *   mpicc -O2 bench/allreduce_cold.c -o build/allreduce_cold
 *   mpirun --allow-run-as-root -np 2 build/allreduce_cold */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int count = 535818, iters = 300;
    float *bufs[4];
    for (int b = 0; b < 4; b++) { bufs[b] = malloc(count * 4); for (int i = 0; i < count; i++) bufs[b][i] = 1.0f; }
    float *scratch = malloc(8 << 20);
    for (int mode = 0; mode < 4; mode++) {
        double tot = 0;
        for (int it = 0; it < iters; it++) {
            float *b = (mode == 2 || mode == 3) ? bufs[it & 3] : bufs[0];
            if (mode == 1 || mode == 3) { for (int i = 0; i < count; i++) b[i] = (float)(i & 7); memset(scratch, it, 8 << 20); }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            tot += MPI_Wtime() - t0;
        }
        if (rank == 0) printf("mode %d (%s): %.1f us\n", mode,
            mode == 0 ? "warm, same buffer" : mode == 1 ? "rewritten + 8MB evict, same buffer" : mode == 2 ? "rotating 4 buffers" : "rotating + rewritten + evict", tot / iters * 1e6);
    }
    MPI_Finalize();
    return 0;
}
