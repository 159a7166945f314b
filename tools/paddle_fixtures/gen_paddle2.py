"""Builds small models with PaddlePaddle 2.6 (pip install paddlepaddle==2.6.2),
exports each in Fluid's and Paddle 2.x's layouts, and records its inputs and
Paddle's outputs, under spec/fixtures/paddle/<model>/:

  fluid_separate/__model__ + one file per parameter
  fluid_combined/__model__ + __params__
  pd2/model.pdmodel + model.pdiparams        (paddle.static.save_inference_model)
  jit/model.pdmodel + model.pdiparams        (paddle.jit.save; the paddle.nn models)
  in_<name>.tensor, out_<i>.tensor, manifest.txt

Tensors are single Fluid LoDTensor records (tensorfile.py). manifest.txt lists
`layout <dir> <model file> <params file or ->`, `input <name> <file>` (feed
order) and `output <index> <file>` lines, plus `paddle <version>`.

Run:  python3 tools/paddle_fixtures/gen_paddle2.py [OUT_DIR]
"""
import os
import sys
import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'spec', 'fixtures', 'paddle')
paddle.enable_static()
place = paddle.CPUPlace()


def lod_tensor(arr, lod):
    t = paddle.base.core.LoDTensor()
    t.set(arr, place)
    if lod:
        t.set_lod(lod)
    return t


class Fixture:
    def __init__(self, name):
        self.dir = os.path.join(OUT, name)
        os.makedirs(self.dir, exist_ok=True)
        self.lines = ['paddle %s' % paddle.__version__]

    def inputs(self, feeds):
        for name, (arr, lod) in feeds.items():
            fn = 'in_%s.tensor' % name
            tensorfile.write(os.path.join(self.dir, fn), arr, lod)
            self.lines.append('input %s %s' % (name, fn))

    def outputs(self, outs):
        for i, t in enumerate(outs):
            arr = np.array(t)
            if callable(getattr(t, 'shape', None)):   # a LoDTensor knows its rank (0-D included)
                arr = arr.reshape(t.shape())
            lod = t.lod() if hasattr(t, 'lod') else None
            fn = 'out_%d.tensor' % i
            tensorfile.write(os.path.join(self.dir, fn), arr, lod or None)
            self.lines.append('output %d %s' % (i, fn))

    def layout(self, sub, model, params):
        self.lines.append('layout %s %s %s' % (sub, model, params or '-'))

    def finish(self):
        with open(os.path.join(self.dir, 'manifest.txt'), 'w') as f:
            f.write('\n'.join(self.lines) + '\n')


def export_static(name, build, feeds, train_steps=0):
    """build() -> (feed vars, fetch vars); feeds: name -> (array, lod)."""
    paddle.seed(7)
    np.random.seed(7)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        feed_vars, fetch_vars = build()
    test = main.clone(for_test=True)
    exe = paddle.static.Executor(place)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        feed = {k: lod_tensor(a, l) for k, (a, l) in feeds.items()}
        for _ in range(train_steps):   # batch_norm's moving statistics move
            exe.run(main, feed=feed, fetch_list=fetch_vars)
        outs = exe.run(test, feed=feed, fetch_list=fetch_vars, return_numpy=False)
        fx = Fixture(name)
        fx.inputs(feeds)
        fx.outputs(outs)
        norm = paddle.static.normalize_program(test, feed_vars, fetch_vars)
        model_bytes = paddle.static.serialize_program(feed_vars, fetch_vars, program=test)
        persist = paddle.static.io.is_persistable
        for sub, params in (('fluid_separate', None), ('fluid_combined', '__params__')):
            d = os.path.join(fx.dir, sub)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, '__model__'), 'wb') as f:
                f.write(model_bytes)
            paddle.static.io.save_vars(exe, d, main_program=norm, predicate=persist, filename=params)
            fx.layout(sub, '__model__', params)
        d = os.path.join(fx.dir, 'pd2')
        os.makedirs(d, exist_ok=True)
        paddle.static.save_inference_model(os.path.join(d, 'model'), feed_vars, fetch_vars, exe, program=test)
        fx.layout('pd2', 'model.pdmodel', 'model.pdiparams')
        fx.finish()


def rnd(*shape):
    return np.random.RandomState(sum(shape) + len(shape)).uniform(-1, 1, shape).astype('float32')


# ---- models ---------------------------------------------------------------------
def mlp():
    x = paddle.static.data('x', [-1, 8], 'float32')
    h = paddle.static.nn.fc(x, 16, activation='relu')
    h = paddle.static.nn.fc(h, 12, activation='tanh')
    out = paddle.nn.functional.softmax(paddle.static.nn.fc(h, 4))
    return [x], [out]


def lenet():
    img = paddle.static.data('img', [-1, 1, 12, 12], 'float32')
    c = paddle.static.nn.conv2d(img, num_filters=4, filter_size=3, act='relu')
    p = paddle.nn.functional.max_pool2d(c, kernel_size=2, stride=2)
    c = paddle.static.nn.conv2d(p, num_filters=6, filter_size=2, padding=1, act='relu')
    p = paddle.nn.functional.avg_pool2d(c, kernel_size=2, stride=2)
    flat = paddle.reshape(p, [-1, 6 * 3 * 3])
    out = paddle.static.nn.fc(flat, 10, activation='softmax')
    return [img], [out]


def mixed():
    """batch_norm, dropout, broadcasting, reshape, transpose, concat."""
    x = paddle.static.data('x', [-1, 3, 4, 4], 'float32')
    y = paddle.static.data('y', [-1, 16, 1], 'float32')
    bn = paddle.static.nn.batch_norm(x)
    dr = paddle.nn.functional.dropout(bn, p=0.3)
    a = paddle.transpose(paddle.reshape(dr, [-1, 3, 16]), [0, 2, 1])       # [N, 16, 3]
    b = paddle.nn.functional.sigmoid(a)
    c = paddle.concat([a, b], axis=2)                                       # [N, 16, 6]
    bias = paddle.static.create_parameter([6], 'float32', name='mixed_bias',
                                          default_initializer=paddle.nn.initializer.Uniform(-1, 1))
    d = (c + bias) * y                                                      # broadcast both ways
    s = paddle.sum(d, axis=1)                                               # [N, 6]
    out = paddle.scale(s, scale=0.5, bias=0.25)
    return [x, y], [out]


def scalar_out():
    """A 0-D parameter and a 0-D output (Paddle 2.5+)."""
    x = paddle.static.data('x', [-1, 5], 'float32')
    w = paddle.static.create_parameter([], 'float32', name='scalar_w',
                                       default_initializer=paddle.nn.initializer.Constant(1.5))
    h = paddle.static.nn.fc(x, 3) * w
    return [x], [h, paddle.mean(h)]


def bow():
    """paddle.static.nn.embedding (lookup_table_v2) over int64 ids."""
    ids = paddle.static.data('ids', [-1, 5], 'int64')
    e = paddle.static.nn.embedding(ids, size=[20, 6])
    out = paddle.static.nn.fc(paddle.mean(e, axis=1), 3, activation='softmax')
    return [ids], [out]


def nn_ops():
    """The ops paddle.nn code emits: slice, expand_v2, hard_swish, flatten."""
    x = paddle.static.data('x', [-1, 6], 'float32')
    s = x[:, 1:5]                                              # slice
    e = paddle.expand(paddle.unsqueeze(s, 1), [-1, 3, 4])      # unsqueeze2, expand_v2
    h = paddle.nn.functional.hardswish(e)                      # hard_swish
    f = paddle.flatten(h, 1)                                   # flatten_contiguous_range
    return [x], [paddle.static.nn.fc(f, 2)]


def _seq_front(vocab, emb, width):
    ids = paddle.static.data('ids', [-1, 1], 'int64', lod_level=1)
    helper = LayerHelper('embedding')
    table = helper.create_parameter(attr=paddle.ParamAttr(name='emb_w'), shape=[vocab, emb], dtype='float32',
                                    default_initializer=paddle.nn.initializer.Uniform(-1, 1))
    e = helper.create_variable_for_type_inference('float32')
    helper.append_op(type='lookup_table', inputs={'Ids': ids, 'W': table}, outputs={'Out': e},
                     attrs={'is_sparse': False, 'padding_idx': -1})
    return ids, paddle.static.nn.fc(e, width)


def lstm_classifier():
    H = 6
    ids, proj = _seq_front(20, 5, 4 * H)
    helper = LayerHelper('lstm')
    w = helper.create_parameter(attr=paddle.ParamAttr(name='lstm_w'), shape=[H, 4 * H], dtype='float32')
    b = helper.create_parameter(attr=paddle.ParamAttr(name='lstm_b'), shape=[1, 7 * H], dtype='float32',
                                default_initializer=paddle.nn.initializer.Uniform(-0.5, 0.5))
    outs = {k: helper.create_variable_for_type_inference('float32')
            for k in ('Hidden', 'Cell', 'BatchGate', 'BatchCellPreAct')}
    helper.append_op(type='lstm', inputs={'Input': proj, 'Weight': w, 'Bias': b}, outputs=outs,
                     attrs={'use_peepholes': True, 'is_reverse': False, 'gate_activation': 'sigmoid',
                            'cell_activation': 'tanh', 'candidate_activation': 'tanh'})
    pooled = paddle.static.nn.sequence_pool(outs['Hidden'], 'max')
    out = paddle.static.nn.fc(pooled, 3, activation='softmax')
    return [ids], [out]


def gru_classifier():
    H = 5
    ids, proj = _seq_front(20, 4, 3 * H)
    helper = LayerHelper('gru')
    w = helper.create_parameter(attr=paddle.ParamAttr(name='gru_w'), shape=[H, 3 * H], dtype='float32')
    b = helper.create_parameter(attr=paddle.ParamAttr(name='gru_b'), shape=[1, 3 * H], dtype='float32',
                                default_initializer=paddle.nn.initializer.Uniform(-0.5, 0.5))
    outs = {k: helper.create_variable_for_type_inference('float32')
            for k in ('Hidden', 'BatchGate', 'BatchResetHiddenPrev', 'BatchHidden')}
    helper.append_op(type='gru', inputs={'Input': proj, 'Weight': w, 'Bias': b}, outputs=outs,
                     attrs={'activation': 'tanh', 'gate_activation': 'sigmoid', 'is_reverse': False,
                            'origin_mode': False})
    last = paddle.static.nn.sequence_last_step(outs['Hidden'])
    out = paddle.static.nn.fc(last, 3, activation='softmax')
    return [ids], [out]


def seq_feed():
    ids = np.array([[3], [1], [4], [1], [5], [9], [2], [6], [5]], dtype='int64')
    return {'ids': (ids, [[0, 4, 6, 9]])}


class NnMlp(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = paddle.nn.Linear(8, 16)
        self.fc2 = paddle.nn.Linear(16, 4)

    def forward(self, x):
        return paddle.nn.functional.softmax(self.fc2(paddle.nn.functional.relu(self.fc1(x))))


def export_jit(name, layer_cls, feeds, specs):
    paddle.disable_static()
    paddle.seed(7)
    layer = layer_cls()
    layer.eval()
    args = [paddle.to_tensor(a) for a, _ in feeds.values()]
    outs = layer(*args)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    fx = Fixture(name)
    fx.inputs(feeds)
    fx.outputs([o.numpy() for o in outs])
    d = os.path.join(fx.dir, 'jit')
    os.makedirs(d, exist_ok=True)
    paddle.jit.save(layer, os.path.join(d, 'model'), input_spec=specs)
    fx.layout('jit', 'model.pdmodel', 'model.pdiparams')
    fx.finish()
    paddle.enable_static()


if __name__ == '__main__':
    assert paddle.__version__.startswith('2.'), 'run with PaddlePaddle 2.6 (gen_paddle3.py is for 3.x)'
    export_static('mlp', mlp, {'x': (rnd(3, 8), None)})
    export_static('lenet', lenet, {'img': (rnd(2, 1, 12, 12), None)})
    export_static('mixed', mixed, {'x': (rnd(4, 3, 4, 4), None), 'y': (rnd(4, 16, 1), None)}, train_steps=3)
    export_static('scalar_out', scalar_out, {'x': (rnd(2, 5), None)})
    export_static('bow', bow, {'ids': (np.array([[1, 2, 3, 4, 5], [9, 8, 7, 0, 19]], dtype='int64'), None)})
    export_static('nn_ops', nn_ops, {'x': (rnd(3, 6), None)})
    export_static('lstm', lstm_classifier, seq_feed())
    export_static('gru', gru_classifier, seq_feed())
    export_jit('jit_mlp', NnMlp, {'x': (rnd(3, 8), None)},
               [paddle.static.InputSpec([None, 8], 'float32', 'x')])
    print('fixtures written under', os.path.abspath(OUT))
