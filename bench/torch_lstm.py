"""PyTorch side of the LSTM training benchmark (bench/run_lstm.sh): the same
step as bench/bench_lstm.lua (projection, LSTM over B sequences of T steps,
last step, fc to 2 classes, cross entropy, backward, Adam), best of 1 and 2
threads. Prints "RESULT torch lstm <samples/s> threads=<t>"."""
import sys
import time

import torch

T, H, B, STEPS = (int(a) for a in (sys.argv[1:] + ["32", "128", "32", "100"][len(sys.argv) - 1:])[:4])


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(H, H)   # includes the input projection
        self.fc = torch.nn.Linear(H, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[-1])


def run(threads):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    x = torch.sin(torch.arange(T * B * H, dtype=torch.float32) * 0.37).reshape(T, B, H)
    y = torch.arange(B) % 2

    def step():
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        loss = step()
    loss.item()
    return STEPS * B / (time.perf_counter() - t0)


best = max((run(t), t) for t in (1, 2))
print("RESULT torch lstm %.1f threads=%d  (T=%d H=%d B=%d)" % (best[0], best[1], T, H, B))
