"""ctest train_bench_quick: run the training benchmark in quick mode (2 ranks, hccl and
gloo, every row) and check its outputs.

    check_train_bench.py BENCH_SCRIPT OUT_DIR
"""
import json
import os
import subprocess
import sys


def main():
    script, out = sys.argv[1], sys.argv[2]
    for name in ("train_bench.md", "train_bench.json", "train_bench.png"):
        if os.path.exists(os.path.join(out, name)):
            os.unlink(os.path.join(out, name))
    cmd = [sys.executable, script, "--quick", "--worlds", "2", "--backends", "hccl,gloo",
           "--out", out, "--timeout", "240"]
    print(" ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    assert rc == 0, "train_bench.py exited %d (a loss mismatch or a failed launch, see above)" % rc

    md = open(os.path.join(out, "train_bench.md")).read()
    for row in "abcde":
        assert "| (%s) " % row in md, "row (%s) missing from the table" % row
    assert "hccl/gloo" in md
    assert os.path.getsize(os.path.join(out, "train_bench.png")) > 1000

    res = json.load(open(os.path.join(out, "train_bench.json")))
    dev = res["meta"]["dev"]["2"]
    worst = max(d for b in dev.values() for d in b.values())
    print("max loss deviation from row (a): %.3g" % worst)
    assert worst <= 1e-4, worst
    for b in ("hccl", "gloo"):
        for row in "abcde":
            r = res["results"]["2"][b][row]
            assert r["tok_s"] > 0 and 0 <= r["share"] < 1, (b, row, r["tok_s"], r["share"])
            assert len(r["loss"]) == 4 and r["loss"][-1] < r["loss"][0] + 0.5, (b, row, r["loss"])
    # the ranks ran with the benchmark's malloc settings unless the caller set its own
    want = "/".join(os.environ.get(v, str(256 << 20)) for v in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"))
    assert res["meta"]["malloc"] == "trim/mmap thresholds " + want, res["meta"]["malloc"]
    assert "glibc malloc trim/mmap thresholds " + want in md
    print("ok")


if __name__ == "__main__":
    main()
