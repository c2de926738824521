#!/usr/bin/python3
"""plot.py - busbw against size (log-log), one line per library, from compare.py's results.

    bench/plot.py BUILD/bench-results/results.json [OUTDIR] [--inplace]

Writes OUTDIR/busbw_np<N>.png (one panel per op) for every rank count in the results,
with the run's ceilings (memcpy, 2-way loopback TCP exchange) as dashed lines. busbw is
computed from the time column (bytes / time * the nccl-tests factor), best round kept.
"""
import json
import math
import os
import sys

STYLE = {  # lib: (label, colour, line style, marker)
    "ours": ("ours (default transport)", "tab:red", "-", "o"),
    "ours-tcp": ("ours, HCCL_SHM_DISABLE=1", "tab:orange", "--", "s"),
    "ompi": ("Open MPI (default: shared memory)", "tab:blue", "-", "^"),
    "ompi-tcp": ("Open MPI, btl tcp,self", "tab:cyan", "--", "v"),
    "gloo": ("Gloo (torch.distributed)", "tab:green", "-", "D"),
}


def size_label(n):
    for unit, sh in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << sh:
            return "%g%s" % (n / (1 << sh), unit)
    return str(n)


def plot_results(path, outdir, inplace=False):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(path) as f:
        data = json.load(f)
    meta, ceil, results = data["meta"], data.get("ceilings", {}), data["results"]
    key = "ip_busbw" if inplace else "oop_busbw"
    best = {}
    for r in results:
        k = (r["np"], r["op"], r["lib"], r["size"])
        bw = r.get(key)
        if bw and bw > 0 and (k not in best or bw > best[k]):
            best[k] = bw
    written = []
    for n in sorted({k[0] for k in best}):
        ops = []
        for k in best:
            if k[0] == n and k[1] not in ops:
                ops.append(k[1])
        order = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"]
        ops.sort(key=order.index)
        cols = min(2, len(ops))
        rows = int(math.ceil(len(ops) / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
        for i, op in enumerate(ops):
            ax = axes[i // cols][i % cols]
            for lib in STYLE:
                pts = sorted((k[3], v) for k, v in best.items() if k[0] == n and k[1] == op and k[2] == lib)
                if not pts:
                    continue
                label, colour, ls, marker = STYLE[lib]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], ls, color=colour, marker=marker,
                        markersize=3.5, linewidth=1.3, label=label)
            if ceil.get("memcpy_GBps"):
                ax.axhline(ceil["memcpy_GBps"], color="grey", linestyle=":", linewidth=1,
                           label="memcpy, 1 thread (%.1f GB/s)" % ceil["memcpy_GBps"])
            if ceil.get("tcp_exchange_GBps"):
                ax.axhline(ceil["tcp_exchange_GBps"], color="black", linestyle="-.", linewidth=0.8,
                           label="2-way TCP exchange (%.2f GB/s)" % ceil["tcp_exchange_GBps"])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title("%s, %d ranks" % (op, n), fontsize=10)
            ax.set_xlabel("size (bytes)", fontsize=8)
            ax.set_ylabel("busbw (GB/s)", fontsize=8)
            ticks = sorted({k[3] for k in best if k[0] == n and k[1] == op})
            if len(ticks) > 8:
                ticks = ticks[::2]
            ax.set_xticks(ticks)
            ax.set_xticklabels([size_label(t) for t in ticks], fontsize=7)
            ax.tick_params(axis="y", labelsize=7)
            ax.grid(True, which="major", linewidth=0.3)
        for j in range(len(ops), rows * cols):
            axes[j // cols][j % cols].axis("off")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
        fig.suptitle("busbw vs size, %d ranks (%s, commit %s%s; %s)" %
                     (n, meta.get("date", ""), meta.get("commit", ""), "+dirty" if meta.get("dirty") else "",
                      "shm + TCP" if meta.get("shm_transport") else "library TCP only"), fontsize=9)
        fig.tight_layout(rect=(0, 0.17 if rows == 1 else 0.09, 1, 0.95))
        png = os.path.join(outdir, "busbw_np%d.png" % n)
        fig.savefig(png, dpi=90)
        plt.close(fig)
        written.append(png)
    return written


def main():
    args = [x for x in sys.argv[1:] if not x.startswith("--")]
    if not args:
        sys.stderr.write(__doc__)
        return 2
    out = args[1] if len(args) > 1 else os.path.dirname(os.path.abspath(args[0]))
    for png in plot_results(args[0], out, "--inplace" in sys.argv):
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
