"""Checks shared by the rank scripts: one suite, three front ends.

The same functions run against `hccl` with NumPy arrays, `hccl` with torch tensors,
and `torch.distributed` with the "hccl" backend: hccl's functions take torch's
signatures, so `api` is either module. Data are small integers, exact in every dtype
(bf16 and fp16 included), so results are compared exactly against NumPy.
"""
import os
import sys

import numpy as np

OK = []


def ok(name):
    OK.append(name)


def report(rank):
    print("rank %d: %d checks passed" % (rank, len(OK)), flush=True)


def env_rank():
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


# ------------------------------------------------------------------ adapters


class NumpyAdapter:
    name = "numpy"
    dtypes = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
              "float64", "bool"]

    def make(self, values, dtype):
        return np.ascontiguousarray(np.asarray(values).astype(dtype))

    def zeros(self, n, dtype):
        return np.zeros(n, dtype=dtype)

    def to_np(self, x):
        return np.asarray(x)

    def npdtype(self, dtype):
        return np.dtype(dtype)

    def quantize(self, values, like):
        return values.astype(like.dtype)


class TorchAdapter:
    name = "torch"
    dtypes = ["int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64", "bool"]

    def __init__(self):
        import torch
        self.torch = torch

    def _dt(self, dtype):
        return getattr(self.torch, dtype)

    def make(self, values, dtype):
        v = np.asarray(values)
        if dtype == "bool":
            return self.torch.from_numpy(v.astype(bool).copy())
        return self.torch.tensor(v.astype(np.float64 if "float" in dtype else np.int64)).to(self._dt(dtype))

    def zeros(self, n, dtype):
        return self.torch.zeros(n, dtype=self._dt(dtype))

    def to_np(self, x):
        if x.dtype == self.torch.bfloat16:
            x = x.float()
        return x.numpy()

    def npdtype(self, dtype):
        return np.dtype("float32") if dtype == "bfloat16" else np.dtype(dtype)

    def quantize(self, values, like):
        if like.dtype == self.torch.bool:
            return self.torch.from_numpy(values.astype(bool).copy())
        return self.torch.tensor(values.astype(np.float64)).to(like.dtype)


def eq(ad, got, want, what):
    """Exact comparison after rounding `want` to got's dtype (matters for AVG only)."""
    g = ad.to_np(got)
    w = ad.to_np(ad.quantize(np.asarray(want), got))
    if g.dtype == np.bool_ or w.dtype == np.bool_:
        same = np.array_equal(g.astype(bool), w.astype(bool))
    else:
        same = np.array_equal(g.astype(np.float64), w.astype(np.float64))
    if not same:
        raise AssertionError("%s: got %s, want %s" % (what, g.tolist()[:16], w.tolist()[:16]))


# ------------------------------------------------------------------ data


def data(kind, r, n, k, dtype):
    """Per-rank inputs whose reductions are exact in dtype; returns (values, for_rank)."""
    i = np.arange(k)
    if dtype == "bool":
        return ((i + r) % 3 == 0)
    if kind == "prod":
        return 1 + (i % n == r).astype(np.int64)  # product over ranks is exactly 2
    signed = dtype.startswith("int") or dtype.startswith("float") or dtype == "bfloat16"
    v = (i * 3 + r * 5) % 7
    if signed:
        v = v - 3
    return v


def reduce_np(vals, op, dtype):
    s = np.stack(vals)
    if dtype == "bool":
        s = s.astype(bool)
        return {"SUM": s.any(0), "MAX": s.any(0), "PRODUCT": s.all(0), "MIN": s.all(0)}[op]
    s = s.astype(np.float64 if ("float" in dtype) else np.int64)
    if op == "SUM":
        return s.sum(0)
    if op == "PRODUCT":
        return s.prod(0)
    if op == "MAX":
        return s.max(0)
    if op == "MIN":
        return s.min(0)
    if op == "AVG":
        if "float" in dtype:
            return s.sum(0) / len(vals)
        return np.floor_divide(s.sum(0), len(vals))
    raise ValueError(op)


OPS = ["SUM", "PRODUCT", "MAX", "MIN", "AVG"]


def ops_for(dt):
    return [o for o in OPS if not (dt == "bool" and o == "AVG")]


def op_of(api, name):
    return getattr(api.ReduceOp, name)


# ------------------------------------------------------------------ checks


def check_all_reduce_dtypes(api, ad, r, n, group=None, k=13):
    for dt in ad.dtypes:
        for op in ops_for(dt):
            kind = "prod" if op == "PRODUCT" else "x"
            vals = [data(kind, q, n, k, dt) for q in range(n)]
            t = ad.make(vals[r], dt)
            api.all_reduce(t, op=op_of(api, op), group=group)
            eq(ad, t, reduce_np(vals, op, dt), "all_reduce %s %s" % (dt, op))
    ok("all_reduce x dtypes x ops")


def check_collectives(api, ad, r, n, group=None, dt="float32", k=6):
    vals = [data("x", q, n, k, dt) for q in range(n)]
    # broadcast from every root
    for root in range(n):
        t = ad.make(vals[r], dt)
        api.broadcast(t, src=root, group=group)
        eq(ad, t, vals[root], "broadcast root %d" % root)
    ok("broadcast")
    # reduce to every root, every op; non-roots keep their input
    for root in range(n):
        for op in ops_for(dt):
            kind = "prod" if op == "PRODUCT" else "x"
            v = [data(kind, q, n, k, dt) for q in range(n)]
            t = ad.make(v[r], dt)
            api.reduce(t, dst=root, op=op_of(api, op), group=group)
            eq(ad, t, reduce_np(v, op, dt) if r == root else v[r], "reduce root %d %s" % (root, op))
    ok("reduce")
    # all_gather: list and single tensor
    outs = [ad.zeros(k, dt) for _ in range(n)]
    api.all_gather(outs, ad.make(vals[r], dt), group=group)
    for q in range(n):
        eq(ad, outs[q], vals[q], "all_gather list block %d" % q)
    out = ad.zeros(n * k, dt)
    api.all_gather_into_tensor(out, ad.make(vals[r], dt), group=group)
    eq(ad, out, np.concatenate(vals), "all_gather_into_tensor")
    ok("all_gather")
    # reduce_scatter: list and single tensor, SUM and AVG
    big = [data("x", q, n, k * n, dt) for q in range(n)]
    for op in [o for o in ("SUM", "MAX", "AVG") if o in ops_for(dt)]:
        o = ad.zeros(k, dt)
        api.reduce_scatter(o, [ad.make(big[r][j * k:(j + 1) * k], dt) for j in range(n)], op=op_of(api, op),
                           group=group)
        eq(ad, o, reduce_np(big, op, dt)[r * k:(r + 1) * k], "reduce_scatter list %s" % op)
        o = ad.zeros(k, dt)
        api.reduce_scatter_tensor(o, ad.make(big[r], dt), op=op_of(api, op), group=group)
        eq(ad, o, reduce_np(big, op, dt)[r * k:(r + 1) * k], "reduce_scatter_tensor %s" % op)
    ok("reduce_scatter")
    # gather / scatter for every root
    for root in range(n):
        gl = [ad.zeros(k, dt) for _ in range(n)] if r == root else None
        api.gather(ad.make(vals[r], dt), gl, dst=root, group=group)
        if r == root:
            for q in range(n):
                eq(ad, gl[q], vals[q], "gather root %d block %d" % (root, q))
        t = ad.zeros(k, dt)
        sl = [ad.make(big[root][j * k:(j + 1) * k], dt) for j in range(n)] if r == root else None
        api.scatter(t, sl, src=root, group=group)
        eq(ad, t, big[root][r * k:(r + 1) * k], "scatter root %d" % root)
    ok("gather/scatter")
    # all_to_all: equal blocks (list and single), then uneven (list and split sizes)
    ins = [ad.make(big[r][j * k:(j + 1) * k], dt) for j in range(n)]
    outs = [ad.zeros(k, dt) for _ in range(n)]
    api.all_to_all(outs, ins, group=group)
    for q in range(n):
        eq(ad, outs[q], big[q][r * k:(r + 1) * k], "all_to_all from %d" % q)
    o = ad.zeros(n * k, dt)
    api.all_to_all_single(o, ad.make(big[r], dt), group=group)
    eq(ad, o, np.concatenate([big[q][r * k:(r + 1) * k] for q in range(n)]), "all_to_all_single")
    # uneven: rank s sends (s + d) % 3 + 1 rows to rank d
    cnt = lambda s, d: (s + d) % 3 + 1  # noqa: E731
    payload = lambda s, d: (np.arange(cnt(s, d)) + 10 * s + d) % 50  # noqa: E731
    send_sizes = [cnt(r, d) for d in range(n)]
    recv_sizes = [cnt(s, r) for s in range(n)]
    ins = [ad.make(payload(r, d), dt) for d in range(n)]
    outs = [ad.zeros(recv_sizes[s], dt) for s in range(n)]
    api.all_to_all(outs, ins, group=group)
    for s in range(n):
        eq(ad, outs[s], payload(s, r), "all_to_all uneven from %d" % s)
    o = ad.zeros(sum(recv_sizes), dt)
    api.all_to_all_single(o, ad.make(np.concatenate([payload(r, d) for d in range(n)]), dt), recv_sizes,
                          send_sizes, group=group)
    eq(ad, o, np.concatenate([payload(s, r) for s in range(n)]), "all_to_all_single splits")
    ok("all_to_all")
    api.barrier(group=group)
    ok("barrier")


def check_p2p(api, ad, r, n, group=None, dt="float32", k=5):
    nxt, prv = (r + 1) % n, (r - 1) % n
    mine = lambda q: np.arange(k) + 100 * q  # noqa: E731
    # blocking ring: even ranks send first
    t = ad.zeros(k, dt)
    if r % 2 == 0:
        api.send(ad.make(mine(r), dt), dst=nxt, group=group)
        api.recv(t, src=prv, group=group)
    else:
        api.recv(t, src=prv, group=group)
        api.send(ad.make(mine(r), dt), dst=nxt, group=group)
    eq(ad, t, mine(prv), "send/recv ring")
    # isend/irecv (posted in an order that needs no buffering of both sides)
    t = ad.zeros(k, dt)
    if r % 2 == 0:
        ws = [api.isend(ad.make(mine(r), dt), dst=nxt, group=group), api.irecv(t, src=prv, group=group)]
    else:
        ws = [api.irecv(t, src=prv, group=group), api.isend(ad.make(mine(r), dt), dst=nxt, group=group)]
    for w in ws:
        w.wait()
    eq(ad, t, mine(prv), "isend/irecv ring")
    # batch: every rank sends to every other and receives from every other, any order
    bufs = {q: ad.zeros(k, dt) for q in range(n) if q != r}
    ops = [api.P2POp(api.isend, ad.make(mine(r) + q, dt), q, group) for q in range(n) if q != r]
    ops += [api.P2POp(api.irecv, bufs[q], q, group) for q in reversed(range(n)) if q != r]
    for w in api.batch_isend_irecv(ops):
        w.wait()
    for q, b in bufs.items():
        eq(ad, b, mine(q) + r, "batch_isend_irecv from %d" % q)
    ok("p2p")


def check_async(api, ad, r, n, group=None, dt="float32", k=7):
    vals = [data("x", q, n, k, dt) for q in range(n)]
    ts = [ad.make(vals[r] + j, dt) for j in range(4)]
    works = [api.all_reduce(t, op=api.ReduceOp.SUM, group=group, async_op=True) for t in ts]
    avg = ad.make(vals[r], dt)
    works.append(api.all_reduce(avg, op=api.ReduceOp.AVG, group=group, async_op=True))
    for w in reversed(works):
        assert w.wait() in (True, None)
        assert w.is_completed()
        assert w.exception() is None
    for j, t in enumerate(ts):
        eq(ad, t, reduce_np([v + j for v in vals], "SUM", dt), "async all_reduce %d" % j)
    eq(ad, avg, reduce_np(vals, "AVG", dt), "async AVG")
    outs = [ad.zeros(k, dt) for _ in range(n)]
    w = api.all_gather(outs, ad.make(vals[r], dt), group=group, async_op=True)
    w.wait()
    for q in range(n):
        eq(ad, outs[q], vals[q], "async all_gather %d" % q)
    w = api.barrier(group=group, async_op=True)
    w.wait()
    ok("async")


def interrupted_by_sigint(call, error):
    """Rank 0 of the "interrupt" modes: SIGINT 1 s into call() (a blocking all_reduce
    that the peer has not joined) must raise KeyboardInterrupt within 2.5 s; the
    communicator has then failed, so a second call() raises `error` saying so (error
    None: call() creates a communicator, none is left)."""
    import signal
    import threading
    import time
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        call()
        raise AssertionError("all_reduce without its peer returned")
    except KeyboardInterrupt:
        dt = time.monotonic() - t0
    print("rank 0: KeyboardInterrupt after %.1f s" % dt, flush=True)
    assert dt < 2.5, dt  # 1 s, then the first check after 100 ms idle and every 100 ms
    if error is None:  # a communicator's creation: nothing is left to call
        return
    try:
        call()
        raise AssertionError("an interrupted communicator ran an operation")
    except error as e:
        assert "interrupted by the application" in str(e), e
        # The failure is this rank's own: no peer is to blame (they were all named).
        assert e.peers == [], (e.peers, e)


def main_guard(fn):
    try:
        fn()
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
