/*
 * test_acl_event_time.c - aclrtCreateEventWithFlag, aclrtEventElapsedTime and
 * aclrtResetEvent: flags, timing between records, stream order of a reset, and the
 * errors for bad, stale, unrecorded and pending events.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <stdint.h>
#include <string.h>

static int msg_has(const char *s) { return strstr(aclGetRecentErrMsg(), s) != NULL; }

static void test_flags(void)
{
    aclrtEvent e = NULL;
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(NULL, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(&e, 0x100u), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("0x100"));
    TT_ASSERT(e == NULL);
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE | ACL_EVENT_CAPTURE_STREAM_PROGRESS),
                 ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);

    /* Without ACL_EVENT_SYNC: no stream waits, no reset; records and queries work. */
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_TIME_LINE), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(s, e), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("ACL_EVENT_SYNC"));
    TT_ASSERT_EQ(aclrtResetEvent(e, s), ACL_ERROR_INVALID_PARAM);
    float ms = -1;
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_SUCCESS);
    TT_ASSERT(ms == 0.0f);
    TT_ASSERT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);

    /* Without ACL_EVENT_TIME_LINE: no time. */
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(s, e), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("ACL_EVENT_TIME_LINE"));
    TT_ASSERT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void test_elapsed(void)
{
    aclrtStream s;
    aclrtEvent a, b;
    float ms = -1;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(&b, ACL_EVENT_TIME_LINE), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtEventElapsedTime(NULL, a, b), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_INVALID_PARAM); /* never recorded */
    TT_ASSERT(msg_has("start event") && msg_has("not been recorded"));

    TT_ASSERT_EQ(aclrtRecordEvent(a, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)60), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(b, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(a), ACL_SUCCESS); /* a is done, b is behind the sleep */
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_NOT_COMPLETE);
    TT_ASSERT(msg_has("end event") && msg_has("not complete"));
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_SUCCESS);
    TT_ASSERT_MSG(ms >= 55.0f && ms < 5000.0f, "elapsed %.3f ms around a 60 ms task", (double)ms);
    float back = 0;
    TT_ASSERT_EQ(aclrtEventElapsedTime(&back, b, a), ACL_SUCCESS); /* end before start: negative */
    TT_ASSERT(back == -ms);

    /* The latest record counts: record a again after b. */
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)20), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(a, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, b, a), ACL_SUCCESS);
    TT_ASSERT_MSG(ms >= 15.0f && ms < 5000.0f, "elapsed %.3f ms around a 20 ms task", (double)ms);

    /* The NULL stream records at once. */
    aclrtEvent c;
    TT_ASSERT_EQ(aclrtCreateEvent(&c), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(c, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, a, c), ACL_SUCCESS);
    TT_ASSERT(ms >= 0.0f);

    /* Stale handles. */
    TT_ASSERT_EQ(aclrtDestroyEvent(c), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, a, c), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(msg_has("end event"));
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, c, a), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, NULL, a), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtDestroyEvent(a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyEvent(b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void test_reset(void)
{
    aclrtStream s, s2;
    aclrtEvent e;
    float ms = -1;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    /* In stream order: the reset behind a task has not happened yet. */
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)50), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetEvent(e, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("since it was reset"));
    /* A done record stays done for queries and waits. */
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    TT_ASSERT_EQ(aclrtQueryEventStatus(e, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    /* Recorded again: timed again. */
    TT_ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_SUCCESS);

    /* A reset does not release a wait for a pending record: s2 waits for e's record
     * behind a task on s, then resets it. */
    int flag = 0;
    ev_check chk = {&flag, -1};
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)40), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &flag), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetEvent(e, NULL), ACL_SUCCESS); /* at once, the record still pending */
    TT_ASSERT_EQ(aclrtStreamWaitEvent(s2, e), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetEvent(e, s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s2, check_flag, &chk), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    TT_ASSERT_EQ(chk.seen, 1);
    TT_ASSERT_EQ(aclrtEventElapsedTime(&ms, e, e), ACL_ERROR_INVALID_PARAM); /* s2 reset it after the wait */

    /* Bad handles. */
    TT_ASSERT_EQ(aclrtResetEvent(e, (aclrtStream)&flag), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetEvent(e, s), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(msg_has("not a live event"));
    TT_ASSERT_EQ(aclrtResetEvent(NULL, s), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

int main(void)
{
    test_flags();
    test_elapsed();
    test_reset();
    return tt_report("test_acl_event_time");
}
