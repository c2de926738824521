#!/usr/bin/env bash
# test_compare_args.sh SRCDIR - bench/compare.sh refuses malformed or out-of-range
# options with a usage error (exit 2, "error: ..."), not a Python traceback and not a
# run. Nothing is built or run: every case also names an unknown library, which is
# refused after the options checked here, so even a regression cannot start a benchmark
# (the cases after the loop say how they stay safe).
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
# No library at all, --from-json with a file that is missing, not JSON or not a
# results.json, and an --out that is a file: usage errors too (once a ZeroDivisionError
# after the ceilings had run, and tracebacks, the last after the build). --build is an
# empty folder with --no-build and only "ours" (no packages) is named, so that even a
# regression builds and runs nothing but the ceilings' compile and stops there.
T=$(mktemp -d /tmp/compare-args.XXXXXX)
trap 'rm -rf "$T"' EXIT
echo 'not json' > "$T/bad.json"
echo '{"meta": {}}' > "$T/foreign.json"
for args in "--libs ," "--libs=" "--from-json $T/none.json" "--from-json $T/bad.json" "--from-json $T/foreign.json" \
            "--libs ours --out $T/bad.json"; do
    # shellcheck disable=SC2086
    err=$(timeout 30 "$SRC/bench/compare.sh" $args --no-build --no-plot --build "$T/build" 2>&1 >/dev/null)
    rc=$?
    if [ $rc = 2 ] && ! grep -q Traceback <<<"$err" && grep -q "error: bad --" <<<"$err"; then
        echo "ok   $args"
    else
        echo "FAIL $args: exit $rc: $err"
        fails=$((fails + 1))
    fi
done
echo "$fails failure(s)"
[ $fails = 0 ]
