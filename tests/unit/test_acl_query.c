/*
 * test_acl_query.c - aclrtStreamQuery, aclrtCreateStreamWithConfig and
 * aclrtQueryEventWaitStatus: normal use, and bad arguments (NULL pointers, unknown or
 * destroyed handles) answered with the documented error and a message, never a crash.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <sched.h>
#include <stdint.h>
#include <string.h>

/* Blocks its stream until *gate is set. */
static aclError gate_task(void *arg)
{
    while (!__atomic_load_n((int *)arg, __ATOMIC_ACQUIRE)) sleep_ms(1);
    return ACL_SUCCESS;
}

static int msg_has(const char *s) { return strstr(aclGetRecentErrMsg(), s) != NULL; }

/* Polls aclrtStreamQuery until complete or 10 s. */
static aclrtStreamStatus poll_stream(aclrtStream s)
{
    aclrtStreamStatus st = ACL_STREAM_STATUS_NOT_READY;
    double t0 = now_s();
    while (aclrtStreamQuery(s, &st) == ACL_SUCCESS && st != ACL_STREAM_STATUS_COMPLETE && now_s() - t0 < 10.0)
        sched_yield();
    return st;
}

typedef struct self_query {
    aclrtStream s;
    aclError rc;
    aclrtStreamStatus st;
} self_query;

static aclError query_own_stream(void *arg)
{
    self_query *q = arg;
    q->rc = aclrtStreamQuery(q->s, &q->st);
    return ACL_SUCCESS;
}

static void test_stream_query(void)
{
    aclrtStreamStatus st = ACL_STREAM_STATUS_RESERVED;
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtStreamQuery(s, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtStreamQuery: status is NULL"));
    int bogus = 0;
    TT_ASSERT_EQ(aclrtStreamQuery(&bogus, &st), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(msg_has("not a live stream"));
    TT_ASSERT_EQ(aclrtStreamQuery(NULL, &st), ACL_SUCCESS); /* the NULL stream runs work at once */
    TT_ASSERT_EQ(st, ACL_STREAM_STATUS_COMPLETE);

    st = ACL_STREAM_STATUS_RESERVED;
    TT_ASSERT_EQ(aclrtStreamQuery(s, &st), ACL_SUCCESS); /* nothing queued */
    TT_ASSERT_EQ(st, ACL_STREAM_STATUS_COMPLETE);

    int gate = 0, after = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, gate_task, &gate), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &after), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamQuery(s, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_STREAM_STATUS_NOT_READY);
    sleep_ms(20);
    TT_ASSERT_EQ(aclrtStreamQuery(s, &st), ACL_SUCCESS); /* still blocked: the query never waits */
    TT_ASSERT_EQ(st, ACL_STREAM_STATUS_NOT_READY);
    TT_ASSERT_EQ(__atomic_load_n(&after, __ATOMIC_ACQUIRE), 0);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(poll_stream(s), ACL_STREAM_STATUS_COMPLETE);
    TT_ASSERT_EQ(__atomic_load_n(&after, __ATOMIC_ACQUIRE), 1);

    /* Polling advances a stream that defers its worker's wake-ups (launch + prompt
     * synchronize, twice or more) without any synchronize. */
    for (int i = 0; i < 4; i++) {
        aclrtLaunchHostTask(s, noop_task, NULL);
        aclrtSynchronizeStream(s);
    }
    int polled = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &polled), ACL_SUCCESS);
    TT_ASSERT_EQ(poll_stream(s), ACL_STREAM_STATUS_COMPLETE);
    TT_ASSERT_EQ(__atomic_load_n(&polled, __ATOMIC_ACQUIRE), 1);

    /* A failed task: the query reports completion; the error is left for the synchronize. */
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)ACL_ERROR_RT_STREAM_TASK_EXCEPTION), ACL_SUCCESS);
    TT_ASSERT_EQ(poll_stream(s), ACL_STREAM_STATUS_COMPLETE);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);

    /* A task querying its own stream: not ready (itself), and no hang. */
    self_query q = {s, -1, ACL_STREAM_STATUS_RESERVED};
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, query_own_stream, &q), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(q.rc, ACL_SUCCESS);
    TT_ASSERT_EQ(q.st, ACL_STREAM_STATUS_NOT_READY);

    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamQuery(s, &st), ACL_ERROR_RT_INVALID_HANDLE); /* destroyed */
}

static void test_create_with_config(void)
{
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStreamWithConfig(NULL, 0, ACL_STREAM_FAST_LAUNCH), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtCreateStreamWithConfig: stream is NULL"));

    const uint32_t ok_flags[] = {0, ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_SYNC,
                                 ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC, ACL_STREAM_HUGE,
                                 0x100u /* unknown: an ordinary stream, as CANN documents */};
    for (size_t i = 0; i < sizeof ok_flags / sizeof ok_flags[0]; i++) {
        s = NULL;
        TT_ASSERT_EQ(aclrtCreateStreamWithConfig(&s, (uint32_t)i, ok_flags[i]), ACL_SUCCESS);
        TT_ASSERT(s != NULL);
        int ran = 0;
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &ran), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
        TT_ASSERT_EQ(ran, 1);
        aclrtStreamStatus st = ACL_STREAM_STATUS_RESERVED;
        TT_ASSERT_EQ(aclrtStreamQuery(s, &st), ACL_SUCCESS);
        TT_ASSERT_EQ(st, ACL_STREAM_STATUS_COMPLETE);
        TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    }

    const uint32_t bad_flags[] = {ACL_STREAM_PERSISTENT, ACL_STREAM_CPU_SCHEDULE, ACL_STREAM_DEVICE_USE_ONLY,
                                  ACL_STREAM_FAST_LAUNCH | ACL_STREAM_PERSISTENT};
    for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
        s = (aclrtStream)(uintptr_t)0x1234;
        TT_ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 0, bad_flags[i]), ACL_ERROR_API_NOT_SUPPORT);
        TT_ASSERT(msg_has("not supported"));
        TT_ASSERT(s == (aclrtStream)(uintptr_t)0x1234); /* untouched */
    }
}

static void test_event_wait_status(void)
{
    aclrtEventWaitStatus st = ACL_EVENT_WAIT_STATUS_RESERVED;
    aclrtEvent ev = NULL;
    aclrtStream a = NULL, b = NULL;
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtQueryEventWaitStatus: status is NULL"));
    int bogus = 0;
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(&bogus, &st), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(msg_has("not a live event"));
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(NULL, &st), ACL_ERROR_RT_INVALID_HANDLE);

    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_SUCCESS); /* no wait made */
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_COMPLETE);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS); /* never recorded: nothing to wait for */
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_COMPLETE);

    /* b waits for a record that a's gate holds back. */
    int gate = 0, after_wait = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, gate_task, &gate), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(b, set_flag, &after_wait), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_NOT_READY);
    sleep_ms(20);
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_NOT_READY);
    TT_ASSERT_EQ(__atomic_load_n(&after_wait, __ATOMIC_ACQUIRE), 0);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    double t0 = now_s();
    while (aclrtQueryEventWaitStatus(ev, &st) == ACL_SUCCESS && st != ACL_EVENT_WAIT_STATUS_COMPLETE &&
           now_s() - t0 < 10.0)
        sched_yield();
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_COMPLETE);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(after_wait, 1);

    /* A wait on the NULL stream runs at once: complete when the call returns. */
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(NULL, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_COMPLETE);

    /* A wait that could not be queued (bad stream) is not counted. */
    gate = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, gate_task, &gate), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(&bogus, ev), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_WAIT_STATUS_COMPLETE);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventWaitStatus(ev, &st), ACL_ERROR_RT_INVALID_HANDLE); /* destroyed */
    TT_ASSERT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

int main(void)
{
    test_stream_query();
    test_create_with_config();
    test_event_wait_status();
    return tt_report("test_acl_query");
}
