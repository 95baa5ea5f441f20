#!/bin/sh
# readme_example.sh README INCLUDE_DIR LIBUNTORN_A - the first ```c block of
# the README compiles with -Wall -Wextra -Werror against the public header
# and runs, printing what the README says it prints.
set -eu
readme=$1
inc=$2
lib=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^```c$/ && !done { on = 1; next }
     /^```$/ && on { on = 0; done = 1 }
     on' "$readme" >"$tmp/fruit.c"
[ -s "$tmp/fruit.c" ] || { echo "no \`\`\`c block in $readme" >&2; exit 1; }
cc -std=c11 -Wall -Wextra -Werror -I"$inc" -o "$tmp/fruit" "$tmp/fruit.c" \
	"$lib" -luring -lpthread
(cd "$tmp" && ./fruit) >"$tmp/out"
cat "$tmp/out"
grep -qx "apple is red" "$tmp/out"
grep -qx "apple = red" "$tmp/out"
grep -qx "yellow is banana" "$tmp/out"
sed -n 3p "$tmp/out" | grep -qx "banana = yellow"
grep -q "^protection: \(atomic\|doublewrite\) (" "$tmp/out"
