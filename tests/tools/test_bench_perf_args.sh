#!/usr/bin/env bash
# test_bench_perf_args.sh SRCDIR - the comparison harness's other benchmarks,
# bench/gloo_perf.py and bench/mpi_perf.c, take their flags as tools/perf does: values
# outside tools/perf's ranges are usage errors (exit 2, no traceback), -e near SIZE_MAX
# is refused (mpi_perf crashed), a misspelt -o is refused where there is no reduction,
# and a factor that does not grow the size by an element steps one element (the sweep
# ended at -b). The runs are one rank of 8..32 bytes; each part is skipped when torch,
# or mpicc and mpirun, are missing.
set -u
SRC=${1:?usage: test_bench_perf_args.sh SRCDIR}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
fails=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
T=$(mktemp -d /tmp/bench-args.XXXXXX)
trap 'rm -rf "$T"' EXIT
unset RANK WORLD_SIZE

GLOO="$SRC/bench/gloo_perf.py"
for args in "-n -1" "-w -1" "-c -1" "-r -1" "-i 0" "--np 0" "-f 0.5" "-f nan" "-f inf" "-b 1K -e 8"; do
    # shellcheck disable=SC2086
    err=$(timeout 60 "$PY" "$GLOO" -C allreduce -b 8 -e 8 $args 2>&1 >/dev/null)
    rc=$?
    if [ $rc = 2 ] && ! grep -q Traceback <<<"$err" && grep -q "error: invalid" <<<"$err"; then
        pass "gloo_perf $args"
    else
        fail "gloo_perf $args: exit $rc: $err"
    fi
done
if "$PY" -c "import torch" 2>/dev/null; then
    sizes=$(timeout 120 "$PY" "$GLOO" -C allreduce --np 1 -b 8 -e 32 -f 1.01 -n 1 -w 0 | awk '/^ / {printf "%s ", $1}')
    [ "$sizes" = "8 12 16 20 24 28 32 " ] && pass "gloo_perf -f 1.01 reaches -e" || fail "gloo_perf -f 1.01 sizes: $sizes"
else
    echo "skip gloo_perf runs: no torch"
fi

if command -v mpicc >/dev/null && command -v mpirun >/dev/null && mpicc -O2 -o "$T/mpi_perf" "$SRC/bench/mpi_perf.c" -lm; then
    MPI=(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 1 "$T/mpi_perf" -C allreduce)
    for e in 18446744073709551615 2T 99999999999999999999G; do
        "${MPI[@]}" -b 8 -e $e -n 1 -w 0 >"$T/out" 2>&1
        rc=$?
        [ $rc = 2 ] && grep -q "invalid size (at most 1T)" "$T/out" && pass "mpi_perf -e $e" ||
            { fail "mpi_perf -e $e: exit $rc"; cat "$T/out"; }
    done
    # -o is checked for the collectives without a reduction too, as in tools/perf.
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 1 "$T/mpi_perf" -C allgather -o xor -b 8 -e 8 -n 1 -w 0 \
        >"$T/out" 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q "invalid operation 'xor'" "$T/out" && pass "mpi_perf -C allgather -o xor" ||
        { fail "mpi_perf -C allgather -o xor: exit $rc"; cat "$T/out"; }
    sizes=$("${MPI[@]}" -b 8 -e 32 -f 1.01 -n 1 -w 0 2>/dev/null | awk '/^ / {printf "%s ", $1}')
    [ "$sizes" = "8 12 16 20 24 28 32 " ] && pass "mpi_perf -f 1.01 reaches -e" || fail "mpi_perf -f 1.01 sizes: $sizes"
else
    echo "skip mpi_perf: no mpicc/mpirun, or it does not build"
fi
echo "$fails failure(s)"
[ $fails = 0 ]
