"""Rank script (3 ranks): sub-communicators from hccl.new_group.

  nested   ranks 0 and 1 make a group of the world, then a group of that group (only
           its members call it, as documented); a later new_group of the world must
           still match on every rank (ids count per parent group, not per process).
  missing  rank 1 never calls new_group([0, 1]): rank 0 fails after
           HCCL_CONNECT_TIMEOUT with an error that names that timeout and rank 1.
"""
import sys
import time

import numpy as np

import common as C
import hccl


def main():
    mode = sys.argv[1]
    comm = hccl.init()
    r = comm.rank
    if mode == "nested":
        sub = hccl.new_group([0, 1])
        assert (sub is None) == (r == 2), (r, sub)
        if sub is not None:
            inner = hccl.new_group([1, 0], group=sub)
            x = np.full(2, float(r + 1), np.float32)
            hccl.all_reduce(x, group=inner)
            assert x.tolist() == [3.0, 3.0], x
        g = hccl.new_group([0, 2])
        if r != 1:
            x = np.full(2, float(r + 1), np.float32)
            hccl.all_reduce(x, group=g)
            assert x.tolist() == [4.0, 4.0], x
        C.ok("nested groups")
    elif mode == "missing":
        if r == 0:
            t0 = time.monotonic()
            try:
                hccl.new_group([0, 1])
                raise AssertionError("new_group without rank 1 returned")
            except hccl.HcclError as e:
                dt = time.monotonic() - t0
                assert e.code_name == "HCCL_E_TIMEOUT" and e.peers == [1], (e.peers, e)
                assert "HCCL_CONNECT_TIMEOUT=3 s" in str(e) and "HCCL_EXEC_TIMEOUT" not in str(e), e
                assert 2 < dt < 15, dt
        elif r == 2:
            assert hccl.new_group([0, 1]) is None
        C.ok("a member missing")
    C.report(r)


C.main_guard(main)
