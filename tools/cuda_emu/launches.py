"""tools/cuda_emu/launches.py IN.cu OUT.cu — rewrites every CUDA launch
`kernel<T><<<grid, block>>>(args)` into `emu_launch(grid, block, ([&] {
kernel<T>(args); }))` (prelude.h), wherever it stands: a statement of its
own or an argument of a macro such as OAR_CU_FLOAT_SWITCH (no `;` after
it). The kernel's name, its template arguments and its argument list are
found by matching brackets, so arguments may hold calls and casts."""
import sys


def close_of(s, i, o, c):
    """index just past the bracket that closes s[i] == o"""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == o:
            depth += 1
        elif s[j] == c:
            depth -= 1
            if depth == 0:
                return j + 1
    raise SystemExit("launches.py: unbalanced %s at offset %d" % (o, i))


def name_start(s, i):
    """start of the kernel name (with template arguments) ending before s[i]"""
    j = i
    if s[j - 1] == '>':   # template arguments: back to the matching '<'
        depth = 0
        while True:
            j -= 1
            if s[j] == '>':
                depth += 1
            elif s[j] == '<':
                depth -= 1
                if depth == 0:
                    break
    while j > 0 and (s[j - 1].isalnum() or s[j - 1] in '_:'):
        j -= 1
    if j == i:
        raise SystemExit("launches.py: no kernel name before <<< at offset %d" % i)
    return j


def rewrite(s):
    out, pos = [], 0
    while True:
        a = s.find('<<<', pos)
        if a < 0:
            break
        b = s.index('>>>', a)
        n0 = name_start(s, a)
        p = b + 3
        while s[p].isspace():
            p += 1
        if s[p] != '(':
            raise SystemExit("launches.py: no argument list after >>> at offset %d" % b)
        e = close_of(s, p, '(', ')')
        out.append(s[pos:n0])
        out.append('emu_launch(%s, ([&] { %s%s; }))' % (s[a + 3:b], s[n0:a], s[p:e]))
        pos = e
    out.append(s[pos:])
    return ''.join(out)


src = open(sys.argv[1]).read()
open(sys.argv[2], 'w').write(rewrite(src))
