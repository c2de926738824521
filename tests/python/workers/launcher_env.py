"""Rank script started by hand (no hcclrun) with only a launcher's variables:
hccl.init() must find rank and size through HcclCommInitFromEnv."""
import os

import numpy as np

import hccl

c = hccl.init()
want_rank = int(os.environ["EXPECT_RANK"])
assert c.rank == want_rank and c.size == 2, (c.rank, c.size)
a = np.array([c.rank + 1.0])
hccl.all_reduce(a)
assert a[0] == 3.0, a
print("rank %d via %s ok" % (c.rank, os.environ["LAUNCHER"]), flush=True)
hccl.destroy()
