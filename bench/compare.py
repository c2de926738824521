#!/usr/bin/python3
"""compare.py - our collectives against Open MPI and Gloo, side by side in one run.

    bench/compare.sh [--build DIR] [--out DIR] [--ops allreduce,allgather,...] [--np 2[,4]]
                     [--set NP:OP,OP ...] [--sizes 8:128M] [--factor 4] [--iters 20]
                     [--warmup 5] [--repeat 1] [--libs ours,ours-tcp,ompi,ompi-tcp,gloo]
                     [--inplace] [--quick] [--preset moderate] [--no-build] [--no-plot]

See bench/README.md. For each rank count, op and library it runs the nccl-tests-style
benchmark (ours: tools/*_perf under hcclrun; Open MPI: bench/mpi_perf.c; Gloo:
bench/gloo_perf.py) over the same sizes, measures the physical ceilings (memcpy,
loopback TCP) in the same run, prints a Markdown table per op with ratios, and writes
results.json, results.csv, summary.md, raw logs and PNG plots under --out.
Exit status: 0 when every run succeeded with #wrong 0; 1 otherwise (named loudly).
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

OPS = {  # op: (our perf tool, busbw factor(n))
    "allreduce": ("all_reduce_perf", lambda n: 2.0 * (n - 1) / n),
    "allgather": ("all_gather_perf", lambda n: (n - 1) / n),
    "reducescatter": ("reduce_scatter_perf", lambda n: (n - 1) / n),
    "broadcast": ("broadcast_perf", lambda n: 1.0),
    "reduce": ("reduce_perf", lambda n: 1.0),
    "alltoall": ("alltoall_perf", lambda n: (n - 1) / n),
}
LIBS = ["ours", "ours-tcp", "ompi", "ompi-tcp", "gloo"]
LABELS = {"ours": "ours", "ours-tcp": "ours TCP", "ompi": "OMPI", "ompi-tcp": "OMPI TCP", "gloo": "Gloo"}
# ratio columns: (numerator lib, denominator lib); ratio = busbw(num) / busbw(den) = time(den) / time(num)
RATIOS = [("ours", "ompi"), ("ours-tcp", "ompi-tcp"), ("ours", "gloo")]


def log(msg):
    sys.stderr.write("[compare] %s\n" % msg)
    sys.stderr.flush()


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mul = 1
    if s and s[-1] in "KMG":
        mul = 1 << (10 * ("KMG".index(s[-1]) + 1))
        s = s[:-1]
    return int(s) * mul


def human(n):
    for unit, sh in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << sh and n % (1 << sh) == 0:
            return "%d%s" % (n >> sh, unit)
    return str(n)


# ---- dependencies (Debian packages, installed on demand) ------------------------------

def apt_install(pkgs):
    cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=1800", "install", "-y", "--no-install-recommends"] + pkgs
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            log("cannot install %s: not root and no sudo" % " ".join(pkgs))
            return False
        cmd = ["sudo", "-n"] + cmd
    log("installing %s (apt-get; waits for the dpkg lock)" % " ".join(pkgs))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    rc = subprocess.call(cmd, env=env, stdout=sys.stderr)
    if rc != 0:  # stale package lists: update once, retry
        upd = cmd[:cmd.index("install")] + ["update"]
        subprocess.call(upd, env=env, stdout=sys.stderr)
        rc = subprocess.call(cmd, env=env, stdout=sys.stderr)
    return rc == 0


def py_has(module):
    return subprocess.call([PY, "-c", "import %s" % module], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) == 0


def ensure_deps(libs, plot):
    missing = []
    # mpicc can be there without mpi.h (openmpi-bin without libopenmpi-dev)
    q = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", "libopenmpi-dev"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    dev = "install ok installed" in q.stdout
    if any(l.startswith("ompi") for l in libs) and not (dev and shutil.which("mpicc") and shutil.which("mpirun")):
        if not apt_install(["openmpi-bin", "libopenmpi-dev"]):
            missing += ["ompi", "ompi-tcp"]
    if "gloo" in libs and not py_has("torch"):
        if not apt_install(["python3-torch"]) or not py_has("torch"):
            missing.append("gloo")
    if plot and not py_has("matplotlib"):
        if not apt_install(["python3-matplotlib"]) or not py_has("matplotlib"):
            log("WARNING: no matplotlib: no plots")
            plot = False
    return missing, plot


# ---- building -------------------------------------------------------------------------

def run_checked(cmd, **kw):
    log("$ " + " ".join(cmd))
    subprocess.check_call(cmd, stdout=sys.stderr, **kw)


def stale(target, sources):
    return not os.path.exists(target) or any(os.path.getmtime(s) > os.path.getmtime(target) for s in sources)


def build(a, libs):
    src = ROOT
    if a.ref:  # the library at one commit, exported with git archive (the working tree is untouched)
        sha = a.ref_sha
        base = os.path.join(a.build_root, "ref-" + sha)
        src, a.build = os.path.join(base, "src"), os.path.join(base, "build")
        if not os.path.exists(os.path.join(src, "CMakeLists.txt")):
            os.makedirs(src, exist_ok=True)
            log("exporting %s into %s" % (sha, src))
            subprocess.check_call("git -C '%s' archive %s | tar -x -C '%s'" % (ROOT, sha, src), shell=True)
    if not a.no_build:
        if not os.path.exists(os.path.join(a.build, "CMakeCache.txt")):
            run_checked(["cmake", "-S", src, "-B", a.build])
        run_checked(["cmake", "--build", a.build, "-j", str(a.jobs), "--target", "perf"])
    bdir = os.path.join(a.build_root, "bench")
    os.makedirs(bdir, exist_ok=True)
    ceil = os.path.join(bdir, "ceilings")
    src = os.path.join(HERE, "ceilings.c")
    if stale(ceil, [src]):
        run_checked(["cc", "-O2", "-pthread", "-o", ceil, src])
    mpi = os.path.join(bdir, "mpi_perf")
    src = os.path.join(HERE, "mpi_perf.c")
    if any(l.startswith("ompi") for l in libs) and stale(mpi, [src]):
        run_checked(["mpicc", "-O2", "-o", mpi, src, "-lm"])
    for op in a.all_ops:
        tool = os.path.join(a.build, "tools", OPS[op][0])
        if not os.path.exists(tool):
            raise SystemExit("compare: %s is missing (build it, or drop --no-build)" % tool)
    return ceil, mpi


# ---- running ----------------------------------------------------------------------------

def perf_flags(a):
    return ["-b", str(a.minbytes), "-e", str(a.maxbytes), "-f", str(a.factor), "-n", str(a.iters),
            "-w", str(a.warmup), "-c", "1", "-d", "float", "-o", "sum"]


_bind_ok = {}


def ours_bind(hcclrun, n):
    """Open MPI's default placement, for ours too: each rank bound to a core when
    there are at most 2 ranks and enough CPUs, else no binding (Open MPI binds to the
    socket above 2 ranks, which on a one-socket machine is no restriction, and not at
    all when oversubscribed). An hcclrun without --bind-to (--ref of an older commit)
    runs unbound."""
    if hcclrun not in _bind_ok:
        try:
            h = subprocess.run([hcclrun, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            h = ""
        _bind_ok[hcclrun] = "--bind-to" in h
    if _bind_ok[hcclrun] and n <= 2 and n <= len(os.sched_getaffinity(0)):
        return ["--bind-to", "core"]
    return []


def command(a, lib, op, n, mpi_bin):
    env = dict(os.environ)
    env.pop("HCCL_SHM_DISABLE", None)
    env["OMP_NUM_THREADS"] = "1"
    flags = perf_flags(a)
    if op not in ("allreduce", "reducescatter", "reduce"):
        flags = flags[:-2]
    if lib in ("ours", "ours-tcp"):
        if lib == "ours-tcp":
            env["HCCL_SHM_DISABLE"] = "1"
        if a.blocking:
            flags = flags + ["-S", "1"]
        hcclrun = os.path.join(a.build, "tools", "hcclrun")
        return [hcclrun, "-n", str(n)] + ours_bind(hcclrun, n) + \
            [os.path.join(a.build, "tools", OPS[op][0])] + flags, env
    if lib in ("ompi", "ompi-tcp"):
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n)] + a.ompi_args.split()
        if lib == "ompi-tcp":
            cmd += ["--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"]
        return cmd + [mpi_bin, "-C", op] + flags, env
    return [PY, os.path.join(HERE, "gloo_perf.py"), "--np", str(n), "-C", op] + flags, env


def parse_rows(text):
    rows = []
    for line in text.splitlines():
        f = line.split()
        if not f or line.lstrip().startswith("#") or len(f) < 13 or not f[0].isdigit():
            continue

        def num(x):
            try:
                return float(x)
            except ValueError:
                return None  # n/a, N/A
        rows.append({"size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3],
                     "oop_us": num(f[5]), "oop_wrong": num(f[8]), "ip_us": num(f[9]), "ip_wrong": num(f[12])})
    return rows


def run_one(a, lib, op, n, mpi_bin, rnd, failures, tag=""):
    cmd, env = command(a, lib, op, n, mpi_bin)
    raw = os.path.join(a.out, "raw", "np%d_%s%s_%s%s.txt" % (n, op, tag, lib, "" if a.repeat == 1 else "_r%d" % rnd))
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=a.timeout, universal_newlines=True)
        text, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = (e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")), "timeout"
    with open(raw, "w") as f:
        f.write("$ %s%s\n" % ("HCCL_SHM_DISABLE=1 " if env.get("HCCL_SHM_DISABLE") else "", " ".join(cmd)))
        f.write(text)
    rows = parse_rows(text)
    wrong = sum((r["oop_wrong"] or 0) + (r["ip_wrong"] or 0) for r in rows)
    log("np=%d %-13s %-8s rc=%s rows=%d wrong=%g (%.1fs)" % (n, op, lib, rc, len(rows), wrong, time.time() - t0))
    if rc != 0 or wrong > 0 or not rows:
        why = "exit %s" % rc if rc != 0 else ("#wrong %g" % wrong if wrong else "no result rows")
        failures.append("%s np=%d %s: %s (log: %s)" % (lib, n, op, why, raw))
        tail = "\n".join(text.splitlines()[-15:])
        log("FAILED %s np=%d %s: %s\n%s" % (lib, n, op, why, tail))
    return rows


LAT_ITERS, LAT_WARMUP = 2000, 100


def blocking_args(a, minbytes, maxbytes, iters, warmup):
    """The probes' arguments: a's, with ours in blocking calls on the NULL stream (-S 1)."""
    probe = argparse.Namespace(**vars(a))
    probe.minbytes, probe.maxbytes = minbytes, maxbytes
    probe.iters, probe.warmup, probe.blocking = iters, warmup, True
    return probe


def keep_best(d, key, us):
    """d[key] = the smallest time seen for key (None and 0 are no measurement)."""
    if us and (key not in d or us < d[key]):
        d[key] = us


def latency_probe(a, libs, sets, mpi_bin, rnd, failures, meta):
    """Issue 3's latency bar compares one call with one call: MPI_Allreduce blocks, so
    ours runs on the NULL stream (-S 1), 8 bytes, LAT_ITERS iterations (the sweep's few
    iterations per size measure the timer and the stream's queueing at 8 bytes).
    Best time per library over the rounds goes to meta["latency"]."""
    if not any(n == 2 and "allreduce" in ops for n, ops in sets) or a.minbytes > 8:
        return
    probe = blocking_args(a, 8, 8, LAT_ITERS, LAT_WARMUP)
    lat = meta.setdefault("latency", {"bytes": 8, "iters": LAT_ITERS, "ours_calls": "blocking (NULL stream)"})
    for lib in [l for l in libs if l in ("ours", "ompi", "ours-tcp", "ompi-tcp")]:
        for r in run_one(probe, lib, "allreduce", 2, mpi_bin, rnd, failures, tag="-latency"):
            if r["size"] == 8:
                keep_best(lat, lib, r["oop_us"])


SMALL_MAX, SMALL_ITERS, SMALL_WARMUP = 8 << 10, 1000, 100


def small_probe(a, libs, sets, mpi_bin, rnd, failures, meta):
    """The bars of more ranks than cores ("no size slower than OMPI") at sizes up to
    SMALL_MAX: there the sweep's few iterations per size mostly time how the ranks
    happen to be scheduled right after the size changed (either library can look
    10-50x slower in one run), so these sizes are also run with SMALL_ITERS
    iterations, ours in blocking calls (-S 1) like MPI's; best time per library, rank
    count, op and size over the rounds goes to meta["small"]."""
    todo = [(n, op) for n, ops in sets if n > 2 for op in ops]
    if not todo or a.minbytes > SMALL_MAX or "ours" not in libs or "ompi" not in libs:
        return
    probe = blocking_args(a, a.minbytes, min(a.maxbytes, SMALL_MAX), SMALL_ITERS, SMALL_WARMUP)
    small = meta.setdefault("small", {"iters": SMALL_ITERS, "max_bytes": SMALL_MAX,
                                      "ours_calls": "blocking (NULL stream)", "us": {}})
    for n, op in todo:
        for lib in ("ours", "ompi"):
            for r in run_one(probe, lib, op, n, mpi_bin, rnd, failures, tag="-small"):
                key = "%d:%s:%s:%d" % (n, op, lib, r["size"])
                keep_best(small["us"], key, r["oop_us"])
                if r.get("ip_us"):  # Broadcast's bar is judged in place (bars())
                    keep_best(small.setdefault("ip_us", {}), key, r["ip_us"])


def ceilings(ceil_bin, quick):
    mem, tcp = (64, 32) if quick else (256, 128)
    cmd = [ceil_bin, "-s", str(mem), "-t", str(tcp), "-r", "2" if quick else "3"]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True, timeout=300).stdout
    res = {k: float(v) for k, v in (l.split() for l in out.splitlines() if l.strip())}
    res.update(memcpy_MiB=mem, tcp_MiB=tcp)
    return res


# ---- report -----------------------------------------------------------------------------

def busbw(op, n, size, us):
    if not us:
        return None
    return size / (us * 1e-6) / 1e9 * OPS[op][1](n)


def fmt_us(us):
    if us is None:
        return "-"
    return "%.1f" % us if us < 1e4 else "%.0f" % us


def fmt_bw(bw):
    if bw is None:
        return "-"
    return "%.3f" % bw if bw < 0.1 else "%.2f" % bw


def fmt_ratio(r):
    return "-" if r is None else "%.2f" % r


def best_table(results, key):
    """{(n, op, lib, size): best time over rounds} for out-of-place ('oop_us') or in place."""
    t = {}
    for r in results:
        keep_best(t, (r["np"], r["op"], r["lib"], r["size"]), r[key])
    return t


def ratio(t, n, op, num, den, size):
    a, b = t.get((n, op, num, size)), t.get((n, op, den, size))
    return b / a if a and b else None


def markdown(meta, ceil, results, sets, libs, key):
    t = best_table(results, key)
    out = []
    ex = ceil.get("tcp_exchange_GBps")
    out.append("Ceilings (same run, best of start and end): memcpy %.2f GB/s (single thread, %d MiB); "
               "loopback TCP (%d MiB) one-way %.2f GB/s, 2-way exchange %.2f GB/s per direction." %
               (ceil.get("memcpy_GBps", 0), ceil.get("memcpy_MiB", 0), ceil.get("tcp_MiB", 0),
                ceil.get("tcp_oneway_GBps", 0), ex or 0))
    out.append("")
    for n, ops in sets:
        for op in ops:
            sizes = sorted({k[3] for k in t if k[0] == n and k[1] == op})
            if not sizes:
                continue
            out.append("### %s, %d ranks (%s; time us, busbw GB/s)" %
                       (op, n, "out of place" if key == "oop_us" else "in place"))
            out.append("")
            head = ["size"]
            for l in libs:
                head += ["%s us" % LABELS[l], "%s GB/s" % LABELS[l]]
            rcols = [(x, y) for x, y in RATIOS if x in libs and y in libs]
            head += ["%s/%s" % (LABELS[x], LABELS[y]) for x, y in rcols]
            tcp_col = op == "allreduce" and n == 2 and "ours-tcp" in libs and ex
            if tcp_col:
                head.append("ours TCP/TCP ceiling")
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            for s in sizes:
                row = [human(s)]
                for l in libs:
                    us = t.get((n, op, l, s))
                    row += [fmt_us(us), fmt_bw(busbw(op, n, s, us))]
                row += [fmt_ratio(ratio(t, n, op, x, y, s)) for x, y in rcols]
                if tcp_col:
                    bw = busbw(op, n, s, t.get((n, op, "ours-tcp", s)))
                    row.append(fmt_ratio(bw / ex if bw else None))
                out.append("| " + " | ".join(row) + " |")
            out.append("")
    return "\n".join(out)


def ratio_summary(results, sets, libs, key):
    """One compact table per ratio: rows = size, columns = (ranks, op)."""
    t = best_table(results, key)
    cols = [(n, op) for n, ops in sets for op in ops]
    sizes = sorted({k[3] for k in t})
    out = []
    for x, y in RATIOS:
        if x not in libs or y not in libs:
            continue
        head = ["size"] + ["%s %d ranks" % (op, n) for n, op in cols]
        out += ["**%s / %s**" % (LABELS[x], LABELS[y]), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for s in sizes:
            out.append("| " + " | ".join([human(s)] + [fmt_ratio(ratio(t, n, op, x, y, s)) for n, op in cols]) + " |")
        out.append("")
    return "\n".join(out)


def bars(results, ceil, key, meta=None):
    """The bars of issue 3, evaluated on this run (None where a library is missing)."""
    lat = (meta or {}).get("latency", {})
    t = best_table(results, key)
    ex = ceil.get("tcp_exchange_GBps")
    checks = []

    def sizes(n, op):
        # size 0: fewer bytes than ranks x element (count 0), nothing moves in any library
        return sorted({k[3] for k in t if k[0] == n and k[1] == op and k[3] > 0})

    # Broadcast has one buffer in both APIs (HcclBroadcast, MPI_Bcast): its
    # out-of-place block times the benchmark's own copy into the output first, the
    # same copy for every library, so its bar is judged on the in-place block.
    t_ip = best_table(results, "ip_us")

    def every(n, op, num, den, lo, need, hi=1 << 62, tab=None):
        tab = tab or t
        rs = [(s, ratio(tab, n, op, num, den, s)) for s in sizes(n, op) if lo <= s <= hi]
        rs = [(s, r) for s, r in rs if r is not None]
        if not rs:
            return None, "no data"
        worst = min(rs, key=lambda x: x[1])
        return worst[1] >= need, "worst %.2f at %s" % (worst[1], human(worst[0]))

    def add(name, res):
        checks.append((name, res[0], res[1]))

    add("shm allreduce busbw >= 1.5x OMPI, 64K..128M", every(2, "allreduce", "ours", "ompi", 64 << 10, 1.5))
    add("shm allreduce busbw >= 2x OMPI from 32M", every(2, "allreduce", "ours", "ompi", 32 << 20, 2.0))
    s8 = [s for s in sizes(2, "allreduce") if s <= 8]
    if s8:
        r = ratio(t, 2, "allreduce", "ours", "ompi", s8[-1])
        if lat.get("ours") and lat.get("ompi"):
            q = lat["ours"] / lat["ompi"]
            add("8-byte allreduce latency <= 1.2x OMPI",
                (q <= 1.2, "blocking calls, %d iterations: ours %.2f us, OMPI %.2f us, ours/OMPI time %.2f%s" %
                 (lat["iters"], lat["ours"], lat["ompi"], q,
                  "" if r is None else "; in the sweep (ours on a stream) %.2f" % (1 / r))))
        else:
            add("8-byte allreduce latency <= 1.2x OMPI", (None, "no data") if r is None else
                (1 / r <= 1.2, "ours/OMPI time %.2f" % (1 / r)))
    for op in ("allgather", "reducescatter"):
        add("%s >= 1.2x OMPI from 64K" % op, every(2, op, "ours", "ompi", 64 << 10, 1.2))
    ok, detail = every(2, "broadcast", "ours", "ompi", 64 << 10, 1.2, tab=t_ip)
    if ok is not None and key != "ip_us":
        detail += " (in place, the call itself; out of place %s)" % every(2, "broadcast", "ours", "ompi",
                                                                          64 << 10, 1.2)[1]
    add("broadcast >= 1.2x OMPI from 64K", (ok, detail))
    if ex:
        bws = [(s, busbw("allreduce", 2, s, t.get((2, "allreduce", "ours-tcp", s))))
               for s in sizes(2, "allreduce") if s >= 32 << 20]
        bws = [(s, b) for s, b in bws if b]
        if bws:
            w = min(bws, key=lambda x: x[1])
            add("TCP allreduce busbw from 32M >= 0.8x 2-way TCP exchange",
                (w[1] / ex >= 0.8, "worst %.2f at %s (%.2f of %.2f GB/s)" % (w[1] / ex, human(w[0]), w[1], ex)))
    add("TCP allreduce >= 1.0x OMPI TCP from 64K", every(2, "allreduce", "ours-tcp", "ompi-tcp", 64 << 10, 1.0))
    if s8:
        r = ratio(t, 2, "allreduce", "ours-tcp", "ompi-tcp", s8[-1])
        if lat.get("ours-tcp") and lat.get("ompi-tcp"):
            q = lat["ours-tcp"] / lat["ompi-tcp"]
            add("TCP 8-byte allreduce latency <= OMPI TCP",
                (q <= 1.0, "blocking calls, %d iterations: ours/OMPI time %.2f%s" %
                 (lat["iters"], q, "" if r is None else "; in the sweep %.2f" % (1 / r))))
        else:
            add("TCP 8-byte allreduce latency <= OMPI TCP", (None, "no data") if r is None else
                (r >= 1.0, "ours/OMPI time %.2f" % (1 / r)))
    small = (meta or {}).get("small", {})
    for n in sorted({k[0] for k in t if k[0] > 2}):
        for op in sorted({k[1] for k in t if k[0] == n}):
            name = "%d ranks %s: no size slower than OMPI" % (n, op)
            # Broadcast in place, as at 2 ranks (one buffer in both APIs); the probe's
            # in-place times where the run has them.
            bc = op == "broadcast" and key != "ip_us"
            su = small.get("ip_us", small.get("us", {})) if bc else small.get("us", {})
            tab = t_ip if bc else t
            probed = {}
            for s in sizes(n, op):
                o, m = su.get("%d:%s:ours:%d" % (n, op, s)), su.get("%d:%s:ompi:%d" % (n, op, s))
                if o and m:
                    probed[s] = m / o
            oop = " (in place, the call itself; out of place %s)" % every(n, op, "ours", "ompi", 0, 1.0)[1] if bc else ""
            if not probed or key != "oop_us":
                ok, detail = every(n, op, "ours", "ompi", 0, 1.0, tab=tab)
                add(name, (ok, detail + oop))
                continue
            rs = [(s, probed[s] if s in probed else ratio(tab, n, op, "ours", "ompi", s)) for s in sizes(n, op)]
            rs = [(s, r) for s, r in rs if r is not None]
            worst = min(rs, key=lambda x: x[1])
            sweep = every(n, op, "ours", "ompi", 0, 1.0, tab=tab)[1]
            add(name, (worst[1] >= 1.0, "worst %.2f at %s (up to %s from the %d-iteration probe, ours blocking; "
                       "the sweep alone: %s)%s" % (worst[1], human(worst[0]), human(max(probed)), small["iters"],
                                                   sweep, oop)))
    lines = ["| bar | met | detail |", "|---|---|---|"]
    for name, ok, detail in checks:
        lines.append("| %s | %s | %s |" % (name, {True: "yes", False: "**no**", None: "-"}[ok], detail))
    return "\n".join(lines)


# ---- main ---------------------------------------------------------------------------------

def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True).stdout.strip()
    except OSError:
        return ""


def main():
    p = argparse.ArgumentParser(description="ours vs Open MPI vs Gloo, ratios from one run (bench/README.md)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build dir (default build)")
    p.add_argument("--out", help="results dir (default BUILD/bench-results)")
    p.add_argument("--ops", default="allreduce,allgather,reducescatter,broadcast")
    p.add_argument("--np", default="2", help="rank counts, comma separated (each runs every --ops)")
    p.add_argument("--set", action="append", metavar="NP:OPS",
                   help="a rank count with its own ops, e.g. 4:allreduce (repeatable; replaces --np/--ops)")
    p.add_argument("--preset", choices=["moderate"],
                   help="moderate: --set 2:allreduce,allgather,reducescatter,broadcast --set 4:allreduce "
                        "--sizes 8:128M --factor 4 (the docs/performance.md run)")
    p.add_argument("--sizes", default="8:128M", help="MIN:MAX bytes (K, M, G = powers of 1024)")
    p.add_argument("--factor", type=int, default=4)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=1, help="rounds (library order rotated); best time kept")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--inplace", action="store_true", help="compare the in-place blocks (default out of place)")
    p.add_argument("--blocking", action="store_true", help="ours without a stream (-S 1): blocking calls on the "
                   "NULL stream, as Open MPI's and Gloo's calls are (a --ref older than this option lacks -S)")
    p.add_argument("--quick", action="store_true", help="sizes 8:1M, 5 iterations, 2 warm-up, small ceilings")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per benchmark run")
    p.add_argument("--jobs", type=int, default=2, help="build parallelism")
    p.add_argument("--ref", help="measure the library at this commit (git archive into BUILD/ref-SHA) "
                   "instead of the working tree")
    p.add_argument("--ompi-args", default="", help="extra mpirun arguments for both Open MPI runs, e.g. "
                   "'--bind-to none' (default: none, i.e. Open MPI's defaults)")
    p.add_argument("--from-json", metavar="RESULTS_JSON", help="only re-render summary.md and the plots of "
                   "an earlier run (written next to it)")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--no-plot", action="store_true")
    a = p.parse_args()

    if a.preset == "moderate":
        a.set = ["2:allreduce,allgather,reducescatter,broadcast", "4:allreduce"]
        a.sizes, a.factor = "8:128M", 4
    if a.quick:
        a.sizes, a.iters, a.warmup = ("8:1M" if a.sizes == "8:128M" else a.sizes), 5, 2
    try:
        lo, hi = a.sizes.split(":")
        a.minbytes, a.maxbytes = parse_size(lo), parse_size(hi)
    except ValueError:
        p.error("bad --sizes %r (MIN:MAX bytes, e.g. 8:128M)" % a.sizes)
    if not 0 <= a.minbytes <= a.maxbytes:
        p.error("bad --sizes %r (0 <= MIN <= MAX)" % a.sizes)
    for name, lowest in (("factor", 2), ("iters", 1), ("warmup", 0), ("repeat", 1), ("timeout", 1), ("jobs", 1)):
        if getattr(a, name) < lowest:
            p.error("bad --%s %d (at least %d)" % (name, getattr(a, name), lowest))
    a.build = a.build_root = os.path.abspath(a.build)
    a.out = os.path.abspath(a.out or os.path.join(a.build, "bench-results"))

    def nranks(s, what):
        try:
            n = int(s)
        except ValueError:
            n = 0
        if n < 1:
            p.error("bad rank count %r in %s" % (s, what))
        return n
    if a.set:
        sets = []
        for s in a.set:
            if ":" not in s:
                p.error("bad --set %r (NP:OPS, e.g. 4:allreduce)" % s)
            n, ops = s.split(":", 1)
            sets.append((nranks(n, "--set " + s), ops.split(",")))
    else:
        sets = [(nranks(n, "--np " + a.np), a.ops.split(",")) for n in a.np.split(",")]
    for _, ops in sets:
        for op in ops:
            if op not in OPS:
                p.error("unknown op %s (one of %s)" % (op, ", ".join(OPS)))
    a.ref_sha = git("rev-parse", "--short", a.ref + "^{commit}") if a.ref else None
    if a.ref and not a.ref_sha:
        p.error("unknown revision %s" % a.ref)
    a.all_ops = sorted({op for _, ops in sets for op in ops})
    libs = [l for l in a.libs.split(",") if l]
    for l in libs:
        if l not in LIBS:
            p.error("unknown library %s (one of %s)" % (l, ", ".join(LIBS)))
    if not libs:  # nothing to run: the rounds would divide by zero after the ceilings
        p.error("bad --libs %r (one or more of %s)" % (a.libs, ", ".join(LIBS)))

    if a.from_json:  # a missing, unreadable or foreign file is a usage error, not a traceback
        try:
            with open(a.from_json) as f:
                d = json.load(f)
            meta, ceil_all, results, failures = d["meta"], d["ceilings"], d["results"], d["failures"]
            sets = [(n, ops) for n, ops in meta["sets"]]
            libs = meta["libs"]
        except KeyError as e:
            p.error("bad --from-json %s: no %s key (not a compare.py results.json)" % (a.from_json, e))
        except (OSError, ValueError, TypeError) as e:
            p.error("bad --from-json %s: %s" % (a.from_json, e))
        a.out = os.path.dirname(os.path.abspath(a.from_json))
        return report(a, meta, ceil_all, results, failures, sets, libs, not a.no_plot)

    try:  # before the packages and the build: an --out that cannot be a folder ends a run at once
        os.makedirs(os.path.join(a.out, "raw"), exist_ok=True)
    except OSError as e:
        p.error("bad --out %s: %s" % (a.out, e))
    missing, plot = ensure_deps(libs, not a.no_plot)
    failures = []
    for l in missing:
        failures.append("%s: not available (package install failed)" % l)
        log("WARNING: %s dropped: its packages could not be installed" % l)
    libs = [l for l in libs if l not in missing]
    ceil_bin, mpi_bin = build(a, libs)

    lib_so = os.path.join(a.build, "libhccl.so")
    shm = False
    if os.path.exists(lib_so):
        with open(lib_so, "rb") as f:
            shm = b"HCCL_SHM_DISABLE" in f.read()
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": a.ref_sha or git("rev-parse", "--short", "HEAD"),
        "dirty": False if a.ref else bool(git("status", "--porcelain", "--untracked-files=no")),
        "host": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release(),
        "shm_transport": shm,
        "ompi": subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True).stdout.splitlines()[0] if shutil.which("mpirun") else None,
        "torch": subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, universal_newlines=True).stdout.strip() or None,
        "sizes": [a.minbytes, a.maxbytes, a.factor], "iters": a.iters, "warmup": a.warmup, "repeat": a.repeat,
        "sets": [[n, ops] for n, ops in sets], "libs": libs, "compared": "in place" if a.inplace else "out of place",
        "blocking": a.blocking,
        "ompi_args": a.ompi_args, "loadavg_start": os.getloadavg()[0],
    }
    log("commit %s%s, shared-memory transport %s" % (meta["commit"], " (dirty tree)" if meta["dirty"] else "",
                                                     "present" if shm else "absent: ours = TCP only"))
    ceil = ceilings(ceil_bin, a.quick)
    log("ceilings: %s" % ceil)

    results = []
    t_start = time.time()
    for rnd in range(a.repeat):
        for n, ops in sets:
            for op in ops:
                order = libs[rnd % len(libs):] + libs[:rnd % len(libs)]
                for lib in order:
                    for r in run_one(a, lib, op, n, mpi_bin, rnd, failures):
                        r.update(np=n, op=op, lib=lib, round=rnd)
                        r["oop_busbw"] = busbw(op, n, r["size"], r["oop_us"])
                        r["ip_busbw"] = busbw(op, n, r["size"], r["ip_us"])
                        results.append(r)
        latency_probe(a, libs, sets, mpi_bin, rnd, failures, meta)
        small_probe(a, libs, sets, mpi_bin, rnd, failures, meta)
    ceil_end = ceilings(ceil_bin, a.quick)
    ceil_all = {k: max(ceil[k], ceil_end.get(k, 0)) for k in ceil}
    meta.update(loadavg_end=os.getloadavg()[0], seconds=round(time.time() - t_start),
                ceilings_start=ceil, ceilings_end=ceil_end)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "ceilings": ceil_all, "results": results, "failures": failures}, f, indent=1)
    return report(a, meta, ceil_all, results, failures, sets, libs, plot)


def report(a, meta, ceil_all, results, failures, sets, libs, plot):
    key = "ip_us" if a.inplace else "oop_us"
    fields = ["np", "op", "lib", "round", "size", "count", "type", "redop", "oop_us", "oop_busbw", "oop_wrong",
              "ip_us", "ip_busbw", "ip_wrong"]
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(results)

    title = ("# ours vs Open MPI vs Gloo\n\nStarted %s, commit %s%s, %s; library transport: %s. "
             "%s blocks, best of %d round(s), -n %d -w %d, float32 sum, ours %s. Ratios > 1: ours faster "
             "(busbw ratio = time ratio, same sizes).\n" %
             (meta["date"], meta["commit"], " + uncommitted changes" if meta["dirty"] else "", meta["host"],
              "shared memory + TCP" if meta["shm_transport"] else "TCP only (shared-memory transport not in this build)",
              meta["compared"], meta["repeat"], meta["iters"], meta["warmup"],
              "in blocking calls (NULL stream, -S 1)" if meta.get("blocking") else "on a stream"))
    md = [title, "Versions: %s%s; torch %s (Gloo). Load average %.1f at start, %.1f at end; %d s." %
          (meta["ompi"], " (mpirun %s)" % meta["ompi_args"] if meta.get("ompi_args") else "", meta["torch"],
           meta["loadavg_start"], meta["loadavg_end"], meta["seconds"]), "",
          "## Ratios (busbw ours / other)", "", ratio_summary(results, sets, libs, key), "",
          "## Issue 3 bars on this run", "", bars(results, ceil_all, key, meta), "",
          "## Per op", "", markdown(meta, ceil_all, results, sets, libs, key)]
    if failures:
        md += ["", "## FAILURES", ""] + ["- " + x for x in failures]
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    if plot:
        try:
            sys.path.insert(0, HERE)
            import plot as plotmod
            for png in plotmod.plot_results(os.path.join(a.out, "results.json"), a.out):
                log("plot: %s" % png)
        except Exception as e:  # a plot failure must not hide the numbers
            log("WARNING: plotting failed: %s" % e)
    log("results: %s/{summary.md,results.json,results.csv,raw/}" % a.out)
    if failures:
        log("FAILED (%d):\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
