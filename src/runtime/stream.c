/*
 * stream.c - streams: in-order work queues, each run by its own worker thread.
 *
 *   caller threads                       worker thread (one per stream)
 *   aclrtLaunchHostTask ──┐  lock mu     loop: pop head (under mu)
 *   aclrtMemcpyAsync ─────┼─> append ──> ...   run fn(arg) (no lock held)
 *   aclrtRecordEvent ─────┘  submitted++       lock mu; error ?= rc; done = seq;
 *                                              wake synchronizers if any sleep
 *   aclrtSynchronizeStream: target = submitted; wait until done >= target;
 *                           return and clear the stream's error.
 *
 * Task k (1-based) gets seq k; done is the seq of the last finished task, so
 * "done >= target" means every task enqueued before the synchronize has finished.
 * A task's non-zero result becomes the stream's error (the first one since the last
 * synchronize is kept); later tasks still run.
 *
 * Latency: a sleeping thread costs a futex wake-up (~5-50 us), so both the worker
 * (waiting for work) and a synchronizer (waiting for done) first spin for up to
 * ACL_HOST_SPIN_US microseconds (default 30, 0 = never spin) on the lock-free counters,
 * calling sched_yield every few iterations, then sleep on a condition variable. The
 * spin is bounded and yields, so with more threads than cores nothing livelocks.
 *
 * Handles: a registry (hash map under reg_mu) holds every live stream; an API call
 * looks the handle up and takes a user reference, so an unknown or destroyed handle
 * is rejected without being dereferenced, and destroy frees the stream only after
 * the last user has left. aclrtDestroyStream unregisters the stream, lets the worker
 * drain the queue, joins it and frees everything.
 *
 * A worker runs bound to the device of the thread that created its stream, so a task
 * calling aclrtGetDevice sees that device.
 *
 * Fork: the child has no worker threads, so every stream created before the fork is
 * forgotten there (its handle becomes invalid); new streams work normally.
 */
#include "runtime/runtime_int.h"

#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

HCCL_PARAM_INT(rt_spin_us_env, "ACL_HOST_SPIN_US", 30)

typedef struct task {
    struct task *next;
    aclrtHostTask fn;
    void *arg;
    uint64_t seq;
} task;

typedef struct rt_stream {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* worker sleeps here for work */
    pthread_cond_t done_cv; /* synchronizers sleep here for done */
    task *head, *tail;
    uint64_t submitted; /* seq of the last enqueued task (atomic reads) */
    uint64_t done;      /* seq of the last finished task (atomic reads) */
    int error;          /* first task error since the last synchronize */
    int stop;           /* destroy requested: drain and exit */
    int worker_sleeping;
    int sync_sleepers;
    uint64_t wake_at; /* smallest target a sleeping synchronizer waits for */
    int users; /* API calls in flight holding the stream (under reg_mu) */
    unsigned id;
    int32_t device; /* the creator's device (-1: none); the worker runs bound to it */
    pthread_t worker;
} rt_stream;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv = PTHREAD_COND_INITIALIZER; /* a user reference was dropped */
static hccl_rt_map reg;
static unsigned next_id;
static __thread rt_stream *tls_worker; /* the stream whose worker is this thread */

int64_t hccl_rt_spin_us(void)
{
    int64_t v = hccl_param_rt_spin_us_env();
    if (v < 0) return 0;
    return v > 1000000 ? 1000000 : v;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

int hccl_rt_spin_until_ge(const uint64_t *word, uint64_t target)
{
    if (__atomic_load_n(word, __ATOMIC_ACQUIRE) >= target) return 1;
    int64_t us = hccl_rt_spin_us();
    if (us == 0) return 0;
    uint64_t limit = hccl_now_ns() + (uint64_t)us * 1000u;
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) >= target) return 1;
        if ((i & 15) == 0) {
            if (hccl_now_ns() >= limit) return 0;
            sched_yield();
        } else {
            cpu_relax();
        }
    }
}

static void *worker_main(void *p)
{
    rt_stream *s = p;
    char name[16];
    snprintf(name, sizeof name, "acl-stream-%u", s->id % 10000u);
    pthread_setname_np(pthread_self(), name);
    tls_worker = s;
    if (s->device >= 0) hccl_rt_device_bind(s->device);
    uint64_t taken = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop) {
            pthread_mutex_unlock(&s->mu);
            hccl_rt_spin_until_ge(&s->submitted, taken + 1);
            pthread_mutex_lock(&s->mu);
            if (s->head || s->stop) break;
            s->worker_sleeping = 1;
            pthread_cond_wait(&s->work_cv, &s->mu);
            s->worker_sleeping = 0;
        }
        if (!s->head) break; /* stop requested and the queue is drained */
        task *t = s->head;
        s->head = t->next;
        if (!s->head) s->tail = NULL;
        taken = t->seq;
        pthread_mutex_unlock(&s->mu);

        aclError rc = t->fn(t->arg);
        hccl_free(t);

        pthread_mutex_lock(&s->mu);
        if (rc != ACL_SUCCESS && s->error == ACL_SUCCESS) s->error = rc;
        __atomic_store_n(&s->done, taken, __ATOMIC_RELEASE);
        /* Wake synchronizers only when the earliest of their targets is reached: a
         * wake-up per task would cost two system calls and a context switch each. */
        if (s->sync_sleepers && taken >= s->wake_at) {
            s->wake_at = UINT64_MAX;
            pthread_cond_broadcast(&s->done_cv);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Looks a handle up and takes a user reference; NULL when it is not a live stream. */
static rt_stream *stream_get(aclrtStream handle)
{
    rt_stream *s = NULL;
    pthread_mutex_lock(&reg_mu);
    if (hccl_rt_map_get(&reg, (uintptr_t)handle, NULL)) {
        s = handle;
        s->users++;
    }
    pthread_mutex_unlock(&reg_mu);
    return s;
}

static void stream_put(rt_stream *s)
{
    pthread_mutex_lock(&reg_mu);
    if (--s->users == 0) pthread_cond_broadcast(&reg_cv);
    pthread_mutex_unlock(&reg_mu);
}

aclError aclrtCreateStream(aclrtStream *stream)
{
    if (!stream) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
    rt_stream *s = hccl_calloc(1, sizeof *s);
    if (!s) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream: out of memory");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, &ca);
    s->wake_at = UINT64_MAX;
    pthread_condattr_destroy(&ca);
    s->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    s->device = hccl_rt_device_current();

    /* Workers block every signal, so the application's handlers run on its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&s->worker, NULL, worker_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        pthread_cond_destroy(&s->work_cv);
        pthread_cond_destroy(&s->done_cv);
        pthread_mutex_destroy(&s->mu);
        hccl_free(s);
        return hccl_rt_error(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtCreateStream: cannot start a worker thread (errno %d)",
                             err);
    }
    pthread_mutex_lock(&reg_mu);
    aclError rc = hccl_rt_map_put(&reg, (uintptr_t)s, 1);
    pthread_mutex_unlock(&reg_mu);
    if (rc != ACL_SUCCESS) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->work_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->worker, NULL);
        hccl_free(s);
        return hccl_rt_error(rc, "aclrtCreateStream: out of memory");
    }
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    if (!stream)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE,
                             "aclrtDestroyStream: the default (NULL) stream cannot be destroyed");
    pthread_mutex_lock(&reg_mu);
    if (!hccl_rt_map_get(&reg, (uintptr_t)stream, NULL)) {
        pthread_mutex_unlock(&reg_mu);
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtDestroyStream: %p is not a live stream", stream);
    }
    rt_stream *s = stream;
    if (s == tls_worker) {
        pthread_mutex_unlock(&reg_mu);
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtDestroyStream: a task cannot destroy the stream it runs on (%p)", stream);
    }
    hccl_rt_map_del(&reg, (uintptr_t)s, NULL);
    pthread_mutex_unlock(&reg_mu);

    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL); /* the worker drains the queue first */

    pthread_mutex_lock(&reg_mu);
    while (s->users > 0) pthread_cond_wait(&reg_cv, &reg_mu);
    pthread_mutex_unlock(&reg_mu);
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    hccl_free(s);
    return ACL_SUCCESS;
}

static aclError enqueue(rt_stream *s, aclrtHostTask fn, void *arg, const char *api)
{
    task *t = hccl_malloc(sizeof *t);
    if (!t) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory for a stream task", api);
    t->next = NULL;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        hccl_free(t);
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: stream %p is being destroyed", api, (void *)s);
    }
    t->seq = s->submitted + 1;
    if (s->tail) s->tail->next = t;
    else s->head = t;
    s->tail = t;
    __atomic_store_n(&s->submitted, t->seq, __ATOMIC_RELEASE);
    if (s->worker_sleeping) pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    return ACL_SUCCESS;
}

aclError hccl_rt_stream_enqueue(aclrtStream stream, aclrtHostTask fn, void *arg, const char *api)
{
    if (!stream) return fn(arg);
    rt_stream *s = stream_get(stream);
    if (!s) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: %p is not a live stream", api, stream);
    aclError rc = enqueue(s, fn, arg, api);
    stream_put(s);
    return rc;
}

aclError aclrtLaunchHostTask(aclrtStream stream, aclrtHostTask fn, void *arg)
{
    if (!fn) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtLaunchHostTask: fn is NULL");
    return hccl_rt_stream_enqueue(stream, fn, arg, "aclrtLaunchHostTask");
}

/*
 * Waits until done >= target. timeout_ms < 0: forever. Returns ACL_SUCCESS or
 * ACL_ERROR_RT_STREAM_SYNC_TIMEOUT. Called without s->mu.
 */
static aclError wait_done(rt_stream *s, uint64_t target, int64_t timeout_ms)
{
    if (timeout_ms != 0 && hccl_rt_spin_until_ge(&s->done, target)) return ACL_SUCCESS;
    struct timespec deadline;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&s->mu);
    while (s->done < target) {
        if (timeout_ms == 0) {
            rc = ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
            break;
        }
        s->sync_sleepers++;
        if (target < s->wake_at) s->wake_at = target;
        int err = timeout_ms < 0 ? pthread_cond_wait(&s->done_cv, &s->mu)
                                 : pthread_cond_timedwait(&s->done_cv, &s->mu, &deadline);
        s->sync_sleepers--;
        if (err == ETIMEDOUT && s->done < target) {
            rc = ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static aclError sync_stream(aclrtStream stream, int64_t timeout_ms, const char *api)
{
    if (!stream) return ACL_SUCCESS; /* work on the NULL stream ran synchronously */
    rt_stream *s = stream_get(stream);
    if (!s) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: %p is not a live stream", api, stream);
    if (s == tls_worker) {
        stream_put(s);
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: a task cannot synchronize the stream it runs on (%p)", api,
                             stream);
    }
    uint64_t target = __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE);
    aclError rc = wait_done(s, target, timeout_ms);
    if (rc != ACL_SUCCESS) {
        stream_put(s);
        return hccl_rt_error(rc, "%s: stream %p did not finish within %lld ms (its work continues)", api, stream,
                             (long long)timeout_ms);
    }
    pthread_mutex_lock(&s->mu);
    rc = s->error;
    s->error = ACL_SUCCESS;
    pthread_mutex_unlock(&s->mu);
    stream_put(s);
    /* The failing task logged its own cause; only record the text here. */
    if (rc != ACL_SUCCESS) hccl_rt_error_quiet("%s: a task on stream %p failed with error %d", api, stream, rc);
    return rc;
}

aclError aclrtSynchronizeStream(aclrtStream stream) { return sync_stream(stream, -1, "aclrtSynchronizeStream"); }

/* timeout in ms: -1 waits forever; 0 only checks (timeout error when work is pending). */
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    if (timeout < -1)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtSynchronizeStreamWithTimeout: timeout %d ms is invalid (-1 = forever)", (int)timeout);
    return sync_stream(stream, timeout, "aclrtSynchronizeStreamWithTimeout");
}

static void collect(uintptr_t key, uint64_t val, void *ctx)
{
    (void)val;
    rt_stream ***cursor = ctx;
    rt_stream *s = (rt_stream *)key;
    s->users++;
    *(*cursor)++ = s;
}

aclError hccl_rt_stream_sync_all(void)
{
    pthread_mutex_lock(&reg_mu);
    size_t n = reg.len;
    rt_stream **all = hccl_calloc(n ? n : 1, sizeof *all);
    if (!all) {
        pthread_mutex_unlock(&reg_mu);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtSynchronizeDevice: out of memory");
    }
    rt_stream **cursor = all;
    hccl_rt_map_each(&reg, collect, &cursor);
    pthread_mutex_unlock(&reg_mu);

    aclError first = ACL_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        rt_stream *s = all[i];
        if (s != tls_worker) {
            wait_done(s, __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE), -1);
            pthread_mutex_lock(&s->mu);
            if (first == ACL_SUCCESS) first = s->error; /* reported, not cleared */
            pthread_mutex_unlock(&s->mu);
        }
        stream_put(s);
    }
    hccl_free(all);
    if (first != ACL_SUCCESS)
        hccl_rt_error_quiet("aclrtSynchronizeDevice: a stream task failed with error %d", first);
    return first;
}

void hccl_rt_stream_atfork_prepare(void) { pthread_mutex_lock(&reg_mu); }

void hccl_rt_stream_atfork_parent(void) { pthread_mutex_unlock(&reg_mu); }

void hccl_rt_stream_atfork_child(void)
{
    /* No worker exists here: forget the parent's streams (their memory is leaked). */
    hccl_rt_map_clear(&reg);
    tls_worker = NULL;
    pthread_mutex_init(&reg_mu, NULL);
    pthread_cond_init(&reg_cv, NULL);
}
