#!/bin/sh
# Writes the FFI declarations LuaJIT's ffi.cdef reads, as a Lua module that
# returns them as one string:
#
#   tools/gen_cdef.sh src/oar.h          -> lua/oar/cdef.lua
#     the part of oar.h between OAR_FFI_BEGIN and OAR_FFI_END (written free
#     of preprocessor lines), without the OAR_API marks;
#   tools/gen_cdef.sh --op src/oar_op.h [DEPFILE TARGET] -> lua/oar/cdef_op.lua
#     the op-authoring header, with the definition layer's headers that mark
#     functions OAR_API (src/ops/*.h), run through the C preprocessor ($CC -E,
#     with oar.h's part left out: cdef.lua declares it): every type declared
#     in src/, and every function or variable marked OAR_API (the ones liboar
#     exports); unmarked prototypes and inline function bodies are dropped.
#     With DEPFILE, the compiler also writes make's dependencies of TARGET
#     (every header the output came from).
set -e
if [ "$1" != "--op" ]; then
  echo '-- generated from src/oar.h by tools/gen_cdef.sh; do not edit'
  echo 'return [==['
  sed -n '/^\/\* OAR_FFI_BEGIN \*\/$/,/^\/\* OAR_FFI_END \*\/$/p' "$1" | sed '1d;$d' | sed 's/\bOAR_API //'
  echo ']==]'
  exit 0
fi

header=$2
dep=
[ -n "$3" ] && dep="-MD -MP -MF $3 -MT $4"
# OAR_H predefined: oar.h's body is skipped; OAR_API becomes a token the
# filter below can see
ops=$(grep -l 'OAR_API' src/ops/*.h 2>/dev/null || true)
out=$(for h in "$header" $ops; do printf '#include "%s"\n' "$h"; done |
      ${CC:-cc} -E -std=c11 -D_GNU_SOURCE -DOAR_H -D'OAR_API=__oar_api__' -I. -Isrc -Ibuild $dep -x c -)
echo "-- generated from $header by tools/gen_cdef.sh; do not edit"
echo 'return [==['
printf '%s\n' "$out" | awk '
  # line markers name the file the following lines come from; only oar'\''s
  # own headers (under src/) are kept, never the C library'\''s
  /^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); keep = (f ~ /^src\//); next }
  /^#/ { next }
  keep { text = text " " $0 }
  function emit(d,    head) {
    gsub(/[ \t]+/, " ", d); sub(/^ /, "", d); sub(/ $/, "", d)
    if (d == "" || d == ";") return
    # types: typedefs, struct/union/enum definitions
    if (d ~ /^typedef / || (d ~ /^(struct|union|enum) / && d ~ /\{/) || d ~ /^enum ?\{/) { print d; return }
    # functions and variables: only the exported ones
    if (d ~ /__oar_api__/) { gsub(/__oar_api__ /, "", d); print d }
  }
  END {
    depth = 0; cur = ""; n = length(text)
    for (i = 1; i <= n; i++) {
      c = substr(text, i, 1); cur = cur c
      if (c == "{") depth++
      else if (c == "}") {
        depth--
        # the end of a function body (static inline): dropped whole
        if (depth == 0) { head = cur; sub(/\{.*/, "", head); if (head ~ /\(/) cur = "" }
      } else if (c == ";" && depth == 0) { emit(cur); cur = "" }
    }
  }'
echo ']==]'
