#!/usr/bin/env python3
"""Writes a ProgramDesc, serialized by an installed PaddlePaddle, holding one
op of each given type with every attribute Paddle declares for it set to
its default (OpProto attrs through Paddle's own checker, then the "extra"
attrs), as Paddle's save would store them. Ops are not wired to variables:
the file tests attribute acceptance on load, not running.

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
TYPE_NAMES = {v: k for k, v in framework_pb2.AttrType.items()}


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
    for name in ops:
        if name not in protos:
            continue
        types = {a.name: TYPE_NAMES.get(a.type) for a in protos[name].attrs}
        d = block.append_op()
        d.set_type(name)
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
                    d._set_attr(m.group(1), PLACEHOLDER[t])
        for n, v in core.get_op_extra_attrs(name).items():
            if isinstance(v, list) and not v:
                continue   # an empty list has no type to store
            d._set_attr(n, v)
        written.append(name)
    with open(out, "wb") as f:
        f.write(prog.desc.serialize_to_string())
    print("%d ops" % len(written))


if __name__ == "__main__":
    main()
