#!/usr/bin/env python3
"""Lists the attributes Fluid 1.8's op makers declare, from Paddle's sources.

usage: scan_fluid18.py PADDLE_SRC OP [OP ...] > fluid18.tsv

PADDLE_SRC is a checkout of Paddle's release/1.8 tree (the operators under
paddle/fluid/operators). Each .cc file is run through the C preprocessor with
the operator headers it includes inlined (so maker macros such as
REGISTER_ACTIVATION_OP_MAKER expand) and every other include dropped; then
each maker class (its Make() body, in-class or out of line, plus the bodies of
its bases) gives AddAttr<T>("name", ...).SetDefault(v) lines, and
REGISTER_OPERATOR(type, ...) ties op types to makers. Output lines:
op <TAB> attr <TAB> C++ type <TAB> default (C++ text, "" when none).
"""
import os
import re
import subprocess
import sys

ROOT = None


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def inline(path, seen):
    """path's text with operator headers inlined and other includes dropped"""
    out = []
    for line in read(path).splitlines():
        m = re.match(r'\s*#\s*include\s*"(paddle/fluid/operators/[^"]+\.h)"', line)
        if m:
            h = os.path.join(ROOT, m.group(1))
            if h not in seen and os.path.exists(h):
                seen.add(h)
                out.append(inline(h, seen))
            continue
        if re.match(r"\s*#\s*(include|pragma)", line):
            continue
        out.append(line)
    return "\n".join(out)


def preprocess(path):
    src = inline(path, {path})
    r = subprocess.run(["cpp", "-P", "-w", "-xc++", "-"], input=src, capture_output=True, text=True)
    return r.stdout


def strip_strings(s):
    """s with string literal contents blanked (keeps offsets)"""
    return re.sub(r'"(\\.|[^"\\])*"', lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', s)


def block_at(text, i):
    """the {...} block starting at text[i] == '{'"""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    return text[i:]


def statement(raw, blank, i):
    """the raw text from i to the ';' that ends the statement"""
    j = blank.find(";", i)
    return raw[i:j if j >= 0 else len(raw)]


def attrs_in(raw):
    blank = strip_strings(raw)
    res = []
    for m in re.finditer(r"AddAttr\s*<\s*([\w:<>, ]+?)\s*>\s*\(", blank):
        st = statement(raw, blank, m.start())
        nm = re.match(r'AddAttr\s*<[^>]*(?:<[^>]*>)?[^>]*>\s*\(\s*"(\w+)"', st)
        if not nm:
            continue
        d = ""
        k = st.find(".SetDefault(")
        if k >= 0:
            depth, j0 = 0, k + len(".SetDefault(")
            for j in range(j0 - 1, len(st)):
                if st[j] == "(":
                    depth += 1
                elif st[j] == ")":
                    depth -= 1
                    if depth == 0:
                        d = st[j0:j].strip()
                        break
        res.append((nm.group(1), m.group(1).replace(" ", ""), re.sub(r"\s+", " ", d)))
    return res


def short(name):
    name = re.sub(r"<.*>", "", name.strip())
    return name.split("::")[-1]


def main():
    global ROOT
    ROOT = sys.argv[1]
    want = set(sys.argv[2:])
    makers = {}   # class -> (bases, attrs)
    regs = {}     # op type -> [candidate class names]
    opdir = os.path.join(ROOT, "paddle/fluid/operators")
    for dp, _, fs in os.walk(opdir):
        for f in sorted(fs):
            if not f.endswith(".cc") or "test" in f:
                continue
            text = preprocess(os.path.join(dp, f))
            blank = strip_strings(text)
            for m in re.finditer(r"\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?:\s*([^{;]+)\{", blank):
                bases = [short(b.replace("public", "")) for b in m.group(2).split(",")]
                body = block_at(text, m.end() - 1)
                prev = makers.get(m.group(1), ([], []))
                makers[m.group(1)] = (bases, prev[1] + attrs_in(body))
            for m in re.finditer(r"\bvoid\s+(\w+)\s*::\s*Make\s*\(\s*\)\s*\{", blank):
                body = block_at(text, m.end() - 1)
                prev = makers.get(m.group(1), ([], []))
                makers[m.group(1)] = (prev[0], prev[1] + attrs_in(body))
            for m in re.finditer(r"\b(REGISTER_OPERATOR|REGISTER_OP_WITHOUT_GRADIENT)\s*\(", blank):
                st = statement(text, blank, m.start())
                args = [a.strip() for a in st[st.find("(") + 1:].rstrip(") \n").split(",")]
                if args:
                    regs.setdefault(args[0], []).extend(short(a) for a in args[1:])

    def all_attrs(cls, depth=0):
        if cls not in makers or depth > 8:
            return []
        bases, own = makers[cls]
        res = []
        for b in bases:
            res += all_attrs(b, depth + 1)
        return res + own

    for op in sorted(want):
        seen = set()
        for cand in regs.get(op, []):
            for name, typ, d in all_attrs(cand):
                if name not in seen:
                    seen.add(name)
                    print("%s\t%s\t%s\t%s" % (op, name, typ, d))
        if op not in regs:
            print("%s\t\t\t(not registered in 1.8)" % op)


if __name__ == "__main__":
    main()
