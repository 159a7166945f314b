"""Builds one small static model with PaddlePaddle 2.6 (pip install
paddlepaddle==2.6.2) over the ops oar added for Paddle coverage, exports it
in Fluid's layout (__model__ + one file per parameter) and records its
inputs and Paddle's outputs as a Lua table, for spec/paddle_ops_model_spec.lua:

  spec/fixtures/paddle_ops/model/__model__, <params>
  spec/fixtures/paddle_ops/cases.lua   {paddle=, inputs={name={shape=, dtype=, data=}}, outputs={...}}

Run:  python tools/paddle_ops_fixture/gen.py [OUT_DIR]
"""
import os
import sys
import numpy as np
import paddle
import paddle.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'spec', 'fixtures', 'paddle_ops')
paddle.enable_static()
place = paddle.CPUPlace()


def build():
    x = paddle.static.data('x', [-1, 3, 6, 6], 'float32')
    idx = paddle.static.data('idx', [4], 'int64')
    nd = paddle.static.data('nd', [2, 2], 'int64')
    outs = []
    up = paddle.static.nn.conv2d_transpose(x, num_filters=4, filter_size=3, stride=2, padding=1)
    outs.append(up)                                                       # conv2d_transpose + bias
    outs.append(F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False))
    outs.append(F.interpolate(x, size=[5, 9], mode='nearest'))
    outs.append(F.interpolate(x, size=[4, 8], mode='bilinear', align_corners=True))
    outs.append(paddle.static.nn.prelu(x, mode='channel'))
    outs.append(paddle.static.nn.group_norm(x, groups=3))
    outs.append(paddle.static.nn.instance_norm(x))
    outs.append(F.pad(x, [1, 2, 0, 1], mode='reflect'))
    outs.append(F.pad(x, [2, 1, 1, 0], mode='constant', value=0.5))
    outs.append(paddle.where(x > 0, x, x * 0.5))
    outs.append(paddle.index_select(x, idx, axis=3))
    outs.append(paddle.gather_nd(x, nd))
    outs.append(paddle.cumsum(x, axis=2))
    outs.append(paddle.linalg.norm(x, p=3, axis=1))
    outs.append(paddle.argsort(x, axis=-1, descending=True).astype('float32'))
    outs.append(F.softplus(x * 4, beta=2, threshold=5))
    outs.append(paddle.ones_like(x) * 2)
    outs.append(paddle.any(x > 0.5, axis=1).astype('float32'))
    outs.append(paddle.floor_divide(paddle.cast(x * 10, 'int64'), paddle.full([1], 3, 'int64')).astype('float32'))
    outs.append(paddle.remainder(paddle.cast(x * 10, 'int64'), paddle.full([1], 3, 'int64')).astype('float32'))
    return [x, idx, nd], outs


def lua_value(arr):
    dt = {'float32': 'float32', 'int64': 'int64', 'int32': 'int32', 'bool': 'bool'}[str(arr.dtype)]
    flat = arr.reshape(-1).tolist()
    if dt == 'bool':
        data = ', '.join('true' if v else 'false' for v in flat)
    elif dt == 'float32':
        data = ', '.join(repr(float(v)) for v in flat)
    else:
        data = ', '.join(str(int(v)) for v in flat)
    return '{ shape = { %s }, dtype = "%s", data = { %s } }' % (', '.join(str(d) for d in arr.shape), dt, data)


def main():
    paddle.seed(11)
    main_p, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_p, startup):
        feed_vars, fetch_vars = build()
    test = main_p.clone(for_test=True)
    exe = paddle.static.Executor(place)
    rs = np.random.RandomState(5)
    feeds = {'x': rs.uniform(-1, 1, (2, 3, 6, 6)).astype('float32'),
             'idx': np.array([5, 0, 2, 2], dtype='int64'),
             'nd': np.array([[1, 2], [0, 1]], dtype='int64')}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        outs = exe.run(test, feed=feeds, fetch_list=fetch_vars)
        d = os.path.join(OUT, 'model')
        os.makedirs(d, exist_ok=True)
        norm = paddle.static.normalize_program(test, feed_vars, fetch_vars)
        with open(os.path.join(d, '__model__'), 'wb') as f:
            f.write(paddle.static.serialize_program(feed_vars, fetch_vars, program=test))
        paddle.static.io.save_vars(exe, d, main_program=norm, predicate=paddle.static.io.is_persistable)
    ops = sorted({op.type for op in norm.global_block().ops})
    with open(os.path.join(OUT, 'cases.lua'), 'w') as f:
        f.write('-- made by tools/paddle_ops_fixture/gen.py with PaddlePaddle %s\n' % paddle.__version__)
        f.write('return {\n  paddle = "%s",\n' % paddle.__version__)
        f.write('  ops = { %s },\n' % ', '.join('"%s"' % o for o in ops))
        f.write('  inputs = {\n')
        for k in ('x', 'idx', 'nd'):
            f.write('    %s = %s,\n' % (k, lua_value(feeds[k])))
        f.write('  },\n  outputs = {\n')
        for o in outs:
            f.write('    %s,\n' % lua_value(np.asarray(o)))
        f.write('  },\n}\n')
    print('ops:', ' '.join(ops))


if __name__ == '__main__':
    main()
