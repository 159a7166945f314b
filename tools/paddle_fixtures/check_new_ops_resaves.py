"""Runs, in PaddlePaddle 2.6, the programs resave_new_ops_with_oar.lua wrote
(the spec/fixtures/paddle_new_ops programs, loaded and saved again by oar) on
the fixtures' inputs, and compares with the outputs Paddle gave for its own
files (shape, LoD, values). Run once with Paddle installed:

  luajit tools/paddle_fixtures/resave_new_ops_with_oar.lua /tmp/oar_resaved
  /tmp/pd26/bin/python tools/paddle_fixtures/check_new_ops_resaves.py /tmp/oar_resaved
"""
import os
import sys
import numpy as np
import paddle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'spec', 'fixtures', 'paddle_new_ops')


def record(path):
    with open(path, 'rb') as f:
        return list(tensorfile.read_records(f.read()))[0]


def main():
    saved = sys.argv[1]
    paddle.enable_static()
    place = paddle.CPUPlace()
    for m in sorted(os.listdir(ROOT)):
        lines = open(os.path.join(ROOT, m, 'manifest.txt')).read().split('\n')
        ins = [ln.split()[1:] for ln in lines if ln.startswith('input ')]
        outs = [ln.split()[2] for ln in lines if ln.startswith('output ')]
        exe = paddle.static.Executor(place)
        with paddle.static.scope_guard(paddle.static.Scope()):
            prog, _, fetches = paddle.static.load_inference_model(os.path.join(saved, m, 'model'), exe)
            feed = {}
            for name, fn in ins:
                arr, lod = record(os.path.join(ROOT, m, fn))
                t = paddle.base.core.LoDTensor()
                t.set(arr, place)
                if lod:
                    t.set_lod(lod)
                feed[name] = t
            got = exe.run(prog, feed=feed, fetch_list=fetches, return_numpy=False)
            worst, same = 0.0, True
            for g, fn in zip(got, outs):
                w, wl = record(os.path.join(ROOT, m, fn))
                ga, wa = np.array(g), np.array(w)
                same = same and ga.shape == wa.shape and (g.lod() or []) == (wl or [])
                if ga.size:
                    worst = max(worst, float(np.max(np.abs(ga.astype('float64') - wa.astype('float64')))))
            print('%-12s shapes and LoD %s, max |Paddle on oar\'s files - Paddle| = %g'
                  % (m, 'equal' if same else 'DIFFER', worst))


if __name__ == '__main__':
    main()
