#!/usr/bin/env python3
# bench/log-images.py DB-wal - what share of an untorn log's record bytes
# are full-page images (fullpage mode's IMAGE records, wal/wal.h), and how
# much two compressions would shrink them: zero-run elision (runs of 16 or
# more zero bytes replaced by a 4-byte offset/length pair: a page's free
# space) and zlib level 1 (LZ77 + Huffman).  Reads the records from the
# first record slot on while they parse (type, length); the CRCs are not
# checked, so run it on the log of a killed run (no close: bench_durable
# stopped with SIGKILL), whose records since the last checkpoint are there.
# Measures whether image compression would pay; untorn does not compress.
import sys, struct, zlib
data = open(sys.argv[1], 'rb').read()
pos = 8192
by = {1: 0, 2: 0, 3: 0}; n = {1: 0, 2: 0, 3: 0}
img_raw = img_zrun = img_zlib = 0
zero_bytes = 0
while pos + 40 <= len(data):
    crc, typ, z5, z6, length, count = struct.unpack_from('<IBBHII', data, pos)
    if typ not in (1, 2, 3) or length < 40 or pos + length > len(data):
        break
    padded = (length + 7) & ~7
    by[typ] += padded; n[typ] += 1
    if typ == 3:
        page = data[pos + 48: pos + 48 + 16384]
        img_raw += len(page)
        # zero-run elision: runs of >= 16 zero bytes cost a 4-byte (offset,len) pair
        out = 0; i = 0; L = len(page)
        while i < L:
            if page[i] == 0:
                j = i
                while j < L and page[j] == 0: j += 1
                if j - i >= 16:
                    out += 4; zero_bytes += j - i
                else:
                    out += j - i
                i = j
            else:
                out += 1; i += 1
        img_zrun += out
        img_zlib += len(zlib.compress(page, 1))
    pos += padded
tot = sum(by.values())
print(f"records: {n[1]} DELTA {by[1]} B, {n[2]} COMMIT {by[2]} B, {n[3]} IMAGE {by[3]} B; total {tot} B")
if tot:
    print(f"images: {100*by[3]/tot:.1f}% of record bytes")
if n[3]:
    print(f"per image: raw {img_raw/n[3]:.0f} B, zero-run elided {img_zrun/n[3]:.0f} B ({100*img_zrun/img_raw:.1f}%), zlib-1 {img_zlib/n[3]:.0f} B ({100*img_zlib/img_raw:.1f}%)")
    newtot_z = tot - img_raw + img_zrun
    newtot_l = tot - img_raw + img_zlib
    print(f"log bytes if images were zero-run elided: {100*newtot_z/tot:.1f}% of today; zlib-1: {100*newtot_l/tot:.1f}%")
