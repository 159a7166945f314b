"""Loads the models save_with_oar.lua wrote into PaddlePaddle and compares
Paddle's outputs with oar's. Run once with Paddle installed:

  luajit tools/paddle_fixtures/save_with_oar.lua /tmp/oar_saved
  python3 tools/paddle_fixtures/check_oar_saves.py /tmp/oar_saved

Paddle 2.6 loads every layout (`__model__` + one file per parameter,
`__model__` + `__params__`, `model.pdmodel` + `model.pdiparams`) with
paddle.static.load_inference_model; Paddle 3.x loads them through
paddle.inference (its static API reads PIR JSON). Prints one
line per model and layout: loads or not, and the largest |Paddle - oar|.
"""
import os
import sys
import numpy as np
import paddle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

ROOT = sys.argv[1]
paddle.enable_static()
place = paddle.CPUPlace()


def read(path):
    return tensorfile.read_records(open(path, 'rb').read())[0]


def manifest(d):
    fx = {'inputs': [], 'outputs': [], 'layouts': []}
    for line in open(os.path.join(d, 'manifest.txt')):
        parts = line.split()
        if parts[0] == 'input':
            fx['inputs'].append((parts[1], read(os.path.join(d, parts[2]))))
        elif parts[0] == 'output':
            fx['outputs'].append(read(os.path.join(d, parts[2]))[0])
        elif parts[0] == 'layout':
            fx['layouts'].append(parts[1:])
    return fx


def lod_tensor(arr, lod):
    t = paddle.base.core.LoDTensor()
    t.set(np.array(arr), place)
    if lod:
        t.set_lod(lod)
    return t


def run_static(d, layout, fx):
    sub, model, params = layout
    exe = paddle.static.Executor(place)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        if sub == 'pd':
            prog, feeds, fetches = paddle.static.load_inference_model(os.path.join(d, sub, 'model'), exe)
        else:
            prog, feeds, fetches = paddle.static.load_inference_model(
                os.path.join(d, sub), exe, model_filename=model,
                params_filename=None if params == '-' else params)
        feed = {n: lod_tensor(a, l) for n, (a, l) in fx['inputs']}
        return exe.run(prog, feed=feed, fetch_list=fetches)


def run_inference(d, layout, fx):
    from paddle import inference
    sub, model, params = layout
    if params == '-':   # one file per parameter: the directory
        cfg = inference.Config(os.path.join(d, sub))
    else:
        cfg = inference.Config(os.path.join(d, sub, model), os.path.join(d, sub, params))
    cfg.disable_gpu()
    pred = inference.create_predictor(cfg)
    for name, (arr, lod) in fx['inputs']:
        h = pred.get_input_handle(name)
        h.reshape(list(arr.shape))
        h.copy_from_cpu(np.array(arr))
        if lod:
            h.set_lod(lod)
    pred.run()
    return [pred.get_output_handle(n).copy_to_cpu() for n in pred.get_output_names()]


def main():
    v3 = paddle.__version__.startswith('3.')
    print('PaddlePaddle', paddle.__version__)
    for model in sorted(os.listdir(ROOT)):
        d = os.path.join(ROOT, model)
        fx = manifest(d)
        for layout in fx['layouts']:
            try:
                outs = run_inference(d, layout, fx) if v3 else run_static(d, layout, fx)
                diff = max(float(np.max(np.abs(np.array(o).reshape(w.shape) - w))) for o, w in zip(outs, fx['outputs']))
                print('%-8s %-5s loads, runs; max |Paddle - oar| = %.3g' % (model, layout[0], diff))
            except Exception as e:  # report and go on: this is a survey
                msg = str(e).strip().splitlines()
                print('%-8s %-5s FAILS: %s' % (model, layout[0], msg[-1] if msg else type(e).__name__))


if __name__ == '__main__':
    main()
