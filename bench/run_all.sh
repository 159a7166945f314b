#!/usr/bin/env bash
# run_all.sh: every benchmark of bench/, oar against its peers, in interleaved
# rounds, written as one markdown table.
#
#   [ROUNDS=3] [WORKLOADS="mlp_adam lstm ..."] [STEPS=N] bench/run_all.sh [out.md]
#
# Workloads (bench/suite_oar.lua describes them): mlp_adam mlp_sgdm lenet_adam
# lstm gru mlp_epoch lenet_epoch fit_a_line_epoch infer_b1 infer_b128.
# Systems and the configurations tried for each (each system's best per round counts):
#   oar            OMP_NUM_THREADS=1 and 2 (the environment is otherwise left as given)
#   torch-pip      PyTorch 2.x from pip ($TORCH_PIP_PYTHON, default /opt/torchvenv/bin/python):
#                  1 and 2 threads, default and fused Adam; lstm/gru packed and padded
#   torch-debian   Debian's python3-torch 1.13 ($TORCH_DEB_PYTHON, default /usr/bin/python3):
#                  torch threads 1 with OPENBLAS_NUM_THREADS=1 and 2, torch threads 2
#   paddle         PaddlePaddle 3 static graph / Paddle Inference with oneDNN ($PADDLE_PYTHON,
#                  default /opt/paddlevenv/bin/python), MKL_DEBUG_CPU_TYPE=5, 1 and 2 threads
# A system that is not installed is skipped (the table says so). Each round runs
# every workload on every configuration, the configurations in a rotated
# order; ratios are per round (oar's best / the fastest peer's best, > 1 when oar
# is faster), reported as median [min, max]. The 1-minute load average is
# logged with every run. STEPS overrides every workload's step count (STEPS=5
# with ROUNDS=1 checks the script end to end in a few minutes).
set -uo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
WORKLOADS=${WORKLOADS:-"mlp_adam mlp_sgdm lenet_adam lstm gru mlp_epoch lenet_epoch fit_a_line_epoch infer_b1 infer_b128"}
TORCH_PIP=${TORCH_PIP_PYTHON:-/opt/torchvenv/bin/python}
TORCH_DEB=${TORCH_DEB_PYTHON:-/usr/bin/python3}
PADDLE=${PADDLE_PYTHON:-/opt/paddlevenv/bin/python}
mkdir -p bench/results
OUT=${1:-bench/results/run_all-$(date +%Y%m%d-%H%M%S).md}
RAW="${OUT%.md}.tsv"
STEPARG=()
[[ -n "${STEPS:-}" ]] && STEPARG=(--steps "$STEPS" --warmup 2)

have() { [[ -x "$1" ]] && "$1" -c "import $2" >/dev/null 2>&1; }
HAVE_PIP=0; have "$TORCH_PIP" torch && HAVE_PIP=1
HAVE_DEB=0; have "$TORCH_DEB" torch && "$TORCH_DEB" -c "import torch, sys; sys.exit(torch.__version__ >= '2')" 2>/dev/null && HAVE_DEB=1
HAVE_PADDLE=0; have "$PADDLE" paddle && HAVE_PADDLE=1
[[ -f build/liboar.so ]] || { echo "run_all: build/liboar.so is missing (make first)" >&2; exit 1; }

uses_adam() { case "$1" in mlp_adam|lenet_adam|lstm|gru|mlp_epoch|lenet_epoch) return 0;; esac; return 1; }
paddle_has() { case "$1" in mlp_adam|mlp_sgdm|lenet_adam|infer_b1|infer_b128) return 0;; esac; return 1; }

# configs of workload $1: lines "system|config|command"
configs() {
  local w=$1 t f p
  for t in 1 2; do echo "oar|${t} thr|env OMP_NUM_THREADS=$t luajit bench/suite_oar.lua $w"; done
  if [[ $HAVE_PIP == 1 ]]; then
    for t in 1 2; do
      if [[ $w == lstm || $w == gru ]]; then
        for p in "" "--padded"; do
          echo "torch-pip|${t} thr fused${p:+ padded}|$TORCH_PIP bench/suite_torch.py $w --threads $t --fused $p"
        done
      else
        echo "torch-pip|${t} thr|$TORCH_PIP bench/suite_torch.py $w --threads $t"
        uses_adam "$w" && echo "torch-pip|${t} thr fused|$TORCH_PIP bench/suite_torch.py $w --threads $t --fused"
      fi
    done
  fi
  if [[ $HAVE_DEB == 1 ]]; then
    for f in "1 1" "1 2" "2 1"; do
      set -- $f
      p=""; [[ $w == lstm || $w == gru ]] && p="--padded"
      echo "torch-debian|torch $1 thr, OpenBLAS $2${p:+ padded}|env OPENBLAS_NUM_THREADS=$2 $TORCH_DEB bench/suite_torch.py $w --threads $1 $p"
    done
  fi
  if [[ $HAVE_PADDLE == 1 ]] && paddle_has "$w"; then
    for t in 1 2; do echo "paddle|${t} thr|env MKL_DEBUG_CPU_TYPE=5 $PADDLE bench/suite_paddle.py $w --threads $t"; done
  fi
}

echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== systems: oar, torch-pip $([[ $HAVE_PIP == 1 ]] && echo yes || echo 'not installed'), torch-debian $([[ $HAVE_DEB == 1 ]] && echo yes || echo 'not installed'), paddle $([[ $HAVE_PADDLE == 1 ]] && echo yes || echo 'not installed')"
printf "round\tworkload\tsystem\tconfig\tvalue\tunit\tload\n" > "$RAW"
for ((r = 1; r <= ROUNDS; r++)); do
  for w in $WORKLOADS; do
    mapfile -t cfg < <(configs "$w")
    n=${#cfg[@]}
    for ((i = 0; i < n; i++)); do
      line=${cfg[$(((i + r - 1) % n))]}
      sys=${line%%|*}; rest=${line#*|}; conf=${rest%%|*}; cmd=${rest#*|}
      load=$(cut -d' ' -f1 /proc/loadavg)
      res=$(timeout 900 $cmd "${STEPARG[@]}" 2>/tmp/run_all.err.$$ | grep '^RESULT' | tail -1)
      if [[ -z $res ]]; then
        echo "round $r $w $sys ($conf): FAILED: $(tail -2 /tmp/run_all.err.$$ | tr '\n' ' ')" >&2
        continue
      fi
      set -- $res
      printf "%d\t%s\t%s\t%s\t%s\t%s\t%s\n" "$r" "$w" "$sys" "$conf" "$3" "$4" "$load" >> "$RAW"
      printf "round %d  %-16s %-13s %-34s %12s %s  (load %s)\n" "$r" "$w" "$sys" "$conf" "$3" "$4" "$load"
    done
  done
done
rm -f /tmp/run_all.err.$$
python3 bench/run_all_table.py "$RAW" > "$OUT"
cat "$OUT"
echo "== written: $OUT (raw runs: $RAW)"
