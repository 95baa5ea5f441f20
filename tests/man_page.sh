#!/bin/sh
# man_page.sh TOOL MANPAGE - untorn.1 documents every command and global
# option the tool's --help lists, and renders without groff warnings.
set -eu
tool=$1
page=$2
help=$("$tool" --help)
# the tags of the page's .TP entries, as plain words ("put", "--cache")
tags=$(awk 'prev == ".TP" { print } { prev = $0 }' "$page" |
	sed 's/\\f[BIRP]//g; s/\\-/-/g; s/"//g; s/^\.B[IR]* *//')
has_tag() {
	printf '%s\n' "$tags" | grep -q -- "^$1\( \|,\|$\)"
}
missing=0
# command names: the indented lines between "Commands:" and the next blank
for cmd in $(printf '%s\n' "$help" | sed -n '/^Commands:/,/^$/p' |
		sed -n 's/^  \([a-z][a-z]*\) .*/\1/p'); do
	if ! has_tag "$cmd"; then
		echo "untorn.1: command '$cmd' is not documented" >&2
		missing=1
	fi
done
for opt in $(printf '%s\n' "$help" | sed -n 's/^  \(--[a-z][a-z]*\).*/\1/p'); do
	if ! has_tag "$opt"; then
		echo "untorn.1: option '$opt' is not documented" >&2
		missing=1
	fi
done
if command -v groff >/dev/null; then
	warnings=$(groff -man -ww -z "$page" 2>&1)
	if [ -n "$warnings" ]; then
		echo "untorn.1: groff warnings:" >&2
		echo "$warnings" >&2
		missing=1
	fi
fi
[ $missing -eq 0 ] && echo "untorn.1 documents every command and option"
