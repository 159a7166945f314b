#!/usr/bin/env python3
"""Merges the attribute lists of scan_fluid18.py and dump_paddle.py into the
table spec/paddle_attrs_spec.lua checks, one row per (source, op, attr):

    source <TAB> op <TAB> attr <TAB> type <TAB> default

type is oar's attr type name (INT, FLOATS, ...; "ANY" where Paddle's extra
attr is an empty list of unknown element type); default is a Lua literal
(true, 1.5, "NCHW", {1, 1}) or "required" (no default) or "?" (a C++ default
the scan cannot evaluate, e.g. a function call).

usage: merge.py fluid18.tsv paddle26.tsv paddle33.tsv > attrs.tsv
"""
import ast
import re
import sys

CPP_TYPES = {
    "bool": "BOOLEAN", "int": "INT", "float": "FLOAT", "std::string": "STRING",
    "std::vector<int>": "INTS", "int64_t": "LONG", "std::vector<int64_t>": "LONGS",
    "std::vector<float>": "FLOATS", "std::vector<std::string>": "STRINGS",
    "framework::BlockDesc*": "BLOCK", "std::vector<framework::BlockDesc*>": "BLOCKS",
    "std::vector<bool>": "BOOLEANS", "AttrType": "FLOAT",  # clip's template parameter
}


def lua(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua(x) for x in v) + "}"
    raise ValueError(v)


def cpp_default(text):
    t = text.strip()
    if t == "":
        return "required"
    if t in ("true", "false"):
        return t
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', t)
    if m:
        return lua(m.group(1))
    m = re.fullmatch(r"(?:static_cast<\w+>\()?(-?[\d.]+(?:e-?\d+)?)f?\)?", t)
    if m:
        return m.group(1)
    if t.startswith("{") and t.endswith("}"):
        items = [x.strip() for x in t[1:-1].split(",") if x.strip()]
        vals = [cpp_default(x) for x in items]
        if all(v not in ("?", "required") for v in vals):
            return "{" + ", ".join(vals) + "}"
    if re.fullmatch(r"std::vector<[\w:]+>\(\)|std::vector<[\w:]+>\{\}|\{\}|std::string\(\)|\"\"", t):
        return "{}" if "vector" in t or t == "{}" else '""'
    return "?"


def main():
    rows = []
    f18, p26, p33 = sys.argv[1:4]
    for line in open(f18):
        op, attr, typ, d = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
        if not attr:
            continue
        rows.append(("fluid1.8", op, attr, CPP_TYPES.get(typ, typ), cpp_default(d)))
    for src, path in (("paddle2.6", p26), ("paddle3.3", p33)):
        for line in open(path):
            parts = line.rstrip("\n").split("\t")
            op, attr, typ, d = parts[:4]
            if not attr:
                continue
            if d == "(required)":
                val = "required"
            else:
                val = lua(ast.literal_eval(d))
            if typ == "LIST":
                typ = "ANY"
            rows.append((src, op, attr, typ, val))
    for r in rows:
        print("\t".join(r))


if __name__ == "__main__":
    main()
