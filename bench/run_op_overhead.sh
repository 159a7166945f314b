#!/usr/bin/env bash
# run_op_overhead.sh: per-op executor overhead, oar against TorchScript, in
# interleaved rounds (a chain of N one-element adds; bench/bench_op_overhead.lua
# and bench/torch_op_overhead.py). Prints each round's figures and the
# per-round ratios torch/oar (above 1: oar is faster) as median [min, max].
#   [ROUNDS=3] [PYTHON=python3] bench/run_op_overhead.sh [N] [reps]
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-python3}
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
fr=(); br=()
for ((r = 1; r <= ROUNDS; r++)); do
  o=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 luajit bench/bench_op_overhead.lua "$@")
  t=$($PY bench/torch_op_overhead.py "$@")
  echo "round $r: $o"
  echo "round $r: $t"
  of=$(sed -n 's/.*fwd_us_per_op=\([0-9.]*\).*/\1/p' <<<"$o"); ob=$(sed -n 's/.*fwdbwd_us_per_fwd_op=\([0-9.]*\).*/\1/p' <<<"$o")
  tf=$(sed -n 's/.*fwd_us_per_op=\([0-9.]*\).*/\1/p' <<<"$t"); tb=$(sed -n 's/.*fwdbwd_us_per_fwd_op=\([0-9.]*\).*/\1/p' <<<"$t")
  fr+=("$(awk -v a="$tf" -v b="$of" 'BEGIN{printf "%.2f", a/b}')")
  br+=("$(awk -v a="$tb" -v b="$ob" 'BEGIN{printf "%.2f", a/b}')")
done
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f [%.2f, %.2f]", m, v[1], v[NR]}'; }
echo "forward: TorchScript/oar time per op $(stats "${fr[@]}")"
echo "forward+backward: TorchScript/oar time per forward op $(stats "${br[@]}")"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
