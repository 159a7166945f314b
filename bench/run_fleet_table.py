#!/usr/bin/env python3
"""Summarises bench/run_fleet_rounds.sh's rounds: per-round ratios, median [min, max]."""
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
head, rows = rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]
def summary(vals):
    return "%.2f [%.2f, %.2f]" % (statistics.median(vals), min(vals), max(vals))
f = lambda r, k: float(r[k])
print("rounds: %d, 1-minute load at each round's start: %s" % (len(rows), ", ".join(r["load"] for r in rows)))
for label, num, den in [("2 workers x 1 thread / 1 worker x 1 thread", "fleet_2x1", "one_1thr"),
                        ("2 workers x 1 thread / 1 worker x 2 threads", "fleet_2x1", "one_2thr"),
                        ("ceiling (2 independent processes) / 1 worker x 1 thread", "ceiling_2x1", "one_1thr"),
                        ("2 workers x 1 thread / ceiling", "fleet_2x1", "ceiling_2x1")]:
    print("%-58s %s" % (label, summary([f(r, num) / f(r, den) for r in rows])))
for k in head[2:]:
    print("%-12s samples/s median %.0f" % (k, statistics.median([f(r, k) for r in rows])))
