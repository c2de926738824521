#!/usr/bin/env bash
# demo.sh [BUILD_DIR] - the main job (`make demo`): a checked all_reduce_perf over 4
# ranks launched by hcclrun (8 B .. 8 MiB), then short all_gather_perf and
# alltoall_perf runs with 2, 3 and 4 ranks. Prints the tables; exits non-zero when
# any run fails (an error, a wrong value, or a hang cut off by the timeout).
set -u
BUILD=${1:-build}
HCCLRUN="$BUILD/tools/hcclrun"
TIMEOUT=${DEMO_TIMEOUT:-300}
if [ ! -x "$HCCLRUN" ]; then
    echo "demo: $HCCLRUN not found; build first (make)" >&2
    exit 2
fi
unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT

failed=()
run() { # description, then the command
    local what=$1 rc
    shift
    echo
    echo "### $what"
    echo "### \$ $*"
    timeout "$TIMEOUT" "$@"
    rc=$?
    if [ $rc != 0 ]; then
        [ $rc = 124 ] && echo "demo: '$what' timed out after ${TIMEOUT}s" >&2
        echo "demo: '$what' FAILED (exit $rc)" >&2
        failed+=("$what")
    fi
}

run "all_reduce_perf, 4 ranks" "$HCCLRUN" -n 4 all_reduce_perf -b 8 -e 8M -f 4 -c 1
for n in 2 3 4; do
    run "all_gather_perf, $n ranks" "$HCCLRUN" -n $n all_gather_perf -b 8 -e 2M -f 8 -n 10 -w 2 -c 1
done
for n in 2 3 4; do
    run "alltoall_perf, $n ranks" "$HCCLRUN" -n $n alltoall_perf -b 8 -e 2M -f 8 -n 10 -w 2 -c 1
done

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "demo: ${#failed[@]} run(s) failed: ${failed[*]}"
    exit 1
fi
echo "demo: all 7 runs passed"
