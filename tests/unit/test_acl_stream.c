/*
 * test_acl_stream.c - streams and events of the host runtime: ordering, error
 * propagation, timeouts, destroy with pending work, cross-stream events, the NULL
 * stream, bad handles, oversubscription (many more threads than cores) and latency.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- in-order execution */

typedef struct order_log {
    int *seen;
    int n; /* only the worker writes */
} order_log;

typedef struct order_arg {
    order_log *log;
    int idx;
} order_arg;

static aclError log_task(void *arg)
{
    order_arg *a = arg;
    a->log->seen[a->log->n++] = a->idx;
    free(a);
    return ACL_SUCCESS;
}

static void test_order(void)
{
    enum { N = 10000 };
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    order_log log = {calloc(N, sizeof(int)), 0};
    int ok = 1;
    for (int i = 0; i < N; i++) {
        order_arg *a = malloc(sizeof *a);
        a->log = &log;
        a->idx = i;
        ok &= aclrtLaunchHostTask(s, log_task, a) == ACL_SUCCESS;
    }
    TT_ASSERT(ok);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(log.n, N);
    int in_order = 1;
    for (int i = 0; i < N; i++) in_order &= log.seen[i] == i;
    TT_ASSERT(in_order);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    free(log.seen);
}

/* ---- errors */

static void test_errors(void)
{
    aclrtStream s = NULL;
    int after = 0;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)12345), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)777), ACL_SUCCESS); /* second: not kept */
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &after), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), 12345);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "12345") != NULL);
    TT_ASSERT_EQ(after, 1); /* tasks after a failed one still run */
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS); /* cleared */
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)ACL_ERROR_RT_STREAM_TASK_EXCEPTION),
                 ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 5000), ACL_ERROR_RT_STREAM_TASK_EXCEPTION);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 5000), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void test_timeout(void)
{
    aclrtStream s = NULL;
    int flag = 0;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)2000), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &flag), ACL_SUCCESS);
    double t0 = now_s();
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 50), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    double dt = now_s() - t0;
    TT_ASSERT_MSG(dt >= 0.045 && dt < 10.0, "timed out after %.3f s", dt);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "50 ms") != NULL);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT); /* poll */
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, -1), ACL_SUCCESS); /* the work continued */
    TT_ASSERT_EQ(flag, 1);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- destroy */

static aclError slow_count(void *arg)
{
    sleep_ms(1);
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_ACQ_REL);
    return ACL_SUCCESS;
}

static void test_destroy_pending(void)
{
    aclrtStream s = NULL;
    int count = 0;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    for (int i = 0; i < 100; i++) aclrtLaunchHostTask(s, slow_count, &count);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(count, 100); /* destroy waited for the queued work */
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, slow_count, &count), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "not a live stream") != NULL);
    /* A failed task nobody synchronized: destroying the stream reports it (as this
     * thread's recent error and a warning) instead of dropping it, and succeeds. */
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)4321), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "aclrtDestroyStream") != NULL);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "4321") != NULL);
    /* Without a failure it says nothing. */
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)4322), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), 4322);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "aclrtDestroyStream") == NULL);
}

typedef struct race_arg {
    aclrtStream s;
    int launched;
    int ran;
    int stop;
} race_arg;

static aclError race_task(void *arg)
{
    __atomic_add_fetch(&((race_arg *)arg)->ran, 1, __ATOMIC_ACQ_REL);
    return ACL_SUCCESS;
}

static void *race_launcher(void *p)
{
    race_arg *a = p;
    for (;;) {
        aclError rc = aclrtLaunchHostTask(a->s, race_task, a);
        if (rc == ACL_SUCCESS) a->launched++;
        else break; /* the stream is gone */
    }
    return NULL;
}

/* Destroy while another thread keeps launching: every accepted task runs; no crash. */
static void test_destroy_race(void)
{
    for (int round = 0; round < 20; round++) {
        race_arg a = {0};
        TT_ASSERT_EQ(aclrtCreateStream(&a.s), ACL_SUCCESS);
        pthread_t t;
        pthread_create(&t, NULL, race_launcher, &a);
        sleep_ms(1);
        TT_ASSERT_EQ(aclrtDestroyStream(a.s), ACL_SUCCESS);
        pthread_join(t, NULL);
        TT_ASSERT_EQ(a.ran, a.launched);
    }
}

/* ---- events */

/* Waits until *arg is set (at most 10 s). */
static aclError wait_flag_task(void *arg)
{
    for (int i = 0; i < 10000 && !__atomic_load_n((int *)arg, __ATOMIC_ACQUIRE); i++) sleep_ms(1);
    return ACL_SUCCESS;
}


static void test_events(void)
{
    aclrtStream a = NULL, b = NULL;
    aclrtEvent ev = NULL;
    int flag_a = 0;
    ev_check chk = {&flag_a, -1};
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    TT_ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE); /* nothing recorded: nothing pending */
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);

    TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)300), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &flag_a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(b, check_flag, &chk), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(chk.seen, 1); /* B's task ran after A's slow task */
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);

    /* A wait made before a record does not wait for that record. */
    int flag2 = 0;
    ev_check chk2 = {&flag2, -1};
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS); /* last record already complete */
    TT_ASSERT_EQ(aclrtLaunchHostTask(b, check_flag, &chk2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(chk2.seen, 0);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)50), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &flag2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(__atomic_load_n(&flag2, __ATOMIC_ACQUIRE), 1);

    /* One event recorded on a busy stream, then on an idle one, a wait after each:
     * the first wait is for the first record, which the second record's completing
     * first must not release (records done out of order, as in CUDA). */
    aclrtStream c = NULL;
    int flag3 = 0;
    ev_check chk3 = {&flag3, -1};
    TT_ASSERT_EQ(aclrtCreateStream(&c), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)200), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &flag3), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, c), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(c), ACL_SUCCESS); /* the second record is done */
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE); /* the latest record */
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(b, check_flag, &chk3), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(chk3.seen, 1);
    TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(c), ACL_SUCCESS);

    /* Destroying an event whose record is still queued is safe. */
    aclrtEvent ev2 = NULL;
    TT_ASSERT_EQ(aclrtCreateEvent(&ev2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)20), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev2, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyEvent(ev2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);

    /* A record on a bad stream fails and leaves the event as it was: the earlier
     * record, still pending, is what queries and waits look at. */
    {
        int flag4 = 0, junk4 = 0, gate4 = 0;
        ev_check chk4 = {&flag4, -1};
        aclrtStream dead = NULL;
        TT_ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
        /* A holds until released (not a sleep: a loaded machine may stall this thread
         * past any sleep before the query below) */
        TT_ASSERT_EQ(aclrtLaunchHostTask(a, wait_flag_task, &gate4), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &flag4), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtRecordEvent(ev, dead), ACL_ERROR_RT_INVALID_HANDLE);
        TT_ASSERT_EQ(aclrtRecordEvent(ev, &junk4), ACL_ERROR_RT_INVALID_HANDLE);
        TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
        TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_NOT_READY);
        TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(b, check_flag, &chk4), ACL_SUCCESS);
        __atomic_store_n(&gate4, 1, __ATOMIC_RELEASE);
        TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
        TT_ASSERT_EQ(chk4.seen, 1); /* B waited for the record on A */
        TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
    }

    /* NULL stream: the record completes at once; a wait blocks the caller. */
    TT_ASSERT_EQ(aclrtRecordEvent(ev, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(NULL, ev), ACL_SUCCESS);

    /* bad handles */
    int junk = 0;
    TT_ASSERT_EQ(aclrtDestroyEvent(ev2), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtRecordEvent(&junk, a), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, &junk), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtStreamWaitEvent(a, NULL), ACL_ERROR_RT_INVALID_HANDLE);
    /* a bad stream, even when the event's record is complete (nothing to wait for) */
    TT_ASSERT_EQ(aclrtStreamWaitEvent(&junk, ev), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(&junk), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtQueryEventStatus(&junk, &st), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS); /* still valid after the failed record */

    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
}

/* ---- NULL stream, async copies, bad handles, device sync */

static aclError sync_self(void *arg)
{
    /* a task synchronizing or destroying its own stream must fail, not deadlock */
    aclrtStream self = arg;
    aclError a = aclrtSynchronizeStream(self);
    aclError b = aclrtDestroyStream(self);
    return (a == ACL_ERROR_INVALID_PARAM && b == ACL_ERROR_INVALID_PARAM) ? ACL_SUCCESS : ACL_ERROR_FAILURE;
}

/* A task synchronizing an event whose record is queued behind it on its own stream
 * must fail, not deadlock; one recorded before it is done and returns at once. */
static aclError sync_event_behind(void *arg)
{
    return aclrtSynchronizeEvent(arg) == ACL_ERROR_INVALID_PARAM ? ACL_SUCCESS : ACL_ERROR_FAILURE;
}

static aclError sync_event_before(void *arg) { return aclrtSynchronizeEvent(arg); }

/* The same through the NULL stream, which waits in the caller. */
static aclError null_wait_behind(void *arg)
{
    return aclrtStreamWaitEvent(NULL, arg) == ACL_ERROR_INVALID_PARAM ? ACL_SUCCESS : ACL_ERROR_FAILURE;
}

static aclError get_device_task(void *arg)
{
    return aclrtGetDevice((int32_t *)arg);
}

/* Records and waits on one stream from several threads at once: a wait must never be
 * queued in front of the marker of the record it waits for (a record numbered but not
 * yet queued was visible to waits, and the stream then waited for itself forever). */
typedef struct rec_wait_arg {
    aclrtStream s;
    aclrtEvent ev;
    int record; /* else wait */
    int failed;
} rec_wait_arg;

static void *rec_wait_loop(void *p)
{
    rec_wait_arg *a = p;
    for (int i = 0; i < 5000; i++)
        if ((a->record ? aclrtRecordEvent(a->ev, a->s) : aclrtStreamWaitEvent(a->s, a->ev)) != ACL_SUCCESS) a->failed++;
    return NULL;
}

static void test_concurrent_record_wait(void)
{
    enum { T = 8 };
    aclrtStream s = NULL;
    aclrtEvent ev = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    rec_wait_arg args[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        args[i] = (rec_wait_arg){s, ev, i & 1, 0};
        pthread_create(&th[i], NULL, rec_wait_loop, &args[i]);
    }
    int failed = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        failed += args[i].failed;
    }
    TT_ASSERT_EQ(failed, 0);
    aclError rc = aclrtSynchronizeStreamWithTimeout(s, 10000);
    TT_ASSERT_EQ(rc, ACL_SUCCESS);
    if (rc != ACL_SUCCESS) return; /* the stream waits for itself: destroying it would hang */
    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

static void test_null_and_async(void)
{
    /* a task sees the device of its stream's creator */
    int32_t dev = -1;
    aclrtStream ds = NULL;
    TT_ASSERT_EQ(aclrtSetDevice(3), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&ds), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(ds, get_device_task, &dev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(ds), ACL_SUCCESS);
    TT_ASSERT_EQ(dev, 3);
    TT_ASSERT_EQ(aclrtDestroyStream(ds), ACL_SUCCESS);

    int flag = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(NULL, set_flag, &flag), ACL_SUCCESS);
    TT_ASSERT_EQ(flag, 1); /* ran synchronously */
    TT_ASSERT_EQ(aclrtLaunchHostTask(NULL, fail_task, (void *)(intptr_t)42), 42);
    TT_ASSERT_EQ(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(NULL), ACL_ERROR_RT_INVALID_HANDLE);

    char src[256], dst[256];
    for (int i = 0; i < 256; i++) src[i] = (char)i;
    memset(dst, 0, sizeof dst);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, sizeof dst, src, 100, ACL_MEMCPY_HOST_TO_HOST, NULL), ACL_SUCCESS);
    TT_ASSERT(dst[99] == 99 && dst[100] == 0);
    TT_ASSERT_EQ(aclrtMemsetAsync(dst, sizeof dst, 7, 10, NULL), ACL_SUCCESS);
    TT_ASSERT(dst[9] == 7 && dst[10] == 10);

    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    memset(dst, 0, sizeof dst);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)300), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, sizeof dst, src, 256, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemsetAsync(dst, sizeof dst, 0x55, 16, s), ACL_SUCCESS);
    TT_ASSERT_EQ(dst[255], 0); /* still queued behind the sleep */
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT(dst[15] == 0x55 && dst[16] == 16 && dst[255] == (char)255);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, 8, src, 9, ACL_MEMCPY_DEFAULT, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemsetAsync(dst, 8, 0, 9, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, 8, src, 0, ACL_MEMCPY_DEFAULT, s), ACL_SUCCESS);
    /* ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE stages the source: it may be reused or freed at
     * once, and the queued copy still writes what it held at the call. */
    {
        char *staged = malloc(64);
        memset(staged, 0x11, 64);
        memset(dst, 0, sizeof dst);
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)100), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtMemcpyAsync(dst, sizeof dst, staged, 64, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s),
                     ACL_SUCCESS);
        memset(staged, 0x22, 64);
        free(staged);
        TT_ASSERT_EQ(aclrtMemcpyAsync(dst + 64, sizeof dst - 64, src, 8, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, s),
                     ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtMemcpyAsync(dst + 72, sizeof dst - 72, src, 8, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE, s),
                     ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
        TT_ASSERT(dst[0] == 0x11 && dst[63] == 0x11 && dst[64] == 0 && dst[71] == 7 && dst[79] == 7);
        TT_ASSERT_EQ(aclrtMemcpyAsync(dst, 8, src, 8, (aclrtMemcpyKind)8, s), ACL_ERROR_INVALID_PARAM);
    }

    int junk = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(&junk, set_flag, &flag), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtSynchronizeStream(&junk), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(&junk, 10), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtDestroyStream(&junk), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, 8, src, 8, ACL_MEMCPY_DEFAULT, &junk), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, 8, src, 0, ACL_MEMCPY_DEFAULT, &junk), ACL_ERROR_RT_INVALID_HANDLE);
    /* A staged copy names the dead stream, not the memory its staging would need. */
    {
        const size_t huge = (size_t)1 << 46;
        TT_ASSERT_EQ(aclrtMemcpyAsync(dst, huge, src, huge, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, &junk),
                     ACL_ERROR_RT_INVALID_HANDLE);
        TT_ASSERT(strstr(aclGetRecentErrMsg(), "not a live stream") != NULL);
        TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, huge, src, huge, huge, 2, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, &junk),
                     ACL_ERROR_RT_INVALID_HANDLE);
        TT_ASSERT(strstr(aclGetRecentErrMsg(), "not a live stream") != NULL);
    }
    TT_ASSERT_EQ(junk, 0);

    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sync_self, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    {
        aclrtEvent ev = NULL;
        int gate = 0;
        TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, wait_flag_task, &gate), ACL_SUCCESS); /* hold the stream */
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, sync_event_behind, ev), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, null_wait_behind, ev), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtRecordEvent(ev, s), ACL_SUCCESS); /* behind the task that waits for it */
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, sync_event_before, ev), ACL_SUCCESS);
        __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
        TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 10000), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    }

    /* aclrtSynchronizeDevice waits for the device's streams and reports (without clearing) errors */
    aclrtStream s2 = NULL;
    int f1 = 0, f2 = 0;
    TT_ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)30);
    aclrtLaunchHostTask(s, set_flag, &f1);
    aclrtLaunchHostTask(s2, sleep_task, (void *)(intptr_t)40);
    aclrtLaunchHostTask(s2, set_flag, &f2);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    TT_ASSERT(f1 == 1 && f2 == 1);
    aclrtLaunchHostTask(s2, fail_task, (void *)(intptr_t)9);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), 9);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s2), 9);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- oversubscription: 24 threads, each ping-ponging on 2 own streams (48 workers) */

enum { OV_THREADS = 24, OV_ITERS = 400 };

static aclError inc_task(void *arg)
{
    (*(int *)arg)++;
    return ACL_SUCCESS;
}

static void *ov_thread(void *p)
{
    int *fails = p;
    aclrtStream s[2];
    int count[2] = {0, 0};
    for (int i = 0; i < 2; i++) *fails += aclrtCreateStream(&s[i]) != ACL_SUCCESS;
    for (int it = 0; it < OV_ITERS; it++) {
        int k = it & 1;
        *fails += aclrtLaunchHostTask(s[k], inc_task, &count[k]) != ACL_SUCCESS;
        *fails += aclrtSynchronizeStream(s[k]) != ACL_SUCCESS;
    }
    *fails += count[0] + count[1] != OV_ITERS;
    for (int i = 0; i < 2; i++) *fails += aclrtDestroyStream(s[i]) != ACL_SUCCESS;
    return NULL;
}

static void test_oversubscribed(void)
{
    pthread_t t[OV_THREADS];
    int fails[OV_THREADS] = {0};
    double t0 = now_s();
    for (int i = 0; i < OV_THREADS; i++) pthread_create(&t[i], NULL, ov_thread, &fails[i]);
    int total = 0;
    for (int i = 0; i < OV_THREADS; i++) {
        pthread_join(t[i], NULL);
        total += fails[i];
    }
    double dt = now_s() - t0;
    TT_ASSERT_EQ(total, 0);
    TT_ASSERT_MSG(dt < 15.0, "%d round trips on %d threads took %.2f s", OV_THREADS * OV_ITERS, OV_THREADS, dt);
    printf("oversubscribed: %d launch+sync round trips on %d threads in %.3f s\n", OV_THREADS * OV_ITERS,
           OV_THREADS, dt);
}

/* ---- latency of one launch + synchronize (reported; asserted loosely) */

static void test_latency(void)
{
    aclrtStream s = NULL;
    int count = 0;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    enum { N = 5000 };
    double t0 = now_s();
    for (int i = 0; i < N; i++) {
        aclrtLaunchHostTask(s, inc_task, &count);
        aclrtSynchronizeStream(s);
    }
    double us = (now_s() - t0) * 1e6 / N;
    TT_ASSERT_EQ(count, N);
    /* A lost wake-up hangs (ctest times out); this only bounds pathological slowness
     * with room for a heavily loaded 2-core machine. */
    TT_ASSERT_MSG(us < 50000.0, "%.1f us per round trip", us);
    printf("launch+sync round trip: %.2f us\n", us);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

int main(void)
{
    test_order();
    test_errors();
    test_timeout();
    test_destroy_pending();
    test_destroy_race();
    test_events();
    test_concurrent_record_wait();
    test_null_and_async();
    test_oversubscribed();
    test_latency();
    return tt_report("test_acl_stream");
}
