#!/bin/sh
# Writes lua/oar/cdef.lua: the part of oar.h between OAR_FFI_BEGIN and OAR_FFI_END.
echo '-- generated from src/oar.h by tools/gen_cdef.sh; do not edit'
echo 'return [==['
sed -n '/^\/\* OAR_FFI_BEGIN \*\/$/,/^\/\* OAR_FFI_END \*\/$/p' "$1" | sed '1d;$d'
echo ']==]'
