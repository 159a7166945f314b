#!/bin/sh
# Data-parallel scaling in interleaved rounds (issue 10), from the repository
# root after `make`. Each round runs, one after another: 1 worker x 1 thread,
# 1 worker x 2 threads, 2 workers x 1 thread (mpirun), and the ceiling (the
# same two single-thread processes at once with no communication). The
# machine's speed swings from round to round, so ratios are taken within a
# round and summarised as median [min, max] by bench/run_fleet_table.py.
#   ROUNDS=5 STEPS=3000 sh bench/run_fleet_rounds.sh > bench/results/fleet.tsv
set -e
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-3000}
B=${B:-64}
rate() { awk '{for (i = 1; i <= NF; i++) if ($i == "samples/s") print $(i - 1)}' | tail -1; }
printf "round\tload\tone_1thr\tone_2thr\tfleet_2x1\tceiling_2x1\n"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  a=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_fleet.lua $B $STEPS | rate)
  b=$(OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 luajit bench/bench_fleet.lua $B $STEPS | rate)
  c=$(mpirun --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
        luajit bench/bench_fleet.lua $B $STEPS fleet 2>&1 | grep '^job' | rate)
  T1=$(mktemp) T2=$(mktemp)
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_fleet.lua $B $STEPS >"$T1" &
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_fleet.lua $B $STEPS >"$T2"
  wait
  d=$(( $(rate <"$T1") + $(rate <"$T2") ))
  rm -f "$T1" "$T2"
  printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$r" "$load" "$a" "$b" "$c" "$d"
  r=$((r + 1))
done
