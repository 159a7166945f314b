#!/usr/bin/env python3
"""Writes the ProgramDesc of `paddle.assign(<float64 array>)` as an installed
PaddlePaddle serializes it (2.6: assign_value with fp64_values, FLOAT64S;
3.3 with FLAGS_enable_pir_api=0: values, SCALARS), for the spec that checks
oar refuses such an attribute by name rather than misreading it.

usage: python assign_value_program.py OUT.pb
"""
import sys

import numpy as np
import paddle

paddle.enable_static()
main = paddle.static.Program()
with paddle.static.program_guard(main, paddle.static.Program()):
    paddle.assign(np.array([1.5, 2.5], dtype="float64"))
with open(sys.argv[1], "wb") as f:
    f.write(main.desc.serialize_to_string())
print([(op.type, sorted(op.all_attrs().keys())) for op in main.global_block().ops])
