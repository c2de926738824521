"""Helpers for the Python suites: run a script as N ranks through hcclrun.

The ctest registration (tests/python/CMakeLists.txt) sets PYTHONPATH to the build
tree's python/ folder and HCCLRUN to the launcher; run by hand with
  PYTHONPATH=build/python HCCLRUN=build/tools/hcclrun python3 -m pytest tests/python
"""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")
EXAMPLES = os.environ.get("HCCL_PY_EXAMPLES", os.path.join(HERE, "..", "..", "examples", "python"))
PYTHON = "/usr/bin/python3"

# Failing operations (the error tests) dump the library's flight recorder: keep those
# files out of /tmp.
FR_DIR = tempfile.mkdtemp(prefix="hccl_pytest_fr_")
atexit.register(shutil.rmtree, FR_DIR, True)


def hcclrun():
    path = os.environ.get("HCCLRUN")
    if not path:
        for cand in ("build/tools/hcclrun", "build-py/tools/hcclrun"):
            if os.access(cand, os.X_OK):
                return os.path.abspath(cand)
        raise RuntimeError("set HCCLRUN to the hcclrun launcher")
    return path


class Result:
    def __init__(self, rc, out, err, seconds):
        self.rc, self.out, self.err, self.seconds = rc, out, err, seconds

    def __repr__(self):
        return "rc=%d after %.1fs\n--- stdout\n%s\n--- stderr\n%s" % (self.rc, self.seconds, self.out[-6000:],
                                                                    self.err[-6000:])


def run(nranks, script, *args, env=None, timeout=120, check=True):
    """Runs `python3 script args` as nranks ranks; returns a Result (asserts rc 0 when check)."""
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    e.setdefault("HCCL_CONNECT_TIMEOUT", "60")
    e.setdefault("HCCL_FLIGHT_RECORDER_DIR", FR_DIR)
    if env:
        e.update(env)
    cmd = [hcclrun(), "-n", str(nranks), "--tag-output", PYTHON, script] + [str(a) for a in args]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)
    except subprocess.TimeoutExpired as x:
        out = x.stdout.decode() if isinstance(x.stdout, bytes) else (x.stdout or "")
        err = x.stderr.decode() if isinstance(x.stderr, bytes) else (x.stderr or "")
        raise AssertionError("%s timed out after %ds\n%s\n%s" % (script, timeout, out[-4000:], err[-4000:]))
    r = Result(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)
    if check:
        assert r.rc == 0, r
    return r


def worker(name):
    return os.path.join(WORKERS, name)


def example(name):
    return os.path.join(EXAMPLES, name)


def run_python(code, env=None, timeout=60):
    """Runs a single-process snippet; returns the Result."""
    e = dict(os.environ)
    if env:
        e.update(env)
    t0 = time.monotonic()
    p = subprocess.run([PYTHON, "-c", code], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, text=True)
    return Result(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)


sys.path.insert(0, WORKERS)
