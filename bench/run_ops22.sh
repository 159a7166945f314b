#!/usr/bin/env bash
# run_ops22.sh: issue 22's speed check, oar's CPU kernels against PyTorch
# (pip) for the losses, norms, bmm and conv3d: forward + backward per call
# (bench/bench_ops22.lua, bench/torch_ops22.py), each framework at 1 and 2
# threads (oar: OMP_NUM_THREADS=t; torch: torch.set_num_threads(t)),
# interleaved over ROUNDS rounds. Prints every RESULT line prefixed with its
# round and thread count, then per case oar's and torch's median
# microseconds at their best thread count and the per-round ratios torch/oar
# (above 1: oar is faster) at 1 thread, 2 threads and best against best, as
# median [min, max], with the load average before and after. The issue's
# bar is the best/best column at or above 1. From the repository root after
# `NO_CUDA=1 make`, PyTorch installed, on a quiet machine:
#   ROUNDS=5 bench/run_ops22.sh > bench/results/ops22-rounds.txt
#   [ROUNDS=3] [PYTHON=python3] bench/run_ops22.sh [iters] [reps] [case-pattern]
# iters (200) calls per window, the best of reps (5) windows; case-pattern
# picks cases (a plain substring such as conv3d or bmm works for both sides).
# Smoke test (seconds): ROUNDS=1 bench/run_ops22.sh 3 1
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-python3}
ITERS=${1:-200}; REPS=${2:-5}; PAT=${3:-}
log=$(mktemp); trap 'rm -f "$log"' EXIT
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
have_torch=1
$PY -c 'import torch' 2>/dev/null || { have_torch=0; echo "== PyTorch not installed: oar figures only"; }
for ((r = 1; r <= ROUNDS; r++)); do
  for t in 1 2; do
    OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t luajit bench/bench_ops22.lua "$ITERS" "$REPS" "$PAT" \
      | sed "s/^/round $r threads $t /" | tee -a "$log"
    if [ "$have_torch" = 1 ]; then
      OMP_NUM_THREADS=$t $PY bench/torch_ops22.py "$ITERS" "$REPS" "$PAT" "$t" \
        | sed "s/^/round $r threads $t /" | tee -a "$log"
    fi
  done
done
echo "== per-call times (us) and torch/oar ratios over $ROUNDS rounds"
$PY bench/ratio_table.py "$log"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
