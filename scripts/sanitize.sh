#!/bin/sh
# scripts/sanitize.sh - the test suites under sanitizers.
#
#   scripts/sanitize.sh [asan] [tsan | tsan-quick]        (default: asan tsan)
#
# asan: builds the whole tree with -DHCCL_SANITIZE=address,undefined into build-asan and
#       runs the unit tests (unit_*) and the threads-as-ranks conformance tests there
#       (process-mode tests fork after threads exist, which ASan's allocator does not
#       survive; they run unsanitized in make test).
# tsan: builds with -DHCCL_SANITIZE=thread into build-tsan and runs the threads-as-ranks
#       conformance tests (conf_threads_*, conf_initall_*, conf_*_threads*) and the unit
#       tests that use threads (stream runtime, shm, slots; test_algo, the algorithms over the
#       fake network, runs outside ctest with a 25-minute bound: under TSan it needs
#       more than its ctest timeout). About 9 minutes on two cores, build included (18
#       when they are busy).
# tsan-quick: the bounded subset CI runs (.ci/run): builds only what it runs into
#       build-tsan, then the threads-as-ranks conformance suites with 2, 3 and 4 ranks
#       (direct algorithms with and without the accumulator), sub-communicators,
#       queries and config, and the stream runtime, shm and slots unit tests. About 3 minutes
#       on two cores, build included (twice that when they are busy).
# Any sanitizer report fails its test (halt_on_error / exitcode), so ctest's verdict is
# the sanitizer's. Prints a summary; exits non-zero on any failure.
#
# Environment: JOBS (build parallelism, default nproc), CTEST_JOBS (default 2),
# SANITIZE_EXTRA_CTEST_ARGS (passed to every ctest run, e.g. "-E conf_procs_8").
set -u

cd "$(dirname "$0")/.." || exit 2
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

build() { # dir sanitizer [targets...] (default: all)
    dir=$1
    san=$2
    shift 2
    targets=""
    [ $# -gt 0 ] && targets="--target $*"
    echo "== sanitize: configuring $dir with HCCL_SANITIZE=$san"
    if ! cmake -S "$ROOT" -B "$ROOT/$dir" -DHCCL_SANITIZE="$san" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$ROOT/$dir.configure.log" 2>&1; then
        tail -20 "$ROOT/$dir.configure.log"
        return 1
    fi
    echo "== sanitize: building $dir${targets:+ ($*)}"
    # shellcheck disable=SC2086
    if ! cmake --build "$ROOT/$dir" -j "$JOBS" $targets >"$ROOT/$dir.build.log" 2>&1; then
        grep -E "error|Error" "$ROOT/$dir.build.log" | head -30
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

run_bin() { # dir label seconds command... (from dir; a test whose ctest timeout is too short here)
    dir=$1
    label=$2
    secs=$3
    shift 3
    echo "== sanitize: $label: $*"
    out="$ROOT/$dir/sanitize_$(echo "$label" | tr ' /' '__').log"
    (cd "$ROOT/$dir" && timeout "$secs" "$@") >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        note "$label: ok"
    else
        note "$label: FAIL (exit $rc$([ $rc -eq 124 ] && echo ": over ${secs} s"); log $out)"
        grep -E "WARNING: ThreadSanitizer|ERROR: (Address|Thread)Sanitizer|FAIL" "$out" | sort | uniq -c | head -20
    fi
}

# allocator_may_return_null: test_acl_runtime asks for 64 TiB and wants an error back
# (under TSan large aclrtMalloc buffers come from the allocator, not mmap).
TSAN_OPTS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:allocator_may_return_null=1"

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
            export TSAN_OPTIONS="$TSAN_OPTS"
            run_ctest build-tsan "tsan threads-as-ranks conformance" -R '^conf_(threads_|initall_|.*_threads)'
            run_ctest build-tsan "tsan threaded unit" -R '^unit_test_(acl_stream|acl_runtime|acl_nospin|shm|slots|spin)$'
            run_bin build-tsan "tsan unit test_algo" 1500 tests/unit/test_algo
            unset TSAN_OPTIONS
        else
            note "tsan: FAIL (build; logs build-tsan.*.log)"
        fi
        ;;
    tsan-quick)
        if build build-tsan thread hccl_conf test_acl_stream test_acl_runtime test_acl_nospin test_shm test_slots test_spin; then
            export TSAN_OPTIONS="$TSAN_OPTS"
            run_ctest build-tsan "tsan-quick threads-as-ranks conformance" \
                -R '^conf_(threads_[234]|subcomm_threads_5|queries_threads|config_threads)$'
            run_ctest build-tsan "tsan-quick threaded unit" -R '^unit_test_(acl_stream|acl_runtime|acl_nospin|shm|slots|spin)$'
            unset TSAN_OPTIONS
        else
            note "tsan-quick: FAIL (build; logs build-tsan.*.log)"
        fi
        ;;
    *)
        echo "usage: $0 [asan] [tsan | tsan-quick]" >&2
        exit 2
        ;;
    esac
done

printf "sanitize summary:%b\n" "$SUMMARY"
[ $STATUS -eq 0 ] && echo "sanitize: PASS" || echo "sanitize: FAIL"
exit $STATUS
