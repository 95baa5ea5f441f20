#!/bin/sh
# dump_roundtrip.sh UNTORN DIR [RECORDS] - untorn dump, load and compact on
# a database of RECORDS records (default 2^20: about 1.1 GB of data) with
# random 16-byte keys and 1000..1048-byte random values, timed, each copy
# compared byte for byte with the source dump (tools/README.md has the
# result).  Needs about 7 GB free in DIR; removes what it made on success.
set -eu
untorn=$(realpath "$1")
dir=$2
records=${3:-1048576}
mkdir -p "$dir"
cd "$dir"
rm -f big.db* big2.db* big3.db* src.dump out.dump
python3 - "$records" <<'PY'
import os, sys
n = int(sys.argv[1])
with open("src.dump", "w") as f:
    f.write("untorn-dump 1\n")
    for i in range(n):  # keys in order: an 8-byte counter, 8 random bytes
        k = i.to_bytes(8, "big") + os.urandom(8)
        v = os.urandom(1000 + i % 49)
        f.write(k.hex() + " " + v.hex() + "\n")
    f.write("end %d\n" % n)
PY
timed() { /usr/bin/time -f "  %e s, %M KiB max RSS" "$@"; }
ls -l src.dump
echo "load --nosync src.dump:"; timed "$untorn" --nosync load big.db src.dump
ls -l big.db
echo "dump:"; timed "$untorn" dump big.db out.dump
cmp src.dump out.dump && echo "  dump == source dump"
echo "load (sync) out.dump:"; timed "$untorn" load big2.db out.dump
"$untorn" dump big2.db | cmp - src.dump && echo "  reloaded dump == source dump"
echo "compact:"; timed "$untorn" compact big.db big3.db
"$untorn" dump big3.db | cmp - src.dump && echo "  compacted dump == source dump"
"$untorn" check big3.db
rm -f big.db* big2.db* big3.db* src.dump out.dump
