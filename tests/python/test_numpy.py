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


def test_library_error_with_the_flight_recorder_off():
    # The message falls back to the library's warning; the package does not ask the
    # switched-off recorder for a dump (which only added a warning line per failure).
    r = launch.run(2, launch.worker("errors.py"), "mismatch", env={"HCCL_FLIGHT_RECORDER_SIZE": "0"}, timeout=60)
    assert "operation mismatch" in r.out, r
    assert r.out.count("checks passed") == 2, r
    assert "no flight recorder" not in r.out + r.err, r


def test_library_error_timeout():
    r = launch.run(2, launch.worker("errors.py"), "timeout", timeout=60)
    assert "waiting for rank 1" in r.out and "HCCL_E_TIMEOUT" in r.out, r


# Rank scripts whose every rank checks what it sees and reports "checks passed":
# (id, ranks, script, mode, environment).
RANK_CHECKED = [
    ("timeout_names_the_missing_rank_not_the_neighbour", 3, "errors.py", "timeout3", {"HCCL_REFERENCE_ALGOS": "1"}),
    ("timeout_names_the_missing_rank_and_its_host", 3, "errors.py", "timeout3hosts", {"HCCL_REFERENCE_ALGOS": "1"}),
    ("deadlocked_receives_name_the_other_rank", 2, "errors.py", "deadlock", None),
    ("an_exited_rank_is_the_peer_named", 3, "errors.py", "exit3", None),
    ("fork_child_cannot_use_the_parents_communicator", 2, "errors.py", "fork", None),
    ("fork_child_exits_with_the_parents_operation_queued", 2, "errors.py", "forkpending", None),
    ("ctrl_c_interrupts_a_synchronous_collective", 2, "errors.py", "interrupt", None),
    ("ctrl_c_interrupts_init", 2, "errors.py", "initinterrupt", None),
    ("ctrl_c_interrupts_new_group", 2, "errors.py", "subinterrupt", None),
    ("nested_groups_then_a_world_group", 3, "groups.py", "nested", None),
    ("new_group_with_a_member_missing", 3, "groups.py", "missing", {"HCCL_CONNECT_TIMEOUT": "3"}),
]


@pytest.mark.parametrize("nranks,script,mode,env", [c[1:] for c in RANK_CHECKED], ids=[c[0] for c in RANK_CHECKED])
def test_every_rank_checks(nranks, script, mode, env):
    r = launch.run(nranks, launch.worker(script), mode, env=env, timeout=60)
    assert r.out.count("checks passed") == nranks, r


def _free_port_pair():
    import socket
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        try:
            with socket.socket() as s2:
                s2.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    raise RuntimeError("no free port pair")


@pytest.mark.parametrize("launcher", ["slurm", "openmpi", "torchrun"])
def test_init_from_launcher_variables(launcher):
    import os
    import subprocess
    names = {"slurm": ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
             "openmpi": ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
             "torchrun": ("RANK", "WORLD_SIZE", "LOCAL_RANK")}[launcher]
    port = _free_port_pair()
    procs = []
    for r in range(2):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "OMPI_", "PMI_")) and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        env.update({names[0]: str(r), names[1]: "2", names[2]: str(r), "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port), "EXPECT_RANK": str(r), "LAUNCHER": launcher,
                    "HCCL_JOB_SECRET": "00112233445566ff"})
        procs.append(subprocess.Popen([launch.PYTHON, launch.worker("launcher_env.py")], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=60)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and ("rank %d via %s ok" % (r, launcher)) in out, out


def test_init_exec_timeout_is_rounded_up_not_to_no_timeout():
    # hccl.init(exec_timeout=0.5) passed int(0.5) = 0 to the library, where 0 means no
    # timeout at all: a skipped collective then waited forever instead of 0.5 s.
    # A positive timeout (seconds or a timedelta) is rounded up to whole seconds now.
    code = ("import hccl, datetime\n"
            "c = hccl.init(exec_timeout=0.5)\n"
            "print('timeout', c.exec_timeout)\n"
            "for bad in ('5', True):\n"
            "    try:\n"
            "        hccl._api._exec_timeout_s(bad)\n"
            "    except TypeError as e:\n"
            "        print('TypeError', e)\n"
            "print('td', hccl._api._exec_timeout_s(datetime.timedelta(milliseconds=1500)))\n"
            "hccl.destroy()\n")
    r = launch.run_python(code, env={"RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
                                     "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port_pair())})
    assert r.rc == 0 and "timeout 1\n" in r.out and "td 2\n" in r.out, r
    assert r.out.count("TypeError hccl init: exec_timeout must be seconds") == 2, r
