"""torch_ops22.py: PyTorch side of bench/bench_ops22.lua (issue 22).

Forward + backward of each case on fixed inputs, eager with autograd:
torch.autograd.grad of the reduced loss with respect to every float input
that oar differentiates and every parameter (conv3d's weight and bias), so
nothing accumulates between steps. Same shapes, inputs (element i of input
number s is f(sin(0.37 i + s))) and reductions as the oar side. The peers:
huber_loss -> F.huber_loss(delta=1, mean); smooth_l1_loss -> F.smooth_l1_loss
(beta=1, none).sum(1).mean() (oar's smooth_l1 sums each row); kldiv_loss ->
F.kl_div(batchmean); bce_loss and log_loss -> F.binary_cross_entropy (mean;
log_loss has no PyTorch op, BCE is its formula up to log_loss's epsilon);
margin_rank_loss -> F.margin_ranking_loss(margin=0.1, mean); l1_norm ->
linalg.vector_norm(ord=1); squared_l2_norm -> x.square().sum(); norm
(l2_normalize, op norm) -> F.normalize(dim=1).mean(); cos_sim ->
F.cosine_similarity(dim=1).mean(); dist -> torch.dist(p=2); bmm ->
torch.bmm(...).mean(); conv3d -> nn.Conv3d(16, 32, 3, padding=1).mean(), the
weight all 0.01 and the bias 0 on both sides. BENCH_PRINT_LOSS=1 prints each
case's loss once (the two sides' agree, log_loss's up to its epsilon).
Prints one line per case:
  RESULT torch ops22_<case> us_per_call=<x>
Usage: python3 bench/torch_ops22.py [iters] [reps] [case-regex] [threads]
"""
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
PAT = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
THREADS = int(sys.argv[4]) if len(sys.argv) > 4 else 1
torch.set_num_threads(THREADS)

FILLS = {
    "sin": lambda v: v,
    "prob": lambda v: torch.sigmoid(2 * v),
    "logp": lambda v: -1.5 - v,
    "sign": lambda v: torch.where(v >= 0, 1.0, -1.0),
    "binary": lambda v: (v >= 0).float(),
}


def tensor(shape, seed, fill):
    n = math.prod(shape)
    v = torch.sin(0.37 * torch.arange(n, dtype=torch.float64) + seed)
    return FILLS[fill](v).float().reshape(shape).contiguous()


def case(name, inputs, build, params=()):
    """inputs: (shape, fill, needs_grad) in oar's order; build(*tensors) -> loss."""
    if PAT and not re.search(PAT, name):
        return
    ts = []
    for i, (shape, fill, grad) in enumerate(inputs, start=1):
        t = tensor(shape, i, fill)
        ts.append(t.requires_grad_(grad))
    wrt = [t for t in ts if t.requires_grad] + list(params)

    def step():
        loss = build(*ts)
        torch.autograd.grad(loss, wrt)
        return loss.item()  # oar fetches the loss too

    for _ in range(3):
        step()
    if os.environ.get("BENCH_PRINT_LOSS"):
        print(f"# {name} loss {step():.6g}", flush=True)
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        for _ in range(ITERS):
            step()
        best = min(best, (time.perf_counter() - t0) / ITERS)
    print(f"RESULT torch ops22_{name} us_per_call={best * 1e6:.2f}", flush=True)


for sh in ((128, 10), (64, 1000)):
    tag = f"{sh[0]}x{sh[1]}"
    col = (sh[0] * sh[1], 1)
    ctag = f"{col[0]}x1"
    case("huber_loss_" + tag, [(sh, "sin", True), (sh, "sin", False)],
         lambda x, y: F.huber_loss(x, y, delta=1.0))
    case("smooth_l1_loss_" + tag, [(sh, "sin", True), (sh, "sin", False)],
         lambda x, y: F.smooth_l1_loss(x, y, reduction="none", beta=1.0).sum(1).mean())
    case("kldiv_loss_" + tag, [(sh, "logp", True), (sh, "prob", False)],
         lambda x, t: F.kl_div(x, t, reduction="batchmean"))
    case("bce_loss_" + tag, [(sh, "prob", True), (sh, "binary", False)],
         lambda x, y: F.binary_cross_entropy(x, y))
    case("log_loss_" + ctag, [(col, "prob", True), (col, "binary", False)],
         lambda x, y: F.binary_cross_entropy(x, y))
    case("margin_rank_loss_" + ctag, [(col, "sign", False), (col, "sin", True), (col, "sin", True)],
         lambda l, a, b: F.margin_ranking_loss(a, b, l, margin=0.1))

for sh in ((128, 10), (64, 1000)):
    tag = f"{sh[0]}x{sh[1]}"
    case("l1_norm_" + tag, [(sh, "sin", True)], lambda x: torch.linalg.vector_norm(x, ord=1))
    case("squared_l2_norm_" + tag, [(sh, "sin", True)], lambda x: x.square().sum())
    case("norm_axis1_" + tag, [(sh, "sin", True)], lambda x: F.normalize(x, p=2.0, dim=1, eps=1e-12).mean())
    case("cos_sim_" + tag, [(sh, "sin", True), (sh, "sin", True)],
         lambda x, y: F.cosine_similarity(x, y, dim=1).mean())
    case("dist_p2_" + tag, [(sh, "sin", True), (sh, "sin", True)], lambda x, y: torch.dist(x, y, p=2))

case("bmm_32x64x64_32x64x64", [((32, 64, 64), "sin", True), ((32, 64, 64), "sin", True)],
     lambda a, b: torch.bmm(a, b).mean())
case("bmm_16x128x256_16x256x128", [((16, 128, 256), "sin", True), ((16, 256, 128), "sin", True)],
     lambda a, b: torch.bmm(a, b).mean())

torch.manual_seed(0)
conv = torch.nn.Conv3d(16, 32, 3, padding=1, bias=True)
with torch.no_grad():  # as oar's: the filter all 0.01, the bias 0
    conv.weight.fill_(0.01)
    conv.bias.zero_()
case("conv3d_4x16x16x32x32_k3_32", [((4, 16, 16, 32, 32), "sin", True)],
     lambda x: conv(x).mean(), params=tuple(conv.parameters()))
