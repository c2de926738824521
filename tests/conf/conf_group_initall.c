/*
 * conf_group_initall.c - one thread drives every rank of HcclCommInitAll's
 * communicators (NCCL's single-process pattern) through one HcclGroupStart /
 * HcclGroupEnd of Sends and Recvs on the NULL stream: the batches of the several
 * communicators must all be issued before any is waited for, or the first rank's
 * batch waits for the next rank's, which the same thread has not issued yet (until
 * HCCL_EXEC_TIMEOUT, 5 s here). The same for collectives on the NULL stream: an
 * AllReduce on each rank's communicator inside one group, then an AllReduce and the
 * ring together (complete, with their results, when HcclGroupEnd returns). Also with a
 * size mismatch: HcclGroupEnd returns the batch's HCCL_E_PARA and
 * HcclGetLastErrorMessage says why.
 */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#include "tinytest.h"

#include <stdint.h>
#include <string.h>

#define N 3

static HcclComm comms[N];
static int32_t *sendb[N], *recvb[N];

/* Ring: rank r sends r + 100 to r + 1 and receives from r - 1 (rank 0 receives
 * `first` elements: 1 matches the sends); with allreduce, each rank first sums
 * sendb[r][1..8] into recvb[r][1..8] in the same group. */
static HcclResult ring(uint64_t first, int allreduce)
{
    HcclResult rc = HcclGroupStart();
    for (int r = 0; r < N && rc == HCCL_SUCCESS; r++) {
        TT_ASSERT_EQ(aclrtSetDevice(r), ACL_SUCCESS);
        if (allreduce)
            rc = HcclAllReduce(sendb[r] + 1, recvb[r] + 1, 8, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comms[r], NULL);
        if (rc == HCCL_SUCCESS && first)
            rc = HcclSend(sendb[r], 1, HCCL_DATA_TYPE_INT32, (uint32_t)(r + 1) % N, comms[r], NULL);
        if (rc == HCCL_SUCCESS && first)
            rc = HcclRecv(recvb[r], r ? 1 : first, HCCL_DATA_TYPE_INT32, (uint32_t)(r + N - 1) % N, comms[r], NULL);
    }
    HcclResult end = HcclGroupEnd();
    return rc != HCCL_SUCCESS ? rc : end;
}

int main(void)
{
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS);
    int32_t devs[N];
    for (int r = 0; r < N; r++) devs[r] = r;
    TT_ASSERT_EQ(HcclCommInitAll(N, devs, comms), HCCL_SUCCESS);
    for (int r = 0; r < N; r++) {
        TT_ASSERT_EQ(aclrtSetDevice(r), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtMalloc((void **)&sendb[r], 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtMalloc((void **)&recvb[r], 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        int32_t v[9] = {r + 100};
        for (int i = 1; i < 9; i++) v[i] = 10 * r + i;
        TT_ASSERT_EQ(aclrtMemcpy(sendb[r], sizeof v, v, sizeof v, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    }
    for (int pass = 0; pass < 3; pass++) { /* the ring, the AllReduces, both in one group */
        TT_ASSERT_EQ(aclrtMemset(recvb[0], 64, 0xff, 64), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtMemset(recvb[1], 64, 0xff, 64), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtMemset(recvb[2], 64, 0xff, 64), ACL_SUCCESS);
        TT_ASSERT_MSG(ring(pass != 1, pass != 0) == HCCL_SUCCESS, "pass %d: %s", pass, HcclGetLastErrorMessage());
        for (int r = 0; r < N; r++) {
            int32_t got[9];
            TT_ASSERT_EQ(aclrtMemcpy(got, sizeof got, recvb[r], sizeof got, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
            int32_t want = pass == 1 ? -1 : (r + N - 1) % N + 100;
            TT_ASSERT_MSG(got[0] == want, "pass %d: rank %d received %d, expected %d", pass, r, (int)got[0],
                          (int)want);
            for (int i = 1; i < 9; i++) {
                want = pass == 0 ? -1 : 10 * (0 + 1 + 2) + N * i;
                TT_ASSERT_MSG(got[i] == want, "pass %d: rank %d element %d: %d, expected %d", pass, r, i,
                              (int)got[i], (int)want);
            }
        }
    }
    /* Rank 0 receives 2 elements, rank 2 sends 1: the group fails, saying why. */
    TT_ASSERT_EQ(ring(2, 0), HCCL_E_PARA);
    const char *why = HcclGetLastErrorMessage();
    TT_ASSERT_MSG(strstr(why, "size mismatch") && strstr(why, "rank 0"), "HcclGetLastErrorMessage() \"%s\"", why);
    for (int r = 0; r < N; r++) {
        TT_ASSERT_EQ(aclrtFree(sendb[r]), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtFree(recvb[r]), ACL_SUCCESS);
        TT_ASSERT_EQ(HcclCommDestroy(comms[r]), HCCL_SUCCESS);
    }
    return tt_report("conf_group_initall");
}
