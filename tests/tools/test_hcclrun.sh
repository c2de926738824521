#!/usr/bin/env bash
# test_hcclrun.sh HCCLRUN - tests of the hcclrun launcher with small shell programs:
# usage errors, the variables every rank gets, exit status propagation, a failing
# rank stopping the others (SIGTERM, then SIGKILL after 3 s), signal forwarding (a
# second signal kills at once), no processes left behind by a failed or signalled job,
# --tag-output, and finding a program next to the hcclrun executable.
set -u
HCCLRUN=${1:?usage: test_hcclrun.sh path/to/hcclrun}
HCCLRUN=$(cd "$(dirname "$HCCLRUN")" && pwd)/$(basename "$HCCLRUN")
T=$(mktemp -d /tmp/hcclrun-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
check_rc() { # name expected actual
    if [ "$2" = "$3" ]; then pass "$1 (exit $3)"; else fail "$1: exit $3, expected $2"; fi
}

# --- usage ------------------------------------------------------------------------
"$HCCLRUN" >/dev/null 2>&1; check_rc "no arguments" 2 $?
"$HCCLRUN" -h | grep -q "usage: hcclrun" && pass "-h prints usage" || fail "-h prints usage"
"$HCCLRUN" -n 0 true 2>/dev/null; check_rc "-n 0" 2 $?
"$HCCLRUN" -n x true 2>/dev/null; check_rc "-n x" 2 $?
"$HCCLRUN" -n 2 2>/dev/null; check_rc "no program" 2 $?
"$HCCLRUN" -n 2 --bogus true 2>/dev/null; check_rc "unknown option" 2 $?
"$HCCLRUN" -n 1 --nnodes 2 true 2>/dev/null; check_rc "--nnodes 2 without --master-port" 2 $?
"$HCCLRUN" -n 1 --nnodes 2 --node-rank 2 --master-port 5000 true 2>/dev/null; check_rc "--node-rank >= --nnodes" 2 $?
# Without --master-addr a node other than 0 would look for rank 0 on 127.0.0.1, itself.
"$HCCLRUN" -n 1 --nnodes 2 --node-rank 1 --master-port 5000 true 2>"$T/err"; check_rc "--nnodes 2 without --master-addr" 2 $?
grep -q -- "--master-addr is required with --nnodes > 1" "$T/err" && pass "... and says so" || { fail "... and says so"; cat "$T/err"; }
"$HCCLRUN" -n 1 --master-port 70000 true 2>/dev/null; check_rc "port out of range" 2 $?
# More ranks in all than a communicator may have (65536): refused before any rank starts.
"$HCCLRUN" -n 4096 --nnodes 17 --node-rank 16 --master-port 5000 true 2>"$T/err"; check_rc "--nnodes x -n > 65536" 2 $?
grep -q "69632 ranks: a communicator has at most 65536" "$T/err" && pass "... and says so" ||
    { fail "... and says so"; cat "$T/err"; }
"$HCCLRUN" -n 1 no-such-program-xyz 2>/dev/null; check_rc "program not found" 127 $?
# A path is checked before any rank starts: one line, not one per rank plus a "rank 0 exited".
"$HCCLRUN" -n 3 "$T/no-such-program-xyz" 2>"$T/err"; check_rc "program path not found" 127 $?
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "not an executable file" "$T/err" && pass "... one line says so" ||
    { fail "... one line says so"; cat "$T/err"; }
"$HCCLRUN" -n 2 "$T" 2>/dev/null; check_rc "a directory as the program" 127 $?
# An executable whose interpreter is missing: execve says ENOENT; the line must not
# claim the program itself is missing, and names the rank.
printf '#!/no/such/interpreter\n' > "$T/bad_interp"; chmod +x "$T/bad_interp"
"$HCCLRUN" -n 1 "$T/bad_interp" 2>"$T/err"; check_rc "program with a missing interpreter" 127 $?
grep -q "rank 0: cannot execute .*bad_interp: .*interpreter on its #! line" "$T/err" && pass "... says the interpreter is missing" ||
    { fail "... says the interpreter is missing"; cat "$T/err"; }

# --- success and variables ----------------------------------------------------------
"$HCCLRUN" -n 3 true; check_rc "3 ranks succeed" 0 $?
"$HCCLRUN" -n 2 -- sh -c 'exit 0'; check_rc "-- separator" 0 $?
# The value forms of -n: "-n 2", "-n2", "-n=2", "--nproc-per-node=2", "--nproc_per_node 2".
for form in "-n 2" "-n2" "-n=2" "--nproc-per-node=2" "--nproc-per-node 2" "--nproc_per_node=2"; do
    # shellcheck disable=SC2086
    out=$("$HCCLRUN" $form sh -c 'echo "$LOCAL_WORLD_SIZE"' 2>&1)
    [ "$out" = "$(printf '2\n2')" ] && pass "'$form' starts 2 ranks" || fail "'$form' starts 2 ranks: $out"
done
cat > "$T/show_env.sh" <<'EOS'
#!/bin/sh
echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT $HCCL_JOB_SECRET" > "$OUTDIR/env.$RANK"
EOS
chmod +x "$T/show_env.sh"
unset HCCL_JOB_SECRET RANK WORLD_SIZE MASTER_ADDR MASTER_PORT
OUTDIR="$T" "$HCCLRUN" -n 3 "$T/show_env.sh"; check_rc "env program" 0 $?
ok=1; port=""; secret=""
for r in 0 1 2; do
    read -r rank ws lr lws gr addr p s < "$T/env.$r" || { ok=0; continue; }
    [ "$rank $ws $lr $lws $gr $addr" = "$r 3 $r 3 0 127.0.0.1" ] || ok=0
    [ -z "$port" ] && port=$p; [ "$p" = "$port" ] || ok=0
    [ -z "$secret" ] && secret=$s; [ "$s" = "$secret" ] || ok=0
done
[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65534 ] || ok=0
[[ "$secret" =~ ^[0-9a-f]{16}$ ]] || ok=0
[ $ok = 1 ] && pass "single node variables (port $port, secret $secret)" || { fail "single node variables"; cat "$T"/env.*; }
OUTDIR="$T" "$HCCLRUN" -n 1 "$T/show_env.sh"; read -r _ _ _ _ _ _ _ s2 < "$T/env.0"
[ "$s2" != "$secret" ] && pass "secret is random per job" || fail "secret is random per job"

rm -f "$T"/env.*
OUTDIR="$T" "$HCCLRUN" --nnodes 2 --node-rank 1 --master-addr 198.18.0.1 --master-port 29400 -n 2 "$T/show_env.sh"
check_rc "two-node launch (node 1)" 0 $?
read -r l2 < "$T/env.2"; read -r l3 < "$T/env.3"
s_a=${l2##* }
[ "${l2% *}" = "2 4 0 2 1 198.18.0.1 29400" ] && [ "${l3% *}" = "3 4 1 2 1 198.18.0.1 29400" ] &&
    pass "two-node variables" || fail "two-node variables: '$l2' '$l3'"
OUTDIR="$T" "$HCCLRUN" --nnodes 2 --node-rank 0 --master-addr 198.18.0.1 --master-port 29400 -n 2 "$T/show_env.sh"
read -r l0 < "$T/env.0"
[ "${l0##* }" = "$s_a" ] && [[ "$s_a" =~ ^[0-9a-f]{16}$ ]] && pass "two-node secret derived identically" ||
    fail "two-node secret: '$s_a' vs '${l0##* }'"
HCCL_JOB_SECRET=cafe1234 OUTDIR="$T" "$HCCLRUN" -n 1 "$T/show_env.sh"; read -r l0 < "$T/env.0"
[ "${l0##* }" = cafe1234 ] && pass "user's HCCL_JOB_SECRET kept" || fail "user's HCCL_JOB_SECRET kept: $l0"

# --- failures ----------------------------------------------------------------------
t0=$(now)
"$HCCLRUN" -n 3 sh -c 'if [ "$RANK" = 1 ]; then exit 7; fi; exec sleep 30' 2>"$T/err"; rc=$?
e=$(elapsed "$t0")
check_rc "failing rank's status propagates" 7 $rc
awk -v e="$e" 'BEGIN { exit !(e < 3) }' && pass "others stopped quickly (${e}s)" || fail "others stopped quickly (${e}s)"
grep -q "rank 1 .*status 7" "$T/err" && [ "$(wc -l < "$T/err")" = 1 ] && pass "one line names the failing rank" ||
    { fail "one line names the failing rank"; cat "$T/err"; }

t0=$(now)
"$HCCLRUN" -n 2 sh -c 'trap "" TERM; if [ "$RANK" = 0 ]; then sleep 0.3; exit 3; fi; exec sleep 30' 2>"$T/err"; rc=$?
e=$(elapsed "$t0")
check_rc "rank ignoring SIGTERM" 3 $rc
grep -q "1 rank(s) still running at the end of the grace period: SIGKILL" "$T/err" && pass "the SIGKILL is said" ||
    { fail "the SIGKILL is said"; cat "$T/err"; }
awk -v e="$e" 'BEGIN { exit !(e >= 3 && e < 8) }' && pass "SIGKILL after the grace period (${e}s)" ||
    fail "SIGKILL after the grace period (${e}s)"

"$HCCLRUN" -n 2 sh -c 'if [ "$RANK" = 1 ]; then kill -KILL $$; fi; exec sleep 30' 2>"$T/err"; rc=$?
check_rc "rank killed by a signal" 137 $rc
grep -q "rank 1 .*signal 9" "$T/err" && pass "signal named" || { fail "signal named"; cat "$T/err"; }

# Started with SIGCHLD ignored (exec keeps SIG_IGN), the kernel would reap the ranks
# itself and send no SIGCHLD: hcclrun must still see them end, not wait forever.
if command -v perl >/dev/null; then
    timeout -s KILL 10 perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV or die' "$HCCLRUN" -n 2 sh -c 'exit 3' 2>/dev/null
    check_rc "started with SIGCHLD ignored" 3 $?
fi

# A failed or signalled job leaves nothing running: what a rank started (a shell's
# background command, a nested shell) gets SIGKILL once the ranks are gone.
alive_of() { for f in "$@"; do [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && echo "$f"; done; }
rm -f "$T"/orphan.*
"$HCCLRUN" -n 2 sh -c 'sleep 30 & echo $! > "'"$T"'/orphan.$RANK"
    if [ "$RANK" = 1 ]; then while [ ! -s "'"$T"'/orphan.0" ]; do sleep 0.02; done; exit 4; fi; wait' 2>"$T/err"
check_rc "failing rank with background children" 4 $?
left=$(alive_of "$T"/orphan.0 "$T"/orphan.1)
[ -z "$left" ] && grep -q "killed 2 process(es) the ranks left running" "$T/err" &&
    pass "a failed job leaves no processes behind" || { fail "a failed job leaves no processes behind: $left"; cat "$T/err"; }
rm -f "$T"/orphan.* "$T"/ready.*
"$HCCLRUN" -n 2 sh -c 'sh -c "sleep 30 & echo \$! > '"$T"'/orphan.\$RANK; wait"; true' 2>"$T/err" &
pid=$!
for _ in $(seq 100); do [ -s "$T/orphan.0" ] && [ -s "$T/orphan.1" ] && break; sleep 0.05; done
kill -TERM $pid; wait $pid
left=$(alive_of "$T"/orphan.0 "$T"/orphan.1)
[ -z "$left" ] && pass "a signalled job leaves no processes behind" ||
    { fail "a signalled job leaves no processes behind: $left"; cat "$T/err"; }

# --- signal forwarding ---------------------------------------------------------------
for sig in TERM HUP USR1; do
    rm -f "$T"/ready.* "$T"/sig.*
    OUTDIR="$T" "$HCCLRUN" -n 2 sh -c \
        'trap "echo got > \"$OUTDIR/sig.$RANK\"; exit 0" '$sig'; : > "$OUTDIR/ready.$RANK"; while :; do sleep 0.05; done' &
    pid=$!
    for _ in $(seq 100); do [ -e "$T/ready.0" ] && [ -e "$T/ready.1" ] && break; sleep 0.05; done
    kill -$sig $pid
    wait $pid; rc=$?
    # Ranks that catch it and exit 0: SIGUSR1 is a notice (0); TERM and HUP interrupted the job (128+N).
    want=0; [ $sig = TERM ] && want=143; [ $sig = HUP ] && want=129
    [ $rc = $want ] && [ -e "$T/sig.0" ] && [ -e "$T/sig.1" ] && pass "SIG$sig forwarded to every rank, exit $want" ||
        fail "SIG$sig forwarded to every rank (exit $rc, want $want)"
done
rm -f "$T"/ready.*
"$HCCLRUN" -n 2 sh -c ': > "'"$T"'/ready.$RANK"; exec sleep 30' 2>"$T/err" &
pid=$!
for _ in $(seq 100); do [ -e "$T/ready.0" ] && [ -e "$T/ready.1" ] && break; sleep 0.05; done
kill -TERM $pid; wait $pid; rc=$?
check_rc "SIGTERM to default-handling ranks gives 128+15" 143 $rc

# A rank that catches SIGTERM and carries on: a second signal kills it at once.
rm -f "$T"/ready.*
"$HCCLRUN" -n 2 sh -c 'trap "" TERM; : > "'"$T"'/ready.$RANK"; while :; do sleep 0.05; done' 2>"$T/err" &
pid=$!
for _ in $(seq 100); do [ -e "$T/ready.0" ] && [ -e "$T/ready.1" ] && break; sleep 0.05; done
kill -TERM $pid
sleep 0.5
kill -0 $pid 2>/dev/null && pass "ranks ignoring SIGTERM get the grace period" ||
    fail "ranks ignoring SIGTERM get the grace period"
t0=$(now)
kill -TERM $pid; wait $pid; rc=$?
e=$(elapsed "$t0")
check_rc "second SIGTERM kills ranks that ignore the first" 137 $rc
awk -v e="$e" 'BEGIN { exit !(e < 3) }' && grep -q "again: killing the ranks" "$T/err" &&
    pass "second signal: SIGKILL at once (${e}s)" || { fail "second signal: SIGKILL at once (${e}s)"; cat "$T/err"; }

# --- output tagging -------------------------------------------------------------------
"$HCCLRUN" -n 2 --tag-output sh -c 'echo "hello $RANK"; echo "oops" >&2; printf "no newline"' >"$T/out" 2>"$T/err"
check_rc "--tag-output run" 0 $?
grep -qx "\[0\] hello 0" "$T/out" && grep -qx "\[1\] hello 1" "$T/out" && grep -qx "\[1\] no newline" "$T/out" &&
    grep -qx "\[0\] oops" "$T/err" && ! grep -q oops "$T/out" && pass "--tag-output prefixes lines" ||
    { fail "--tag-output prefixes lines"; cat "$T/out" "$T/err"; }
# A line over 64 KiB comes out as prefixed pieces that put it back together.
"$HCCLRUN" -n 2 --tag-output sh -c 'head -c 150000 /dev/zero | tr "\0" y; echo' >"$T/out"
[ "$(grep -c '^\[0\] y' "$T/out")" = 3 ] && [ "$(grep '^\[1\] ' "$T/out" | sed 's/^\[1\] //' | tr -d '\n' | wc -c)" = 150000 ] &&
    ! grep -q '^[^[]' "$T/out" && pass "--tag-output splits an overlong line into prefixed pieces" ||
    { fail "--tag-output splits an overlong line into prefixed pieces"; cut -c1-40 "$T/out"; }
# Two pipes per rank: past the descriptor limit the job stops (exit 1) with one line
# naming the rank and the limit, not a bare "pipe: Too many open files".
(ulimit -n 64 && exec "$HCCLRUN" -n 40 --tag-output sleep 5) >/dev/null 2>"$T/err"; check_rc "--tag-output past ulimit -n" 1 $?
[ "$(wc -l < "$T/err")" = 1 ] && grep -q "no pipe for rank [0-9]*: .*raise 'ulimit -n'" "$T/err" &&
    pass "... names the rank and the limit" || { fail "... names the rank and the limit"; cat "$T/err"; }

# --- stdin goes to rank 0 only -------------------------------------------------------------
echo "line-for-rank-0" | "$HCCLRUN" -n 2 sh -c 'read -r x; echo "$RANK:$x"' > "$T/out"
grep -qx "0:line-for-rank-0" "$T/out" && grep -qx "1:" "$T/out" && pass "stdin reaches rank 0 only" ||
    { fail "stdin reaches rank 0 only"; cat "$T/out"; }

# --- --bind-to core ------------------------------------------------------------------------
ncpu=$(nproc)
"$HCCLRUN" -n "$ncpu" --bind-to core sh -c 'echo "$LOCAL_RANK $(taskset -pc $$ | sed "s/.*: //")"' > "$T/out"
check_rc "--bind-to core run" 0 $?
allowed=$(taskset -pc $$ | sed 's/.*: //')
ok=1
for l in $(seq 0 $((ncpu - 1))); do
    got=$(awk -v l=$l '$1 == l { print $2 }' "$T/out")
    # a single CPU, each rank its own
    case "$got" in ''|*,*|*-*) ok=0 ;; esac
done
[ "$(awk '{ print $2 }' "$T/out" | sort -u | wc -l)" = "$ncpu" ] || ok=0
[ $ok = 1 ] && pass "--bind-to core gives each rank its own CPU (of $allowed)" ||
    { fail "--bind-to core gives each rank its own CPU"; cat "$T/out"; }
"$HCCLRUN" -n 1 --bind-to=none sh -c 'taskset -pc $$ | sed "s/.*: //"' > "$T/out"
[ "$(cat "$T/out")" = "$allowed" ] && pass "--bind-to none leaves the affinity alone" ||
    { fail "--bind-to none leaves the affinity alone"; cat "$T/out"; }
"$HCCLRUN" -n $((ncpu + 1)) --bind-to core true 2>"$T/err"; check_rc "--bind-to core with more ranks than CPUs" 2 $?
grep -q "CPUs available" "$T/err" && pass "... says why" || { fail "... says why"; cat "$T/err"; }
"$HCCLRUN" -n 1 --bind-to socket true 2>/dev/null; check_rc "--bind-to socket (unknown) is a usage error" 2 $?

# --- program next to hcclrun -----------------------------------------------------------
mkdir -p "$T/bin"
cp "$HCCLRUN" "$T/bin/hcclrun"
printf '#!/bin/sh\nexit 5\n' > "$T/bin/next_to_me"; chmod +x "$T/bin/next_to_me"
"$T/bin/hcclrun" -n 2 next_to_me 2>/dev/null; check_rc "program found next to hcclrun" 5 $?

echo "$fails failure(s)"
[ $fails = 0 ]
