#!/usr/bin/python3
"""gloo_perf.py - PyTorch's Gloo backend measured like our *_perf benchmarks.

    gloo_perf.py -C allreduce --np 2 -b 8 -e 128M -f 4 [-n 20 -w 5 -c 1 -o sum -d float]

Ranks: under a launcher (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, e.g.
torchrun or hcclrun) this process is one rank; otherwise --np N ranks are forked
(torch.multiprocessing, fork) on 127.0.0.1. OMP_NUM_THREADS=1 and one intra-op thread.

Method and output as tools/perf (docs/tools.md): per size, out of place then in place:
barrier; -n timed iterations on the same tensors; time = elapsed / n, aggregated across
ranks by -a (default 3: max) with an all_reduce; then, after a barrier, -c check
iterations with integer-valued inputs compared exactly; #wrong summed over ranks.
Warm-up: -w iterations at the largest and the smallest size. Columns:
size count type redop root | time algbw busbw #wrong | (in place) ...

torch.distributed has no out-of-place all_reduce, broadcast or reduce: the out-of-place
block does what a user must do, out.copy_(in) then the in-place call (timed), as
broadcast_perf does for HcclBroadcast. Gloo in torch 1.13 has no reduce_scatter:
those blocks print n/a. all_gather takes a list of views of one output tensor.
Exit status 1 when any #wrong > 0, 2 for usage errors.
"""
import argparse
import os
import socket
import sys
import time

import numpy as np

COLLS = {  # name: (title, has_op, has_root, busbw factor(n))
    "allreduce": ("AllReduce", True, False, lambda n: 2.0 * (n - 1) / n),
    "allgather": ("AllGather", False, False, lambda n: (n - 1) / n),
    "reducescatter": ("ReduceScatter", True, False, lambda n: (n - 1) / n),
    "broadcast": ("Broadcast", False, True, lambda n: 1.0),
    "reduce": ("Reduce", True, True, lambda n: 1.0),
    "alltoall": ("AllToAll", False, False, lambda n: (n - 1) / n),
}
DTYPES = {"float": ("float32", 4, 2.0 ** 24), "double": ("float64", 8, 2.0 ** 53),
          "int32": ("int32", 4, 2.0 ** 31 - 1), "int64": ("int64", 8, 2.0 ** 53)}
OPS = ["sum", "prod", "max", "min"]


def parse_size(s):
    s0 = s
    s = s.strip().upper().rstrip("B").rstrip("I")
    mul = 1
    if s and s[-1] in "KMGT":
        mul = 1 << (10 * ("KMGT".index(s[-1]) + 1))
        s = s[:-1]
    if not s.isdigit():
        raise argparse.ArgumentTypeError("invalid size '%s'" % s0)
    return int(s) * mul


def args_parser():
    p = argparse.ArgumentParser(description="Gloo (torch.distributed) benchmark with the *_perf columns")
    p.add_argument("-C", "--coll", required=True, choices=sorted(COLLS))
    p.add_argument("-b", "--minbytes", type=parse_size, default=32 << 20)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=32 << 20)
    p.add_argument("-f", "--stepfactor", type=float, default=1.0)
    p.add_argument("-i", "--stepbytes", type=parse_size, default=1 << 20)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-o", "--op", default="sum", choices=OPS + ["all"])
    p.add_argument("-d", "--datatype", default="float", choices=sorted(DTYPES) + ["all"])
    p.add_argument("-r", "--root", type=int, default=0)
    p.add_argument("-a", "--average", type=int, default=3, choices=[0, 1, 2, 3])
    p.add_argument("--np", type=int, default=2, help="ranks to fork when not under a launcher")
    return p


# ---- values: integer-valued, exact in the type (as tools/perf/common.c) ----------------

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix(rank, idx, it):
    with np.errstate(over="ignore"):
        h = (idx.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + np.uint64(((rank + 1) * 0xC2B2AE3D27D4EB4F) & 0xFFFFFFFFFFFFFFFF)
             + np.uint64(((it + 1) * 0x165667B19E3779F9) & 0xFFFFFFFFFFFFFFFF))
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        return h ^ (h >> np.uint64(32))


def values(op, exact_max, nranks, rank, idx, it):
    if op == "prod":
        return np.where((idx + rank + it) % (nranks + 1) == 0, 2.0, 1.0)
    vmax = exact_max
    if op == "sum":
        vmax = float(np.floor(vmax / nranks))
    vmax = min(vmax, 100.0)
    return (mix(rank, idx, it) % np.uint64(2 * vmax + 1)).astype(np.float64) - vmax


def reduce_all(op, exact_max, nranks, idx, it):
    acc = values(op, exact_max, nranks, 0, idx, it)
    for r in range(1, nranks):
        v = values(op, exact_max, nranks, r, idx, it)
        acc = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op](acc, v)
    return acc


# ---- one rank ---------------------------------------------------------------------------

def rank_main(rank, nranks, a):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=nranks)
    title, has_op, has_root, factor = COLLS[a.coll]
    if a.root >= nranks:
        raise SystemExit(2)
    maxbytes = a.maxbytes
    send8 = torch.zeros(maxbytes + 64, dtype=torch.uint8)
    recv8 = torch.zeros(maxbytes + 64, dtype=torch.uint8)
    rops = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX,
            "min": dist.ReduceOp.MIN}
    types = sorted(DTYPES) if a.datatype == "all" else [a.datatype]
    ops = (OPS if a.op == "all" else [a.op]) if has_op else ["none"]
    out = sys.stdout

    def counts(total):
        per = total // nranks
        if a.coll == "allgather":
            return per, per * nranks, per  # send, recv, param
        if a.coll == "reducescatter":
            return per * nranks, per, per
        if a.coll == "alltoall":
            return per * nranks, per * nranks, per
        return total, total, total

    if rank == 0:
        out.write("# Collective test starting: gloo_perf (torch %s, gloo backend)\n" % torch.__version__)
        out.write("# %s: %d ranks (%d processes x 1 thread)\n" % (title, nranks, nranks))
        if a.stepfactor > 1:
            out.write("# minBytes %d maxBytes %d step: %g(factor)" % (a.minbytes, a.maxbytes, a.stepfactor))
        else:
            out.write("# minBytes %d maxBytes %d step: %d(bytes)" % (a.minbytes, a.maxbytes, a.stepbytes))
        out.write(" warmup iters: %d iters: %d agg iters: 1 validation: %d blocking: 1\n"
                  % (a.warmup_iters, a.iters, a.check))
        out.write("# time across ranks: %s\n#\n" % ["rank 0", "average", "minimum", "maximum"][a.average])
        out.write("#%51s  %-33s  %-33s\n" % ("", "            out-of-place", "             in-place"))
        out.write("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n"
                  % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                     "time", "algbw", "busbw", "#wrong"))
        out.write("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n"
                  % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
        out.flush()

    wrong_total = 0.0
    bw_sum, bw_n = 0.0, 0
    for tname in types:
        npname, es, exact_max = DTYPES[tname]
        tdt = getattr(torch, npname)
        send_all = send8[:maxbytes].view(tdt)
        recv_all = recv8[:maxbytes].view(tdt)
        for op in ops:
            rop = rops.get(op, dist.ReduceOp.SUM)

            def make(c, inplace):
                """Returns (fn, input view, output view) for one block of counts c."""
                ns, nr, per = c
                if inplace:
                    rv = recv_all[:nr] if a.coll != "reducescatter" else recv_all[:ns]
                    if a.coll == "allgather":
                        sv = rv[rank * per:(rank + 1) * per]
                    else:
                        sv = rv
                else:
                    sv, rv = send_all[:ns], recv_all[:nr]
                if min(ns, nr) == 0:
                    return None, sv, rv  # gloo dies (SIGFPE) on empty collectives: n/a
                if a.coll == "allreduce":
                    if inplace:
                        return (lambda: dist.all_reduce(rv, op=rop)), rv, rv
                    return (lambda: (rv.copy_(sv), dist.all_reduce(rv, op=rop))), sv, rv
                if a.coll == "reduce":
                    if inplace:
                        return (lambda: dist.reduce(rv, a.root, op=rop)), rv, rv
                    return (lambda: (rv.copy_(sv), dist.reduce(rv, a.root, op=rop))), sv, rv
                if a.coll == "broadcast":
                    if inplace:
                        return (lambda: dist.broadcast(rv, a.root)), rv, rv
                    return (lambda: (rv.copy_(sv) if rank == a.root else None, dist.broadcast(rv, a.root))), sv, rv
                if a.coll == "allgather":
                    views = list(rv.split(per)) if per > 0 else [rv[:0]] * nranks
                    return (lambda: dist.all_gather(views[:nranks], sv)), sv, rv
                if a.coll == "alltoall":
                    if inplace:
                        return None, sv, rv  # gloo's all_to_all_single cannot alias its buffers
                    return (lambda: dist.all_to_all_single(rv, sv)), sv, rv
                return None, sv, rv  # reducescatter: not in gloo

            def expected(c, it):
                ns, nr, per = c
                idx = np.arange(nr, dtype=np.int64)
                if a.coll in ("allreduce", "reduce"):
                    return reduce_all(op, exact_max, nranks, idx, it)
                if a.coll == "allgather":
                    out_ = np.empty(nr)
                    for r in range(nranks):
                        out_[r * per:(r + 1) * per] = values(op, exact_max, nranks, r, np.arange(per), it)
                    return out_
                if a.coll == "alltoall":
                    out_ = np.empty(nr)
                    for r in range(nranks):
                        out_[r * per:(r + 1) * per] = values(op, exact_max, nranks, r,
                                                             rank * per + np.arange(per), it)
                    return out_
                return values(op, exact_max, nranks, a.root, idx, it)  # broadcast

            def block(c, inplace):
                fn, sv, rv = make(c, inplace)
                flags = torch.zeros(2, dtype=torch.float64)
                sec = 0.0
                if fn is None:
                    flags[1] = 1.0
                else:
                    dist.barrier()
                    t0 = time.perf_counter()
                    for _ in range(a.iters):
                        fn()
                    if a.iters:
                        sec = (time.perf_counter() - t0) / a.iters
                    if a.check:  # no check while another rank still times
                        dist.barrier()
                    for ci in range(a.check):
                        it = 2 * ci + (1 if inplace else 0)
                        # Sentinel over the bytes this size uses only (as tools/perf and
                        # mpi_perf do): filling the whole buffers would leave dirty lines
                        # for the next size's timed loop to write back.
                        rv.view(torch.uint8).fill_(0x7F)
                        if not inplace:
                            sv.view(torch.uint8).fill_(0x7F)
                        if a.coll != "broadcast" or rank == a.root:
                            v = values(op, exact_max, nranks, rank, np.arange(c[0], dtype=np.int64), it)
                            sv.copy_(torch.from_numpy(v.astype(npname)))
                        fn()
                        if a.coll != "reduce" or rank == a.root:
                            got = rv[:c[1]].to(torch.float64).numpy()
                            want = expected(c, it)
                            bad = int(np.count_nonzero(got != want))
                            if bad and os.environ.get("HCCL_PERF_VERBOSE"):
                                i = int(np.flatnonzero(got != want)[0])
                                sys.stderr.write("gloo_perf: rank %d element %d: got %g want %g\n"
                                                 % (rank, i, got[i], want[i]))
                            flags[0] += bad
                t = torch.tensor([0.0 if (a.average == 0 and rank != 0) else sec], dtype=torch.float64)
                dist.all_reduce(t, op=[dist.ReduceOp.SUM, dist.ReduceOp.SUM, dist.ReduceOp.MIN,
                                       dist.ReduceOp.MAX][a.average])
                if a.average == 1:
                    t /= nranks
                dist.all_reduce(flags)
                return float(t[0]), float(flags[0]), flags[1] > 0

            for total in (maxbytes // es, a.minbytes // es):
                fn, _, _ = make(counts(total), False)
                for _ in range(a.warmup_iters if fn else 0):
                    fn()
            size = a.minbytes
            while size <= maxbytes:
                c = counts(size // es)
                nbytes = max(c[0], c[1]) * es
                cells = []
                for inplace in (False, True):
                    sec, wrong, na = block(c, inplace)
                    if na:
                        cells.append("  %7s  %6s  %6s  %6s" % ("n/a", "n/a", "n/a", "n/a"))
                        continue
                    us = sec * 1e6
                    algbw = nbytes / 1e9 / sec if sec > 0 else 0.0
                    busbw = algbw * factor(nranks)
                    ts = "%7.2f" % us if us < 1e4 else ("%7.1f" % us if us < 1e5 else "%7.0f" % us)
                    ws = "%6.0f" % wrong if a.check else "%6s" % "N/A"
                    cells.append("  %7s  %6.2f  %6.2f  %6s" % (ts, algbw, busbw, ws))
                    bw_sum += busbw
                    bw_n += 1
                    wrong_total += wrong
                if rank == 0:
                    out.write("%12d  %12d  %8s  %6s  %6d%s%s\n" % (nbytes, nbytes // es, tname, op,
                                                                  a.root if has_root else -1, cells[0], cells[1]))
                    out.flush()
                # At least one element more, as tools/perf: 8 * 1.01 rounded down would end the sweep at -b.
                nxt = max(int(size * a.stepfactor), size + es) if a.stepfactor > 1 else size + a.stepbytes
                if nxt <= size:
                    break
                size = nxt
    if rank == 0:
        out.write("# Out of bounds values : %.0f %s\n" % (wrong_total, "FAILED" if wrong_total > 0 else "OK"))
        out.write("# Avg bus bandwidth : %g\n#\n# Collective test concluded: gloo_perf\n"
                  % (bw_sum / bw_n if bw_n else 0.0))
        out.flush()
    dist.barrier()
    dist.destroy_process_group()
    return 1 if wrong_total > 0 else 0


def _forked(rank, nranks, a):
    rc = rank_main(rank, nranks, a)
    if rc:
        sys.exit(rc)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    p = args_parser()
    a = p.parse_args()
    # The ranges of tools/perf: -n -1 once printed negative times, -f 0.5 was taken as no
    # factor, --np 0 started nothing and reported success.
    for flag, v, lo in (("-n", a.iters, 0), ("-w", a.warmup_iters, 0), ("-c", a.check, 0), ("-r", a.root, 0),
                        ("-i", a.stepbytes, 1), ("--np", a.np, 1)):
        if v < lo:
            p.error("invalid value %d for %s (at least %d)" % (v, flag, lo))
    if not 1.0 <= a.stepfactor <= 1e6:
        p.error("invalid factor %g for -f (1 to 1e6)" % a.stepfactor)
    if a.minbytes > a.maxbytes:
        p.error("invalid range: -b %d is above -e %d (bytes)" % (a.minbytes, a.maxbytes))
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    if os.environ.get("RANK") and os.environ.get("WORLD_SIZE"):
        return rank_main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    import torch.multiprocessing as mp
    try:
        mp.start_processes(_forked, args=(a.np, a), nprocs=a.np, start_method="fork")
    except mp.ProcessExitedException as e:
        sys.stderr.write("gloo_perf: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
