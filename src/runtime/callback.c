/*
 * callback.c - CANN's report callbacks: aclrtSubscribeReport / aclrtLaunchCallback /
 * aclrtProcessReport / aclrtUnSubscribeReport.
 *
 *   user thread T: loop { aclrtProcessReport(timeout) }     runs fn(userData)
 *   aclrtSubscribeReport(T, s)         s's callbacks go to T (one thread per stream;
 *                                      one thread may serve several streams)
 *   aclrtLaunchCallback(fn, d, b, s)   queues a stream task; when s reaches it, the
 *                                      task appends the callback to T's queue and, for
 *                                      ACL_CALLBACK_BLOCK, waits until T has run it
 *
 * A thread is named by its pthread_t as a number (what std::thread::id prints with
 * libstdc++ and what CANN's samples pass). Errors, as CANN's: launching on a stream
 * without a subscribed thread, ACL_ERROR_RT_STREAM_NO_CB_REG (also the stream's error
 * when its callback task runs after the thread was unsubscribed); subscribing a stream
 * that has a thread, ACL_ERROR_RT_STREAM_SUBSCRIBE; aclrtProcessReport on a thread
 * serving no stream (or no longer: an unsubscribe wakes it), ACL_ERROR_RT_THREAD_SUBSCRIBE;
 * no callback within the timeout, ACL_ERROR_RT_REPORT_TIMEOUT.
 *
 * aclrtUnSubscribeReport(T, s) cancels s's callbacks queued for T and not started yet:
 * the callbacks are not run ("no longer handled by that thread"), a blocking one's
 * stream task fails with ACL_ERROR_RT_STREAM_NO_CB_REG (the stream's error, reported
 * by its next synchronize) and dropped non-blocking ones are logged. A callback
 * already running finishes. aclrtDestroyStream drains the stream (its callbacks are
 * delivered and, when blocking, run) and then drops its subscription.
 *
 * A callback task that runs on the subscribed thread itself (that thread synchronizes
 * the stream and runs its tasks: stream.c) runs the callback there at once: waiting
 * for its own aclrtProcessReport would never end.
 *
 * Everything here is under one mutex (cb_mu); callbacks run without it.
 *
 * Fork: the child has none of the parent's streams or threads: every subscription and
 * queued callback is forgotten there (their memory is leaked).
 */
#include "runtime/runtime_int.h"

#include "util/log.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

typedef struct cb_item {
    struct cb_item *next;
    aclrtCallback fn;
    void *data;
    int block;
    aclrtStream stream;
    uint64_t tid; /* the thread it was handed to */
    int state;    /* CB_* (under cb_mu) */
} cb_item;

enum { CB_QUEUED, CB_RUNNING, CB_DONE, CB_CANCELLED };

typedef struct cb_thread {
    struct cb_thread *next;
    uint64_t tid;
    cb_item *head, *tail; /* delivered, not started */
    pthread_cond_t cv;    /* aclrtProcessReport waits here */
    int nstreams;         /* streams subscribed to this thread */
    int procs;            /* aclrtProcessReport calls in progress */
} cb_thread;

static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_done_cv = PTHREAD_COND_INITIALIZER; /* blocking callbacks finished */
static cb_thread *threads;
static hccl_rt_map subs; /* stream -> cb_thread * */

static uint64_t self_tid(void) { return (uint64_t)(uintptr_t)pthread_self(); }

/* Under cb_mu. */
static cb_thread *thread_find(uint64_t tid)
{
    for (cb_thread *t = threads; t; t = t->next)
        if (t->tid == tid) return t;
    return NULL;
}

static cb_thread *sub_find(aclrtStream stream)
{
    uint64_t v;
    return hccl_rt_map_get(&subs, (uintptr_t)stream, &v) ? (cb_thread *)(uintptr_t)v : NULL;
}

/* A new, listed thread record. */
static cb_thread *thread_new(uint64_t tid)
{
    cb_thread *t = hccl_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->tid = tid;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    t->next = threads;
    threads = t;
    return t;
}

/* Frees t when nothing refers to it any more. */
static void thread_maybe_free(cb_thread *t)
{
    if (t->nstreams || t->procs || t->head) return;
    for (cb_thread **p = &threads; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    pthread_cond_destroy(&t->cv);
    hccl_free(t);
}

/* Removes stream's subscription to t, cancelling its callbacks queued for t. */
static void unsubscribe_locked(cb_thread *t, aclrtStream stream)
{
    hccl_rt_map_del(&subs, (uintptr_t)stream, NULL);
    t->nstreams--;
    int dropped = 0, blocked = 0;
    for (cb_item **p = &t->head; *p;) {
        cb_item *it = *p;
        if (it->stream != stream) {
            p = &it->next;
            continue;
        }
        *p = it->next;
        if (it->block) {
            it->state = CB_CANCELLED; /* its stream task frees it */
            blocked = 1;
        } else {
            hccl_free(it);
            dropped++;
        }
    }
    t->tail = NULL;
    for (cb_item *it = t->head; it; it = it->next) t->tail = it;
    if (blocked) pthread_cond_broadcast(&cb_done_cv);
    if (dropped)
        HCCL_WARN(ALL, "aclrtUnSubscribeReport: %d non-blocking callback(s) of stream %p were queued for thread %llu "
                       "and are dropped without running", dropped, stream, (unsigned long long)t->tid);
    pthread_cond_broadcast(&t->cv); /* a waiting aclrtProcessReport may have nothing left to serve */
    thread_maybe_free(t);
}

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream)
{
    if (!stream)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtSubscribeReport: the default (NULL) stream runs its work in the caller; callbacks "
                             "need a created stream");
    /* No pthread_t is 0: a stream subscribed to it would wait forever for its first
     * blocking callback to run. */
    if (threadId == 0)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtSubscribeReport: threadId 0 names no thread (pass the "
                             "callback thread's pthread_t, e.g. pthread_self() as a number in that thread)");
    void *ref = hccl_rt_stream_ref(stream);
    if (!ref) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtSubscribeReport: %p is not a live stream", stream);
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&cb_mu);
    cb_thread *cur = sub_find(stream);
    cb_thread *t = thread_find(threadId);
    if (cur) {
        rc = hccl_rt_error(ACL_ERROR_RT_STREAM_SUBSCRIBE,
                           "aclrtSubscribeReport: stream %p already has a callback thread (%llu); unsubscribe it first",
                           stream, (unsigned long long)cur->tid);
    } else if (!t && !(t = thread_new(threadId))) {
        rc = hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtSubscribeReport: out of memory");
    } else {
        rc = hccl_rt_map_put(&subs, (uintptr_t)stream, (uint64_t)(uintptr_t)t);
        if (rc == ACL_SUCCESS) {
            t->nstreams++;
            pthread_cond_broadcast(&t->cv);
        } else {
            thread_maybe_free(t);
            rc = hccl_rt_error(rc, "aclrtSubscribeReport: out of memory");
        }
    }
    pthread_mutex_unlock(&cb_mu);
    hccl_rt_stream_unref(ref);
    return rc;
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream)
{
    if (!stream) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtUnSubscribeReport: stream is NULL");
    void *ref = hccl_rt_stream_ref(stream);
    if (!ref)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtUnSubscribeReport: %p is not a live stream", stream);
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&cb_mu);
    cb_thread *t = sub_find(stream);
    if (!t)
        rc = hccl_rt_error(ACL_ERROR_RT_STREAM_NO_CB_REG, "aclrtUnSubscribeReport: stream %p has no callback thread",
                           stream);
    else if (t->tid != threadId)
        rc = hccl_rt_error(ACL_ERROR_RT_THREAD_SUBSCRIBE,
                           "aclrtUnSubscribeReport: stream %p is served by thread %llu, not %llu", stream,
                           (unsigned long long)t->tid, (unsigned long long)threadId);
    else
        unsubscribe_locked(t, stream);
    pthread_mutex_unlock(&cb_mu);
    hccl_rt_stream_unref(ref);
    return rc;
}

void hccl_rt_callback_stream_gone(aclrtStream stream)
{
    pthread_mutex_lock(&cb_mu);
    cb_thread *t = sub_find(stream);
    if (t) unsubscribe_locked(t, stream);
    pthread_mutex_unlock(&cb_mu);
}

static void run_item(cb_item *it)
{
    it->fn(it->data);
}

/* The stream task: hands the callback to the stream's thread (or runs it, on that thread). */
static aclError callback_task(void *arg)
{
    cb_item *it = arg;
    pthread_mutex_lock(&cb_mu);
    cb_thread *t = sub_find(it->stream);
    if (!t) {
        pthread_mutex_unlock(&cb_mu);
        aclrtStream s = it->stream;
        hccl_free(it);
        return hccl_rt_error(ACL_ERROR_RT_STREAM_NO_CB_REG,
                             "aclrtLaunchCallback: stream %p reached a callback but no thread is subscribed to it "
                             "any more; the callback did not run", s);
    }
    if (t->tid == self_tid()) { /* the subscribed thread runs the stream here */
        pthread_mutex_unlock(&cb_mu);
        run_item(it);
        hccl_free(it);
        return ACL_SUCCESS;
    }
    it->state = CB_QUEUED;
    it->tid = t->tid;
    it->next = NULL;
    if (t->tail) t->tail->next = it;
    else t->head = it;
    t->tail = it;
    pthread_cond_broadcast(&t->cv);
    if (!it->block) { /* the thread frees it */
        pthread_mutex_unlock(&cb_mu);
        return ACL_SUCCESS;
    }
    while (it->state == CB_QUEUED || it->state == CB_RUNNING) pthread_cond_wait(&cb_done_cv, &cb_mu);
    int cancelled = it->state == CB_CANCELLED; /* t may be gone then */
    pthread_mutex_unlock(&cb_mu);
    aclrtStream s = it->stream;
    uint64_t tid = it->tid;
    hccl_free(it);
    if (cancelled)
        return hccl_rt_error(ACL_ERROR_RT_STREAM_NO_CB_REG,
                             "aclrtLaunchCallback: thread %llu was unsubscribed from stream %p before running its "
                             "blocking callback; the callback did not run", (unsigned long long)tid, s);
    return ACL_SUCCESS;
}

aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream)
{
    if (!fn) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtLaunchCallback: fn is NULL");
    if (blockType != ACL_CALLBACK_NO_BLOCK && blockType != ACL_CALLBACK_BLOCK)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtLaunchCallback: blockType %d is invalid (ACL_CALLBACK_NO_BLOCK or ACL_CALLBACK_BLOCK)",
                             (int)blockType);
    if (!stream)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtLaunchCallback: the default (NULL) stream cannot have a callback thread; use a "
                             "created stream");
    if (!hccl_rt_stream_live(stream))
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtLaunchCallback: %p is not a live stream", stream);
    pthread_mutex_lock(&cb_mu);
    int subscribed = sub_find(stream) != NULL;
    pthread_mutex_unlock(&cb_mu);
    if (!subscribed)
        return hccl_rt_error(ACL_ERROR_RT_STREAM_NO_CB_REG,
                             "aclrtLaunchCallback: no thread is subscribed to stream %p (call aclrtSubscribeReport "
                             "first)", stream);
    cb_item *it = hccl_calloc(1, sizeof *it);
    if (!it) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtLaunchCallback: out of memory");
    it->fn = fn;
    it->data = userData;
    it->block = blockType == ACL_CALLBACK_BLOCK;
    it->stream = stream;
    aclError rc = hccl_rt_stream_enqueue(stream, callback_task, it, "aclrtLaunchCallback");
    if (rc != ACL_SUCCESS) hccl_free(it);
    return rc;
}

aclError aclrtProcessReport(int32_t timeout)
{
    if (timeout < -1 || timeout == 0)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtProcessReport: timeout %d ms is invalid (-1 = forever, or > 0)", (int)timeout);
    struct timespec deadline;
    if (timeout > 0) hccl_rt_deadline_ms(&deadline, timeout);
    uint64_t tid = self_tid();
    pthread_mutex_lock(&cb_mu);
    cb_thread *t = thread_find(tid);
    if (!t) {
        pthread_mutex_unlock(&cb_mu);
        return hccl_rt_error(ACL_ERROR_RT_THREAD_SUBSCRIBE,
                             "aclrtProcessReport: this thread (%llu) is not subscribed to any stream "
                             "(aclrtSubscribeReport)", (unsigned long long)tid);
    }
    t->procs++;
    aclError rc = ACL_SUCCESS;
    while (!t->head) {
        if (!t->nstreams) {
            rc = hccl_rt_error(ACL_ERROR_RT_THREAD_SUBSCRIBE,
                               "aclrtProcessReport: this thread (%llu) was unsubscribed from its last stream",
                               (unsigned long long)tid);
            break;
        }
        int err = timeout < 0 ? pthread_cond_wait(&t->cv, &cb_mu) : pthread_cond_timedwait(&t->cv, &cb_mu, &deadline);
        if (err == ETIMEDOUT && !t->head) {
            rc = hccl_rt_error(ACL_ERROR_RT_REPORT_TIMEOUT, "aclrtProcessReport: no callback within %d ms",
                               (int)timeout);
            break;
        }
    }
    cb_item *it = NULL;
    if (rc == ACL_SUCCESS) {
        it = t->head;
        t->head = it->next;
        if (!t->head) t->tail = NULL;
        it->state = CB_RUNNING;
    }
    pthread_mutex_unlock(&cb_mu);
    if (it) run_item(it);
    pthread_mutex_lock(&cb_mu);
    if (it && it->block) {
        it->state = CB_DONE; /* its stream task frees it */
        pthread_cond_broadcast(&cb_done_cv);
    } else if (it) {
        hccl_free(it);
    }
    t->procs--;
    thread_maybe_free(t);
    pthread_mutex_unlock(&cb_mu);
    return rc;
}

void hccl_rt_callback_atfork_prepare(void) { pthread_mutex_lock(&cb_mu); }

void hccl_rt_callback_atfork_parent(void) { pthread_mutex_unlock(&cb_mu); }

void hccl_rt_callback_atfork_child(void)
{
    hccl_rt_map_clear(&subs);
    threads = NULL;
    pthread_mutex_unlock(&cb_mu); /* taken by this thread in prepare */
    pthread_cond_init(&cb_done_cv, NULL);
}
