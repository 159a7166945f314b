"""ratio_table.py: per-round ratios torch/oar of per-call times, for the
interleaved runners bench/run_ops22.sh and bench/run_seq23.sh.

Reads lines `round <r> threads <t> RESULT <framework> <workload>
us_per_call=<x>` (stdin or the files named) and prints, per workload, the
ratio torch time / oar time (above 1: oar is faster) at 1 thread, at 2
threads, and best against best (each framework's faster thread count in that
round), each as median [min, max] over the rounds, with oar's and torch's
median microseconds at their best thread count. A workload one side lacks
(a peer not installed) is listed with its side's figure only.
Usage: python3 bench/ratio_table.py [log...]
"""
import collections
import fileinput
import re
import statistics

LINE = re.compile(r"round (\d+) threads (\d+) RESULT (\S+) (\S+) us_per_call=([0-9.]+)")
t = collections.defaultdict(dict)  # (workload) -> {(fw, round, threads): us}
order = []
for line in fileinput.input():
    m = LINE.search(line)
    if not m:
        continue
    r, th, fw, wl, us = int(m[1]), int(m[2]), m[3], m[4], float(m[5])
    if wl not in t:
        order.append(wl)
    t[wl][(fw, r, th)] = us


def stat(v):
    if not v:
        return "-"
    return f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]"


print(f"{'workload':<36} {'oar us':>10} {'torch us':>10}  {'torch/oar 1 thread':<20} {'2 threads':<20} best/best")
for wl in order:
    d = t[wl]
    rounds = sorted({k[1] for k in d})
    r1, r2, rb, ob, tb = [], [], [], [], []
    for r in rounds:
        o = {th: d[("oar", r, th)] for th in (1, 2) if ("oar", r, th) in d}
        p = {th: d[("torch", r, th)] for th in (1, 2) if ("torch", r, th) in d}
        if o:
            ob.append(min(o.values()))
        if p:
            tb.append(min(p.values()))
        if 1 in o and 1 in p:
            r1.append(p[1] / o[1])
        if 2 in o and 2 in p:
            r2.append(p[2] / o[2])
        if o and p:
            rb.append(min(p.values()) / min(o.values()))
    om = f"{statistics.median(ob):.1f}" if ob else "-"
    tm = f"{statistics.median(tb):.1f}" if tb else "-"
    print(f"{wl:<36} {om:>10} {tm:>10}  {stat(r1):<20} {stat(r2):<20} {stat(rb)}")
