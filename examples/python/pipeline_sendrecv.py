"""Model parallelism: a two-stage pipeline over send/recv (hccl.send / hccl.recv).

    hcclrun -n 2 python3 examples/python/pipeline_sendrecv.py

Rank 0 holds the first layer, rank 1 the second. For each micro-batch rank 0 sends
its activations forward; rank 1 computes the loss and sends the gradient of the
activations back, so rank 0 can finish backward. The result is checked against the
same model run in one process.
"""
import torch
import torch.distributed as dist

import hccl


def main():
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2, "this example pipelines over exactly 2 ranks"
    torch.manual_seed(0)
    l1, l2 = torch.nn.Linear(6, 12), torch.nn.Linear(12, 1)  # same init on both ranks
    ref1, ref2 = torch.nn.Linear(6, 12), torch.nn.Linear(12, 1)
    ref1.load_state_dict(l1.state_dict())
    ref2.load_state_dict(l2.state_dict())
    stage = l1 if rank == 0 else l2
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    ropt = torch.optim.SGD(list(ref1.parameters()) + list(ref2.parameters()), lr=0.1)
    gen = torch.Generator().manual_seed(7)
    for step in range(5):
        opt.zero_grad()
        ropt.zero_grad()
        for micro in range(4):
            x = torch.randn(8, 6, generator=gen)
            y = torch.randn(8, 1, generator=gen)
            if rank == 0:
                act = torch.relu(l1(x))
                hccl.send(act.detach(), dst=1)             # forward: activations to stage 2
                grad = torch.empty_like(act)
                hccl.recv(grad, src=1)                     # backward: gradient from stage 2
                act.backward(grad)
            else:
                act = torch.empty(8, 12)
                hccl.recv(act, src=0)
                act.requires_grad_(True)
                loss = torch.nn.functional.mse_loss(l2(act), y)
                loss.backward()
                hccl.send(act.grad, dst=0)
            # reference on one process
            torch.nn.functional.mse_loss(ref2(torch.relu(ref1(x))), y).backward()
        opt.step()
        ropt.step()
    ref = ref1 if rank == 0 else ref2
    for p, q in zip(stage.parameters(), ref.parameters()):
        assert torch.allclose(p, q, atol=1e-6), (p - q).abs().max()
    print("rank %d: pipeline stage %d matches the single-process model after 5 steps" % (rank, rank + 1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
