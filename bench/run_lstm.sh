#!/usr/bin/env bash
# run_lstm.sh: LSTM training throughput (T=32, hidden 128, batch 32), oar
# (1 and 2 threads) against PyTorch (its best of 1 and 2 threads), one run.
#   bench/run_lstm.sh [T H B steps]
set -uo pipefail
cd "$(dirname "$0")/.."
for t in 1 2; do
  echo "oar threads $t: $(OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t luajit bench/bench_lstm.lua "$@")"
done
python3 bench/torch_lstm.py "$@"
