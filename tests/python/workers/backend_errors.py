"""Rank script: torch.distributed Work objects over the hccl backend report errors and
time out. The group timeout (5 s) becomes the communicator's execution timeout.

rank 0: an async all_reduce that rank 1 skips -> wait(timeout=0.3 s) gives up (the
operation keeps running), wait() then fails with HCCL_E_TIMEOUT naming rank 1,
exception() returns it, get_future() fails, and the next call fails at once.
rank 1: waits on the torch store until rank 0 is done.
"""
import time
from datetime import timedelta

import common as C
import hccl
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("hccl", timeout=timedelta(seconds=5))
    r = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()
    if r == 0:
        t = torch.ones(8)
        t0 = time.monotonic()
        w = dist.all_reduce(t, async_op=True)
        try:
            w.wait(timeout=timedelta(seconds=0.3))
            raise AssertionError("wait(timeout) returned")
        except RuntimeError as e:
            assert isinstance(e, hccl.HcclError) and "gave up" in str(e), e
        assert not w.is_completed()
        try:
            w.wait()
            raise AssertionError("the skipped collective did not fail")
        except hccl.HcclError as e:
            dt = time.monotonic() - t0
            assert e.code_name == "HCCL_E_TIMEOUT" and e.peers == [1] and "rank 1" in str(e), e
            assert 3 <= dt < 30, dt
            print("rank 0: Work.wait failed after %.1f s: %s" % (dt, str(e).splitlines()[0]), flush=True)
        assert w.is_completed() and not w.is_success()
        assert isinstance(w.exception(), hccl.HcclError)
        fut = w.get_future()
        try:
            fut.wait()
            raise AssertionError("future of a failed Work completed")
        except RuntimeError as e:
            assert "timed out" in str(e), e
        try:
            dist.all_reduce(torch.ones(2))
            raise AssertionError("a broken communicator accepted an operation")
        except hccl.HcclError as e:
            assert "failed earlier" in (e.library_message or "") or e.code != 0, e
        C.ok("work errors")
        store.set("rank0_done", "1")
    else:
        store.wait(["rank0_done"], timedelta(seconds=60))
        C.ok("skipped")
    C.report(r)


C.main_guard(main)
