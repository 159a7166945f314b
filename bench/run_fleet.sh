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
# the ceiling: the same two single-thread processes at once, with no
# communication at all (how much the two cores give two independent jobs)
T1=$(mktemp) T2=$(mktemp)
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_fleet.lua $B $STEPS >"$T1" &
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_fleet.lua $B $STEPS >"$T2" &
wait
sed 's/^/2 independent processes x 1 thread, no communication (each): /' "$T1" "$T2"
rm -f "$T1" "$T2"
echo "== allreduce, float32, 2 workers"
mpicc -O2 bench/allreduce_bench.c -Isrc -Lbuild -loar -Wl,-rpath,"$(pwd)/build" -o build/allreduce_bench
mpirun --allow-run-as-root -np 2 build/allreduce_bench
echo "load average: $(cat /proc/loadavg)"
