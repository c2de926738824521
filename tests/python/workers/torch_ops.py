"""Rank script: hccl with torch CPU tensors (every torch dtype incl. bf16/fp16/bool),
then the same suite through torch.distributed with backend "hccl" (env:// or, with
argument `tcp`, tcp://), subgroups from dist.new_group, and hccl.* on dist groups."""
import os
import sys
from datetime import timedelta

import common as C
import hccl
import torch
import torch.distributed as dist


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "env"
    r, n = C.env_rank()
    ad = C.TorchAdapter()
    if mode == "tcp":
        url = "tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
        dist.init_process_group("hccl", init_method=url, rank=r, world_size=n, timeout=timedelta(seconds=60))
    else:
        dist.init_process_group("hccl")
    assert dist.get_backend() == "hccl", dist.get_backend()
    assert dist.get_rank() == r and dist.get_world_size() == n
    # -- hccl.* on torch tensors (default group = dist's world)
    C.check_all_reduce_dtypes(hccl, ad, r, n)
    for dt in ("bfloat16", "int64", "bool"):
        C.check_collectives(hccl, ad, r, n, dt=dt)
    C.check_p2p(hccl, ad, r, n, dt="float16")
    C.check_async(hccl, ad, r, n, dt="bfloat16")
    # -- torch.distributed on the hccl backend
    C.check_all_reduce_dtypes(dist, ad, r, n)
    for dt in ("float32", "bfloat16", "int32"):
        C.check_collectives(dist, ad, r, n, dt=dt)
    C.check_p2p(dist, ad, r, n, dt="float32")
    C.check_async(dist, ad, r, n, dt="float32")
    # Work API and futures
    t = torch.full((4,), float(r + 1))
    w = dist.all_reduce(t, async_op=True)
    fut = w.get_future()
    res = fut.wait()
    assert torch.equal(res[0], torch.full((4,), float(n * (n + 1) // 2))), res
    assert w.is_completed() and w.is_success() and w.exception() is None
    assert w.wait(timeout=timedelta(seconds=30))
    C.ok("work/future")
    # parameters in place, hccl.all_reduce with group=dist.group.WORLD (the article)
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.full((3,), float(r))
    hccl.all_reduce(p.grad, op=hccl.ReduceOp.SUM, group=dist.group.WORLD)
    assert p.grad.tolist() == [float(sum(range(n)))] * 3
    h = hccl.all_reduce(p.grad, op=hccl.ReduceOp.AVG, async_op=True)
    h.wait()
    assert p.grad.tolist() == [float(sum(range(n)))] * 3
    C.ok("article calls")
    # subgroups: even ranks, and a group of all ranks in reverse order
    evens = list(range(0, n, 2))
    g = dist.new_group(evens)
    rev = dist.new_group(list(reversed(range(n))))
    if r in evens:
        x = torch.tensor([float(r)])
        dist.all_reduce(x, group=g)
        assert x.item() == sum(evens)
        y = torch.tensor([float(r)])
        hccl.all_reduce(y, group=g)
        assert y.item() == sum(evens)
        b = torch.tensor([float(r)])
        dist.broadcast(b, src=evens[-1], group=g)  # global rank as src
        assert b.item() == evens[-1]
        b.fill_(float(r))
        hccl.broadcast(b, src=evens[-1], group=g)  # global rank as src, like torch
        assert b.item() == evens[-1]
    else:
        assert g == dist.GroupMember.NON_GROUP_MEMBER
    z = torch.tensor([float(r)])
    dist.broadcast(z, src=n - 1, group=rev)
    assert z.item() == n - 1
    outs = [torch.zeros(1) for _ in range(n)]
    dist.all_gather(outs, torch.tensor([float(r)]), group=rev)
    assert [o.item() for o in outs] == [float(q) for q in range(n)], outs  # torch sorts group ranks
    C.check_collectives(dist, ad, dist.get_rank(rev), n, group=rev)
    C.ok("new_group")
    dist.barrier()
    dist.destroy_process_group()
    C.report(r)


C.main_guard(main)
