#!/usr/bin/env python3
"""fr_check.py HCCL_FAULT REPORT_TOOL - flight-recorder dumps and tools/hccl_fr_report.py.

1. hccl_fault --scenario skip --fr: 4 ranks, rank 1 skips op #2, the others time out
   (HCCL_EXEC_TIMEOUT=3) and dump; rank 1 dumps on request (HcclCommDumpFlightRecorder).
   Every rank's dump exists, is valid JSON in the documented format, and says what
   happened (ranks 0, 2, 3: op #2 failed with a timeout, last completed op #1; rank 1:
   last completed op #1, nothing after it); each failing rank's WARN line names its dump.
   The report tool names op #2 as the op where ranks 0, 2, 3 failed and rank 1 as the
   rank that has not reached it (text and --json), and --chrome-trace writes a valid
   trace with one track per rank and the failed op marked.
2. hccl_fault --scenario frdump: dumps on request from a healthy job; the report says
   every rank completed every operation (op #3 the highest).
3. The tool on a directory without dumps exits 2; an unreadable file is a warning.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL: " + msg, flush=True)
    return cond


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=90, **kw)
    return p.returncode, p.stdout


def load(path):
    with open(path) as fh:
        return json.load(fh)


def validate_dump(path, d):
    for key, typ in (("version", int), ("comm", str), ("rank", int), ("nranks", int), ("host", str), ("pid", int),
                     ("reason", str), ("dumped_us", int), ("last_completed_seq", int), ("ops", list)):
        check(isinstance(d.get(key), typ), "%s: field %s missing or not %s" % (path, key, typ.__name__))
    for op in d.get("ops", []):
        for key in ("seq", "call", "op", "count", "algo", "state", "enqueue_us", "start_us", "end_us", "error"):
            check(key in op, "%s: an op lacks %s: %s" % (path, key, op))
        check(op.get("state") in ("queued", "running", "done", "failed"), "%s: bad state %s" % (path, op.get("state")))
        # Its times are in order, and before the dump's (they are converted at the dump).
        if op.get("state") in ("done", "failed") and op.get("start_us"):
            check(0 < op["enqueue_us"] <= op["start_us"] <= op["end_us"] <= d["dumped_us"],
                  "%s: times out of order (enqueue, start, end, dumped): %s, %s, %s, %s" %
                  (path, op["enqueue_us"], op["start_us"], op["end_us"], d["dumped_us"]))
        # An operation that started names the algorithm chosen (by name, at the dump).
        if op.get("state") in ("running", "done"):
            check(isinstance(op.get("algo"), str) and op["algo"] not in ("", "-"),
                  "%s: a started op names no algorithm: %s" % (path, op))


def main():
    fault, tool = sys.argv[1], sys.argv[2]
    py = sys.executable
    work = tempfile.mkdtemp(prefix="hccl_fr_check_")
    try:
        # ---- 1. a rank skips op #2 ----
        d1 = os.path.join(work, "skip")
        env = dict(os.environ)
        env["HCCL_FLIGHT_RECORDER_DIR"] = d1
        rc, out = run([fault, "--scenario", "skip", "--fr", "--dir", d1], env=env)
        print(out)
        if rc != 0:
            print("note: the skip scenario itself reported failures (see above); checking the dumps anyway")
        dumps = {}
        for r in range(4):
            files = glob.glob(os.path.join(d1, "hccl_fr_*_r%d_p*.json" % r))
            if not check(len(files) == 1, "rank %d: %d flight-recorder dumps in %s, expected 1" % (r, len(files), d1)):
                continue
            try:
                d = load(files[0])
            except ValueError as e:
                check(False, "%s is not valid JSON: %s" % (files[0], e))
                continue
            validate_dump(files[0], d)
            dumps[r] = (files[0], d)
        comms = {d["comm"] for _, d in dumps.values()}
        check(len(comms) == 1, "dumps name %d communicators: %s" % (len(comms), comms))
        for r, (path, d) in dumps.items():
            check(d["rank"] == r and d["nranks"] == 4, "%s: rank %s nranks %s" % (path, d["rank"], d["nranks"]))
            check(d["last_completed_seq"] == 1, "%s: last_completed_seq %s, expected 1" % (path, d["last_completed_seq"]))
            ops = d["ops"]
            if r == 1:
                check("requested" in d["reason"], "%s: reason %r is not a request" % (path, d["reason"]))
                check([o["seq"] for o in ops if o["state"] != "queued"] == [1],
                      "%s: rank 1 should show op #1 only: %s" % (path, ops))
            else:
                op2 = [o for o in ops if o["seq"] == 2]
                if check(len(op2) == 1, "%s: op #2 is not recorded once: %s" % (path, ops)):
                    o = op2[0]
                    check(o["state"] == "failed", "%s: op #2 state %s, expected failed" % (path, o["state"]))
                    check("timed out" in o["error"], "%s: op #2 error %r does not say it timed out" % (path, o["error"]))
                    check(o["call"].startswith("AllReduce(count=1024"), "%s: op #2 call %r" % (path, o["call"]))
                    check(o["start_us"] > 0 and o["end_us"] >= o["start_us"] + 2_500_000,
                          "%s: op #2 start/end %s/%s: not ~3 s apart" % (path, o["start_us"], o["end_us"]))
                check("op #2" in d["reason"], "%s: reason %r does not name op #2" % (path, d["reason"]))
                log = open(os.path.join(d1, "skip_rank%d.log" % r)).read()
                m = re.search(r"\[flight recorder: ([^\]]+)\]", log)
                check(m is not None and os.path.abspath(m.group(1)) == os.path.abspath(path),
                      "rank %d: the WARN line does not name its dump %s" % (r, path))

        rc, out = run([py, tool, d1])
        print(out)
        check(rc == 0, "report tool exit status %d" % rc)
        check(re.search(r"ranks that have not reached op #2: 1\b", out) is not None,
              "the text report does not name rank 1 as not having reached op #2")
        check("FAILED in op #2 AllReduce(count=1024" in out, "the text report does not show the failed op #2")
        rc, out = run([py, tool, "--json", d1])
        check(rc == 0, "report tool --json exit status %d" % rc)
        try:
            rep = json.loads(out)["communicators"]
            c = list(rep.values())[0]
            check(c["highest_seq"] == 2, "--json highest_seq %s, expected 2" % c["highest_seq"])
            check(c["not_reached"] == [1], "--json not_reached %s, expected [1]" % c["not_reached"])
            check(sorted(c["failed_at_highest"]) == [0, 2, 3], "--json failed_at_highest %s" % c["failed_at_highest"])
            check((c["highest_call"] or "").startswith("AllReduce(count=1024"), "--json highest_call %s" % c["highest_call"])
            check(c["no_dump"] == [] and not c["healthy"], "--json no_dump %s healthy %s" % (c["no_dump"], c["healthy"]))
        except (ValueError, KeyError, IndexError) as e:
            check(False, "report --json output unusable: %s\n%s" % (e, out))
        trace = os.path.join(work, "trace.json")
        rc, out = run([py, tool, "--chrome-trace", trace, d1])
        check(rc == 0, "report tool --chrome-trace exit status %d" % rc)
        try:
            t = load(trace)
            ev = t["traceEvents"]
            spans = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "queue"]
            check({e["tid"] for e in spans} == {0, 1, 2, 3}, "trace: op spans on tracks %s" % {e["tid"] for e in spans})
            check(all(e["dur"] > 0 and e["ts"] >= 0 for e in spans), "trace: a span with bad ts/dur")
            bad = [e for e in spans if e.get("cname") == "terrible"]
            check(len(bad) >= 3 and all("op #2" in e["name"] for e in bad if e["args"]["seq"]),
                  "trace: the failed op #2 is not marked on ranks 0, 2, 3: %s" % bad)
            names = [e for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"]
            check(len(names) == 4, "trace: %d named tracks, expected 4" % len(names))
        except (OSError, ValueError, KeyError) as e:
            check(False, "trace %s unusable: %s" % (trace, e))

        # an unwritable trace path: a message and exit 1 after the report, not a traceback
        rc, out = run([py, tool, "--chrome-trace", os.path.join(work, "no-such-dir", "t.json"), d1])
        check(rc == 1 and "cannot write the Chrome trace" in out and "Traceback" not in out,
              "--chrome-trace into a missing directory: exit %d\n%s" % (rc, out[-2000:]))

        # ---- 2. dumps on request from a healthy job ----
        d2 = os.path.join(work, "frdump")
        env = dict(os.environ)
        env["HCCL_FLIGHT_RECORDER_DIR"] = d2
        rc, out = run([fault, "--scenario", "frdump", "--dir", d2], env=env)
        print(out)
        check(rc == 0, "hccl_fault --scenario frdump failed")
        files = glob.glob(os.path.join(d2, "*.json"))
        check(len(files) == 6, "frdump: %d dumps, expected 6 (3 ranks x (path, NULL))" % len(files))
        for f in files:
            try:
                validate_dump(f, load(f))
            except ValueError as e:
                check(False, "%s is not valid JSON: %s" % (f, e))
        rc, out = run([py, tool, "--json", d2])
        try:
            c = list(json.loads(out)["communicators"].values())[0]
            check(c["healthy"] and c["highest_seq"] == 3 and c["not_reached"] == [],
                  "frdump report: healthy %s highest %s not_reached %s" % (c["healthy"], c["highest_seq"], c["not_reached"]))
        except (ValueError, KeyError, IndexError) as e:
            check(False, "frdump report --json unusable: %s\n%s" % (e, out))
        rc, out = run([py, tool, d2])
        check("every rank completed every recorded operation" in out, "frdump text report does not say all is well")

        # ---- 3. nothing to read ----
        empty = os.path.join(work, "empty")
        os.mkdir(empty)
        rc, out = run([py, tool, empty])
        check(rc == 2, "the tool on an empty directory exited %d, expected 2" % rc)
        with open(os.path.join(d2, "broken.json"), "w") as fh:
            fh.write('{"version":1,"comm":"x","ops":[')
        rc, out = run([py, tool, d2])
        check(rc == 0 and "broken.json" in out, "a truncated dump next to good ones: exit %d, no warning naming it" % rc)
        os.unlink(os.path.join(d2, "broken.json"))
        # well-formed JSON with fields of the wrong type: reported, not a traceback
        for k, text in enumerate(['{"version":1,"comm":"c","rank":0,"nranks":2,"ops":null}',
                                  '{"version":1,"comm":"c","rank":"0","nranks":2,"ops":[]}',
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"ops":[1]}',
                                  '{"version":1,"comm":null,"rank":0,"nranks":2,"ops":[]}',
                                  '{"version":1,"comm":"c","rank":5,"nranks":2,"ops":[]}',
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"ops":[{"seq":1,"start_us":"x"}]}',
                                  # present but null, NaN or not whole: compared and formatted
                                  # by the report (a traceback before)
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"ops":[{"seq":null,"state":"done"}]}',
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"ops":[{"seq":NaN,"state":"done"}]}',
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"ops":[{"seq":2,"state":"failed",'
                                  '"start_us":1,"end_us":null}],"dumped_us":5}',
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"dumped_us":null,"ops":[]}',
                                  '{"version":1,"comm":"c","rank":0,"nranks":2,"last_completed_seq":1.5,"ops":[]}',
                                  # the report lists every rank without a dump (it hung)
                                  '{"version":1,"comm":"c","rank":0,"nranks":1000000000000,"ops":[]}']):
            name = os.path.join(d2, "odd%d.json" % k)
            with open(name, "w") as fh:
                fh.write(text)
            rc, out = run([py, tool, "--chrome-trace", os.path.join(work, "odd.trace"), d2])
            check(rc == 0 and "odd%d.json: not a usable flight-recorder dump" % k in out and "Traceback" not in out,
                  "a dump with a field of the wrong type (%s): exit %d\n%s" % (text, rc, out[-2000:]))
            os.unlink(name)
    finally:
        if not FAILS:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("files kept in " + work)
    print("fr_check: %s (%d failed check(s))" % ("FAIL" if FAILS else "PASS", len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
