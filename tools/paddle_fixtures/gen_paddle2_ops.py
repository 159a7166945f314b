"""Fluid-style programs over the ops oar added last (conv3d, grid_sampler,
unique, kron, huber_loss, lrn, temporal_shift, linear_chain_crf,
beam_search in a While, ...), built with PaddlePaddle 2.6 in static mode
with Fluid 1.8's op types (LayerHelper.append_op, as fluid.layers did),
run by Paddle on fixed inputs and saved with Paddle's outputs under
spec/fixtures/paddle_new_ops/<model>/ (same manifest and tensor files as
gen_paddle2.py):

  pd2/model.pdmodel + model.pdiparams   (paddle.static.save_inference_model)
  desc/__model__ + __params__           (the beam-search decoder also as its
                                         whole program desc, unpruned, with
                                         feed/fetch ops, and its parameters)

Run:  /tmp/pd26/bin/python tools/paddle_fixtures/gen_paddle2_ops.py [OUT_DIR]
"""
import os
import sys
import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_paddle2 as G  # noqa: E402

G.OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'spec', 'fixtures', 'paddle_new_ops')
paddle.enable_static()
place = paddle.CPUPlace()


def op(type_, inputs, outputs, attrs=None, dtypes=None):
    """appends a Fluid op; outputs: slot -> count (new vars) or Variable"""
    helper = LayerHelper(type_)
    outs = {}
    for slot, n in outputs.items():
        if isinstance(n, int):
            dt = (dtypes or {}).get(slot, 'float32')
            outs[slot] = [helper.create_variable_for_type_inference(dt) for _ in range(n)]
        else:
            outs[slot] = n
    helper.append_op(type=type_, inputs=inputs, outputs=outs, attrs=attrs or {})
    return {k: (v[0] if isinstance(v, list) and len(v) == 1 else v) for k, v in outs.items()}


def param(name, shape, lo=-1.0, hi=1.0):
    return paddle.static.create_parameter(shape, 'float32', name=name,
                                          default_initializer=paddle.nn.initializer.Uniform(lo, hi))


def export(name, build, feeds, whole_desc=False):
    paddle.seed(7)
    np.random.seed(7)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        feed_vars, fetch_vars = build()
    exe = paddle.static.Executor(place)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        feed = {k: G.lod_tensor(a, l) for k, (a, l) in feeds.items()}
        outs = exe.run(main, feed=feed, fetch_list=fetch_vars, return_numpy=False)
        fx = G.Fixture(name)
        fx.inputs(feeds)
        fx.outputs(outs)
        if whole_desc:
            d = os.path.join(fx.dir, 'desc')
            os.makedirs(d, exist_ok=True)
            # feed/fetch ops added the way save_inference_model adds them, nothing pruned
            prog = main.clone()
            blk = prog.global_block()
            feed_holder = blk.create_var(name='feed', type=paddle.base.core.VarDesc.VarType.FEED_MINIBATCH,
                                         persistable=True)
            fetch_holder = blk.create_var(name='fetch', type=paddle.base.core.VarDesc.VarType.FETCH_LIST,
                                          persistable=True)
            for i, v in enumerate(feed_vars):
                blk._prepend_op(type='feed', inputs={'X': [feed_holder]}, outputs={'Out': [v.name]},
                                attrs={'col': len(feed_vars) - 1 - i})
            for i, v in enumerate(fetch_vars):
                blk.append_op(type='fetch', inputs={'X': [v.name]}, outputs={'Out': [fetch_holder]},
                              attrs={'col': i})
            with open(os.path.join(d, '__model__'), 'wb') as f:
                f.write(prog.desc.serialize_to_string())
            paddle.static.io.save_vars(exe, d, main_program=main, predicate=paddle.static.io.is_parameter,
                                       filename='__params__')
            fx.layout('desc', '__model__', '__params__')
        # every program, the While one included, as save_inference_model prunes it
        d = os.path.join(fx.dir, 'pd2')
        os.makedirs(d, exist_ok=True)
        paddle.static.save_inference_model(os.path.join(d, 'model'), feed_vars, fetch_vars, exe, program=main)
        fx.layout('pd2', 'model.pdmodel', 'model.pdiparams')
        fx.finish()


rnd = G.rnd


# ---- (a) a sample of the ops added last -------------------------------------
def volumes():
    """conv3d, pool3d, trilinear_interp, affine_grid + grid_sampler"""
    x = paddle.static.data('x', [-1, 2, 4, 5, 5], 'float32')
    w = param('c3_w', [3, 2, 2, 3, 3])
    c = op('conv3d', {'Input': x, 'Filter': w}, {'Output': 1},
           {'strides': [1, 1, 1], 'paddings': [0, 1, 1], 'dilations': [1, 1, 1], 'groups': 1})['Output']
    p = op('pool3d', {'X': c}, {'Out': 1},
           {'pooling_type': 'max', 'ksize': [2, 2, 2], 'strides': [1, 2, 2], 'paddings': [0, 0, 0]})['Out']
    avg = op('pool3d', {'X': c}, {'Out': 1},
             {'pooling_type': 'avg', 'ksize': [2, 3, 3], 'strides': [2, 1, 1], 'paddings': [0, 1, 1],
              'exclusive': True})['Out']
    t = op('trilinear_interp', {'X': c}, {'Out': 1},
           {'out_d': 5, 'out_h': 7, 'out_w': 3, 'interp_method': 'trilinear', 'align_corners': False,
            'align_mode': 0})['Out']
    img = paddle.static.data('img', [-1, 2, 5, 6], 'float32')
    theta = paddle.static.data('theta', [-1, 2, 3], 'float32')
    grid = op('affine_grid', {'Theta': theta}, {'Output': 1}, {'output_shape': [2, 2, 4, 3]})['Output']
    gs = op('grid_sampler', {'X': img, 'Grid': grid}, {'Output': 1})['Output']
    return [x, img, theta], [c, p, avg, t, grid, gs]


def tensor_ops():
    """unique, unstack, flip, roll, tril_triu, kron, cross, bmm, dot, addmm, index_sample"""
    ids = paddle.static.data('ids', [8], 'int64')
    u = op('unique', {'X': ids}, {'Out': 1, 'Index': 1}, {'dtype': 2},
           dtypes={'Out': 'int64', 'Index': 'int32'})
    a = paddle.static.data('a', [2, 3, 4], 'float32')
    b = paddle.static.data('b', [2, 4, 3], 'float32')
    us = op('unstack', {'X': a}, {'Y': 3}, {'axis': 1, 'num': 3})['Y']
    fl = op('flip', {'X': a}, {'Out': 1}, {'axis': [0, 2]})['Out']
    ro = op('roll', {'X': a}, {'Out': 1}, {'shifts': [1, -2], 'axis': [1, 2]})['Out']
    tr = op('tril_triu', {'X': b}, {'Out': 1}, {'diagonal': -1, 'lower': False})['Out']
    k = op('kron', {'X': us[0], 'Y': b}, {'Out': 1})['Out']
    c3 = paddle.static.data('c3', [2, 3, 4], 'float32')
    cr = op('cross', {'X': a, 'Y': c3}, {'Out': 1}, {'dim': 1})['Out']
    bm = op('bmm', {'X': a, 'Y': b}, {'Out': 1})['Out']
    d = op('dot', {'X': us[1], 'Y': us[2]}, {'Out': 1})['Out']
    m = paddle.static.data('m', [2, 2], 'float32')
    am = op('addmm', {'Input': m, 'X': us[1], 'Y': paddle.transpose(us[2], [1, 0])}, {'Out': 1},
            {'Alpha': 0.5, 'Beta': 2.0})['Out']
    idx = paddle.static.data('idx', [2, 5], 'int64')
    isp = op('index_sample', {'X': us[0], 'Index': idx}, {'Out': 1})['Out']
    return [ids, a, b, c3, m, idx], [u['Out'], u['Index'], us[1], fl, ro, tr, k, cr, bm, d, am, isp]


def losses():
    """huber_loss, kldiv_loss, log_loss, label_smooth"""
    x = paddle.static.data('x', [4, 1], 'float32')
    y = paddle.static.data('y', [4, 1], 'float32')
    hu = op('huber_loss', {'X': x, 'Y': y}, {'Out': 1, 'Residual': 1}, {'delta': 0.4})['Out']
    lp = paddle.static.data('logp', [4, 5], 'float32')
    tg = paddle.static.data('target', [4, 5], 'float32')
    kl = op('kldiv_loss', {'X': lp, 'Target': tg}, {'Loss': 1}, {'reduction': 'none'})['Loss']
    klm = op('kldiv_loss', {'X': lp, 'Target': tg}, {'Loss': 1}, {'reduction': 'batchmean'})['Loss']
    pr = paddle.static.data('pred', [4, 1], 'float32')
    lab = paddle.static.data('label', [4, 1], 'float32')
    ll = op('log_loss', {'Predicted': pr, 'Labels': lab}, {'Loss': 1}, {'epsilon': 1e-4})['Loss']
    ls = op('label_smooth', {'X': tg}, {'Out': 1}, {'epsilon': 0.1})['Out']
    return [x, y, lp, tg, pr, lab], [hu, kl, klm, ll, ls]


def images():
    """lrn, maxout, temporal_shift, bicubic_interp, unfold (pad2d: Paddle 2.6 has no kernel for it)"""
    x = paddle.static.data('x', [4, 6, 3, 4], 'float32')
    lr = op('lrn', {'X': x}, {'Out': 1, 'MidOut': 1}, {'n': 3, 'k': 1.0, 'alpha': 1e-2, 'beta': 0.75})['Out']
    mo = op('maxout', {'X': x}, {'Out': 1}, {'groups': 3})['Out']
    ts = op('temporal_shift', {'X': x}, {'Out': 1}, {'seg_num': 2, 'shift_ratio': 0.25})['Out']
    bc = op('bicubic_interp', {'X': x}, {'Out': 1},
            {'out_h': 5, 'out_w': 7, 'interp_method': 'bicubic', 'align_corners': True})['Out']
    uf = op('unfold', {'X': x}, {'Y': 1},
            {'kernel_sizes': [2, 2], 'strides': [1, 2], 'paddings': [1, 0, 1, 0], 'dilations': [1, 1]})['Y']
    return [x], [lr, mo, ts, bc, uf]


# ---- (b) linear_chain_crf + crf_decoding over LoD input ------------------------
def crf():
    D = 4
    em = paddle.static.data('emission', [-1, D], 'float32', lod_level=1)
    lab = paddle.static.data('label', [-1, 1], 'int64', lod_level=1)
    tr = param('crf_transition', [D + 2, D], -0.5, 0.5)
    r = op('linear_chain_crf', {'Emission': em, 'Transition': tr, 'Label': lab},
           {'Alpha': 1, 'EmissionExps': 1, 'TransitionExps': 1, 'LogLikelihood': 1})
    path = op('crf_decoding', {'Emission': em, 'Transition': tr}, {'ViterbiPath': 1},
              dtypes={'ViterbiPath': 'int64'})['ViterbiPath']
    right = op('crf_decoding', {'Emission': em, 'Transition': tr, 'Label': lab}, {'ViterbiPath': 1},
               dtypes={'ViterbiPath': 'int64'})['ViterbiPath']
    return [em, lab], [r['LogLikelihood'], path, right]


def crf_feed():
    em = np.random.RandomState(3).uniform(-1, 1, (9, 4)).astype('float32')
    lab = np.array([[0], [1], [3], [2], [2], [0], [1], [1], [3]], dtype='int64')
    return {'emission': (em, [[0, 4, 6, 9]]), 'label': (lab, [[0, 4, 6, 9]])}


def crf_padded():
    """the same ops over padded [B, T, D] input with Length"""
    D = 4
    em = paddle.static.data('emission', [-1, 4, D], 'float32')
    lab = paddle.static.data('label', [-1, 4, 1], 'int64')
    ln = paddle.static.data('length', [-1], 'int64')
    tr = param('crf_transition', [D + 2, D], -0.5, 0.5)
    r = op('linear_chain_crf', {'Emission': em, 'Transition': tr, 'Label': lab, 'Length': ln},
           {'Alpha': 1, 'EmissionExps': 1, 'TransitionExps': 1, 'LogLikelihood': 1})
    path = op('crf_decoding', {'Emission': em, 'Transition': tr, 'Length': ln}, {'ViterbiPath': 1},
              dtypes={'ViterbiPath': 'int64'})['ViterbiPath']
    return [em, lab, ln], [r['LogLikelihood'], path]


def crf_padded_feed():
    em = np.random.RandomState(4).uniform(-1, 1, (3, 4, 4)).astype('float32')
    lab = np.random.RandomState(5).randint(0, 4, (3, 4, 1)).astype('int64')
    return {'emission': (em, None), 'label': (lab, None), 'length': (np.array([4, 2, 3], dtype='int64'), None)}


# ---- (c) beam_search in a While over tensor arrays + beam_search_decode ----------
BEAM, VOCAB, END, MAXLEN = 2, 7, 0, 4


def beam_decoder():
    init_ids = paddle.static.data('init_ids', [-1, 1], 'int64', lod_level=2)
    init_scores = paddle.static.data('init_scores', [-1, 1], 'float32', lod_level=2)
    counter = paddle.tensor.fill_constant([1], 'int64', 0)
    max_len = paddle.tensor.fill_constant([1], 'int64', MAXLEN)
    ids_array = paddle.tensor.create_array('int64')
    scores_array = paddle.tensor.create_array('float32')
    paddle.tensor.array_write(init_ids, counter, array=ids_array)
    paddle.tensor.array_write(init_scores, counter, array=scores_array)
    cond = paddle.less_than(counter, max_len)
    emb_w = param('dec_emb', [VOCAB, 5])
    fc_w = param('dec_fc_w', [5, VOCAB])
    fc_b = param('dec_fc_b', [VOCAB], -0.2, 0.2)
    loop = paddle.static.nn.control_flow.While(cond)
    with loop.block():
        pre_ids = paddle.tensor.array_read(ids_array, counter)
        pre_scores = paddle.tensor.array_read(scores_array, counter)
        emb = op('lookup_table', {'Ids': pre_ids, 'W': emb_w}, {'Out': 1}, {'padding_idx': -1})['Out']
        h = op('mul', {'X': emb, 'Y': fc_w}, {'Out': 1}, {'x_num_col_dims': 1, 'y_num_col_dims': 1})['Out']
        h = op('elementwise_add', {'X': h, 'Y': fc_b}, {'Out': 1}, {'axis': 1})['Out']
        probs = op('softmax', {'X': h}, {'Out': 1}, {'axis': -1})['Out']
        tk = op('top_k', {'X': probs}, {'Out': 1, 'Indices': 1}, {'k': BEAM}, dtypes={'Indices': 'int64'})
        logp = op('log', {'X': tk['Out']}, {'Out': 1})['Out']
        flat = op('reshape2', {'X': pre_scores}, {'Out': 1, 'XShape': 1}, {'shape': [-1]})['Out']
        accu = op('elementwise_add', {'X': logp, 'Y': flat}, {'Out': 1}, {'axis': 0})['Out']
        accu = op('lod_reset', {'X': accu, 'Y': pre_ids}, {'Out': 1}, {'append': False})['Out']
        bs = op('beam_search', {'pre_ids': pre_ids, 'pre_scores': pre_scores, 'ids': tk['Indices'],
                                'scores': accu},
                {'selected_ids': 1, 'selected_scores': 1, 'parent_idx': 1},
                {'level': 0, 'beam_size': BEAM, 'end_id': END, 'is_accumulated': True},
                dtypes={'selected_ids': 'int64', 'parent_idx': 'int32'})
        paddle.increment(counter, 1)
        paddle.tensor.array_write(bs['selected_ids'], counter, array=ids_array)
        paddle.tensor.array_write(bs['selected_scores'], counter, array=scores_array)
        length_cond = paddle.less_than(counter, max_len)
        empty = op('is_empty', {'X': bs['selected_ids']}, {'Out': 1}, dtypes={'Out': 'bool'})['Out']
        not_empty = paddle.logical_not(empty)
        paddle.logical_and(length_cond, not_empty, out=cond)
    dec = op('beam_search_decode', {'Ids': ids_array, 'Scores': scores_array},
             {'SentenceIds': 1, 'SentenceScores': 1}, {'beam_size': BEAM, 'end_id': END},
             dtypes={'SentenceIds': 'int64'})
    return [init_ids, init_scores], [dec['SentenceIds'], dec['SentenceScores']]


def beam_feed():
    ids = np.array([[1], [2], [3]], dtype='int64')
    sc = np.zeros((3, 1), dtype='float32')
    lod = [[0, 1, 2, 3], [0, 1, 2, 3]]
    return {'init_ids': (ids, lod), 'init_scores': (sc, lod)}


if __name__ == '__main__':
    assert paddle.__version__.startswith('2.'), 'run with PaddlePaddle 2.6'
    only = set(sys.argv[2:])
    jobs = [
        ('volumes', volumes, lambda: {'x': (rnd(2, 2, 4, 5, 5), None), 'img': (rnd(2, 2, 5, 6), None),
                                      'theta': (rnd(2, 2, 3), None)}, False),
        ('tensor_ops', tensor_ops, lambda: {
            'ids': (np.array([5, 2, 5, 9, 2, 2, 7, 0], dtype='int64'), None),
            'a': (rnd(2, 3, 4), None), 'b': (rnd(2, 4, 3), None), 'c3': (rnd(2, 3, 4) * 2, None), 'm': (rnd(2, 2), None),
            'idx': (np.array([[0, 3, 3, 1, 2], [2, 0, 1, 3, 3]], dtype='int64'), None)}, False),
        ('losses', losses, lambda: {
            'x': (rnd(4, 1), None), 'y': (rnd(4, 1) * 0.3, None),
            'logp': (np.log(np.random.RandomState(1).dirichlet(np.ones(5), 4)).astype('float32'), None),
            'target': (np.random.RandomState(2).dirichlet(np.ones(5), 4).astype('float32'), None),
            'pred': (np.array([[0.1], [0.9], [0.5], [0.99]], dtype='float32'), None),
            'label': (np.array([[0], [1], [1], [0]], dtype='float32'), None)}, False),
        ('images', images, lambda: {'x': (rnd(4, 6, 3, 4), None)}, False),
        ('crf', crf, crf_feed, False),
        ('crf_padded', crf_padded, crf_padded_feed, False),
        ('beam_search', beam_decoder, beam_feed, True),
    ]
    for name, build, feeds, whole in jobs:
        if only and name not in only:
            continue
        export(name, build, feeds(), whole_desc=whole)
        print('wrote', name)
    print('fixtures written under', os.path.abspath(G.OUT))
