#!/usr/bin/env python3
"""Writes a ProgramDesc, serialized by an installed PaddlePaddle, holding one
op of each given type with every attribute Paddle declares for it set to
its default (OpProto attrs through Paddle's own checker, then the "extra"
attrs), as Paddle's save would store them. Every input and output slot the
proto declares gets a variable of its own (declared in the block), so the
program passes the slot checks of a load; the file tests attribute
acceptance on load, not running.

usage: python program_with_all_attrs.py OUT.pb OP [OP ...]
Required attributes without a default get a placeholder of their type (a
sub-block index for BLOCK attrs).
"""
import re
import sys

import paddle
from paddle.base import core, framework
from paddle.base.proto import framework_pb2

PLACEHOLDER = {"INT": 1, "FLOAT": 1.0, "STRING": "x", "INTS": [1], "FLOATS": [1.0],
               "STRINGS": ["x"], "BOOLEAN": False, "LONG": 1, "LONGS": [1]}
# required attrs whose placeholder must be one of a few values (Paddle does
# not check them, oar does)
PLACEHOLDER_FOR = {"unpool.unpooling_type": "max"}
TYPE_NAMES = {v: k for k, v in framework_pb2.AttrType.items()}


def add_op(block, sub, name, proto):
    types = {a.name: TYPE_NAMES.get(a.type) for a in proto.attrs}
    d = block.append_op()
    d.set_type(name)
    for kind, slots in (("in", proto.inputs), ("out", proto.outputs)):
        for slot in slots:
            v = "%s.%s.%s" % (name, kind, slot.name)
            block.var(v.encode())
            (d.set_input if kind == "in" else d.set_output)(slot.name, [v])
    for _ in range(len(types) + 1):
        try:
            d.check_attrs()
            break
        except Exception as e:  # a required attr: a placeholder, then retry
            m = re.search(r"Attribute \((\w+)\) is not set", str(e))
            if not m:
                raise
            t = types.get(m.group(1))
            if t == "BLOCK":
                d.set_block_attr(m.group(1), sub.desc)
            else:
                d._set_attr(m.group(1), PLACEHOLDER_FOR.get(name + "." + m.group(1), PLACEHOLDER[t]))
    for n, v in core.get_op_extra_attrs(name).items():
        if isinstance(v, list) and not v:
            continue   # an empty list has no type to store
        d._set_attr(n, v)


def main():
    paddle.enable_static()
    out, ops = sys.argv[1], sys.argv[2:]
    protos = {}
    for p in core.get_all_op_protos():
        op = framework_pb2.OpProto.FromString(p)
        protos[op.type] = op
    prog = framework.Program()
    sub = prog._create_block()
    prog._rollback()
    block = prog.global_block().desc
    written = []
    scratch = framework.Program()
    scratch_sub = scratch._create_block()
    scratch._rollback()
    for name in ops:
        if name not in protos:
            continue
        # tried on a scratch program first: an op whose required attrs no
        # placeholder satisfies (an enum string) is left out, and named
        try:
            add_op(scratch.global_block().desc, scratch_sub, name, protos[name])
        except Exception as e:  # noqa: BLE001
            print("left out %s: %s" % (name, str(e).splitlines()[0]), file=sys.stderr)
            continue
        add_op(block, sub, name, protos[name])
        written.append(name)
    with open(out, "wb") as f:
        f.write(prog.desc.serialize_to_string())
    print("%d ops" % len(written))


if __name__ == "__main__":
    main()
