"""spec/helpers/triton_infer.py -- drives `oar serve` with NVIDIA's
tritonclient[http] (PyPI) for spec/serve_triton_spec.lua.

Usage: python3 triton_infer.py JOB.json; JOB names the server (url), the
model, its inputs (name, datatype, shape, a raw little-endian file, and
optionally one level of LoD offsets), and out_dir. Prints one JSON object:
health, the model's metadata, and per run the outputs (name, datatype,
shape, a raw file of the values as_numpy gave). Runs: "binary" (binary
inputs, outputs=None: the client asks for binary_data_output), "json" (JSON
inputs, every output asked for with binary_data=False) and, with
split_rows, "rows" (each row of the inputs its own request, all sent at
once through async_infer); also the response's id (request_id
"triton-1" on the binary run) and what a request with Triton's timeout of
1 microsecond got. Exits 3 printing {"missing": ...} when
tritonclient or numpy is not installed.
"""
import json
import sys

try:
    import numpy as np
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException
except ImportError as e:
    print(json.dumps({"missing": str(e)}))
    sys.exit(3)

NP = {"FP32": np.float32, "FP64": np.float64, "INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_}


def main():
    job = json.load(open(sys.argv[1]))
    client = httpclient.InferenceServerClient(job["url"], concurrency=8, network_timeout=60)
    model = job["model"]
    out = {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "model_ready": client.is_model_ready(model),
        "metadata": client.get_model_metadata(model),
    }
    arrays = [np.fromfile(s["file"], dtype=NP[s["datatype"]]).reshape(s["shape"]) for s in job["inputs"]]

    def inputs(arrs, binary):
        ins = []
        for spec, a in zip(job["inputs"], arrs):
            i = httpclient.InferInput(spec["name"], list(a.shape), spec["datatype"])
            i.set_data_from_numpy(a, binary_data=binary)
            if spec.get("lod"):
                # tritonclient has no public setter for an input's parameters
                i._parameters["lod"] = spec["lod"]
            ins.append(i)
        return ins

    def save(result, tag):
        saved = []
        for k, o in enumerate(result.get_response()["outputs"]):
            a = result.as_numpy(o["name"])
            path = "%s/%s_%d.bin" % (job["out_dir"], tag, k)
            a.tofile(path)
            saved.append({"name": o["name"], "datatype": o["datatype"], "shape": list(a.shape), "file": path,
                          "binary": "binary_data_size" in o.get("parameters", {})})
        return saved

    first = client.infer(model, inputs(arrays, True), request_id="triton-1")
    out["id"] = first.get_response().get("id")
    runs = {"binary": save(first, "binary")}
    asked = [httpclient.InferRequestedOutput(o["name"], binary_data=False) for o in out["metadata"]["outputs"]]
    runs["json"] = save(client.infer(model, inputs(arrays, False), outputs=asked), "json")
    if job.get("split_rows"):
        pending = [client.async_infer(model, inputs([a[r:r + 1] for a in arrays], True))
                   for r in range(arrays[0].shape[0])]
        runs["rows"] = [save(p.get_result(), "row%d" % r) for r, p in enumerate(pending)]
    out["runs"] = runs
    # Triton's per-request timeout (microseconds): 1 us is gone before the queue
    try:
        client.infer(model, inputs(arrays, True), timeout=1)
        out["timeout"] = {"status": "200"}
    except InferenceServerException as e:
        out["timeout"] = {"status": e.status(), "message": e.message()}
    client.close()
    print(json.dumps(out))


main()
