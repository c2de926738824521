"""Every script of examples/python, run with 2 ranks under hcclrun."""
import pytest

import launch

EXPECT = {
    "ddp_train.py": "parameters identical on all ranks",
    "pipeline_sendrecv.py": "matches the single-process model",
    "grad_accumulation.py": "matches the global batch",
    "async_overlap.py": "overlapped with compute",
    "group_allreduce.py": "= flat all_reduce",
}


@pytest.mark.parametrize("script", sorted(EXPECT))
def test_example(script):
    r = launch.run(2, launch.example(script), timeout=150)
    assert r.out.count(EXPECT[script]) == 2, r


def test_deadlock_example_fails_fast_naming_the_rank():
    r = launch.run(2, launch.example("deadlock.py"), timeout=120)
    assert "all_reduce failed after" in r.out, r
    assert "waiting for rank 1" in r.out and "HCCL_E_TIMEOUT" in r.out, r
    assert "library: " in r.out and "receive from rank 1" in r.out, r
    assert "peers it waited for: [1]" in r.out, r
    assert "rank 0 reported it" in r.out, r


def test_overhead_bench_quick():
    r = launch.run(2, launch.example("overhead_bench.py"), "--quick", timeout=150)
    assert "hccl.all_reduce" in r.out and "dist.all_reduce" in r.out and "C HcclAllReduce" in r.out, r
