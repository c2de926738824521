#!/usr/bin/python3
"""Training benchmark: communication share and throughput per optimisation, hccl vs gloo.

    PYTHONPATH=build/python python3 bench/train/train_bench.py                 # 2 and 4 ranks, both backends
    PYTHONPATH=build/python python3 bench/train/train_bench.py --quick --worlds 2

A small GPT-style decoder trains on synthetic tokens (a fixed random Markov chain, so the
loss falls) with data parallelism. Every configuration ("row") does the same math: one
optimizer step per 4 micro-batches per rank, the gradient averaged over all ranks and
micro-batches. The rows differ only in how gradients are communicated:

  a  per-parameter blocking all_reduce after each micro-batch's backward
  b  bucketed: gradients live in flat buckets (~1 MiB), one blocking all_reduce per bucket
  c  b + overlap: each bucket's all_reduce starts asynchronously as soon as backward has
     produced its last gradient (DDP-style grad-accumulator hooks); waits after backward
  d  c + gradient accumulation: micro-batches 1..3 accumulate locally, only the last one
     communicates (4x fewer all_reduces)
  e  d + communication groups: ranks are split into simulated hosts (HCCL_HOST_ID); each
     bucket is reduced inside its host to the host's leader, all_reduced among the leaders,
     and broadcast inside the host (a communication thread runs the chain, overlapped with
     backward; a rank alone on its host launches the leaders' all_reduce async, as in d)

Every (row, backend) pair has its own model and runs in the same processes: the default
process group (gloo) only coordinates, and each backend's rows use groups of their own
(dist.new_group(..., backend=...)). The ten configurations take turns, one optimizer
step each, in an order that rotates every step, each turn starting from a barrier, so a
change in the machine's load hits every configuration alike. One thread per rank for
torch (torch.set_num_threads(1), OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1) for both
backends; the report names the BLAS torch loaded (`make bench-train` installs OpenBLAS).
The ranks keep freed memory (glibc's MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_
at 256 MiB unless set; --glibc-malloc leaves glibc's defaults).

Per timed step: step time = the slowest rank's (barrier to the end of its optimizer
step); communication share = the mean over ranks of (time the training thread spends
inside communication calls: blocking collectives, async launches, wait()s, in (e) the
wait for the communication thread) / step time. A row's tokens/s = all ranks' tokens
per step / the median step time; its share = the median of the per-step shares
(over the timed steps of every --repeat launch).

Writes OUT/train_bench.md (the tables), OUT/train_bench.json, OUT/train_bench.png.
Exits 1 if any row's loss curve deviates from row (a)'s (hccl) by more than --tol.
"""
import argparse
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROWS = {
    "a": "(a) per-parameter blocking all_reduce",
    "b": "(b) bucketed all_reduce",
    "c": "(c) + overlap with backward (async)",
    "d": "(d) + gradient accumulation x4",
    "e": "(e) + communication groups",
}
SHORT = {"a": "a: per-param", "b": "b: buckets", "c": "c: +overlap", "d": "d: +accum x4", "e": "e: +groups"}


# --------------------------------------------------------------------------- worker
def blas_library():
    """The BLAS this process has loaded (torch links Debian's libblas.so.3, which the
    alternatives system points at the reference BLAS or at OpenBLAS): its resolved path."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if os.path.basename(line.split()[-1]).startswith("libblas")}
    except OSError:
        return "unknown"
    return ", ".join(sorted(os.path.realpath(x) for x in paths)) or "none loaded"


def worker(cfg):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(1)           # one compute thread per rank, same for every backend
    if "hccl" in cfg["backends"]:
        import hccl  # noqa: F401  (registers the backend)
    # The default group only coordinates (barriers between timed steps); every row runs
    # over groups of its own backend, created below.
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    G = cfg["ranks_per_host"]
    host = rank // G
    nhosts = world // G
    leader = host * G

    def make_groups(backend):
        """world, intra-host and inter-host (leaders) groups of one backend; every rank
        takes part in every new_group call."""
        W = dist.new_group(list(range(world)), backend=backend)
        intra = None
        for h in range(nhosts):
            g = dist.new_group(list(range(h * G, (h + 1) * G)), backend=backend) if G > 1 else None
            if h == host:
                intra = g
        if G > 1 and nhosts > 1:
            inter = dist.new_group([h * G for h in range(nhosts)], backend=backend)
        elif G > 1:
            inter = None                    # one host: nothing to do between hosts
        else:
            inter = W                       # one rank per host: the leaders are everybody
        return W, intra, inter

    groups = {b: make_groups(b) for b in cfg["backends"]}

    V, D, L, H, S = cfg["vocab"], cfg["d"], cfg["layers"], cfg["heads"], cfg["seq"]
    M, B = cfg["micro"], cfg["mb"]
    steps = cfg["warmup"] + cfg["steps"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D)
            self.fc = nn.Linear(D, 4 * D)
            self.fc2 = nn.Linear(4 * D, D)

        def forward(self, x, mask):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, H, D // H).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D // H))
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, s, D)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(V, D)
            self.pos = nn.Parameter(torch.randn(S, D) * 0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(D)
            self.head = nn.Linear(D, V, bias=False)
            self.register_buffer("mask", torch.triu(torch.ones(S, S, dtype=torch.bool), 1), persistent=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos[: idx.shape[1]]
            for blk in self.blocks:
                x = blk(x, self.mask)
            return self.head(self.lnf(x))

    # synthetic data: a fixed sparse random Markov chain over the vocabulary (learnable),
    # the same for every row; micro-batch m of step s on rank r is fixed
    gen = torch.Generator().manual_seed(1234)
    nexts = torch.randint(0, V, (V, 4), generator=gen)
    data = []
    for s in range(steps):
        per = []
        for m in range(M):
            gen.manual_seed(1_000_003 * s + 1009 * rank + m + 7)
            x = torch.empty(B, S + 1, dtype=torch.long)
            x[:, 0] = torch.randint(0, V, (B,), generator=gen)
            choice = torch.randint(0, 4, (B, S), generator=gen)
            for t in range(S):
                x[:, t + 1] = nexts[x[:, t], choice[:, t]]
            per.append((x[:, :-1].contiguous(), x[:, 1:].contiguous()))
        data.append(per)

    bucket_cap = int(cfg["bucket_mb"] * (1 << 20) / 4)
    clock = time.perf_counter

    class Trainer:
        """One row on one backend: its own model, optimizer, buckets and hooks."""

        def __init__(self, row, backend):
            self.row, self.backend = row, backend
            self.W, self.intra, self.inter = groups[backend]
            torch.manual_seed(cfg["seed"])
            self.model = GPT()
            self.params = params = list(self.model.parameters())
            # buckets in reverse registration order (roughly the order backward produces
            # them); gradients are views into the buckets (DDP's gradient_as_bucket_view)
            buckets, cur, size = [], [], 0
            for p in reversed(params):
                if cur and size + p.numel() > bucket_cap:
                    buckets.append(cur)
                    cur, size = [], 0
                cur.append(p)
                size += p.numel()
            buckets.append(cur)
            # The parameters live in flat buffers of the same layout (as Megatron-LM and
            # DeepSpeed keep them), so that AdamW updates one tensor per bucket instead
            # of one per parameter: the same math element by element, in every row.
            self.flats, self.bucket_of, opt_params = [], {}, []
            for i, bp in enumerate(buckets):
                flat = torch.zeros(sum(p.numel() for p in bp))
                pflat = torch.zeros_like(flat)
                off = 0
                for p in bp:
                    n = p.numel()
                    pflat[off: off + n].copy_(p.data.view(-1))
                    p.data = pflat[off: off + n].view_as(p)
                    p.grad = flat[off: off + n].view_as(p)
                    self.bucket_of[p] = i
                    off += n
                self.flats.append(flat)
                opt_params.append(nn.Parameter(pflat))   # shares pflat's storage
                opt_params[-1].grad = flat
            self.nb = len(buckets)
            self.need = [len(bp) for bp in buckets]
            self.accs = [torch.zeros_like(f) for f in self.flats] if row in "abc" else []
            self.opt = torch.optim.AdamW(opt_params, lr=cfg["lr"], weight_decay=0.01)
            self.active, self.ready, self.next, self.handles, self.comm = False, [0] * self.nb, 0, [], 0.0
            self.hooks = []
            if row in "cde":
                for p in params:
                    acc = p.view_as(p).grad_fn.next_functions[0][0]   # p's AccumulateGrad node
                    self.hooks.append((acc, acc.register_hook(self._hook(p))))
            # row (e): a communication thread runs reduce -> leaders' all_reduce -> broadcast.
            # A rank alone on its host has no intra-host steps: its chain is the leaders'
            # all_reduce alone, launched with async_op like (d)'s, with no thread.
            self.cv = threading.Condition()
            self.queue, self.done, self.stop, self.err = [], 0, False, None
            self.thread = None
            if row == "e" and self.intra is not None:
                self.thread = threading.Thread(target=self._chain_loop, daemon=True)
                self.thread.start()
            self.rec = {"loss": [], "step_t": [], "comm_t": [], "opt_t": [], "acc_t": []}

        def _chain_loop(self):
            while True:
                with self.cv:
                    while not self.queue and not self.stop:
                        self.cv.wait()
                    if self.stop and not self.queue:
                        return
                    i = self.queue.pop(0)
                try:
                    f = self.flats[i]
                    if self.intra is not None:
                        dist.reduce(f, dst=leader, group=self.intra)
                    if rank == leader and self.inter is not None:
                        dist.all_reduce(f, group=self.inter)
                    if self.intra is not None:
                        dist.broadcast(f, src=leader, group=self.intra)
                except Exception as e:  # reported by the training thread
                    self.err = e
                with self.cv:
                    self.done += 1
                    self.cv.notify_all()

        def _launch(self, i):
            t0 = clock()
            if self.thread is not None:
                with self.cv:
                    self.queue.append(i)
                    self.cv.notify_all()
            else:
                group = self.inter if self.row == "e" and self.inter is not None else self.W
                self.handles.append(dist.all_reduce(self.flats[i], group=group, async_op=True))
            self.comm += clock() - t0

        def _hook(self, p):
            i = self.bucket_of[p]

            def hook(*_):
                if not self.active:
                    return
                self.ready[i] += 1
                # launch buckets strictly in index order, so every rank issues the same sequence
                while self.next < self.nb and self.ready[self.next] == self.need[self.next]:
                    self._launch(self.next)
                    self.next += 1
            return hook

        def _wait_all(self):
            """Training thread: wait for every bucket launched in this backward."""
            t0 = clock()
            if self.thread is not None:
                with self.cv:
                    while self.done < self.nb:
                        self.cv.wait()
                    self.done = 0
                if self.err is not None:
                    raise self.err
            else:
                for h in self.handles:
                    h.wait()
                self.handles = []
            self.comm += clock() - t0
            if self.next != self.nb:
                raise RuntimeError("row %s: only %d of %d buckets launched" % (self.row, self.next, self.nb))

        def step(self, s):
            row, W = self.row, self.W
            t_start = clock()
            self.comm = acc_t = 0.0
            lsum = 0.0
            for m in range(M):
                x, y = data[s][m]
                sync_now = row in "abc" or m == M - 1
                self.active = sync_now and row in "cde"
                self.ready = [0] * self.nb
                self.next = 0
                loss = F.cross_entropy(self.model(x).view(-1, V), y.view(-1))
                loss.backward()
                lsum += loss.item()
                if row == "a":
                    for p in self.params:
                        t1 = clock()
                        dist.all_reduce(p.grad, group=W)
                        self.comm += clock() - t1
                elif row == "b":
                    for f in self.flats:
                        t1 = clock()
                        dist.all_reduce(f, group=W)
                        self.comm += clock() - t1
                elif sync_now:
                    self._wait_all()
                if row in "abc":          # synced every micro-batch: accumulate the sums
                    t1 = clock()
                    for f, a in zip(self.flats, self.accs):
                        a.add_(f)
                        f.zero_()
                    acc_t += clock() - t1
            t1 = clock()
            if row in "abc":
                for f, a in zip(self.flats, self.accs):
                    f.copy_(a)
                    a.zero_()
            for f in self.flats:
                f.div_(world * M)
            t2 = clock()
            self.opt.step()
            for f in self.flats:
                f.zero_()
            t_end = clock()
            r = self.rec
            r["loss"].append(lsum / M)
            r["step_t"].append(t_end - t_start)
            r["comm_t"].append(self.comm)
            r["opt_t"].append(t_end - t2)
            r["acc_t"].append(acc_t + t2 - t1)

        def close(self):
            for _, h in self.hooks:
                h.remove()
            if self.thread is not None:
                with self.cv:
                    self.stop = True
                    self.cv.notify_all()
                self.thread.join()

    # Every (row, backend) pair is a trainer; they take turns, one optimizer step each,
    # in an order that rotates every step, so a change in the machine's load hits every
    # configuration alike. A barrier on the coordination group starts each turn.
    trainers = [Trainer(row, b) for row in cfg["rows"] for b in cfg["backends"]]
    n = len(trainers)
    cpu = [0.0] * n
    for s in range(steps):
        for k in range(n):
            tr = trainers[(k + s) % n]
            dist.barrier()
            c0 = time.process_time()
            tr.step(s)
            if s >= cfg["warmup"]:
                cpu[(k + s) % n] += time.process_time() - c0
    blas = blas_library()
    malloc = "trim/mmap thresholds %s/%s" % tuple(os.environ.get(v, "default") for v in
                                                  ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"))
    results = {}
    for k, tr in enumerate(trainers):
        tr.close()
        rec = dict(tr.rec, cpu=cpu[k], buckets=tr.nb, params=sum(p.numel() for p in tr.params),
                   tensors=len(tr.params), tokens_per_step=M * B * S, blas=blas, malloc=malloc)
        results.setdefault(tr.backend, {})[tr.row] = rec
    with open(os.path.join(cfg["tmp"], "rank%d.json" % rank), "w") as f:
        json.dump(results, f)
    dist.barrier()
    dist.destroy_process_group()


# --------------------------------------------------------------------------- launcher
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(cfg, world, timeout):
    """Run `world` worker processes with torchrun-style variables; return their results."""
    tmp = tempfile.mkdtemp(prefix="train_bench_")
    cfg = dict(cfg, tmp=tmp)
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   HCCL_HOST_ID="simhost%d" % (r // cfg["ranks_per_host"]))
        if not cfg["glibc_malloc"]:
            # Keep freed memory in the process: with glibc's defaults every step's
            # temporaries of ~1 MB (AdamW's, backward's) go back to the kernel and come
            # back as page faults (AdamW 9-10 -> 1-2 ms a step). Values the user set win.
            for var in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"):
                env.setdefault(var, str(256 << 20))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(cfg)],
                                      env=env))
    deadline = time.time() + timeout
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=max(1, deadline - time.time())))
        except subprocess.TimeoutExpired:
            rcs.append(None)
    if any(rc != 0 for rc in rcs):
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        raise SystemExit("train_bench: world=%d failed (exit codes %s)" % (world, rcs))
    out = []
    for r in range(world):
        with open(os.path.join(tmp, "rank%d.json" % r)) as f:
            out.append(json.load(f))
        os.unlink(os.path.join(tmp, "rank%d.json" % r))
    os.rmdir(tmp)
    return out


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def summarise(runs, world, backend, row, warmup):
    """runs: one list of per-rank results per launch. Per timed step: the step's time is
    the slowest rank's, its communication share the mean over ranks of comm / step time;
    the row's numbers are medians over the timed steps of every launch."""
    T, share, comm, opt, acc, cpu, busy = [], [], [], [], [], 0.0, 0.0
    for per_rank in runs:
        rs = [pr[backend][row] for pr in per_rank]
        for s in range(warmup, len(rs[0]["step_t"])):
            T.append(max(r["step_t"][s] for r in rs))
            share.append(sum(r["comm_t"][s] / r["step_t"][s] for r in rs) / len(rs))
            comm.append(sum(r["comm_t"][s] for r in rs) / len(rs))
            opt.append(sum(r["opt_t"][s] for r in rs) / len(rs))
            acc.append(sum(r["acc_t"][s] for r in rs) / len(rs))
        cpu += sum(r["cpu"] for r in rs)
        busy += sum(sum(r["step_t"][warmup:]) for r in rs)
    rs = [pr[backend][row] for pr in runs[0]]
    nsteps = len(rs[0]["loss"])
    loss = [sum(r["loss"][s] for r in rs) / len(rs) for s in range(nsteps)]
    step = median(T)
    return {"tok_s": world * rs[0]["tokens_per_step"] / step, "share": median(share), "step_ms": 1e3 * step,
            "comm_ms": 1e3 * median(comm), "opt_ms": 1e3 * median(opt), "acc_ms": 1e3 * median(acc),
            "step_ms_all": [1e3 * t for t in T], "cpu_per_rank": cpu / busy, "loss": loss,
            "buckets": rs[0]["buckets"], "params": rs[0]["params"], "tensors": rs[0]["tensors"],
            "blas": rs[0]["blas"], "malloc": rs[0]["malloc"]}


def loadavg():
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def table_head(backends, names, extra=()):
    """A markdown table's two head lines: one column per backend and name, then extra."""
    cols = ["%s %s" % (b, n) for b in backends for n in names] + list(extra)
    return ["| configuration |" + "".join(" %s |" % c for c in cols), "|---|" + "---:|" * len(cols)]


def render(res, args, meta):
    lines = ["# Training benchmark: communication share and throughput per optimisation", ""]
    lines.append("`%s`" % meta["command"])
    lines.append("")
    lines.append("%s; model %s parameters in %d tensors (%d buckets of <= %.2g MiB), %d layers, d=%d, "
                 "vocab %d, seq %d; %d micro-batches of %d sequences per rank per step (%d tokens); "
                 "%d timed steps after %d warm-up x %d launch(es), medians; load average %s -> %s; BLAS %s; glibc malloc %s."
                 % (meta["date"], f"{meta['params']:,}", meta["tensors"], meta["buckets"], args.bucket_mb,
                    args.layers, args.d, args.vocab, args.seq, args.micro, args.mb, args.micro * args.mb * args.seq,
                    args.steps, args.warmup, args.repeat,
                    "/".join("%.2f" % x for x in meta["load_start"]), "/".join("%.2f" % x for x in meta["load_end"]), meta["blas"], meta["malloc"]))
    for world in args.worlds:
        G = rph(args, world)
        lines += ["", "### %d ranks (%d simulated host%s of %d)" % (world, world // G, "s" if world // G > 1 else "", G), ""]
        bks = list(args.backends)
        both = "hccl" in bks and "gloo" in bks
        lines += table_head(bks, ("comm share", "tokens/s", "speed-up"), (["hccl/gloo"] if both else []) + ["max loss dev."])
        for row in args.rows:
            cells = "| %s |" % ROWS[row]
            for b in bks:
                r = res[world][b][row]
                base = res[world][b][args.rows[0]]
                cells += " %.1f%% | %.0f | %.2fx |" % (100 * r["share"], r["tok_s"], r["tok_s"] / base["tok_s"])
            if both:
                cells += " %.2f |" % (res[world]["hccl"][row]["tok_s"] / res[world]["gloo"][row]["tok_s"])
            cells += " %.1e |" % max(meta["dev"][world][b][row] for b in bks)
            lines.append(cells)
        lines += ["", "Where a step's time goes (ms, medians over steps of the mean over ranks; *other* = "
                  "forward, backward and waiting for the CPU):", ""]
        lines += table_head(bks, ("step", "comm", "optimizer", "accumulate", "other"))
        for row in args.rows:
            cells = "| %s |" % ROWS[row]
            for b in bks:
                r = res[world][b][row]
                cells += " %.0f | %.0f | %.0f | %.0f | %.0f |" % (
                    r["step_ms"], r["comm_ms"], r["opt_ms"], r["acc_ms"],
                    r["step_ms"] - r["comm_ms"] - r["opt_ms"] - r["acc_ms"])
            lines.append(cells)
    lines += ["", "## Bars", ""]
    for name, ok, detail in meta["bars"]:
        lines.append("- %s: **%s** (%s)" % (name, "met" if ok else "not met", detail))
    lines.append("")
    return "\n".join(lines)


def plot(res, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = len(args.worlds)
    fig, axes = plt.subplots(2, n, figsize=(4.2 * n, 5.4), squeeze=False)
    colors = {"hccl": "#c0392b", "gloo": "#7f8c8d"}
    for j, world in enumerate(args.worlds):
        xs = list(range(len(args.rows)))
        w = 0.8 / len(args.backends)
        for k, b in enumerate(args.backends):
            off = [x - 0.4 + w * (k + 0.5) for x in xs]
            axes[0][j].bar(off, [res[world][b][r]["tok_s"] for r in args.rows], w, label=b, color=colors.get(b))
            axes[1][j].bar(off, [100 * res[world][b][r]["share"] for r in args.rows], w, label=b, color=colors.get(b))
        for i, (ax, yl) in enumerate(((axes[0][j], "tokens/s"), (axes[1][j], "communication share %"))):
            ax.set_xticks(xs)
            ax.set_xticklabels([r for r in args.rows])
            ax.set_ylabel(yl)
            ax.grid(axis="y", alpha=0.3)
        axes[0][j].set_title("%d ranks" % world)
        axes[0][j].legend(fontsize=8)
    fig.text(0.5, 0.01, "  ".join(SHORT[r] for r in args.rows), ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=72)
    plt.close(fig)


def rph(args, world):
    if args.ranks_per_host:
        return args.ranks_per_host
    return 2 if world >= 4 and world % 2 == 0 else 1


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        return worker(json.loads(sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", default="2,4", help="rank counts (default 2,4)")
    ap.add_argument("--backends", default="hccl,gloo")
    ap.add_argument("--rows", default="abcde")
    ap.add_argument("--steps", type=int, default=10, help="timed optimizer steps per configuration")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--micro", type=int, default=4, help="micro-batches per optimizer step")
    ap.add_argument("--mb", type=int, default=1, help="sequences per micro-batch")
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--bucket-mb", type=float, default=1.0)
    ap.add_argument("--ranks-per-host", type=int, default=0,
                    help="ranks per simulated host (default: 2 with 4+ ranks, else 1)")
    ap.add_argument("--repeat", type=int, default=1, help="launches per rank count; medians over all their timed steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-4, help="max |loss - loss of row a| allowed")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per launch")
    ap.add_argument("--glibc-malloc", action="store_true",
                    help="leave glibc's malloc trim/mmap thresholds at their defaults in the ranks")
    ap.add_argument("--quick", action="store_true", help="few steps, small model (a smoke test)")
    ap.add_argument("--build", default=None,
                    help="CMake build dir: workers import hccl from BUILD/python; default --out BUILD/bench-train")
    ap.add_argument("--out", default=None, help="results dir (default BUILD/bench-train, BUILD = build)")
    args = ap.parse_args()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    if args.build:
        pyd = os.path.join(os.path.abspath(args.build), "python")
        os.environ["PYTHONPATH"] = pyd + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    if args.out is None:
        args.out = os.path.join(os.path.abspath(args.build) if args.build else os.path.join(root, "build"), "bench-train")
    if args.quick:
        args.steps, args.warmup, args.layers, args.d, args.vocab, args.seq = 3, 1, 2, 64, 256, 16
    args.worlds = [int(x) for x in args.worlds.split(",")]
    args.backends = args.backends.split(",")
    args.rows = list(args.rows)
    assert args.rows[0] == "a" or "a" not in args.rows
    os.makedirs(args.out, exist_ok=True)
    cmd = " ".join(["python3", "bench/train/train_bench.py"] + sys.argv[1:])
    load_start = loadavg()
    res = {}
    for world in args.worlds:
        G = rph(args, world)
        if world % G:
            raise SystemExit("--ranks-per-host %d does not divide %d ranks" % (G, world))
        cfg = {k: getattr(args, k) for k in ("steps", "warmup", "micro", "mb", "seq", "d", "layers",
                                             "heads", "vocab", "lr", "bucket_mb", "seed", "rows", "backends",
                                             "glibc_malloc")}
        cfg.update(ranks_per_host=G)
        runs = []
        for rep in range(args.repeat):
            t0 = time.time()
            l0 = loadavg()[0]
            runs.append(launch(cfg, world, args.timeout))
            for b in args.backends:
                line = []
                for row in args.rows:
                    s = summarise(runs[-1:], world, b, row, args.warmup)
                    line.append("%s %.0f tok/s %.0f%% (step %.0f comm %.0f opt %.0f acc %.0f ms) cpu %.2f"
                                % (row, s["tok_s"], 100 * s["share"], s["step_ms"], s["comm_ms"], s["opt_ms"],
                                   s["acc_ms"], s["cpu_per_rank"]))
                print("[%d ranks, %s, run %d, %.0f s, load %.2f -> %.2f]\n  %s"
                      % (world, b, rep + 1, time.time() - t0, l0, loadavg()[0], "\n  ".join(line)), flush=True)
        res[world] = {b: {row: summarise(runs, world, b, row, args.warmup) for row in args.rows}
                      for b in args.backends}
    load_end = loadavg()

    # loss curves: every row and backend against row (a) of the first backend
    ref_b = args.backends[0]
    dev, failures = {}, []
    for world in args.worlds:
        dev[world] = {}
        ref = res[world][ref_b][args.rows[0]]["loss"]
        for b in args.backends:
            dev[world][b] = {}
            for row in args.rows:
                d = max(abs(x - y) for x, y in zip(res[world][b][row]["loss"], ref))
                dev[world][b][row] = d
                if not d <= args.tol:
                    failures.append("%d ranks %s row %s: max |loss - loss(a)| = %.3g > %g" % (world, b, row, d, args.tol))
        print("%d ranks: loss %s (row a, %s); max deviation of any row/backend %.2e"
              % (world, " ".join("%.3f" % x for x in ref), ref_b, max(max(v.values()) for v in dev[world].values())))

    bars = []
    if "a" in args.rows and "e" in args.rows:
        for world in args.worlds:
            for b in args.backends:
                a, e = res[world][b]["a"], res[world][b]["e"]
                bars.append(("%d ranks %s: comm share (a) -> (e) falls" % (world, b), e["share"] < a["share"],
                             "%.1f%% -> %.1f%%" % (100 * a["share"], 100 * e["share"])))
                bars.append(("%d ranks %s: (e) >= 1.5x (a) tokens/s" % (world, b), e["tok_s"] >= 1.5 * a["tok_s"],
                             "%.2fx" % (e["tok_s"] / a["tok_s"])))
    if "hccl" in args.backends and "gloo" in args.backends:
        for world in args.worlds:
            rat = {r: res[world]["hccl"][r]["tok_s"] / res[world]["gloo"][r]["tok_s"] for r in args.rows}
            bars.append(("%d ranks: hccl tokens/s >= gloo on every row" % world, min(rat.values()) >= 1.0,
                         ", ".join("%s %.2f" % (r, v) for r, v in rat.items())))
    bars.append(("every row's loss curve matches row (a) within %g" % args.tol, not failures,
                 "max deviation %.2e" % max(max(max(v.values()) for v in dev[w].values()) for w in args.worlds)))

    first = res[args.worlds[0]][args.backends[0]][args.rows[0]]
    meta = {"command": cmd, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_start": load_start,
            "load_end": load_end, "params": first["params"], "tensors": first["tensors"],
            "buckets": first["buckets"], "blas": first["blas"], "malloc": first["malloc"], "dev": dev, "bars": bars}
    md = render(res, args, meta)
    with open(os.path.join(args.out, "train_bench.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "train_bench.json"), "w") as f:
        json.dump({"args": vars(args), "meta": meta, "results": {str(w): v for w, v in res.items()}}, f, indent=1)
    try:
        plot(res, args, os.path.join(args.out, "train_bench.png"))
    except ImportError as e:
        print("no plot: %s" % e)
    print(md)
    print("wrote %s/train_bench.{md,json,png}" % os.path.abspath(args.out))
    if failures:
        print("LOSS MISMATCH:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
