#!/usr/bin/env python3
"""hccl_fr_report.py - who is stuck where, from the flight-recorder dumps of all ranks.

    hccl_fr_report.py [--json] [--chrome-trace OUT.json] PATH [PATH ...]

PATH is a dump file or a directory (every *.json in it that is a flight-recorder dump
is read; HCCL_FLIGHT_RECORDER_DIR, default /tmp). Dumps are written by a failing
operation (the WARN line names the file) and by HcclCommDumpFlightRecorder; their
format is described in src/core/flight.h and docs/debugging.md.

For each communicator the report gives, per rank, the last operation it completed and
the operation it is in or failed in; the highest operation any rank reached; and the
ranks that have not reached it (the usual culprits: a rank that skipped a collective,
is frozen, or died), including ranks for which no dump was found.

--json prints the same as one JSON object (for scripts and tests).
--chrome-trace writes a Chrome trace (one process per communicator, one track per
rank, one span per operation; queued time as a separate span) that chrome://tracing
and https://ui.perfetto.dev open.

Exit status: 0 when a report was made, 2 when no dump could be read, 1 when the
--chrome-trace file could not be written (the report is printed first).
"""
import argparse
import json
import math
import os
import sys

STATES_ACTIVE = ("running", "done", "failed")
MAX_RANKS = 65536  # HCCL_COMM_MAX_RANKS (src/util/util.h)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    """A finite number (the library writes integers)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _bad_field(obj, key, want_int=False):
    """A field that is present but not a usable number (null, NaN, a string...): the
    report compares and formats them, so a dump with one is reported, not trusted.
    An absent field reads as 0."""
    if key not in obj:
        return False
    v = obj[key]
    return not (_is_int(v) if want_int else _is_num(v))


def malformed(d):
    """Why a parsed dump cannot be trusted (a field of the wrong type or out of range),
    or None."""
    if not isinstance(d["comm"], str):
        return "comm is not a string"
    if not _is_int(d["rank"]) or d["rank"] < 0:
        return "rank is not a rank number"
    n = d.get("nranks", d["rank"] + 1)
    if not _is_int(n) or not 0 <= d["rank"] < n:
        return "nranks is not a number above rank"
    if n > MAX_RANKS:  # the report lists every rank without a dump
        return "nranks is more than a communicator may have (%d)" % MAX_RANKS
    for k in ("dumped_us", "last_completed_seq"):
        if _bad_field(d, k, want_int=k.endswith("seq")):
            return "%s is not a number" % k
    if not isinstance(d["ops"], list):
        return "ops is not a list"
    for i, op in enumerate(d["ops"]):
        if not isinstance(op, dict):
            return "ops[%d] is not an object" % i
        for k in ("seq", "enqueue_us", "start_us", "end_us"):
            if _bad_field(op, k, want_int=k == "seq"):
                return "ops[%d].%s is not a number" % (i, k)
        for k in ("state", "call", "op", "error"):
            if op.get(k) is not None and not isinstance(op.get(k), str):
                return "ops[%d].%s is not a string" % (i, k)
    return None


def load_dumps(paths):
    """Returns (dumps, problems): the parsed dump objects and text about unreadable files."""
    files, problems = [], []
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                if name.endswith(".json"):
                    files.append(os.path.join(p, name))
        elif os.path.exists(p):
            files.append(p)
        else:
            problems.append("%s: no such file or directory" % p)
    dumps = []
    for f in files:
        try:
            with open(f, "r", encoding="utf-8", errors="replace") as fh:
                d = json.load(fh)
        except (OSError, ValueError) as e:
            problems.append("%s: not a readable JSON file (%s)" % (f, e))
            continue
        if not isinstance(d, dict) or "ops" not in d or "rank" not in d or "comm" not in d:
            continue  # some other JSON file in the directory
        why = malformed(d)
        if why:
            problems.append("%s: not a usable flight-recorder dump (%s)" % (f, why))
            continue
        d["_file"] = f
        dumps.append(d)
    return dumps, problems


def op_label(op):
    seq = op.get("seq", 0)
    call = op.get("call") or op.get("op") or "?"
    return ("op #%d %s" % (seq, call)) if seq else call


def rank_summary(d):
    """What one rank's dump says."""
    ops = d.get("ops", [])
    last_done_seq = d.get("last_completed_seq", 0)
    last_done = None
    for op in ops:
        if op.get("state") == "done" and op.get("seq", 0) == last_done_seq and last_done_seq:
            last_done = op
    # The operation it is in, or failed in: the first not-done op after the last done
    # one (refusals after a failure carry seq 0 and are not where it got stuck).
    idx_last_done = max([i for i, op in enumerate(ops) if op.get("state") == "done"], default=-1)
    current = None
    for op in ops[idx_last_done + 1:]:
        if op.get("state") in ("running", "failed") and (op.get("seq", 0) or current is None):
            current = op
            break
    queued = [op for op in ops[idx_last_done + 1:] if op.get("state") == "queued"]
    # A rank that went on with point-to-point calls may have pushed its last completed
    # collective out of the recorder (HCCL_FLIGHT_RECORDER_SIZE): last_completed_seq
    # still says it got that far.
    reached = max([op.get("seq", 0) for op in ops if op.get("state") in STATES_ACTIVE] + [last_done_seq], default=0)
    if last_done is not None:
        last_label = op_label(last_done)
    elif last_done_seq:
        last_label = "op #%d (older than the operations recorded)" % last_done_seq
    else:
        last_label = None
    return {
        "rank": d.get("rank"),
        "pid": d.get("pid"),
        "host": d.get("host"),
        "file": d.get("_file"),
        "reason": d.get("reason", ""),
        "dumped_us": d.get("dumped_us", 0),
        "last_completed_seq": last_done_seq,
        "last_completed": last_label,
        "current": None if current is None else {
            "seq": current.get("seq", 0),
            "call": current.get("call"),
            "state": current.get("state"),
            "error": current.get("error", ""),
            "elapsed_s": round(((current.get("end_us") or d.get("dumped_us", 0)) - (current.get("start_us") or 0)) / 1e6, 3)
            if current.get("start_us") else None,
        },
        "queued": len(queued),
        "highest_seq_reached": reached,
    }


def analyse(dumps):
    comms = {}
    for d in dumps:
        comms.setdefault(d["comm"], []).append(d)
    out = {}
    for comm, ds in sorted(comms.items()):
        # One dump per rank: the latest (a failure dump and a later requested one, say).
        by_rank = {}
        for d in ds:
            r = d.get("rank")
            if r not in by_rank or d.get("dumped_us", 0) >= by_rank[r].get("dumped_us", 0):
                by_rank[r] = d
        nranks = max([d.get("nranks", 0) for d in ds] + [max(by_rank) + 1])
        ranks = {r: rank_summary(d) for r, d in sorted(by_rank.items())}
        highest = max([s["highest_seq_reached"] for s in ranks.values()], default=0)
        stuck_call = None
        failed, running = [], []
        for r, s in ranks.items():
            cur = s["current"]
            if cur and cur["seq"] == highest and highest:
                stuck_call = stuck_call or cur["call"]
                (failed if cur["state"] == "failed" else running).append(r)
        if stuck_call is None and highest:
            for d in by_rank.values():
                for op in d.get("ops", []):
                    if op.get("seq") == highest:
                        stuck_call = op.get("call")
        # The call each rank made as op #highest: ranks that disagree (one skipped a
        # collective and made the next one, or passed other arguments) all fail there,
        # and only the calls tell the odd one out.
        calls = {}
        if highest:
            for r, d in sorted(by_rank.items()):
                for op in d.get("ops", []):
                    if op.get("seq") == highest and op.get("state") in STATES_ACTIVE and op.get("call"):
                        calls.setdefault(op["call"], []).append(r)
                        break
        behind = sorted(r for r, s in ranks.items() if s["highest_seq_reached"] < highest)
        missing = [r for r in range(nranks) if r not in ranks]
        # Operations still queued on a stream have not completed (a stream stuck
        # behind an event or a host task holds them).
        all_done = all(s["current"] is None and not s["queued"] for s in ranks.values()) and not missing and not behind
        out[comm] = {
            "nranks": nranks,
            "dumps": len(ranks),
            "ranks": {str(r): s for r, s in ranks.items()},
            "highest_seq": highest,
            "highest_call": stuck_call,
            "calls_at_highest": calls if len(calls) > 1 else {},
            "failed_at_highest": failed,
            "running_at_highest": running,
            "not_reached": behind,
            "no_dump": missing,
            "healthy": all_done,
        }
    return out


def fmt_ranks(rs):
    return ", ".join(str(r) for r in rs)


def print_report(report, problems, fh=sys.stdout):
    for p in problems:
        print("warning: " + p, file=sys.stderr)
    for comm, c in report.items():
        print("communicator %s: %d ranks, dumps from %d" % (comm, c["nranks"], c["dumps"]), file=fh)
        for r, s in c["ranks"].items():
            last = ("last completed %s" % s["last_completed"]) if s["last_completed"] else "completed no operation"
            cur = s["current"]
            if cur is None:
                now = "idle (no operation in progress)"
            else:
                label = ("op #%d %s" % (cur["seq"], cur["call"])) if cur["seq"] else cur["call"]
                el = (" after %.2f s" % cur["elapsed_s"]) if cur["elapsed_s"] is not None else ""
                if cur["state"] == "failed":
                    now = "FAILED in %s%s: %s" % (label, el, cur["error"] or "(no error text)")
                else:
                    now = "IN %s, %s%s" % (label, cur["state"], (" for %.2f s" % cur["elapsed_s"]) if el else "")
            extra = (", %d queued behind it" % s["queued"]) if s["queued"] else ""
            print("  rank %s (pid %s on %s): %s; %s%s" % (r, s["pid"], s["host"], last, now, extra), file=fh)
        if c["highest_seq"]:
            print("  highest operation reached: op #%d %s" % (c["highest_seq"], c["highest_call"] or "?"), file=fh)
        if c["calls_at_highest"]:
            groups = sorted(c["calls_at_highest"].items(), key=lambda kv: (len(kv[1]), kv[1]))
            print("  the ranks made different calls as op #%d: %s   <== look here (a rank skipped or added a "
                  "collective, or passed other arguments)" % (c["highest_seq"], "; ".join(
                      "%s %s %s" % ("rank" if len(rs) == 1 else "ranks", fmt_ranks(rs), call) for call, rs in groups)),
                  file=fh)
        if c["failed_at_highest"]:
            print("  failed there: ranks %s" % fmt_ranks(c["failed_at_highest"]), file=fh)
        if c["running_at_highest"]:
            print("  still waiting there: ranks %s" % fmt_ranks(c["running_at_highest"]), file=fh)
        if c["not_reached"]:
            print("  ranks that have not reached op #%d: %s   <== look here (skipped a collective, frozen, or slow)"
                  % (c["highest_seq"], fmt_ranks(c["not_reached"])), file=fh)
        if c["no_dump"]:
            print("  ranks without a dump: %s   <== dead, or never failed (ask them with HcclCommDumpFlightRecorder)"
                  % fmt_ranks(c["no_dump"]), file=fh)
        if c["healthy"]:
            print("  every rank completed every recorded operation", file=fh)
        print(file=fh)


def chrome_trace(dumps, path):
    events = []
    t0 = min([op.get("enqueue_us") or op.get("start_us") or 0 for d in dumps for op in d.get("ops", [])
              if (op.get("enqueue_us") or op.get("start_us"))] or [0])
    comms = sorted({d["comm"] for d in dumps})
    for pid, comm in enumerate(comms, start=1):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "comm " + comm}})
        for d in dumps:
            if d["comm"] != comm:
                continue
            tid = int(d.get("rank", 0))
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": "rank %d (pid %s)" % (tid, d.get("pid"))}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
            end_default = d.get("dumped_us", 0)
            for op in d.get("ops", []):
                enq, start, end = op.get("enqueue_us", 0), op.get("start_us", 0), op.get("end_us", 0)
                args = {k: op.get(k) for k in ("seq", "call", "algo", "state", "count", "error")}
                if enq and start and start > enq:
                    events.append({"ph": "X", "name": "queued", "cat": "queue", "pid": pid, "tid": tid,
                                   "ts": enq - t0, "dur": start - enq, "args": args})
                if not start:
                    if enq:
                        events.append({"ph": "i", "s": "t", "name": "queued: " + op_label(op), "pid": pid, "tid": tid,
                                       "ts": enq - t0, "args": args})
                    continue
                stop = end or end_default or start
                ev = {"ph": "X", "name": op_label(op), "cat": op.get("op", "op"), "pid": pid, "tid": tid,
                      "ts": start - t0, "dur": max(stop - start, 1), "args": args}
                if op.get("state") == "failed":
                    ev["cname"] = "terrible"
                elif op.get("state") == "running":
                    ev["cname"] = "bad"
                events.append(ev)
            if d.get("dumped_us"):
                events.append({"ph": "i", "s": "t", "name": "dump: " + (d.get("reason") or "")[:200], "pid": pid,
                               "tid": tid, "ts": d["dumped_us"] - t0})
    with open(path, "w") as fh:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms",
                   "otherData": {"time_origin_us": t0, "source": "hccl flight recorder"}}, fh)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="dump files or directories of dumps")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--chrome-trace", metavar="OUT", help="write a Chrome/Perfetto trace to OUT")
    a = ap.parse_args(argv)
    dumps, problems = load_dumps(a.paths)
    if not dumps:
        for p in problems:
            print("warning: " + p, file=sys.stderr)
        print("no flight-recorder dump found in %s" % " ".join(a.paths), file=sys.stderr)
        return 2
    report = analyse(dumps)
    if a.json:
        for p in problems:
            print("warning: " + p, file=sys.stderr)
        json.dump({"communicators": report, "problems": problems}, sys.stdout, indent=1)
        print()
    else:
        print_report(report, problems)
    if a.chrome_trace:
        try:
            chrome_trace(dumps, a.chrome_trace)
        except OSError as e:
            print("cannot write the Chrome trace %s: %s" % (a.chrome_trace, e.strerror or e), file=sys.stderr)
            return 1
        if not a.json:
            print("Chrome trace written to %s (open in https://ui.perfetto.dev or chrome://tracing)" % a.chrome_trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
