"""Data-parallel training with DistributedDataParallel on the hccl backend.

    hcclrun -n 2 python3 examples/python/ddp_train.py      # or: torchrun --nproc_per_node 2 ...

Each rank trains on its own shard of a synthetic regression problem; DDP averages the
gradients with hccl all_reduce during backward. At the end every rank holds the same
parameters and the loss has dropped.
"""
import torch
import torch.distributed as dist

import hccl  # noqa: F401  (registers the "hccl" backend)


def main():
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.randn(8, 1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own data shard
    first = last = None
    for step in range(60):
        x = torch.randn(32, 8, generator=gen)
        y = x @ true_w
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
    # every rank must hold the same parameters
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    assert torch.equal(flat, ref), "parameters differ between ranks"
    assert last < first * 0.5, (first, last)
    print("rank %d/%d: loss %.4f -> %.4f, parameters identical on all ranks" % (rank, world, first, last))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
