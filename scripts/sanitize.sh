#!/bin/sh
# scripts/sanitize.sh - the test suites under sanitizers.
#
#   scripts/sanitize.sh [asan] [tsan]        (default: both)
#
# asan: builds the whole tree with -DHCCL_SANITIZE=address,undefined into build-asan and
#       runs the unit tests (unit_*) and the threads-as-ranks conformance tests there
#       (process-mode tests fork after threads exist, which ASan's allocator does not
#       survive; they run unsanitized in make test).
# tsan: builds with -DHCCL_SANITIZE=thread into build-tsan and runs the threads-as-ranks
#       conformance tests (conf_threads_*, conf_initall_*, conf_*_threads*) and the unit
#       tests that use threads (stream runtime, algorithms over the fake network, shm).
# Any sanitizer report fails its test (halt_on_error / exitcode), so ctest's verdict is
# the sanitizer's. Prints a summary; exits non-zero on any failure.
#
# Environment: JOBS (build parallelism, default nproc), CTEST_JOBS (default 2),
# SANITIZE_EXTRA_CTEST_ARGS (passed to every ctest run, e.g. "-E conf_procs_8").
set -u

cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}
CTEST_JOBS=${CTEST_JOBS:-2}
EXTRA=${SANITIZE_EXTRA_CTEST_ARGS:-}
WHICH=${*:-asan tsan}
SUMMARY=""
STATUS=0

note() {
    SUMMARY="$SUMMARY\n  $1"
    case $1 in *FAIL*) STATUS=1 ;; esac
}

build() { # dir sanitizer
    echo "== sanitize: configuring $1 with HCCL_SANITIZE=$2"
    if ! cmake -S "$ROOT" -B "$ROOT/$1" -DHCCL_SANITIZE="$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$ROOT/$1.configure.log" 2>&1; then
        tail -20 "$ROOT/$1.configure.log"
        return 1
    fi
    echo "== sanitize: building $1"
    if ! cmake --build "$ROOT/$1" -j "$JOBS" >"$ROOT/$1.build.log" 2>&1; then
        grep -E "error|Error" "$ROOT/$1.build.log" | head -30
        return 1
    fi
}

run_ctest() { # dir label args...
    dir=$1
    label=$2
    shift 2
    echo "== sanitize: $label: ctest $*"
    out="$ROOT/$dir/sanitize_$(echo "$label" | tr ' /' '__').log"
    # shellcheck disable=SC2086
    (cd "$ROOT/$dir" && ctest --output-on-failure --timeout 900 -j "$CTEST_JOBS" "$@" $EXTRA) >"$out" 2>&1
    rc=$?
    tot=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 failed of \2/p' "$out" | tail -1)
    if grep -q "No tests were found" "$out"; then
        note "$label: FAIL (no tests matched)"
    elif [ $rc -eq 0 ]; then
        note "$label: ok (${tot:-?})"
    else
        note "$label: FAIL (${tot:-see log}; log $out)"
        grep -E "^\s+[0-9]+ - " "$out" | head -40
        grep -E "ERROR: (Address|Leak|Thread|Undefined)Sanitizer|WARNING: ThreadSanitizer|runtime error:" "$out" |
            sort | uniq -c | head -20
    fi
}

for w in $WHICH; do
    case $w in
    asan)
        if build build-asan address,undefined; then
            export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1"
            export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
            run_ctest build-asan "asan+ubsan unit" -R '^unit_'
            # Ranks as threads only: the process-mode tests fork ranks from a parent whose
            # root-listener thread may hold ASan's allocator lock at the fork, and the
            # child then deadlocks in its first malloc (a sanitizer limitation, not ours:
            # glibc's malloc is fork-safe).
            run_ctest build-asan "asan+ubsan conformance (threads)" -R '^conf_(threads_|initall_|.*_threads)'

            unset ASAN_OPTIONS UBSAN_OPTIONS
        else
            note "asan+ubsan: FAIL (build; logs build-asan.*.log)"
        fi
        ;;
    tsan)
        if build build-tsan thread; then
            export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
            run_ctest build-tsan "tsan threads-as-ranks conformance" -R '^conf_(threads_|initall_|.*_threads)'
            run_ctest build-tsan "tsan threaded unit" -R '^unit_test_(acl_stream|acl_runtime|acl_nospin|algo|shm)$'
            unset TSAN_OPTIONS
        else
            note "tsan: FAIL (build; logs build-tsan.*.log)"
        fi
        ;;
    *)
        echo "usage: $0 [asan] [tsan]" >&2
        exit 2
        ;;
    esac
done

printf "sanitize summary:%b\n" "$SUMMARY"
[ $STATUS -eq 0 ] && echo "sanitize: PASS" || echo "sanitize: FAIL"
exit $STATUS
