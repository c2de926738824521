"""Intra-group and inter-group all_reduce with dist.new_group.

    hcclrun -n 4 python3 examples/python/group_allreduce.py    # also fine with 2 ranks

Ranks are split into "nodes" of G ranks (G = 2 with 4+ ranks, else 1). A hierarchical
all_reduce sums inside each node (intra group), then across nodes among ranks with the
same local index (inter group); the result equals one flat all_reduce.
"""
import torch
import torch.distributed as dist

import hccl


def main():
    dist.init_process_group(backend="hccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    G = 2 if world >= 4 and world % 2 == 0 else 1
    intra = {}
    inter = {}
    # every rank creates every group (torch requires it), then uses its own
    for node in range(world // G):
        ranks = list(range(node * G, (node + 1) * G))
        g = dist.new_group(ranks=ranks)
        if rank in ranks:
            intra = g
    for local in range(G):
        ranks = list(range(local, world, G))
        g = dist.new_group(ranks=ranks)
        if rank in ranks:
            inter = g
    t = torch.arange(4, dtype=torch.float32) + rank
    flat = t.clone()
    hccl.all_reduce(flat, group=dist.group.WORLD)
    hccl.all_reduce(t, group=intra)          # inside the node
    hccl.all_reduce(t, group=inter)          # across nodes
    assert torch.equal(t, flat), (t, flat)
    print("rank %d: intra-group (%s) then inter-group (%s) all_reduce = flat all_reduce %s"
          % (rank, dist.get_process_group_ranks(intra), dist.get_process_group_ranks(inter), t.tolist()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
