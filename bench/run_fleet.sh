#!/bin/sh
# Data-parallel benchmarks (issue 10), from the repository root after `make`:
#   1. the MLP: 2 workers x 1 thread (mpirun) vs 1 worker x 1 thread and x 2 threads
#   2. allreduce latency and bus bandwidth: oar's interface vs MPI_Allreduce
# Prints the machine's load average first: figures from a busy machine are not final.
set -e
cd "$(dirname "$0")/.."
STEPS=${STEPS:-300}
B=${B:-64}
echo "load average: $(cat /proc/loadavg)"
echo "== MLP 784-512-256-10, Adam, batch $B per process"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_fleet.lua $B $STEPS | sed 's/^/1 worker x 1 thread:  /'
OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 luajit bench/bench_fleet.lua $B $STEPS | sed 's/^/1 worker x 2 threads: /'
OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 luajit bench/bench_fleet.lua $((2 * B)) $STEPS | sed 's/^/1 worker x 2 threads, batch 2B: /'
mpirun --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
  luajit bench/bench_fleet.lua $B $STEPS fleet | sed 's/^/2 workers x 1 thread: /'
echo "== allreduce, float32, 2 workers"
mpicc -O2 bench/allreduce_bench.c -Isrc -Lbuild -loar -Wl,-rpath,"$(pwd)/build" -o build/allreduce_bench
mpirun --allow-run-as-root -np 2 build/allreduce_bench
echo "load average: $(cat /proc/loadavg)"
