/*
 * event.c - events with CUDA semantics, built from stream tasks.
 *
 * An event counts its records: aclrtRecordEvent gives the new record the number
 * numbered+1 and enqueues a marker task on the stream; when the marker runs, that
 * record is done. Only once the marker is queued does `recorded` (what waits and
 * queries look at) reach the record: a wait another thread queued on the same stream
 * in between would otherwise stand in front of the marker and wait forever. Records on different streams can be done out of order, and a wait
 * is for its own record, as in CUDA: `completed` is the watermark below which every
 * record is done (it only ever rises), and records done above it are kept in a
 * small list until the watermark passes them (record #1 on a busy stream, #2 on an
 * idle one: #2 done does not release a wait for #1).
 *
 *   stream A: [slow task][record #1]             completed: 0 -> 1
 *   stream B:      [wait for #1][task after wait]  (the wait blocks B's worker)
 *
 * aclrtStreamWaitEvent(stream, ev) captures target = recorded at the time of the
 * call (the most recent record before the wait; none: nothing to wait for) and
 * enqueues a task that blocks until record target is done. aclrtSynchronizeEvent
 * waits the same way in the caller; aclrtQueryEventStatus asks whether the latest
 * record is done. A wait that runs on a thread whose task the record is queued behind
 * (a host task synchronizing an event recorded after it on its own stream, or making
 * the NULL stream wait for it) fails with ACL_ERROR_INVALID_PARAM instead of waiting
 * forever.
 *
 * The event remembers where its latest record's marker was queued. A waiter for that
 * record (aclrtSynchronizeEvent, or the wait task of another stream) first runs the
 * recording stream's tasks up to the marker itself, as aclrtSynchronizeStream does
 * (stream.c: no thread switch, and no wait for a deferred wake-up); then it spins
 * briefly and sleeps on the event's condition variable. aclrtQueryEventStatus that
 * finds the record pending wakes the recording stream's worker, so polling advances.
 *
 * aclrtQueryEventWaitStatus: the event counts its wait tasks queued and not finished
 * (`waits`); complete when none is left. Finding some, it wakes the recording stream's
 * worker and that of the stream of the latest wait, so polling advances.
 *
 * Flags (aclrtCreateEventWithFlag): ACL_EVENT_SYNC allows aclrtStreamWaitEvent and
 * aclrtResetEvent, ACL_EVENT_TIME_LINE timing; aclrtCreateEvent's events have both.
 *
 * Timing: when a record's marker runs, the event keeps the time (hccl_now_ns) of its
 * highest-numbered record done so far (a lower-numbered record done later does not
 * move it). aclrtEventElapsedTime takes the latest record of each event, which must
 * be done. aclrtResetEvent queues a task that, when the stream reaches
 * it, marks every record numbered up to the event's latest at the call as reset: the
 * event is untimed until a later record is done. Reset changes nothing for waits and
 * queries: a record already done stays done, a pending one still completes (releasing
 * a waiter early, or never, would be worse than the race CANN warns about).
 *
 * Failures: a record covers the failures of the tasks queued before it on its stream
 * that no synchronize of that stream has reported yet. When its marker runs it takes
 * the stream's pending error and reason (hccl_rt_stream_task_error; the stream keeps
 * them for its own synchronize), and the event keeps them for its highest record done
 * that way. aclrtSynchronizeEvent for that record returns the error, with the reason in
 * aclGetRecentErrMsg (and HcclGetLastErrorMessage), each time; a stream's wait for it
 * fails as a task of the waiting stream, with the reason, so that stream's synchronize
 * reports it (the work behind the wait depends on the work that failed); a wait for
 * such a record already done is queued all the same. Queries and timing see the record
 * complete: the record itself is done. A record on the NULL stream covers nothing (the
 * failed task returned its error to its caller).
 *
 * Lifetime: an event is reference counted: the registry holds one reference and each
 * queued marker or in-flight API call holds one, so aclrtDestroyEvent while a marker is
 * pending is safe; the memory goes when the last reference drops.
 *
 * Fork: in the child the parent's streams are gone, so every pending record of an
 * event created before the fork counts as complete.
 */
#include "runtime/runtime_int.h"
#include "runtime/stream_task.h"

#include "util/util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct rt_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t numbered;  /* number given to the last aclrtRecordEvent (under mu) */
    uint64_t recorded;  /* the latest record whose marker is queued (or done): what waits see (under mu) */
    uint64_t completed; /* every record up to this one is done (atomic reads) */
    uint64_t *above;    /* records above completed that are done (under mu) */
    uint32_t nabove, capabove;
    int sleepers;
    int refs; /* atomic */
    uint64_t last_num;           /* the record whose marker position is known (under mu) */
    hccl_rt_stream_pos last_pos; /* where that marker was queued */
    uint32_t flags;              /* ACL_EVENT_* */
    uint64_t ts_num;             /* the highest record done so far (its time in ts_ns), under mu */
    uint64_t ts_ns;
    uint64_t reset_upto;         /* records up to this one were reset (aclrtResetEvent), under mu */
    uint64_t waits;              /* wait tasks queued and not finished (aclrtQueryEventWaitStatus), under mu */
    hccl_rt_stream_pos wait_pos; /* where the latest of them was queued, under mu */
    uint64_t err_num;            /* the highest record done after a failed task (0: none), under mu */
    aclError err;                /* that task's error */
    aclrtStream err_stream;      /* its stream (for the message only) */
    char *err_reason;            /* the reason it gave ("" or NULL: none) */
} rt_event;

#define REASON_LEN 1024 /* as a stream keeps its error's reason */
#define EVENT_FLAGS_KNOWN (ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE)

typedef struct marker {
    rt_event *ev;
    uint64_t seq;
    aclrtStream stream; /* a record's stream, whose failures it covers (NULL: none) */
} marker;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static hccl_rt_map reg;

static void event_put(rt_event *e)
{
    if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_cond_destroy(&e->cv);
        pthread_mutex_destroy(&e->mu);
        hccl_free(e->above);
        hccl_free(e->err_reason);
        hccl_free(e);
    }
}

static rt_event *event_get(aclrtEvent handle)
{
    rt_event *e = NULL;
    pthread_mutex_lock(&reg_mu);
    if (hccl_rt_map_get(&reg, (uintptr_t)handle, NULL)) {
        e = handle;
        __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
    }
    pthread_mutex_unlock(&reg_mu);
    return e;
}

/* Under mu: 1 when record seq is done. */
static int record_done(const rt_event *e, uint64_t seq)
{
    if (e->completed >= seq) return 1;
    for (uint32_t i = 0; i < e->nabove; i++)
        if (e->above[i] == seq) return 1;
    return 0;
}

/* Under mu: takes seq off the list of records done above the watermark; 1 if there. */
static int take_above(rt_event *e, uint64_t seq)
{
    for (uint32_t i = 0; i < e->nabove; i++) {
        if (e->above[i] == seq) {
            e->above[i] = e->above[--e->nabove];
            return 1;
        }
    }
    return 0;
}

/* Record seq is done; err != ACL_SUCCESS: a task of stream queued before it failed
 * (with reason). */
static void complete_record(rt_event *e, uint64_t seq, aclError err, aclrtStream stream, const char *reason)
{
    uint64_t now = (e->flags & ACL_EVENT_TIME_LINE) ? hccl_now_ns() : 0;
    pthread_mutex_lock(&e->mu);
    if (err != ACL_SUCCESS && seq >= e->err_num) {
        if (!e->err_reason) e->err_reason = hccl_malloc(REASON_LEN); /* NULL: the reason is lost, not the error */
        if (e->err_reason) snprintf(e->err_reason, REASON_LEN, "%s", reason);
        e->err_num = seq;
        e->err = err;
        e->err_stream = stream;
    }
    if (seq > e->ts_num) {
        e->ts_num = seq;
        e->ts_ns = now;
    }
    if (seq == e->completed + 1) {
        while (take_above(e, seq + 1)) seq++; /* the watermark passes the ones done before */
        __atomic_store_n(&e->completed, seq, __ATOMIC_RELEASE);
    } else if (seq > e->completed) {
        uint64_t *a = hccl_grow(e->above, &e->capabove, e->nabove, sizeof *a, 8);
        if (a) {
            e->above = a;
            e->above[e->nabove++] = seq;
        } else {
            __atomic_store_n(&e->completed, seq, __ATOMIC_RELEASE); /* out of memory: the old, looser rule */
        }
    }
    if (e->sleepers) pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* The error of a task queued before record num on its stream (ACL_SUCCESS: none), with
 * its reason (len bytes) and stream. Under mu. */
static aclError record_error(const rt_event *e, uint64_t num, char *reason, size_t len, aclrtStream *stream)
{
    if (num == 0 || e->err_num != num) return ACL_SUCCESS;
    snprintf(reason, len, "%s", e->err_reason ? e->err_reason : "");
    *stream = e->err_stream;
    return e->err;
}

/* 1 and *pos when record number num is the one whose marker position is known. */
static int record_pos(rt_event *e, uint64_t num, hccl_rt_stream_pos *pos)
{
    pthread_mutex_lock(&e->mu);
    int known = e->last_num == num && e->last_pos.stream;
    if (known) *pos = e->last_pos;
    pthread_mutex_unlock(&e->mu);
    return known;
}

/* Waits until record target is done; ACL_ERROR_INVALID_PARAM (with the text, naming
 * api) when it never can be: its marker is queued behind a task that this thread is
 * running (a host task waiting for a record made after it on its own stream). */
static aclError wait_record(rt_event *e, uint64_t target, const char *api)
{
    hccl_rt_stream_pos pos;
    if (__atomic_load_n(&e->completed, __ATOMIC_ACQUIRE) >= target) return ACL_SUCCESS;
    if (record_pos(e, target, &pos)) {
        pthread_mutex_lock(&e->mu);
        int done = record_done(e, target);
        pthread_mutex_unlock(&e->mu);
        if (!done && hccl_rt_stream_behind_here(&pos))
            return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                                 "%s: the record of event %p is queued behind this task on its own stream (%p): it "
                                 "would wait forever", api, (void *)e, pos.stream);
        hccl_rt_stream_help(&pos);
    }
    pthread_mutex_lock(&e->mu);
    int ooo = e->nabove > 0; /* records done out of order: the watermark may not reach target soon */
    pthread_mutex_unlock(&e->mu);
    if (!ooo && hccl_rt_spin_until_ge(&e->completed, target)) return ACL_SUCCESS;
    pthread_mutex_lock(&e->mu);
    while (!record_done(e, target)) {
        e->sleepers++;
        pthread_cond_wait(&e->cv, &e->mu);
        e->sleepers--;
    }
    pthread_mutex_unlock(&e->mu);
    return ACL_SUCCESS;
}

static aclError record_task(void *arg)
{
    marker *m = arg;
    char reason[REASON_LEN];
    aclError err = hccl_rt_stream_task_error(m->stream, reason, sizeof reason);
    complete_record(m->ev, m->seq, err, m->stream, err != ACL_SUCCESS ? reason : "");
    event_put(m->ev);
    hccl_free(m);
    return ACL_SUCCESS;
}

static aclError wait_task(void *arg)
{
    marker *m = arg;
    aclError rc = wait_record(m->ev, m->seq, "aclrtStreamWaitEvent");
    char reason[REASON_LEN];
    aclrtStream failed_on = NULL;
    pthread_mutex_lock(&m->ev->mu);
    aclError err = rc == ACL_SUCCESS ? record_error(m->ev, m->seq, reason, sizeof reason, &failed_on) : ACL_SUCCESS;
    pthread_mutex_unlock(&m->ev->mu);
    if (err != ACL_SUCCESS) {
        /* The work after the wait depends on work that failed: this stream's synchronize
         * (or the caller, on the NULL stream) reports it, with the reason. */
        char why[REASON_LEN + 160];
        snprintf(why, sizeof why, "aclrtStreamWaitEvent: the record of event %p follows a task on stream %p that "
                 "failed with error %d", (void *)m->ev, failed_on, (int)err);
        hccl_rt_task_failed(reason, "%s", why); /* for the caller, when the NULL stream runs the wait */
        if (reason[0]) snprintf(why + strlen(why), sizeof why - strlen(why), ": %s", reason);
        aclrtInternalSetTaskFailure(why);
        rc = err;
    }
    pthread_mutex_lock(&m->ev->mu);
    m->ev->waits--;
    pthread_mutex_unlock(&m->ev->mu);
    event_put(m->ev);
    hccl_free(m);
    return rc;
}

static aclError create_event(aclrtEvent *event, uint32_t flags, const char *api)
{
    if (!event) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: event is NULL", api);
    rt_event *e = hccl_calloc(1, sizeof *e);
    if (!e) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->refs = 1;
    e->flags = flags;
    pthread_mutex_lock(&reg_mu);
    aclError rc = hccl_rt_map_put(&reg, (uintptr_t)e, 1);
    pthread_mutex_unlock(&reg_mu);
    if (rc != ACL_SUCCESS) {
        event_put(e);
        return hccl_rt_error(rc, "%s: out of memory", api);
    }
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event)
{
    return create_event(event, ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE, "aclrtCreateEvent");
}

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    if (flag & ~EVENT_FLAGS_KNOWN)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtCreateEventWithFlag: flag 0x%x has unsupported bits 0x%x (supported: ACL_EVENT_SYNC, "
                             "ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_TIME_LINE)",
                             (unsigned)flag, (unsigned)(flag & ~EVENT_FLAGS_KNOWN));
    return create_event(event, flag, "aclrtCreateEventWithFlag");
}

aclError aclrtDestroyEvent(aclrtEvent event)
{
    pthread_mutex_lock(&reg_mu);
    int found = hccl_rt_map_del(&reg, (uintptr_t)event, NULL);
    pthread_mutex_unlock(&reg_mu);
    if (!found) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtDestroyEvent: %p is not a live event", event);
    event_put(event); /* the registry's reference */
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    rt_event *e = event_get(event);
    if (!e) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtRecordEvent: %p is not a live event", event);
    /* A record that cannot be queued must leave the event as it was: numbering it
     * would make it the latest record, done at once, and waits and queries would stop
     * looking at the earlier record that is still pending. */
    if (!hccl_rt_stream_live(stream)) {
        event_put(e);
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtRecordEvent: %p is not a live stream", stream);
    }
    marker *m = hccl_malloc(sizeof *m);
    if (!m) {
        event_put(e);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtRecordEvent: out of memory");
    }
    pthread_mutex_lock(&e->mu);
    m->ev = e;
    m->stream = stream;
    uint64_t num = m->seq = ++e->numbered;
    pthread_mutex_unlock(&e->mu);
    /* The marker owns the reference taken by event_get; this call holds one more. */
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
    hccl_rt_stream_pos pos;
    aclError rc = hccl_rt_stream_enqueue_at(stream, record_task, m, "aclrtRecordEvent", &pos);
    if (rc != ACL_SUCCESS) { /* never leave a record that cannot complete (stream destroyed meanwhile) */
        m->stream = NULL;
        record_task(m);
    }
    /* Only now do waits and queries see the record: a wait that another thread queued
     * on the same stream between the numbering and the enqueue would sit in front of
     * the marker and wait for it forever. */
    pthread_mutex_lock(&e->mu);
    if (rc == ACL_SUCCESS && pos.stream && num > e->last_num) {
        e->last_num = num;
        e->last_pos = pos;
    }
    if (num > e->recorded) e->recorded = num;
    pthread_mutex_unlock(&e->mu);
    event_put(e);
    return rc;
}

/* A reference to event for api, which needs ACL_EVENT_SYNC (without: what cannot be). */
static aclError sync_event_get(aclrtEvent event, const char *api, const char *without, rt_event **out)
{
    rt_event *e = event_get(event);
    if (!e) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: %p is not a live event", api, event);
    if (!(e->flags & ACL_EVENT_SYNC)) {
        event_put(e);
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: event %p was created without ACL_EVENT_SYNC: %s", api,
                             event, without);
    }
    *out = e;
    return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)
{
    rt_event *e;
    aclError got = sync_event_get(event, "aclrtStreamWaitEvent", "streams cannot wait for it", &e);
    if (got != ACL_SUCCESS) return got;
    char reason[REASON_LEN];
    aclrtStream failed_on;
    pthread_mutex_lock(&e->mu);
    uint64_t target = e->recorded;
    int done = record_done(e, target);
    /* A record done after a failed task is waited for all the same: the wait task
     * reports the failure to this stream. */
    if (done && record_error(e, target, reason, sizeof reason, &failed_on) != ACL_SUCCESS) done = 0;
    pthread_mutex_unlock(&e->mu);
    if (done) {
        event_put(e); /* already complete (or never recorded): nothing to wait for */
        if (!hccl_rt_stream_live(stream))
            return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtStreamWaitEvent: %p is not a live stream", stream);
        return ACL_SUCCESS;
    }
    marker *m = hccl_malloc(sizeof *m);
    if (!m) {
        event_put(e);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtStreamWaitEvent: out of memory");
    }
    m->ev = e;
    m->seq = target;
    m->stream = NULL;
    pthread_mutex_lock(&e->mu);
    e->waits++; /* before the task can run (and count itself done) */
    pthread_mutex_unlock(&e->mu);
    /* The marker owns the reference taken above; this call holds one more. */
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
    hccl_rt_stream_pos pos;
    aclError rc = hccl_rt_stream_enqueue_at(stream, wait_task, m, "aclrtStreamWaitEvent", &pos);
    pthread_mutex_lock(&e->mu);
    if (rc != ACL_SUCCESS && stream) e->waits--; /* not queued (the NULL stream ran it: it counted itself) */
    else if (rc == ACL_SUCCESS && pos.stream) e->wait_pos = pos;
    pthread_mutex_unlock(&e->mu);
    if (rc != ACL_SUCCESS && stream) {
        event_put(e);
        hccl_free(m);
    }
    event_put(e);
    return rc;
}

aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    rt_event *e = event_get(event);
    if (!e) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtSynchronizeEvent: %p is not a live event", event);
    pthread_mutex_lock(&e->mu);
    uint64_t target = e->recorded;
    pthread_mutex_unlock(&e->mu);
    aclError rc = wait_record(e, target, "aclrtSynchronizeEvent");
    if (rc == ACL_SUCCESS) {
        char reason[REASON_LEN];
        aclrtStream failed_on = NULL;
        pthread_mutex_lock(&e->mu);
        rc = record_error(e, target, reason, sizeof reason, &failed_on);
        pthread_mutex_unlock(&e->mu);
        if (rc != ACL_SUCCESS)
            hccl_rt_task_failed(reason, "aclrtSynchronizeEvent: a task on stream %p queued before the record of event "
                                "%p failed with error %d", failed_on, event, (int)rc);
    }
    event_put(e);
    return rc;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    if (!status) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventStatus: status is NULL");
    rt_event *e = event_get(event);
    if (!e) return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtQueryEventStatus: %p is not a live event", event);
    pthread_mutex_lock(&e->mu);
    uint64_t recorded = e->recorded;
    int done = record_done(e, recorded);
    pthread_mutex_unlock(&e->mu);
    hccl_rt_stream_pos pos;
    if (!done && record_pos(e, recorded, &pos)) hccl_rt_stream_kick(&pos); /* polling must advance */
    event_put(e);
    *status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status)
{
    if (!status) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent: status is NULL");
    aclrtEventRecordedStatus st;
    aclError err = aclrtQueryEventStatus(event, &st);
    if (err == ACL_SUCCESS)
        *status = st == ACL_EVENT_RECORDED_STATUS_COMPLETE ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return err;
}

aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status)
{
    if (!status) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventWaitStatus: status is NULL");
    rt_event *e = event_get(event);
    if (!e)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtQueryEventWaitStatus: %p is not a live event", event);
    pthread_mutex_lock(&e->mu);
    int pending = e->waits > 0;
    uint64_t recorded = e->recorded;
    hccl_rt_stream_pos wpos = e->wait_pos;
    pthread_mutex_unlock(&e->mu);
    hccl_rt_stream_pos rpos;
    if (pending) { /* polling must advance: the record's stream, then the waiting one */
        if (record_pos(e, recorded, &rpos)) hccl_rt_stream_kick(&rpos);
        hccl_rt_stream_kick(&wpos);
    }
    event_put(e);
    *status = pending ? ACL_EVENT_WAIT_STATUS_NOT_READY : ACL_EVENT_WAIT_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

typedef struct reset_req {
    rt_event *ev;
    uint64_t upto;
} reset_req;

static aclError reset_task(void *arg)
{
    reset_req *r = arg;
    pthread_mutex_lock(&r->ev->mu);
    if (r->upto > r->ev->reset_upto) r->ev->reset_upto = r->upto;
    pthread_mutex_unlock(&r->ev->mu);
    event_put(r->ev);
    hccl_free(r);
    return ACL_SUCCESS;
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream)
{
    rt_event *e;
    aclError got = sync_event_get(event, "aclrtResetEvent", "it cannot be reset", &e);
    if (got != ACL_SUCCESS) return got;
    reset_req *r = hccl_malloc(sizeof *r);
    if (!r) {
        event_put(e);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclrtResetEvent: out of memory");
    }
    r->ev = e; /* the task owns the reference */
    pthread_mutex_lock(&e->mu);
    r->upto = e->recorded;
    pthread_mutex_unlock(&e->mu);
    aclError rc = hccl_rt_stream_enqueue(stream, reset_task, r, "aclrtResetEvent");
    if (rc != ACL_SUCCESS && stream) { /* not queued (the NULL stream ran it: it owned r) */
        event_put(e);
        hccl_free(r);
    }
    return rc;
}

/* The time of e's latest record, or an error naming api and which (start/end). */
static aclError record_time(aclrtEvent handle, const char *which, uint64_t *ns)
{
    rt_event *e = event_get(handle);
    if (!e)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtEventElapsedTime: %s event %p is not a live event",
                             which, handle);
    aclError rc = ACL_SUCCESS;
    pthread_mutex_lock(&e->mu);
    uint64_t num = e->recorded;
    if (!(e->flags & ACL_EVENT_TIME_LINE)) {
        rc = hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                           "aclrtEventElapsedTime: %s event %p was created without ACL_EVENT_TIME_LINE: it has no time",
                           which, handle);
    } else if (num == 0 || num <= e->reset_upto) {
        rc = hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: %s event %p has not been recorded%s", which,
                           handle, num ? " since it was reset" : "");
    } else if (!record_done(e, num)) {
        rc = hccl_rt_error(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                           "aclrtEventElapsedTime: the latest record of %s event %p is not complete (synchronize it "
                           "first)", which, handle);
    } else {
        *ns = e->ts_ns; /* num is the highest record, done: the one timed */
    }
    pthread_mutex_unlock(&e->mu);
    event_put(e);
    return rc;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent)
{
    if (!ms) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms is NULL");
    uint64_t t0 = 0, t1 = 0;
    aclError rc = record_time(startEvent, "start", &t0);
    if (rc == ACL_SUCCESS) rc = record_time(endEvent, "end", &t1);
    if (rc != ACL_SUCCESS) return rc;
    *ms = (float)((double)(int64_t)(t1 - t0) / 1e6);
    return ACL_SUCCESS;
}

static void lock_event(uintptr_t key, uint64_t val, void *ctx)
{
    (void)val;
    (void)ctx;
    pthread_mutex_lock(&((rt_event *)key)->mu);
}

static void unlock_event(uintptr_t key, uint64_t val, void *ctx)
{
    (void)val;
    (void)ctx;
    pthread_mutex_unlock(&((rt_event *)key)->mu);
}

static void reset_event(uintptr_t key, uint64_t val, void *ctx)
{
    (void)val;
    (void)ctx;
    rt_event *e = (rt_event *)key;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->sleepers = 0;
    e->recorded = e->numbered;
    e->completed = e->numbered;
    e->nabove = 0;
    e->last_pos.stream = NULL;
    e->waits = 0; /* the parent's wait tasks never run here */
    e->wait_pos.stream = NULL;
    e->refs = 1; /* markers of the parent's streams never run here */
}

void hccl_rt_event_atfork_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
    hccl_rt_map_each(&reg, lock_event, NULL);
}

void hccl_rt_event_atfork_parent(void)
{
    hccl_rt_map_each(&reg, unlock_event, NULL);
    pthread_mutex_unlock(&reg_mu);
}

void hccl_rt_event_atfork_child(void)
{
    hccl_rt_map_each(&reg, reset_event, NULL);
    pthread_mutex_unlock(&reg_mu); /* taken by this thread in prepare */
}
