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
# Every size suffix parse_size takes is listed (T as well: -e says "at most 1T").
"$AR" -h | grep -q "K, M, G, T suffixes" && pass "-h lists the T suffix" || fail "-h lists the T suffix"
"$AR" -b x 2>/dev/null; check_rc "bad size" 2 $?
"$AR" -b 12Q 2>/dev/null; check_rc "bad size suffix" 2 $?
"$AR" -b -5 2>/dev/null; check_rc "negative size" 2 $?
"$AR" -b 2M -e 1M 2>"$T/err"; check_rc "-b above -e" 2 $?
grep -q "invalid range: -b 2097152 is above -e 1048576" "$T/err" && pass "... with both sizes" || { fail "... with both sizes"; cat "$T/err"; }
"$AR" -d nosuch 2>/dev/null; check_rc "unknown dtype" 2 $?
"$AR" -o xor 2>/dev/null; check_rc "unknown op" 2 $?
# Collectives without a reduction ignore -o, but a misspelt one is refused as well (it
# once ran the benchmark as if -o were not there); a valid one still runs.
"$BIN/all_gather_perf" -o xor -b 8 -e 8 -n 1 -w 0 2>"$T/err" >/dev/null; check_rc "unknown op, all_gather" 2 $?
grep -q "invalid operation 'xor'" "$T/err" && pass "... named" || { fail "... named"; cat "$T/err"; }
"$BIN/broadcast_perf" -o max -b 8 -e 8 -n 1 -w 0 >/dev/null; check_rc "valid op, broadcast" 0 $?
"$AR" -a 7 2>/dev/null; check_rc "bad -a" 2 $?
"$AR" -z 2 2>/dev/null; check_rc "bad -z" 2 $?
"$AR" -n 2>/dev/null; check_rc "missing value" 2 $?
"$AR" extra 2>/dev/null; check_rc "stray argument" 2 $?
"$AR" -g 2 -r 2 -b 8 -e 8 >/dev/null 2>&1; check_rc "root outside the ranks" 2 $?
# A -e near SIZE_MAX once wrapped the buffer size (-e + margin) to a few bytes: SIGSEGV.
"$AR" -b 8 -e 18446744073709551615 -n 1 -w 0 >/dev/null 2>&1; check_rc "-e near SIZE_MAX" 2 $?
"$AR" -e 2T >/dev/null 2>&1; check_rc "-e above 1T" 2 $?
# An unknown option with letters after it: named, not the word before it.
"$AR" -b 8 -k4 2>"$T/err" >/dev/null; check_rc "unknown -k4" 2 $?
grep -q "invalid option '-k'" "$T/err" && pass "-k4 named" || { fail "-k4 named"; cat "$T/err"; }
# nccl-tests' options: scripts pass them with their "off" values, -t threads, -N cycles.
"$AR" -t 1 -g 1 -p 1 -G 0 -R 0 -M 0 -C 0 -y 0 -T 60 -N 1 -b 8 -e 8 -n 1 -w 0 > "$T/out"
check_rc "nccl-tests options with their defaults" 0 $?
grep -Eq '^ +8 +2 +float ' "$T/out" && pass "nccl-tests options run" || { fail "nccl-tests options run"; cat "$T/out"; }
"$AR" --nthreads 1 --ngpus 1 --parallel_init 0 --cudagraph 0 --local_register 0 --memory_report 0 \
    --report_cputime 0 --stream_null 0 --timeout 0 --run_cycles 1 -b 8 -e 8 -n 1 -w 0 > /dev/null
check_rc "nccl-tests long options" 0 $?
for o in "-G 1" "-R 1" "-M 1" "-J out.json"; do
    "$AR" $o -b 8 -e 8 2>"$T/err" >/dev/null; check_rc "unsupported $o" 2 $?
    grep -q "not supported here" "$T/err" && pass "$o says why" || { fail "$o says why"; cat "$T/err"; }
done
"$AR" -t 0 2>/dev/null; check_rc "-t 0" 2 $?
"$AR" -t 64 -g 32 2>/dev/null; check_rc "-t x -g above 1024" 2 $?
"$AR" -N -1 2>/dev/null; check_rc "-N -1" 2 $?
"$AR" -C 2 2>/dev/null; check_rc "-C 2" 2 $?
"$AR" -t 2 -g 2 -b 8 -e 8 -n 1 -w 0 > "$T/out"; check_rc "-t 2 -g 2" 0 $?
grep -q "4 ranks (1 process x 4 threads)" "$T/out" && pass "-t 2 -g 2: 4 thread ranks" || { fail "-t 2 -g 2 ranks"; cat "$T/out"; }
"$AR" -N 3 -b 8 -e 16 -f 2 -n 1 -w 0 > "$T/out"; check_rc "-N 3" 0 $?
rows=$(grep -c '^ ' "$T/out")
[ "$rows" = 6 ] && pass "-N 3 repeats the sweep" || { fail "-N 3 rows: $rows"; cat "$T/out"; }
"$AR" -C 1 -b 8 -e 8 -n 2 -w 0 > "$T/out"; check_rc "-C 1" 0 $?
grep -q "CPU time of the enqueue loop" "$T/out" && pass "-C 1 in header" || fail "-C 1 in header"
# -T 1 ends a size that runs for seconds (10M iterations) after about 1 s, with exit 1.
start=$SECONDS
"$AR" -g 2 -T 1 -b 8 -e 8 -n 10000000 -w 0 -c 0 2>"$T/err" >/dev/null; check_rc "-T 1 timeout" 1 $?
grep -q "timeout" "$T/err" && [ $((SECONDS - start)) -le 5 ] && pass "-T 1 message, in time" || { fail "-T 1 message"; cat "$T/err"; }

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
