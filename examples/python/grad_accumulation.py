"""Gradient accumulation: sum gradients of several micro-batches locally, then one
all_reduce per parameter (hccl.all_reduce with ReduceOp.AVG), as the article does.

    hcclrun -n 2 python3 examples/python/grad_accumulation.py

Checked against the gradient of the whole global batch computed in one process.
"""
import torch
import torch.distributed as dist

import hccl

ACCUM = 4


def main():
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    ref = torch.nn.Linear(5, 3)
    ref.load_state_dict(model.state_dict())
    gen = torch.Generator().manual_seed(3)
    batches = [(torch.randn(4, 5, generator=gen), torch.randn(4, 3, generator=gen)) for _ in range(world * ACCUM)]
    mine = batches[rank * ACCUM:(rank + 1) * ACCUM]
    model.zero_grad()
    for x, y in mine:                                    # local accumulation, no communication
        (torch.nn.functional.mse_loss(model(x), y) / ACCUM).backward()
    for p in model.parameters():                         # one all_reduce per parameter
        hccl.all_reduce(p.grad, op=hccl.ReduceOp.AVG, group=dist.group.WORLD)
    for x, y in batches:                                 # reference: the whole batch
        (torch.nn.functional.mse_loss(ref(x), y) / (ACCUM * world)).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-6), (p.grad - q.grad).abs().max()
    print("rank %d: accumulated gradient of %d micro-batches x %d ranks matches the global batch"
          % (rank, ACCUM, world))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
