"""Rank script: DistributedDataParallel over the hccl backend trains to the same
parameters as over gloo. gloo is the default group; the hccl group comes from
dist.new_group(backend="hccl"). Two identical models (same seed) see the same
per-rank batches; after every step their parameters must agree (tolerance for the
order of summation), and after training they must match across ranks exactly.
Then the same with static_graph=True and a parameter the forward never uses: the
reducer keeps that step's Works and waits on them later (a Work dropped before that
wait hung it, or crashed). Then a sparse embedding (its gradient is a sparse tensor,
which the reducer all-reduces as it is: hccl refused it, gloo sums it). Then torch's
own DDP comm hooks with the hccl group as their state: fp16_compress_hook against
gloo's, and bf16_compress_hook (gloo cannot sum bfloat16) against a gloo hook that
rounds to bfloat16 the same way around an fp32 sum.
"""
import common as C
import hccl  # noqa: F401 - registers the backend
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(10, 32)
        self.b = torch.nn.Linear(32, 32)
        self.c = torch.nn.Linear(32, 3)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class Unused(Net):
    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Linear(32, 32)


def train(hg, r, n, cls, steps, hook=None, ref_hook=None, **ddp_args):
    torch.manual_seed(0)
    ref = cls()
    mine = cls()
    mine.load_state_dict(ref.state_dict())
    # small buckets so several allreduces overlap with the backward pass
    dg = torch.nn.parallel.DistributedDataParallel(ref, bucket_cap_mb=0.002, **ddp_args)
    dh = torch.nn.parallel.DistributedDataParallel(mine, process_group=hg, bucket_cap_mb=0.002, **ddp_args)
    if hook is not None:
        dg.register_comm_hook(None, ref_hook or hook)
        dh.register_comm_hook(hg, hook)
    og = torch.optim.SGD(dg.parameters(), lr=0.05, momentum=0.9)
    oh = torch.optim.SGD(dh.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + r)
    for step in range(steps):
        x = torch.randn(16, 10, generator=gen)
        y = torch.randint(0, 3, (16,), generator=gen)
        for model, opt in ((dg, og), (dh, oh)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        for pg_, ph in zip(ref.parameters(), mine.parameters()):
            assert torch.allclose(pg_, ph, rtol=1e-5, atol=1e-6), (step, (pg_ - ph).abs().max())
    # the hccl-trained parameters are identical on every rank
    flat = torch.cat([p.detach().reshape(-1) for p in mine.parameters()])
    everyone = [torch.zeros_like(flat) for _ in range(n)]
    dist.all_gather(everyone, flat, group=hg)
    for q in range(n):
        assert torch.equal(everyone[q], flat), q


class SparseEmb(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.e = torch.nn.Embedding(50, 8, sparse=True)
        self.c = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.c(self.e(x).mean(1))


def train_sparse(hg, r, n, steps):
    torch.manual_seed(0)
    ref, mine = SparseEmb(), SparseEmb()
    mine.load_state_dict(ref.state_dict())
    dg = torch.nn.parallel.DistributedDataParallel(ref)
    dh = torch.nn.parallel.DistributedDataParallel(mine, process_group=hg)
    og = torch.optim.SGD(dg.parameters(), lr=0.1)
    oh = torch.optim.SGD(dh.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(200 + r)
    for step in range(steps):
        x = torch.randint(0, 50, (6, 4), generator=gen)
        y = torch.randint(0, 3, (6,), generator=gen)
        for model, opt in ((dg, og), (dh, oh)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        for pg_, ph in zip(ref.parameters(), mine.parameters()):
            assert torch.allclose(pg_, ph, rtol=1e-5, atol=1e-6), (step, (pg_ - ph).abs().max())
    # dist.all_reduce of a sparse tensor: the same sum as gloo's, SUM only
    i = torch.tensor([[r, 2, r + 1], [0, 1, 2]])
    sg = torch.sparse_coo_tensor(i, torch.tensor([1.0, 2.0, 3.0]) * (r + 1), (n + 2, 3))
    sh = sg.clone()
    dist.all_reduce(sg)
    dist.all_reduce(sh, group=hg)
    assert sh.is_sparse and torch.equal(sg.to_dense(), sh.to_dense()), (sg, sh)
    try:
        dist.all_reduce(sh, op=dist.ReduceOp.MAX, group=hg)
        raise AssertionError("sparse MAX accepted")
    except ValueError as e:
        assert "ReduceOp.SUM" in str(e), e


def bf16_hook(state, bucket):
    # torch 1.13's DDP refuses a hook *named* bf16_compress_hook unless it was built
    # with NCCL; the hook itself runs on any backend that sums bfloat16
    return default_hooks.bf16_compress_hook(state, bucket)


def bf16_reference(state, bucket):
    """bf16_compress_hook's arithmetic over gloo: each rank's bfloat16 share, summed in
    fp32 (exact for two ranks' bfloat16 values), rounded to bfloat16 once."""
    buf = bucket.buffer()
    share = buf.to(torch.bfloat16).div_(dist.get_world_size()).float()
    fut = dist.all_reduce(share, async_op=True).get_future()

    def back(f):
        buf.copy_(f.value()[0].to(torch.bfloat16))
        return buf
    return fut.then(back)


def main():
    dist.init_process_group("gloo")
    r, n = dist.get_rank(), dist.get_world_size()
    hg = dist.new_group(list(range(n)), backend="hccl")
    assert dist.get_backend(hg) == "hccl"
    train(hg, r, n, Net, 12)
    C.ok("ddp equals gloo")
    train(hg, r, n, Unused, 40, static_graph=True)
    C.ok("ddp with a static graph and an unused parameter equals gloo")
    train_sparse(hg, r, n, 5)
    C.ok("ddp with sparse gradients equals gloo")
    train(hg, r, n, Net, 12, hook=default_hooks.fp16_compress_hook)
    C.ok("ddp with torch's fp16_compress_hook equals gloo")
    train(hg, r, n, Net, 12, hook=bf16_hook, ref_hook=bf16_reference)
    C.ok("ddp with torch's bf16_compress_hook equals its arithmetic over gloo")
    dist.destroy_process_group()
    C.report(r)


C.main_guard(main)
