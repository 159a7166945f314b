#!/usr/bin/env bash
# run_seq23.sh: issue 23's speed check, CTC loss + gradient and the
# linear-chain CRF's forward + backward, oar against PyTorch (pip; the CRF
# peer is torchcrf.CRF from `pip install pytorch-crf`, skipped with a line
# saying so when it is not installed) on the book models' shapes: warpctc T
# = 100, batch 16, 30 classes, labels 20..30 long, mixed lengths, over a LoD
# batch and padded (bench/bench_seq23.lua) against F.ctc_loss(sum)
# (bench/torch_seq23.py); linear_chain_crf, batch 16, sequences 20..60,
# CRF_TAGS tags (59, label_semantic_roles' conll05 label set; its synthetic
# data has 7). Each framework at 1 and 2 threads (oar: OMP_NUM_THREADS=t;
# torch: torch.set_num_threads(t)), interleaved over ROUNDS rounds; prints
# every RESULT line prefixed with its round and thread count, then per case
# the median microseconds at each side's best thread count and the
# per-round ratios torch/oar (above 1: oar is faster) at 1 thread, 2
# threads and best against best, as median [min, max], with the load
# average before and after. From the repository root after `NO_CUDA=1
# make`, on a quiet machine:
#   ROUNDS=5 bench/run_seq23.sh > bench/results/seq23-rounds.txt
#   [ROUNDS=3] [CRF_TAGS=59] [PYTHON=python3] bench/run_seq23.sh [iters] [reps] [case-pattern]
# iters (50) calls per window, the best of reps (5) windows.
# Smoke test (seconds): ROUNDS=1 bench/run_seq23.sh 2 1
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-python3}
TAGS=${CRF_TAGS:-59}
ITERS=${1:-50}; REPS=${2:-5}; PAT=${3:-}
log=$(mktemp); trap 'rm -f "$log"' EXIT
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
have_torch=1
$PY -c 'import torch' 2>/dev/null || { have_torch=0; echo "== PyTorch not installed: oar figures only"; }
for ((r = 1; r <= ROUNDS; r++)); do
  for t in 1 2; do
    OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t luajit bench/bench_seq23.lua "$ITERS" "$REPS" "$PAT" "$TAGS" \
      | sed "s/^/round $r threads $t /" | tee -a "$log"
    if [ "$have_torch" = 1 ]; then
      OMP_NUM_THREADS=$t $PY bench/torch_seq23.py "$ITERS" "$REPS" "$PAT" "$TAGS" "$t" \
        | sed "s/^/round $r threads $t /" | tee -a "$log"
    fi
  done
done
echo "== per-call times (us) and torch/oar ratios over $ROUNDS rounds"
$PY bench/ratio_table.py "$log"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
