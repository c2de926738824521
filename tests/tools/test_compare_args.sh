#!/usr/bin/env bash
# test_compare_args.sh SRCDIR - bench/compare.sh refuses malformed or out-of-range
# options with a usage error (exit 2, "error: ..."), not a Python traceback and not a
# run. Nothing is built or run: every case also names an unknown library, which is
# refused after the options checked here, so even a regression cannot start a benchmark.
set -u
SRC=${1:?usage: test_compare_args.sh SRCDIR}
fails=0
for args in "--sizes 8" "--sizes x:1M" "--sizes 1M:8" "--sizes=-8:8" "--np abc" "--np 0" "--np 2,,3" \
            "--set 2" "--set x:allreduce" "--set 0:allreduce" "--factor 1" "--iters 0" "--repeat 0" \
            "--warmup -1" "--timeout 0" "--jobs 0"; do
    # shellcheck disable=SC2086
    err=$(timeout 30 "$SRC/bench/compare.sh" $args --no-build --no-plot --libs no-such-lib 2>&1 >/dev/null)
    rc=$?
    if [ $rc = 2 ] && ! grep -q Traceback <<<"$err" && ! grep -q "no-such-lib" <<<"$err" &&
        grep -q "error: bad" <<<"$err"; then
        echo "ok   $args"
    else
        echo "FAIL $args: exit $rc: $err"
        fails=$((fails + 1))
    fi
done
echo "$fails failure(s)"
[ $fails = 0 ]
