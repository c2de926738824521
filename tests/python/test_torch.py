"""hccl with torch tensors, and torch.distributed with the "hccl" backend: every
collective and point-to-point call, every torch dtype, async Work, subgroups, env://
and tcp:// initialisation, Work errors and timeouts, DDP equivalence with gloo."""
import launch


def test_torch_env_init_2_ranks():
    r = launch.run(2, launch.worker("torch_ops.py"), "env", timeout=180)
    assert r.out.count("59 checks passed") == 2, r


def test_torch_tcp_init_3_ranks():
    r = launch.run(3, launch.worker("torch_ops.py"), "tcp", timeout=180)
    assert r.out.count("59 checks passed") == 3, r


def test_work_errors_and_timeouts():
    r = launch.run(2, launch.worker("backend_errors.py"), timeout=120)
    assert "Work.wait failed after" in r.out and r.out.count("checks passed") == 2, r


def test_ddp_matches_gloo():
    r = launch.run(2, launch.worker("ddp_equiv.py"), timeout=180)
    assert r.out.count("checks passed") == 2, r


_DDP2 = ("unused,static,view,nosync,bn,allreduce_hook,powersgd,viewfp16,localsgd,builtin_ar,builtin_fp16,zero,"
         "zeroview,zerooverlap,join,joinzero,join+unused+bn,join+psgd+view,join+throw,subgroup,asyncsub")
_DDP3 = "unused,bn,builtin_fp16,powersgd,zero,join+unused+bn,subgroup"


def test_ddp_features_match_gloo():
    # DDP options, comm hooks (torch's C++ FP16_COMPRESS read a Python object where
    # it needs a TensorList), ZeRO, Join, subgroups: over hccl as over gloo
    r = launch.run(2, launch.worker("ddp_features.py"), _DDP2, timeout=240)
    assert r.out.count("%d checks passed" % len(_DDP2.split(","))) == 2, r
    r = launch.run(3, launch.worker("ddp_features.py"), _DDP3, "hccl", timeout=240)
    assert r.out.count("%d checks passed" % len(_DDP3.split(","))) == 3, r


def test_backend_edges():
    r = launch.run(2, launch.worker("torch_edges.py"), "edges", timeout=120)
    assert r.out.count("10 checks passed") == 2, r


def test_missing_rank_at_init_is_named():
    r = launch.run(3, launch.worker("torch_edges.py"), "noarrive", timeout=120, check=False)
    assert "rank 0: init failed after" in r.out and r.out.count("1 checks passed") == 2, r


def test_refused_operation_names_the_first_failure():
    r = launch.run(2, launch.worker("torch_edges.py"), "refused", timeout=120)
    assert r.out.count("1 checks passed") == 2, r


def test_batch_timeout_calls_it_a_transfer():
    # a batch_isend_irecv whose peer never came "did not join this collective"
    r = launch.run(2, launch.worker("torch_edges.py"), "batchtimeout", timeout=120)
    assert r.out.count("1 checks passed") == 2, r


def test_mismatched_all_to_all_splits_give_the_reason():
    r = launch.run(2, launch.worker("torch_edges.py"), "mismatch", timeout=120)
    assert r.out.count("1 checks passed") == 2, r


def test_strided_views_are_written_in_place():
    # a transposed view or a slice with a step raised "output is not contiguous" (gloo
    # takes them, and torch code passes them)
    r = launch.run(2, launch.worker("torch_edges.py"), "strided", timeout=120)
    assert r.out.count("1 checks passed") == 2, r


def test_monitored_barrier_names_the_late_rank():
    # it was a plain barrier whose wait gave up naming nobody
    r = launch.run(2, launch.worker("torch_edges.py"), "monitored", timeout=120)
    assert r.out.count("1 checks passed") == 2, r


def test_failed_ddp_allreduce_raises():
    # the reducer read the failed future's exception as its result: SIGSEGV
    r = launch.run(2, launch.worker("torch_edges.py"), "ddpfail", timeout=120)
    assert r.out.count("1 checks passed") == 2, r


def test_ctrl_c_interrupts_a_blocking_collective():
    # a blocking collective ignored Ctrl-C until it ended (the peer's late call then
    # completed it, or HCCL_EXEC_TIMEOUT)
    r = launch.run(2, launch.worker("torch_edges.py"), "interrupt", timeout=120)
    assert r.out.count("1 checks passed") == 2, r
