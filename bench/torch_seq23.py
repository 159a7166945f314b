"""torch_seq23.py: PyTorch side of bench/bench_seq23.lua (issue 23).

CTC: torch.nn.functional.ctc_loss (reduction "sum", blank 0) of
log_softmax(scores) over padded scores [T=100, B=16, C=30] with the same
input lengths (70..100), label lengths (20..30) and labels as the oar side
(oar's warpctc takes unnormalised scores and applies the softmax inside, so
the log_softmax is part of the peer), gradient with respect to the scores.
CRF: torchcrf.CRF (pytorch-crf from PyPI, batch_first) with the same tag
count, lengths (20..60, batch 16, as a mask) and tags; loss = -crf(emissions,
tags, mask) (reduction "sum"), gradient with respect to the emissions and
the CRF's start, end and transition weights (oar's transition parameter
holds the same three; all 0.05 on both sides, so the losses agree). Each case is timed against both of oar's forms
(LoD and padded): the same PyTorch figure is printed under both names.
BENCH_PRINT_LOSS=1 prints each case's loss once.
A peer that is not installed is skipped with a line saying so.
  RESULT torch seq23_<case> us_per_call=<x>
Usage: python3 bench/torch_seq23.py [iters] [reps] [case-regex] [crf-tags] [threads]
"""
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
PAT = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
TAGS = int(sys.argv[4]) if len(sys.argv) > 4 else 59
THREADS = int(sys.argv[5]) if len(sys.argv) > 5 else 1
torch.set_num_threads(THREADS)

B = 16
CTC_T, CTC_C = 100, 30
CRF_T = 60


def ctc_steps(b): return 100 - 3 * ((b * 5) % 11)
def ctc_labels(b): return 20 + (b * 7) % 11
def ctc_label(b, j): return 1 + (b * 13 + j * 7) % (CTC_C - 1)
def crf_len(b): return 20 + (b * 11) % 41
def crf_tag(b, j): return (b * 17 + j * 5) % TAGS


def sin_fill(shape, seed):
    n = 1
    for d in shape:
        n *= d
    return torch.sin(0.37 * torch.arange(n, dtype=torch.float64) + seed).float().reshape(shape).contiguous()


def time_case(names, step):
    names = [n for n in names if not PAT or re.search(PAT, n)]
    if not names:
        return
    for _ in range(3):
        step()
    if os.environ.get("BENCH_PRINT_LOSS"):
        print(f"# {names[0]} loss {step():.6g}", flush=True)
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(ITERS):
            step()
        best = min(best, (time.perf_counter() - t0) / ITERS)
    for n in names:
        print(f"RESULT torch seq23_{n} us_per_call={best * 1e6:.2f}", flush=True)


# CTC
x = sin_fill((CTC_T, B, CTC_C), 1).requires_grad_(True)
in_len = torch.tensor([ctc_steps(b) for b in range(B)], dtype=torch.long)
tg_len = torch.tensor([ctc_labels(b) for b in range(B)], dtype=torch.long)
targets = torch.tensor([ctc_label(b, j) for b in range(B) for j in range(ctc_labels(b))], dtype=torch.long)


def ctc_step():
    loss = F.ctc_loss(x.log_softmax(2), targets, in_len, tg_len, blank=0, reduction="sum")
    torch.autograd.grad(loss, [x])
    return loss.item()


time_case(["warpctc_lod_T100_B16_C30", "warpctc_padded_T100_B16_C30"], ctc_step)

# CRF
crf_names = [f"crf_lod_B16_L20-60_D{TAGS}", f"crf_padded_B16_L20-60_D{TAGS}"]
try:
    from torchcrf import CRF
except ImportError:
    print("# torch_seq23: pytorch-crf (torchcrf) is not installed: CRF peer skipped "
          "(pip install pytorch-crf)", flush=True)
else:
    torch.manual_seed(0)
    crf = CRF(TAGS, batch_first=True)
    with torch.no_grad():
        for p in crf.parameters():
            p.fill_(0.05)  # as oar's transition parameter
    em = sin_fill((B, CRF_T, TAGS), 1).requires_grad_(True)
    tags = torch.zeros(B, CRF_T, dtype=torch.long)
    mask = torch.zeros(B, CRF_T, dtype=torch.bool)
    for b in range(B):
        for j in range(crf_len(b)):
            tags[b, j] = crf_tag(b, j)
            mask[b, j] = True
    wrt = [em] + list(crf.parameters())

    def crf_step():
        loss = -crf(em, tags, mask, reduction="sum")
        torch.autograd.grad(loss, wrt)
        return loss.item()

    time_case(crf_names, crf_step)
