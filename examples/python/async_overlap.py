"""Overlap communication with computation: start an asynchronous all_reduce of each
gradient as soon as it is ready, keep computing, wait at the end.

    hcclrun -n 2 python3 examples/python/async_overlap.py

h = hccl.all_reduce(param.grad, op=hccl.ReduceOp.SUM, async_op=True); ...; h.wait()
The all_reduces run on the communicator's stream while Python keeps computing (the
GIL is released while waiting). Results are checked, and the overlap is measured.
"""
import time

import torch
import torch.distributed as dist

import hccl


def compute(seconds):
    """Stand-in for the next layer's work (a loop of small matrix products)."""
    a = torch.randn(64, 64)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a = torch.tanh(a @ a)
    return a


def main():
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    grads = [torch.full((50_000,), float(rank + i)) for i in range(6)]
    handles = []
    t0 = time.perf_counter()
    for g in grads:                      # as if backward produced them one by one
        handles.append(hccl.all_reduce(g, op=hccl.ReduceOp.SUM, async_op=True))
        compute(0.002)
    pending = sum(not h.is_completed() for h in handles)
    for h in handles:
        h.wait()
    elapsed = time.perf_counter() - t0
    total = sum(range(world))
    for i, g in enumerate(grads):
        want = float(total + world * i)
        assert torch.all(g == want), (i, g[:4], want)
    print("rank %d: 6 async all_reduces overlapped with compute in %.1f ms (%d still running when compute ended)"
          % (rank, elapsed * 1e3, pending))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
