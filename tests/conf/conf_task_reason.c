/*
 * conf_task_reason.c - an HCCL operation that fails on a stream's worker thread: the
 * thread that synchronizes the stream gets the reason (the operation's WARN text) in
 * aclGetRecentErrMsg and HcclGetLastErrorMessage, whichever thread ran the task, for
 * aclrtSynchronizeStream, aclrtSynchronizeStreamWithTimeout, aclrtSynchronizeDevice and
 * aclrtSynchronizeEvent on an event recorded behind the operation.
 * ACL_STREAM_DEFER_US=0 makes each enqueue wake the worker, which runs the operation
 * before the synchronize (the test waits for a task queued behind it).
 */
#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#include "tinytest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static aclError set_flag(void *arg)
{
    __atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
    return ACL_SUCCESS;
}

static aclError fail_task(void *arg) { return (aclError)(intptr_t)arg; }

static HcclComm comm;
static aclrtStream stream;
static void *buf;

/* Queues an AllReduce on the suspended communicator (refused where it runs) and waits
 * until the worker has run it, then logs another warning on this thread. */
static void queue_refused_op(void)
{
    int ran = 0;
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, stream), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(stream, set_flag, &ran), ACL_SUCCESS);
    for (int i = 0; i < 10000 && !__atomic_load_n(&ran, __ATOMIC_ACQUIRE); i++) sleep_ms(1);
    TT_ASSERT_MSG(ran, "%s", "the worker did not run the tasks");
    /* an earlier, unrelated warning of this thread: not the reason of the failure */
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, (HcclDataType)99, HCCL_REDUCE_SUM, comm, NULL), HCCL_E_PARA);
}

static void expect_reason(const char *api)
{
    const char *acl = aclGetRecentErrMsg();
    TT_ASSERT_MSG(strstr(acl, api) && strstr(acl, "failed with error") && strstr(acl, "suspended"),
                  "%s: aclGetRecentErrMsg() \"%s\"", api, acl);
    const char *last = HcclGetLastErrorMessage();
    TT_ASSERT_MSG(strstr(last, "suspended") && strstr(last, "AllReduce"), "%s: HcclGetLastErrorMessage() \"%s\"",
                  api, last);
}

static void test_sync_stream(void)
{
    queue_refused_op();
    TT_ASSERT(aclrtSynchronizeStream(stream) != ACL_SUCCESS);
    expect_reason("aclrtSynchronizeStream");
    /* the error and its reason were reported once */
    TT_ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    /* a later warning of this thread is its last error message again */
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, (HcclDataType)98, HCCL_REDUCE_SUM, comm, NULL), HCCL_E_PARA);
    TT_ASSERT_MSG(strstr(HcclGetLastErrorMessage(), "98") != NULL, "\"%s\"", HcclGetLastErrorMessage());
}

static void test_sync_timeout(void)
{
    queue_refused_op();
    TT_ASSERT(aclrtSynchronizeStreamWithTimeout(stream, 10000) != ACL_SUCCESS);
    expect_reason("aclrtSynchronizeStreamWithTimeout");
}

static void test_sync_device(void)
{
    queue_refused_op();
    TT_ASSERT(aclrtSynchronizeDevice() != ACL_SUCCESS);
    expect_reason("aclrtSynchronizeDevice");
    TT_ASSERT(aclrtSynchronizeStream(stream) != ACL_SUCCESS); /* the device's synchronize leaves it */
    expect_reason("aclrtSynchronizeStream");
}

/* An event recorded behind the failed operation reports it, with its reason; the
 * stream's synchronize still does. */
static void test_sync_event(void)
{
    aclrtEvent ev;
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    queue_refused_op();
    TT_ASSERT_EQ(aclrtRecordEvent(ev, stream), ACL_SUCCESS);
    TT_ASSERT(aclrtSynchronizeEvent(ev) != ACL_SUCCESS);
    expect_reason("aclrtSynchronizeEvent");
    TT_ASSERT(aclrtSynchronizeStream(stream) != ACL_SUCCESS);
    expect_reason("aclrtSynchronizeStream");
    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
}

/* A group whose calls name two streams runs as one operation on the first; the
 * second stream waits for it through an event, and its synchronize reports the
 * operation's failure too, with the reason (the Recv it carried failed). */
static void test_group_streams(void)
{
    aclrtStream other;
    TT_ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
    TT_ASSERT_EQ(HcclGroupStart(), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclSend(buf, 1, HCCL_DATA_TYPE_INT32, 0, comm, stream), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclRecv((char *)buf + 8, 1, HCCL_DATA_TYPE_INT32, 0, comm, other), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclGroupEnd(), HCCL_SUCCESS);
    TT_ASSERT(aclrtSynchronizeStream(other) != ACL_SUCCESS);
    TT_ASSERT_MSG(strstr(aclGetRecentErrMsg(), "aclrtStreamWaitEvent") && strstr(aclGetRecentErrMsg(), "suspended"),
                  "\"%s\"", aclGetRecentErrMsg());
    TT_ASSERT(aclrtSynchronizeStream(stream) != ACL_SUCCESS);
    TT_ASSERT_MSG(strstr(HcclGetLastErrorMessage(), "BatchSendRecv refused"), "\"%s\"", HcclGetLastErrorMessage());
    TT_ASSERT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
}

/* A failing task that gives no reason does not inherit an earlier one's. */
static void test_no_stale_reason(void)
{
    queue_refused_op();
    TT_ASSERT(aclrtSynchronizeStream(stream) != ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(stream, fail_task, (void *)(intptr_t)ACL_ERROR_RT_STREAM_TASK_EXCEPTION),
                 ACL_SUCCESS);
    TT_ASSERT(aclrtSynchronizeStream(stream) != ACL_SUCCESS);
    TT_ASSERT_MSG(!strstr(aclGetRecentErrMsg(), "suspended"), "\"%s\"", aclGetRecentErrMsg());
}

int main(void)
{
    setenv("ACL_STREAM_DEFER_US", "0", 1);
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    int32_t dev = 0;
    TT_ASSERT_EQ(HcclCommInitAll(1, &dev, &comm), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMalloc(&buf, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    TT_ASSERT_EQ(HcclCommSuspend(comm), HCCL_SUCCESS);
    test_sync_stream();
    test_sync_timeout();
    test_sync_device();
    test_sync_event();
    test_group_streams();
    test_no_stale_reason();
    TT_ASSERT_EQ(HcclCommResume(comm), HCCL_SUCCESS);
    aclrtFree(buf);
    TT_ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    TT_ASSERT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
    aclrtResetDevice(0);
    aclFinalize();
    return tt_report("conf_task_reason");
}
