#!/bin/bash
# netns.sh - multi-host scenarios with "hosts" made of network namespaces.
#
#   netns.sh SCENARIO      run one scenario (exit 0 pass, 1 fail, 77 skipped)
#   netns.sh list          print the scenario names
#
# Topology: one bridge namespace (bridge br0) and 2 or 3 host namespaces; host i has
# lo and eth0 = 198.18.0.i/24 (and fd00:198:18::i/64 for the IPv6 scenario), a veth
# whose peer v<i> is a port of br0. Every rank runs inside its host's namespace with
# `ip netns exec` and HCCL_HOST_ID=host<i>. Namespaces are named hcclnetns-<pid>-*,
# the work directory $TMPDIR/hcclnetns-<pid>-*; the EXIT trap kills what runs in the
# namespaces and deletes them and the directory, even on failure; leftovers of runs
# that were killed outright (their pid is gone) are deleted at the next start.
#
# Needs root and `ip netns`; without them it prints "SKIP: ..." and exits 77.
#
# Environment: NETNS_RANK (the netns_rank program, required), HCCLRUN (hcclrun, for the
# hcclrun scenario), MPIRUN (default: mpirun in PATH), NETNS_KEEP=1 keeps the work
# directory, NETNS_VERBOSE=1 runs the ranks with -v.
#
# Every scenario also checks that the ranks' traffic crossed the veths: the eth0 byte
# counters of every host must grow by at least NETNS_MIN_BYTES (default 256 KiB) in
# each direction. The growth of each host's lo counters (traffic between ranks of one
# host, which uses TCP over loopback until a shared-memory transport takes over) is
# printed for information.
set -u

SCENARIOS="ranktable_v10_2x2 ranktable_v12_3x1 rootinfo_ifname_2x2 rootinfo_ifip_3x1 hcclrun_2x2 hostname_2x2
mpirun_2x2 ipv6_2x2 ipv6_mismatch_2x1 linkdown_2x2 linkflap_2x2 nconn_2x2 uneven_4x"
TOOLS="measure_nconn" # not tests: measurements (see sc_measure_nconn)
SCENARIO=${1:-}
if [ "$SCENARIO" = list ]; then
    echo $SCENARIOS
    exit 0
fi
if [ -z "$SCENARIO" ] || ! echo " $SCENARIOS $TOOLS " | tr '\n' ' ' | grep -q " $SCENARIO "; then
    echo "usage: netns.sh SCENARIO | list   (scenarios: $(echo $SCENARIOS))" >&2
    exit 2
fi

skip() {
    echo "SKIP: netns_$SCENARIO: $*"
    exit 77
}
fail() {
    echo "FAIL: netns_$SCENARIO: $*"
    FAILED=1
}

[ "$(id -u)" = 0 ] || skip "not root (network namespaces need root)"
command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is not installed"
[ -n "${NETNS_RANK:-}" ] && [ -x "$NETNS_RANK" ] || { echo "FAIL: NETNS_RANK (netns_rank) is not set or not executable" >&2; exit 1; }

# Variables of the caller's environment that would change what the ranks do.
for v in HCCL_IF_IP HCCL_SOCKET_IFNAME HCCL_SOCKET_FAMILY HCCL_IF_BASE_PORT HCCL_HOST_ID HCCL_ROOT_ADDR \
    HCCL_ROOT_PORT HCCL_JOB_SECRET HCCL_EXEC_TIMEOUT HCCL_WHITELIST_DISABLE HCCL_WHITELIST_FILE MASTER_ADDR \
    MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE SLURM_PROCID SLURM_NTASKS OMPI_COMM_WORLD_RANK \
    OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE ASCEND_RT_VISIBLE_DEVICES; do
    unset $v
done
export HCCL_CONNECT_TIMEOUT=${HCCL_CONNECT_TIMEOUT:-30}
export HCCL_DEBUG=${HCCL_DEBUG:-WARN}

PFX="hcclnetns-$$"
NS_BR="$PFX-br"
NSLIST=()
ETC_DIRS=()
PIDS=()
NAMES=()
FAILED=0
RANK_TIMEOUT=100 # netns_rank's own watchdog
T_START=$SECONDS

# Leftovers of killed runs: hcclnetns-<pid>-* whose pid no longer runs.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hcclnetns-[0-9]+-(br|h[0-9]+)$'); do
    p=${ns#hcclnetns-}
    p=${p%%-*}
    if ! kill -0 "$p" 2>/dev/null; then
        for q in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$q" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null && echo "netns: removed the leftover namespace $ns"
    fi
done
for d in /etc/netns/hcclnetns-[0-9]*-h*; do
    [ -d "$d" ] || continue
    p=${d#/etc/netns/hcclnetns-}
    p=${p%%-*}
    kill -0 "$p" 2>/dev/null || rm -rf "$d"
done

for d in "${TMPDIR:-/tmp}"/hcclnetns-[0-9]*-*; do
    [ -d "$d" ] && [ ! -e "$d/KEEP" ] || continue
    p=${d##*/hcclnetns-}
    p=${p%%-*}
    kill -0 "$p" 2>/dev/null || rm -rf "$d"
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hcclnetns-$$-$SCENARIO.XXXXXX") || { echo "FAIL: mktemp" >&2; exit 1; }
export HCCL_FLIGHT_RECORDER_DIR=$TMP

cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    { wait "${PIDS[@]}"; } 2>/dev/null
    for ns in "${NSLIST[@]}"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    for ((i = ${#NSLIST[@]} - 1; i >= 0; i--)); do ip netns del "${NSLIST[$i]}" 2>/dev/null; done
    for d in "${ETC_DIRS[@]}"; do rm -rf "$d"; done
    if [ "${NETNS_KEEP:-0}" = 1 ]; then
        touch "$TMP/KEEP"
        echo "netns: work directory kept: $TMP"
    else rm -rf "$TMP"; fi
    exit $rc
}
trap cleanup EXIT
trap 'echo "netns: interrupted"; exit 130' INT TERM HUP

# ---- topology -------------------------------------------------------------------------

mkns() {
    ip netns add "$1" 2>"$TMP/netns.err" || return 1
    NSLIST+=("$1")
    ip -n "$1" link set lo up
}

# setup_hosts N [v6|v6:LIST]   (v6: every host also gets its IPv6 address; v6:1,3: hosts 1 and 3 only)
setup_hosts() {
    local n=$1 v6=${2:-} v6hosts
    case "$v6" in v6:*) v6hosts=",${v6#v6:}," ;; *) v6hosts="" ;; esac
    mkns "$NS_BR" || skip "cannot create a network namespace: $(cat "$TMP/netns.err")"
    ip -n "$NS_BR" link add br0 type bridge 2>"$TMP/netns.err" || skip "cannot create a bridge: $(cat "$TMP/netns.err")"
    ip -n "$NS_BR" link set br0 up
    for ((i = 1; i <= n; i++)); do
        local ns=$PFX-h$i
        mkns "$ns" || skip "cannot create a network namespace: $(cat "$TMP/netns.err")"
        ip link add name eth0 netns "$ns" type veth peer name "v$i" netns "$NS_BR" 2>"$TMP/netns.err" ||
            skip "cannot create a veth pair: $(cat "$TMP/netns.err")"
        ip -n "$NS_BR" link set "v$i" master br0 up
        ip -n "$ns" addr add "198.18.0.$i/24" dev eth0
        if [ -n "$v6" ] && { [ -z "$v6hosts" ] || [[ $v6hosts == *,$i,* ]]; }; then
            ip -n "$ns" addr add "fd00:198:18::$i/64" dev eth0 nodad 2>"$TMP/netns.err" ||
                skip "cannot add an IPv6 address: $(cat "$TMP/netns.err")"
        fi
        ip -n "$ns" link set eth0 up
    done
    NHOSTS=$n
    echo "netns: $n hosts: $(for ((i = 1; i <= n; i++)); do printf '%s ' "$PFX-h$i=198.18.0.$i$([ -n "$v6" ] && { [ -z "$v6hosts" ] || [[ $v6hosts == *,$i,* ]]; } && echo ",fd00:198:18::$i")"; done)"
}

# ---- ranks -------------------------------------------------------------------------------

# start_on HOST NAME cmd... : run cmd in the host's namespace, output to $TMP/NAME.out
start_on() {
    local h=$1 name=$2
    shift 2
    ip netns exec "$PFX-h$h" env HCCL_HOST_ID="host$h" "$@" >"$TMP/$name.out" 2>&1 &
    PIDS+=($!)
    NAMES+=("$name")
}

# launch_ranks NHOSTS PER_HOST netns_rank-args... ; RANK_ENV (a function name, optional)
# prints extra VAR=value words for "rank host"; HOST_OF (an array, optional): the host of
# each rank instead (uneven hosts, ranks of a host not contiguous), PER_HOST unused.
launch_ranks() {
    local nh=$1 per=$2
    shift 2
    local n=$((nh * per)) v=()
    [ -n "${HOST_OF+x}" ] && n=${#HOST_OF[@]}
    [ "${NETNS_VERBOSE:-0}" = 1 ] && v=(-v)
    for ((r = 0; r < n; r++)); do
        local h extra=()
        if [ -n "${HOST_OF+x}" ]; then h=${HOST_OF[$r]}; else h=$((r / per + 1)); fi
        [ -n "${RANK_ENV:-}" ] && read -r -a extra <<<"$($RANK_ENV $r $h)"
        start_on $h "rank$r" env "${extra[@]}" "$NETNS_RANK" --rank $r --nranks $n --shared "$TMP/shared" \
            --timeout $RANK_TIMEOUT "${v[@]}" "$@"
    done
}

# wait_all LIMIT_S: wait for every started process; RCS[i] = exit status (124: killed
# at the limit).
wait_all() {
    local limit=$1 t0=$SECONDS
    while :; do
        local alive=0
        for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        if ((SECONDS - t0 > limit)); then
            fail "processes still running after $limit s; killing them"
            for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
            break
        fi
        sleep 0.2
    done
    RCS=()
    for i in "${!PIDS[@]}"; do
        wait "${PIDS[$i]}"
        RCS[$i]=$?
    done
}

# expect_rcs WANT: every process must have exited with WANT; prints their output on failure.
expect_rcs() {
    local want=$1 bad=0
    # A launcher that broke off (a shell error in it) started nothing: not a pass.
    [ ${#PIDS[@]} -gt 0 ] || { fail "no process was started"; return 1; }
    for i in "${!PIDS[@]}"; do
        if [ "${RCS[$i]}" != "$want" ]; then
            fail "${NAMES[$i]} exited with status ${RCS[$i]} (expected $want)"
            bad=1
        fi
    done
    for i in "${!PIDS[@]}"; do
        grep -h '^netns_rank ' "$TMP/${NAMES[$i]}.out" 2>/dev/null
    done
    if [ $bad = 1 ]; then show_logs; fi
    return $bad
}

show_logs() {
    for i in "${!NAMES[@]}"; do
        echo "---- ${NAMES[$i]} (last 40 lines of $TMP/${NAMES[$i]}.out) ----"
        tail -n 40 "$TMP/${NAMES[$i]}.out"
    done
}

reset_procs() {
    PIDS=()
    NAMES=()
    rm -f "$TMP/shared" "$TMP"/root*.bin
}

# ---- traffic counters --------------------------------------------------------------------

stat_of() { ip netns exec "$PFX-h$1" cat "/sys/class/net/$2/statistics/$3_bytes" 2>/dev/null || echo 0; }

declare -A CNT # CNT[TAG,host,name]: counters saved by snapshot and ip_counts

snapshot() { # snapshot TAG
    for ((i = 1; i <= NHOSTS; i++)); do
        CNT[$1,$i,etx]=$(stat_of $i eth0 tx)
        CNT[$1,$i,erx]=$(stat_of $i eth0 rx)
        CNT[$1,$i,lo]=$(stat_of $i lo tx)
    done
}

# check_traffic BEFORE AFTER: eth0 of every host sent and received at least MIN bytes.
check_traffic() {
    local min=${NETNS_MIN_BYTES:-262144} etx erx lo
    for ((i = 1; i <= NHOSTS; i++)); do
        etx=$((CNT[$2,$i,etx] - CNT[$1,$i,etx]))
        erx=$((CNT[$2,$i,erx] - CNT[$1,$i,erx]))
        lo=$((CNT[$2,$i,lo] - CNT[$1,$i,lo]))
        echo "netns: traffic host$i: eth0 tx $etx B, rx $erx B; lo (within host$i) $lo B"
        if ((etx < min || erx < min)); then
            fail "host$i's eth0 moved only $etx B out / $erx B in (at least $min B each way expected): the ranks' traffic did not cross the veth"
        fi
    done
}

# ---- rank tables ---------------------------------------------------------------------------

# ranktable VERSION NHOSTS PER_HOST FAMILY(4|6) PORTBASE(0 = no device_port) WITH_DEVICE_IP(0|1)
ranktable() {
    local ver=$1 nh=$2 per=$3 fam=$4 pbase=$5 dip=$6 servers="" pods=""
    for ((h = 1; h <= nh; h++)); do
        local ip="198.18.0.$h" devs=""
        [ "$fam" = 6 ] && ip="fd00:198:18::$h"
        for ((d = 0; d < per; d++)); do
            local r=$(((h - 1) * per + d)) dev
            dev="\"device_id\":\"$d\",\"rank_id\":\"$r\""
            [ "$dip" = 1 ] && dev="$dev,\"device_ip\":\"$ip\""
            [ "$pbase" != 0 ] && dev="$dev,\"device_port\":\"$((pbase + r))\""
            [ "$ver" = 1.2 ] && dev="$dev,\"super_device_id\":\"$r\""
            devs="$devs${devs:+,}{$dev}"
        done
        servers="$servers${servers:+,}{\"server_id\":\"host$h\",\"host_ip\":\"$ip\",\"device\":[$devs]}"
        pods="$pods${pods:+,}{\"server_id\":\"host$h\"}"
    done
    printf '{"status":"completed","version":"%s","server_count":"%d","server_list":[%s]' "$ver" "$nh" "$servers"
    [ "$ver" = 1.2 ] && printf ',"super_pod_list":[{"super_pod_id":"0","server_list":[%s]}]' "$pods"
    printf '}\n'
}

# ---- scenarios -------------------------------------------------------------------------------

SUITES_FULL=coll,p2p,multicomm,queries,subcomm

# run_conf NHOSTS PER_HOST LABEL netns_rank-args... : one run of the suites, checked.
run_conf() {
    local nh=$1 per=$2 label=$3
    shift 3
    reset_procs
    local t0=$SECONDS
    snapshot a
    launch_ranks "$nh" "$per" "$@"
    wait_all 110
    snapshot b
    echo "netns: $label: $((SECONDS - t0)) s"
    expect_rcs 0 && check_traffic a b
}

sc_ranktable_v10_2x2() {
    setup_hosts 2
    ranktable 1.0 2 2 4 0 1 >"$TMP/table1.json"     # ports from HCCL_IF_BASE_PORT's default 60000 + index
    ranktable 1.0 2 2 4 61000 1 >"$TMP/table2.json" # explicit device_port
    run_conf 2 2 "rank table v1.0, 2 hosts x 2 ranks" --init ranktable --table "$TMP/table1.json" \
        --table2 "$TMP/table2.json" --suite $SUITES_FULL
}

sc_ranktable_v12_3x1() {
    setup_hosts 3
    ranktable 1.2 3 1 4 0 1 >"$TMP/table1.json"
    ranktable 1.2 3 1 4 61000 0 >"$TMP/table2.json" # no device_ip: host_ip is used
    run_conf 3 1 "rank table v1.2, 3 hosts x 1 rank" --init ranktable --table "$TMP/table1.json" \
        --table2 "$TMP/table2.json" --suite $SUITES_FULL
}

# Also the topology (issue 7): every rank reaches its own host's peer over shared
# memory, and the collectives that have a hierarchical form log that they use it.
sc_rootinfo_ifname_2x2() {
    setup_hosts 2
    export HCCL_SOCKET_IFNAME='=eth0' HCCL_DEBUG=INFO HCCL_DEBUG_SUBSYS=COLL,SHM
    run_conf 2 2 "root info, HCCL_SOCKET_IFNAME==eth0, 2 hosts x 2 ranks" --init rootinfo --root "$TMP/root.bin" \
        --suite $SUITES_FULL
    unset HCCL_SOCKET_IFNAME HCCL_DEBUG HCCL_DEBUG_SUBSYS
    for r in 0 1 2 3; do
        local f="$TMP/rank$r.out" op
        grep -qE "comm rank $r: 1 peer\(s\) over shared memory" "$f" ||
            fail "rank $r: no communicator reached its own host's peer over shared memory"
        ! grep -qE "comm rank [0-9]+: ([2-9]|[1-9][0-9]+) peer\(s\) over shared memory" "$f" ||
            fail "rank $r: a communicator used shared memory with a rank of the other host"
        for op in AllReduce AllGather ReduceScatter Broadcast; do
            grep -qE "rank $r: $op of [0-9]+ elements uses the hierarchical algorithm \(4 ranks on 2 host\(s\)\)" "$f" ||
                fail "rank $r: no $op logged the hierarchical algorithm on 2 hosts x 2 ranks"
        done
    done
    [ $FAILED = 0 ] && echo "netns: every rank used shared memory inside its host and the hierarchical AllReduce, AllGather, ReduceScatter and Broadcast"
}

# Uneven hosts, one of them with ranks far apart in rank order: host1 has ranks 0, 2, 4
# and 6, hosts 2, 3 and 4 one rank each. The hierarchical AllGather's leaders' exchange
# then has more transfers than twice the ranks (it once overflowed its array).
sc_uneven_4x() {
    setup_hosts 4
    HOST_OF=(1 2 1 3 1 4 1)
    export HCCL_SOCKET_IFNAME='=eth0'
    run_conf 4 0 "root info, 7 ranks on 4 hosts (4+1+1+1, host1's ranks interleaved)" --init rootinfo \
        --root "$TMP/root.bin" --suite coll,subcomm
    unset HOST_OF HCCL_SOCKET_IFNAME
}

ifip_env() { echo "HCCL_IF_IP=198.18.0.$2"; }
sc_rootinfo_ifip_3x1() {
    setup_hosts 3
    RANK_ENV=ifip_env
    run_conf 3 1 "root info, HCCL_IF_IP, 3 hosts x 1 rank" --init rootinfo --root "$TMP/root.bin" --suite $SUITES_FULL
    RANK_ENV=
}

# run_hcclrun MASTER_ADDR MASTER_PORT LABEL: hcclrun --nnodes 2 -n 2 on host1 and host2.
run_hcclrun() {
    local addr=$1 port=$2 label=$3
    reset_procs
    local t0=$SECONDS
    snapshot a
    # Same command on both nodes but the node rank; no HCCL_JOB_SECRET: hcclrun derives
    # one from the master address and port, identical on every node.
    for k in 0 1; do
        start_on $((k + 1)) "node$k" "$HCCLRUN" --nnodes 2 --node-rank $k --master-addr "$addr" \
            --master-port "$port" -n 2 "$NETNS_RANK" --init env --shared "$TMP/shared" --timeout $RANK_TIMEOUT \
            --suite coll,p2p,subcomm
    done
    wait_all 110
    snapshot b
    echo "netns: $label: $((SECONDS - t0)) s"
    expect_rcs 0 || return
    local n
    n=$(cat "$TMP"/node*.out | grep -c '^netns_rank .*(env RANK, .*: PASS')
    [ "$n" = 4 ] || fail "$label: $n of 4 ranks reported PASS with their rank from RANK"
    check_traffic a b
}

sc_hcclrun_2x2() {
    [ -n "${HCCLRUN:-}" ] && [ -x "$HCCLRUN" ] || skip "hcclrun was not built (HCCLRUN is not set)"
    setup_hosts 2
    run_hcclrun 198.18.0.1 29500 "hcclrun --nnodes 2 --master-addr 198.18.0.1 -n 2"
}

# etc_hosts HOST TEXT: the /etc/hosts that processes in the host's namespace see
# (`ip netns exec` bind-mounts /etc/netns/NAME/hosts over /etc/hosts).
etc_hosts() {
    mkdir -p "/etc/netns/$PFX-h$1" && ETC_DIRS+=("/etc/netns/$PFX-h$1") && printf "$2" >"/etc/netns/$PFX-h$1/hosts"
}

# MASTER_ADDR as a host name, as Slurm recipes give it (scontrol show hostnames).
sc_hostname_2x2() {
    [ -n "${HCCLRUN:-}" ] && [ -x "$HCCLRUN" ] || skip "hcclrun was not built (HCCLRUN is not set)"
    [ -d /etc ] && [ -w /etc ] || skip "/etc is not writable (needed for /etc/netns/NAME/hosts)"
    setup_hosts 2
    export HCCL_CONNECT_TIMEOUT=10
    # 1. node1 resolves to 198.18.0.1 on every host
    for h in 1 2; do etc_hosts $h '127.0.0.1 localhost\n198.18.0.1 node1\n198.18.0.2 node2\n'; done
    run_hcclrun node1 29500 "MASTER_ADDR=node1 (198.18.0.1 on every host)"
    # 2. Debian's default /etc/hosts: a host's own name is 127.0.1.1 there, so node1
    #    is 127.0.1.1 on node1 and 198.18.0.1 elsewhere.
    etc_hosts 1 '127.0.0.1 localhost\n127.0.1.1 node1\n198.18.0.2 node2\n'
    etc_hosts 2 '127.0.0.1 localhost\n198.18.0.1 node1\n127.0.1.1 node2\n'
    run_hcclrun node1 29510 "MASTER_ADDR=node1 (127.0.1.1 on node1 itself, Debian-style /etc/hosts)"
}

sc_mpirun_2x2() {
    local mpirun=${MPIRUN:-$(command -v mpirun)}
    [ -n "$mpirun" ] || skip "mpirun not found (Debian: apt-get install -y openmpi-bin)"
    "$mpirun" --version 2>/dev/null | grep -q "Open MPI" || skip "$mpirun is not Open MPI"
    setup_hosts 2
    reset_procs
    # mpirun runs in host1; Open MPI starts its daemon on "198.18.0.2" through the rsh
    # agent, which here enters host2's namespace instead of using ssh.
    cat >"$TMP/agent.sh" <<EOF
#!/bin/sh
# rsh agent for Open MPI: agent [options] HOST command...
while [ \$# -gt 0 ]; do case "\$1" in -*) shift;; *) break;; esac; done
host=\$1; shift
case "\$host" in 198.18.0.*) i=\${host##*.};; *) echo "agent: unknown host \$host" >&2; exit 1;; esac
exec ip netns exec $PFX-h\$i env HCCL_HOST_ID=host\$i /bin/sh -c "\$*"
EOF
    chmod +x "$TMP/agent.sh"
    printf '198.18.0.1 slots=2\n198.18.0.2 slots=2\n' >"$TMP/hostfile"
    local t0=$SECONDS
    snapshot a
    start_on 1 mpirun env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent="$TMP/agent.sh" \
        OMPI_MCA_oob_tcp_if_include=198.18.0.0/24 OMPI_MCA_btl_tcp_if_include=198.18.0.0/24 \
        "$mpirun" --hostfile "$TMP/hostfile" -np 4 --map-by slot \
        -x MASTER_ADDR=198.18.0.1 -x MASTER_PORT=29600 -x HCCL_JOB_SECRET=0x6e65746e73 -x HCCL_CONNECT_TIMEOUT \
        -x HCCL_FLIGHT_RECORDER_DIR -x HCCL_DEBUG \
        "$NETNS_RANK" --init env --shared "$TMP/shared" --timeout $RANK_TIMEOUT --suite coll,p2p,subcomm
    wait_all 110
    snapshot b
    echo "netns: mpirun -np 4 over 2 hosts: $((SECONDS - t0)) s"
    expect_rcs 0 || return
    local n
    n=$(grep -c '^netns_rank .*(env OMPI_COMM_WORLD_RANK, .*: PASS' "$TMP/mpirun.out")
    [ "$n" = 4 ] || fail "$n of 4 ranks reported PASS with their rank from OMPI_COMM_WORLD_RANK"
    for h in 1 2; do
        [ "$(grep -c "^netns_rank host host$h .*: PASS" "$TMP/mpirun.out")" = 2 ] ||
            fail "expected 2 ranks with HCCL_HOST_ID=host$h"
    done
    check_traffic a b
}

sc_ipv6_2x2() {
    setup_hosts 2 v6
    export HCCL_SOCKET_FAMILY=AF_INET6
    export HCCL_SOCKET_IFNAME='=eth0'
    ip_counts a
    run_conf 2 2 "IPv6 root info, HCCL_SOCKET_FAMILY=AF_INET6 HCCL_SOCKET_IFNAME==eth0, 2 x 2" --init rootinfo \
        --root "$TMP/root.bin" --suite coll,p2p,multicomm
    unset HCCL_SOCKET_IFNAME
    ranktable 1.0 2 2 6 0 1 >"$TMP/table1.json"
    ranktable 1.0 2 2 6 61000 1 >"$TMP/table2.json"
    run_conf 2 2 "IPv6 rank table v1.0 (device_ip fd00:198:18::i), 2 x 2" --init ranktable \
        --table "$TMP/table1.json" --table2 "$TMP/table2.json" --suite coll,multicomm
    unset HCCL_SOCKET_FAMILY
    ip_counts b
    # Every connection must have been IPv6: (almost) no IPv4 packets sent in any host.
    local v4 v6
    for ((i = 1; i <= NHOSTS; i++)); do
        v4=$((CNT[b,$i,v4] - CNT[a,$i,v4]))
        v6=$((CNT[b,$i,v6] - CNT[a,$i,v6]))
        echo "netns: host$i sent $v6 IPv6 and $v4 IPv4 packets"
        ((v4 <= 20)) || fail "host$i sent $v4 IPv4 packets with HCCL_SOCKET_FAMILY=AF_INET6"
        ((v6 >= 1000)) || fail "host$i sent only $v6 IPv6 packets"
    done
}

# host1 picks IPv6 (HCCL_SOCKET_FAMILY=AF_INET6), host2 has IPv4 only; the root address
# (MASTER_ADDR) is IPv4, so both join, then rank 1 cannot reach rank 0's IPv6 listener.
# Both must fail within HCCL_CONNECT_TIMEOUT, rank 1 saying that the families differ
# rather than that the network is down.
mismatch_env() {
    printf 'RANK=%s WORLD_SIZE=2 MASTER_ADDR=198.18.0.1 MASTER_PORT=29600' "$1"
    [ "$2" = 1 ] && printf ' HCCL_SOCKET_FAMILY=AF_INET6 HCCL_SOCKET_IFNAME==eth0'
    echo
}

sc_ipv6_mismatch_2x1() {
    setup_hosts 2 v6:1
    reset_procs
    export HCCL_CONNECT_TIMEOUT=5
    local t0=$SECONDS
    RANK_ENV=mismatch_env launch_ranks 2 1 --init env --suite coll
    RANK_ENV=
    wait_all 30
    unset HCCL_CONNECT_TIMEOUT
    echo "netns: both ranks ended after $((SECONDS - t0)) s"
    for i in "${!PIDS[@]}"; do
        [ "${RCS[$i]}" != 0 ] || fail "${NAMES[$i]} succeeded although rank 1 cannot reach rank 0"
    done
    grep -q "cannot connect to rank 0 at \[fd00:198:18::1\]:[0-9]* within HCCL_CONNECT_TIMEOUT (no route to its host: it advertises an IPv6 address but this host has none" "$TMP/rank1.out" ||
        fail "rank 1 did not say that rank 0's IPv6 address is of a family its host lacks"
    [ $FAILED = 0 ] || show_logs
}

# ip_counts TAG: IPv4 and IPv6 packets sent by each host (all interfaces, lo included).
ip_counts() {
    for ((i = 1; i <= NHOSTS; i++)); do
        CNT[$1,$i,v4]=$(ip netns exec "$PFX-h$i" awk '/^Ip: [0-9]/ { print $11 }' /proc/net/snmp)
        CNT[$1,$i,v6]=$(ip netns exec "$PFX-h$i" awk '$1 == "Ip6OutRequests" { print $2 }' /proc/net/snmp6)
    done
}

# wait_looping N: until N ranks print LOOPING (they are in their AllReduce loop); fails
# the scenario after 40 s.
wait_looping() {
    local t0=$SECONDS
    while [ "$(cat "$TMP"/rank*.out 2>/dev/null | grep -c LOOPING)" != "$1" ]; do
        if ((SECONDS - t0 > 40)); then
            fail "the ranks did not all reach their AllReduce loop within 40 s"
            show_logs
            return 1
        fi
        sleep 0.1
    done
}

sc_linkdown_2x2() {
    local exec_to=5 slack=${NETNS_LINKDOWN_SLACK:-4}
    setup_hosts 2
    reset_procs
    export HCCL_SOCKET_IFNAME='=eth0' HCCL_EXEC_TIMEOUT=$exec_to
    launch_ranks 2 2 --init rootinfo --root "$TMP/root.bin" --suite loop --loop-max 40
    wait_looping 4 || return
    local tdown
    tdown=$(date +%s.%N)
    ip -n "$PFX-h2" link set eth0 down
    echo "netns: host2's eth0 taken down at $tdown with the 4 ranks looping on AllReduce (HCCL_EXEC_TIMEOUT=$exec_to)"
    wait_all 60
    unset HCCL_SOCKET_IFNAME HCCL_EXEC_TIMEOUT
    expect_rcs 10
    for r in 0 1 2 3; do
        local f="$TMP/rank$r.out" line t dt others oh
        if [ $r -lt 2 ]; then others="2|3" oh=2; else others="0|1" oh=1; fi
        line=$(grep -m1 'LOOP_FAILED at' "$f")
        if [ -z "$line" ]; then
            fail "rank $r never reported a failed AllReduce"
            continue
        fi
        t=$(echo "$line" | sed 's/.*LOOP_FAILED at \([0-9.]*\).*/\1/')
        dt=$(awk -v a="$t" -v b="$tdown" 'BEGIN { printf "%.2f", a - b }')
        echo "netns: rank $r failed $dt s after the link went down: ${line#*] }"
        awk -v d="$dt" -v l="$((exec_to + slack))" 'BEGIN { exit !(d <= l) }' ||
            fail "rank $r failed $dt s after the link went down (HCCL_EXEC_TIMEOUT=$exec_to, allowed $((exec_to + slack)) s)"
        # The library's failure line must name a rank of the other host, and that host
        # ("rank 2 (host host2 ADDR)"; directly, or in the reason a same-host peer
        # forwarded with its abort).
        local msg
        msg=$(grep -E 'HCCL WARN' "$f" | grep -E "timed out|aborted|lost|closed|reset|unreachable|fail" |
            grep -E "ranks? ([0-9]+(-|, ))*($others) \(host host$oh [0-9.]+\)" | head -n 1)
        if [ -z "$msg" ]; then
            fail "rank $r: no failure message names an unreachable peer (rank $(echo $others | tr '|' ' or ')) and its host host$oh"
            grep 'HCCL WARN' "$f" | head -n 5
        else
            echo "netns: rank $r message: ${msg:0:400}"
        fi
        line=$(grep -m1 'DESTROY_RETURNED' "$f")
        if [ -z "$line" ]; then
            fail "rank $r: HcclCommDestroy did not return"
        else
            echo "netns: rank $r: ${line#*] }"
            echo "$line" | grep -q 'DESTROY_RETURNED 0 ' || fail "rank $r: HcclCommDestroy failed: $line"
        fi
    done
    [ $FAILED = 1 ] && show_logs
}

# A link that goes down for 8 s and comes back, well inside HCCL_EXEC_TIMEOUT (40 s):
# the job rides it out (the connections' give-up time is the timeout + 10 s; it was a
# fixed 10 s, which ended every job whose network paused for that long), and the
# AllReduce loop goes on after it.
sc_linkflap_2x2() {
    local exec_to=40 down_s=8
    setup_hosts 2
    reset_procs
    export HCCL_SOCKET_IFNAME='=eth0' HCCL_EXEC_TIMEOUT=$exec_to
    launch_ranks 2 2 --init rootinfo --root "$TMP/root.bin" --suite loop --loop-max 36 --loop-ok
    wait_looping 4 || return
    ip -n "$PFX-h2" link set eth0 down
    echo "netns: host2's eth0 down for $down_s s with the 4 ranks looping on AllReduce (HCCL_EXEC_TIMEOUT=$exec_to)"
    sleep $down_s
    ip -n "$PFX-h2" link set eth0 up
    wait_all 90
    unset HCCL_SOCKET_IFNAME HCCL_EXEC_TIMEOUT
    expect_rcs 0
    for r in 0 1 2 3; do
        local line
        line=$(grep -m1 'LOOP_DONE' "$TMP/rank$r.out")
        [ -n "$line" ] && echo "netns: rank $r: ${line#*] }" || fail "rank $r: the loop did not run to its end"
    done
    [ $FAILED = 1 ] && show_logs
}

# Several sockets per pair of hosts' ranks (HCCL_SOCKET_NCONN=3): the suites pass, each
# rank striped its traffic to the other host's two ranks over 3 sockets, and kept one
# socket (and shared memory) for its own host's peer.
sc_nconn_2x2() {
    setup_hosts 2
    export HCCL_SOCKET_IFNAME='=eth0' HCCL_SOCKET_NCONN=3 HCCL_DEBUG=INFO HCCL_DEBUG_SUBSYS=INIT
    run_conf 2 2 "root info, HCCL_SOCKET_NCONN=3, 2 hosts x 2 ranks" --init rootinfo --root "$TMP/root.bin" \
        --suite coll,p2p,multicomm
    unset HCCL_SOCKET_IFNAME HCCL_SOCKET_NCONN HCCL_DEBUG HCCL_DEBUG_SUBSYS
    for r in 0 1 2 3; do
        local others n
        if [ $r -lt 2 ]; then others="2|3"; else others="0|1"; fi
        n=$(grep -cE "comm rank $r: 3 sockets to rank ($others)\$" "$TMP/rank$r.out")
        # the suites make several communicators; each must stripe to both remote ranks
        ((n >= 2 && n % 2 == 0)) || fail "rank $r: $n '3 sockets to rank' lines for the other host's ranks"
        ! grep -qE "comm rank $r: [0-9]+ sockets to rank ($(echo "0 1 2 3" | tr ' ' '\n' | grep -vE "^($others|$r)\$"))\$" \
            "$TMP/rank$r.out" || fail "rank $r opened several sockets to its own host's peer"
    done
}

# Measurement, not a test: all_reduce_perf between two hosts (one rank each) over the
# veth with HCCL_SOCKET_NCONN = each of $NCONNS (default "1 2 4"), in one run.
#   ALL_REDUCE_PERF=build/tools/all_reduce_perf HCCLRUN=build/tools/hcclrun \
#   NETNS_RANK=build/tests/netns/netns_rank tests/netns/netns.sh measure_nconn
sc_measure_nconn() {
    [ -x "${HCCLRUN:-}" ] && [ -x "${ALL_REDUCE_PERF:-}" ] || skip "set HCCLRUN and ALL_REDUCE_PERF"
    setup_hosts 2
    local port=29700
    for rep in 1 2; do
        for n in ${NCONNS:-1 2 4}; do
            reset_procs
            port=$((port + 10))
            for k in 0 1; do
                start_on $((k + 1)) "perf$k" env HCCL_SOCKET_NCONN=$n "$HCCLRUN" --nnodes 2 --node-rank $k \
                    --master-addr 198.18.0.1 --master-port $port -n 1 "$ALL_REDUCE_PERF" -b ${PERF_MIN:-1M} \
                    -e ${PERF_MAX:-64M} -f 4 -n ${PERF_ITERS:-10} -w 3
            done
            wait_all 300
            echo "== HCCL_SOCKET_NCONN=$n (round $rep)"
            grep -E '^ +[0-9]' "$TMP/perf0.out" || cat "$TMP/perf0.out"
        done
    done
}

"sc_$SCENARIO"
echo "netns_$SCENARIO: $([ $FAILED = 0 ] && echo PASS || echo FAIL) ($((SECONDS - T_START)) s)"
exit $FAILED
