#!/usr/bin/env bash
# run_before_after.sh: oar against an earlier oar, in interleaved rounds, on
# the workloads a change to the runtime must not slow down: the executor's
# per-op overhead (bench/bench_op_overhead.lua) and the MLP (Adam), LeNet
# and LSTM training steps of bench/suite_oar.lua at 1 and 2 threads.
# BASE is a built checkout of the earlier commit (make there first; its own
# bench scripts are used). Prints each round's figures and, per workload,
# the per-round ratio new/base (above 1: the new build is faster) as
# median [min, max], with the load average before and after.
#   BASE=/path/to/old/checkout [ROUNDS=3] [CASES="mlp_adam:1 lenet_adam:2 ..."] bench/run_before_after.sh
set -uo pipefail
cd "$(dirname "$0")/.."
NEW=$PWD
BASE=${BASE:?set BASE to a built checkout of the earlier commit}
ROUNDS=${ROUNDS:-3}
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A ratios
# value of one run (higher is better: samples/s, or 1/us for overhead)
run() {   # dir workload threads
  local dir=$1 w=$2 t=$3 out
  if [ "$w" = op_overhead ]; then
    out=$(cd "$dir" && OMP_NUM_THREADS=1 luajit bench/bench_op_overhead.lua)
    awk -v u="$(sed -n 's/.*fwd_us_per_op=\([0-9.]*\).*/\1/p' <<<"$out")" 'BEGIN{printf "%.6f", 1/u}'
  else
    out=$(cd "$dir" && OMP_NUM_THREADS=$t luajit bench/suite_oar.lua "$w")
    sed -n 's/^RESULT [^ ]* \([0-9.]*\) .*/\1/p' <<<"$out"
  fi
}
CASES=${CASES:-"op_overhead:1 mlp_adam:1 mlp_adam:2 lenet_adam:1 lenet_adam:2 lstm:2"}
for ((r = 1; r <= ROUNDS; r++)); do
  for c in $CASES; do
    w=${c%%:*} t=${c##*:}
    # alternate which build goes first
    if (( r % 2 )); then b=$(run "$BASE" "$w" "$t"); n=$(run "$NEW" "$w" "$t")
    else n=$(run "$NEW" "$w" "$t"); b=$(run "$BASE" "$w" "$t"); fi
    ratio=$(awk -v a="$n" -v b="$b" 'BEGIN{printf "%.3f", a/b}')
    echo "round $r $w ${t}thr: base $b new $n new/base $ratio"
    ratios[$c]+="$ratio "
  done
done
stats() { printf '%s\n' $1 | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f [%.3f, %.3f]", m, v[1], v[NR]}'; }
for c in $CASES; do echo "${c%%:*} ${c##*:} thread(s): new/base $(stats "${ratios[$c]}")"; done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
