#!/usr/bin/env python3
"""qmp-throttle.py - set the write throttle of QEMU drives over QMP.

usage: qmp-throttle.py SOCKET IOPS DRIVE...

Connects to the QMP unix socket SOCKET (boot.sh -Q), and for each DRIVE
(the -drive id boot.sh gives: d0, d1, ... in image order) sets
iops_wr=IOPS and every other limit to 0 (none) with block_set_io_throttle:
the same throttle as "-drive ...,throttling.iops-write=IOPS" (both leave
the burst at QEMU's default).  Then reads it back with query-block and
exits 0 only if every DRIVE has iops_wr == IOPS.  crashtests/vm-crash.sh
uses it to throttle the disks under test only from the workload's start:
the boot, the check of the previous kill and the warm-up run unthrottled.
"""
import json
import socket
import sys


def main():
    if len(sys.argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    path, iops, drives = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    f = s.makefile("rw")

    def reply():
        # skip asynchronous events; return the command's answer
        while True:
            line = f.readline()
            if not line:
                raise RuntimeError("QMP connection closed")
            msg = json.loads(line)
            if "return" in msg or "error" in msg:
                return msg

    def cmd(name, **args):
        f.write(json.dumps({"execute": name, "arguments": args}) + "\n")
        f.flush()
        msg = reply()
        if "error" in msg:
            raise RuntimeError("%s: %s" % (name, msg["error"]))
        return msg["return"]

    json.loads(f.readline())  # greeting
    cmd("qmp_capabilities")
    limits = dict(bps=0, bps_rd=0, bps_wr=0, iops=0, iops_rd=0, iops_wr=iops)
    for d in drives:
        cmd("block_set_io_throttle", device=d, **limits)
    got = {b["device"]: b.get("inserted", {}).get("iops_wr") for b in cmd("query-block")}
    bad = [d for d in drives if got.get(d) != iops]
    if bad:
        sys.stderr.write("qmp-throttle.py: not set on %s: %s\n" % (bad, got))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
