"""Exports paddle.nn models with PaddlePaddle 3.3 (pip install
paddlepaddle==3.3.1) in its default format, PIR JSON (`model.json` +
`model.pdiparams`, written by paddle.jit.save), with their inputs and Paddle's
outputs, under spec/fixtures/paddle/<model>/ (layout `pir`; see
gen_paddle2.py for the manifest).

Run:  python3 tools/paddle_fixtures/gen_paddle3.py [OUT_DIR]
"""
import os
import sys
import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'spec', 'fixtures', 'paddle')


def rnd(*shape):
    return np.random.RandomState(sum(shape) + len(shape)).uniform(-1, 1, shape).astype('float32')


class Mlp(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return F.softmax(self.fc2(F.relu(self.fc1(x))))


class LeNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2D(1, 4, 3), nn.Conv2D(4, 6, 2, padding=1)
        self.fc = nn.Linear(6 * 3 * 3, 10)

    def forward(self, img):
        h = F.max_pool2d(F.relu(self.c1(img)), 2, 2)
        h = F.avg_pool2d(F.relu(self.c2(h)), 2, 2)
        return F.softmax(self.fc(paddle.flatten(h, 1)))


class ConvNet(nn.Layer):
    """No matmul: conv2d, batch_norm, relu, pool2d, dropout, reshape,
    transpose, concat, broadcasting add/multiply, scale, softmax, a 0-D mean."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2D(4)
        self.conv2 = nn.Conv2D(4, 3, 1)
        self.drop = nn.Dropout(0.3)
        self.bias = self.create_parameter([6], default_initializer=nn.initializer.Uniform(-1, 1))

    def forward(self, x, y):
        h = F.relu(self.bn(self.conv(x)))                        # [N, 4, 6, 6]
        h = F.max_pool2d(h, 2, 2)                                 # [N, 4, 3, 3]
        h = self.drop(F.sigmoid(self.conv2(h)))                   # [N, 3, 3, 3]
        a = paddle.transpose(paddle.reshape(h, [-1, 3, 9]), [0, 2, 1])   # [N, 9, 3]
        c = paddle.concat([a, F.tanh(a)], axis=2)                 # [N, 9, 6]
        d = (c + self.bias) * y                                   # y: [N, 9, 1]
        s = paddle.sum(d, axis=1) * 0.5 + 0.25                    # [N, 6]
        out = F.softmax(s)
        return out, paddle.mean(out * s)


def export(name, layer, feeds, specs, train_steps=0):
    paddle.seed(7)
    if train_steps:   # batch_norm's moving statistics move
        layer.train()
        for _ in range(train_steps):
            layer(*[paddle.to_tensor(a) for a in feeds.values()])
    layer.eval()
    outs = layer(*[paddle.to_tensor(a) for a in feeds.values()])
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, 'pir'), exist_ok=True)
    lines = ['paddle %s' % paddle.__version__]
    for k, a in feeds.items():
        tensorfile.write(os.path.join(d, 'in_%s.tensor' % k), a)
        lines.append('input %s in_%s.tensor' % (k, k))
    for i, o in enumerate(outs):
        tensorfile.write(os.path.join(d, 'out_%d.tensor' % i), o.numpy())
        lines.append('output %d out_%d.tensor' % (i, i))
    paddle.jit.save(layer, os.path.join(d, 'pir', 'model'), input_spec=specs)
    assert os.path.exists(os.path.join(d, 'pir', 'model.json')), 'Paddle did not write PIR JSON'
    lines.append('layout pir model.json model.pdiparams')
    with open(os.path.join(d, 'manifest.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    assert paddle.__version__.startswith('3.'), 'run with PaddlePaddle 3.x (gen_paddle2.py is for 2.6)'
    Spec = paddle.static.InputSpec
    paddle.seed(7)
    export('pir_mlp', Mlp(), {'x': rnd(3, 8)}, [Spec([None, 8], 'float32', 'x')])
    paddle.seed(7)
    export('pir_lenet', LeNet(), {'img': rnd(2, 1, 12, 12)}, [Spec([None, 1, 12, 12], 'float32', 'img')])
    paddle.seed(7)
    export('pir_convnet', ConvNet(), {'x': rnd(3, 2, 6, 6), 'y': rnd(3, 9, 1)},
           [Spec([None, 2, 6, 6], 'float32', 'x'), Spec([None, 9, 1], 'float32', 'y')], train_steps=3)
    print('fixtures written under', os.path.abspath(OUT))
