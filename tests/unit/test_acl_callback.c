/*
 * test_acl_callback.c - aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport
 * / aclrtUnSubscribeReport: callbacks run on the subscribed thread in stream order,
 * ACL_CALLBACK_BLOCK holds the stream and ACL_CALLBACK_NO_BLOCK does not, and the
 * errors for bad input, unsubscribed streams and threads, timeouts and unsubscribes.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int msg_has(const char *s) { return strstr(aclGetRecentErrMsg(), s) != NULL; }

static uint64_t tid_of(pthread_t t) { return (uint64_t)(uintptr_t)t; }

/* ---- a callback thread: loops on aclrtProcessReport(50) until stop */
typedef struct server {
    pthread_t thr;
    int stop;
    int bad_rc; /* a return other than success / timeout / not subscribed */
} server;

static void *serve(void *p)
{
    server *sv = p;
    while (!__atomic_load_n(&sv->stop, __ATOMIC_ACQUIRE)) {
        aclError rc = aclrtProcessReport(50);
        if (rc == ACL_ERROR_RT_THREAD_SUBSCRIBE) sleep_ms(1); /* not subscribed yet (as CANN's samples) */
        else if (rc != ACL_SUCCESS && rc != ACL_ERROR_RT_REPORT_TIMEOUT) sv->bad_rc = rc;
    }
    return NULL;
}

/* ---- callbacks */
typedef struct log_t {
    int n;
    int order[16];
    pthread_t ran_on[16];
} log_t;

typedef struct cb_arg {
    log_t *log;
    int id;
    int sleep_ms;
    int *gate; /* when set: spin until *gate */
    int *flag; /* when set: set to 1 at the end */
} cb_arg;

static void cb(void *p)
{
    cb_arg *a = p;
    if (a->sleep_ms) sleep_ms(a->sleep_ms);
    if (a->gate) {
        double end = now_s() + 10;
        while (!__atomic_load_n(a->gate, __ATOMIC_ACQUIRE) && now_s() < end) sleep_ms(1);
    }
    if (a->log) {
        int i = a->log->n++;
        a->log->order[i] = a->id;
        a->log->ran_on[i] = pthread_self();
    }
    if (a->flag) __atomic_store_n(a->flag, 1, __ATOMIC_RELEASE);
}

static void never(void *p) { *(int *)p = 1; }

static void test_errors(void)
{
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    int ran = 0;
    /* Nobody subscribed. */
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    TT_ASSERT(msg_has("aclrtSubscribeReport"));
    TT_ASSERT_EQ(aclrtProcessReport(100), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    TT_ASSERT_EQ(aclrtProcessReport(-1), ACL_ERROR_RT_THREAD_SUBSCRIBE); /* at once, not forever */
    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(pthread_self()), s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    /* Bad arguments. */
    TT_ASSERT_EQ(aclrtProcessReport(0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtProcessReport(-2), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(pthread_self()), NULL), ACL_ERROR_INVALID_PARAM);
    /* Thread id 0 is no thread: its blocking callbacks would hold the stream forever. */
    TT_ASSERT_EQ(aclrtSubscribeReport(0, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("threadId 0"));
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(pthread_self()), (aclrtStream)&ran), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(pthread_self()), (aclrtStream)&ran), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(pthread_self()), s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchCallback(NULL, &ran, ACL_CALLBACK_BLOCK, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, (aclrtCallbackBlockType)2, s), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("blockType 2"));
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, (aclrtStream)&ran), ACL_ERROR_RT_INVALID_HANDLE);
    /* One thread per stream. */
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(pthread_self()), s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    TT_ASSERT_EQ(aclrtSubscribeReport(12345, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(12345, s), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    /* Subscribed, nothing launched: the documented timeout code, after the timeout. */
    double t0 = now_s();
    TT_ASSERT_EQ(aclrtProcessReport(30), ACL_ERROR_RT_REPORT_TIMEOUT);
    double dt = now_s() - t0;
    TT_ASSERT_MSG(dt >= 0.025 && dt < 5.0, "timed out after %.3f s", dt);
    TT_ASSERT(msg_has("30 ms"));
    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(pthread_self()), s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtProcessReport(30), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(ran, 0);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* Blocking callbacks run on the subscribed thread, in order with the stream's tasks. */
static void test_block(void)
{
    server sv = {0};
    TT_ASSERT_EQ(pthread_create(&sv.thr, NULL, serve, &sv), 0);
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(sv.thr), s), ACL_SUCCESS);
    log_t log = {0};
    int done = 0;
    ev_check after = {&done, -1};
    cb_arg a1 = {&log, 1, 0, NULL, NULL}, a2 = {&log, 2, 40, NULL, &done}, a3 = {&log, 3, 0, NULL, NULL};
    TT_ASSERT_EQ(aclrtLaunchCallback(cb, &a1, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)10), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchCallback(cb, &a2, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, check_flag, &after), ACL_SUCCESS); /* behind a2: sees its flag */
    TT_ASSERT_EQ(aclrtLaunchCallback(cb, &a3, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(log.n, 3); /* the stream waited for all three */
    TT_ASSERT(log.order[0] == 1 && log.order[1] == 2 && log.order[2] == 3);
    for (int i = 0; i < log.n; i++) TT_ASSERT(pthread_equal(log.ran_on[i], sv.thr));
    TT_ASSERT_EQ(after.seen, 1);

    /* The same thread serves a second stream. */
    aclrtStream s2;
    TT_ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(sv.thr), s2), ACL_SUCCESS);
    cb_arg a4 = {&log, 4, 0, NULL, NULL};
    TT_ASSERT_EQ(aclrtLaunchCallback(cb, &a4, ACL_CALLBACK_BLOCK, s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    TT_ASSERT(log.n == 4 && log.order[3] == 4 && pthread_equal(log.ran_on[3], sv.thr));

    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(sv.thr), s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(sv.thr), s2), ACL_SUCCESS);
    __atomic_store_n(&sv.stop, 1, __ATOMIC_RELEASE);
    pthread_join(sv.thr, NULL);
    TT_ASSERT_EQ(sv.bad_rc, 0);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

/* A non-blocking callback does not hold the stream. */
static void test_no_block(void)
{
    server sv = {0};
    TT_ASSERT_EQ(pthread_create(&sv.thr, NULL, serve, &sv), 0);
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(sv.thr), s), ACL_SUCCESS);
    int gate = 0, cb_done = 0, task_done = 0;
    cb_arg a = {NULL, 1, 0, &gate, &cb_done};
    TT_ASSERT_EQ(aclrtLaunchCallback(cb, &a, ACL_CALLBACK_NO_BLOCK, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &task_done), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 5000), ACL_SUCCESS); /* while the callback is held */
    TT_ASSERT_EQ(task_done, 1);
    TT_ASSERT_EQ(__atomic_load_n(&cb_done, __ATOMIC_ACQUIRE), 0);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    double end = now_s() + 10;
    while (!__atomic_load_n(&cb_done, __ATOMIC_ACQUIRE) && now_s() < end) sleep_ms(1);
    TT_ASSERT_EQ(cb_done, 1);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(sv.thr), s), ACL_SUCCESS);
    __atomic_store_n(&sv.stop, 1, __ATOMIC_RELEASE);
    pthread_join(sv.thr, NULL);
    TT_ASSERT_EQ(sv.bad_rc, 0);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* Unsubscribing a thread that never processes releases the stream waiting for it. */
static void test_unsubscribe_cancels(void)
{
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    const uint64_t idle = 4242; /* no thread processes for it */
    TT_ASSERT_EQ(aclrtSubscribeReport(idle, s), ACL_SUCCESS);
    int ran = 0, ran2 = 0, after = 0;
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran2, ACL_CALLBACK_NO_BLOCK, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &after), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 50), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT); /* held */
    TT_ASSERT_EQ(after, 0);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(idle, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    TT_ASSERT(msg_has("failed"));
    TT_ASSERT_EQ(after, 1);
    TT_ASSERT_EQ(ran, 0);
    TT_ASSERT_EQ(ran2, 0);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS); /* the error was reported once */
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* A thread waiting forever in aclrtProcessReport returns when unsubscribed. */
typedef struct waiter {
    int go;
    aclError rc;
} waiter;

static void *wait_once(void *p)
{
    waiter *w = p;
    while (!__atomic_load_n(&w->go, __ATOMIC_ACQUIRE)) sleep_ms(1);
    w->rc = aclrtProcessReport(-1);
    return NULL;
}

static void test_unsubscribe_wakes(void)
{
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    waiter w = {0, -1};
    pthread_t thr;
    TT_ASSERT_EQ(pthread_create(&thr, NULL, wait_once, &w), 0);
    TT_ASSERT_EQ(aclrtSubscribeReport(tid_of(thr), s), ACL_SUCCESS);
    __atomic_store_n(&w.go, 1, __ATOMIC_RELEASE);
    sleep_ms(30);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(tid_of(thr), s), ACL_SUCCESS);
    pthread_join(thr, NULL);
    TT_ASSERT_EQ(w.rc, ACL_ERROR_RT_THREAD_SUBSCRIBE);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* Destroying a stream drops its subscription: a new stream (perhaps at the same
 * address) has none, and the thread may subscribe again. */
static void test_destroy_drops(void)
{
    aclrtStream s, s2;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSubscribeReport(777, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(777, s), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    int ran = 0;
    TT_ASSERT_EQ(aclrtLaunchCallback(never, &ran, ACL_CALLBACK_BLOCK, s2), ACL_ERROR_RT_STREAM_NO_CB_REG);
    TT_ASSERT_EQ(aclrtSubscribeReport(777, s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtUnSubscribeReport(777, s2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

/* After fork the child has no subscriptions of the parent's; new ones work. */
static void test_fork(void)
{
    aclrtStream s;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    uint64_t me = tid_of(pthread_self());
    TT_ASSERT_EQ(aclrtSubscribeReport(me, s), ACL_SUCCESS);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        if (aclrtProcessReport(10) != ACL_ERROR_RT_THREAD_SUBSCRIBE) bad |= 1;
        aclrtStream c;
        if (aclrtCreateStream(&c) != ACL_SUCCESS) _exit(2);
        if (aclrtSubscribeReport(me, c) != ACL_SUCCESS) bad |= 4;
        if (aclrtProcessReport(10) != ACL_ERROR_RT_REPORT_TIMEOUT) bad |= 8;
        if (aclrtUnSubscribeReport(me, c) != ACL_SUCCESS) bad |= 16;
        if (aclrtDestroyStream(c) != ACL_SUCCESS) bad |= 32;
        _exit(bad);
    }
    int status = -1;
    TT_ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid);
    TT_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    TT_ASSERT_EQ(aclrtProcessReport(10), ACL_ERROR_RT_REPORT_TIMEOUT); /* the parent keeps its own */
    TT_ASSERT_EQ(aclrtUnSubscribeReport(me, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

int main(void)
{
    test_errors();
    test_block();
    test_no_block();
    test_unsubscribe_cancels();
    test_unsubscribe_wakes();
    test_destroy_drops();
    test_fork();
    return tt_report("test_acl_callback");
}
