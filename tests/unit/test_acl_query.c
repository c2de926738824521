/*
 * test_acl_query.c - aclrtStreamQuery, aclrtCreateStreamWithConfig,
 * aclrtQueryEventWaitStatus, aclrtQueryEvent (deprecated upstream), aclrtGetMemInfo and aclrtMemcpy2d(Async): normal use, and
 * bad arguments (NULL pointers, unknown or destroyed handles, bad sizes and pitches)
 * answered with the documented error and a message, never a crash.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* aclrtQueryEvent: aclrtQueryEventStatus's answer in aclrtEventStatus (COMPLETE = 0). */
static void test_query_event(void)
{
    aclrtEventStatus st = ACL_EVENT_STATUS_RESERVED;
    aclrtEvent ev = NULL;
    aclrtStream a = NULL;
    int gate = 0;
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEvent(ev, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtQueryEvent: status is NULL"));
    int bogus = 0;
    TT_ASSERT_EQ(aclrtQueryEvent(&bogus, &st), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(st, ACL_EVENT_STATUS_RESERVED); /* untouched on failure */

    TT_ASSERT_EQ(aclrtLaunchHostTask(a, gate_task, &gate), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEvent(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_STATUS_NOT_READY);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEvent(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_STATUS_COMPLETE);
    TT_ASSERT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
}

static void test_mem_info(void)
{
    size_t fr = 1, tot = 1;
    TT_ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &tot), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtGetMemInfo: free is NULL"));
    TT_ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &fr, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtGetMemInfo: total is NULL"));
    TT_ASSERT_EQ(aclrtGetMemInfo((aclrtMemAttr)18, &fr, &tot), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("not a valid aclrtMemAttr"));
    TT_ASSERT_EQ(aclrtGetMemInfo((aclrtMemAttr)-1, &fr, &tot), ACL_ERROR_INVALID_PARAM);

    /* The host's memory, as the kernel counts it. */
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    const aclrtMemAttr host_attrs[] = {ACL_DDR_MEM, ACL_HBM_MEM, ACL_DDR_MEM_HUGE, ACL_HBM_MEM_NORMAL,
                                       ACL_HBM_MEM_P2P_HUGE, ACL_MEM_NORMAL, ACL_MEM_HUGE, ACL_MEM_P2P_HUGE};
    for (size_t i = 0; i < sizeof host_attrs / sizeof host_attrs[0]; i++) {
        fr = tot = 0;
        TT_ASSERT_EQ(aclrtGetMemInfo(host_attrs[i], &fr, &tot), ACL_SUCCESS);
        TT_ASSERT(tot > 0);
        TT_ASSERT(fr > 0);
        TT_ASSERT(fr <= tot);
        TT_ASSERT_MSG((double)tot > 0.9 * phys && (double)tot < 1.1 * phys, "total %zu, physical %.0f", tot, phys);
    }
    const aclrtMemAttr none[] = {ACL_HBM_MEM_HUGE1G, ACL_HBM_MEM_P2P_HUGE1G, ACL_MEM_HUGE1G, ACL_MEM_P2P_HUGE1G};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        fr = tot = 1;
        TT_ASSERT_EQ(aclrtGetMemInfo(none[i], &fr, &tot), ACL_SUCCESS);
        TT_ASSERT_EQ(fr, 0);
        TT_ASSERT_EQ(tot, 0);
    }
}

enum { ROWS = 5, W = 7, SP = 11, DP = 13 };

static void fill_src(unsigned char *src)
{
    for (int i = 0; i < ROWS * SP; i++) src[i] = (unsigned char)(i + 1);
}

/* dst holds the ROWS x W block of src at pitch DP, and 0xee in every padding byte. */
static int check_dst(const unsigned char *dst)
{
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < DP; c++)
            if (dst[r * DP + c] != (c < W ? (unsigned char)(r * SP + c + 1) : 0xee)) return 0;
    return 1;
}

static void test_memcpy2d(void)
{
    unsigned char src[ROWS * SP], dst[ROWS * DP];
    fill_src(src);
    memset(dst, 0xee, sizeof dst);
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    TT_ASSERT(check_dst(dst));

    /* From device memory, contiguous rows (pitch == width). */
    void *dev = NULL;
    TT_ASSERT_EQ(aclrtMalloc(&dev, ROWS * W, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpy2d(dev, W, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    memset(dst, 0xee, sizeof dst);
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, dev, W, W, ROWS, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    TT_ASSERT(check_dst(dst));

    /* In place, overlapping, as memmove would (and as with contiguous rows): rows
     * 0..2 move one row down, then back up. */
    {
        unsigned char b[4 * 8], want[4 * 8];
        for (int i = 0; i < 32; i++) b[i] = want[i] = (unsigned char)i;
        for (int r = 3; r >= 1; r--) memcpy(want + r * 8, want + (r - 1) * 8, 4);
        TT_ASSERT_EQ(aclrtMemcpy2d(b + 8, 8, b, 8, 4, 3, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
        TT_ASSERT(memcmp(b, want, sizeof b) == 0);
        for (int r = 0; r < 3; r++) memcpy(want + r * 8, want + (r + 1) * 8, 4);
        TT_ASSERT_EQ(aclrtMemcpy2d(b, 8, b + 8, 8, 4, 3, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
        TT_ASSERT(memcmp(b, want, sizeof b) == 0);
    }

    /* Bad arguments: the documented error, nothing written. */
    memset(dst, 0xee, sizeof dst);
    TT_ASSERT_EQ(aclrtMemcpy2d(NULL, DP, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("dst is NULL"));
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, NULL, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("src is NULL"));
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, src, SP, 0, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("must both be positive"));
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, src, SP, W, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, W - 1, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("exceeds dpitch"));
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, src, W - 1, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("exceeds spitch"));
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, DP, src, SP, W, ROWS, (aclrtMemcpyKind)8), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("not a valid aclrtMemcpyKind"));
    TT_ASSERT_EQ(aclrtMemcpy2d(dst, SIZE_MAX / 2, src, SP, W, 3, ACL_MEMCPY_HOST_TO_DEVICE),
                 ACL_ERROR_INVALID_PARAM); /* the rows would wrap around the address space */
    TT_ASSERT(msg_has("do not fit"));
    for (size_t i = 0; i < sizeof dst; i++) TT_ASSERT_EQ(dst[i], 0xee);

    /* Async: in stream order, done at the synchronize. */
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    int gate = 0;
    memset(dst, 0xee, sizeof dst);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, gate_task, &gate), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, src, SP, W, ROWS, ACL_MEMCPY_DEVICE_TO_DEVICE, s), ACL_SUCCESS);
    sleep_ms(5);
    TT_ASSERT_EQ(dst[0], 0xee); /* not before the gate */
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT(check_dst(dst));

    /* ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the source may be freed when the call returns. */
    unsigned char *tmp = malloc(ROWS * SP);
    fill_src(tmp);
    memset(dst, 0xee, sizeof dst);
    gate = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, gate_task, &gate), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, tmp, SP, W, ROWS, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s), ACL_SUCCESS);
    memset(tmp, 0, ROWS * SP);
    free(tmp);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT(check_dst(dst));

    /* The NULL stream copies at once. */
    memset(dst, 0xee, sizeof dst);
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE, NULL), ACL_SUCCESS);
    TT_ASSERT(check_dst(dst));

    /* Bad arguments to the async form: rejected before anything is queued. */
    memset(dst, 0xee, sizeof dst);
    int bogus = 0;
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE, &bogus),
                 ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(msg_has("aclrtMemcpy2dAsync"));
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, src, SP, DP, ROWS, ACL_MEMCPY_HOST_TO_DEVICE, s),
                 ACL_ERROR_INVALID_PARAM); /* width > spitch */
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(NULL, DP, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, src, SP, W, 0, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, SIZE_MAX / 2, src, SP, W, 3, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, s),
                 ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    for (size_t i = 0; i < sizeof dst; i++) TT_ASSERT_EQ(dst[i], 0xee);

    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpy2dAsync(dst, DP, src, SP, W, ROWS, ACL_MEMCPY_HOST_TO_DEVICE, s),
                 ACL_ERROR_RT_INVALID_HANDLE); /* destroyed */
    TT_ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

int main(void)
{
    test_stream_query();
    test_create_with_config();
    test_event_wait_status();
    test_query_event();
    test_mem_info();
    test_memcpy2d();
    return tt_report("test_acl_query");
}
