"""torch_op_overhead.py: PyTorch side of bench/bench_op_overhead.lua.

A chain of N one-element additions y = y + c in TorchScript (a scripted loop,
one aten::add per step, run by TorchScript's interpreter), forward only under
no_grad, and forward + backward (autograd through the N adds). Prints
  RESULT torch op_overhead fwd_us_per_op=<x> fwdbwd_us_per_fwd_op=<y> (N=...)
Usage: python3 bench/torch_op_overhead.py [N] [reps]
"""
import sys
import time

import torch

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
torch.set_num_threads(1)


@torch.jit.script
def chain(x: torch.Tensor, c: torch.Tensor, n: int) -> torch.Tensor:
    y = x
    for _ in range(n):
        y = y + c
    return y.mean()


def best_of(fn):
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(REPS):
            fn()
        best = min(best, (time.perf_counter() - t0) / REPS)
    return best * 1e6 / N


c = torch.full((1,), 1e-4)


def fwd():
    with torch.no_grad():
        chain(torch.zeros(1), c, N)


def fwdbwd():
    x = torch.zeros(1, requires_grad=True)
    chain(x, c, N).backward()


f, fb = best_of(fwd), best_of(fwdbwd)
print(f"RESULT torch op_overhead fwd_us_per_op={f:.3f} fwdbwd_us_per_fwd_op={fb:.3f} (N={N})")
