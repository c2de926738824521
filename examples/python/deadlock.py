"""The article's deadlock: one rank skips a collective.

    hcclrun -n 2 python3 examples/python/deadlock.py

Upstream this hangs until a 30-minute timeout with "RuntimeError: HCCL operation
timeout" and no word on who is missing. Here the waiting rank fails after
HCCL_EXEC_TIMEOUT seconds (5 in this example) with hccl.HcclError naming the rank it
waited for, and the library's own message. Rank 1 plays the buggy rank: it skips the
all_reduce and then waits (outside HCCL) until rank 0 has reported.
"""
import os
import sys
import time
from datetime import timedelta

os.environ.setdefault("HCCL_EXEC_TIMEOUT", "5")   # seconds; before the communicator exists

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import hccl  # noqa: E402


def main():
    dist.init_process_group(backend="hccl")
    rank = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()
    tensor = torch.ones(1024)
    if rank != 1:                       # the bug: rank 1 never calls this all_reduce
        t0 = time.monotonic()
        try:
            dist.all_reduce(tensor)
        except hccl.HcclError as e:
            print("rank %d: all_reduce failed after %.1f s instead of hanging:\n  %s\n  peers it waited for: %s"
                  % (rank, time.monotonic() - t0, e, e.peers), flush=True)
            store.set("reported", "1")
            sys.exit(0)
        print("rank %d: the all_reduce unexpectedly completed" % rank)
        sys.exit(1)
    store.wait(["reported"], timedelta(seconds=120))
    print("rank 1: skipped the collective; rank 0 reported it", flush=True)


if __name__ == "__main__":
    main()
