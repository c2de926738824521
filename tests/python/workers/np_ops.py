"""Rank script: hccl with NumPy arrays (every function, every dtype, async handles),
communicator from the launcher's environment (hccl.init)."""
import numpy as np

import common as C
import hccl


def main():
    comm = hccl.init()
    r, n = comm.rank, comm.size
    assert (r, n) == C.env_rank()
    assert "torch" not in __import__("sys").modules, "import hccl must not import torch"
    ad = C.NumpyAdapter()
    C.check_all_reduce_dtypes(hccl, ad, r, n)
    for dt in ("float32", "int32", "uint8", "float16"):
        C.check_collectives(hccl, ad, r, n, dt=dt)
    C.check_p2p(hccl, ad, r, n)
    C.check_async(hccl, ad, r, n)
    # group=Comm explicitly; V forms on flat buffers
    k = [q + 1 for q in range(n)]
    out = np.zeros(sum(k), np.int64)
    hccl.all_gather_v(out, np.full(k[r], r, np.int64), k, group=comm)
    assert out.tolist() == [q for q in range(n) for _ in range(k[q])], out
    inp = np.arange(sum(k), dtype=np.float64)
    o = np.zeros(k[r])
    hccl.reduce_scatter_v(o, inp, k, op=hccl.ReduceOp.SUM, group=comm)
    off = sum(k[:r])
    assert o.tolist() == (inp[off:off + k[r]] * n).tolist(), o
    sc = [1] * n
    rc = [1] * n
    o = np.zeros(n, np.int32)
    hccl.all_to_all_v(o, np.arange(n, dtype=np.int32) + 10 * r, rc, sc, group=comm)
    assert o.tolist() == [10 * q + r for q in range(n)], o
    C.ok("v forms")
    # sub-communicator of the even ranks
    evens = list(range(0, n, 2))
    sub = hccl.new_group(evens)
    if r % 2 == 0:
        assert sub.size == len(evens) and sub.global_ranks == evens
        a = np.array([r], np.int64)
        hccl.all_reduce(a, group=sub)
        assert a[0] == sum(evens), a
        sub.destroy()
    else:
        assert sub is None
    C.ok("new_group")
    # zero-element tensors, 2-D arrays, bytearray/memoryview/array.array objects
    hccl.all_reduce(np.zeros(0, np.float32))
    m = np.ones((3, 4), np.float32)
    hccl.all_reduce(m)
    assert (m == n).all()
    ba = bytearray([r + 1] * 4)
    hccl.all_reduce(ba, op=hccl.ReduceOp.MAX)
    assert list(ba) == [n] * 4
    import array
    arr = array.array("d", [1.5, 2.5])
    hccl.all_reduce(arr)
    assert list(arr) == [1.5 * n, 2.5 * n]
    C.ok("buffer kinds")
    hccl.barrier()
    hccl.destroy()
    C.report(r)


C.main_guard(main)
