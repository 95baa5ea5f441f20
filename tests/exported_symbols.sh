#!/bin/sh
# exported_symbols.sh LIBRARY HEADER - the shared library exports exactly
# the functions HEADER declares with UT_API (no internal symbol leaks, no
# public one is missing), and its soname carries UT_ABI_VERSION.
set -eu
lib=$1
header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Function names from "UT_API <type> [*]name(" declarations, which may
# wrap after the type.
grep -v '^#' "$header" | tr '\n' ' ' | grep -o 'UT_API [^;(]*(' |
	sed 's/($//; s/.*[ *]//' | sort -u >"$tmp/declared"
# Defined dynamic text symbols (T); data or weak symbols would show too.
nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u >"$tmp/exported"

if [ ! -s "$tmp/declared" ]; then
	echo "no UT_API declarations found in $header" >&2
	exit 1
fi
if ! cmp -s "$tmp/declared" "$tmp/exported"; then
	echo "exported symbols differ from $header (< declared, > exported):" >&2
	diff "$tmp/declared" "$tmp/exported" >&2 || true
	exit 1
fi
abi=$(sed -n 's/^#define UT_ABI_VERSION \([0-9][0-9]*\)$/\1/p' "$header")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" != "libuntorn.so.$abi" ]; then
	echo "soname is '$soname', expected libuntorn.so.$abi" >&2
	exit 1
fi
echo "$(wc -l <"$tmp/declared") functions exported, soname $soname:"
cat "$tmp/exported"
