#!/usr/bin/env python3
"""The markdown table of bench/run_all.sh from its raw runs (a TSV with
round, workload, system, config, value, unit, load). Plain Python: no numpy.

Per workload and round, each system's value is its best configuration in that
round (highest samples/s, lowest seconds or microseconds). The ratio of a round
is oar's value over the fastest peer's (inverted for times), so > 1 means oar
is faster; the table gives its median [min, max] over the rounds, next to each
system's median value and the configuration that won most often."""
import sys
from collections import Counter, defaultdict

PEERS = ["torch-pip", "torch-debian", "paddle"]


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def fmt(v, unit):
    if unit == "samples/s":
        return "%.0f" % v
    if unit == "s":
        return "%.3g s" % v
    return "%.0f µs" % v if v >= 100 else "%.1f µs" % v


def main(path):
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            r, w, s, c, v, u, load = line.rstrip("\n").split("\t")
            rows.append((int(r), w, s, c, float(v), u, float(load)))
    order, units = [], {}
    best = defaultdict(dict)          # (w, r) -> system -> (value, config)
    loads = defaultdict(list)
    for r, w, s, c, v, u, load in rows:
        if w not in units:
            order.append(w)
            units[w] = u
        higher = u == "samples/s"
        cur = best[(w, r)].get(s)
        if cur is None or (v > cur[0] if higher else v < cur[0]):
            best[(w, r)][s] = (v, c)
        loads[r].append(load)
    rounds = sorted(loads)
    systems = ["oar"] + [p for p in PEERS if any(p in best[k] for k in best)]
    print("| workload | unit | " + " | ".join(systems) + " | oar / fastest peer, median [min, max] |")
    print("|---|---|" + "---|" * len(systems) + "---|")
    for w in order:
        u = units[w]
        higher = u == "samples/s"
        cells = []
        for s in systems:
            vals = [best[(w, r)][s] for r in rounds if s in best.get((w, r), {})]
            if not vals:
                cells.append("n/a")
                continue
            conf = Counter(c for _, c in vals).most_common(1)[0][0]
            cells.append("%s (%s)" % (fmt(median([v for v, _ in vals]), u), conf))
        ratios = []
        for r in rounds:
            b = best.get((w, r), {})
            peers = [b[p][0] for p in PEERS if p in b]
            if "oar" not in b or not peers:
                continue
            o = b["oar"][0]
            fastest = max(peers) if higher else min(peers)
            ratios.append(o / fastest if higher else fastest / o)
        ratio = "n/a" if not ratios else "%.2f [%.2f, %.2f]" % (median(ratios), min(ratios), max(ratios))
        print("| %s | %s | %s | %s |" % (w, u, " | ".join(cells), ratio))
    print()
    print("Rounds: %d. 1-minute load average per round (min-max over its runs): %s." % (
        len(rounds), ", ".join("%d: %.2f-%.2f" % (r, min(loads[r]), max(loads[r])) for r in rounds)))
    print("Each cell: the system's median over the rounds of its best configuration per round "
          "(the configuration that won most often in parentheses).")


if __name__ == "__main__":
    main(sys.argv[1])
