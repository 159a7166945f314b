#!/usr/bin/env python3
"""PyTorch reference accuracies for examples/recognize_digits.lua.

Trains the example's two models on Fashion-MNIST with the example's setup and
prints the test accuracy after every epoch, for several seeds:

  * data: /usr/share/datasets/fashion-mnist (or $OAR_DATA_DIR), pixels scaled
    to [-1, 1] (x / 255 * 2 - 1, like Fluid's mnist reader and oar's loader);
    the training set is reshuffled every epoch; the last partial batch is kept.
  * mlp:  784-512-256-10, relu, relu, softmax + cross entropy.
  * conv: conv 5x5x20 relu, max-pool 2x2/2, conv 5x5x50 relu, max-pool 2x2/2,
          fc 500 relu, fc 10 softmax + cross entropy (Caffe's LeNet).
  * init as oar's (Fluid's) defaults: fc weights Xavier uniform
    (limit sqrt(6 / (fan_in + fan_out))), conv filters Normal(0, sqrt(2 / (k*k*C_in))),
    all biases zero.
  * Adam, lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8; batch size 64.

Usage: python3 bench/torch_reference.py [--epochs 2] [--seeds 1,2,3]
                                        [--models mlp,conv] [--batch-size 64]
"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path, magic, ndim):
    with gzip.open(path, "rb") as f:
        data = f.read()
    m, = struct.unpack(">i", data[:4])
    if m != magic:
        sys.exit("%s: magic %d, expected %d" % (path, m, magic))
    dims = struct.unpack(">" + "i" * ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return body.reshape(dims)


def load(split, data_dir):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"), 2051, 3)
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"), 2049, 1)
    x = torch.from_numpy(images.reshape(-1, 784).astype(np.float32) / 255.0 * 2.0 - 1.0)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def fluid_init(model):
    for m in model.modules():
        if isinstance(m, nn.Linear):
            fan_out, fan_in = m.weight.shape
            limit = math.sqrt(6.0 / (fan_in + fan_out))
            nn.init.uniform_(m.weight, -limit, limit)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Conv2d):
            k = m.weight.shape[1] * m.weight.shape[2] * m.weight.shape[3]
            nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / k))
            nn.init.zeros_(m.bias)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)          # logits; softmax is in the loss


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(50 * 4 * 4, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        x = x.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], 1000):
            correct += (model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum().item()
    model.train()
    return correct / x.shape[0]


def run(name, seed, epochs, batch_size, train, test):
    torch.manual_seed(seed)
    model = MLP() if name == "mlp" else LeNet()
    fluid_init(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = train
    n = xtr.shape[0]
    accs = []
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n, generator=gen)
        total, count, t0 = 0.0, 0, time.time()
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * idx.shape[0]
            count += idx.shape[0]
        dt = time.time() - t0
        acc = evaluate(model, *test)
        accs.append(acc)
        print("%-4s seed %d epoch %d: train loss %.4f, test accuracy %.4f (%.0f samples/s)"
              % (name, seed, epoch, total / count, acc, count / dt), flush=True)
    return accs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--models", default="mlp,conv")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    data_dir = os.environ.get("OAR_DATA_DIR", "/usr/share/datasets/fashion-mnist")
    train, test = load("train", data_dir), load("test", data_dir)
    print("torch %s, %d threads, batch %d" % (torch.__version__, torch.get_num_threads(),
                                             args.batch_size), flush=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.models.split(","):
        per_epoch = [[] for _ in range(args.epochs)]
        for seed in seeds:
            for e, a in enumerate(run(name, seed, args.epochs, args.batch_size, train, test)):
                per_epoch[e].append(a)
        for e, accs in enumerate(per_epoch):
            print("SUMMARY %s epoch %d: mean %.4f min %.4f max %.4f over seeds %s"
                  % (name, e + 1, np.mean(accs), min(accs), max(accs), args.seeds), flush=True)


if __name__ == "__main__":
    main()
