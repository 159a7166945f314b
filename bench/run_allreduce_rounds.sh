#!/bin/sh
# Allreduce latency and bus bandwidth, oar's interface against OpenMPI's own
# MPI_Allreduce (bench/allreduce_bench.c), over several runs: one run swings
# up to 1.3x either way on this machine, so the table is the median over the
# runs with the ratio's [min, max]. From the repository root after `make`:
#   RUNS=8 sh bench/run_allreduce_rounds.sh > bench/results/allreduce-rounds.txt
# Across hosts (two network namespaces, one worker each, OpenMPI's TCP
# transport over a veth link; needs root; see docs/distributed.md):
#   tools/netns_hosts up 2
#   LAUNCH="tools/netns_hosts mpirun" OAR_NETNS_SLOTS=1 RUNS=5 sh bench/run_allreduce_rounds.sh
#   tools/netns_hosts down
set -e
cd "$(dirname "$0")/.."
RUNS=${RUNS:-8}
LAUNCH=${LAUNCH:-mpirun --allow-run-as-root}
mpicc -O2 bench/allreduce_bench.c -Isrc -Lbuild -loar -Wl,-rpath,"$(pwd)/build" -o build/allreduce_bench
D=$(mktemp -d)
echo "load average before: $(cat /proc/loadavg)"
r=1
while [ "$r" -le "$RUNS" ]; do
  $LAUNCH -np 2 build/allreduce_bench >"$D/$r.txt"
  r=$((r + 1))
done
echo "load average after: $(cat /proc/loadavg)"
python3 - "$D" <<'PY'
import os, statistics as st, sys
rows = {}
for name in sorted(os.listdir(sys.argv[1])):
    for line in open(os.path.join(sys.argv[1], name)).read().splitlines()[1:]:
        f = line.split()
        if len(f) == 6:
            rows.setdefault(int(f[0]), []).append([float(x) for x in f[1:]])
runs = max(len(v) for v in rows.values())
print(f"float32, 2 workers, median over {runs} runs; oar/mpi is the bus bandwidth ratio, median [min, max]")
print(f"{'bytes':>10} {'mpi_us':>10} {'oar_us':>10} {'mpi_GB/s':>9} {'oar_GB/s':>9}  oar/mpi")
for b, v in sorted(rows.items()):
    r = [x[4] for x in v]
    med = lambda k: st.median(x[k] for x in v)
    print(f"{b:>10} {med(0):10.2f} {med(1):10.2f} {med(2):9.3f} {med(3):9.3f}  {st.median(r):.2f} [{min(r):.2f}, {max(r):.2f}]")
PY
rm -rf "$D"
