#!/usr/bin/env bash
# test_perf_run.sh BINDIR - runs all_reduce_perf through hcclrun with 2 and 3 ranks
# (-b 8 -e 64K) and checks the exit status and the nccl-tests table: one header,
# one row per size with 13 columns (size = count * 4, #wrong 0), the footer lines.
# Then every other benchmark once with 2 ranks over a few sizes, all_reduce_perf under
# the Slurm, Open MPI and MPICH variables, and the crowded-host
# agreement with 2 ranks bound one per CPU and with 2 ranks on one CPU; an unknown
# HCCL_SOCKET_FAMILY, and numbers outside their variables' ranges; settings that differ
# between the ranks of a job (HCCL_SHM_DISABLE on one rank; HCCL_ALGO on one rank); a
# /dev/shm too small for any ring.
set -u
BIN=${1:?usage: test_perf_run.sh BINDIR}
HCCLRUN="$BIN/hcclrun"
unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT
export HCCL_CONNECT_TIMEOUT=${HCCL_CONNECT_TIMEOUT:-30}
fails=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
T=$(mktemp -d /tmp/perf-run.XXXXXX)
trap 'rm -rf "$T"' EXIT

for n in 2 3; do
    timeout 120 "$HCCLRUN" -n $n all_reduce_perf -b 8 -e 64K -f 4 -w 2 -n 5 > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc = 0 ] && pass "all_reduce_perf with $n ranks" || { fail "all_reduce_perf with $n ranks: exit $rc"; cat "$T/err"; }
    [ "$(grep -c '^# Collective test starting' "$T/out")" = 1 ] && pass "only rank 0 prints" || fail "only rank 0 prints"
    grep -q "AllReduce: $n ranks ($n processes x 1 thread)" "$T/out" && pass "header names $n ranks" ||
        fail "header names $n ranks"
    [ "$(grep -c '^#  Rank ' "$T/out")" = $n ] && pass "one device line per rank" || fail "one device line per rank"
    grep -Eq '^# +size +count +type +redop +root +time +algbw +busbw +#wrong +time +algbw +busbw +#wrong$' "$T/out" &&
        pass "column header" || fail "column header"
    bad=$(awk '/^ / {
        if (NF != 13 || $2 * 4 != $1 || $3 != "float" || $4 != "sum" || $5 != -1 || $9 != 0 || $13 != 0) { print; next }
        for (i = 6; i <= 12; i++) if (i != 9 && $i !~ /^[0-9]+(\.[0-9]+)?$/) { print; next }
        d = $8 - $7 * 2 * (n - 1) / n; if (d > 0.011 || d < -0.011) print  # busbw = algbw * 2(n-1)/n
    }' n=$n "$T/out")
    sizes=$(awk '/^ / { printf "%s ", $1 }' "$T/out")
    [ -z "$bad" ] && [ "$sizes" = "8 32 128 512 2048 8192 32768 " ] && pass "rows well formed ($sizes)" ||
        { fail "rows well formed"; echo "$bad"; echo "sizes: $sizes"; }
    grep -q '^# Out of bounds values : 0 OK$' "$T/out" && grep -Eq '^# Avg bus bandwidth : [0-9.e+-]+$' "$T/out" &&
        pass "footer" || { fail "footer"; tail -4 "$T/out"; }
done

for b in all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
    timeout 120 "$HCCLRUN" -n 2 ${b}_perf -b 8 -e 4K -f 8 -w 1 -n 2 -r 1 > "$T/out" 2> "$T/err"
    rc=$?
    rows=$(grep -c '^ ' "$T/out")
    [ $rc = 0 ] && [ "$rows" = 4 ] && grep -q '^# Out of bounds values : 0 OK$' "$T/out" && pass "${b}_perf with 2 ranks" ||
        { fail "${b}_perf with 2 ranks: exit $rc, $rows rows"; cat "$T/out" "$T/err"; }
done

# Under srun, mpirun (Open MPI) or MPICH each process is one rank too: the variables of
# every launcher HcclCommInitFromEnv reads, not RANK/WORLD_SIZE only (hcclrun supplies
# the root address and port; the wrapper renames its variables).
for L in "SLURM_PROCID SLURM_NTASKS SLURM_LOCALID" "OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK" \
    "PMI_RANK PMI_SIZE MPI_LOCALRANKID"; do
    set -- $L
    printf '#!/bin/sh\nexport %s=$RANK %s=$WORLD_SIZE %s=$LOCAL_RANK\nunset RANK WORLD_SIZE LOCAL_RANK\nexec "$@"\n' \
        "$1" "$2" "$3" > "$T/as_launcher.sh"
    chmod +x "$T/as_launcher.sh"
    timeout 120 "$HCCLRUN" -n 2 "$T/as_launcher.sh" "$BIN/all_reduce_perf" -b 8 -e 8 -w 1 -n 2 > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc = 0 ] && grep -q "AllReduce: 2 ranks (2 processes x 1 thread)" "$T/out" &&
        [ "$(grep -c '^# Collective test starting' "$T/out")" = 1 ] && pass "all_reduce_perf under $1/$2: one rank each" ||
        { fail "all_reduce_perf under $1/$2: exit $rc"; cat "$T/out" "$T/err"; }
done

# mpirun inside an sbatch script: the ranks inherit the script's SLURM_PROCID=0 and
# SLURM_NTASKS; Open MPI's variables, which differ per rank, must win.
printf '#!/bin/sh\nexport OMPI_COMM_WORLD_RANK=$RANK OMPI_COMM_WORLD_SIZE=$WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK=$LOCAL_RANK\nexport SLURM_PROCID=0 SLURM_NTASKS=$WORLD_SIZE SLURM_LOCALID=0\nunset RANK WORLD_SIZE LOCAL_RANK\nexec "$@"\n' \
    > "$T/as_launcher.sh"
timeout 120 "$HCCLRUN" -n 2 "$T/as_launcher.sh" "$BIN/all_reduce_perf" -b 8 -e 8 -w 1 -n 2 > "$T/out" 2> "$T/err"
rc=$?
[ $rc = 0 ] && grep -q "AllReduce: 2 ranks (2 processes x 1 thread)" "$T/out" &&
    pass "all_reduce_perf under mpirun in an sbatch script (SLURM_PROCID=0 on every rank)" ||
    { fail "all_reduce_perf under mpirun in an sbatch script: exit $rc"; cat "$T/out" "$T/err"; }

# Whether a host is crowded (more ranks than CPUs) is agreed from the CPUs the ranks may
# run on together: 2 ranks bound one per CPU are not; 2 ranks sharing one CPU are.
cpus=$(taskset -pc $$ | sed 's/.*: *//')
first=$(echo "$cpus" | sed 's/[-,].*//')
if [ "$(nproc)" -ge 2 ]; then
    HCCL_DEBUG=INFO HCCL_DEBUG_SUBSYS=INIT timeout 120 "$HCCLRUN" -n 2 --bind-to core all_reduce_perf -b 8 -e 8 -w 1 -n 2 \
        > "$T/out" 2> "$T/err"
    [ "$(grep -c 'a CPU per rank' "$T/err")" = 2 ] && ! grep -q 'more ranks than CPUs' "$T/err" &&
        pass "2 ranks bound one per CPU: not crowded" || { fail "2 ranks bound one per CPU: not crowded"; cat "$T/err"; }
else
    echo "skip 2 ranks bound one per CPU (one CPU only)"
fi
HCCL_DEBUG=INFO HCCL_DEBUG_SUBSYS=INIT timeout 120 taskset -c "$first" "$HCCLRUN" -n 2 all_reduce_perf -b 8 -e 8 -w 1 -n 2 \
    > "$T/out" 2> "$T/err"
[ "$(grep -c 'more ranks than CPUs on a host' "$T/err")" = 2 ] && pass "2 ranks on one CPU: crowded" ||
    { fail "2 ranks on one CPU: crowded"; cat "$T/err"; }

# An HCCL_SOCKET_FAMILY the library does not know is reported, and the job still runs
# (over AF_INET).
HCCL_SOCKET_FAMILY=garbage timeout 120 "$HCCLRUN" -n 2 all_reduce_perf -b 8 -e 8 -w 1 -n 2 > "$T/out" 2> "$T/err"
rc=$?
[ $rc = 0 ] && grep -q 'HCCL_SOCKET_FAMILY=garbage is neither AF_INET nor AF_INET6' "$T/err" &&
    pass "unknown HCCL_SOCKET_FAMILY: a WARN, then AF_INET" ||
    { fail "unknown HCCL_SOCKET_FAMILY: exit $rc"; cat "$T/err"; }

# Numbers outside a variable's range are reported with what is used instead, and the
# job runs with that (a negative spin used to mean "poll forever").
HCCL_SHM_DISABLE=1 HCCL_NET_SPIN_US=-1 HCCL_SOCKET_NCONN=99 HCCL_EXEC_TIMEOUT=-5 HCCL_FLIGHT_RECORDER_SIZE=1000000 \
    timeout 120 "$HCCLRUN" -n 2 all_reduce_perf -b 8 -e 1M -f 32 -w 1 -n 2 -c 1 > "$T/out" 2> "$T/err"
rc=$?
ok=1
for w in 'HCCL_NET_SPIN_US=-1 is outside 0..1000000; using 0' 'HCCL_SOCKET_NCONN=99 is outside 1..8; using 8' \
    'HCCL_EXEC_TIMEOUT=-5 is outside 0..9223372036854775807; using 1836' \
    'HCCL_FLIGHT_RECORDER_SIZE=1000000 is outside 0..65536; using 65536'; do
    grep -qF "$w" "$T/err" || { ok=0; echo "missing: $w"; }
done
[ $rc = 0 ] && [ $ok = 1 ] && awk '/^ +[0-9]/ {n++; if ($9 != 0 || $13 != 0) bad++} END {exit !(n == 4 && !bad)}' "$T/out" &&
    pass "out-of-range numbers: WARNs, then the range's bound or the default" ||
    { fail "out-of-range numbers: exit $rc"; cat "$T/err" "$T/out"; }

# HCCL_SHM_DISABLE=1 on one rank of a host: its pairs stay on TCP on both sides (the
# others' handshakes once read its messages as theirs), results are right.
cat > "$T/rank1.sh" <<'EOS'
#!/bin/sh
[ "$RANK" = "$ONLY_RANK" ] && export $ONLY_VAR
exec "$@"
EOS
chmod +x "$T/rank1.sh"
for tool in all_reduce_perf all_gather_perf alltoall_perf; do
    ONLY_RANK=1 ONLY_VAR=HCCL_SHM_DISABLE=1 timeout 120 "$HCCLRUN" -n 3 "$T/rank1.sh" "$BIN/$tool" -b 8 -e 4M -f 64 \
        -w 1 -n 2 -c 1 > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc = 0 ] && ! grep -q WARN "$T/err" &&
        awk '/^ +[0-9]/ {n++; if ($9 != 0 || ($13 != "n/a" && $13 != 0)) bad++} END {exit !(n >= 4 && !bad)}' "$T/out" &&
        pass "$tool, HCCL_SHM_DISABLE on rank 1 only: right results" ||
        { fail "$tool, HCCL_SHM_DISABLE on rank 1 only: exit $rc"; cat "$T/err" "$T/out"; }
done

# HCCL_ALGO on one rank over TCP, where the two algorithms never make a rank read the
# other's message (Bruck against the ring at 3 ranks): every rank fails at once naming
# the mismatch, not after HCCL_EXEC_TIMEOUT.
t0=$(date +%s)
HCCL_SHM_DISABLE=1 HCCL_EXEC_TIMEOUT=60 ONLY_RANK=2 ONLY_VAR=HCCL_ALGO=level1:NB timeout 120 "$HCCLRUN" -n 3 \
    "$T/rank1.sh" "$BIN/all_gather_perf" -b 8 -e 8 -w 1 -n 2 -c 1 > "$T/out" 2> "$T/err"
rc=$?
dt=$(($(date +%s) - t0))
[ $rc != 0 ] && [ $dt -lt 30 ] && grep -q 'configuration mismatch' "$T/err" &&
    pass "HCCL_ALGO on one rank: a configuration mismatch after ${dt} s" ||
    { fail "HCCL_ALGO on one rank: exit $rc after ${dt} s"; cat "$T/err"; }

# /dev/shm too small for the rings (a private 64 KiB tmpfs, where this runs as root):
# every pair falls back to TCP, results stay right, and each rank says so in one WARN
# naming the communicator and the ranks it could not reach over shared memory.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    timeout 120 unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /dev/shm && exec "$@"' sh \
        "$HCCLRUN" -n 3 "$BIN/all_reduce_perf" -b 8 -e 64K -f 16 -w 1 -n 2 -c 1 > "$T/out" 2> "$T/err"
    rc=$?
    nwarn=$(grep -c 'shared memory with 2 rank(s) of this host could not be set up (ranks' "$T/err")
    [ $rc = 0 ] && [ "$nwarn" = 3 ] &&
        awk '/^ +[0-9]/ {n++; if ($9 != 0 || $13 != 0) bad++} END {exit !(n >= 3 && !bad)}' "$T/out" &&
        pass "a full /dev/shm: TCP, right results, one WARN per rank naming its pairs" ||
        { fail "a full /dev/shm: exit $rc, $nwarn WARN lines naming pairs"; cat "$T/err" "$T/out"; }
else
    echo "skip a full /dev/shm (needs root and unshare -m)"
fi

echo "$fails failure(s)"
[ $fails = 0 ]
