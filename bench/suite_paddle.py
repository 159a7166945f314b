#!/usr/bin/env python3
"""PaddlePaddle 3's side of bench/run_all.sh, static graph (Fluid's API): the
workloads of bench/suite_oar.lua that Paddle runs here — mlp_adam, mlp_sgdm,
lenet_adam (training with the static-graph Executor; its oneDNN training path
crashes on this machine, so training uses Paddle's plain CPU kernels) and
infer_b1 / infer_b128 (Paddle Inference with oneDNN, the MLP saved with
save_inference_model). Same models, Fluid's default initializers (Paddle's
own), batches and optimizers as oar. run_all.sh sets MKL_DEBUG_CPU_TYPE=5.

  python bench/suite_paddle.py <workload> --threads T [--steps N] [--warmup N]
Prints "RESULT <workload> <value> <unit>".
"""
import argparse
import gzip
import math
import os
import sys
import tempfile
import time

import numpy as np

# the legacy ProgramDesc static graph (Fluid's), where paddle.static.nn.conv2d exists
os.environ.setdefault("FLAGS_enable_pir_api", "0")
import paddle  # noqa: E402


def load_train():
    d = os.environ.get("OAR_DATA_DIR", "/usr/share/datasets/fashion-mnist")
    with gzip.open(os.path.join(d, "train-images-idx3-ubyte.gz"), "rb") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255.0 * 2.0 - 1.0
    with gzip.open(os.path.join(d, "train-labels-idx1-ubyte.gz"), "rb") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64).reshape(-1, 1)
    return x, y


def mlp(img):
    fc = paddle.static.nn.fc
    h = fc(img, 512, activation="relu")
    h = fc(h, 256, activation="relu")
    return fc(h, 10, activation="softmax")


def lenet(img):
    nn = paddle.static.nn
    c = nn.conv2d(img, 20, 5, act="relu")
    p = paddle.nn.functional.max_pool2d(c, 2, 2)
    c = nn.conv2d(p, 50, 5, act="relu")
    p = paddle.nn.functional.max_pool2d(c, 2, 2)
    h = nn.fc(p, 500, activation="relu")
    return nn.fc(h, 10, activation="softmax")


def build(net, shape, optimizer):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 1
    with paddle.static.program_guard(main, startup):
        img = paddle.static.data("img", [None] + shape, "float32")
        label = paddle.static.data("label", [None, 1], "int64")
        pred = net(img)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(pred, label, use_softmax=False))
        optimizer().minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return main, exe, loss, pred, img


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--warmup", type=int)
    a = ap.parse_args()
    w = a.workload
    paddle.enable_static()
    paddle.set_device("cpu")
    if hasattr(paddle.base.core, "set_num_threads"):
        paddle.base.core.set_num_threads(a.threads)

    def result(v, unit):
        print("RESULT %s %.6g %s" % (w, v, unit), flush=True)

    adam = lambda: paddle.optimizer.Adam(learning_rate=0.001)  # noqa: E731
    sgdm = lambda: paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9)  # noqa: E731
    if w in ("mlp_adam", "mlp_sgdm", "lenet_adam"):
        x, y = load_train()
        lenet_w = w == "lenet_adam"
        bs = 64 if lenet_w else 128
        shape = [1, 28, 28] if lenet_w else [784]
        prog, exe, loss, _, _ = build(lenet if lenet_w else mlp, shape, sgdm if w == "mlp_sgdm" else adam)
        batches = [(x[k * bs:(k + 1) * bs].reshape([bs] + shape), y[k * bs:(k + 1) * bs]) for k in range(64)]

        def step(i):
            xb, yb = batches[i % len(batches)]
            return exe.run(prog, feed={"img": xb, "label": yb}, fetch_list=[loss])
        for i in range(a.warmup if a.warmup is not None else 10):
            step(i)
        steps = a.steps or (100 if lenet_w else 300)
        t0 = time.perf_counter()
        for i in range(steps):
            out = step(i)
        dt = time.perf_counter() - t0
        if not np.isfinite(out[0]).all():
            sys.exit("loss is NaN")
        result(steps * bs / dt, "samples/s")
    elif w in ("infer_b1", "infer_b128"):
        bs = 1 if w == "infer_b1" else 128
        prog, exe, _, pred, img = build(mlp, [784], adam)
        d = tempfile.mkdtemp()
        prefix = os.path.join(d, "mlp")
        paddle.static.save_inference_model(prefix, [img], [pred], exe, program=prog)
        model = prefix + (".pdmodel" if os.path.exists(prefix + ".pdmodel") else ".json")
        cfg = paddle.inference.Config(model, prefix + ".pdiparams")
        cfg.disable_gpu()
        cfg.enable_mkldnn()
        cfg.set_cpu_math_library_num_threads(a.threads)
        cfg.disable_glog_info()
        predictor = paddle.inference.create_predictor(cfg)
        inp = predictor.get_input_handle(predictor.get_input_names()[0])
        out = predictor.get_output_handle(predictor.get_output_names()[0])
        x = np.sin(np.arange(bs * 784, dtype=np.float32) * 0.01).reshape(bs, 784)

        def run():
            inp.copy_from_cpu(x)
            predictor.run()
            return out.copy_to_cpu()
        for _ in range(a.warmup if a.warmup is not None else 200):
            run()
        steps = a.steps or (20000 if bs == 1 else 2000)
        best, per = math.inf, max(1, steps // 5)
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(per):
                run()
            best = min(best, (time.perf_counter() - t0) / per)
        result(best * 1e6, "us")
    else:
        sys.exit("suite_paddle: workload %s is not run on Paddle" % w)


if __name__ == "__main__":
    main()
