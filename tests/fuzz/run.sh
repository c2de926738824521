#!/bin/sh
# tests/fuzz/run.sh - build the libFuzzer targets with clang and run each for a bounded time.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET ...]
#
# Targets (sources in tests/fuzz/, seed corpora in tests/fuzz/corpus/<target>/):
#   net         the message-header check path of src/core/net.c (fake transport)
#   ranktable   src/boot/ranktable.c: hccl_ranktable_parse
#   launch_env  src/boot/launch_env.c: hccl_launch_env_read
# Each is built from the plain C sources it needs (plus cJSON) with
# -fsanitize=fuzzer,address,undefined into $FUZZ_OUT (default build-fuzz/), and run for
# SECONDS_PER_TARGET (default $FUZZ_SECONDS or 20) on a working copy of its seed corpus,
# so the corpus in the tree is never modified. A crash, leak, timeout or sanitizer report
# fails the run; the reproducer is left in $FUZZ_OUT/artifacts/ and printed.
# Needs clang with libFuzzer (Debian: clang + libclang-rt-<ver>-dev) and libcjson-dev:
# installed with apt-get when missing and we are root (or have sudo).
set -eu

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SECS=${1:-${FUZZ_SECONDS:-20}}
[ $# -gt 0 ] && shift
TARGETS=${*:-net ranktable launch_env}
OUT=${FUZZ_OUT:-$ROOT/build-fuzz}
CC=${FUZZ_CC:-clang}
mkdir -p "$OUT/artifacts"

apt_install() {
    if [ "$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "fuzz: cannot install $* (not root, no sudo)" >&2
        return 1
    fi
    echo "fuzz: installing $* with apt-get" >&2
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# A trivial fuzzer must link: clang and its libFuzzer runtime are there.
probe() {
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
        >"$OUT/probe.c"
    "$CC" -fsanitize=fuzzer,address "$OUT/probe.c" -o "$OUT/probe" >/dev/null 2>&1
}
if ! command -v "$CC" >/dev/null 2>&1; then apt_install clang || true; fi
if ! probe; then
    ver=$("$CC" -dumpversion 2>/dev/null | cut -d. -f1 || echo 14)
    apt_install "libclang-rt-${ver}-dev" || apt_install clang || true
    if ! probe; then
        echo "fuzz: FAIL: $CC cannot link -fsanitize=fuzzer (install clang and libclang-rt-${ver:-14}-dev)" >&2
        exit 1
    fi
fi
if [ ! -f /usr/include/cjson/cJSON.h ]; then apt_install libcjson-dev; fi

CFLAGS="-g -O1 -std=gnu11 -D_GNU_SOURCE -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=undefined -I$ROOT/include -I$ROOT/src"
UTIL=$(echo src/util/*.c) # all of them, as the library links them

sources() {
    case $1 in
    net) echo "tests/fuzz/fuzz_net.c src/core/net.c src/core/peermem.c src/transport/shm/slots.c src/transport/shm/shm.c src/boot/socket.c src/algo/op_name.c src/reduce/reduce.c src/reduce/convert.c $UTIL" ;;
    ranktable) echo "tests/fuzz/fuzz_ranktable.c src/boot/ranktable.c $UTIL" ;;
    launch_env) echo "tests/fuzz/fuzz_launch_env.c src/boot/launch_env.c $UTIL" ;;
    *) echo "" ;;
    esac
}

status=0
summary=""
for t in $TARGETS; do
    src=$(sources "$t")
    if [ -z "$src" ]; then
        echo "fuzz: unknown target $t" >&2
        exit 2
    fi
    echo "fuzz: building $t"
    # shellcheck disable=SC2086
    if ! $CC $CFLAGS $src -lcjson -lpthread -lm -o "$OUT/fuzz_$t" 2>"$OUT/build_$t.log"; then
        cat "$OUT/build_$t.log" >&2
        summary="$summary\n  $t: BUILD FAILED"
        status=1
        continue
    fi
    work="$OUT/corpus_$t"
    rm -rf "$work"
    mkdir -p "$work"
    cp "$ROOT/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
    echo "fuzz: running $t for ${SECS}s"
    log="$OUT/run_$t.log"
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        "$OUT/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/${t}-" "$work" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
        summary="$summary\n  $t: ok (${runs:-?} runs, ${cov:-cov: ?})"
    else
        tail -40 "$log" >&2
        art=$(ls "$OUT/artifacts/${t}-"* 2>/dev/null | head -1 || true)
        summary="$summary\n  $t: FAILED (log $log${art:+, reproducer $art: run $OUT/fuzz_$t $art})"
        status=1
    fi
done
printf "fuzz summary:%b\n" "$summary"
exit $status
