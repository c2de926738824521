"""Rank script: torch features that sit on the process group give over hccl what they
give over gloo (same seeds; parameters and buffers compared after every step).

argv[1]: comma-separated scenarios: DDP options (unused = find_unused_parameters,
static = static_graph, view = gradient_as_bucket_view, nosync = no_sync(), bn =
broadcast_buffers with BatchNorm), comm hooks (allreduce_hook, powersgd, viewfp16,
localsgd, builtin_ar / builtin_fp16 = DDP's C++ hooks), ZeroRedundancyOptimizer (zero,
zeroview, zerooverlap = overlap_with_ddp against plain ZeRO skipping the warm-up
steps), Join with uneven inputs (join, joinzero, or join+FEATURES: unused, bn, view,
static, psgd, arhook, zero, f64, throw), subgroup / asyncsub (ops on new_group([0, 1])
between or during DDP steps; with 3 ranks gloo itself aborts or hangs on asyncsub). A
scenario gloo itself refuses on CPU is reported and
skipped (SyncBatchNorm). argv[2]: "gloo" (default: world gloo, hccl from new_group)
or "hccl" (world hccl, gloo from new_group)."""
import sys
import common as C
import hccl  # noqa: F401
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(torch.nn.Module):
    def __init__(self, bn=False, branch=False):
        super().__init__()
        self.a = torch.nn.Linear(10, 32)
        self.bn = torch.nn.BatchNorm1d(32) if bn else None
        self.b = torch.nn.Linear(32, 32)
        self.alt = torch.nn.Linear(32, 32) if branch else None
        self.c = torch.nn.Linear(32, 3)

    def forward(self, x, use_alt=False):
        h = self.a(x)
        if self.bn is not None:
            h = self.bn(h)
        h = torch.relu(h)
        h = torch.relu((self.alt if use_alt else self.b)(h))
        return self.c(h)


HG = None
ZR = None


def run(pg, r, n, scen):
    if "+" in scen:
        return run_combo(pg, r, n, set(scen.split("+")))
    torch.manual_seed(0)
    kw = {}
    model = Net(bn=scen in ("bn", "syncbn"), branch=scen == "unused")
    if scen == "syncbn":
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group=pg)
    if scen == "unused":
        kw["find_unused_parameters"] = True
    if scen == "static":
        kw["static_graph"] = True
    if scen == "view":
        kw["gradient_as_bucket_view"] = True
    ddp = DDP(model, process_group=pg, bucket_cap_mb=0.002, **kw)
    if scen == "allreduce_hook":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(pg, default_hooks.allreduce_hook)
    if scen == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as P
        st = P.PowerSGDState(process_group=pg, matrix_approximation_rank=1, start_powerSGD_iter=3,
                             use_error_feedback=True, warm_start=True, random_seed=0)
        ddp.register_comm_hook(st, P.powerSGD_hook)
    if scen == "builtin_ar":
        ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
    if scen == "builtin_fp16":
        ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    if scen == "asyncsub":
        sub = dist.new_group([0, 1], backend="hccl" if pg is HG else "gloo")
    if scen == "viewfp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp = DDP(model, process_group=pg, bucket_cap_mb=0.002, gradient_as_bucket_view=True)
        ddp.register_comm_hook(pg, default_hooks.fp16_compress_hook)
    if scen == "localsgd":
        from torch.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook as L
        sub = dist.new_group([0, 1], backend="hccl" if pg is HG else "gloo")
        st = L.PostLocalSGDState(process_group=pg, subgroup=sub, start_localSGD_iter=3)
        ddp.register_comm_hook(st, L.post_localSGD_hook)
    if scen == "zerooverlap":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        from torch.distributed.algorithms.ddp_comm_hooks.ddp_zero_hook import hook_with_zero_step
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, process_group=pg,
                                      overlap_with_ddp=True, lr=0.05, momentum=0.9)
        ddp.register_comm_hook(pg, hook_with_zero_step(default_hooks.allreduce_hook, ddp, opt))
    elif scen.startswith("zero") or scen == "joinzero":
        if scen == "zeroref":
            pg = ZR
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, process_group=pg,
                                      parameters_as_bucket_view=scen == "zeroview", lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    sub = None
    if scen == "subgroup":
        sub = dist.new_group([0, 1], backend="hccl" if pg is HG else "gloo")
    gen = torch.Generator().manual_seed(100 + r)
    snaps = []
    steps = 8 + (2 * r if scen.startswith("join") else 0)
    batches = [(torch.randn(16, 10, generator=gen), torch.randint(0, 3, (16,), generator=gen)) for _ in range(steps)]

    def step(i, x, y):
        opt.zero_grad(set_to_none=False)
        out = ddp(x, use_alt=(i + r) % 2 == 0) if scen == "unused" else ddp(x)
        if scen == "asyncsub" and r < 2:
            t = torch.full((1000,), float(r + i))
            u = t * 2
            w = dist.all_reduce(t, group=sub, async_op=True)
            fut = dist.all_reduce(u, group=sub, async_op=True).get_future()
        torch.nn.functional.cross_entropy(out, y).backward()
        if scen == "asyncsub" and r < 2:
            w.wait()
            assert torch.equal(t, torch.full((1000,), float(2 * i + 1))), t
            assert torch.equal(fut.wait()[0], torch.full((1000,), float(4 * i + 2)))
        if scen == "zerooverlap" or (scen == "zeroref" and i < 2):
            return
        opt.step()

    if scen.startswith("join"):
        from torch.distributed.algorithms.join import Join
        js = [ddp, opt] if scen == "joinzero" else [ddp]
        with Join(js):
            for i, (x, y) in enumerate(batches):
                step(i, x, y)
                snaps.append([p.detach().clone() for p in model.parameters()])
    elif scen == "nosync":
        for i, (x, y) in enumerate(batches):
            if i % 2 == 0:
                with ddp.no_sync():
                    torch.nn.functional.cross_entropy(ddp(x), y).backward()
            else:
                torch.nn.functional.cross_entropy(ddp(x), y).backward()
                opt.step()
                opt.zero_grad(set_to_none=False)
            snaps.append([p.detach().clone() for p in model.parameters()])
    else:
        for i, (x, y) in enumerate(batches):
            step(i, x, y)
            if sub is not None and r < 2 and scen == "subgroup":
                t = torch.full((4,), float(r + i))
                dist.all_reduce(t, group=sub)
                dist.barrier(group=sub)
                assert torch.equal(t, torch.full((4,), float(2 * i + 1))), t
            snaps.append([p.detach().clone() for p in model.parameters()] +
                         [b.detach().clone() for b in model.buffers()])
    if scen.startswith("zero") and scen not in ("zerooverlap", "zeroref"):
        opt.consolidate_state_dict(to=0)
        if r == 0:
            sd = opt.state_dict()
            snaps.append([v["momentum_buffer"] for k, v in sorted(sd["state"].items())])
        else:
            snaps.append([])
    return snaps


def run_combo(pg, r, n, f):
    torch.manual_seed(0)
    model = Net(bn="bn" in f, branch="unused" in f)
    if "f64" in f:
        model = model.double()
    kw = dict(find_unused_parameters="unused" in f, gradient_as_bucket_view="view" in f)
    if "static" in f:
        kw["static_graph"] = True
    if "nobb" in f:
        kw["broadcast_buffers"] = False
    ddp = DDP(model, process_group=pg, bucket_cap_mb=0.002, **kw)
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as P
    if "psgd" in f:
        st = P.PowerSGDState(process_group=pg, matrix_approximation_rank=1, start_powerSGD_iter=3, random_seed=0)
        ddp.register_comm_hook(st, P.powerSGD_hook)
    if "arhook" in f:
        ddp.register_comm_hook(pg, default_hooks.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    if "zero" in f:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, process_group=pg,
                                      lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + r)
    steps = 6 + 2 * r
    dt = torch.float64 if "f64" in f else torch.float32
    batches = [(torch.randn(16, 10, generator=gen).to(dt), torch.randint(0, 3, (16,), generator=gen))
               for _ in range(steps)]
    snaps = []
    from torch.distributed.algorithms.join import Join
    js = [ddp] + ([opt] if "zero" in f else [])
    try:
        with Join(js, throw_on_early_termination="throw" in f):
            for i, (x, y) in enumerate(batches):
                opt.zero_grad(set_to_none=False)
                out = ddp(x, use_alt=(i + r) % 2 == 0) if "unused" in f else ddp(x)
                torch.nn.functional.cross_entropy(out, y).backward()
                opt.step()
                snaps.append([p.detach().clone() for p in model.parameters()] +
                             [b.detach().clone() for b in model.buffers()])
    except RuntimeError as e:
        snaps.append(["raised", str(e)[:60]])
    snaps.append([p.detach().clone() for p in model.parameters()] + [b.detach().clone() for b in model.buffers()])
    return snaps


def main():
    world = sys.argv[2] if len(sys.argv) > 2 else "gloo"
    dist.init_process_group(world)
    r, n = dist.get_rank(), dist.get_world_size()
    other = dist.new_group(list(range(n)), backend="hccl" if world == "gloo" else "gloo")
    hg, gg = (other, None) if world == "gloo" else (None, other)
    global HG
    HG = hg
    for scen in sys.argv[1].split(","):
        try:
            if scen == "zerooverlap":
                global ZR
                ZR = gg
                g = run(gg, r, n, "zeroref")
            else:
                g = run(gg, r, n, scen)
        except Exception as e:  # noqa
            print("rank %d: %s: gloo fails: %r" % (r, scen, e), flush=True)
            dist.barrier()
            continue
        h = run(hg, r, n, scen)
        assert len(g) == len(h), (scen, len(g), len(h))
        for i, (a, b) in enumerate(zip(g, h)):
            for pa, pb in zip(a, b):
                if isinstance(pa, str):
                    assert pa == pb, (scen, i, pa, pb)
                    continue
                assert torch.allclose(pa.float(), pb.float(), rtol=1e-5, atol=1e-4 if "fp16" in scen else 1e-6), (scen, i, (pa - pb).abs().max())
        print("rank %d: %s ok" % (r, scen), flush=True)
        C.ok(scen)
    dist.destroy_process_group()
    C.report(r)


C.main_guard(main)
