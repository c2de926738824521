#!/usr/bin/env bash
# test_perf_args.sh BINDIR - the benchmarks' command line without a launcher: usage
# errors exit 2, -h, size suffixes, -o avg reported as unsupported, -c 0 prints N/A,
# a root outside the ranks is refused, and -g N runs N ranks as threads.
set -u
BIN=${1:?usage: test_perf_args.sh BINDIR}
unset RANK WORLD_SIZE LOCAL_RANK
fails=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
check_rc() { if [ "$2" = "$3" ]; then pass "$1 (exit $3)"; else fail "$1: exit $3, expected $2"; fi; }
AR="$BIN/all_reduce_perf"
T=$(mktemp -d /tmp/perf-args.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$AR" -h | grep -q "usage: all_reduce_perf" && pass "-h" || fail "-h"
"$AR" -b x 2>/dev/null; check_rc "bad size" 2 $?
"$AR" -b 12Q 2>/dev/null; check_rc "bad size suffix" 2 $?
"$AR" -b -5 2>/dev/null; check_rc "negative size" 2 $?
"$AR" -b 2M -e 1M 2>/dev/null; check_rc "-b above -e" 2 $?
"$AR" -d nosuch 2>/dev/null; check_rc "unknown dtype" 2 $?
"$AR" -o xor 2>/dev/null; check_rc "unknown op" 2 $?
"$AR" -a 7 2>/dev/null; check_rc "bad -a" 2 $?
"$AR" -z 2 2>/dev/null; check_rc "bad -z" 2 $?
"$AR" -n 2>/dev/null; check_rc "missing value" 2 $?
"$AR" extra 2>/dev/null; check_rc "stray argument" 2 $?
"$AR" -g 2 -r 2 -b 8 -e 8 >/dev/null 2>&1; check_rc "root outside the ranks" 2 $?
# A -e near SIZE_MAX once wrapped the buffer size (-e + margin) to a few bytes: SIGSEGV.
"$AR" -b 8 -e 18446744073709551615 -n 1 -w 0 >/dev/null 2>&1; check_rc "-e near SIZE_MAX" 2 $?
"$AR" -e 2T >/dev/null 2>&1; check_rc "-e above 1T" 2 $?
# An unknown option with letters after it: named, not the word before it.
"$AR" -b 8 -t4 2>"$T/err" >/dev/null; check_rc "unknown -t4" 2 $?
grep -q "invalid option '-t'" "$T/err" && pass "-t4 named" || { fail "-t4 named"; cat "$T/err"; }

"$AR" -b 128K -e 128K -n 1 -w 0 > "$T/out"; check_rc "128K run" 0 $?
grep -Eq '^ +131072 +32768 +float +sum +-1 ' "$T/out" && pass "128K parsed" || { fail "128K parsed"; cat "$T/out"; }
# A factor that does not grow the size by an element (8 * 1.01, 0 * 2) steps one
# element instead of ending the sweep at -b.
"$AR" -b 8 -e 32 -f 1.01 -n 1 -w 0 > "$T/out"; check_rc "-f 1.01 run" 0 $?
sizes=$(awk '/^ / {printf "%s ", $1}' "$T/out")
[ "$sizes" = "8 12 16 20 24 28 32 " ] && pass "-f 1.01 reaches -e" || fail "-f 1.01 sizes: $sizes"
"$AR" -b 0 -e 32 -f 2 -d double -n 1 -w 0 > "$T/out"; check_rc "-b 0 -f 2 run" 0 $?
sizes=$(awk '/^ / {printf "%s ", $1}' "$T/out")
[ "$sizes" = "0 8 16 32 " ] && pass "-b 0 -f 2 reaches -e" || fail "-b 0 -f 2 sizes: $sizes"
"$AR" -b 1K -e 1K -n 1 -w 0 -c 0 > "$T/out"; check_rc "-c 0 run" 0 $?
grep -Eq '^ +1024 .* N/A$' "$T/out" && pass "-c 0 prints N/A" || { fail "-c 0 prints N/A"; cat "$T/out"; }
"$AR" -b 8 -e 8 -o avg > "$T/out"; check_rc "-o avg" 0 $?
grep -q "avg .*unsupported" "$T/out" && pass "avg reported unsupported" || fail "avg reported unsupported"
"$AR" -g 3 -b 8 -e 1K -f 4 -n 2 -w 1 -d all -o all -m 2 -z 1 -a 1 > "$T/out"; check_rc "-g 3 threads, all types and ops" 0 $?
rows=$(grep -c '^ ' "$T/out")
[ "$rows" = $((15 * 4 * 4)) ] && pass "rows for every type, op and size ($rows)" || fail "rows: $rows"
grep -q "3 ranks (1 process x 3 threads)" "$T/out" && pass "thread ranks in header" || fail "thread ranks in header"
"$BIN/sendrecv_perf" -g 2 -b 8 -e 64 -f 8 -n 2 -w 1 > "$T/out"; check_rc "sendrecv_perf -g 2" 0 $?
grep -Eq '^ +64 .*n/a +n/a +n/a +n/a$' "$T/out" && pass "sendrecv in-place n/a" || { fail "sendrecv in-place n/a"; cat "$T/out"; }
# Streams queue without bound: -n iterations between two synchronizations once held
# every queued operation's memory (-n 100000000: ~10 GB, OOM-killed). Peak RSS of a
# 300000-iteration run (timed and warm-up) stays small now (it was ~100 MB).
rss=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' \
      "$AR" -g 2 -b 8 -e 8 -n 300000 -w 300000 -c 0 2>&1)
if [ "$rss" -lt 48 ] 2>/dev/null; then pass "-n 300000: peak RSS ${rss} MB"; else fail "-n 300000: peak RSS '${rss}' MB"; fi

echo "$fails failure(s)"
[ $fails = 0 ]
