/*
 * conf_destroy_queued.c - HcclCommDestroy of a communicator whose operation is still
 * queued on a stream behind other work returns within seconds (as for operations that
 * wait for peers), not once that work is done: the queued operation is dropped when
 * the stream reaches it, and the stream's synchronize reports it.
 *   host_task: behind a host task that blocks (here for up to 8 s).
 *   other_comm: behind another communicator's AllReduce that waits for a rank that
 *   never calls it (until HCCL_EXEC_TIMEOUT=8).
 */
#include <acl/acl.h>
#include <hccl/hccl.h>

#include "tinytest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int release;

/* Blocks until release is set, 8 s at most (so that a destroy that waits for it
 * fails the test instead of hanging it). */
static aclError block_task(void *arg)
{
    (void)arg;
    double end = now() + 8;
    while (!__atomic_load_n(&release, __ATOMIC_ACQUIRE) && now() < end) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return ACL_SUCCESS;
}

static void test_host_task(void *buf)
{
    int32_t dev = 0;
    HcclComm comm;
    aclrtStream s;
    TT_ASSERT_EQ(HcclCommInitAll(1, &dev, &comm), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    __atomic_store_n(&release, 0, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, block_task, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, s), HCCL_SUCCESS);
    double t0 = now();
    TT_ASSERT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
    double dt = now() - t0;
    TT_ASSERT_MSG(dt < 4.0, "HcclCommDestroy took %.2f s: it waited for the host task its operation is queued behind",
                  dt);
    __atomic_store_n(&release, 1, __ATOMIC_RELEASE);
    TT_ASSERT(aclrtSynchronizeStream(s) != ACL_SUCCESS); /* the dropped AllReduce */
    TT_ASSERT_MSG(strstr(aclGetRecentErrMsg(), "being destroyed"), "\"%s\"", aclGetRecentErrMsg());
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void test_other_comm(void *buf)
{
    int32_t devs[2] = {0, 1};
    HcclComm a[2], b[2];
    aclrtStream s;
    TT_ASSERT_EQ(HcclCommInitAll(2, devs, a), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclCommInitAll(2, devs, b), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    /* rank 1 of b never calls it: it waits for it until HCCL_EXEC_TIMEOUT */
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, b[0], s), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, a[0], s), HCCL_SUCCESS);
    double t0 = now();
    TT_ASSERT_EQ(HcclCommDestroy(a[0]), HCCL_SUCCESS);
    double dt = now() - t0;
    TT_ASSERT_MSG(dt < 4.0,
                  "HcclCommDestroy took %.2f s: it waited for another communicator's operation its own is queued "
                  "behind",
                  dt);
    TT_ASSERT_EQ(HcclCommDestroy(b[0]), HCCL_SUCCESS); /* aborts b's AllReduce */
    TT_ASSERT(aclrtSynchronizeStream(s) != ACL_SUCCESS);
    TT_ASSERT_EQ(HcclCommDestroy(a[1]), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclCommDestroy(b[1]), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

int main(void)
{
    setenv("HCCL_EXEC_TIMEOUT", "8", 1);
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    void *buf;
    TT_ASSERT_EQ(aclrtMalloc(&buf, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    test_host_task(buf);
    test_other_comm(buf);
    aclrtFree(buf);
    aclrtResetDevice(0);
    aclFinalize();
    return tt_report("conf_destroy_queued");
}
