"""torch_eager.py: PyTorch's eager costs, the counterpart of bench/bench_eager.lua.
  1. a chain of N one-element adds (y = y + c), forward only and forward +
     backward (c requires grad): microseconds per op, the minimum over reps;
  2. the MLP 784 -> 256 -> 10, batch 64, Adam (fused where this PyTorch has
     it), cross entropy: samples per second, the best of reps timed windows.
  python3 bench/torch_eager.py [N] [reps] [mlp_steps] [threads]
Prints RESULT lines shaped like bench_eager.lua's."""
import sys, time, gc
import torch

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 40
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 1
torch.set_num_threads(threads)


def best(f):
    b = float("inf")
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b


c = torch.tensor([1e-4])
x0 = torch.tensor([1.0])


def fwd():
    y = x0
    for _ in range(N):
        y = y + c


cg = torch.tensor([1e-4], requires_grad=True)


def fwdbwd():
    y = x0
    for _ in range(N):
        y = y + cg
    y.backward()
    cg.grad = None


print("RESULT torch eager add_fwd_us_per_op=%.3f add_fwdbwd_us_per_op=%.3f (N=%d, min of %d, %s, %d threads)" % (
    best(fwd) / N * 1e6, best(fwdbwd) / N * 1e6, N, reps, torch.__version__, threads))
if steps == 0:
    sys.exit(0)

B = 64
torch.manual_seed(1)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
try:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    fused = "fused"
except (RuntimeError, TypeError):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    fused = "foreach"
xb, lb = torch.randn(B, 784), torch.randint(0, 10, (B,))
loss_fn = torch.nn.CrossEntropyLoss()


def train(n):
    for _ in range(n):
        loss_fn(model(xb), lb).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


train(3)
t = best(lambda: train(steps))
print("RESULT torch eager mlp_train samples_per_s=%.0f (batch %d, %d steps, best of %d, Adam %s, %d threads)" % (
    B * steps / t, B, steps, reps, fused, threads))
