/*
 * stream.c - streams: in-order work queues, run by a worker thread per stream or by
 * the thread that synchronizes them.
 *
 *   caller threads                       worker thread (one per stream)
 *   aclrtLaunchHostTask ──┐  lock mu     loop: claim the head (under mu)
 *   aclrtMemcpyAsync ─────┼─> append ──> ...   run fn(arg) (no lock held)
 *   aclrtRecordEvent ─────┘  submitted++       lock mu; error ?= rc; done = seq
 *
 *   aclrtSynchronizeStream: target = submitted; until done >= target, run the head
 *                           here when no task of the stream is running, else wait for
 *                           the running one; return and clear the stream's error.
 *
 * Task k (1-based) gets seq k; done is the seq of the last finished task, so
 * "done >= target" means every task enqueued before the synchronize has finished.
 * A task's non-zero result becomes the stream's error (the first one since the last
 * synchronize is kept); later tasks still run.
 *
 * Who runs a task. Tasks of one stream run one at a time and in order: only the head
 * is ever claimed, under mu, and only while `running` is clear. A thread that waits
 * for a stream without a timeout (aclrtSynchronizeStream; aclrtSynchronizeEvent and a
 * stream's wait for an event, on the stream that records it; aclrtSynchronizeDevice)
 * registers as a helper: the worker then claims
 * nothing more, and the helper runs the tasks up to its target on its own thread,
 * bound to the stream's device (a task's aclrtGetDevice sees the stream creator's
 * device wherever it runs). That saves two thread switches per synchronized operation.
 * An enqueue never runs a task: an HCCL operation may wait for a peer whose matching
 * operation is queued behind other work (two streams on two communicators enqueued in
 * opposite orders on two ranks), and only the workers make that progress.
 *
 * Deferred wake-ups. Waking a sleeping worker costs a futex call and a context switch,
 * more than an 8-byte allreduce over shared memory. When a stream's synchronizes come
 * within ACL_STREAM_DEFER_US (default 500) of the enqueue of its oldest unfinished
 * task twice in a row (launch, then synchronize at once: the usual pattern), the
 * stream defers: an enqueue no longer wakes the worker, which dozes in timed waits of
 * that length and starts on the queue only once its oldest task has waited that long
 * unclaimed, so the synchronize that follows finds the tasks queued and runs them. A task the worker
 * had to take that way (nobody synchronized in time), a synchronize with a timeout, or
 * a synchronize that finds new work already done puts the stream back to waking the
 * worker at each enqueue: a task starts at most ACL_STREAM_DEFER_US late, once per
 * switch. A synchronizing thread first wakes the workers of the other streams on which
 * it deferred tasks (two streams enqueued in different orders on two ranks, then
 * synchronized one after the other, must not wait for the doze);
 * aclrtStreamWaitEvent and aclrtQueryEventStatus wake the recording stream's worker,
 * and aclrtStreamQuery the queried one's.
 * A deferring worker with nothing queued for a whole period sleeps until an enqueue
 * wakes it. While synchronizing threads run the stream, the worker dozes 16 periods,
 * then twice as long each time up to 256 (waking every period, it preempted them when
 * they shared a CPU: 2 MiB AllGathers 15-60% slower), and the last of them to leave
 * wakes it from such a doze. ACL_STREAM_DEFER_US=0 never defers.
 *
 * Latency: a sleeping thread costs a futex wake-up (~5-50 us), so a worker waiting for
 * work (when not deferring) and a synchronizer waiting for a running task first spin
 * for up to ACL_HOST_SPIN_US microseconds (default 30, 0 = never spin) on the
 * lock-free counters, calling sched_yield every few iterations, then sleep on a
 * condition variable. The spin is bounded and yields, so with more threads than cores
 * nothing livelocks.
 *
 * Handles: a registry (hash map under reg_mu) holds every live stream; an API call
 * looks the handle up and takes a user reference, so an unknown or destroyed handle
 * is rejected without being dereferenced, and destroy frees the stream only after
 * the last user has left. aclrtDestroyStream unregisters the stream, lets the worker
 * drain the queue, joins it and frees everything.
 *
 * Fork: the child has no worker threads, so every stream created before the fork is
 * forgotten there (its handle becomes invalid); new streams work normally.
 */
#include "runtime/runtime_int.h"
#include "runtime/stream_task.h"

#include "util/log.h"
#include "util/param.h"
#include "util/refs.h"
#include "util/spin.h"
#include "util/util.h"

#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

HCCL_PARAM_INT_IN(rt_spin_us_env, "ACL_HOST_SPIN_US", 30, 0, 1000000, HCCL_PARAM_CLAMP)
HCCL_PARAM_INT_IN(rt_defer_us_env, "ACL_STREAM_DEFER_US", 500, 0, 1000000, HCCL_PARAM_CLAMP)

enum {
    DEFER_VOTES = 2,    /* prompt synchronizes in a row before a stream defers */
    DEFER_SCORE_MAX = 8, /* cap, so one late task switches back at once */
    SPARE_MAX = 64       /* task records kept for reuse per stream */
};

/* What the worker does (under mu): running (or about to look at the queue), in a timed
 * wait that ends by itself, or asleep until signalled. */
enum { W_AWAKE, W_DOZING, W_SLEEPING };
#define HELPER_DOZE_SHIFT_MIN 4 /* while helpers run a worker dozes 16 ACL_STREAM_DEFER_US first, */
#define HELPER_DOZE_SHIFT_MAX 8 /* then twice as long each time, up to 256 */

typedef struct task {
    struct task *next;
    aclrtHostTask fn;
    void *arg;
    uint64_t seq;
    uint64_t t_enq; /* hccl_now_ns() at the enqueue (see enqueue()) */
} task;

typedef struct rt_stream {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the worker waits here */
    pthread_cond_t done_cv; /* synchronizers wait here for done */
    task *head, *tail;
    uint64_t submitted;   /* seq of the last enqueued task (atomic reads) */
    uint64_t done;        /* seq of the last finished task (atomic reads) */
    uint64_t run_t_enq;   /* t_enq of the running task */
    uint64_t kicked_upto; /* tasks up to this seq are not deferred */
    uint64_t synced_upto; /* target of the last synchronize */
    int error;            /* first task error since the last synchronize */
    char error_reason[1024]; /* its reason, as its task gave it (aclrtInternalSetTaskFailure), or "" */
    int stop;             /* destroy requested: drain and exit */
    int running;          /* a task is running (on the worker or a helper) */
    int helpers;          /* threads running the stream's tasks themselves */
    int wstate;           /* W_* */
    /* Dozes in a row begun with helpers running the stream (the first 16 periods long,
     * each next one twice as long: a worker woken every ACL_STREAM_DEFER_US preempts
     * the helper when they share a CPU); the last helper to leave wakes a worker in
     * such a doze. */
    unsigned helper_dozes;
    int defer_score;      /* prompt synchronizes in a row (see deferring()) */
    int deferred;         /* an enqueue left a task to the doze (counted in n_deferred) */
    pthread_t deferred_by; /* the thread of that enqueue */
    int sync_sleepers;
    uint64_t wake_at; /* smallest target a sleeping synchronizer waits for */
    int users; /* atomic: API calls in flight holding the stream (taken under reg_mu) */
    task *spare; /* finished task records for reuse (under mu) */
    int nspare;
    unsigned id;
    int32_t device; /* the creator's device (-1: none); tasks run bound to it */
    pthread_t worker;
} rt_stream;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static hccl_drain users_drain = HCCL_DRAIN_INITIALIZER; /* destroys waiting for a stream's users */
static hccl_rt_map reg;
static unsigned next_id;
static int n_deferred; /* streams with `deferred` set (atomic) */

/* The streams whose task this thread is running, innermost first: a task must not
 * synchronize or destroy its own stream, and a thread never helps a stream twice. */
typedef struct exec_frame {
    rt_stream *s;
    struct exec_frame *prev;
    int reason_set; /* the task gave its failure's reason (aclrtInternalSetTaskFailure) */
} exec_frame;
static __thread exec_frame *tls_frames;

static int runs_here(const rt_stream *s)
{
    for (const exec_frame *f = tls_frames; f; f = f->prev)
        if (f->s == s) return 1;
    return 0;
}

int64_t hccl_rt_spin_us(void) { return hccl_param_rt_spin_us_env(); }

static uint64_t defer_ns(void) { return (uint64_t)hccl_param_rt_defer_us_env() * 1000u; }

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
            hccl_cpu_relax();
        }
    }
}

/* ---- everything below that takes an rt_stream * expects s->mu held */

static int deferring(const rt_stream *s) { return s->defer_score >= DEFER_VOTES && defer_ns() > 0; }

static void set_deferred(rt_stream *s, int on)
{
    if (s->deferred == on) return;
    s->deferred = on;
    if (on) s->deferred_by = pthread_self();
    __atomic_add_fetch(&n_deferred, on ? 1 : -1, __ATOMIC_ACQ_REL);
}

/* After the helpers left, or a kick: make sure queued work (or a stop) gets the worker. */
static void wake_worker(rt_stream *s)
{
    if (s->helpers) return;
    if (s->helper_dozes && s->wstate == W_DOZING) { /* a long doze: back to the short ones */
        s->helper_dozes = 0;
        pthread_cond_signal(&s->work_cv);
        return;
    }
    s->helper_dozes = 0;
    if (!s->head && !s->stop) return;
    int due = s->stop || !deferring(s) || (s->head && s->head->seq <= s->kicked_upto);
    if (s->wstate == W_SLEEPING || (s->wstate == W_DOZING && due)) pthread_cond_signal(&s->work_cv);
}

/* Makes the worker start what is queued now, without deferring it. */
static void kick(rt_stream *s)
{
    s->kicked_upto = s->submitted;
    set_deferred(s, 0);
    wake_worker(s);
}

/*
 * Claims the head and runs it on this thread (the worker when on_worker, else a
 * helper, which binds the stream's device for the task). Unlocks mu meanwhile.
 */
static void run_head(rt_stream *s, int on_worker)
{
    task *t = s->head;
    s->head = t->next;
    if (!s->head) {
        s->tail = NULL;
        set_deferred(s, 0);
    }
    s->running = 1;
    s->run_t_enq = t->t_enq;
    pthread_mutex_unlock(&s->mu);

    exec_frame frame = {s, tls_frames, 0};
    tls_frames = &frame;
    hccl_rt_binding saved;
    if (!on_worker) hccl_rt_device_enter(s->device, &saved);
    aclError rc = t->fn(t->arg);
    if (!on_worker) hccl_rt_device_leave(&saved);
    tls_frames = frame.prev;
    uint64_t seq = t->seq;

    pthread_mutex_lock(&s->mu);
    if (s->nspare < SPARE_MAX) { /* the record is reused by a later enqueue */
        t->next = s->spare;
        s->spare = t;
        s->nspare++;
    } else {
        hccl_free(t);
    }
    s->running = 0;
    if (rc != ACL_SUCCESS && s->error == ACL_SUCCESS) {
        s->error = rc;
        if (!frame.reason_set) s->error_reason[0] = 0;
    }
    __atomic_store_n(&s->done, seq, __ATOMIC_RELEASE);
    /* Wake synchronizers only when the earliest of their targets is reached: a
     * wake-up per task would cost two system calls and a context switch each. */
    if (s->sync_sleepers && seq >= s->wake_at) {
        s->wake_at = UINT64_MAX;
        pthread_cond_broadcast(&s->done_cv);
    }
}

/* The worker waits in state st until signalled or, when deadline_ns != 0, until then. */
static void worker_wait(rt_stream *s, int st, uint64_t deadline_ns)
{
    s->wstate = st;
    if (!deadline_ns) {
        pthread_cond_wait(&s->work_cv, &s->mu);
    } else {
        struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
        pthread_cond_timedwait(&s->work_cv, &s->mu, &ts);
    }
    s->wstate = W_AWAKE;
}

static void *worker_main(void *p)
{
    rt_stream *s = p;
    char name[16];
    snprintf(name, sizeof name, "acl-stream-%u", s->id % 10000u);
    pthread_setname_np(pthread_self(), name);
    if (s->device >= 0) hccl_rt_device_bind(s->device);
    uint64_t idle_mark = UINT64_MAX; /* submitted when a doze with nothing queued began */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->head && !s->running && !s->helpers) {
            int defer = !s->stop && deferring(s) && s->head->seq > s->kicked_upto;
            uint64_t due = s->head->t_enq + defer_ns();
            if (defer && hccl_now_ns() < due) {
                worker_wait(s, W_DOZING, due); /* a synchronize may still come for it */
                continue;
            }
            if (defer) s->defer_score = 0; /* none came in time: asynchronous use */
            run_head(s, 1);
            continue;
        }
        if (s->stop && !s->head && !s->running) break; /* drained */
        if (s->head || s->running || s->helpers || s->stop) {
            /* Helpers run the stream; the last one to leave wakes us if work remains.
             * Deferring, doze instead, so that enqueues need not wake us afterwards;
             * longer and longer while helpers stay (wake_worker ends a long doze). */
            if (deferring(s) && !s->stop) {
                unsigned k = s->helpers ? HELPER_DOZE_SHIFT_MIN + s->helper_dozes : 0;
                uint64_t len = defer_ns() << (k < HELPER_DOZE_SHIFT_MAX ? k : HELPER_DOZE_SHIFT_MAX);
                if (s->helpers && s->helper_dozes < HELPER_DOZE_SHIFT_MAX) s->helper_dozes++;
                worker_wait(s, W_DOZING, hccl_now_ns() + len);
            } else {
                worker_wait(s, W_SLEEPING, 0);
            }
            continue;
        }
        s->helper_dozes = 0;
        if (!deferring(s)) {
            uint64_t seen = s->submitted;
            pthread_mutex_unlock(&s->mu);
            int more = hccl_rt_spin_until_ge(&s->submitted, seen + 1);
            pthread_mutex_lock(&s->mu);
            if (!more && !s->head && !s->stop) worker_wait(s, W_SLEEPING, 0);
            continue;
        }
        /* Deferring with nothing queued: doze a period at a time (an enqueue does not
         * wake us); sleep after a whole period without enqueues. */
        if (s->submitted == idle_mark) {
            idle_mark = UINT64_MAX;
            worker_wait(s, W_SLEEPING, 0);
        } else {
            idle_mark = s->submitted;
            worker_wait(s, W_DOZING, hccl_now_ns() + defer_ns());
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/*
 * This thread runs the stream's tasks up to target itself, waiting while another
 * thread runs one (the worker finishes the task it has and then leaves the stream to
 * the helpers). Returns with mu held and done >= target.
 */
static void help(rt_stream *s, uint64_t target)
{
    s->helpers++;
    while (s->done < target) {
        if (!s->running && s->head) {
            run_head(s, 0);
            continue;
        }
        uint64_t d = s->done;
        pthread_mutex_unlock(&s->mu);
        hccl_rt_spin_until_ge(&s->done, d + 1);
        pthread_mutex_lock(&s->mu);
        while (s->done == d && s->running) {
            s->sync_sleepers++;
            if (d + 1 < s->wake_at) s->wake_at = d + 1;
            pthread_cond_wait(&s->done_cv, &s->mu);
            s->sync_sleepers--;
        }
    }
    s->helpers--;
    wake_worker(s);
}

typedef struct kick_ctx {
    const rt_stream *except;
    pthread_t me;
} kick_ctx;

static void kick_if_mine(uintptr_t key, uint64_t val, void *ctx)
{
    (void)val;
    const kick_ctx *k = ctx;
    rt_stream *o = (rt_stream *)key;
    if (o == k->except) return;
    pthread_mutex_lock(&o->mu);
    if (o->deferred && pthread_equal(o->deferred_by, k->me)) kick(o);
    pthread_mutex_unlock(&o->mu);
}

/* Wakes the workers of the other streams on which this thread deferred tasks. */
static void kick_mine(const rt_stream *except)
{
    kick_ctx k = {except, pthread_self()};
    pthread_mutex_lock(&reg_mu); /* a registered stream is not freed meanwhile */
    hccl_rt_map_each(&reg, kick_if_mine, &k);
    pthread_mutex_unlock(&reg_mu);
}

/*
 * A synchronize without timeout: counts whether it came promptly (deferring()), then
 * runs the stream's tasks up to target here. Returns with mu held.
 */
static void sync_help(rt_stream *s, uint64_t target)
{
    pthread_mutex_lock(&s->mu);
    if (s->done >= target) {
        /* New work was already done: the caller overlapped it; wake the worker eagerly. */
        if (target > s->synced_upto) s->defer_score = 0;
    } else {
        uint64_t oldest = s->running ? s->run_t_enq : s->head->t_enq;
        if (hccl_now_ns() - oldest < defer_ns() && s->defer_score < DEFER_SCORE_MAX) s->defer_score++;
        set_deferred(s, 0); /* we run them */
        if (__atomic_load_n(&n_deferred, __ATOMIC_ACQUIRE) > 0) {
            pthread_mutex_unlock(&s->mu);
            kick_mine(s);
            pthread_mutex_lock(&s->mu);
        }
        help(s, target);
    }
    if (target > s->synced_upto) s->synced_upto = target;
}

/* Looks a handle up and takes a user reference; NULL when it is not a live stream. */
static rt_stream *stream_get(aclrtStream handle)
{
    rt_stream *s = NULL;
    pthread_mutex_lock(&reg_mu);
    if (hccl_rt_map_get(&reg, (uintptr_t)handle, NULL)) {
        s = handle;
        hccl_ref_get(&s->users);
    }
    pthread_mutex_unlock(&reg_mu);
    return s;
}

/* From users == 0 on, s may be freed (util/refs.h). */
static void stream_put(rt_stream *s) { hccl_ref_put(&users_drain, &s->users); }

void *hccl_rt_stream_ref(aclrtStream stream) { return stream ? stream_get(stream) : NULL; }

void hccl_rt_stream_unref(void *ref)
{
    if (ref) stream_put(ref);
}

int hccl_rt_stream_live(aclrtStream stream)
{
    if (!stream) return 1;
    rt_stream *s = stream_get(stream);
    if (s) stream_put(s);
    return s != NULL;
}

static void stream_free(rt_stream *s)
{
    while (s->spare) {
        task *t = s->spare;
        s->spare = t->next;
        hccl_free(t);
    }
    pthread_cond_destroy(&s->work_cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    hccl_free(s);
}

static aclError create_stream(aclrtStream *stream, const char *api)
{
    if (!stream) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: stream is NULL", api);
    rt_stream *s = hccl_calloc(1, sizeof *s);
    if (!s) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the timed waits use hccl_now_ns's clock */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work_cv, &ca);
    pthread_cond_init(&s->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    s->wake_at = UINT64_MAX;
    s->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    s->device = hccl_rt_device_current();
    /* The worker's tunables and the log's settings are read here, on the caller's
     * thread: getenv on the worker could run while the application calls setenv
     * (glibc's environment is not safe against that; a worker reading
     * ACL_HOST_SPIN_US on its first wait crashed a test that set RANK meanwhile). */
    (void)hccl_rt_spin_us();
    (void)defer_ns();
    (void)hccl_log_enabled(HCCL_LOG_WARN, 0);

    int err = hccl_thread_start(&s->worker, worker_main, s);
    if (err != 0) {
        stream_free(s);
        return hccl_rt_error(ACL_ERROR_RT_INTERNAL_ERROR, "%s: cannot start a worker thread (errno %d)", api, err);
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
        stream_free(s);
        return hccl_rt_error(rc, "%s: out of memory", api);
    }
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream) { return create_stream(stream, "aclrtCreateStream"); }

/* ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_SYNC and ACL_STREAM_HUGE ask for nothing a
 * host stream lacks: accepted, no effect. Flags whose streams behave differently (tasks
 * kept for a model, run by an AI CPU or only on the device) are refused rather than
 * silently given an ordinary stream. */
#define STREAM_FLAGS_UNSUPPORTED (ACL_STREAM_PERSISTENT | ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY)

/* priority is reserved upstream (fixed 0 on current parts): ignored. Other flag bits
 * give an ordinary stream, as CANN documents. */
aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag)
{
    (void)priority;
    if (flag & STREAM_FLAGS_UNSUPPORTED)
        return hccl_rt_error(ACL_ERROR_API_NOT_SUPPORT,
                             "aclrtCreateStreamWithConfig: flag 0x%x asks for 0x%x (ACL_STREAM_PERSISTENT, "
                             "ACL_STREAM_CPU_SCHEDULE or ACL_STREAM_DEVICE_USE_ONLY), not supported by host streams",
                             (unsigned)flag, (unsigned)(flag & STREAM_FLAGS_UNSUPPORTED));
    return create_stream(stream, "aclrtCreateStreamWithConfig");
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
    if (runs_here(s)) {
        pthread_mutex_unlock(&reg_mu);
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtDestroyStream: a task cannot destroy the stream it runs on (%p)", stream);
    }
    hccl_rt_map_del(&reg, (uintptr_t)s, NULL);
    pthread_mutex_unlock(&reg_mu);

    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    set_deferred(s, 0);
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL); /* the worker drains the queue first */

    hccl_ref_wait(&users_drain, &s->users, NULL);
    hccl_rt_callback_stream_gone(s); /* before the address can be reused (callback.c) */
    /* A task that failed since the last synchronize: nobody will synchronize this
     * stream again, so its error is reported here, as a warning and as this thread's
     * recent error message (aclGetRecentErrMsg), rather than dropped. The stream is
     * gone either way, so the call still succeeds, as CANN's does. */
    const aclError failed = s->error;
    if (failed != ACL_SUCCESS) {
        hccl_rt_task_failed(s->error_reason,
                            "aclrtDestroyStream: a task on stream %p failed with error %d, not reported by a "
                            "synchronize before the stream was destroyed",
                            stream, failed);
        HCCL_WARN(INIT, "%s", aclGetRecentErrMsg());
    }
    stream_free(s);
    return ACL_SUCCESS;
}

/* Appends fn(arg); *seq (if not NULL) gets the task's seq. */
static aclError enqueue(rt_stream *s, aclrtHostTask fn, void *arg, const char *api, uint64_t *seq)
{
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: stream %p is being destroyed", api, (void *)s);
    }
    task *t = s->spare;
    if (t) {
        s->spare = t->next;
        s->nspare--;
    } else if (!(t = hccl_malloc(sizeof *t))) {
        pthread_mutex_unlock(&s->mu);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory for a stream task", api);
    }
    t->next = NULL;
    t->fn = fn;
    t->arg = arg;
    t->seq = s->submitted + 1;
    /* Behind queued tasks a task counts as enqueued with the oldest of them: their
     * deferral ends together, and a clock read (~40 ns here) is saved. */
    t->t_enq = s->head ? s->head->t_enq : hccl_now_ns();
    if (s->tail) s->tail->next = t;
    else s->head = t;
    s->tail = t;
    __atomic_store_n(&s->submitted, t->seq, __ATOMIC_RELEASE);
    if (seq) *seq = t->seq;
    /* With helpers present the last one to leave wakes the worker if work remains; a
     * dozing worker of a deferring stream looks again by itself. */
    if (!s->helpers && (s->wstate == W_SLEEPING || (s->wstate == W_DOZING && !deferring(s))))
        pthread_cond_signal(&s->work_cv);
    else if (deferring(s))
        set_deferred(s, 1);
    pthread_mutex_unlock(&s->mu);
    return ACL_SUCCESS;
}

aclError hccl_rt_stream_enqueue_at(aclrtStream stream, aclrtHostTask fn, void *arg, const char *api,
                                   hccl_rt_stream_pos *pos)
{
    if (pos) pos->stream = NULL;
    if (!stream) return fn(arg);
    rt_stream *s = stream_get(stream);
    if (!s) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: %p is not a live stream", api, stream);
    uint64_t seq = 0;
    aclError rc = enqueue(s, fn, arg, api, &seq);
    if (rc == ACL_SUCCESS && pos) {
        pos->stream = s;
        pos->id = s->id;
        pos->seq = seq;
    }
    stream_put(s);
    return rc;
}

aclError hccl_rt_stream_enqueue(aclrtStream stream, aclrtHostTask fn, void *arg, const char *api)
{
    return hccl_rt_stream_enqueue_at(stream, fn, arg, api, NULL);
}

aclError aclrtLaunchHostTask(aclrtStream stream, aclrtHostTask fn, void *arg)
{
    if (!fn) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtLaunchHostTask: fn is NULL");
    return hccl_rt_stream_enqueue(stream, fn, arg, "aclrtLaunchHostTask");
}

/* The stream at pos when it is still live and the same stream (ids are never reused);
 * with a user reference. */
static rt_stream *pos_get(const hccl_rt_stream_pos *pos)
{
    if (!pos || !pos->stream) return NULL;
    rt_stream *s = stream_get(pos->stream);
    if (s && s->id != pos->id) {
        stream_put(s);
        s = NULL;
    }
    return s;
}

void hccl_rt_stream_help(const hccl_rt_stream_pos *pos)
{
    rt_stream *s = pos_get(pos);
    if (!s) return;
    if (runs_here(s)) {
        /* our own stream, further down this thread's stack: it cannot advance here */
        stream_put(s);
        return;
    }
    sync_help(s, pos->seq);
    pthread_mutex_unlock(&s->mu);
    stream_put(s);
}

int aclrtInternalInStreamTask(void) { return tls_frames != NULL; }

void aclrtInternalSetTaskFailure(const char *reason)
{
    exec_frame *f = tls_frames;
    if (!f || !reason) return;
    rt_stream *s = f->s;
    pthread_mutex_lock(&s->mu);
    if (s->error == ACL_SUCCESS) { /* else the stream keeps its first error's reason */
        snprintf(s->error_reason, sizeof s->error_reason, "%s", reason);
        f->reason_set = 1;
    }
    pthread_mutex_unlock(&s->mu);
}

aclError hccl_rt_stream_task_error(aclrtStream stream, char *reason, size_t len)
{
    exec_frame *f = tls_frames;
    if (!f || !stream || f->s != (rt_stream *)stream) return ACL_SUCCESS;
    rt_stream *s = f->s;
    pthread_mutex_lock(&s->mu);
    aclError rc = s->error;
    if (rc != ACL_SUCCESS && len) snprintf(reason, len, "%s", s->error_reason);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int hccl_rt_stream_behind_here(const hccl_rt_stream_pos *pos)
{
    if (!pos || !pos->stream) return 0;
    /* A stream whose task runs on this thread is live: no lookup needed to read it. */
    for (const exec_frame *f = tls_frames; f; f = f->prev)
        if (f->s == pos->stream)
            return f->s->id == pos->id && __atomic_load_n(&f->s->done, __ATOMIC_ACQUIRE) < pos->seq;
    return 0;
}

void hccl_rt_stream_kick(const hccl_rt_stream_pos *pos)
{
    rt_stream *s = pos_get(pos);
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    kick(s);
    pthread_mutex_unlock(&s->mu);
    stream_put(s);
}

void hccl_rt_deadline_ms(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/*
 * Waits until done >= target. timeout_ms < 0: forever. Returns ACL_SUCCESS or
 * ACL_ERROR_RT_STREAM_SYNC_TIMEOUT. Called without s->mu.
 */
static aclError wait_done(rt_stream *s, uint64_t target, int64_t timeout_ms)
{
    if (timeout_ms != 0 && hccl_rt_spin_until_ge(&s->done, target)) return ACL_SUCCESS;
    struct timespec deadline;
    if (timeout_ms > 0) hccl_rt_deadline_ms(&deadline, timeout_ms);
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
    if (runs_here(s)) {
        stream_put(s);
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: a task cannot synchronize the stream it runs on (%p)", api,
                             stream);
    }
    uint64_t target = __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE);
    if (timeout_ms < 0) {
        sync_help(s, target);
    } else {
        /* A task run here could outlast the timeout: leave the work to the worker, now. */
        pthread_mutex_lock(&s->mu);
        s->defer_score = 0;
        kick(s);
        pthread_mutex_unlock(&s->mu);
        aclError rc = wait_done(s, target, timeout_ms);
        if (rc != ACL_SUCCESS) {
            stream_put(s);
            return hccl_rt_error(rc, "%s: stream %p did not finish within %lld ms (its work continues)", api, stream,
                                 (long long)timeout_ms);
        }
        pthread_mutex_lock(&s->mu);
    }
    aclError rc = s->error;
    if (rc == ACL_SUCCESS) {
        pthread_mutex_unlock(&s->mu);
        stream_put(s);
        return ACL_SUCCESS;
    }
    /* The failing task logged its own cause (on the thread that ran it): record the
     * text here, with the reason the task gave, for this thread. */
    char reason[sizeof s->error_reason];
    memcpy(reason, s->error_reason, sizeof reason);
    s->error = ACL_SUCCESS;
    s->error_reason[0] = 0;
    pthread_mutex_unlock(&s->mu);
    stream_put(s);
    hccl_rt_task_failed(reason, "%s: a task on stream %p failed with error %d", api, stream, rc);
    return rc;
}

aclError aclrtSynchronizeStream(aclrtStream stream) { return sync_stream(stream, -1, "aclrtSynchronizeStream"); }

/* Never waits; a stream with work pending is kicked (polling must advance a deferring
 * stream, whose worker would otherwise wait ACL_STREAM_DEFER_US for a synchronize).
 * The stream's error stays for its next synchronize. */
aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status)
{
    if (!status) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtStreamQuery: status is NULL");
    if (!stream) { /* work on the NULL stream ran synchronously */
        *status = ACL_STREAM_STATUS_COMPLETE;
        return ACL_SUCCESS;
    }
    rt_stream *s = stream_get(stream);
    if (!s) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtStreamQuery: %p is not a live stream", stream);
    pthread_mutex_lock(&s->mu);
    int done = s->done >= s->submitted;
    if (!done && s->kicked_upto < s->submitted) kick(s);
    pthread_mutex_unlock(&s->mu);
    stream_put(s);
    *status = done ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

/* Both modes are accepted and behave alike: the tasks behind a failed one still run
 * (a failed HCCL operation fails its communicator, so its later operations fail at once)
 * and the next synchronize reports the first failure. */
aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode)
{
    if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtSetStreamFailureMode: mode %llu is invalid (ACL_CONTINUE_ON_FAILURE = 0 or "
                             "ACL_STOP_ON_FAILURE = 1)",
                             (unsigned long long)mode);
    if (!stream)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtSetStreamFailureMode: the NULL (default) stream cannot be configured");
    rt_stream *s = stream_get(stream);
    if (!s)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtSetStreamFailureMode: %p is not a live stream",
                             stream);
    stream_put(s);
    return ACL_SUCCESS;
}

/* timeout in ms: -1 waits forever; 0 only checks (timeout error when work is pending). */
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    if (timeout < -1)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtSynchronizeStreamWithTimeout: timeout %d ms is invalid (-1 = forever)", (int)timeout);
    return sync_stream(stream, timeout, "aclrtSynchronizeStreamWithTimeout");
}

typedef struct collect_ctx {
    rt_stream **out;
    size_t n;
    int32_t device;
} collect_ctx;

static void collect(uintptr_t key, uint64_t val, void *ctx)
{
    (void)val;
    collect_ctx *c = ctx;
    rt_stream *s = (rt_stream *)key;
    if (s->device != c->device) return;
    hccl_ref_get(&s->users);
    c->out[c->n++] = s;
}

/*
 * aclrtSynchronizeDevice and aclrtResetDevice: the streams created on one device (as
 * upstream; in one process with a rank per thread and device, a rank must not wait for
 * another rank's next operations). Wakes their workers first (their tasks may wait for
 * each other's peers), then runs each one's tasks here.
 */
aclError hccl_rt_stream_sync_device(int32_t device, const char *api)
{
    pthread_mutex_lock(&reg_mu);
    collect_ctx c = {hccl_calloc(reg.len ? reg.len : 1, sizeof(rt_stream *)), 0, device};
    if (!c.out) {
        pthread_mutex_unlock(&reg_mu);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
    }
    hccl_rt_map_each(&reg, collect, &c);
    pthread_mutex_unlock(&reg_mu);

    for (size_t i = 0; i < c.n; i++) {
        pthread_mutex_lock(&c.out[i]->mu);
        kick(c.out[i]);
        pthread_mutex_unlock(&c.out[i]->mu);
    }
    aclError first = ACL_SUCCESS;
    char *reason = NULL; /* first's reason (the failure path only) */
    for (size_t i = 0; i < c.n; i++) {
        rt_stream *s = c.out[i];
        if (!runs_here(s)) {
            uint64_t target = __atomic_load_n(&s->submitted, __ATOMIC_ACQUIRE);
            pthread_mutex_lock(&s->mu);
            help(s, target);
            if (first == ACL_SUCCESS && s->error != ACL_SUCCESS) { /* reported, not cleared */
                first = s->error;
                reason = hccl_malloc(sizeof s->error_reason);
                if (reason) memcpy(reason, s->error_reason, sizeof s->error_reason);
            }
            pthread_mutex_unlock(&s->mu);
        }
        stream_put(s);
    }
    hccl_free(c.out);
    if (first != ACL_SUCCESS)
        hccl_rt_task_failed(reason ? reason : "", "%s: a stream task failed with error %d", api, first);
    hccl_free(reason);
    return first;
}

void hccl_rt_stream_atfork_prepare(void) { pthread_mutex_lock(&reg_mu); }

void hccl_rt_stream_atfork_parent(void) { pthread_mutex_unlock(&reg_mu); }

void hccl_rt_stream_atfork_child(void)
{
    /* No worker exists here: forget the parent's streams (their memory is leaked). */
    hccl_rt_map_clear(&reg);
    tls_frames = NULL;
    n_deferred = 0;
    pthread_mutex_unlock(&reg_mu); /* taken by this thread in prepare */
    hccl_drain_reset(&users_drain);
}
