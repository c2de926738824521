"""hccl: HCCL collectives for Python, and a torch.distributed backend named "hccl".

    import hccl
    hccl.init()                                   # from torchrun/hcclrun/Slurm/mpirun variables
    hccl.all_reduce(t, op=hccl.ReduceOp.SUM)      # torch CPU tensor or NumPy array, in place
    h = hccl.all_reduce(t, async_op=True); h.wait()

    import torch.distributed as dist
    dist.init_process_group("hccl")              # env:// or tcp://; works after `import hccl`
    model = torch.nn.parallel.DistributedDataParallel(model)

`import hccl` does not import torch: the backend is registered as soon as
torch.distributed is (or already was) imported. See docs/python.md.
"""

import sys as _sys

from ._api import (  # noqa: F401
    Comm, Handle, HcclError, ReduceOp, Work, P2POp,
    init, is_initialized, get_rank, get_world_size, new_group, destroy,
    all_reduce, broadcast, reduce, all_gather, all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor,
    gather, scatter, all_to_all, all_to_all_single, all_to_all_v, all_gather_v, reduce_scatter_v, barrier,
    send, recv, isend, irecv, batch_isend_irecv,
)
from ._hccl import get_root_info, comm_init_root_info, comm_init_all, error_string  # noqa: F401

__all__ = [
    "Comm", "Handle", "HcclError", "ReduceOp", "Work", "P2POp",
    "init", "is_initialized", "get_rank", "get_world_size", "new_group", "destroy",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "all_to_all_v",
    "all_gather_v", "reduce_scatter_v", "barrier", "send", "recv", "isend", "irecv", "batch_isend_irecv",
    "get_root_info", "comm_init_root_info", "comm_init_all", "error_string", "ProcessGroupHCCL",
]

__version__ = "0.1.0"


def _register_torch_backend():
    """Registers the "hccl" backend with torch.distributed (idempotent). The module
    registers itself when its import completes; one being imported right now (its
    `import torch.distributed` ran this hook) is left to do so."""
    half = _sys.modules.get(__name__ + "._torch_backend")
    if half is not None and not hasattr(half, "register"):
        return
    from . import _torch_backend
    _torch_backend.register()


def __getattr__(name):
    if name == "ProcessGroupHCCL":
        from ._torch_backend import ProcessGroupHCCL
        return ProcessGroupHCCL
    raise AttributeError("module 'hccl' has no attribute %r" % name)


class _TorchDistributedHook:
    """A meta-path finder that registers the backend right after torch.distributed is
    imported, so `import hccl` stays cheap for NumPy users and import order does not
    matter."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch.distributed":
            return None
        import importlib.util
        _sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            pass
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                _register_torch_backend()
            except Exception as e:  # never break torch's import
                import warnings
                warnings.warn("hccl: could not register the torch.distributed backend: %s" % e)

        loader.exec_module = exec_module
        return spec


if "torch.distributed" in _sys.modules:
    _register_torch_backend()
else:
    _sys.meta_path.insert(0, _TorchDistributedHook())
