/*
 * test_acl_event_fail.c - an event recorded behind a task that failed: aclrtSynchronizeEvent
 * reports the task's error (with aclGetRecentErrMsg naming the event and the stream),
 * the stream's own synchronize still reports it, a stream that waits for such a record
 * fails too, and events on healthy streams (before the failure, after the stream's
 * synchronize reported it) still succeed; queries and timing see the record complete.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <stdint.h>
#include <string.h>

static int msg_has(const char *s) { return strstr(aclGetRecentErrMsg(), s) != NULL; }

static void test_sync_event(void)
{
    aclrtStream s;
    aclrtEvent before, after;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&before), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&after), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtLaunchHostTask(s, noop_task, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(before, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)ACL_ERROR_RT_STREAM_TASK_EXCEPTION), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(after, s), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtSynchronizeEvent(before), ACL_SUCCESS); /* it covers no failed task */
    TT_ASSERT_EQ(aclrtSynchronizeEvent(after), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_MSG(msg_has("aclrtSynchronizeEvent") && msg_has("failed with error"), "\"%s\"", aclGetRecentErrMsg());
    TT_ASSERT_EQ(aclrtSynchronizeEvent(after), ACL_ERROR_RT_STREAM_TASK_EXCEPTION); /* the record stays failed */

    /* The record is complete all the same: queries and timing see it done. */
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    TT_ASSERT_EQ(aclrtQueryEventStatus(after, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    float ms = -1;
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, before, after), ACL_SUCCESS);
    TT_ASSERT(ms >= 0);

    /* The stream still reports its failure once, then is healthy again. */
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(after, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(after), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtDestroyEvent(before), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyEvent(after), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* A stream that waits for a record covering a failed task fails at its synchronize;
 * its later tasks still run, as after any failed task. */
static void test_stream_wait(void)
{
    aclrtStream a, b;
    aclrtEvent ev;
    TT_ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtLaunchHostTask(a, fail_task, (void *)(intptr_t)ACL_ERROR_RT_STREAM_TASK_EXCEPTION), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS); /* queued: the record may still be pending */
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_MSG(msg_has("aclrtStreamWaitEvent") && msg_has("failed with error"), "\"%s\"", aclGetRecentErrMsg());
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);

    /* The record is done now: a new wait still reports it, on b and on the NULL stream. */
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(NULL, ev), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT(msg_has("aclrtStreamWaitEvent"));
    aclrtEventWaitStatus ws = ACL_EVENT_WAIT_STATUS_NOT_READY;
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &ws), ACL_SUCCESS);
    TT_ASSERT_EQ(ws, ACL_EVENT_WAIT_STATUS_COMPLETE);

    /* Once a's synchronize reported the failure, a new record is clean. */
    TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);

    /* A record on the NULL stream covers nothing. */
    TT_ASSERT_EQ(aclrtRecordEvent(ev, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

int main(void)
{
    test_sync_event();
    test_stream_wait();
    return tt_report("test_acl_event_fail");
}
