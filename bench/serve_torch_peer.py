"""bench/serve_torch_peer.py: the peer of bench/serve_load.sh, TorchServe
(PyPI torchserve + torch-model-archiver, Java) serving the same MLP.

  python3 bench/serve_torch_peer.py WORK_DIR   # builds WORK_DIR/store/mlp.mar

Reads the weights bench/serve_mlp.lua wrote (WORK_DIR/weights), builds the
same network in PyTorch (x @ W + b, relu, relu, softmax: oar's fc weights
are [in, out]), checks it against oar's output for one input when
WORK_DIR/check.json holds one, saves it as TorchScript and archives it with
the handler below (TorchServe's native /predictions API; a request body is
a JSON list of rows; with TorchServe's batching a call gets several
requests, stacked into one forward and split back, as oar serve does).
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HANDLER = '''
import json
import torch
from ts.torch_handler.base_handler import BaseHandler


class MLPHandler(BaseHandler):
    def handle(self, data, context):
        rows = []
        counts = []
        for req in data:
            body = req.get("body") or req.get("data")
            if isinstance(body, (bytes, bytearray)):
                body = json.loads(body)
            counts.append(len(body))
            rows.extend(body)
        with torch.inference_mode():
            out = self.model(torch.tensor(rows, dtype=torch.float32)).tolist()
        res, k = [], 0
        for n in counts:
            res.append(out[k:k + n])
            k += n
        return res
'''


class MLP(torch.nn.Module):
    def __init__(self, ws):
        super().__init__()
        p = [torch.nn.Parameter(torch.from_numpy(w), requires_grad=False) for w in ws]
        self.w0, self.b0, self.w1, self.b1, self.w2, self.b2 = p

    def forward(self, x):
        h = torch.relu(x @ self.w0 + self.b0)
        h = torch.relu(h @ self.w1 + self.b1)
        return torch.softmax(h @ self.w2 + self.b2, dim=1)


def main():
    work = sys.argv[1]
    ws = []
    for line in open(os.path.join(work, "weights", "shapes.txt")):
        name, *dims = line.split()
        ws.append(np.fromfile(os.path.join(work, "weights", name + ".bin"), dtype=np.float32).reshape([int(d) for d in dims]))
    model = MLP(ws).eval()
    check = os.path.join(work, "check.json")
    if os.path.exists(check):
        c = json.load(open(check))
        got = model(torch.tensor(c["x"], dtype=torch.float32)).detach().numpy()
        diff = float(np.abs(got - np.array(c["y"], dtype=np.float32)).max())
        print("peer: max |PyTorch - oar serve| on the check input: %.3g" % diff)
        if diff > 1e-5:
            sys.exit("peer: the PyTorch MLP does not compute oar's function")
    torch.jit.script(model).save(os.path.join(work, "mlp.pt"))
    with open(os.path.join(work, "handler.py"), "w") as f:
        f.write(HANDLER)
    os.makedirs(os.path.join(work, "store"), exist_ok=True)
    subprocess.check_call(["torch-model-archiver", "--model-name", "mlp", "--version", "1.0", "--serialized-file",
                           os.path.join(work, "mlp.pt"), "--handler", os.path.join(work, "handler.py"),
                           "--export-path", os.path.join(work, "store"), "--force"])


main()
