#!/usr/bin/env bash
# serve_load.sh: `oar serve` under HTTP load, with and without dynamic
# batching, and the fastest peer installable here (TorchServe) serving the
# same MLP (784-512-256-10, bench/serve_mlp.lua) on this machine.
#
#   bench/serve_load.sh [--duration S] [--conc C] [--threads T] [--max-batch B]
#                       [--batch-timeout-ms MS] [--no-peer]
#
# The load is `hey` (Debian: apt-get install -y hey): C connections (default
# 32) posting as fast as they can for S seconds (default 20) to
# /v2/models/mlp/infer, once with one row per request and once with 32. Each
# line: server, configuration, rows per request, requests/s, rows/s, p50 and
# p99 latency, and the status codes hey saw (anything but 200 is a failure:
# exit 1). Servers: oar serve with --threads T (default 2) each request on
# its own, then with --max-batch B (default 64) --batch-timeout-ms MS
# (default 2); the peer is TorchServe (PyPI torchserve and
# torch-model-archiver, needs Java and PyTorch) with T workers, without and
# with its own batching (batch_size B, max_batch_delay MS), serving the same
# weights through its native /predictions API (a JSON list of rows; its
# handler stacks the requests of a batch as oar serve does). The peer is
# skipped, saying why, when something it needs is missing. Figures are only
# comparable when taken on a quiet machine.
set -uo pipefail
cd "$(dirname "$0")/.."

DURATION=20 CONC=32 THREADS=2 MAXB=64 BTO=2 PEER=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --conc) CONC=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --max-batch) MAXB=$2; shift 2 ;;
    --batch-timeout-ms) BTO=$2; shift 2 ;;
    --no-peer) PEER=0; shift ;;
    *) sed -n '2,25p' "$0"; exit 2 ;;
  esac
done
command -v hey > /dev/null || { echo "hey is not installed (apt-get install -y hey)"; exit 2; }
command -v bc > /dev/null || { echo "bc is not installed (apt-get install -y bc)"; exit 2; }
[[ -x build/oar-serve && -x build/oar ]] || { echo "build/oar-serve is not built (make)"; exit 2; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
  [[ -f "$WORK/ts.pid" ]] && torchserve --stop > /dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
FAILED=0

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $DURATION s per run, $CONC connections, $THREADS workers; batching: up to $MAXB rows, $BTO ms"
build/oar bench/serve_mlp.lua "$WORK" || exit 1
# request bodies: v2 for oar serve, a list of rows for the peer
WORK="$WORK" build/oar -e '
local function rows(n)
  local out = {}
  for r = 1, n do
    local row = {}
    for k = 1, 784 do row[k] = string.format("%.4f", math.sin(r * 7.1 + k * 0.37) * 0.5 + 0.5) end
    out[r] = "[" .. table.concat(row, ",") .. "]"
  end
  return out
end
for _, n in ipairs({ 1, 32 }) do
  local r = rows(n)
  local flat = table.concat(r, ","):gsub("[%[%]]", "")
  local f = io.open(os.getenv("WORK") .. "/v2_" .. n .. ".json", "w")
  f:write(string.format([[{"inputs":[{"name":"x","shape":[%d,784],"datatype":"FP32","data":[%s]}]}]], n, flat))
  f:close()
  f = io.open(os.getenv("WORK") .. "/rows_" .. n .. ".json", "w")
  f:write("[" .. table.concat(r, ",") .. "]")
  f:close()
end' || exit 1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# load NAME ROWS URL BODY
load() {
  local name=$1 rows=$2 url=$3 body=$4 out="$WORK/hey.out"
  hey -z "${DURATION}s" -c "$CONC" -m POST -T application/json -D "$body" "$url" > "$out" 2>&1
  local rps p50 p99 codes
  rps=$(awk '/Requests\/sec/ {print $2}' "$out")
  p50=$(awk '/ 50% in / {print $3 * 1000}' "$out")
  p99=$(awk '/ 99% in / {print $3 * 1000}' "$out")
  codes=$(awk '/^[ \t]*\[[0-9]+\]/ {printf "%s%s x%s", sep, $1, $2; sep=" "}' "$out")
  [[ -z "$codes" ]] && codes="no responses ($(grep -m1 -i error "$out"))"
  # hey leaves out a percentile it has too few responses for
  printf "%-40s rows %2d  %9.1f req/s  %9.0f rows/s  p50 %8s ms  p99 %8s ms  %s\n" \
    "$name" "$rows" "${rps:-0}" "$(echo "${rps:-0} * $rows" | bc -l)" "${p50:--}" "${p99:--}" "$codes"
  [[ "$codes" =~ ^\[200\]\ x[0-9]+$ ]] || FAILED=1
}

# oar serve with extra flags; sets PORT
start_oar() {
  local log="$WORK/oar.log"
  build/oar-serve "$WORK/mlp" --host 127.0.0.1 --port 0 --threads "$THREADS" "$@" > "$log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    PORT=$(grep -o 'on http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$') && [[ -n "$PORT" ]] && break
    sleep 0.1
  done
  [[ -n "$PORT" ]] || { cat "$log"; exit 1; }
}

for mode in plain batch; do
  if [[ $mode == plain ]]; then start_oar; label="oar serve, each request alone"
  else start_oar --max-batch "$MAXB" --batch-timeout-ms "$BTO"; label="oar serve, dynamic batching"; fi
  for rows in 1 32; do load "$label" "$rows" "http://127.0.0.1:$PORT/v2/models/mlp/infer" "$WORK/v2_$rows.json"; done
  if [[ $mode == batch ]]; then
    curl -s "http://127.0.0.1:$PORT/metrics" |
      awk '/^oar_serve_batch_requests_(sum|count) / {v[$1]=$2} END {if (v["oar_serve_batch_requests_count"] > 0)
        printf "%-40s %.2f requests per model run on average\n", "", v["oar_serve_batch_requests_sum"] / v["oar_serve_batch_requests_count"]}'
    # the peer's check input: oar serve's answer to the 32-row body
    curl -s -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/v2_32.json" \
      "http://127.0.0.1:$PORT/v2/models/mlp/infer" > "$WORK/oar_32.json"
  fi
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2> /dev/null
done

# ---- the peer: TorchServe
peer_missing() {
  command -v java > /dev/null || { echo "Java (TorchServe runs on the JVM: apt-get install -y default-jre-headless)"; return; }
  command -v torchserve > /dev/null && command -v torch-model-archiver > /dev/null ||
    { echo "torchserve (pip install torchserve torch-model-archiver)"; return; }
  python3 -c 'import torch, numpy' 2> /dev/null || { echo "PyTorch (pip install torch numpy)"; return; }
}
if [[ $PEER == 1 ]]; then
  why=$(peer_missing)
  if [[ -n "$why" ]]; then
    echo "peer skipped: it needs $why"
  else
    python3 - "$WORK" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
req = json.load(open(w + "/v2_32.json"))["inputs"][0]
out = json.load(open(w + "/oar_32.json"))["outputs"][0]
x = [req["data"][i * 784:(i + 1) * 784] for i in range(32)]
y = [out["data"][i * 10:(i + 1) * 10] for i in range(32)]
json.dump({"x": x, "y": y}, open(w + "/check.json", "w"))
PY
    python3 bench/serve_torch_peer.py "$WORK" > "$WORK/peer_build.log" 2>&1 || { cat "$WORK/peer_build.log"; exit 1; }
    grep '^peer:' "$WORK/peer_build.log"
    IP=$(free_port) MP=$(free_port) XP=$(free_port)
    cat > "$WORK/config.properties" << EOF
inference_address=http://127.0.0.1:$IP
management_address=http://127.0.0.1:$MP
metrics_address=http://127.0.0.1:$XP
disable_token_authorization=true
enable_model_api=true
default_workers_per_model=$THREADS
EOF
    # one PyTorch thread per worker, as oar serve's workers (OMP) run here;
    # from $WORK, where TorchServe writes its logs/
    (cd "$WORK" && exec env OMP_NUM_THREADS=1 torchserve --start --ncs --foreground --model-store "$WORK/store" \
      --ts-config "$WORK/config.properties" > "$WORK/ts.log" 2>&1) &
    PIDS+=($!)
    echo $! > "$WORK/ts.pid"
    for _ in $(seq 600); do curl -sf "http://127.0.0.1:$IP/ping" > /dev/null && break; sleep 0.1; done
    for bs in 1 "$MAXB"; do
      curl -sf -X POST "http://127.0.0.1:$MP/models?url=mlp.mar&initial_workers=$THREADS&batch_size=$bs&max_batch_delay=$BTO&synchronous=true" \
        > /dev/null || { echo "TorchServe did not take the model:"; tail -20 "$WORK/ts.log"; exit 1; }
      label="TorchServe, each request alone"
      [[ $bs != 1 ]] && label="TorchServe, batching ($bs, $BTO ms)"
      for rows in 1 32; do load "$label" "$rows" "http://127.0.0.1:$IP/predictions/mlp" "$WORK/rows_$rows.json"; done
      curl -sf -X DELETE "http://127.0.0.1:$MP/models/mlp" > /dev/null
    done
  fi
fi
[[ $FAILED == 0 ]] || { echo "some requests failed (see the status codes above)"; exit 1; }
