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
    # all_gather_coalesced: output_tensor_lists[rank][i] gets rank's input i (sizes differ)
    ins = [torch.full((2, 2), float(r)), torch.full((1,), 10.0 + r), torch.full((3,), 20.0 + r)]
    outs = [[torch.full_like(t, -1.0) for t in ins] for _ in range(n)]
    w = dist.all_gather_coalesced(outs, ins, async_op=True)
    w.wait()
    for q in range(n):
        assert torch.equal(outs[q][0], torch.full((2, 2), float(q))), (q, outs[q])
        assert torch.equal(outs[q][1], torch.full((1,), 10.0 + q)) and torch.equal(outs[q][2], torch.full((3,), 20.0 + q))
    # a list entry of another size fails on every rank before anything moves
    try:
        dist.all_gather([torch.zeros(4)] + [torch.zeros(3)] * (n - 1), torch.zeros(4))
        raise AssertionError("all_gather with a wrong-size entry did not raise")
    except ValueError as e:
        assert "tensor_list[1] has 3 elements, the tensor has 4" in str(e), e
    try:
        dist.reduce_scatter(torch.zeros(2), [torch.zeros(2)] * (n - 1) + [torch.zeros(5)])
        raise AssertionError("reduce_scatter with a wrong-size entry did not raise")
    except ValueError as e:
        assert "has 5 elements, the tensor has 2" in str(e), e
    dist.barrier()
    C.ok("list forms")
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
