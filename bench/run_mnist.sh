#!/usr/bin/env bash
# run_mnist.sh: MNIST-style training throughput, oar against PyTorch, on this
# machine in one run (see bench/RESULTS.md for recorded figures).
#
#   [ROUNDS=R] bench/run_mnist.sh [--batches N] [--warmup N] [--models mlp,conv]
#
# Each framework is run with 1 and with 2 threads (PyTorch: set_num_threads;
# oar: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS) and its better figure is
# kept. With ROUNDS=R (default 1) the whole measurement is repeated R times,
# the frameworks taking turns, and the best figure of each is kept: on a
# machine shared with other jobs the best of several runs is the closest to
# the uncontended speed. Models and batch sizes: mlp 784-512-256-10 at batch 128, LeNet at
# batch 64, Adam lr 0.001, on Fashion-MNIST (bench/torch_mnist.py says more).
# The last lines are "<model>: oar X samples/s, PyTorch Y samples/s, oar/PyTorch R".
set -uo pipefail
cd "$(dirname "$0")/.."

ARGS=("$@")
MODELS="mlp,conv"
for ((i = 0; i < ${#ARGS[@]}; i++)); do
  [[ "${ARGS[$i]}" == "--models" ]] && MODELS="${ARGS[$((i + 1))]:-mlp,conv}"
done

LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"

ROUNDS=${ROUNDS:-1}
touch "$LOG/torch" "$LOG/oar"
for ((round = 1; round <= ROUNDS; round++)); do
[[ $ROUNDS -gt 1 ]] && echo "== round $round of $ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))"
echo "== PyTorch"
if python3 -c "import torch" 2>/dev/null; then
  python3 bench/torch_mnist.py --threads 1,2 "${ARGS[@]}" | tee -a "$LOG/torch"
else
  echo "PyTorch is not installed (pip install torch numpy): its side is skipped"
fi

echo "== oar"
for t in 1 2; do
  if ! OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t luajit bench/bench_mnist.lua "${ARGS[@]}" \
       > "$LOG/oar$t" 2>&1; then
    echo "oar with $t thread(s) failed:"
    tail -5 "$LOG/oar$t"
  fi
  sed "s/^RESULT oar \([a-z]*\) \(.*\)$/RESULT oar \1 \2 threads=$t/" "$LOG/oar$t" | grep -v '^oar (' \
    | sed "s/^oar   \([a-z]*\)/oar   \1 threads $t/" | tee -a "$LOG/oar"
done
done

echo "== oar / PyTorch (best of 1 and 2 threads${ROUNDS:+ and $ROUNDS round(s)} each)"
for m in ${MODELS//,/ }; do
  awk -v m="$m" '
    $1 == "RESULT" && $3 == m { if ($4 > best[$2]) { best[$2] = $4; th[$2] = $5 } }
    END {
      o = best["oar"]; p = best["torch"]
      line = m ":"
      line = line (o ? sprintf(" oar %.0f samples/s (%s),", o, th["oar"]) : " oar n/a,")
      line = line (p ? sprintf(" PyTorch %.0f samples/s (%s),", p, th["torch"]) : " PyTorch n/a,")
      line = line ((o && p) ? sprintf(" oar/PyTorch %.2f", o / p) : " oar/PyTorch n/a")
      print line
    }' "$LOG/torch" "$LOG/oar" 2>/dev/null
done
