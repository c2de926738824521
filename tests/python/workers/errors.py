"""Rank script: library failures surface as hccl.HcclError.

  mismatch  ranks call all_reduce with different counts: both fail at once (the
            library compares the operations' fingerprints), the communicator is then
            broken and later calls fail too.
  timeout   rank 1 skips an all_reduce: rank 0 fails after exec_timeout seconds with
            HCCL_E_TIMEOUT and a message naming rank 1 (sync and async forms).
  timeout3  3 ranks over the ring (HCCL_REFERENCE_ALGOS=1), rank 1 skips: rank 0 waits
            on its ring neighbour, rank 2, which is stuck itself; the error must still
            name rank 1 (the library's "never reached"), on ranks 0 and 2.
  timeout3hosts  the same with rank 1 on another simulated host (HCCL_HOST_ID): the
            library names it "rank 1 (host py-b IP)", and the error still names rank 1.
  deadlock  2 ranks, each receives from the other and nobody sends: each error names
            the other rank (the one that times out second fails with HCCL_E_REMOTE,
            quoting the first's report, which names itself as waited for).
  exit3     3 ranks, rank 1 exits (os._exit) before an all_reduce: an error that says
            rank 1 exited (its connection closed) names rank 1 alone in e.peers (it
            listed every other rank, the live rank 2 too); one that quotes a peer's
            abort names that peer.
  fork      rank 0 forks; the child's all_reduce on the inherited communicator must
            fail (it used to complete with rank 1 in the parent's place, so that the
            parent's next all_reduce paired with rank 1's following one); then the
            parents' all_reduces still pair up (values tell which call met which).
  forkpending  each rank forks while its asynchronous all_reduce may still be queued:
            the child's wait() on the parent's operation raises HCCL_E_PARA at once
            (it used to wait forever: nothing runs the operation in the child), and
            dropping the handle in the child is prompt (its destructor used to wait
            forever, so that a child exiting normally hung); the parent's operation completes.
  interrupt rank 0 gets SIGINT 1 s into a synchronous all_reduce that rank 1 has not
            joined: KeyboardInterrupt within 2.5 s (not after exec_timeout: the
            library's interrupt check, HcclSetInterruptCheck), the communicator has
            failed (later calls say it was interrupted); rank 1's all_reduce, made
            later, fails at once naming rank 0 instead of waiting exec_timeout.
  initinterrupt  rank 0 gets SIGINT 1 s into hccl.init() while rank 1 is still asleep
            (HCCL_CONNECT_TIMEOUT 60): KeyboardInterrupt within 2.5 s (it used to wait
            the whole connect timeout); rank 1's init, made later, fails at once naming
            rank 0 and the interruption; the package stays usable on rank 0.
  subinterrupt  both init; rank 1 gets SIGINT 1 s into new_group([0, 1]) while rank 0
            is still asleep: KeyboardInterrupt within 2.5 s; rank 0's new_group, made
            later, fails at once naming rank 1; the world communicator still works.
"""
import os
import sys
import time

import numpy as np

import common as C
import hccl


def main():
    mode = sys.argv[1]
    if mode == "timeout3hosts":
        os.environ["HCCL_HOST_ID"] = "py-b" if os.environ["RANK"] == "1" else "py-a"
    if mode == "initinterrupt":
        init_interrupt()
        return
    comm = hccl.init(exec_timeout=3 if mode.startswith("timeout") or mode == "deadlock" else
                     60 if mode == "interrupt" else None)
    r, n = comm.rank, comm.size
    if mode == "mismatch":
        a = np.ones(4 + r, np.float32)
        try:
            hccl.all_reduce(a)
        except hccl.HcclError as e:
            assert isinstance(e, RuntimeError)
            assert e.code != 0 and e.op == "all_reduce" and e.rank == r, (e.code, e.op, e.rank)
            assert "mismatch" in e.library_message and "library: " in str(e), e
            print("rank %d: mismatch -> %s: %s" % (r, e.code_name, e), flush=True)
        else:
            raise AssertionError("mismatched counts did not fail")
        assert comm.async_error() != 0
        h = hccl.all_reduce(np.ones(4, np.float32), async_op=True)
        try:
            h.wait()
            raise AssertionError("an operation on a broken communicator succeeded")
        except hccl.HcclError as e:
            assert h.is_completed() and isinstance(h.exception(), hccl.HcclError)
        C.ok("mismatch")
    elif mode == "timeout":
        t0 = time.monotonic()
        if r == 0:
            h = hccl.all_reduce(np.ones(4, np.float32), async_op=True)
            try:
                h.wait(timeout=0.2)
                raise AssertionError("wait(timeout) returned")
            except hccl.HcclError as e:
                assert e.code == 9 and "gave up" in str(e), e
                assert not h.is_completed() and h.exception() is None
            try:
                h.wait()
                raise AssertionError("skipped collective did not fail")
            except hccl.HcclError as e:
                dt = time.monotonic() - t0
                assert e.code == 9 and e.code_name == "HCCL_E_TIMEOUT", e
                assert "waiting for rank 1" in str(e) and e.peers == [1], e
                assert "rank 1" in e.library_message and "timed out" in e.library_message, e
                assert 2 <= dt < 20, dt
                assert isinstance(h.exception(), hccl.HcclError)
                print("rank 0: timeout after %.1f s -> %s" % (dt, e), flush=True)
        else:
            time.sleep(4.5)  # skip the collective; rank 0 gives up after 3 s
        C.ok("timeout")
    elif mode in ("timeout3", "timeout3hosts"):
        if r != 1:
            try:
                hccl.all_reduce(np.ones(4, np.float32))
                raise AssertionError("skipped collective did not fail")
            except hccl.HcclError as e:
                assert e.code_name == "HCCL_E_TIMEOUT" and e.peers == [1], (e.peers, e)
                named = "rank 1 (host py-b " if mode == "timeout3hosts" else "rank 1 never reached"
                assert "waiting for rank 1," in str(e) and named in e.library_message, e
                if mode == "timeout3hosts":
                    assert ") never reached" in e.library_message and "rank 2 (host" not in e.library_message, e
        else:
            time.sleep(5)
        C.ok("timeout names the missing rank")
    elif mode == "deadlock":
        try:
            hccl.recv(np.zeros(4, np.float32), src=1 - r)
            raise AssertionError("a receive nobody sends to returned")
        except hccl.HcclError as e:
            assert e.code_name in ("HCCL_E_TIMEOUT", "HCCL_E_REMOTE") and e.peers == [1 - r], (e.peers, e)
        C.ok("deadlock names the peer")
    elif mode == "exit3":
        if r == 1:
            C.ok("exits")
            C.report(r)
            os._exit(0)
        try:
            hccl.all_reduce(np.ones(4, np.float32))
            raise AssertionError("all_reduce with an exited rank returned")
        except hccl.HcclError as e:
            lib = e.library_message or ""
            print("rank %d: peers %s: %s" % (r, e.peers, lib), flush=True)
            if " aborted: " in lib:
                assert e.peers == [2 - r], (e.peers, lib)
            else:
                assert "rank 1 exited" in lib or "connection to rank 1 lost" in lib, lib
                assert e.peers == [1], (e.peers, lib)
        C.ok("an exited rank is the one named")
    elif mode == "fork":
        if r == 0:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    hccl.all_reduce(np.full(4, 100.0, np.float32))
                except hccl.HcclError as e:
                    code = 0 if e.code_name == "HCCL_E_PARA" else 2
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the fork child's all_reduce: %r" % status
        for k in range(2):
            a = np.full(4, 10.0 * k + r + 1, np.float32)
            hccl.all_reduce(a)
            assert a.tolist() == [20.0 * k + 3] * 4, (k, a)
        C.ok("a fork child cannot use the parent's communicator")
    elif mode == "forkpending":
        for k in range(5):
            a = np.full(1 << 18, float(r + 1), np.float32)
            h = hccl.all_reduce(a, async_op=True)
            pid = os.fork()
            if pid == 0:
                try:
                    if not h.is_completed():
                        try:
                            h.wait(timeout=5)
                            os._exit(4)
                        except hccl.HcclError as e:
                            if e.code_name != "HCCL_E_PARA" or "fork" not in str(e):
                                print("child: %s" % e, flush=True)
                                os._exit(5)
                    del h  # its destructor must not wait for the parent's operation
                except BaseException:  # noqa: B902 - any failure is the child's status
                    os._exit(6)
                os._exit(0)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 5:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.01)
            else:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError("the fork child did not exit within 5 s")
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the fork child: %r" % status
            h.wait()
            assert a[0] == a[-1] == n * (n + 1) / 2, (k, a[0], a[-1])
        C.ok("a fork child neither waits for nor is held by the parent's queued operation")
    elif mode == "subinterrupt":
        if r == 1:
            C.interrupted_by_sigint(lambda: hccl.new_group([0, 1]), None)
            time.sleep(3)
        else:
            time.sleep(3)
            t0 = time.monotonic()
            try:
                hccl.new_group([0, 1])
                raise AssertionError("new_group with an interrupted member returned")
            except hccl.HcclError as e:
                dt = time.monotonic() - t0
                print("rank 0: new_group failed after %.1f s: %s" % (dt, e), flush=True)
                assert dt < 2, (dt, e)
        a = np.ones(4, np.float32)
        hccl.all_reduce(a)
        assert a.tolist() == [2.0] * 4, a
        C.ok("Ctrl-C interrupts new_group")
    elif mode == "interrupt":
        if r == 0:
            C.interrupted_by_sigint(lambda: hccl.all_reduce(np.ones(4, np.float32)), hccl.HcclError)
            time.sleep(6)  # alive (not exited) while rank 1 tries
        else:
            time.sleep(5)
            t0 = time.monotonic()
            try:
                hccl.all_reduce(np.ones(4, np.float32))
                raise AssertionError("all_reduce with an aborted peer returned")
            except hccl.HcclError as e:
                dt = time.monotonic() - t0
                print("rank 1: failed after %.1f s: %s" % (dt, e), flush=True)
                assert e.peers == [0] and dt < 2 and "interrupted" in str(e), (dt, e.peers, e)
        C.ok("Ctrl-C interrupts a synchronous collective")
    C.report(r)


def init_interrupt():
    r = int(os.environ["RANK"])
    if r == 0:
        C.interrupted_by_sigint(hccl.init, None)
        assert not hccl.is_initialized()
        cs = hccl.comm_init_all(2)  # the package still works
        h = hccl.all_reduce(np.ones(4, np.float32), group=cs[0], async_op=True)
        a = np.ones(4, np.float32)
        hccl.all_reduce(a, group=cs[1])
        h.wait()
        assert a.tolist() == [2.0] * 4, a
        time.sleep(4)  # alive while rank 1 tries: its root thread answers it
    else:
        time.sleep(4)
        t0 = time.monotonic()
        try:
            hccl.init()
            raise AssertionError("init with an interrupted rank 0 returned")
        except hccl.HcclError as e:
            dt = time.monotonic() - t0
            print("rank 1: init failed after %.1f s: %s" % (dt, e), flush=True)
            assert dt < 2 and "rank 0" in str(e) and "interrupted" in str(e), (dt, e)
    C.ok("Ctrl-C interrupts init")
    C.report(r)


C.main_guard(main)
