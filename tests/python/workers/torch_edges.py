"""Rank script: torch.distributed over the hccl backend at its edges.

mode "edges" (2 ranks):
  - Work.wait(timeout) with inf or 1e300 waits for the operation (rank 1 comes 0.5 s
    late) instead of hanging; NaN raises ValueError;
  - ReduceOp.AVG with async_op=True is divided when is_completed() first says True,
    and when the Work is dropped (read after a barrier), in float32, float16,
    bfloat16 and int32 (floor division), for all_reduce and reduce_scatter_tensor;
  - a list-form all_gather's list is filled once is_completed() says True, and a
    dropped one's (and a dropped gather's) once a later operation of the group is done;
  - batch_isend_irecv on one rank matches plain send/recv on the other; complex64 and
    complex128 tensors go through send/recv (into a strided view too) and a batch;
  - the future of a batch's request waits for that batch (rank 1 sends 0.5 s late),
    not for an earlier batch;
  - groups that used get_future() leave no thread or communicator behind when
    destroyed, and a group's root info does not stay in the store;
  - the group's methods called directly take torch's shorthand bindings, positional
    and by keyword, as gloo's do: allreduce(tensor, op=), broadcast(tensor, root=),
    reduce(tensor, root, op) (a TypeError before), gather(outputs, tensor, root=),
    scatter(output, inputs, root=), reduce_scatter(output, inputs, op=);
  - a future's callback, run by the group's completion thread, that starts another
    async operation and waits on its future (PowerSGD's DDP hook does) gets its
    result (it waited forever: that future was queued behind the callback on the same
    thread); rank 1 comes 0.3 s late so that rank 0's callback runs on that thread.
mode "noarrive" (3 ranks, HCCL_CONNECT_TIMEOUT unset): rank 2 never creates the
  group; rank 0's init fails within about the group's timeout (3 s) with an HcclError
  whose peers include rank 2 and whose message names it.
mode "batchtimeout" (2 ranks, group timeout 2 s): rank 0's batch_isend_irecv receives
  from rank 1, which never sends: the Work's error names rank 1 as missing from "this
  transfer" (it said "this collective").
mode "mismatch" (2 ranks): all_to_all_single whose split sizes disagree between the
  ranks fails on both with the algorithm's reason in the library message (rank 0's
  own refusal; rank 1: rank 0 aborted, with that reason), not a bare "parameter error".
mode "refused" (2 ranks, group timeout 3 s): rank 0 isends 4 MiB to rank 1, then
  all_reduces, rank 1 all_reduces first (the send waits for a receive that never comes,
  so rank 1 times out and aborts, or rank 0's Send times out first and rank 1 sees its
  abort): rank 0's all_reduce, refused because the
  communicator failed, names that first failure (the Send: rank 1 aborted, or its own
  timeout when that came first), and the isend's own wait reports the Send's failure,
  not the later refusal.
mode "ddpfail" (2 ranks): DDP's gradient all-reduce fails (rank 1 calls a broadcast
  instead, so the operations mismatch): rank 0's backward raises a RuntimeError that
  carries the library's reason (the reducer read the failed future's exception as its
  result and crashed the process with SIGSEGV), and a failed Work's future reports an
  error to a callback chained on it.
mode "monitored" (2 ranks): the group's monitored_barrier (torch 1.13's
  dist.monitored_barrier refuses every backend but gloo) passes when both come; with
  rank 1 coming 1.5 s late and a 0.5 s timeout rank 0 raises a RuntimeError naming
  rank 1 as gloo's does ("Rank 1 failed to pass monitoredBarrier in 500 ms"; it gave
  up after its wait, naming nobody) within about the timeout, with wait_all_ranks
  both ways, and rank 1 raises with rank 0's report; with rank 0 late, rank 1 gives
  up and rank 0, coming later, fails too instead of passing alone.
mode "strided" (2 ranks): non-contiguous tensors (transposed views, slices with a step)
  work as with gloo, and the results land in the caller's view: all_reduce (inline,
  async, coalesced), broadcast, reduce, all_gather (list, coalesced and into a tensor),
  reduce_scatter_tensor, scatter, all_to_all_single, send/recv and batch_isend_irecv
  (they raised "output is not contiguous"; the memory around a slice stays as it was),
  also views of an nn.Parameter (broadcast, all_reduce inline and async, a batch's
  irecv), which raised autograd's in-place error after the operation had run.
mode "interrupt" (2 ranks, group timeout 60 s): rank 0 gets SIGINT 1 s into a
  blocking dist.all_reduce that rank 1 has not joined: KeyboardInterrupt within 2.5 s
  (the library's interrupt check, HcclSetInterruptCheck), the communicator has failed
  (a later call says it was interrupted), and rank 1's all_reduce, made later, fails at
  once naming rank 0.
"""
import gc
import os
import re
import sys
import threading
import time
from datetime import timedelta

import common as C

if sys.argv[1] == "noarrive":
    os.environ.pop("HCCL_CONNECT_TIMEOUT", None)  # the group's timeout must bound the wait

import hccl  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def waits(r):
    for arg in (float("inf"), 1e300):
        t = torch.ones(2)
        if r == 1:
            time.sleep(0.5)
        w = dist.all_reduce(t, async_op=True)
        assert w.wait(arg if r == 0 else None) and t.tolist() == [2.0, 2.0], (arg, t)
    w = dist.all_reduce(torch.ones(2), async_op=True)
    try:
        w.wait(float("nan"))
        raise AssertionError("wait(nan) returned")
    except ValueError as e:
        assert "NaN" in str(e), e
    w.wait()
    C.ok("wait timeouts")


def averages(r):
    for dt, vals, want in ((torch.float32, [1, 2], 1.5), (torch.float16, [1, 2], 1.5),
                           (torch.bfloat16, [1, 2], 1.5), (torch.int32, [-1, -2], -2)):
        t = torch.full((5,), vals[r], dtype=dt)
        w = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
        while not w.is_completed():
            time.sleep(0.001)
        assert t.tolist() == [want] * 5, (dt, t)  # before any wait()
        w.wait()
        assert t.tolist() == [want] * 5, (dt, t)
        t = torch.full((5,), vals[r], dtype=dt)
        dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)  # dropped
        gc.collect()
        dist.barrier()
        assert t.tolist() == [want] * 5, (dt, t)
        out = torch.zeros(3, dtype=dt)
        w = dist.reduce_scatter_tensor(out, torch.full((6,), vals[r], dtype=dt), op=dist.ReduceOp.AVG,
                                       async_op=True)
        while not w.is_completed():
            time.sleep(0.001)
        assert out.tolist() == [want] * 3, (dt, out)
    C.ok("async AVG")
    lst = [torch.zeros(3) for _ in range(2)]
    w = dist.all_gather(lst, torch.full((3,), float(r + 1)), async_op=True)
    while not w.is_completed():
        time.sleep(0.001)
    assert [x.tolist() for x in lst] == [[1.0] * 3, [2.0] * 3], lst
    C.ok("async list all_gather")


def p2p_kinds(r):
    x, o = torch.arange(3.0) + 10, torch.zeros(3)
    if r == 0:
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, x, 1)]):
            w.wait()
        dist.recv(o, 1)
    else:
        dist.recv(o, 0)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, x, 0)]):
            w.wait()
    assert o.tolist() == [10.0, 11.0, 12.0], o
    # complex tensors, as gloo sends them (they raised "dtype torch.complex64, which HCCL
    # does not support"): plain, a strided view, and in a batch
    z = torch.tensor([1 + 2j, 3 - 1j, -5j, 7 + 0j])
    for dt in (torch.complex64, torch.complex128):
        got, grid = torch.zeros(4, dtype=dt), torch.zeros(2, 4, dtype=dt)
        batch = torch.zeros(4, dtype=dt)
        if r == 0:
            dist.send(z.to(dt), 1)
            dist.send(z.to(dt)[:2] * 2, 1)
        else:
            dist.recv(got, 0)
            dist.recv(grid[:, 1], 0)  # rows 0 and 1 of column 1: elements 0 and 1 of the message
        w = dist.batch_isend_irecv([dist.P2POp(dist.isend, z.to(dt) * (r + 3), 1 - r),
                                    dist.P2POp(dist.irecv, batch, 1 - r)])
        for x in w:
            x.wait()
        assert r == 0 or (torch.equal(got, z.to(dt)) and grid[:, 1].tolist() == [2 + 4j, 6 - 2j]
                          and grid[:, [0, 2, 3]].abs().sum() == 0), (got, grid)
        assert torch.equal(batch, z.to(dt) * (4 - r)), batch
    C.ok("batch vs plain p2p")


def dropped_lists(r):
    # A list-form all_gather / gather whose Work is dropped unwaited: its list is filled
    # once a later operation of the group (synchronous, or an async one waited on) is
    # done, as with gloo (it stayed empty while the group kept the Work).
    for later in ("all_reduce", "barrier", "async wait"):
        lst = [torch.zeros(3) for _ in range(2)]
        dist.all_gather(lst, torch.full((3,), float(r + 1)), async_op=True)
        gl = [torch.zeros(2) for _ in range(2)] if r == 0 else None
        dist.gather(torch.full((2,), float(r + 5)), gl, 0, async_op=True)
        if later == "all_reduce":
            dist.all_reduce(torch.ones(1))
        elif later == "barrier":
            dist.barrier()
        else:
            dist.all_reduce(torch.ones(1), async_op=True).wait()
        assert [x.tolist() for x in lst] == [[1.0] * 3, [2.0] * 3], (later, lst)
        assert r != 0 or [x.tolist() for x in gl] == [[5.0] * 2, [6.0] * 2], (later, gl)
    C.ok("dropped list forms")


def batch_futures(r):
    # Each batch's requests are Works of their own: the future of a second batch waits
    # for that batch (it once returned the first batch's completed future at once,
    # with the receive buffer still unfilled).
    s, o = torch.full((4,), float(r)), torch.zeros(4)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, s, 1 - r), dist.P2POp(dist.irecv, o, 1 - r)])
    reqs[0].get_future().wait()
    assert o.tolist() == [float(1 - r)] * 4, o
    if r == 0:
        o2 = torch.zeros(1 << 18)
        reqs2 = dist.batch_isend_irecv([dist.P2POp(dist.irecv, o2, 1)])
        assert reqs2[0] is not reqs[0]
        reqs2[0].get_future().wait()
        assert o2[0].item() == 1.0 and o2[-1].item() == 1.0, o2
    else:
        time.sleep(0.5)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(1 << 18), 0)]):
            w.wait()
    C.ok("batch futures")


def shorthand_methods(r):
    pg = dist.distributed_c10d._get_default_group()
    MAX = dist.ReduceOp.MAX
    t = torch.full((2,), r + 1.0)
    pg.allreduce(t, op=MAX).wait()
    assert t.tolist() == [2.0, 2.0], t
    t = torch.full((2,), float(r))
    pg.broadcast(t, root=1).wait()
    assert t.tolist() == [1.0, 1.0], t
    for args, kw, want in (((1, MAX), {}, 2.0), ((1,), {"op": MAX}, 2.0), ((), {"root": 1}, 3.0),
                           ((dist.ReduceOptions(),), {"root": 1, "op": MAX}, 2.0)):
        t = torch.full((2,), r + 1.0)
        pg.reduce(t, *args, **kw).wait()
        assert t.tolist() == ([want] * 2 if r == 1 else [r + 1.0] * 2), (args, kw, t)
    out = [torch.zeros(2) for _ in range(2)]
    pg.gather(out if r == 1 else [], torch.full((2,), float(r)), root=1).wait()
    if r == 1:
        assert [o.tolist() for o in out] == [[0.0, 0.0], [1.0, 1.0]], out
    t = torch.zeros(2)
    pg.scatter(t, [torch.full((2,), 5.0 + q) for q in range(2)] if r == 1 else [], root=1).wait()
    assert t.tolist() == [5.0 + r] * 2, t
    t = torch.zeros(2)
    pg.reduce_scatter(t, [torch.full((2,), float(q + r)) for q in range(2)], op=MAX).wait()
    assert t.tolist() == [r + 1.0] * 2, t
    C.ok("shorthand method forms")


def nested_future(r):
    done = threading.Event()

    def callback(f):
        inner = dist.all_reduce(f.value()[0] * 2, async_op=True).get_future().wait()[0]
        done.set()
        return inner

    if r == 1:
        time.sleep(0.3)
    fut = dist.all_reduce(torch.ones(2), async_op=True).get_future().then(callback)
    if not done.wait(15):
        print("rank %d: a callback's nested future never completed" % r, flush=True)
        os._exit(1)
    assert fut.wait().tolist() == [8.0, 8.0], fut.value()
    C.ok("future waited on inside a callback")


def group_churn(r):
    def threads():
        return sum(1 for t in threading.enumerate() if t.name == "hccl-completion")
    for _ in range(4):
        g = dist.new_group([0, 1], backend="hccl")
        t = torch.ones(2)
        dist.all_reduce(t, group=g, async_op=True).get_future().wait()
        assert t.tolist() == [2.0, 2.0], t
        dist.destroy_process_group(g)
        del g
        gc.collect()
    deadline = time.monotonic() + 5
    while threads() > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threads() == 0, threading.enumerate()
    C.ok("destroyed groups leave no threads")
    # The root info a group's rank 0 puts in the store is deleted once the group is
    # made (it held 4 KiB of the store server's memory per group for the job's life).
    from hccl import _torch_backend as B
    base = dist.distributed_c10d._get_default_store()
    dist.barrier()
    before = base.num_keys() if r == 0 else 0
    pg = B.ProcessGroupHCCL(dist.PrefixStore("churn/", base), r, 2, timedelta(seconds=30))
    assert r != 0 or base.num_keys() == before, (before, base.num_keys())
    dist.barrier()
    pg.comm.destroy()
    C.ok("the group's root info leaves the store")


def noarrive(r):
    if r == 2:
        time.sleep(12)
        print("rank 2: stayed away", flush=True)
        return
    t0 = time.monotonic()
    try:
        dist.init_process_group("hccl", timeout=timedelta(seconds=3))
        raise AssertionError("init returned without rank 2")
    except Exception as e:  # noqa: BLE001 - rank 1 may fail in torch's store first
        dt = time.monotonic() - t0
        assert dt < 20, dt
        if r == 0:
            assert isinstance(e, hccl.HcclError) and 2 in (e.peers or []) and "never arrived" in str(e), e
            print("rank 0: init failed after %.1f s: %s" % (dt, e), flush=True)
    C.ok("missing rank at init")
    C.report(r)


def refused(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=3))
    a = torch.ones(1)
    if r == 1:
        try:
            dist.all_reduce(a)
            raise AssertionError("rank 1's all_reduce returned")
        except hccl.HcclError as e:
            # its own timeout, or rank 0's abort when rank 0's Send timed out first (the
            # two 3 s timeouts start within a few ms of each other)
            assert e.code_name == "HCCL_E_TIMEOUT" or (
                e.code_name == "HCCL_E_REMOTE" and e.peers == [0]
                and re.search(r"rank 0 aborted: .*timed out", e.library_message or "")), e
        C.ok("refused")
        return C.report(r)
    w = dist.isend(torch.ones(1 << 20), 1)
    try:
        dist.all_reduce(a)
        raise AssertionError("rank 0's all_reduce returned")
    except hccl.HcclError as e:
        # the Send's failure: rank 1's abort, or its own timeout when that came first
        m = re.match(r"refused: the communicator failed earlier; the first failure, Send #\d+: (.*)",
                     e.library_message or "")
        assert m and "timed out" in m.group(1) and e.peers == [1], e
        # the headline says it was refused (it said "timed out ... waiting for rank 1,
        # which did not join this collective", as if the all_reduce itself had)
        assert str(e).startswith("hccl all_reduce refused on rank 0 (of 2): the communicator failed earlier"), e
        first = m.group(1)
    try:
        w.wait()
        raise AssertionError("the isend did not fail")
    except hccl.HcclError as e:
        assert e.library_message == first and e.peers == [1], (e, first)
    C.ok("refused")
    C.report(r)


def batchtimeout(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=2))
    if r == 0:
        ws = dist.batch_isend_irecv([dist.P2POp(dist.irecv, torch.zeros(2), 1)])
        try:
            ws[0].wait()
            raise AssertionError("a batch whose peer never sent completed")
        except hccl.HcclError as e:
            assert e.code_name == "HCCL_E_TIMEOUT" and e.peers == [1], e
            assert "waiting for rank 1, which did not join this transfer" in str(e), e
    else:
        time.sleep(3.5)
    C.ok("batch timeout")
    C.report(r)


def mismatch(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=10))
    # rank 0 expects 2 elements from itself but sends itself 1: the ranks' split sizes
    # disagree. Rank 0's error gives the algorithm's reason, not just "parameter error",
    # and rank 1's names rank 0's abort with that reason.
    osz = [2, 0] if r == 0 else [1, 1]
    try:
        dist.all_to_all_single(torch.zeros(2), torch.arange(2.0), osz, [1, 1])
        raise AssertionError("all_to_all_single with mismatched splits returned")
    except hccl.HcclError as e:
        why = "alltoall: rank 0 sends 1 elements to itself but expects 2"
        want = why if r == 0 else "rank 0 aborted: " + why
        assert (e.library_message or "").startswith(want) and e.peers == [1 - r], e
    C.ok("mismatched all_to_all splits")
    C.report(r)


def ddpfail(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=10))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model(torch.ones(2, 4)).sum().backward()  # one good step
    if r == 1:
        try:
            dist.broadcast(torch.ones(10), 0)
            raise AssertionError("a broadcast against an all_reduce returned")
        except hccl.HcclError as e:
            assert "mismatch" in (e.library_message or ""), e
    else:
        try:
            model(torch.ones(2, 4)).sum().backward()
            raise AssertionError("backward over a failed all_reduce returned")
        except RuntimeError as e:
            assert "mismatch" in str(e), e
        w = dist.all_reduce(torch.ones(1), async_op=True)
        fut = w.get_future().then(lambda f: f.value())
        try:
            fut.wait()
            raise AssertionError("a callback on a failed Work's future got a value")
        except RuntimeError as e:
            assert "hccl all_reduce refused on rank" in str(e), e  # the communicator failed earlier
    C.ok("a failed DDP all-reduce raises")
    C.report(r)


def interrupt(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=60))
    if r == 0:
        C.interrupted_by_sigint(lambda: dist.all_reduce(torch.ones(4)), hccl.HcclError)
        time.sleep(6)  # alive while rank 1 tries
    else:
        time.sleep(5)
        try:
            dist.all_reduce(torch.ones(4))
            raise AssertionError("all_reduce with an aborted peer returned")
        except hccl.HcclError as e:
            assert e.peers == [0] and "rank 0 aborted" in (e.library_message or ""), e
    C.ok("Ctrl-C interrupts a blocking collective")
    C.report(r)


def monitored(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=30))
    pg = dist.distributed_c10d._get_default_group()
    pg.monitored_barrier(timedelta(seconds=5))
    pg.monitored_barrier(timedelta(seconds=5), True)
    for wait_all in (False, True):
        if r == 1:
            time.sleep(1.5)
        t0 = time.monotonic()
        try:
            pg.monitored_barrier(timedelta(seconds=0.5), wait_all)
            raise AssertionError("monitored_barrier passed without rank 1 (%s, %.2f s)" % (wait_all, time.monotonic() - t0))
        except RuntimeError as e:
            dt = time.monotonic() - t0
            assert "Rank 1 failed to pass monitoredBarrier in 500 ms" in str(e), e
            assert dt < (2.0 if r == 0 else 0.5), dt  # rank 1 reads rank 0's report at once
        dist.barrier()
    if r == 0:
        time.sleep(2.5)
    try:
        pg.monitored_barrier(timedelta(seconds=0.5))
        raise AssertionError("monitored_barrier passed with rank 0 late")
    except RuntimeError as e:
        assert "rank 0 did not reach monitoredBarrier in 500 ms; rank 1 gave up" in str(e), e
    dist.barrier()
    pg.monitored_barrier(timedelta(seconds=5))  # fine again
    C.ok("monitored_barrier names the late rank")
    C.report(r)


def strided(r):
    dist.init_process_group("hccl", timeout=timedelta(seconds=30))
    n = 2

    def grid(k):  # a 3x4 grid per rank, passed transposed (4x3, strides (1, 4))
        return torch.arange(12, dtype=torch.float32).view(3, 4) * (k + 1)

    for mode in ("inline", "async"):
        base = grid(r)
        w = dist.all_reduce(base.t(), async_op=mode == "async")
        if w is not None:
            w.wait()
        assert torch.equal(base, grid(0) + grid(1)), (mode, base)
        b = grid(r)
        w = dist.broadcast(b.t(), src=1, async_op=mode == "async")
        if w is not None:
            w.wait()
        assert torch.equal(b, grid(1)), (mode, b)
    flat = torch.arange(12, dtype=torch.float32) * (r + 1)
    dist.all_reduce(flat[::2])  # only the even positions; the odd ones untouched
    exp = torch.arange(12, dtype=torch.float32) * (r + 1)
    exp[::2] = torch.arange(0, 12, 2, dtype=torch.float32) * 3
    assert torch.equal(flat, exp), flat
    bases = [grid(r), grid(r) + 1]
    dist.all_reduce_coalesced([x.t() for x in bases])
    assert torch.equal(bases[0], grid(0) + grid(1)) and torch.equal(bases[1], grid(0) + grid(1) + 2), bases
    lists = [[torch.zeros(3, 4).t(), torch.zeros(4)[::2]] for _ in range(n)]
    dist.all_gather_coalesced(lists, [grid(r).t(), (torch.arange(4, dtype=torch.float32) + r)[::2]])
    assert all(torch.equal(lists[q][0], grid(q).t()) and lists[q][1].tolist() == [q, q + 2.0] for q in range(n)), lists
    red = grid(r)
    dist.reduce(red.t(), dst=0)
    assert torch.equal(red, grid(0) + grid(1) if r == 0 else grid(r)), red
    outs = [torch.zeros(3, 4) for _ in range(n)]
    dist.all_gather([o.t() for o in outs], grid(r).t())
    assert all(torch.equal(outs[q], grid(q)) for q in range(n)), outs
    ag = torch.zeros(3, n * 4)  # its transpose (n*4 x 3) is the all_gather_into_tensor output
    dist.all_gather_into_tensor(ag.t(), grid(r).t())
    assert torch.equal(ag.t(), torch.cat([grid(q).t() for q in range(n)])), ag
    rs = torch.zeros(3, 2)
    inp = torch.arange(3 * 2 * n, dtype=torch.float32).view(3, 2 * n) * (r + 1)
    dist.reduce_scatter_tensor(rs.t(), inp.t())
    full = torch.arange(3 * 2 * n, dtype=torch.float32).view(3, 2 * n) * 3
    assert torch.equal(rs.t(), full.t()[2 * r:2 * r + 2]), rs
    sc = torch.zeros(3, 4)
    dist.scatter(sc.t(), [grid(q).t().contiguous() for q in range(n)] if r == 0 else None, src=0)
    assert torch.equal(sc, grid(r)), sc
    a2a = torch.zeros(3, n * 2)
    src = (torch.arange(3 * n * 2, dtype=torch.float32).view(3, n * 2) + 100 * r)
    dist.all_to_all_single(a2a.t(), src.t())
    exp = torch.cat([(torch.arange(3 * n * 2, dtype=torch.float32).view(3, n * 2) + 100 * q).t()[2 * r:2 * r + 2]
                     for q in range(n)])
    assert torch.equal(a2a.t(), exp), a2a
    rv = torch.zeros(3, 4)
    if r == 0:
        dist.send(grid(7).t(), 1)
        dist.recv(rv.t(), 1)
    else:
        dist.recv(rv.t(), 0)
        dist.send(grid(7).t(), 0)
    assert torch.equal(rv, grid(7)), rv
    rv = torch.zeros(3, 4)
    ops = [dist.P2POp(dist.isend, grid(r).t(), 1 - r), dist.P2POp(dist.irecv, rv.t(), 1 - r)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(rv, grid(1 - r)), rv
    # views of a tensor that requires grad (a transposed nn.Parameter), as gloo takes
    # them: the copy into the view raised "a view of a leaf Variable that requires grad
    # is being used in an in-place operation" after the operation had run
    for mode in ("inline", "async"):
        p = torch.nn.Parameter(grid(r))
        w = dist.broadcast(p.t(), src=1, async_op=mode == "async")
        if w is not None:
            w.wait()
        assert torch.equal(p.detach(), grid(1)) and p.requires_grad, (mode, p)
        p = torch.nn.Parameter(grid(r))
        w = dist.all_reduce(p.t(), async_op=mode == "async")
        if w is not None:
            w.wait()
        assert torch.equal(p.detach(), grid(0) + grid(1)), (mode, p)
    p = torch.nn.Parameter(torch.zeros(3, 4))
    ops = [dist.P2POp(dist.isend, grid(r).t(), 1 - r), dist.P2POp(dist.irecv, p.t(), 1 - r)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(p.detach(), grid(1 - r)), p
    dist.destroy_process_group()
    C.ok("strided views as outputs and inputs")
    C.report(r)


def main():
    if sys.argv[1] == "strided":
        return strided(int(os.environ["RANK"]))
    if sys.argv[1] == "monitored":
        return monitored(int(os.environ["RANK"]))
    if sys.argv[1] == "interrupt":
        return interrupt(int(os.environ["RANK"]))
    if sys.argv[1] == "ddpfail":
        return ddpfail(int(os.environ["RANK"]))
    if sys.argv[1] == "mismatch":
        return mismatch(int(os.environ["RANK"]))
    if sys.argv[1] == "noarrive":
        return noarrive(int(os.environ["RANK"]))
    if sys.argv[1] == "batchtimeout":
        return batchtimeout(int(os.environ["RANK"]))
    if sys.argv[1] == "refused":
        return refused(int(os.environ["RANK"]))
    dist.init_process_group("hccl", timeout=timedelta(seconds=30))
    r = dist.get_rank()
    waits(r)
    averages(r)
    p2p_kinds(r)
    dropped_lists(r)
    shorthand_methods(r)
    group_churn(r)
    batch_futures(r)  # after group_churn: its futures start the world group's completion thread
    nested_future(r)
    dist.destroy_process_group()
    C.report(r)


main()
