/*
 * test_seq_wrap.c - collective numbers across their 32-bit wrap (src/core/exec.c,
 * src/core/net.c).
 *
 * A communicator numbers its collectives in 32 bits; after 2^32 of them the number
 * wraps. Number 0 means "none" (point-to-point messages, no failure), so the wrap goes
 * from 2^32 - 1 to 1; and "later than" is serial-number order, so a rank one collective
 * ahead across the wrap is still seen as ahead: mixed collectives of 3 thread ranks
 * around the wrap give exact results, and a root that is one collective ahead of the
 * ranks waiting for its eager Broadcast is named as such.
 */
#include "core/comm.h"

#include "tinytest.h"

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 3
#define CNT_MAX 70000
static HcclComm comms[N];
static int bad[N];
static int phase; /* 0: the mixed collectives, 1: the root ahead */
static HcclResult mism_res[N];
static char mism_msg[N][1024];

static void *rank_main(void *arg)
{
    int r = (int)(long)arg;
    aclrtSetDevice(r);
    int *a = malloc(sizeof(int) * CNT_MAX * (N + 1));
    if (!a) {
        bad[r]++;
        return NULL;
    }
    if (phase == 1) { /* everyone calls Broadcast(root 2), rank 2 one collective ahead */
        for (int i = 0; i < 4; i++) a[i] = r == 2 ? 7 : -1;
        mism_res[r] = HcclBroadcast(a, 4, HCCL_DATA_TYPE_INT32, 2, comms[r], NULL);
        if (mism_res[r] != HCCL_SUCCESS) snprintf(mism_msg[r], sizeof mism_msg[r], "%s", HcclGetLastErrorMessage());
        free(a);
        return NULL;
    }
    const int cnts[] = {4, 1000, CNT_MAX};
    for (int it = 0; it < 12; it++) {
        int cnt = cnts[it % 3], op = (it / 3) % 4;
        for (int i = 0; i < cnt; i++) a[i] = i + r;
        HcclResult res;
        switch (op) {
        case 0: res = HcclAllReduce(a, a, cnt, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comms[r], NULL); break;
        case 1: res = HcclBroadcast(a, cnt, HCCL_DATA_TYPE_INT32, 1, comms[r], NULL); break;
        case 2: res = HcclReduce(a, a, cnt, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 0, comms[r], NULL); break;
        default: res = HcclAllGather(a, a + cnt, cnt, HCCL_DATA_TYPE_INT32, comms[r], NULL); break;
        }
        if (res != HCCL_SUCCESS) {
            fprintf(stderr, "rank %d, collective %d: %d\n", r, it, (int)res);
            bad[r]++;
            continue;
        }
        if (op == 2 && r != 0) continue; /* a Reduce's output is the root's only */
        for (int i = 0; i < cnt; i++) {
            int want = op == 0 || op == 2 ? N * i + 3 : op == 1 ? i + 1 : 0;
            if (op == 3) {
                for (int p = 0; p < N; p++) bad[r] += a[cnt + p * cnt + i] != i + p;
            } else if (a[i] != want) {
                bad[r]++;
            }
        }
    }
    free(a);
    return NULL;
}

static void run_ranks(void)
{
    pthread_t th[N];
    for (long r = 0; r < N; r++) TT_ASSERT(pthread_create(&th[r], NULL, rank_main, (void *)r) == 0);
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
}

int main(void)
{
    setenv("HCCL_EXEC_TIMEOUT", "20", 1);
    setenv("HCCL_DEBUG", "NONE", 1);
    char frdir[] = "/tmp/test_seq_wrap_XXXXXX"; /* the expected failures' dumps, removed at the end */
    TT_ASSERT(mkdtemp(frdir) != NULL);
    setenv("HCCL_FLIGHT_RECORDER_DIR", frdir, 1);
    int32_t devs[N] = {0, 1, 2};
    TT_ASSERT(HcclCommInitAll(N, devs, comms) == HCCL_SUCCESS);
    for (int r = 0; r < N; r++) ((hccl_comm *)comms[r])->coll_seq = UINT32_MAX - 5;
    run_ranks();
    for (int r = 0; r < N; r++) {
        TT_ASSERT_MSG(bad[r] == 0, "rank %d: %d wrong results or failures around the wrap", r, bad[r]);
        /* 12 collectives from 2^32 - 5: 2^32 - 5 .. 2^32 - 1, then 1 .. 7 (0 skipped) */
        uint32_t seq = ((hccl_comm *)comms[r])->coll_seq;
        TT_ASSERT_MSG(seq == 7, "rank %d: collective number %u after the wrap, not 7 (0 is not a number)", r, seq);
    }

    /* Rank 2, the root, is one collective ahead across the wrap: the others wait for
     * #2^32-1 and receive its #1. They must say that the root is ahead. */
    for (int r = 0; r < N; r++) ((hccl_comm *)comms[r])->coll_seq = r == 2 ? UINT32_MAX : UINT32_MAX - 1;
    phase = 1;
    run_ranks();
    TT_ASSERT(mism_res[2] == HCCL_SUCCESS); /* the eager root sends and returns */
    for (int r = 0; r < 2; r++) {
        TT_ASSERT_MSG(mism_res[r] == HCCL_E_PARA, "rank %d: %d", r, (int)mism_res[r]);
        TT_ASSERT_MSG(strstr(mism_msg[r], "did not act as the root"), "rank %d: %s", r, mism_msg[r]);
        TT_ASSERT_MSG(strstr(mism_msg[r], "which is at op #1 "), "rank %d: %s", r, mism_msg[r]);
    }
    for (int r = 0; r < N; r++) HcclCommDestroy(comms[r]);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", frdir);
    TT_ASSERT(system(rm) == 0);
    return tt_report("test_seq_wrap");
}
