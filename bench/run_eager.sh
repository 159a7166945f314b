#!/bin/sh
# Eager mode against PyTorch eager, interleaved rounds (issue: eager mode's
# speed targets): per-op overhead of a one-element add chain (forward, and
# forward + backward), and an MLP training step (Adam; PyTorch's fused Adam
# where it has one), each framework at 1 and 2 threads. From the repository
# root after `make`, PyTorch installed (pip install torch):
#   ROUNDS=3 sh bench/run_eager.sh > bench/results/eager-rounds.txt
set -e
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
echo "load average before: $(cat /proc/loadavg)"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  for t in 1 2; do
    echo "round $r threads $t"
    OMP_NUM_THREADS=$t luajit bench/bench_eager.lua 20000 5 40
    python3 bench/torch_eager.py 20000 5 40 $t
  done
  r=$((r + 1))
done
echo "load average after: $(cat /proc/loadavg)"
