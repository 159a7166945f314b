#!/usr/bin/env python3
"""Lists the attributes an installed PaddlePaddle (2.x/3.x) declares per op.

usage: python dump_paddle.py OP [OP ...] > paddle<version>.tsv

For each op: the attributes of its OpProto with the defaults its checker
fills in (an OpDesc of that type after check_attrs()), then its "extra"
attributes (core.get_op_extra_attrs: use_mkldnn, Scale_*, ... which Paddle
2.x keeps outside the proto but still accepts and saves). Output lines:
op <TAB> attr <TAB> type (Paddle's AttrType name) <TAB> default (Python repr).
"""
import re
import sys

from paddle.base import core
from paddle.base.proto import framework_pb2

TYPE_NAMES = {v: k for k, v in framework_pb2.AttrType.items()}


def extra_type(v):
    if isinstance(v, bool):
        return "BOOLEAN"
    if isinstance(v, int):
        return "INT"
    if isinstance(v, float):
        return "FLOAT"
    if isinstance(v, str):
        return "STRING"
    if isinstance(v, list):
        if all(isinstance(x, bool) for x in v) and v:
            return "BOOLEANS"
        if all(isinstance(x, int) for x in v) and v:
            return "INTS"
        if all(isinstance(x, str) for x in v) and v:
            return "STRINGS"
        return "FLOATS" if v else "LIST"
    return type(v).__name__


DUMMY = {"INT": 1, "FLOAT": 1.0, "STRING": "x", "INTS": [1], "FLOATS": [1.0],
         "STRINGS": ["x"], "BOOLEAN": False, "LONG": 1, "LONGS": [1]}


def defaults_of(name, proto):
    """the defaults check_attrs fills in; required attrs (no default) get a
    placeholder first and are left out of the result"""
    types = {a.name: TYPE_NAMES.get(a.type) for a in proto.attrs}
    required = set()
    for _ in range(len(types) + 1):
        d = core.OpDesc()
        d.set_type(name)
        for r in required:
            d._set_attr(r, DUMMY[types[r]])
        try:
            d.check_attrs()
        except Exception as e:
            m = re.search(r"Attribute \((\w+)\) is not set", str(e))
            if not m or m.group(1) in required or types.get(m.group(1)) not in DUMMY:
                return {}
            required.add(m.group(1))
            continue
        return {n: d.attr(n) for n in d.attr_names() if n not in required}
    return {}


def main():
    protos = {}
    for p in core.get_all_op_protos():
        op = framework_pb2.OpProto.FromString(p)
        protos[op.type] = op
    for name in sys.argv[1:]:
        if name not in protos:
            print("%s\t\t\t(not registered)" % name)
            continue
        defaults = defaults_of(name, protos[name])
        for a in protos[name].attrs:
            if a.extra and a.name in ("op_role", "op_role_var", "op_namescope", "op_callstack",
                                      "op_device", "with_quant_attr"):
                continue
            d = repr(defaults[a.name]) if a.name in defaults else "(required)"
            print("%s\t%s\t%s\t%s" % (name, a.name, TYPE_NAMES.get(a.type, a.type), d))
        for n, v in sorted(core.get_op_extra_attrs(name).items()):
            print("%s\t%s\t%s\t%r\textra" % (name, n, extra_type(v), v))


if __name__ == "__main__":
    main()
