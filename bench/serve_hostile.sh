#!/usr/bin/env bash
# serve_hostile.sh: `oar serve` under hostile load. wrk (Debian: apt-get
# install -y wrk) drives C connections (default 32) for S seconds (default
# 60) at the benchmark MLP (bench/serve_mlp.lua) with dynamic batching on,
# a fraction F (default 0.3) of the requests bad in one of many ways
# (bench/serve_hostile.lua); beside it a loop opens raw connections that
# send garbage, half a request, or nothing, and hang up. The server's RSS is
# sampled every second.
#
#   bench/serve_hostile.sh [--duration S] [--conc C] [--bad F]
#
# Passes (exit 0) when no response is a 5xx, every request got an answer
# (wrk counts no timeouts), the RSS at the end is within 25 % + 16 MiB of the
# RSS after the first fifth of the run (flat: no leak), and the server
# still answers a good request and /v2/health/ready afterwards.
set -uo pipefail
cd "$(dirname "$0")/.."

DURATION=60 CONC=32 BAD=0.3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --conc) CONC=$2; shift 2 ;;
    --bad) BAD=$2; shift 2 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
command -v wrk > /dev/null || { echo "wrk is not installed (apt-get install -y wrk)"; exit 2; }
[[ -x build/oar-serve && -x build/oar ]] || { echo "build/oar-serve is not built (make)"; exit 2; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

build/oar bench/serve_mlp.lua "$WORK" || exit 1
WORK="$WORK" build/oar -e '
local row = {}
for k = 1, 784 do row[k] = string.format("%.4f", math.sin(k * 0.37) * 0.5 + 0.5) end
local f = io.open(os.getenv("WORK") .. "/good.json", "w")
f:write([[{"inputs":[{"name":"x","shape":[1,784],"datatype":"FP32","data":[]] .. table.concat(row, ",") .. "]}]}")
f:close()' || exit 1

build/oar-serve "$WORK/mlp" --host 127.0.0.1 --port 0 --threads 2 --max-batch 32 --batch-timeout-ms 2 \
  --max-body 1048576 --request-timeout-ms 10000 > "$WORK/server.log" 2>&1 &
SERVER=$!
PIDS+=($SERVER)
for _ in $(seq 100); do
  PORT=$(grep -o 'on http://127.0.0.1:[0-9]*' "$WORK/server.log" | grep -o '[0-9]*$') && [[ -n "$PORT" ]] && break
  sleep 0.1
done
[[ -n "${PORT:-}" ]] || { cat "$WORK/server.log"; exit 1; }
echo "== oar serve on port $PORT (pid $SERVER): $DURATION s, $CONC connections, $BAD of the requests bad;" \
  "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER/status" 2> /dev/null; }
( while kill -0 "$SERVER" 2> /dev/null; do echo "$(rss)" >> "$WORK/rss"; sleep 1; done ) &
PIDS+=($!)
# raw connections: garbage, half a request, nothing
( end=$((SECONDS + DURATION))
  while [[ $SECONDS -lt $end ]]; do
    { exec 3<> "/dev/tcp/127.0.0.1/$PORT" &&
      case $((RANDOM % 3)) in
        0) head -c 300 /dev/urandom >&3 ;;
        1) printf 'POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{"inp' >&3 ;;
        2) : ;;
      esac
      exec 3>&-; } 2> /dev/null
    sleep 0.05
  done ) &
PIDS+=($!)

wrk -t2 -c "$CONC" -d "${DURATION}s" --timeout 15s -s bench/serve_hostile.lua \
  "http://127.0.0.1:$PORT" -- "$WORK/good.json" "$BAD" > "$WORK/wrk.out" 2>&1
cat "$WORK/wrk.out" | grep -E "Requests/sec|Latency|status|socket errors|requests in"

FAIL=0
fivexx=$(awk '/^status 5[0-9][0-9]:/ {n += $3} END {print n + 0}' "$WORK/wrk.out")
timeouts=$(grep -o 'timeout [0-9]*' "$WORK/wrk.out" | awk '{print $2}')
[[ "$fivexx" == 0 ]] || { echo "FAIL: $fivexx responses were 5xx"; FAIL=1; }
[[ "${timeouts:-0}" == 0 ]] || { echo "FAIL: $timeouts requests got no answer in 15 s"; FAIL=1; }

mapfile -t RSS < "$WORK/rss"
n=${#RSS[@]}
if [[ $n -ge 5 ]]; then
  warm=${RSS[$((n / 5))]} last=${RSS[$((n - 1))]} max=$(printf '%s\n' "${RSS[@]}" | sort -n | tail -1)
  echo "RSS: ${RSS[0]} kB at start, $warm kB after a fifth, $last kB at the end, $max kB at most ($n samples)"
  [[ $last -le $((warm * 125 / 100 + 16384)) ]] || { echo "FAIL: RSS grew from $warm kB to $last kB"; FAIL=1; }
else
  echo "RSS: too few samples ($n) to judge"
fi

if ! kill -0 "$SERVER" 2> /dev/null; then
  echo "FAIL: the server died"; tail -20 "$WORK/server.log"; FAIL=1
else
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$WORK/good.json" "http://127.0.0.1:$PORT/v2/models/mlp/infer")
  ready=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/health/ready")
  echo "afterwards: infer $code, ready $ready"
  [[ $code == 200 && $ready == 200 ]] || FAIL=1
fi
[[ $FAIL == 0 ]] && echo "PASS" || echo "FAILED"
exit $FAIL
