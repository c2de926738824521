"""The torch.distributed backend "hccl": a ProcessGroup subclass written in Python.

torch (1.13 and later) lets Python subclass torch._C._distributed_c10d.ProcessGroup
and Work: calls from Python (dist.all_reduce, ...) find the Python methods directly,
and calls from C++ (DistributedDataParallel's reducer: allreduce, broadcast,
allgather; Work.wait and Work.get_future) go through torch's pybind trampolines
(PyProcessGroup / PyWork). Backend.register_backend("hccl", creator) makes
init_process_group("hccl") and new_group() call the creator with a per-group
PrefixStore: rank 0 of the group calls HcclGetRootInfo and store.set()s the blob, the
others store.get() it, and everyone calls HcclCommInitRootInfo; rank 0 then deletes the
key (every rank has read it by the time its communicator is made).

Every operation is queued on the communicator's stream and returns a WorkHCCL (torch
waits on it at once when async_op=False). get_future() completes a
torch.futures.Future from a per-group completion thread. Timeouts: the group's timeout
(init_process_group(timeout=...)) becomes the communicator's execution timeout unless
HCCL_EXEC_TIMEOUT is set, and is the default limit of Work.wait().

Newer torch releases register backends per device and expect a c10d Backend object;
register() adapts where the API shows it (guarded with hasattr), but only torch 1.13
is tested here.
"""

import atexit
import collections
import os
import queue
import sys
import threading
import time as _time
import weakref
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as _c10d

from . import _api, _hccl
from ._api import HcclError

_BaseWork = _c10d.Work
# torch >= 2.0 splits ProcessGroup (frontend) from Backend (the implementation) and
# registers backends per device; a Python subclass of _c10d.Backend is what it expects.
_NEW_API = hasattr(_c10d, "Backend") and hasattr(_c10d.ProcessGroup, "_register_backend")
_BasePG = _c10d.Backend if _NEW_API else _c10d.ProcessGroup

BACKEND_NAME = "hccl"
_WAIT_GRACE_S = 10.0
_MB_GRACE_S = 1.0  # monitored_barrier: how much longer the other ranks wait for rank 0's answer
# Completed Works nobody has waited on that a group keeps before it drops the oldest
# (see ProcessGroupHCCL._work).
_LIVE_CAP = 4096


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        s = timeout.total_seconds()
    else:
        s = float(timeout)
    return None if s <= 0 else s


class WorkHCCL(_BaseWork):
    """torch Work over an hccl.Work: wait(timeout) raises on failure or timeout;
    get_future() returns a torch.futures.Future of the output tensors."""

    def __init__(self, pg, work, outputs):
        super().__init__()
        self._pg = weakref.ref(pg)  # no cycle: the group keeps its recent Works alive
        self._timeout_s = pg._timeout_s
        self._work = work  # hccl.Work, or None when there is nothing to wait for
        self._outputs = outputs
        self._fut = None
        self._consumed = False
        self._pinned = False  # handed to a caller other than torch.distributed's Python

    def _bind(self, work):
        """Coalesced point-to-point: the batch's handle arrives at _end_coalescing."""
        self._work = work

    def wait(self, timeout=None):
        self._consumed = True
        t = _seconds(timeout)
        if t is None and self._timeout_s:
            # The communicator itself fails the operation after the group's timeout
            # (its execution timeout) and names the missing ranks; the grace lets
            # that report arrive first.
            t = self._timeout_s + _WAIT_GRACE_S
        if self._work is None:
            if getattr(self, "_pending_batch", False):
                raise RuntimeError("hccl: wait() on an operation queued inside a coalescing block that was never ended")
            return True
        r = self._work.wait(t)
        pg = self._pg()
        if pg is not None and pg._posts:
            pg._fill_lists()
        return r

    def is_completed(self):
        return self._work is None or self._work.is_completed()

    def is_success(self):
        if not self.is_completed():
            raise RuntimeError("hccl: is_success() on an operation that is still running")
        return self.exception() is None

    def exception(self):
        return None if self._work is None else self._work.exception()

    def result(self):
        return list(self._outputs)

    def source_rank(self):
        raise RuntimeError("hccl: source_rank() is only defined for recv from any source, which hccl does not support")

    def synchronize(self):
        self.wait()

    def get_future(self):
        self._consumed = True
        if self._fut is None:
            # The future handed out follows the one completed here through then(), so
            # that a failure reaches it as an error: set_exception stores the
            # exception as the future's value, which C++ readers (DDP's reducer) take
            # for the result and crash on (they look for its tensors).
            src = torch.futures.Future()
            self._fut = src.then(_value)
            if self._pinned:
                # Called from C++ (DDP's reducer, its built-in FP16_COMPRESS hook): a
                # future of torch's type List[Tensor] whose value is a TensorList, as
                # gloo's is; a Python future holds a Python object, which C++ readers
                # such as the FP16 hook's decompression assert against.
                self._fut = _typed_future(self._fut, self._outputs)
            pg = self._pg()
            if self.is_completed() or pg is None or getattr(_in_completion, "active", False):
                # A future's callback, run by a completion thread, that asks for a
                # future (PowerSGD's hook waits on it there) gets it completed here:
                # queued, it would wait for the thread that is running the callback.
                _complete(self, src)
            else:
                pg._completion_queue().put((self, src))
        return self._fut


_TYPED_SRC = """
def wait_then(fut: Future[List[Tensor]], out: List[Tensor]) -> List[Tensor]:
    fut.wait()
    return out

def typed(fut: Future[List[Tensor]], out: List[Tensor]) -> Future[List[Tensor]]:
    return torch.jit._fork(wait_then, fut, out)
"""
_typed_cu = None


def _typed_future(fut, outputs):
    """A future of type List[Tensor] that completes with `outputs` once `fut` does (or
    with its error): a TorchScript fork that waits on `fut` (suspended, not blocking a
    thread) and returns the tensors. Compiled from a string (no source file needed) on
    first use; where TorchScript cannot do it, `fut` itself."""
    global _typed_cu
    if _typed_cu is None:
        try:
            _typed_cu = torch.jit.CompilationUnit(_TYPED_SRC)
        except Exception:  # noqa: BLE001 - the Python future still works for Python readers
            _typed_cu = False
    if _typed_cu is False:
        return fut
    return _typed_cu.typed(fut, list(outputs))


def _value(fut):
    return fut.value()  # raises the operation's failure: then() makes it the error


def _complete(work, fut):
    try:
        work.wait()
    except BaseException as e:  # noqa: B902 - the future carries any failure
        fut.set_exception(e)
        return
    fut.set_result(list(work._outputs))


_completion_threads = []
_in_completion = threading.local()  # .active: this thread is a group's completion thread


@atexit.register
def _stop_completion_threads():
    # A daemon thread still inside torch's C++ (a future's callbacks) when the
    # interpreter finalizes is unwound by pthread_exit through noexcept frames, which
    # aborts the process: stop them while Python still runs.
    while _completion_threads:
        q, t = _completion_threads.pop()
        q.put(None)
        t.join(timeout=10)


def _completion_loop(q):
    _in_completion.active = True
    while True:
        item = q.get()
        if item is None:
            return
        _complete(*item)
        item = None  # the Work holds the communicator: not until the next one comes


def _stop_completion(q):
    """The group is gone (destroy_process_group): its completion thread ends. It stays
    in _completion_threads until it has, so that the exit still joins it while it may
    be inside a future's callbacks (see _stop_completion_threads)."""
    q.put(None)


_C10D_FILE = getattr(sys.modules.get("torch.distributed.distributed_c10d"), "__file__", None)


def _caller_locals():
    """The locals of torch.distributed's own function that called the method calling
    this (None for any other caller: user code, C++ such as DDP's reducer)."""
    try:
        f = sys._getframe(2)
    except ValueError:
        return None
    return f.f_locals if f.f_code.co_filename == _C10D_FILE else None


def _from_c10d(frame):
    """True when the method whose frame this is was called by torch.distributed's own
    Python (directly, or through the group's helpers such as _p2p)."""
    f = frame.f_back
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    return f is not None and f.f_code.co_filename == _C10D_FILE


def _caller_waits(loc):
    """True when torch.distributed's function was called with async_op=False: it waits
    at once, so the operation runs inline (GIL released) instead of through the
    stream, which saves a thread hand-off per call."""
    return loc is not None and loc.get("async_op", True) is False


# torch ReduceOp objects -> hccl op code. Reading opts.reduceOp through pybind costs
# several microseconds, so the hot path takes the `op` argument from the caller's
# frame and caches codes by object identity (the ReduceOp.SUM etc. singletons).
_op_cache = {}


def _op_from(loc, opts):
    op = loc.get("op") if loc is not None else None
    if op is None:
        if opts is None:
            return 0
        op = opts if not hasattr(opts, "reduceOp") else opts.reduceOp
    e = _op_cache.get(id(op))
    if e is not None and e[0] is op:
        return e[1]
    code = _api._op_code(op)
    if len(_op_cache) < 64:
        _op_cache[id(op)] = (op, code)
    return code


def _tensors(x):
    return [x] if isinstance(x, torch.Tensor) else list(x)


def _one(tensors, what):
    t = _tensors(tensors)
    if len(t) != 1:
        raise ValueError("hccl: %s takes one tensor per process (got %d)" % (what, len(t)))
    return t[0]


def _dense(t):
    """An input as the library takes it: a strided view (a transposed tensor, a slice
    with a step) as a contiguous copy. gloo accepts such tensors; hccl's own API
    refuses them (it would have to copy silently), but torch.distributed's caller
    expects gloo's behaviour."""
    return t if t.is_contiguous() else t.contiguous()


# An output the library writes: t itself, or a contiguous copy of a strided view, which
# _land copies back into the view once the operation is done.
_staged = _dense


def _copy_into(view, buf):
    """view.copy_(buf) outside autograd: the collective writes memory as gloo does,
    also into a view of a tensor that requires grad (a transposed nn.Parameter), where
    an in-place copy under autograd raises. no_grad is per thread: the copy may run in
    the thread that waits or in the group's completion thread."""
    with torch.no_grad():
        view.copy_(buf)


def _land(work, view, buf):
    """The result in buf goes into the caller's strided view: at once when the
    operation ran synchronously (work is None), else when its hccl.Work finishes
    (after the Work's own post, which fills list outputs). Returns the Work to use."""
    if view is buf:
        return work
    if work is None:
        _copy_into(view, buf)
        return None
    post = work._post
    work._post = None  # the new Work runs it (and the old one, dropped, must not wait)

    def copy_back():
        if post is not None:
            post()
        _copy_into(view, buf)
    return _api.Work(work._h, copy_back, work._outputs)


def _opt(opts, attr, default):
    if opts is None:
        return default
    return getattr(opts, attr, default)


def _root(opts, root):
    """The root of broadcast/reduce/gather/scatter: an options object's rootRank, or
    an int (torch's shorthand bindings), positional or the `root=` keyword."""
    if root is not None:
        return root
    return opts if isinstance(opts, int) else _opt(opts, "rootRank", 0)


_TIMEOUT_MAX_S = 10 ** 9  # the library's longest timeout (31 years)


class ProcessGroupHCCL(_BasePG):
    """A torch.distributed process group over one HCCL communicator."""

    _is_hccl_pg = True

    def __init__(self, store, rank, size, timeout=timedelta(minutes=30), comm=None):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._timeout_s = _seconds(timeout)
        self._cq = None
        self._coalesced = None
        self._live = collections.deque()
        self._posts = collections.deque()  # list-form hccl.Works whose lists are not filled yet
        self._posts_lock = threading.Lock()  # the completion thread's wait() fills them too
        self._done = WorkHCCL(self, None, [])  # returned by operations that ran inline
        self._store = store  # monitored_barrier's channel
        self._mb_seq = 0
        if comm is None:
            exec_timeout = -1
            if "HCCL_EXEC_TIMEOUT" not in os.environ and self._timeout_s:
                exec_timeout = min(max(1, int(self._timeout_s + 0.999)), _TIMEOUT_MAX_S)
            if "HCCL_CONNECT_TIMEOUT" not in os.environ and self._timeout_s:
                # The group's timeout also bounds the wait for the other ranks at
                # creation, as with torch's own backends. The library reads the
                # variable once: the first group's timeout holds for the process.
                os.environ["HCCL_CONNECT_TIMEOUT"] = str(min(max(1, int(self._timeout_s + 0.999)), _TIMEOUT_MAX_S))
            _api._spin_defaults()
            key = "hccl_root_info"
            if rank == 0:
                info = _hccl.get_root_info()
                store.set(key, info)
            else:
                info = store.get(key)
            comm = _hccl.comm_init_root_info(size, bytes(info), rank, exec_timeout)
            if rank == 0:
                # Every rank read the root info before it joined, so the key (4 KiB a
                # group, held by the store's server on rank 0 for the job's life) goes.
                try:
                    store.delete_key(key)
                except Exception:  # noqa: BLE001 - a store that cannot delete keeps it
                    pass
        self.comm = comm
        comm._pg_ref = weakref.ref(self)

    # -- names
    def getBackendName(self):
        return BACKEND_NAME

    def name(self):
        return BACKEND_NAME

    def _group_rank(self, global_rank):
        """global rank -> rank in this group (torch's convention for src/dst)."""
        ranks = _api._global_ranks(self.comm)
        if ranks is None:
            return global_rank
        try:
            return ranks.index(global_rank)
        except ValueError:
            raise ValueError("hccl: rank %d is not in this group (ranks %s)" % (global_rank, ranks)) from None

    def _completion_queue(self):
        if self._cq is None:
            self._cq = queue.SimpleQueue()
            t = threading.Thread(target=_completion_loop, args=(self._cq,), daemon=True, name="hccl-completion")
            t.start()
            _completion_threads[:] = [e for e in _completion_threads if e[1].is_alive()]
            _completion_threads.append((self._cq, t))
            weakref.finalize(self, _stop_completion, self._cq)
        return self._cq

    def _work(self, work, outputs):
        if work is None:  # ran inline: torch only waits on it
            if self._posts:
                self._fill_lists()
            return self._done
        # Keep each Work's Python object alive while C++ may still call it: a Work
        # returned to C++ (DDP's reducer) loses its Python overrides (wait,
        # get_future) once the Python object dies, and a wait then never returns.
        # C++ holds no Python reference, so a Work that torch.distributed's Python
        # did not ask for (C++, or a direct call) is pinned: dropped once completed
        # and waited on / turned into a future. The others go once completed and
        # either consumed or referenced by nobody else (the caller let go). Past
        # _LIVE_CAP Works, completed ones go from the front whatever they are.
        live = self._live
        while live:
            w = live[0]
            if not w.is_completed():
                break
            if not (w._consumed or len(live) > _LIVE_CAP or (not w._pinned and sys.getrefcount(w) <= 3)):
                break
            live.popleft()
        w = WorkHCCL(self, work, outputs)
        w._pinned = not _from_c10d(sys._getframe(1))
        live.append(w)
        for x in getattr(work, "_works", None) or [work]:  # a _Chain's, or the one
            if getattr(x, "_post", None) is not None:
                self._posts.append(x)
        return w

    def _fill_lists(self):
        """An operation of this group finished, so every earlier one has (one in-order
        stream): fill the lists of earlier list-form operations (all_gather, gather,
        all_to_all into lists) that nobody waited on, as gloo's would be by now. Their
        hccl.Work fills its list in the is_completed() that first finds it done."""
        if not self._posts_lock.acquire(blocking=False):
            return  # another thread is filling them
        try:
            posts = self._posts
            while posts and posts[0].is_completed():
                posts.popleft()
        finally:
            self._posts_lock.release()

    # -- collectives
    # The methods also take the shorthand forms of torch's bindings, positional or by
    # keyword: allreduce(tensor, op), broadcast(tensor, root), reduce(tensor, root, op),
    # gather(outputs, tensor, root), scatter(output, inputs, root),
    # reduce_scatter(output, inputs, op).
    def allreduce(self, tensors, opts=None, op=None):
        loc = _caller_locals()
        t = tensors[0] if type(tensors) is list and len(tensors) == 1 else _one(tensors, "allreduce")
        code = _op_from(loc, opts if op is None else op)
        if t.is_sparse:
            return self._sparse_allreduce(t, code)
        b = _staged(t)
        if _caller_waits(loc):
            self.comm.all_reduce(b, b, code, False)  # AVG (4) included: the extension divides
            _land(None, t, b)
            if self._posts:
                self._fill_lists()
            return self._done
        return self._work(_land(_api.all_reduce(b, code, self.comm, True), t, b), [t])

    def _sparse_allreduce(self, t, code):
        """A sparse COO tensor (DDP's gradient of nn.Embedding(sparse=True)), as gloo
        does it: every rank's indices and values are gathered and summed, in rank order
        (the same sum everywhere), into t. Runs at once; the Work is complete."""
        if code != 0:
            raise ValueError("hccl: allreduce of sparse tensors only works with ReduceOp.SUM")
        x = t.coalesce()
        idx, val = x._indices(), x._values()
        n = self._size
        meta = torch.tensor([idx.shape[1], x.sparse_dim()] + list(x.shape), dtype=torch.int64)
        metas = torch.empty(n * meta.numel(), dtype=torch.int64)
        self.comm.all_gather(meta, metas, False)
        metas = metas.view(n, -1)
        for q in range(n):
            if not torch.equal(metas[q, 1:], meta[1:]):
                raise ValueError("hccl: allreduce of a sparse tensor of size %s (sparse dims %d) on rank %d, but "
                                 "of size %s (sparse dims %d) on rank %d" % (list(x.shape), x.sparse_dim(), self._rank,
                                 metas[q, 2:].tolist(), int(metas[q, 1]), q))
        counts = metas[:, 0].tolist()
        most = max(counts)
        pidx = idx.new_zeros((idx.shape[0], most))
        pidx[:, :idx.shape[1]] = idx
        pval = val.new_zeros((most,) + tuple(val.shape[1:]))
        pval[:val.shape[0]] = val
        aidx = pidx.new_empty((n,) + tuple(pidx.shape))
        aval = pval.new_empty((n,) + tuple(pval.shape))
        self.comm.all_gather(pidx.contiguous(), aidx, False)
        self.comm.all_gather(pval.contiguous(), aval, False)
        out = None
        for q in range(n):
            s = torch.sparse_coo_tensor(aidx[q, :, :counts[q]], aval[q, :counts[q]], x.shape)
            out = s if out is None else out + s
        t.copy_(out.coalesce())
        # a Work of its own: DDP's reducer reads the result from its future
        w = WorkHCCL(self, None, [t])
        w._pinned = True
        self._live.append(w)
        return w

    def allreduce_coalesced(self, tensors, opts=None):
        a = True
        op = _op_from(None, opts)
        works = []
        for t in tensors:
            b = _staged(t)
            works.append(_land(_api.all_reduce(b, op, self.comm, a), t, b))
        return self._work(_Chain(works), list(tensors))

    def broadcast(self, tensors, opts=None, root=None):
        a = not _caller_waits(_caller_locals())
        t = _one(tensors, "broadcast")
        root = _root(opts, root)
        b = _staged(t)
        return self._work(_land(_api.broadcast(b, root, self.comm, a), t, b), [t])

    def reduce(self, tensors, opts=None, op=None, root=None):
        a = not _caller_waits(_caller_locals())
        t = _one(tensors, "reduce")
        root = _root(opts, root)
        if op is None and not isinstance(opts, int):  # not reduce(tensor, root, op=SUM)
            op = opts  # the options object's reduceOp (None: SUM)
        op = _op_from(None, op)
        b = _staged(t)
        return self._work(_land(_api.reduce(b, root, op, self.comm, a), t, b), [t])

    def allgather(self, output_tensors, input_tensors, opts=None):
        a = not _caller_waits(_caller_locals())
        t = _dense(_one(input_tensors, "allgather"))
        outs = output_tensors[0] if output_tensors and isinstance(output_tensors[0], (list, tuple)) else output_tensors
        return self._work(_api.all_gather(list(outs), t, self.comm, a), list(outs))

    def _allgather_base(self, output, input, opts=None):
        a = not _caller_waits(_caller_locals())
        b = _staged(output)
        return self._work(_land(_api.all_gather(b, _dense(input), self.comm, a), output, b), [output])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        a = True
        works = []
        for o, i in zip(outputs, inputs):
            b = _staged(o)
            works.append(_land(_api.all_gather(b, _dense(i), self.comm, a), o, b))
        return self._work(_Chain(works), list(outputs))

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        # torch's layout: output_lists[rank][i] receives that rank's input_list[i]
        n, k = self._size, len(input_list)
        if len(output_lists) != n or any(len(o) != k for o in output_lists):
            raise ValueError("hccl all_gather_coalesced: output_tensor_lists must hold %d lists (one per rank) of "
                             "%d tensors (one per input); got lists of %s" % (n, k, [len(o) for o in output_lists]))
        a = True
        works = [_api.all_gather([output_lists[q][i] for q in range(n)], _dense(t), self.comm, a)
                 for i, t in enumerate(input_list)]
        return self._work(_Chain(works), [t for o in output_lists for t in o])

    def gather(self, output_tensors, input_tensors, opts=None, root=None):
        a = not _caller_waits(_caller_locals())
        t = _dense(_one(input_tensors, "gather"))
        root = _root(opts, root)
        # as torch's backends: the list on the root only (the API refuses one elsewhere)
        outs = output_tensors[0] if output_tensors and isinstance(output_tensors[0], (list, tuple)) \
            else output_tensors
        outs = list(outs or [])
        if self.comm.rank != root and not outs:
            outs = None
        return self._work(_api.gather(t, outs, root, self.comm, a), outs or [])

    def scatter(self, output_tensors, input_tensors, opts=None, root=None):
        a = not _caller_waits(_caller_locals())
        t = _one(output_tensors, "scatter")
        root = _root(opts, root)
        ins = input_tensors[0] if input_tensors and isinstance(input_tensors[0], (list, tuple)) else input_tensors
        ins = list(ins or [])
        if self.comm.rank != root and not ins:
            ins = None
        b = _staged(t)
        return self._work(_land(_api.scatter(b, ins, root, self.comm, a), t, b), [t])

    def reduce_scatter(self, output_tensors, input_tensors, opts=None, op=None):
        a = not _caller_waits(_caller_locals())
        t = _one(output_tensors, "reduce_scatter")
        ins = input_tensors[0] if input_tensors and isinstance(input_tensors[0], (list, tuple)) else input_tensors
        op = _op_from(None, opts if op is None else op)
        b = _staged(t)
        return self._work(_land(_api.reduce_scatter(b, list(ins), op, self.comm, a), t, b), [t])

    def _reduce_scatter_base(self, output, input, opts=None):
        a = not _caller_waits(_caller_locals())
        op = _op_from(None, opts)
        b = _staged(output)
        return self._work(_land(_api.reduce_scatter(b, _dense(input), op, self.comm, a), output, b), [output])

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        a = True
        op = _op_from(None, opts)
        works = []
        for o, i in zip(outputs, inputs):
            b = _staged(o)
            works.append(_land(_api.reduce_scatter(b, _dense(i), op, self.comm, a), o, b))
        return self._work(_Chain(works), list(outputs))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        a = not _caller_waits(_caller_locals())
        osz = list(output_split_sizes) or None
        isz = list(input_split_sizes) or None
        b = _staged(output)
        return self._work(_land(_api.all_to_all_single(b, _dense(input), osz, isz, self.comm, a), output, b),
                          [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        a = not _caller_waits(_caller_locals())
        return self._work(_api.all_to_all(list(output_tensors), list(input_tensors), self.comm, a),
                          list(output_tensors))

    def barrier(self, opts=None):
        a = not _caller_waits(_caller_locals())
        return self._work(_api.barrier(self.comm, a), [])

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """gloo's monitored barrier, over the group's store (the communicator is not
        involved, so a late rank leaves nothing queued on it): every rank counts itself
        in under its key, rank 0 waits for them until `timeout` (the group's by
        default) and raises a RuntimeError naming the first rank missing (every one
        with wait_all_ranks); the others wait for rank 0's answer (the timeout and a
        second's grace, so that rank 0's report reaches them) and raise with it. The
        answer is set once (compare_set): a rank that gives up on a late rank 0 makes
        rank 0 fail too. The keys are polled (add(key, 0)): a TCPStore wait() that
        timed out leaves its request behind, and the next wait() returns at once."""
        t = _seconds(timeout) or self._timeout_s or 1800.0
        store = self._store
        if store is None:  # a group made around an existing communicator
            return _api.barrier(self.comm, True).wait(t)
        self._mb_seq += 1
        key = "hccl_monitored_barrier/%d/" % self._mb_seq
        ranks = _api._global_ranks(self.comm) or list(range(self._size))
        me = ranks[self._rank]
        ms = int(t * 1000)
        if self._rank != 0:
            store.add(key + str(self._rank), 1)
            _poll(store, key + "posted", _time.monotonic() + t + _MB_GRACE_S)
            why = "rank %d did not reach monitoredBarrier in %d ms; rank %d gave up" % (ranks[0], ms, me)
            answer = store.compare_set(key + "done", "", why.encode())
            if answer != b"ok":
                store.add(key + "posted", 1)
                raise RuntimeError("[Rank %d]: Rank %d successfully reached monitoredBarrier, but rank %d did not pass "
                                   "it: %s" % (me, me, ranks[0], answer.decode(errors="replace")))
            return
        deadline = _time.monotonic() + t
        missing = []
        for q in range(1, self._size):
            if not _poll(store, key + str(q), deadline):
                missing.append(ranks[q])
                if not wait_all_ranks:
                    break
        msg = "%s %s failed to pass monitoredBarrier in %d ms" % (
            "Ranks" if len(missing) > 1 else "Rank", ", ".join(map(str, missing)), ms)
        answer = store.compare_set(key + "done", "", msg.encode() if missing else b"ok")
        store.add(key + "posted", 1)
        if answer != b"ok":
            raise RuntimeError("[Rank %d]: %s" % (me, answer.decode(errors="replace")))
        for q in range(1, self._size):
            store.delete_key(key + str(q))
        if self._mb_seq > 1:  # every rank read the previous answer before it came here
            for k in ("done", "posted"):
                store.delete_key("hccl_monitored_barrier/%d/%s" % (self._mb_seq - 1, k))

    # -- point to point (coalesced into one HcclBatchSendRecv inside batch_isend_irecv)
    def _p2p(self, tensors, peer, is_recv):
        t = _one(tensors, "recv" if is_recv else "send")
        # A complex tensor moves as its (real, imag) pairs, as gloo's send/recv move it
        # (HCCL has no complex type; nothing is computed on it).
        v = torch.view_as_real(t) if t.is_complex() else t
        b = _staged(v)  # a send's strided view is only read: a copy is all it needs
        if self._coalesced is not None:
            # A Work of its own (not the shared one of inline operations): _end_coalescing
            # binds it to this batch, and its future must wait for this batch.
            w = WorkHCCL(self, None, [t])
            w._pending_batch = True
            self._coalesced.append((is_recv, b, peer, w, v))
            return w
        if is_recv:
            return self._work(_land(_api.Work(self.comm.recv(b, peer, True), None, [b]), v, b), [t])
        return self._work(_api.Work(self.comm.send(b, peer, True), None, [b]), [t])

    def send(self, tensors, dstRank, tag=0):
        return self._p2p(tensors, dstRank, False)

    def recv(self, tensors, srcRank, tag=0):
        return self._p2p(tensors, srcRank, True)

    def recv_anysource(self, tensors, tag=0):
        raise RuntimeError("hccl: recv from any source is not supported; pass src=")

    def _start_coalescing(self, *args):
        if self._coalesced is not None:
            raise RuntimeError("hccl: coalescing blocks cannot nest")
        self._coalesced = []

    def _end_coalescing(self, *args):
        items, self._coalesced = self._coalesced or [], None
        if not items:
            return None
        h = self.comm.batch_send_recv([(r, b, p) for r, b, p, _, _ in items], True)
        staged = [(t, b) for r, b, _, _, t in items if r and b is not t]
        post = None
        if staged:
            def post():
                for t, b in staged:
                    _copy_into(t, b)
        work = _api.Work(h, post, [t for _, _, _, _, t in items])
        for _, _, _, w, _ in items:
            w._pending_batch = False
            w._bind(work)
        return self._work(work, [t for _, _, _, _, t in items])

    def __repr__(self):
        return "<ProcessGroupHCCL rank %d of %d>" % (self._rank, self._size)


def _poll(store, key, deadline):
    """True once the counter `key` of the store is above 0; False at the deadline
    (polled at least once)."""
    pause = 0.001
    while store.add(key, 0) <= 0:
        left = deadline - _time.monotonic()
        if left <= 0:
            return False
        _time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    return True


class _Chain:
    """Several hccl.Work waited for in order (coalesced collectives)."""

    def __init__(self, works):
        self._works = [w for w in works if w is not None]

    def wait(self, timeout=None):
        for w in self._works:
            w.wait(timeout)
        return True

    def is_completed(self):
        return all(w.is_completed() for w in self._works)

    def exception(self):
        for w in self._works:
            e = w.exception()
            if e is not None:
                return e
        return None


def _create(store, rank, size, timeout):
    return ProcessGroupHCCL(store, rank, size, timeout)


def _create_extended(opts, pg_options=None):
    return ProcessGroupHCCL(opts.store, opts.group_rank, opts.group_size, opts.timeout)


_registered = False


def register():
    """Registers "hccl" with torch.distributed.Backend (done by `import hccl`)."""
    global _registered
    if _registered:
        return
    if not dist.is_available():
        return
    B = dist.Backend
    if getattr(B, "HCCL", None) is not None and "HCCL" in getattr(B, "_plugins", {}):
        _registered = True
        return
    import inspect
    params = inspect.signature(B.register_backend).parameters
    if "devices" in params:  # torch >= 2.1: per-device registration
        B.register_backend(BACKEND_NAME, _create, extended_api=False, devices=["cpu"])
    else:
        B.register_backend(BACKEND_NAME, _create)
    _registered = True


__all__ = ["ProcessGroupHCCL", "WorkHCCL", "register", "HcclError"]

# Whoever imports this module registers the backend, also when its own `import
# torch.distributed` above is what triggered hccl's import hook (the hook then found
# this module half-loaded and left the registration to this line).
register()
