#!/usr/bin/env python3
"""PyTorch's side of bench/run_all.sh: the workloads of bench/suite_oar.lua
(see there), one per call, with the same models, initialization (Fluid's
defaults, bench/torch_reference.py's fluid_init), batches, optimizers and
sequence lengths. Runs on PyTorch 2.x from pip and on Debian's 1.13.

  python3 bench/suite_torch.py <workload> --threads T [--fused] [--steps N] [--warmup N]

--threads sets torch.set_num_threads (OpenBLAS's pool of Debian's build follows
OPENBLAS_NUM_THREADS, which the caller sets); --fused uses Adam(fused=True)
(PyTorch >= 2.4 on the CPU). The GRUs differ in one detail with the same work:
Fluid's applies the reset gate before the recurrent product ((r * h) W_c),
PyTorch's after it (r * (W_hn h)). Prints "RESULT <workload> <value> <unit>".
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import LeNet, MLP, fluid_init  # noqa: E402


def load_train():
    """The Fashion-MNIST training set as [60000, 784] floats in [-1, 1] (without numpy:
    Debian's python3-torch does not need it)."""
    import gzip
    d = os.environ.get("OAR_DATA_DIR", "/usr/share/datasets/fashion-mnist")
    with gzip.open(os.path.join(d, "train-images-idx3-ubyte.gz"), "rb") as f:
        img = f.read()[16:]
    with gzip.open(os.path.join(d, "train-labels-idx1-ubyte.gz"), "rb") as f:
        lab = f.read()[8:]
    x = torch.frombuffer(bytearray(img), dtype=torch.uint8).reshape(-1, 784).float() / 255.0 * 2.0 - 1.0
    y = torch.frombuffer(bytearray(lab), dtype=torch.uint8).long()
    return x, y


def adam(params, fused):
    if fused:
        return torch.optim.Adam(params, lr=0.001, fused=True)
    return torch.optim.Adam(params, lr=0.001)


def train_steps(model, opt, batches, steps, warmup):
    def step(i):
        xb, yb = batches[i % len(batches)]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    for i in range(warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step(warmup + i)
    v = loss.item()
    if v != v:
        sys.exit("loss is NaN")
    return time.perf_counter() - t0


def seq_lengths():
    return [32 - (i * 7) % 24 for i in range(32)]


class Recurrent(nn.Module):
    def __init__(self, kind, h):
        super().__init__()
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(h, h)   # includes the input projection
        self.fc = nn.Linear(h, 2)

    def forward(self, packed):
        _, state = self.rnn(packed)
        last = state[0] if isinstance(state, tuple) else state   # h_n: each sequence's last step
        return self.fc(last[0])

    def forward_padded(self, padded, last_index):
        out, _ = self.rnn(padded)                                  # [T, B, H]; steps past a sequence's end
        return self.fc(out[last_index, torch.arange(out.shape[1])])  # do not reach its last step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--fused", action="store_true")
    ap.add_argument("--padded", action="store_true",
                    help="lstm/gru: run the padded batch (oneDNN's fused cells) and take each sequence's "
                         "output at its last step, instead of a packed sequence")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--warmup", type=int)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    w = a.workload

    def result(v, unit):
        print("RESULT %s %.6g %s" % (w, v, unit), flush=True)

    if w in ("mlp_adam", "mlp_sgdm", "lenet_adam"):
        x, y = load_train()
        bs = 64 if w == "lenet_adam" else 128
        model = LeNet() if w == "lenet_adam" else MLP()
        fluid_init(model)
        if w == "lenet_adam":
            x = x.reshape(-1, 1, 28, 28)
        batches = [(x[k * bs:(k + 1) * bs], y[k * bs:(k + 1) * bs]) for k in range(64)]
        opt = (torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if w == "mlp_sgdm"
               else adam(model.parameters(), a.fused))
        steps = a.steps or (100 if w == "lenet_adam" else 300)
        dt = train_steps(model, opt, batches, steps, a.warmup if a.warmup is not None else 10)
        result(steps * bs / dt, "samples/s")
    elif w in ("lstm", "gru"):
        h, lens = 128, seq_lengths()
        rows = sum(lens)
        flat = torch.sin(torch.arange(rows * h, dtype=torch.float32) * 0.37).reshape(rows, h)
        seqs, off = [], 0
        for n in lens:
            seqs.append(flat[off:off + n])
            off += n
        padded = nn.utils.rnn.pad_sequence(seqs)           # [T, B, H]
        length = torch.tensor(lens)
        yb = torch.arange(len(lens)) % 2
        model = Recurrent(w, h)
        opt = adam(model.parameters(), a.fused)

        last_index = length - 1

        def step():
            if a.padded:
                logits = model.forward_padded(padded, last_index)
            else:
                logits = model(nn.utils.rnn.pack_padded_sequence(padded, length, enforce_sorted=False))
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        for _ in range(a.warmup if a.warmup is not None else 5):
            step()
        steps = a.steps or 60
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step()
        loss.item()
        result(steps * len(lens) / (time.perf_counter() - t0), "samples/s")
    elif w in ("mlp_epoch", "lenet_epoch"):
        x, y = load_train()
        model = LeNet() if w == "lenet_epoch" else MLP()
        fluid_init(model)
        if w == "lenet_epoch":
            x = x.reshape(-1, 1, 28, 28)
        opt = adam(model.parameters(), a.fused)
        t0 = time.perf_counter()
        end = x.shape[0] if a.steps is None else min(x.shape[0], 64 * a.steps)   # --steps: a partial epoch
        for k in range(0, end, 64):
            loss = F.cross_entropy(model(x[k:k + 64]), y[k:k + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
        loss.item()
        result(time.perf_counter() - t0, "s")
    elif w == "fit_a_line_epoch":
        rows, bs, nf = 8192, 20, 13
        state = 1
        xs, ys = [], []
        for _ in range(rows):
            s, row = 0.0, []
            for j in range(1, nf + 1):
                state = (state * 16807) % 2147483647
                v = state / 2147483647 * 2 - 1
                row.append(v)
                s += v * j / nf
            xs.append(row)
            ys.append([s + 0.5])
        xt, yt = torch.tensor(xs), torch.tensor(ys)
        model = nn.Linear(nf, 1)
        fluid_init(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.001)
        t0 = time.perf_counter()
        for k in range(0, (rows if a.steps is None else min(rows, bs * a.steps)) - bs + 1, bs):
            loss = F.mse_loss(model(xt[k:k + bs]), yt[k:k + bs])
            opt.zero_grad()
            loss.backward()
            opt.step()
        loss.item()
        result(time.perf_counter() - t0, "s")
    elif w in ("infer_b1", "infer_b128"):
        bs = 1 if w == "infer_b1" else 128
        model = MLP()
        fluid_init(model)
        model.eval()

        class Softmax(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return F.softmax(self.m(x), dim=1)
        x = torch.sin(torch.arange(bs * 784, dtype=torch.float32) * 0.01).reshape(bs, 784)
        with torch.no_grad():
            traced = torch.jit.trace(Softmax(model), x)
            steps = a.steps or (20000 if bs == 1 else 2000)
            for _ in range(a.warmup if a.warmup is not None else 200):
                traced(x)
            best, per = math.inf, max(1, steps // 5)
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(per):
                    traced(x)
                best = min(best, (time.perf_counter() - t0) / per)
        result(best * 1e6, "us")
    else:
        sys.exit("suite_torch: unknown workload " + w)


if __name__ == "__main__":
    main()
