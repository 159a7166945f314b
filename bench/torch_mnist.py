#!/usr/bin/env python3
"""PyTorch side of the MNIST-style training benchmark (see bench/run_mnist.sh).

Trains the models of examples/recognize_digits.lua on Fashion-MNIST for a fixed
number of batches and prints the training throughput:

  mlp:  784-512-256-10 (relu, relu, softmax + cross entropy), batch 128
  conv: LeNet: conv 5x5x20 relu, max-pool 2/2, conv 5x5x50 relu, max-pool 2/2,
        fc 500 relu, fc 10 softmax + cross entropy, batch 64
  Adam lr 0.001. One step = forward, backward and the Adam update of a batch
  sliced from tensors already in memory (pixels scaled to [-1, 1]).

Each model runs with torch.set_num_threads(t) for every t in --threads; the
best is reported. Output lines are "RESULT torch <model> <samples/s> threads=<t>".

Usage: python3 bench/torch_mnist.py [--batches 300] [--warmup 30]
                                    [--models mlp,conv] [--threads 1,2]
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import LeNet, MLP, fluid_init, load  # noqa: E402

BATCH = {"mlp": 128, "conv": 64}


def throughput(name, threads, batches, warmup, x, y):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = MLP() if name == "mlp" else LeNet()
    fluid_init(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    bs = BATCH[name]
    n = x.shape[0]
    per_epoch = n // bs

    def step(i):
        k = (i % per_epoch) * bs
        loss = torch.nn.functional.cross_entropy(model(x[k:k + bs]), y[k:k + bs])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for i in range(warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(batches):
        loss = step(warmup + i)
    loss.item()
    dt = time.perf_counter() - t0
    return batches * bs / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--models", default="mlp,conv")
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    data_dir = os.environ.get("OAR_DATA_DIR", "/usr/share/datasets/fashion-mnist")
    x, y = load("train", data_dir)
    print("torch %s, %d cores" % (torch.__version__, os.cpu_count()), flush=True)
    for name in args.models.split(","):
        best = None
        for t in (int(s) for s in args.threads.split(",")):
            sps = throughput(name, t, args.batches, args.warmup, x, y)
            print("torch %-4s batch %3d threads %d: %8.0f samples/s" % (name, BATCH[name], t, sps),
                  flush=True)
            if best is None or sps > best[0]:
                best = (sps, t)
        print("RESULT torch %s %.1f threads=%d" % (name, best[0], best[1]), flush=True)


if __name__ == "__main__":
    main()
