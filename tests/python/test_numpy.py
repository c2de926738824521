"""hccl with NumPy arrays across processes (2, 3 and 4 ranks under hcclrun)."""
import pytest

import launch


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_numpy_all_functions(nranks):
    r = launch.run(nranks, launch.worker("np_ops.py"), timeout=120)
    for q in range(nranks):
        assert "rank %d: 34 checks passed" % q in r.out, r


def test_library_error_mismatch():
    r = launch.run(2, launch.worker("errors.py"), "mismatch", timeout=60)
    assert "library: operation mismatch" in r.out, r
    assert r.out.count("checks passed") == 2, r


def test_library_error_timeout():
    r = launch.run(2, launch.worker("errors.py"), "timeout", timeout=60)
    assert "waiting for rank 1" in r.out and "HCCL_E_TIMEOUT" in r.out, r
