#!/usr/bin/env python3
"""test_fr_report.py SOURCE_DIR - tools/hccl_fr_report.py on hand-made dumps (no job).

A rank whose last completed collective was pushed out of its flight recorder by later
point-to-point calls (HCCL_FLIGHT_RECORDER_SIZE entries) still reached it: its dump's
last_completed_seq says so. The report must not call it "completed no operation", nor
name it as a rank that has not reached that collective.

Ranks that made different calls as the same op all fail there: the report names the
calls and who made each.

A rank with an operation still queued on its stream is not healthy.
"""
import json
import os
import subprocess
import sys
import tempfile


def op(seq, call, opname, state, t, error=""):
    return {"seq": seq, "call": call, "op": opname, "count": 1, "algo": "p2p" if not seq else "ring",
            "state": state, "enqueue_us": t, "start_us": t + 1, "end_us": t + 2, "error": error}


def dump(rank, last, ops):
    return {"version": 1, "comm": "c", "rank": rank, "nranks": 2, "host": "h", "pid": 100 + rank,
            "reason": "test", "dumped_us": 1000, "last_completed_seq": last, "ops": ops}


def main():
    tool = os.path.join(sys.argv[1], "tools", "hccl_fr_report.py")
    fails = []
    with tempfile.TemporaryDirectory() as d:
        ar = "AllReduce(count=1, fp32, sum)"
        dumps = [dump(0, 1, [op(1, ar, "AllReduce", "done", 10),
                             op(0, "point-to-point transfer", "Recv", "failed", 20, "timed out")]),
                 # rank 1's op #1 is out of its ring: only its later Sends are left
                 dump(1, 1, [op(0, "point-to-point transfer", "Send", "done", 30),
                             op(0, "point-to-point transfer", "Send", "done", 40)])]
        for dm in dumps:
            with open(os.path.join(d, "r%d.json" % dm["rank"]), "w") as fh:
                json.dump(dm, fh)
        p = subprocess.run([sys.executable, tool, "--json", d], stdout=subprocess.PIPE, text=True)
        c = json.loads(p.stdout)["communicators"]["c"]
        if c["not_reached"] != []:
            fails.append("rank 1 completed op #1 but is listed as not having reached it: %s" % c["not_reached"])
        if c["ranks"]["1"]["last_completed"] is None or "#1" not in c["ranks"]["1"]["last_completed"]:
            fails.append("rank 1's last completed op is %r, not op #1" % c["ranks"]["1"]["last_completed"])
        p = subprocess.run([sys.executable, tool, d], stdout=subprocess.PIPE, text=True)
        if "completed no operation" in p.stdout or "have not reached" in p.stdout:
            fails.append("text report:\n" + p.stdout)
    # Ranks that made different calls as the same op (rank 1 skipped an AllReduce and
    # made the next op, a Broadcast): every rank failed there, the report names the calls.
    with tempfile.TemporaryDirectory() as d:
        ar, bc = "AllReduce(count=1, fp32, sum)", "Broadcast(count=1, fp32, root=0)"
        dumps = [dump(0, 1, [op(1, bc, "Broadcast", "done", 10), op(2, ar, "AllReduce", "failed", 20, "mismatch")]),
                 dump(1, 1, [op(1, bc, "Broadcast", "done", 10), op(2, bc, "Broadcast", "failed", 20, "mismatch")])]
        for dm in dumps:
            with open(os.path.join(d, "r%d.json" % dm["rank"]), "w") as fh:
                json.dump(dm, fh)
        p = subprocess.run([sys.executable, tool, "--json", d], stdout=subprocess.PIPE, text=True)
        c = json.loads(p.stdout)["communicators"]["c"]
        if c.get("calls_at_highest") != {ar: [0], bc: [1]}:
            fails.append("calls_at_highest: %s" % c.get("calls_at_highest"))
        p = subprocess.run([sys.executable, tool, d], stdout=subprocess.PIPE, text=True)
        if "different calls as op #2: rank 0 %s; rank 1 %s" % (ar, bc) not in p.stdout:
            fails.append("mismatch text report:\n" + p.stdout)
    # A rank with an operation still queued on its stream has not completed every
    # recorded operation: the report must not say it has.
    with tempfile.TemporaryDirectory() as d:
        ar = "AllReduce(count=1, fp32, sum)"
        queued = op(0, ar, "AllReduce", "queued", 20)
        queued["start_us"] = queued["end_us"] = 0
        for r in range(2):
            with open(os.path.join(d, "r%d.json" % r), "w") as fh:
                json.dump(dump(r, 1, [op(1, ar, "AllReduce", "done", 10)] + ([queued] if r == 1 else [])), fh)
        p = subprocess.run([sys.executable, tool, "--json", d], stdout=subprocess.PIPE, text=True)
        c = json.loads(p.stdout)["communicators"]["c"]
        if c["healthy"]:
            fails.append("a rank with a queued operation: the report says healthy")
        p = subprocess.run([sys.executable, tool, d], stdout=subprocess.PIPE, text=True)
        if "every rank completed every recorded operation" in p.stdout or "1 queued behind it" not in p.stdout:
            fails.append("queued text report:\n" + p.stdout)
    for f in fails:
        print("FAIL: " + f)
    print("test_fr_report: %s" % ("FAIL" if fails else "PASS"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
