#!/bin/sh
# one_cpu.sh HCCL_CONF ARGS... - run the conformance program with every rank on one
# CPU (the first of this process's affinity set), so that the ranks must agree that
# their host has more ranks than CPUs: the small AllReduce then runs by recursive
# doubling and the waits start out as contended ones. Fails when hccl_conf fails or
# when no rank logged that choice.
set -u
conf=$1
shift
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
HCCL_DEBUG=INFO HCCL_DEBUG_SUBSYS=INIT,COLL HCCL_DEBUG_FILE="$log" taskset -c "$cpu" "$conf" "$@"
rc=$?
grep -q "more ranks than CPUs on a host" "$log" || { echo "one_cpu.sh: no rank saw more ranks than CPUs"; rc=1; }
grep -q "AllReduce of .* uses the recursive doubling algorithm" "$log" ||
    { echo "one_cpu.sh: no AllReduce used recursive doubling"; rc=1; }
exit $rc
