"""The torch.distributed-style functions of the ``hccl`` package.

Every function takes torch CPU tensors or NumPy arrays (anything with the buffer
protocol or ``__array_interface__``), works in place like torch.distributed, and takes
``group=`` as a torch ProcessGroup of the "hccl" backend, an :class:`hccl.Comm`, or
None (the default group: torch's default process group when it uses this backend,
otherwise the communicator made by :func:`init`).

Ranks given as ``src``/``dst``/``peer`` are global ranks when ``group`` is a torch
process group (torch's convention) and communicator ranks when it is an hccl.Comm.

Failures raise :class:`HcclError` (a RuntimeError) with ``code`` (the HcclResult),
``op``, ``rank`` and a message naming the ranks the operation waited for.
"""

import enum
import numbers
import operator
import os
import re
import threading
import weakref
from datetime import timedelta

from . import _hccl

Comm = _hccl.Comm
Handle = _hccl.Handle

# ---------------------------------------------------------------- waiting

_SPIN_VARS = ("HCCL_NET_SPIN_US", "ACL_HOST_SPIN_US")
_LOCAL_SIZE_VARS = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")


def _local_ranks():
    """Ranks the launcher started on this machine (0 when it does not say)."""
    for var in _LOCAL_SIZE_VARS:
        v = os.environ.get(var, "")
        if v.isdigit():
            return int(v)
    return 0


def _cpu_list(text):
    """'0-3,8,10-11' (a Cpus_allowed_list) -> set of CPU numbers; ValueError if garbled."""
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def _cpus():
    """CPUs the launcher's ranks on this machine may share: this process's affinity
    mask joined with its parent's (the launcher's). A launcher that binds each rank to
    a core of its own (mpirun's default for 2 ranks, hcclrun --bind-to core, srun
    --cpu-bind) keeps the whole set itself, so ranks bound one per core do not count as
    more ranks than CPUs."""
    try:
        mine = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
    try:
        with open("/proc/%d/status" % os.getppid()) as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    mine |= _cpu_list(line.split(":", 1)[1])
                    break
    except (OSError, ValueError):
        pass
    return len(mine)


def _spin_defaults():
    """Before the first communicator: when the launcher started more ranks on this
    machine than they have CPUs (_cpus), a rank that busy-polls while it waits for a
    peer holds a CPU that some peer needs in order to reach the same collective, so
    every wait takes longer (Open MPI yields when oversubscribed for the same reason).
    Then the library's spin tunables (HCCL_NET_SPIN_US, ACL_HOST_SPIN_US) default to 0:
    a waiting thread sleeps at once and is woken by the data. Variables the user set
    are left alone. The library reads them once, so this must run before it does."""
    local = _local_ranks()
    if local <= _cpus():
        return
    for var in _SPIN_VARS:
        if not os.environ.get(var):
            os.environ[var] = "0"


# ---------------------------------------------------------------- errors

_CODE_NAMES = {
    0: "HCCL_SUCCESS", 1: "HCCL_E_PARA", 2: "HCCL_E_PTR", 3: "HCCL_E_MEMORY", 4: "HCCL_E_INTERNAL",
    5: "HCCL_E_NOT_SUPPORT", 6: "HCCL_E_NOT_FOUND", 7: "HCCL_E_UNAVAIL", 8: "HCCL_E_SYSCALL",
    9: "HCCL_E_TIMEOUT", 10: "HCCL_E_OPEN_FILE_FAILURE", 11: "HCCL_E_TCP_CONNECT", 12: "HCCL_E_ROCE_CONNECT",
    13: "HCCL_E_TCP_TRANSFER", 14: "HCCL_E_ROCE_TRANSFER", 15: "HCCL_E_RUNTIME", 16: "HCCL_E_DRV",
    17: "HCCL_E_PROFILING", 18: "HCCL_E_CCE", 19: "HCCL_E_NETWORK", 20: "HCCL_E_AGAIN", 21: "HCCL_E_REMOTE",
    22: "HCCL_E_SUSPENDING", 23: "HCCL_E_OPRETRY_FAIL", 24: "HCCL_E_OOM",
}
E_TIMEOUT = 9
E_REMOTE = 21


class HcclError(RuntimeError):
    """An HCCL operation failed.

    Attributes: ``code`` (HcclResult int), ``code_name`` ("HCCL_E_TIMEOUT"), ``op``
    ("all_reduce"), ``rank`` (this process's rank, global when known), ``peers`` (the
    global ranks the operation waited for, when known).
    """

    def __init__(self, message, code=4, op=None, rank=None, peers=None):
        super().__init__(message)
        self.code = code
        self.code_name = _CODE_NAMES.get(code, "HcclResult %d" % code)
        self.op = op
        self.rank = rank
        self.peers = peers
        self.library_message = None


def _global_ranks(comm):
    """comm rank -> global rank list (torch subgroups), or None."""
    ranks = getattr(comm, "global_ranks", None)
    if ranks is not None:
        return ranks
    ref = getattr(comm, "_pg_ref", None)
    pg = ref() if ref is not None else None
    if pg is None:
        return None
    try:
        from torch.distributed import distributed_c10d as c10d
        m = c10d._pg_group_ranks.get(pg)
        if m:
            ranks = [g for g, _ in sorted(m.items(), key=lambda kv: kv[1])]
            comm.global_ranks = ranks
            return ranks
    except Exception:
        pass
    return None


def _exec_timeout_of(comm):
    """The seconds the communicator's operations wait, as the library says
    (HcclCommGetExecTimeout): its config's, else HCCL_EXEC_TIMEOUT as the library read it."""
    try:
        t = comm.exec_timeout
    except Exception:  # destroyed meanwhile
        t = None
    return "?" if t is None else t


def _connect_timeout():
    """The seconds communicator creation waits, as the library says
    (HcclGetConnectTimeout: HCCL_CONNECT_TIMEOUT as it read it)."""
    t = _hccl.connect_timeout()
    return "?" if t is None else t


_REFUSED = "refused: the communicator failed earlier"
# The library's text for an operation that this rank's interrupt check stopped (a peer
# that saw it says "rank N aborted: operation interrupted ...").
_INTERRUPTED = "operation interrupted by the application"


def _fr_name(opname):
    """"all_reduce" -> "allreduce", as the flight recorder's "AllReduce" compares."""
    return "batchsendrecv" if opname == "batch_isend_irecv" else opname.replace("_", "").lower()


def _library_message(comm, opname=None):
    """The library's own text for the communicator's failure, read from its flight
    recorder (HcclCommDumpFlightRecorder), or None: the latest failed operation of
    opname's kind (an isend that failed before a later collective was refused reports
    its own failure), else the latest failed one. A refusal because the communicator
    had failed names that first failure too."""
    import json
    import tempfile
    try:
        if comm.flight_recorder_size == 0:
            return None  # the recorder is off: asking would only add a warning
    except Exception:  # destroyed meanwhile
        return None
    try:
        fd, path = tempfile.mkstemp(prefix="hccl_err_", suffix=".json")
        os.close(fd)
        try:
            if not comm._dump_flight_recorder(path):
                return None
            with open(path) as f:
                rec = json.load(f)
        finally:
            os.unlink(path)
    except Exception:
        return None
    failed = [op for op in rec.get("ops") or [] if op.get("state") == "failed" and op.get("error")]
    if failed:
        mine = [op for op in failed if opname and str(op.get("op", "")).lower() == _fr_name(opname)]
        text = (mine or failed)[-1]["error"]
        if text.startswith(_REFUSED):
            first = next((op for op in failed if not op["error"].startswith(_REFUSED)), None)
            if first is not None:
                text += "; the first failure, %s #%s: %s" % (first.get("op"), first.get("seq"), first["error"])
        return text
    reason = rec.get("reason") or ""
    return None if not reason or reason.startswith("requested by") else reason  # not our own dump's


# Where the library names a rank of another host: "rank 5 (host node-b 10.0.0.2)".
_HOST = r" \(host [^()]*\)"


def _missing_ranks(lib):
    """The ranks a timeout report names as never reaching the operation ("rank 2 never
    reached AllReduce #5 (...); ranks 4-5, 7: no answer (...); this rank was waiting
    for: receive from rank 1"): [2, 4, 5, 7]; [] when it names none. The ranks this
    rank waited for are only its neighbours in the algorithm."""
    m = re.search(r"timed out \((?:rank \d+'s )?HCCL_EXEC_TIMEOUT[^)]*\) on rank \d+: (.*); this rank was waiting for:",
                  lib)
    if not m:
        return []
    out = set()
    for lst in re.findall(r"(?:^|; )ranks? ((?:\d+(?:-\d+)?)(?:, \d+(?:-\d+)?)*)(?:%s)?(?= never reached|: no answer)"
                          % _HOST,
                          m.group(1)):
        for part in lst.split(", "):
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def _ranks_in(text):
    """"1, 3-5" -> [1, 3, 4, 5]."""
    out = set()
    for part in re.findall(r"\d+(?:-\d+)?", text):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


E_PARA = 1


def _comm_intact(comm):
    """True when the communicator has no asynchronous error (HcclGetCommAsyncError)."""
    try:
        return comm.async_error() == 0
    except Exception:
        return False


def _make_error(code, opname, comm, peer, detail, warn=""):
    """Called by the C extension to build the exception of a failed call. warn: the
    library's last warning on the thread that ran the operation (HcclGetLastErrorMessage
    right after a blocking call; captured where an asynchronous one ran), or ""."""
    name = _CODE_NAMES.get(code, "HcclResult %d" % code)
    text = _hccl.error_string(code)
    if comm is None:  # creating a communicator: detail is the library's reason
        msg = "hccl %s failed: %s (%s)" % (opname, text, name)
        if detail:
            msg += ": " + detail
        m = re.search(r"ranks that never arrived: ([\d, -]+)", detail or "")
        if not m:  # a rank that failed on its own before it joined, and told the root
            m = re.search(r"\brank (\d+) \(pid \d+ on [^)]*\) failed \w+ before joining", detail or "")
        return HcclError(msg, code, opname, None, _ranks_in(m.group(1)) if m else None)
    ranks = _global_ranks(comm)
    g = (lambda r: ranks[r] if ranks is not None and 0 <= r < len(ranks) else r)
    me, n = comm.rank, comm.size
    sub = ranks is not None and list(ranks) != list(range(n))
    where = "rank %d (of %d%s)" % (g(me), n, ", group ranks %s" % list(ranks) if sub else "")
    if peer is not None and 0 <= peer < n and peer != me and opname in ("send", "recv"):
        peers = [g(peer)]
    else:
        peers = [g(r) for r in range(n) if r != me]
    if detail:
        msg = "hccl %s on %s: %s" % (opname, where, detail)
        return HcclError(msg, code, opname, g(me), peers)
    if code == E_PARA and warn and _comm_intact(comm):
        # Refused for its arguments before anything was sent (what ran and failed, e.g.
        # on a mismatch between the ranks, leaves the communicator broken): the reason
        # is this rank's own, no peer is involved, and an older failure in the flight
        # recorder is not it.
        msg = "hccl %s refused on %s: %s (%s): %s" % (opname, where, text, name, warn)
        e = HcclError(msg, code, opname, g(me), [])
        e.library_message = warn
        return e
    lib = _library_message(comm, opname) or warn or None  # a failure with no record: its warning
    exact = False
    culprits = _missing_ranks(lib) if lib else []
    aborted = re.match(r"(?:%s; the first failure, [^:]*: )?rank (\d+)(?:%s)? aborted: " % (_REFUSED, _HOST), lib) \
        if lib and code == E_REMOTE else None
    gone = re.search(r"\brank (\d+)(?:%s)? exited, or destroyed its communicator|connection to rank (\d+)(?:%s)? lost "
                     r"during" % (_HOST, _HOST), lib) if lib and not aborted else None
    if aborted:  # a peer failed first: the rest of the text is its own report
        peers, exact = [g(int(aborted.group(1)))], True
    elif gone:  # a peer's connection closed: that peer, not every rank
        peers, exact = [g(int(gone.group(1) or gone.group(2)))], True
    elif lib and _INTERRUPTED in lib:  # this rank was interrupted (Ctrl-C): its own failure
        peers, exact = [], True
    elif culprits:  # the ranks the library found had not reached the operation
        peers, exact = [g(x) for x in culprits], True
    elif lib and "waiting for:" in lib:  # every rank is in it: the ones this rank waits on
        waited = sorted({int(x) for x in re.findall(r"rank (\d+)", lib.split("waiting for:", 1)[1])} - {me})
        if waited:
            peers, exact = [g(x) for x in waited], True
    if lib and lib.startswith(_REFUSED):
        # Refused at once: the timeout or failure was an earlier operation's (the
        # library text names it), not this one's.
        msg = "hccl %s refused on %s: the communicator failed earlier (%s); peers involved: %s" % (
            opname, where, name, peers)
    elif code == E_TIMEOUT:
        if len(peers) == 1:
            who = "rank %d" % peers[0]
        else:
            who = ("ranks %s" if exact else "one or more of ranks %s") % peers
        msg = ("hccl %s timed out on %s after HCCL_EXEC_TIMEOUT=%s s waiting for %s, which did not join "
               "this %s (it skipped it, or is stuck in another call) (%s)"
               % (opname, where, _exec_timeout_of(comm), who,
                  "transfer" if opname in ("send", "recv", "batch_isend_irecv") else "collective", name))
    else:
        msg = "hccl %s failed on %s: %s (%s); peers involved: %s" % (opname, where, text, name, peers)
    if lib:
        msg += "\n  library: " + lib
        if sub:
            msg += "  (the library numbers ranks within this group: %s)" % list(ranks)
    elif code != E_TIMEOUT:
        msg += "; the library's WARN line on stderr gives the cause"
    e = HcclError(msg, code, opname, g(me), peers)
    e.library_message = lib
    return e


_hccl._set_error_factory(_make_error)

# ---------------------------------------------------------------- dtypes and torch


def _torch_provider():
    import sys
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return None
    m = {torch.int8: _hccl.DT_INT8, torch.int16: _hccl.DT_INT16, torch.int32: _hccl.DT_INT32,
         torch.int64: _hccl.DT_INT64, torch.uint8: _hccl.DT_UINT8, torch.float16: _hccl.DT_FP16,
         torch.bfloat16: _hccl.DT_BF16, torch.float32: _hccl.DT_FP32, torch.float64: _hccl.DT_FP64,
         torch.bool: _hccl.DT_BOOL}
    for name, code in (("uint16", _hccl.DT_UINT16), ("uint32", _hccl.DT_UINT32), ("uint64", _hccl.DT_UINT64)):
        if hasattr(torch, name):
            m[getattr(torch, name)] = code
    return torch.Tensor, m


_hccl._set_torch_provider(_torch_provider)


def _is_torch(t):
    return type(t).__module__.startswith("torch")


# ---------------------------------------------------------------- ReduceOp


class ReduceOp(enum.IntEnum):
    """Reduction operations. SUM/PROD/MAX/MIN are HCCL's own (same values); AVG is
    SUM followed by a division by the group size in the tensor's dtype (integer types
    floor-divide, bool is rejected)."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4

    # torch-style aliases
    PRODUCT = 1


_OP_BY_NAME = {"SUM": 0, "PROD": 1, "PRODUCT": 1, "MAX": 2, "MIN": 3, "AVG": 4}


def _op_code(op):
    if isinstance(op, bool):
        raise TypeError("hccl: reduce op %r is a bool; pass a ReduceOp (SUM, PROD, MAX, MIN, AVG)" % (op,))
    if not isinstance(op, int) and isinstance(op, numbers.Integral):  # a NumPy integer
        op = int(op)
    if isinstance(op, int):  # ReduceOp, plain int
        if 0 <= op <= 4:
            return int(op)
        raise ValueError("hccl: unknown reduce op %r" % (op,))
    if isinstance(op, str):
        name = op.upper()
    else:  # torch.distributed.ReduceOp / RedOpType (matched by name: values differ)
        inner = getattr(op, "op", op)
        name = getattr(inner, "name", None)
        if name is None and type(op).__module__.split(".")[0] != "torch":
            raise TypeError("hccl: reduce op must be an hccl or torch.distributed ReduceOp, its name or its int "
                            "value, not %s %r" % (type(op).__name__, op))
        name = name or str(op).rsplit(".", 1)[-1]
    code = _OP_BY_NAME.get(name)
    if code is None:
        raise ValueError("hccl: reduce op %s is not supported (SUM, PROD, MAX, MIN, AVG)" % (name or op))
    return code


# ---------------------------------------------------------------- Work


class Work:
    """Handle of an asynchronous operation (async_op=True).

    wait(timeout=None) blocks with the GIL released until the operation finished and
    returns True; it raises HcclError if the operation failed, or if ``timeout``
    (seconds or a timedelta) passes first. is_completed() and exception() poll.

    The list forms (all_gather, gather, all_to_all into lists of tensors) fill their
    lists from a flat buffer once the operation is done: in wait(), in an
    is_completed() that finds it done, or when the Work is dropped (which waits, as a
    dropped handle does). ReduceOp.AVG divides inside the operation itself.
    """

    __slots__ = ("_h", "_post", "_outputs", "_finished", "_error", "_lock", "__weakref__")

    def __init__(self, handle, post=None, outputs=None):
        self._h = handle
        self._post = post
        self._outputs = outputs
        self._finished = False
        self._error = None
        # Several threads may finish one Work (a wait() here, an is_completed() of the
        # torch backend's completion thread there): _finished must not say True before
        # the list is filled, so whoever runs post holds this and the others wait.
        self._lock = threading.RLock() if post is not None else None

    def wait(self, timeout=None):
        if self._finished:
            if self._error is not None:
                raise self._error
            return True
        if isinstance(timeout, timedelta):
            timeout = timeout.total_seconds()
            if timeout <= 0:
                timeout = None
        if self._h is not None:
            try:
                self._h.wait(timeout)
            except HcclError as e:
                if not self._h.is_completed():  # timed out: the operation is still running
                    raise
                if self._h.result_code != 0:  # failed: final
                    if timeout is not None:  # e may be the timeout that raced the failure
                        e = self._h.exception() or e
                    self._finished, self._error = True, e
                    raise e
                # Timed out, but it completed (successfully) before is_completed()
                # looked: done, not a failure to report from every later wait().
        if self._lock is None:
            self._finished = True
            return True
        with self._lock:
            post, self._post = self._post, None
            if post is not None:
                try:
                    post()
                except BaseException as e:
                    self._error = e
                    raise
                finally:
                    self._finished = True
        if self._error is not None:  # post failed in another thread
            raise self._error
        return True

    def is_completed(self):
        if self._finished or self._h is None:
            return True
        if not self._h.is_completed():
            return False
        if self._lock is not None:  # fill the lists, or wait for the thread filling them
            try:
                self.wait()
            except Exception:  # noqa: BLE001 - exception() reports it
                pass
        return True

    def __del__(self):
        if self._post is not None and not self._finished:
            try:
                self.wait()
            except Exception:  # noqa: BLE001 - nobody is left to tell
                pass

    def is_success(self):
        return self.is_completed() and self.exception() is None

    def exception(self):
        if self._error is not None:
            return self._error
        if self._h is None:
            return None
        return self._h.exception()

    def result(self):
        return list(self._outputs or [])

    def __repr__(self):
        return "<hccl.Work %s %s>" % (self._h.op if self._h is not None else "local",
                                      "completed" if self.is_completed() else "pending")


def _finish(h, async_op, post=None, outputs=None):
    """h: a Handle (async_op) or None (already done). Runs post now when synchronous."""
    if async_op:
        return Work(h, post, outputs)
    if post is not None:
        post()
    return None


# ---------------------------------------------------------------- groups

_world = None  # the communicator made by init()
_world_lock = threading.Lock()


_dist_cached = [None, None]  # weak refs: (torch's default process group, its Comm or None)


def _dist_default_comm():
    """The Comm of torch.distributed's default group when it is an hccl group."""
    import sys
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if c10d is None:
        return None
    try:
        pg = c10d.GroupMember.WORLD
    except Exception:
        return None
    if pg is None:
        return None
    ref, cref = _dist_cached
    if ref is not None and ref() is pg:
        return cref() if cref is not None else None
    comm = _pg_comm(pg)
    # weak references: the cache must not keep a destroyed group's communicator alive
    _dist_cached[0] = weakref.ref(pg)
    _dist_cached[1] = weakref.ref(comm) if comm is not None else None
    return comm


def _pg_comm(pg):
    """Comm of a torch process group of this backend, else None."""
    if getattr(pg, "_is_hccl_pg", False):
        return pg.comm
    get = getattr(pg, "_get_backend", None)  # torch >= 2: ProcessGroup wraps per-device backends
    if get is not None:
        try:
            import torch
            b = get(torch.device("cpu"))
            if getattr(b, "_is_hccl_pg", False):
                return b.comm
        except Exception:
            pass
    return None


def _default_comm():
    c = _world
    if c is not None and not c.destroyed:
        return c
    c = _dist_default_comm()
    if c is None:
        raise RuntimeError("hccl: no default group: call hccl.init() or "
                           "torch.distributed.init_process_group('hccl') first, or pass group=")
    return c


def _resolve(group):
    """-> (Comm, rank translator or None); (None, None) when this rank is not a member."""
    if group is None:
        return _default_comm(), None
    if isinstance(group, Comm):
        return group, None
    if getattr(group, "_is_hccl_pg", False):
        return group.comm, group._group_rank
    c = _pg_comm(group)
    if c is not None:
        pg = c._pg_ref()
        return c, (pg._group_rank if pg is not None else None)
    try:
        from torch.distributed import GroupMember
        if group is GroupMember.NON_GROUP_MEMBER or group == GroupMember.NON_GROUP_MEMBER:
            return None, None
    except Exception:
        pass
    backend = None
    try:
        from torch.distributed import get_backend
        backend = get_backend(group)
    except Exception:
        pass
    raise TypeError("hccl: group must be a process group of the 'hccl' backend or an hccl.Comm, not %r%s"
                    % (group, " (backend %s)" % backend if backend else ""))


def _rank(tr, r, what):
    if r is None:
        raise ValueError("hccl: %s is required" % what)
    return tr(r) if tr is not None else r


def _exec_timeout_s(t):
    """init()'s exec_timeout (seconds, or a timedelta) -> whole seconds for the library:
    a positive timeout is rounded up, never truncated to 0, which means no timeout at
    all (0.5 s used to wait forever); 0 is no timeout, a negative one the default."""
    if isinstance(t, timedelta):
        s = t.total_seconds()
    elif isinstance(t, numbers.Real) and not isinstance(t, bool):
        s = float(t)
    else:
        raise TypeError("hccl init: exec_timeout must be seconds (a number) or a timedelta, not %r" % (t,))
    if s != s:
        raise ValueError("hccl init: exec_timeout is NaN")
    if s < 0:
        return -1
    return 10 ** 9 if s > 10 ** 9 else -int(-s // 1)  # the library's longest (31 years); else ceil


def init(exec_timeout=None):
    """Create (once) the world communicator from the launcher's environment: torchrun,
    hcclrun (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), Slurm, Open MPI or MPICH
    (see docs/launchers.md); the root listens on MASTER_PORT + 1. When
    torch.distributed is already initialised with the hccl backend, its world
    communicator is reused. exec_timeout: seconds an operation may wait for its peers
    (default HCCL_EXEC_TIMEOUT). Returns the Comm."""
    global _world
    with _world_lock:
        if _world is not None and not _world.destroyed:
            return _world
        c = _dist_default_comm()
        if c is None:
            _spin_defaults()
            t = -1 if exec_timeout is None else _exec_timeout_s(exec_timeout)
            c = _hccl.comm_init_from_env(t)
            _world = c
        return c


def is_initialized():
    return (_world is not None and not _world.destroyed) or _dist_default_comm() is not None


def get_rank(group=None):
    c, _ = _resolve(group)
    return -1 if c is None else c.rank


def get_world_size(group=None):
    c, _ = _resolve(group)
    return -1 if c is None else c.size


def new_group(ranks, group=None):
    """A sub-communicator of `ranks` (ranks of `group`, default the world). Every rank
    of the parent calls it with the same list (like torch's new_group); ranks not in
    the list get None."""
    c, _ = _resolve(group)
    # The sub-communicator's id counts this parent's new_group calls: every rank of
    # the parent makes the same calls, whatever else each rank does (the library
    # derives the group's identity from the parent's and this id).
    seq = getattr(c, "_sub_seq", 0) + 1
    c._sub_seq = seq
    ranks = _ints("new_group", "ranks", ranks)  # int() would make 0.5 rank 0, and "01" ranks 0 and 1
    for i, r in enumerate(ranks):
        if not 0 <= r < c.size:
            raise ValueError("hccl new_group: %d is not a rank of the parent group (ranks 0..%d)" % (r, c.size - 1))
        if r in ranks[:i]:
            raise ValueError("hccl new_group: rank %d appears twice in %s" % (r, ranks))
    if c.rank not in ranks:
        return None
    parent = _global_ranks(c)
    members = [parent[r] if parent else r for r in ranks]  # global ranks
    try:
        sub = c.create_sub(ranks, (seq << 8) | 0x5C)
    except HcclError as e:
        me = members[ranks.index(c.rank)]
        msg = ("hccl new_group(%s) failed on rank %d: %s (%s): a member did not call new_group with the same "
               "ranks, as its call number %d on this parent group, within HCCL_CONNECT_TIMEOUT=%s s (the "
               "library's WARN line on stderr names it, numbered within the new group)"
               % (ranks, me, _hccl.error_string(e.code), e.code_name, seq,
                  _connect_timeout()))
        raise HcclError(msg, e.code, "new_group", me, [g for g in members if g != me]) from None
    sub.global_ranks = members
    return sub


def destroy(group=None):
    """Destroy a communicator (default: the one made by init())."""
    global _world
    if group is None:  # the communicator made by init() (torch's groups belong to torch)
        if _world is not None:
            _world.destroy()
            _world = None
        return
    c, _ = _resolve(group)
    if c is not None:
        c.destroy()


# ---------------------------------------------------------------- buffers


def _flat_empty(like, n):
    """A new contiguous 1-D buffer of n elements of like's dtype."""
    if _is_torch(like):
        return like.new_empty((n,))
    import numpy as np
    return np.empty(n, dtype=np.asarray(like).dtype)


def _exported(t):
    """An object with __array_interface__ only (no buffer protocol, no dtype) as a
    NumPy view of its memory (writes go through), else None."""
    if _is_torch(t) or hasattr(t, "dtype") or not hasattr(t, "__array_interface__"):
        return None
    try:
        memoryview(t)
        return None
    except TypeError:
        import numpy as np
        return np.asarray(t)


def _numel(t):
    if _is_torch(t):
        return t.numel()
    v = _exported(t)
    if v is not None:
        return v.size
    return int(getattr(t, "size", 0)) if hasattr(t, "dtype") else len(memoryview(t).cast("B")) // memoryview(t).itemsize


def _flatten_into(dst_flat, parts):
    """Copies parts one after the other into dst_flat."""
    off = 0
    for p in parts:
        k = _numel(p)
        if _is_torch(dst_flat):
            dst_flat[off:off + k].copy_(p.reshape(-1))
        else:
            import numpy as np
            dst_flat[off:off + k] = np.asarray(p).reshape(-1)
        off += k


def _unflatten_from(src_flat, parts):
    off = 0
    for p in parts:
        k = _numel(p)
        if _is_torch(p):
            p.copy_(src_flat[off:off + k].view(p.shape))
        else:
            import numpy as np
            # np.asarray of a buffer object (bytearray, array.array, memoryview) is a
            # view of its memory: copyto writes through it.
            dst = p if isinstance(p, np.ndarray) else np.asarray(p)
            np.copyto(dst, np.asarray(src_flat[off:off + k]).reshape(dst.shape))
        off += k


def _writable(t):
    """Can the list forms copy a result into t? (checked before the operation, so
    that a read-only entry cannot leave the list half written)."""
    if _is_torch(t):
        return True
    if hasattr(t, "flags"):  # NumPy
        return bool(t.flags.writeable)
    v = _exported(t)
    if v is not None:
        return bool(v.flags.writeable)
    # Another buffer object: np.asarray(bytes) would be a writable 0-d copy, so ask the
    # buffer itself.
    return not memoryview(t).readonly


def _dtype_of(t):
    v = _exported(t)
    if v is not None:
        return v.dtype
    return t.dtype if _is_torch(t) or hasattr(t, "dtype") else memoryview(t).format


def _check_entry(fn, name, t):
    """TypeError naming `name` ("tensor_list[1]") when t is none of the accepted
    objects (a Python list, say), before _numel/_dtype_of ask memoryview about it."""
    if _is_torch(t) or hasattr(t, "dtype") or hasattr(t, "__array_interface__"):
        return
    try:
        memoryview(t)
    except TypeError:
        raise TypeError("hccl %s: %s must be a torch CPU tensor, a NumPy array or another object with the buffer "
                        "protocol or __array_interface__, not %s" % (fn, name, type(t).__name__)) from None


def _check_list(fn, name, lst, like, n, output=False):
    """A list of one block per rank (n entries), each as many elements of the same
    dtype as `like` (the caller's own tensor): the library moves len x numel(like).
    output: the entries receive the result, so each must be writable."""
    if len(lst) != n:
        raise ValueError("hccl %s: %s has %d entries for %d ranks" % (fn, name, len(lst), n))
    _check_entry(fn, "tensor", like)
    k, dt = _numel(like), _dtype_of(like)
    for i, t in enumerate(lst):
        _check_entry(fn, "%s[%d]" % (name, i), t)
        if _numel(t) != k:
            raise ValueError("hccl %s: %s[%d] has %d elements, the tensor has %d (every entry must match it)"
                             % (fn, name, i, _numel(t), k))
        if _dtype_of(t) != dt:
            raise ValueError("hccl %s: %s[%d] has dtype %s, the tensor has %s" % (fn, name, i, _dtype_of(t), dt))
        if output and not _writable(t):
            raise ValueError("hccl %s: %s[%d] is read-only, but the operation writes into it" % (fn, name, i))


def _shape(t):
    """t's shape; also for buffer objects without a .shape (bytearray, array.array) and
    objects with __array_interface__ only."""
    if _is_torch(t) or hasattr(t, "shape"):
        return tuple(t.shape)
    v = _exported(t)
    return tuple(v.shape) if v is not None else tuple(memoryview(t).shape)


def _rows(t):
    """Elements per index of dimension 0 (torch-style split sizes)."""
    shape = _shape(t)
    if not shape:
        return 1
    n = _numel(t)
    return n // shape[0] if shape[0] else 0


def _ints(fn, name, seq):
    """A sequence of ints (split sizes, ranks) as a list: a float (int() would make 2.5
    rows 2 without a word), a string or None raises TypeError."""
    try:
        return [operator.index(s) for s in seq]
    except TypeError:
        raise TypeError("hccl %s: %s must be a sequence of ints, not %r" % (fn, name, seq)) from None


def _offsets(counts):
    out, off = [], 0
    for c in counts:
        out.append(off)
        off += c
    return out


# ---------------------------------------------------------------- collectives


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group, in place, on every rank."""
    if group is None:
        c = _default_comm()
    else:
        c, _ = _resolve(group)
        if c is None:
            return None
    code = op if type(op) is ReduceOp else _op_code(op)
    h = c.all_reduce(tensor, tensor, code, async_op)
    return Work(h, None, [tensor]) if async_op else None


def broadcast(tensor, src=0, group=None, async_op=False):
    c, tr = _resolve(group)
    if c is None:
        return None
    h = c.broadcast(tensor, _rank(tr, src, "src"), async_op)
    return Work(h, None, [tensor]) if async_op else None


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce into `tensor` on rank dst (other ranks' tensors are left unchanged)."""
    c, tr = _resolve(group)
    if c is None:
        return None
    root = _rank(tr, dst, "dst")
    code = _op_code(op)
    out = tensor if root == c.rank else None
    h = c.reduce(tensor, out, code, root, async_op)
    return Work(h, None, [tensor]) if async_op else None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather `tensor` from every rank: into a list of group-size tensors (torch style)
    or into one tensor of group-size x tensor's elements (rank order)."""
    c, _ = _resolve(group)
    if c is None:
        return None
    if isinstance(tensor_list, (list, tuple)):
        _check_list("all_gather", "tensor_list", tensor_list, tensor, c.size, output=True)
        flat = _flat_empty(tensor, _numel(tensor) * c.size)
        h = c.all_gather(tensor, flat, async_op)
        return _finish(h, async_op, lambda: _unflatten_from(flat, tensor_list), list(tensor_list))
    h = c.all_gather(tensor, tensor_list, async_op)
    return Work(h, None, [tensor_list]) if async_op else None


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    return all_gather(output_tensor, input_tensor, group, async_op)


def reduce_scatter(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (a list of group-size tensors, torch style, or one tensor of
    group-size x output's elements) and leave block `rank` in `output`."""
    c, _ = _resolve(group)
    if c is None:
        return None
    code = _op_code(op)
    if isinstance(input, (list, tuple)):
        _check_list("reduce_scatter", "the input list", input, output, c.size)
        flat = _flat_empty(output, _numel(output) * c.size)
        _flatten_into(flat, input)
        input = flat
    h = c.reduce_scatter(input, output, code, async_op)
    return Work(h, None, [output]) if async_op else None


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    return reduce_scatter(output, input, op, group, async_op)


def _root_only(fn, name, value, what, given, root, c):
    """Only the root passes the list of gather/scatter: elsewhere it would be ignored,
    so a non-root rank that passes one (anything but None or []) is refused, as torch."""
    if root == c.rank or value is None or (isinstance(value, (list, tuple)) and not value):
        return
    raise ValueError("hccl %s: %s is given on rank %d of the group, which is not the root (%s=%s); only the root "
                     "passes it (None or [] on the other ranks)" % (fn, name, c.rank, what, given))


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Gather `tensor` from every rank on dst: into gather_list (a list of group-size
    tensors, or one tensor of group-size x tensor's elements); None elsewhere."""
    c, tr = _resolve(group)
    if c is None:
        return None
    root = _rank(tr, dst, "dst")
    post, out = None, None
    _root_only("gather", "gather_list", gather_list, "dst", dst, root, c)
    if root == c.rank:
        if gather_list is None:
            raise ValueError("hccl gather: the destination rank needs gather_list")
        if isinstance(gather_list, (list, tuple)):
            _check_list("gather", "gather_list", gather_list, tensor, c.size, output=True)
            out = _flat_empty(tensor, _numel(tensor) * c.size)
            lst = gather_list
            post = (lambda: _unflatten_from(out, lst))
        else:
            out = gather_list
    h = c.gather(tensor, out, root, async_op)
    return _finish(h, async_op, post, [gather_list] if gather_list is not None else [])


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Scatter scatter_list (on src: a list of group-size tensors or one tensor of
    group-size blocks) so that rank r receives block r into `tensor`."""
    c, tr = _resolve(group)
    if c is None:
        return None
    root = _rank(tr, src, "src")
    inp = None
    _root_only("scatter", "scatter_list", scatter_list, "src", src, root, c)
    if root == c.rank:
        if scatter_list is None:
            raise ValueError("hccl scatter: the source rank needs scatter_list")
        if isinstance(scatter_list, (list, tuple)):
            _check_list("scatter", "scatter_list", scatter_list, tensor, c.size)
            inp = _flat_empty(tensor, _numel(tensor) * c.size)
            _flatten_into(inp, scatter_list)
        else:
            inp = scatter_list
    h = c.scatter(inp, tensor, root, async_op)
    return Work(h, None, [tensor]) if async_op else None


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """Rank r sends block j of input to rank j and receives block r of every rank into
    output. Split sizes count indices of dimension 0 (torch's convention); None means
    equal blocks."""
    c, _ = _resolve(group)
    if c is None:
        return None
    if output_split_sizes is None and input_split_sizes is None:
        # Equal blocks of rows, as torch: a dimension 0 that the ranks do not divide
        # would otherwise be split by elements, in the middle of a row.
        for name, t in (("input", input), ("output", output)):
            _check_entry("all_to_all_single", name, t)
            shape = _shape(t)
            if shape and shape[0] % c.size:
                raise ValueError("hccl all_to_all_single: the %s's dimension 0 (%d) does not divide equally across "
                                 "the %d ranks; pass split sizes" % (name, shape[0], c.size))
        h = c.all_to_all(input, output, async_op)
        return Work(h, None, [output]) if async_op else None
    n = c.size
    _check_entry("all_to_all_single", "input", input)
    _check_entry("all_to_all_single", "output", output)
    ri, ro = _rows(input), _rows(output)
    def nrows(t):
        shape = _shape(t)
        return shape[0] if shape else 1   # a 0-d tensor: one row

    if input_split_sizes is None:
        input_split_sizes = [nrows(input) // n] * n
    if output_split_sizes is None:
        output_split_sizes = [nrows(output) // n] * n
    input_split_sizes = _ints("all_to_all_single", "input_split_sizes", input_split_sizes)
    output_split_sizes = _ints("all_to_all_single", "output_split_sizes", output_split_sizes)
    for name, sizes, t in (("input", input_split_sizes, input), ("output", output_split_sizes, output)):
        rows = nrows(t)
        if len(sizes) != n or any(x < 0 for x in sizes) or sum(sizes) != rows:
            raise ValueError("hccl all_to_all_single: %s_split_sizes %s must be %d sizes >= 0 that add up to the "
                             "%s's %d rows (dimension 0)" % (name, list(sizes), n, name, rows))
    sc = [s * ri for s in input_split_sizes]
    rc = [s * ro for s in output_split_sizes]
    h = c.all_to_all_v(input, sc, _offsets(sc), output, rc, _offsets(rc), async_op)
    return Work(h, None, [output]) if async_op else None


def all_to_all_v(output, input, output_counts, input_counts, output_displs=None, input_displs=None,
                 group=None, async_op=False):
    """HcclAlltoAllV on flat buffers: counts and displacements in elements."""
    c, _ = _resolve(group)
    if c is None:
        return None
    sc = _ints("all_to_all_v", "input_counts", input_counts)
    rc = _ints("all_to_all_v", "output_counts", output_counts)
    sd = _ints("all_to_all_v", "input_displs", input_displs) if input_displs is not None else _offsets(sc)
    rd = _ints("all_to_all_v", "output_displs", output_displs) if output_displs is not None else _offsets(rc)
    h = c.all_to_all_v(input, sc, sd, output, rc, rd, async_op)
    return Work(h, None, [output]) if async_op else None


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """torch's all_to_all: input_tensor_list[j] goes to rank j; output_tensor_list[j]
    receives from rank j. Sizes may differ (AlltoAllV)."""
    c, _ = _resolve(group)
    if c is None:
        return None
    n = c.size
    if len(input_tensor_list) != n or len(output_tensor_list) != n:
        raise ValueError("hccl all_to_all: the lists need one tensor per rank (%d)" % n)
    for name, lst in (("input_tensor_list", input_tensor_list), ("output_tensor_list", output_tensor_list)):
        for i, t in enumerate(lst):
            _check_entry("all_to_all", "%s[%d]" % (name, i), t)
    dt = _dtype_of(input_tensor_list[0])
    for name, lst in (("input_tensor_list", input_tensor_list), ("output_tensor_list", output_tensor_list)):
        for i, t in enumerate(lst):
            if _dtype_of(t) != dt:
                raise ValueError("hccl all_to_all: %s[%d] has dtype %s, input_tensor_list[0] has %s (every entry "
                                 "must have one dtype)" % (name, i, _dtype_of(t), dt))
    for i, t in enumerate(output_tensor_list):
        if not _writable(t):
            raise ValueError("hccl all_to_all: output_tensor_list[%d] is read-only, but the operation writes into it"
                             % i)
    sc = [_numel(t) for t in input_tensor_list]
    rc = [_numel(t) for t in output_tensor_list]
    sbuf = _flat_empty(input_tensor_list[0], sum(sc))
    rbuf = _flat_empty(output_tensor_list[0], sum(rc))
    _flatten_into(sbuf, input_tensor_list)
    if len(set(sc)) == 1 and sc == rc:
        h = c.all_to_all(sbuf, rbuf, async_op)
    else:
        h = c.all_to_all_v(sbuf, sc, _offsets(sc), rbuf, rc, _offsets(rc), async_op)
    return _finish(h, async_op, lambda: _unflatten_from(rbuf, output_tensor_list), list(output_tensor_list))


def all_gather_v(output, input, output_split_sizes, group=None, async_op=False):
    """Rank r contributes input (output_split_sizes[r] indices of dimension 0); output
    receives every rank's block in rank order."""
    c, _ = _resolve(group)
    if c is None:
        return None
    _check_entry("all_gather_v", "output", output)
    ro = _rows(output)
    rc = [s * ro for s in _ints("all_gather_v", "output_split_sizes", output_split_sizes)]
    h = c.all_gather_v(input, output, rc, _offsets(rc), async_op)
    return Work(h, None, [output]) if async_op else None


def reduce_scatter_v(output, input, input_split_sizes, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce input across ranks; rank r keeps block r (input_split_sizes[r] indices of
    dimension 0) in output."""
    c, _ = _resolve(group)
    if c is None:
        return None
    _check_entry("reduce_scatter_v", "input", input)
    ri = _rows(input)
    sc = [s * ri for s in _ints("reduce_scatter_v", "input_split_sizes", input_split_sizes)]
    code = _op_code(op)
    h = c.reduce_scatter_v(input, sc, _offsets(sc), output, code, async_op)
    return Work(h, None, [output]) if async_op else None


def barrier(group=None, async_op=False):
    c, _ = _resolve(group)
    if c is None:
        return None
    h = c.barrier(async_op)
    return Work(h) if async_op else None


# ---------------------------------------------------------------- point to point


def send(tensor, dst, group=None, tag=0):
    c, tr = _resolve(group)
    if c is None:
        return None
    c.send(tensor, _rank(tr, dst, "dst"), False)


def recv(tensor, src=None, group=None, tag=0):
    """Receive into tensor from src (receiving from any source is not supported).
    Returns src like torch."""
    c, tr = _resolve(group)
    if c is None:
        return -1
    if src is None:
        raise ValueError("hccl recv: src is required (receiving from any rank is not supported)")
    c.recv(tensor, _rank(tr, src, "src"), False)
    return src


def isend(tensor, dst, group=None, tag=0):
    c, tr = _resolve(group)
    if c is None:
        return None
    return Work(c.send(tensor, _rank(tr, dst, "dst"), True), None, [tensor])


def irecv(tensor, src=None, group=None, tag=0):
    c, tr = _resolve(group)
    if c is None:
        return None
    if src is None:
        raise ValueError("hccl irecv: src is required (receiving from any rank is not supported)")
    return Work(c.recv(tensor, _rank(tr, src, "src"), True), None, [tensor])


class P2POp:
    """One send or receive of batch_isend_irecv: P2POp(hccl.isend or hccl.irecv (or
    torch's dist.isend / dist.irecv), tensor, peer, group=None, tag=0)."""

    def __init__(self, op, tensor, peer, group=None, tag=0):
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


def _is_recv_op(op):
    name = getattr(op, "__name__", str(op))
    if name in ("irecv", "recv"):
        return True
    if name in ("isend", "send"):
        return False
    raise ValueError("hccl batch_isend_irecv: op must be isend or irecv, not %r" % (op,))


def batch_isend_irecv(p2p_op_list):
    """Post all sends and receives as one HcclBatchSendRecv (no ordering deadlock
    between peers). Returns one Work per item (all complete together)."""
    if not p2p_op_list:
        return []
    for i, p in enumerate(p2p_op_list):
        if not all(hasattr(p, a) for a in ("op", "tensor", "peer", "group")):
            raise TypeError("hccl batch_isend_irecv: p2p_op_list[%d] is %s %r, not a P2POp(op, tensor, peer, group)"
                            % (i, type(p).__name__, p))
    group = p2p_op_list[0].group
    c, tr = _resolve(group)
    if c is None:
        return []
    items = []
    for p in p2p_op_list:
        if p.group is not group:
            raise ValueError("hccl batch_isend_irecv: all operations must use the same group")
        items.append((_is_recv_op(p.op), p.tensor, _rank(tr, p.peer, "peer")))
    h = c.batch_send_recv(items, True)
    w = Work(h, None, [p.tensor for p in p2p_op_list])
    return [w] * len(p2p_op_list)
