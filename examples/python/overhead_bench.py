"""Overhead of the Python call path: a small all_reduce through hccl.* and dist.*
against the same call made from C.

    hcclrun -n 1 python3 examples/python/overhead_bench.py   # call overhead alone (1 rank, no network)
    hcclrun -n 2 python3 examples/python/overhead_bench.py   # small-message latency between 2 ranks

Variants, each an in-place SUM all_reduce of --count float32 elements, timed over
--iters back-to-back calls, repeated --rounds times in interleaved order (the
median round is reported; rank 0 prints):

  C HcclAllReduce(stream=NULL)   a C loop in the extension (Comm._bench_c_allreduce):
                                 the library call Python's synchronous path makes
  C HcclAllReduce+SyncStream     the usual C pattern: enqueue on a stream, synchronize
  hccl.all_reduce(numpy)         the hccl package with a NumPy array
  hccl.all_reduce(torch)         the hccl package with a torch tensor
  hccl.all_reduce(async)+wait    async_op=True handle, then wait()
  dist.all_reduce(torch)         torch.distributed with backend "hccl"
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist

import hccl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=256)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="few iterations (for the test suite)")
    a = ap.parse_args()
    if a.quick:
        a.iters, a.rounds = 200, 2
    torch.set_num_threads(1)
    dist.init_process_group("hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = dist.distributed_c10d._get_default_group().comm
    x = np.zeros(a.count, np.float32)
    t = torch.zeros(a.count)
    n = a.iters

    def loop(fn):
        def run():
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            return time.perf_counter() - t0
        return run

    def async_wait():
        hccl.all_reduce(t, async_op=True).wait()

    variants = [
        ("C HcclAllReduce(stream=NULL)", lambda: comm._bench_c_allreduce(x, n, 0)),
        ("C HcclAllReduce+SyncStream", lambda: comm._bench_c_allreduce(x, n, 1)),
        ("hccl.all_reduce(numpy)", loop(lambda: hccl.all_reduce(x))),
        ("hccl.all_reduce(torch)", loop(lambda: hccl.all_reduce(t))),
        ("hccl.all_reduce(async)+wait", loop(async_wait)),
        ("dist.all_reduce(torch)", loop(lambda: dist.all_reduce(t))),
    ]
    for _, fn in variants:  # warm up every path (streams, caches, torch dispatch)
        comm.barrier(False)
        fn()
    samples = {name: [] for name, _ in variants}
    for rnd in range(a.rounds):
        order = variants if rnd % 2 == 0 else list(reversed(variants))
        for name, fn in order:
            comm.barrier(False)
            samples[name].append(fn() / n * 1e6)
    med = {k: statistics.median(v) for k, v in samples.items()}
    if rank == 0:
        base = med["C HcclAllReduce(stream=NULL)"]
        print("# all_reduce of %d float32 (%d bytes), %d rank(s), median of %d rounds x %d calls"
              % (a.count, a.count * 4, world, a.rounds, n))
        print("| path | us/call | over C (us) | ratio |")
        print("|---|---:|---:|---:|")
        for name, _ in variants:
            print("| %s | %.2f | %+.2f | %.2f |" % (name, med[name], med[name] - base, med[name] / base))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
