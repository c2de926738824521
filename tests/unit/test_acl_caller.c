/*
 * test_acl_caller.c - threads that synchronize a stream run its tasks themselves
 * (src/runtime/stream.c, "Who runs a task" and "Deferred wake-ups"): order, one task
 * at a time against the worker and concurrent enqueues, the stream's device, events
 * across streams, host tasks that enqueue or synchronize, errors, the bounded doze of
 * a deferred task nobody synchronizes (also right after a long synchronize), and HCCL operations on two streams of two
 * communicators enqueued in opposite orders on two thread-ranks.
 *
 * main() runs everything as is, then once more in a child process with
 * ACL_STREAM_DEFER_US=0 and ACL_HOST_SPIN_US=0 (tunables are read once per process):
 * no deferral, every hand-off through the condition variables.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include "core/comm.h"
#include "util/util.h"

#include <acl/acl.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int child_mode; /* ACL_STREAM_DEFER_US=0: nothing is deferred */

/* Prompt launch + synchronize pairs: what makes a stream defer its worker's wake-ups. */
static void prime(aclrtStream s)
{
    for (int i = 0; i < 4; i++) {
        aclrtLaunchHostTask(s, noop_task, NULL);
        aclrtSynchronizeStream(s);
    }
}

/* ---- a log of tasks: order, overlap, thread and device of each */

enum { LOG_MAX = 50000 };

typedef struct task_log {
    int next;       /* index the next task must have */
    int in_task;    /* tasks running now (must never exceed 1) */
    int overlaps;   /* times a task found another running */
    int out_of_order;
    int wrong_device;
    int on_caller;  /* tasks that ran on the thread in `caller` */
    int32_t device; /* the device tasks must see */
    pthread_t caller;
    int track_caller;
} task_log;

typedef struct log_arg {
    task_log *log;
    int idx;
} log_arg;

static aclError log_task(void *arg)
{
    log_arg *a = arg;
    task_log *l = a->log;
    if (__atomic_fetch_add(&l->in_task, 1, __ATOMIC_ACQ_REL) != 0) __atomic_add_fetch(&l->overlaps, 1, __ATOMIC_RELAXED);
    if (a->idx != l->next) l->out_of_order++;
    l->next = a->idx + 1;
    int32_t dev = -1;
    if (l->device >= 0 && (aclrtGetDevice(&dev) != ACL_SUCCESS || dev != l->device)) l->wrong_device++;
    if (l->track_caller && pthread_equal(pthread_self(), l->caller)) l->on_caller++;
    __atomic_sub_fetch(&l->in_task, 1, __ATOMIC_ACQ_REL);
    free(a);
    return ACL_SUCCESS;
}

static int launch_log(aclrtStream s, task_log *l, int idx)
{
    log_arg *a = malloc(sizeof *a);
    a->log = l;
    a->idx = idx;
    if (aclrtLaunchHostTask(s, log_task, a) == ACL_SUCCESS) return 1;
    free(a);
    return 0;
}

/* The synchronizing thread runs the tasks, in order, bound to the stream's device; its
 * own device binding is back afterwards. */
static void test_caller_order(void)
{
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtSetDevice(3), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
    prime(s);
    task_log l = {0};
    l.device = 3;
    l.caller = pthread_self();
    l.track_caller = 1;
    int idx = 0, ok = 1;
    for (int round = 0; round < 400; round++) {
        for (int k = 0; k < 5; k++) ok &= launch_log(s, &l, idx++);
        ok &= aclrtSynchronizeStream(s) == ACL_SUCCESS;
        ok &= l.next == idx; /* everything launched before the synchronize has run */
    }
    TT_ASSERT(ok);
    TT_ASSERT_EQ(l.out_of_order, 0);
    TT_ASSERT_EQ(l.overlaps, 0);
    TT_ASSERT_EQ(l.wrong_device, 0);
    int32_t dev = -1;
    TT_ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    TT_ASSERT_EQ(dev, 1);
    /* Deferring, the synchronize finds the tasks queued and runs them; a loaded machine
     * may delay a synchronize past the deferral, so only ask for some. */
    if (!child_mode) TT_ASSERT_MSG(l.on_caller > 0, "%d of %d tasks ran on the caller", l.on_caller, idx);
    printf("caller order: %d of %d tasks ran on the synchronizing thread\n", l.on_caller, idx);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- concurrent enqueues while synchronizers run the tasks */

typedef struct conc {
    aclrtStream s;
    task_log log;
    int n;
    int finished; /* the enqueuer is done */
    int fails;
} conc;

static void *conc_enqueuer(void *p)
{
    conc *c = p;
    for (int i = 0; i < c->n; i++) {
        if (!launch_log(c->s, &c->log, i)) c->fails++;
        if (i % 2000 == 1999) aclrtLaunchHostTask(c->s, sleep_task, (void *)(intptr_t)1); /* a slow one */
    }
    __atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *conc_syncer(void *p)
{
    conc *c = p;
    while (!__atomic_load_n(&c->finished, __ATOMIC_ACQUIRE))
        if (aclrtSynchronizeStream(c->s) != ACL_SUCCESS) __atomic_add_fetch(&c->fails, 1, __ATOMIC_RELAXED);
    return NULL;
}

static void test_concurrent_enqueue(void)
{
    conc c = {0};
    c.n = 20000;
    c.log.device = -1;
    TT_ASSERT_EQ(aclrtCreateStream(&c.s), ACL_SUCCESS);
    prime(c.s);
    pthread_t e, y[2];
    pthread_create(&e, NULL, conc_enqueuer, &c);
    for (int i = 0; i < 2; i++) pthread_create(&y[i], NULL, conc_syncer, &c);
    pthread_join(e, NULL);
    for (int i = 0; i < 2; i++) pthread_join(y[i], NULL);
    TT_ASSERT_EQ(aclrtSynchronizeStream(c.s), ACL_SUCCESS);
    TT_ASSERT_EQ(c.fails, 0);
    TT_ASSERT_EQ(c.log.next, c.n);
    TT_ASSERT_EQ(c.log.out_of_order, 0);
    TT_ASSERT_EQ(c.log.overlaps, 0);
    TT_ASSERT_EQ(aclrtDestroyStream(c.s), ACL_SUCCESS);
}

/* ---- events across streams */

static void test_events(void)
{
    aclrtStream a = NULL, b = NULL;
    aclrtEvent ev = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    prime(a);
    prime(b);

    /* B waits for A's record; synchronizing B runs B's wait, which runs A up to it. */
    for (int round = 0; round < 50; round++) {
        int flag = 0;
        ev_check chk = {&flag, -1};
        TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)(round % 10 == 0 ? 20 : 0)), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &flag), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(b, check_flag, &chk), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtSynchronizeStream(b), ACL_SUCCESS);
        TT_ASSERT_EQ(chk.seen, 1);
        TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
    }

    /* aclrtSynchronizeEvent runs the recording stream up to the record, not beyond. */
    int before = 0, after = 0;
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)5), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &before), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, sleep_task, (void *)(intptr_t)300), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &after), ACL_SUCCESS);
    double t0 = now_s();
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
    double dt = now_s() - t0;
    TT_ASSERT_EQ(__atomic_load_n(&before, __ATOMIC_ACQUIRE), 1);
    TT_ASSERT_EQ(__atomic_load_n(&after, __ATOMIC_ACQUIRE), 0);
    TT_ASSERT_MSG(dt < 0.25, "aclrtSynchronizeEvent took %.3f s (ran past its record?)", dt);
    TT_ASSERT_EQ(aclrtSynchronizeStream(a), ACL_SUCCESS);
    TT_ASSERT_EQ(after, 1);

    /* Polling aclrtQueryEventStatus advances a deferring stream. */
    prime(a);
    int polled = 0;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    TT_ASSERT_EQ(aclrtLaunchHostTask(a, set_flag, &polled), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, a), ACL_SUCCESS);
    t0 = now_s();
    while (aclrtQueryEventStatus(ev, &st) == ACL_SUCCESS && st != ACL_EVENT_RECORDED_STATUS_COMPLETE &&
           now_s() - t0 < 10.0)
        sched_yield();
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    TT_ASSERT_EQ(polled, 1);

    /* A record on a stream destroyed since: complete (the destroy drained it). */
    TT_ASSERT_EQ(aclrtLaunchHostTask(b, sleep_task, (void *)(intptr_t)10), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtRecordEvent(ev, b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(b), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
    TT_ASSERT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);

    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(a), ACL_SUCCESS);
}

/* ---- host tasks that enqueue, synchronize and destroy */

typedef struct reentrant {
    aclrtStream self, other;
    int followup;  /* set by the task this one launches on its own stream */
    int other_ran; /* set by a task queued on `other` before this one ran */
    int result;    /* 1 when every expectation inside the task held */
} reentrant;

static aclError reentrant_task(void *arg)
{
    reentrant *r = arg;
    int ok = aclrtLaunchHostTask(r->self, set_flag, &r->followup) == ACL_SUCCESS;
    ok &= aclrtSynchronizeStream(r->self) == ACL_ERROR_INVALID_PARAM; /* its own stream */
    ok &= aclrtDestroyStream(r->self) == ACL_ERROR_INVALID_PARAM;
    ok &= aclrtSynchronizeStream(r->other) == ACL_SUCCESS; /* another stream: runs it here */
    ok &= __atomic_load_n(&r->other_ran, __ATOMIC_ACQUIRE) == 1;
    r->result = ok;
    return ACL_SUCCESS;
}

static void test_host_tasks(void)
{
    aclrtStream s = NULL, o = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&o), ACL_SUCCESS);
    prime(s);
    prime(o);
    for (int round = 0; round < 20; round++) {
        reentrant r = {s, o, 0, 0, 0};
        TT_ASSERT_EQ(aclrtLaunchHostTask(o, sleep_task, (void *)(intptr_t)(round == 0 ? 20 : 0)), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(o, set_flag, &r.other_ran), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, reentrant_task, &r), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
        TT_ASSERT_EQ(r.result, 1);
        /* the follow-up was queued after the synchronize began: the next one covers it */
        TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
        TT_ASSERT_EQ(r.followup, 1);
    }
    /* async copies run by the synchronizer */
    char src[64], dst[64];
    for (int i = 0; i < 64; i++) src[i] = (char)i;
    memset(dst, 0, sizeof dst);
    TT_ASSERT_EQ(aclrtMemcpyAsync(dst, sizeof dst, src, 64, ACL_MEMCPY_HOST_TO_HOST, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemsetAsync(dst, sizeof dst, 0x5a, 8, s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT(dst[7] == 0x5a && dst[8] == 8 && dst[63] == 63);
    TT_ASSERT_EQ(aclrtDestroyStream(o), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- errors */

static void test_errors(void)
{
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    for (int round = 0; round < 20; round++) {
        int after = 0;
        prime(s);
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)(1000 + round)), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)7), ACL_SUCCESS); /* not kept */
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &after), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtSynchronizeStream(s), 1000 + round);
        TT_ASSERT_EQ(after, 1);
        TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS); /* cleared */
    }
    /* aclrtSynchronizeDevice runs the caller's device's streams and reports errors, not
     * clears them */
    TT_ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
    aclrtStream d = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&d), ACL_SUCCESS);
    prime(d);
    TT_ASSERT_EQ(aclrtLaunchHostTask(d, fail_task, (void *)(intptr_t)99), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), 99);
    TT_ASSERT_EQ(aclrtSynchronizeStream(d), 99);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    /* ... and only those: another device's stream keeps its work */
    aclrtStream other = NULL;
    int other_done = 0;
    TT_ASSERT_EQ(aclrtSetDevice(5), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(other, sleep_task, (void *)(intptr_t)300), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(other, set_flag, &other_done), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(d, fail_task, (void *)(intptr_t)98), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), 98);
    TT_ASSERT_EQ(__atomic_load_n(&other_done, __ATOMIC_ACQUIRE), 0);
    TT_ASSERT_EQ(aclrtSynchronizeStream(d), 98);
    TT_ASSERT_EQ(aclrtSetDevice(5), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
    TT_ASSERT_EQ(other_done, 1);
    TT_ASSERT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(d), ACL_SUCCESS);
    /* a synchronize with a timeout leaves the work to the worker, at once */
    prime(s);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)50), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, (void *)(intptr_t)5), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    TT_ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 20000), 5);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

/* ---- a deferred task nobody synchronizes still runs, soon */

/* Seconds from the launch of a task nobody synchronizes to its start, worst of rounds,
 * on a deferring stream; when sync_ms > 0 a synchronize first runs a task of that many
 * milliseconds on this thread (the worker dozes meanwhile). */
static double unsynced_start(int rounds, int sync_ms)
{
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    double worst = 0.0;
    for (int round = 0; round < rounds; round++) {
        int flag = 0;
        prime(s);
        if (sync_ms) {
            TT_ASSERT_EQ(aclrtLaunchHostTask(s, sleep_task, (void *)(intptr_t)sync_ms), ACL_SUCCESS);
            TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
        }
        double t0 = now_s();
        TT_ASSERT_EQ(aclrtLaunchHostTask(s, set_flag, &flag), ACL_SUCCESS);
        while (!__atomic_load_n(&flag, __ATOMIC_ACQUIRE) && now_s() - t0 < 20.0) sleep_ms(0);
        double dt = now_s() - t0;
        TT_ASSERT_EQ(flag, 1);
        if (dt > worst) worst = dt;
    }
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    return worst;
}

static void test_doze(void)
{
    printf("a task nobody synchronized started after at most %.2f ms\n", unsynced_start(5, 0) * 1e3);
}

/* After a long synchronize (its thread ran a 200 ms task while the worker dozed longer
 * and longer), a task nobody synchronizes still starts within about one deferral
 * period: the synchronizer, leaving, ends the worker's long doze (without that it
 * started about 55 ms late). */
static void test_doze_after_long_sync(void)
{
    double worst = unsynced_start(2, 200);
    printf("after a 200 ms synchronize, a task nobody synchronized started after at most %.2f ms\n", worst * 1e3);
    TT_ASSERT_MSG(worst < 0.020, "a task nobody synchronized started %.1f ms late after a long synchronize",
                  worst * 1e3);
}

/* ---- HCCL on two streams of two communicators, two thread-ranks */

enum { COLL_ROUNDS = 60, COLL_COUNT = 256 };

typedef struct rank_arg {
    const HcclRootInfo *root[2];
    uint32_t rank;
    int mode; /* 0: opposite enqueue orders; 1: rank 0 waits for rank 1 without synchronizing */
    int *handshake;
    int fails;
    int wrong;
} rank_arg;

static int enqueue_allreduce(hccl_comm *c, float *in, float *out, aclrtStream s)
{
    hccl_op_args *a = hccl_calloc(1, sizeof *a);
    if (!a) return 0;
    a->type = HCCL_OP_ALLREDUCE;
    a->sendbuf = in;
    a->recvbuf = out;
    a->count = COLL_COUNT;
    a->dtype = HCCL_DATA_TYPE_FP32;
    a->redop = HCCL_REDUCE_SUM;
    return hccl_comm_enqueue(c, a, s) == HCCL_SUCCESS;
}

static void *rank_main(void *p)
{
    rank_arg *r = p;
    hccl_comm *c[2] = {NULL, NULL};
    aclrtStream s[2] = {NULL, NULL};
    float *in[2], *out[2];
    aclrtSetDevice((int32_t)r->rank);
    for (int k = 0; k < 2; k++) {
        r->fails += hccl_comm_init_root(2, r->root[k], r->rank, NULL, &c[k]) != HCCL_SUCCESS;
        r->fails += aclrtCreateStream(&s[k]) != ACL_SUCCESS;
        r->fails += aclrtMalloc((void **)&in[k], COLL_COUNT * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS;
        r->fails += aclrtMalloc((void **)&out[k], COLL_COUNT * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS;
    }
    if (r->fails) return NULL;
    prime(s[0]);
    prime(s[1]);
    int first = r->rank == 0 ? 0 : 1; /* stream/communicator this rank enqueues first */
    int rounds = r->mode == 0 ? COLL_ROUNDS : 5;
    for (int round = 0; round < rounds; round++) {
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < COLL_COUNT; i++) in[k][i] = (float)((r->rank + 1) * (round + 1) * (k + 1) + i);
        if (r->mode == 0) {
            /* rank 0: comm 0 then comm 1; rank 1: comm 1 then comm 0; each synchronizes its
             * first stream first. Inline execution at enqueue would deadlock here. */
            r->fails += !enqueue_allreduce(c[first], in[first], out[first], s[first]);
            r->fails += !enqueue_allreduce(c[!first], in[!first], out[!first], s[!first]);
            if (round % 3 == 2) {
                r->fails += aclrtSynchronizeDevice() != ACL_SUCCESS;
            } else {
                r->fails += aclrtSynchronizeStream(s[first]) != ACL_SUCCESS;
                r->fails += aclrtSynchronizeStream(s[!first]) != ACL_SUCCESS;
            }
        } else {
            /* rank 0 enqueues and then waits for rank 1's synchronize to return: its
             * operation must run without a synchronize (the worker's doze). */
            prime(s[0]); /* deferring again (the last round's late synchronize undid it) */
            r->fails += !enqueue_allreduce(c[0], in[0], out[0], s[0]);
            if (r->rank == 0) {
                while (__atomic_load_n(r->handshake, __ATOMIC_ACQUIRE) <= round) sleep_ms(0);
                r->fails += aclrtSynchronizeStream(s[0]) != ACL_SUCCESS;
            } else {
                r->fails += aclrtSynchronizeStream(s[0]) != ACL_SUCCESS;
                __atomic_store_n(r->handshake, round + 1, __ATOMIC_RELEASE);
            }
        }
        for (int k = 0; k < (r->mode == 0 ? 2 : 1); k++)
            for (int i = 0; i < COLL_COUNT; i++)
                r->wrong += out[k][i] != (float)(3 * (round + 1) * (k + 1) + 2 * i);
    }
    for (int k = 0; k < 2; k++) {
        aclrtDestroyStream(s[k]);
        hccl_comm_destroy((HcclComm)c[k]);
        aclrtFree(in[k]);
        aclrtFree(out[k]);
    }
    return NULL;
}

static void run_ranks(int mode, const char *what)
{
    HcclRootInfo root[2];
    TT_ASSERT_EQ(hccl_comm_get_root_info(&root[0]), HCCL_SUCCESS);
    TT_ASSERT_EQ(hccl_comm_get_root_info(&root[1]), HCCL_SUCCESS);
    int handshake = 0;
    rank_arg ra[2];
    pthread_t th[2];
    double t0 = now_s();
    for (uint32_t r = 0; r < 2; r++) {
        ra[r] = (rank_arg){{&root[0], &root[1]}, r, mode, &handshake, 0, 0};
        pthread_create(&th[r], NULL, rank_main, &ra[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    double dt = now_s() - t0;
    TT_ASSERT_EQ(ra[0].fails + ra[1].fails, 0);
    TT_ASSERT_EQ(ra[0].wrong + ra[1].wrong, 0);
    TT_ASSERT_MSG(dt < 120.0, "%s took %.1f s", what, dt);
    printf("%s: %.3f s\n", what, dt);
}

static void test_opposite_orders(void) { run_ranks(0, "two streams, two comms, opposite orders"); }

static void test_unsynchronized_peer(void) { run_ranks(1, "a peer that waits without synchronizing"); }

/* ---- the same tests with nothing deferred and no spinning */

static void run_child(const char *self)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("ACL_STREAM_DEFER_US", "0", 1);
        setenv("ACL_HOST_SPIN_US", "0", 1);
        setenv("TEST_ACL_CALLER_CHILD", "1", 1);
        execl(self, self, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    TT_ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid);
    TT_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child (no deferral, no spin) status %d", status);
}

int main(int argc, char **argv)
{
    (void)argc;
    child_mode = getenv("TEST_ACL_CALLER_CHILD") != NULL;
    test_caller_order();
    test_concurrent_enqueue();
    test_events();
    test_host_tasks();
    test_errors();
    test_doze();
    test_doze_after_long_sync();
    test_opposite_orders();
    test_unsynchronized_peer();
    if (!child_mode) run_child("/proc/self/exe");
    (void)argv;
    return tt_report(child_mode ? "test_acl_caller (ACL_STREAM_DEFER_US=0 ACL_HOST_SPIN_US=0)" : "test_acl_caller");
}
