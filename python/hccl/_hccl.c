/*
 * _hccl.c - the hccl._hccl extension module: libhccl for Python, in C against the
 * CPython API.
 *
 * Objects:
 *   Comm    one HCCL communicator (HcclComm) plus, created on first use, one aclrtStream
 *           for asynchronous operations. Methods take positional arguments only; the
 *           keyword-friendly torch-style functions live in hccl/_api.py.
 *   Handle  an asynchronous operation: wait(timeout=None), is_completed(), exception().
 *
 * How an operation runs:
 *   synchronous   the calling thread releases the GIL and calls Hccl*(..., stream=NULL),
 *                 which runs the operation at once (after any asynchronous operations
 *                 still queued on the communicator's stream, so order is kept).
 *   asynchronous  a host task is queued on the communicator's stream
 *                 (aclrtLaunchHostTask); the stream's worker runs the same NULL-stream
 *                 call and stores the HcclResult in the operation's state, so each
 *                 Handle reports its own result (a stream only has one sticky error).
 *                 The Handle keeps the buffers (and their buffer views) alive; if it is
 *                 dropped before completion its destructor waits (GIL released).
 *   after fork()  the child has no stream workers: an operation its parent queued never
 *                 completes there, so the child's copy of its Handle neither waits for
 *                 it when dropped (the child could not exit) nor in wait(), which
 *                 raises HcclError (HCCL_E_PARA) at once.
 *
 *   Python thread            stream worker
 *   all_reduce(async) ---->  [task: HcclAllReduce(.., NULL) -> state.res, done=1]
 *   h.wait()  (no GIL) <---- signal
 *
 * Errors raise hccl.HcclError (a RuntimeError) built by a factory that hccl/_api.py
 * registers (_set_error_factory), so the message wording lives in one place.
 */
#include "_hccl.h"

#include <acl/acl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    K_ALLREDUCE, K_BROADCAST, K_REDUCE, K_ALLGATHER, K_REDUCESCATTER, K_GATHER, K_SCATTER, K_ALLTOALL,
    K_ALLTOALLV, K_ALLGATHERV, K_REDUCESCATTERV, K_BARRIER, K_SEND, K_RECV, K_BATCH
};

static const char *const op_names[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter",
                                       "gather", "scatter", "all_to_all", "all_to_all_v", "all_gather_v",
                                       "reduce_scatter_v", "barrier", "send", "recv", "batch_isend_irecv"};

/* One operation's arguments, as handed to libhccl. arr: the V forms' arrays, n each:
 * [send counts][send displs][recv counts][recv displs] (elements). */
typedef struct opdesc {
    int kind;
    HcclComm comm;
    void *send, *recv;
    uint64_t count;
    HcclDataType dt;
    HcclReduceOp op;
    uint32_t root;
    uint64_t *arr;
    HcclSendRecvItem *items;
    uint32_t nitems;
    uint32_t avg_n; /* ReduceOp.AVG: divide the count elements at recv by this after the sum */
} opdesc;

static uint16_t f32_to_half(float f)
{
    union { float f; uint32_t u; } v = {f};
    uint32_t x = v.u, sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0)); /* inf, nan */
    int ex = (int)e - 127 + 15;
    if (ex >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow: inf */
    if (ex <= 0) { /* subnormal or zero: round to nearest even at the shifted point */
        if (ex < -10) return (uint16_t)sign;
        m |= 0x800000u;
        unsigned shift = (unsigned)(14 - ex);
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = ((uint32_t)ex << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++; /* may carry into the exponent: right */
    return (uint16_t)(sign | q);
}

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f) x = sign | 0x7f800000u | (m << 13);
    else if (e) x = sign | ((e + 112) << 23) | (m << 13);
    else if (!m) x = sign;
    else { /* subnormal */
        e = 113;
        while (!(m & 0x400u)) { m <<= 1; e--; }
        x = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    union { uint32_t u; float f; } v = {x};
    return v.f;
}

static uint16_t f32_to_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u; /* nan: torch's one bf16 nan */
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    union { uint32_t u; float f; } v = {(uint32_t)b << 16};
    return v.f;
}

/* The divisor n (the group size, up to 65536) is not converted to T, where it may not
 * fit (int8 from 128 ranks, uint8 from 256: a division by zero): signed integers
 * divide in int64_t, unsigned ones in W = uint64_t, floats in W = T. */
#define FLOOR_DIV(T)                                                   \
    do {                                                               \
        T *p = buf;                                                    \
        for (uint64_t i = 0; i < count; i++) {                         \
            int64_t x = p[i], q = x / (int64_t)n;                      \
            if (x % (int64_t)n != 0 && x < 0) q--;                     \
            p[i] = (T)q;                                               \
        }                                                              \
    } while (0)
#define PLAIN_DIV(T, W)                                                \
    do {                                                               \
        T *p = buf;                                                    \
        for (uint64_t i = 0; i < count; i++) p[i] = (T)(p[i] / (W)n);  \
    } while (0)

/* buf[i] /= n in its dtype, as torch's div_ (floats: in float, then rounded to
 * nearest even; integers: floor division). */
static HcclResult avg_divide(void *buf, uint64_t count, HcclDataType dt, uint32_t n)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: FLOOR_DIV(int8_t); break;
    case HCCL_DATA_TYPE_INT16: FLOOR_DIV(int16_t); break;
    case HCCL_DATA_TYPE_INT32: FLOOR_DIV(int32_t); break;
    case HCCL_DATA_TYPE_INT64: FLOOR_DIV(int64_t); break;
    case HCCL_DATA_TYPE_UINT8: PLAIN_DIV(uint8_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT16: PLAIN_DIV(uint16_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT32: PLAIN_DIV(uint32_t, uint64_t); break;
    case HCCL_DATA_TYPE_UINT64: PLAIN_DIV(uint64_t, uint64_t); break;
    case HCCL_DATA_TYPE_FP32: PLAIN_DIV(float, float); break;
    case HCCL_DATA_TYPE_FP64: PLAIN_DIV(double, double); break;
    case HCCL_DATA_TYPE_FP16: {
        uint16_t *p = buf;
        for (uint64_t i = 0; i < count; i++) p[i] = f32_to_half(half_to_f32(p[i]) / (float)n);
        break;
    }
    case HCCL_DATA_TYPE_BFP16: {
        uint16_t *p = buf;
        for (uint64_t i = 0; i < count; i++) p[i] = f32_to_bf16(bf16_to_f32(p[i]) / (float)n);
        break;
    }
    default: return HCCL_E_NOT_SUPPORT;
    }
    return HCCL_SUCCESS;
}

static HcclResult exec_op_(const opdesc *d, aclrtStream s);

static HcclResult exec_op(const opdesc *d, aclrtStream s)
{
    HcclResult r = exec_op_(d, s);
    if (r == HCCL_SUCCESS && d->avg_n) r = avg_divide(d->recv, d->count, d->dt, d->avg_n);
    return r;
}

static HcclResult exec_op_(const opdesc *d, aclrtStream s)
{
    const uint64_t *a = d->arr;
    uint32_t n = 0;
    if (a) HcclGetRankSize(d->comm, &n);
    switch (d->kind) {
    case K_ALLREDUCE: return HcclAllReduce(d->send, d->recv, d->count, d->dt, d->op, d->comm, s);
    case K_BROADCAST: return HcclBroadcast(d->recv, d->count, d->dt, d->root, d->comm, s);
    case K_REDUCE: return HcclReduce(d->send, d->recv, d->count, d->dt, d->op, d->root, d->comm, s);
    case K_ALLGATHER: return HcclAllGather(d->send, d->recv, d->count, d->dt, d->comm, s);
    case K_REDUCESCATTER: return HcclReduceScatter(d->send, d->recv, d->count, d->dt, d->op, d->comm, s);
    case K_GATHER: return HcclGather(d->send, d->recv, d->count, d->dt, d->root, d->comm, s);
    case K_SCATTER: return HcclScatter(d->send, d->recv, d->count, d->dt, d->root, d->comm, s);
    case K_ALLTOALL: return HcclAlltoAll(d->send, d->count, d->dt, d->recv, d->count, d->dt, d->comm, s);
    case K_ALLTOALLV:
        return HcclAlltoAllV(d->send, a, a + n, d->dt, d->recv, a + 2 * n, a + 3 * n, d->dt, d->comm, s);
    case K_ALLGATHERV: return HcclAllGatherV(d->send, d->count, d->recv, a + 2 * n, a + 3 * n, d->dt, d->comm, s);
    case K_REDUCESCATTERV: return HcclReduceScatterV(d->send, a, a + n, d->recv, d->count, d->dt, d->op, d->comm, s);
    case K_BARRIER: return HcclBarrier(d->comm, s);
    case K_SEND: return HcclSend(d->send, d->count, d->dt, d->root, d->comm, s);
    case K_RECV: return HcclRecv(d->recv, d->count, d->dt, d->root, d->comm, s);
    case K_BATCH: return HcclBatchSendRecv(d->items, d->nitems, d->comm, s);
    }
    return HCCL_E_PARA;
}

/* ------------------------------------------------------------------ objects */

typedef struct {
    PyObject_HEAD
    HcclComm comm;
    aclrtStream stream; /* NULL until the first asynchronous operation */
    uint32_t rank, size;
    int inflight;       /* queued asynchronous operations not yet run (atomic) */
    PyObject *dict;     /* attributes set from Python (e.g. global_ranks) */
    PyObject *weaklist;
} CommObject;

typedef struct op_state {
    opdesc d;
    int refs; /* Handle + task (atomic) */
    int done; /* atomic */
    HcclResult res;
    int *inflight;
    unsigned gen;   /* fork_gen when queued: another value means a fork child's copy */
    char *warn; /* on failure: the warning the operation logged where it ran, or NULL */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} op_state;

typedef struct {
    PyObject_HEAD
    op_state *st;
    CommObject *comm;
    hbuf *bufs;
    int nbufs;
    int kind;
    long peer;
    int interrupted; /* a wait() on it ended with a signal's exception (Ctrl-C) */
} HandleObject;

static PyTypeObject CommType, HandleType;

/* Counts the fork()s this process descends from (incremented in the child). */
static unsigned fork_gen;
static void fork_child(void) { __atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED); }

/* An operation queued by the parent before fork(): in this process nothing runs it. */
static int state_inherited(op_state *st)
{
    return st->gen != __atomic_load_n(&fork_gen, __ATOMIC_RELAXED) && !__atomic_load_n(&st->done, __ATOMIC_ACQUIRE);
}
static PyObject *error_factory; /* callable(code, opname, comm, peer, detail, warn) -> exception */

/* detail: the whole reason (creation, a wait that gave up); warn: the library's last
 * warning of the thread that ran the operation (HcclGetLastErrorMessage), or NULL. */
static PyObject *raise_hccl(HcclResult code, const char *opname, PyObject *comm, long peer, const char *detail,
                           const char *warn)
{
    if (error_factory) {
        PyObject *exc = PyObject_CallFunction(error_factory, "isOlss", (int)code, opname, comm ? comm : Py_None,
                                              peer, detail ? detail : "", warn ? warn : "");
        if (exc) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    PyErr_Format(PyExc_RuntimeError, "hccl %s failed: %s (HcclResult %d)%s%s", opname, HcclGetErrorString(code),
                 (int)code, detail ? ": " : "", detail ? detail : "");
    return NULL;
}

/* The library's reason for the calling thread's last failure, or NULL. */
static const char *last_warning(void)
{
    const char *m = HcclGetLastErrorMessage();
    return m && m[0] ? m : NULL;
}

static void state_put(op_state *st)
{
    if (__atomic_sub_fetch(&st->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->cv);
        free(st->d.arr);
        free(st->d.items);
        free(st->warn);
        free(st);
    }
}

static aclError task_fn(void *arg)
{
    op_state *st = arg;
    HcclResult r = exec_op(&st->d, NULL);
    if (r != HCCL_SUCCESS) { /* its warning is this (the stream's) thread's */
        const char *m = HcclGetLastErrorMessage();
        st->warn = m && m[0] ? strdup(m) : NULL;
    }
    __atomic_sub_fetch(st->inflight, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&st->mu);
    st->res = r;
    __atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    state_put(st);
    return ACL_SUCCESS; /* the result travels in the state, not as the stream's error */
}

/* Waits (call without the GIL) up to timeout_s seconds (< 0: forever; at most
 * HCCL_WAIT_MAX_S, a number of seconds a deadline can hold); 1 when done. */
#define HCCL_WAIT_MAX_S 1e9
#define WAIT_SLICE_S 0.1 /* Handle.wait() looks at pending signals this often */
static int state_wait(op_state *st, double timeout_s)
{
    for (int i = 0; i < 2000; i++) { /* ~tens of us of polling before sleeping */
        if (__atomic_load_n(&st->done, __ATOMIC_ACQUIRE)) return 1;
        if ((i & 63) == 63) sched_yield();
    }
    struct timespec dl;
    if (timeout_s >= 0) {
        clock_gettime(CLOCK_REALTIME, &dl);
        double whole = (double)(long long)timeout_s;
        dl.tv_sec += (time_t)whole;
        dl.tv_nsec += (long)((timeout_s - whole) * 1e9);
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&st->mu);
    while (!st->done) {
        int rc = timeout_s < 0 ? pthread_cond_wait(&st->cv, &st->mu) : pthread_cond_timedwait(&st->cv, &st->mu, &dl);
        if (rc == ETIMEDOUT) break;
        if (rc != 0) timeout_s = -1.0; /* a deadline the clock refuses: wait without one */
    }
    int done = st->done;
    pthread_mutex_unlock(&st->mu);
    return done;
}

/* ------------------------------------------------------------------ Comm */

/* Takes ownership of h: destroys it when the object cannot be made. */
static CommObject *comm_new(HcclComm h)
{
    CommObject *c = PyObject_GC_New(CommObject, &CommType);
    if (!c) {
        Py_BEGIN_ALLOW_THREADS
        HcclCommDestroy(h);
        Py_END_ALLOW_THREADS
        return NULL;
    }
    c->comm = h;
    c->stream = NULL;
    c->inflight = 0;
    c->dict = NULL;
    c->weaklist = NULL;
    HcclGetRankId(h, &c->rank);
    HcclGetRankSize(h, &c->size);
    PyObject_GC_Track(c);
    return c;
}

static int stream_wait_interruptible(aclrtStream s);

/* interruptible (destroy()): Ctrl-C while the queued operations run makes the
 * library abort them (HcclCommDestroy first: their peers see the abort) instead of
 * waiting for them, and returns -1 with the signal handler's exception set; the
 * communicator is destroyed either way. */
static int comm_close(CommObject *c, int interruptible)
{
    if (!c->comm) return 0;
    HcclComm h = c->comm;
    aclrtStream s = c->stream;
    c->comm = NULL;
    c->stream = NULL;
    int rc = s && interruptible ? stream_wait_interruptible(s) : 0;
    Py_BEGIN_ALLOW_THREADS
    if (rc < 0) {
        HcclCommDestroy(h);
        h = NULL;
    }
    if (s) {
        aclrtSynchronizeStream(s);
        aclrtDestroyStream(s);
    }
    if (h) HcclCommDestroy(h);
    Py_END_ALLOW_THREADS
    return rc;
}

static int comm_traverse(CommObject *c, visitproc visit, void *arg)
{
    Py_VISIT(c->dict);
    return 0;
}

static int comm_clear(CommObject *c)
{
    Py_CLEAR(c->dict);
    return 0;
}

static void comm_dealloc(CommObject *c)
{
    PyObject_GC_UnTrack(c);
    if (c->weaklist) PyObject_ClearWeakRefs((PyObject *)c);
    /* An exception being raised must survive; one a signal handler raises while the
     * library waits here (interrupt_check) has nobody to go to. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    comm_close(c, 0);
    if (PyErr_Occurred()) PyErr_WriteUnraisable(NULL);
    PyErr_Restore(et, ev, tb);
    Py_CLEAR(c->dict);
    PyObject_GC_Del(c);
}

static int comm_live(CommObject *c)
{
    if (c->comm) return 1;
    PyErr_SetString(PyExc_ValueError, "hccl: the communicator was destroyed");
    return 0;
}

static PyObject *comm_destroy(CommObject *c, PyObject *unused)
{
    (void)unused;
    /* A signal handler's exception (Ctrl-C while queued operations ran, or while the
     * library ran one here: interrupt_check) is what destroy() raises. */
    if (comm_close(c, 1) < 0 || PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* with comm: ... destroys it on leaving (an exception inside still propagates). */
static PyObject *comm_enter(CommObject *c, PyObject *unused)
{
    (void)unused;
    if (!comm_live(c)) return NULL;
    Py_INCREF(c);
    return (PyObject *)c;
}

static PyObject *comm_exit(CommObject *c, PyObject *args)
{
    (void)args;
    PyObject *r = comm_destroy(c, NULL);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static PyObject *comm_get_rank(CommObject *c, void *u) { (void)u; return PyLong_FromUnsignedLong(c->rank); }
static PyObject *comm_get_size(CommObject *c, void *u) { (void)u; return PyLong_FromUnsignedLong(c->size); }
static PyObject *comm_get_destroyed(CommObject *c, void *u) { (void)u; return PyBool_FromLong(c->comm == NULL); }

static PyObject *comm_get_name(CommObject *c, void *u)
{
    (void)u;
    if (!comm_live(c)) return NULL;
    char name[COMM_NAME_MAX_LENGTH + 1] = {0};
    HcclResult r = HcclGetCommName(c->comm, name);
    if (r != HCCL_SUCCESS) return raise_hccl(r, "get_comm_name", (PyObject *)c, -1, NULL, last_warning());
    return PyUnicode_FromString(name);
}

static PyObject *comm_async_error(CommObject *c, PyObject *unused)
{
    (void)unused;
    if (!comm_live(c)) return NULL;
    HcclResult e = HCCL_SUCCESS;
    HcclResult r = HcclGetCommAsyncError(c->comm, &e);
    if (r != HCCL_SUCCESS) return raise_hccl(r, "get_comm_async_error", (PyObject *)c, -1, NULL, last_warning());
    return PyLong_FromLong((long)e);
}

/* Ctrl-C during a blocking operation: the library calls this from a thread whose
 * operation has waited 100 ms without progress, then every 100 ms
 * (HcclSetInterruptCheck). In the main thread (the only one where Python runs signal
 * handlers) it runs them; when one raises (KeyboardInterrupt), the operation and the
 * communicator fail, the peers learn it, and the exception, left set, is what the
 * call raises (submit). Operations that do not wait never get here. */
static unsigned long main_ident;

static int interrupt_check(void)
{
    if (PyThread_get_thread_ident() != main_ident) return 0;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() < 0;
    PyGILState_Release(g);
    return stop;
}

/* Waits (GIL held) until stream s has run what was queued on it. In the main thread
 * the wait goes in slices of WAIT_SLICE_S with the signal handlers run between them:
 * -1 with the handler's exception set (Ctrl-C) when one raised, the queued work still
 * running; else 0. Other threads (no signal handlers run there) wait in one call. */
static int stream_wait_interruptible(aclrtStream s)
{
    if (PyThread_get_thread_ident() != main_ident) {
        Py_BEGIN_ALLOW_THREADS
        aclrtSynchronizeStream(s);
        Py_END_ALLOW_THREADS
        return 0;
    }
    for (;;) {
        aclError e;
        Py_BEGIN_ALLOW_THREADS
        e = aclrtSynchronizeStreamWithTimeout(s, (int32_t)(WAIT_SLICE_S * 1000));
        Py_END_ALLOW_THREADS
        if (e != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) return 0;
        if (PyErr_CheckSignals() < 0) return -1;
    }
}

/* After a communicator creation (result r, communicator h): whether a signal handler
 * raised while it waited (interrupt_check: Ctrl-C), which stopped it. The exception,
 * left set, is what the call raises; a communicator made all the same is destroyed. */
static int init_interrupted(HcclResult r, HcclComm h)
{
    if (!PyErr_Occurred()) return 0;
    if (r == HCCL_SUCCESS && h) {
        Py_BEGIN_ALLOW_THREADS
        HcclCommDestroy(h);
        Py_END_ALLOW_THREADS
    }
    return 1;
}

/* Runs d now (async == 0) or queues it; takes ownership of bufs' views and d's arrays.
 * async < 0: the async_op argument's truth test raised (PyObject_IsTrue); nothing runs. */
static PyObject *submit(CommObject *c, opdesc *d, hbuf *bufs, int nbufs, int async, long peer)
{
    PyObject *fail = NULL;
    if (async < 0) goto fail;
    /* Parsing the arguments ran Python code (__array_interface__, __bool__ of
     * async_op, a torch method), which may have destroyed the communicator. */
    if (!comm_live(c)) goto fail;
    d->comm = c->comm;
    if (!async) {
        HcclResult r = HCCL_SUCCESS;
        aclrtStream s = c->stream;
        /* The asynchronous operations queued before it go first. Ctrl-C while they run
         * raises at once (within WAIT_SLICE_S), this one not started: they go on, and
         * the communicator stays usable. */
        int stopped = s && __atomic_load_n(&c->inflight, __ATOMIC_ACQUIRE) > 0 && stream_wait_interruptible(s) < 0;
        if (!stopped) {
            Py_BEGIN_ALLOW_THREADS
            r = exec_op(d, NULL);
            Py_END_ALLOW_THREADS
        }
        free(d->arr);
        free(d->items);
        for (int i = 0; i < nbufs; i++) pyhccl_buf_release(&bufs[i]);
        if (PyErr_Occurred()) return NULL; /* a signal handler raised while it waited (interrupt_check) */
        if (r != HCCL_SUCCESS) return raise_hccl(r, op_names[d->kind], (PyObject *)c, peer, NULL, last_warning());
        Py_RETURN_NONE;
    }
    if (!c->stream) {
        /* Created with the GIL held, so two threads cannot both create one. */
        aclrtStream s = NULL;
        aclError e = aclrtCreateStream(&s);
        if (e != ACL_SUCCESS) {
            PyErr_Format(PyExc_RuntimeError, "hccl: aclrtCreateStream failed (%d): %s", e, aclGetRecentErrMsg());
            goto fail;
        }
        c->stream = s;
    }
    HandleObject *h = PyObject_GC_New(HandleObject, &HandleType);
    if (h) { /* what handle_dealloc reads, set before any failure can free h */
        h->st = NULL;
        h->bufs = NULL;
        h->nbufs = 0;
        h->comm = NULL;
    }
    op_state *st = calloc(1, sizeof *st);
    hbuf *hb = calloc(nbufs ? (size_t)nbufs : 1, sizeof *hb);
    if (!h || !st || !hb) {
        Py_XDECREF(h);
        free(st);
        free(hb);
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(hb, bufs, sizeof *hb * (size_t)nbufs);
    for (int i = 0; i < nbufs; i++) Py_INCREF(hb[i].obj);
    h->bufs = hb;
    h->nbufs = nbufs;
    h->comm = (CommObject *)Py_NewRef(c);
    h->kind = d->kind;
    h->peer = peer;
    h->interrupted = 0;
    st->d = *d;
    st->refs = 2;
    st->inflight = &c->inflight;
    st->gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    h->st = st;
    __atomic_add_fetch(&c->inflight, 1, __ATOMIC_ACQ_REL);
    aclError e = aclrtLaunchHostTask(c->stream, task_fn, st);
    if (e != ACL_SUCCESS) {
        __atomic_sub_fetch(&c->inflight, 1, __ATOMIC_ACQ_REL);
        st->res = HCCL_E_RUNTIME;
        st->done = 1;
        st->refs = 1;
        Py_DECREF(h);
        PyErr_Format(PyExc_RuntimeError, "hccl: cannot queue %s (aclError %d): %s", op_names[d->kind], e,
                     aclGetRecentErrMsg());
        return NULL;
    }
    PyObject_GC_Track(h);
    return (PyObject *)h;
fail:
    free(d->arr);
    free(d->items);
    for (int i = 0; i < nbufs; i++) pyhccl_buf_release(&bufs[i]);
    return fail;
}

/* ------------------------------------------------------------------ argument helpers */

/* An int too large for C (OverflowError from PyLong_As*) -> ValueError naming it. */
static int int_out_of_range(PyObject *o, const char *fn, const char *what)
{
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "hccl%s%s: %s %R is out of range", fn ? " " : "", fn ? fn : "", what, o);
    return -1;
}

static int get_u32(PyObject *o, uint32_t *out, const char *what)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return int_out_of_range(o, NULL, what);
    if (v < 0 || v > 0x7fffffffL) {
        PyErr_Format(PyExc_ValueError, "hccl: %s %ld is out of range", what, v);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int get_rank_arg(CommObject *c, PyObject *o, uint32_t *out, const char *what)
{
    if (get_u32(o, out, what) < 0) return -1;
    if (*out >= c->size) {
        PyErr_Format(PyExc_ValueError, "hccl: %s %u is not a rank of this communicator (size %u)", what, *out,
                     c->size);
        return -1;
    }
    return 0;
}

/* op code 0..4 (4: AVG, a SUM whose result is divided by the group's size in the
 * operation's task, so that it is done when the operation is: d->avg_n); bool
 * buffers reduce logically. */
static int get_op(PyObject *o, int dtype, CommObject *c, opdesc *d)
{
    HcclReduceOp *out = &d->op;
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v > 4) {
        PyErr_Format(PyExc_ValueError, "hccl: reduce op %ld is not SUM, PROD, MAX, MIN or AVG", v);
        return -1;
    }
    if (v == 4) {
        HcclDataType w = pyhccl_wire_dtype(dtype);
        if (dtype == PYHCCL_DT_BOOL || avg_divide(NULL, 0, w, 1) != HCCL_SUCCESS) {
            PyErr_Format(PyExc_TypeError, "hccl: ReduceOp.AVG is not defined for %s", pyhccl_dtype_name(dtype));
            return -1;
        }
        d->avg_n = c->size;
        v = HCCL_REDUCE_SUM;
    }
    if (dtype == PYHCCL_DT_BOOL) v = (v == HCCL_REDUCE_SUM || v == HCCL_REDUCE_MAX) ? HCCL_REDUCE_MAX : HCCL_REDUCE_MIN;
    *out = (HcclReduceOp)v;
    return 0;
}

static int same_dtype(const hbuf *a, const hbuf *b, const char *fn)
{
    if (a->dtype == b->dtype) return 0;
    PyErr_Format(PyExc_TypeError, "hccl %s: input dtype %s and output dtype %s differ", fn, pyhccl_dtype_name(a->dtype),
                 pyhccl_dtype_name(b->dtype));
    return -1;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *fn)
{
    if (nargs == want) return 0;
    PyErr_Format(PyExc_TypeError, "Comm.%s takes %zd positional arguments (%zd given)", fn, want, nargs);
    return -1;
}

/* Parses send (read) and recv (write) buffers; recv may be the same object. */
static int get_pair(PyObject *so, PyObject *ro, hbuf *b, int *nb, const char *fn)
{
    *nb = 0;
    if (pyhccl_buf_get(ro, &b[0], 1, "output") < 0) return -1;
    *nb = 1;
    if (so == ro) {
        b[1] = b[0];
        b[1].has_view = 0;
        return 0;
    }
    if (pyhccl_buf_get(so, &b[1], 0, "input") < 0) return -1;
    *nb = 2;
    return same_dtype(&b[1], &b[0], fn);
}

static void release_all(hbuf *b, int nb)
{
    for (int i = 0; i < nb; i++) pyhccl_buf_release(&b[i]);
}

#define SEND(b) ((b)[1].ptr)
#define RECV(b) ((b)[0].ptr)

/* ------------------------------------------------------------------ operations */

/* all_reduce(send, recv, op, async) */
static PyObject *comm_all_reduce(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_ALLREDUCE};
    if (check_nargs(nargs, 4, "all_reduce") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[1], b, &nb, "all_reduce") < 0) goto bad;
    if (b[1].count != b[0].count) {
        PyErr_Format(PyExc_ValueError, "hccl all_reduce: input has %llu elements, output %llu",
                     (unsigned long long)b[1].count, (unsigned long long)b[0].count);
        goto bad;
    }
    if (get_op(args[2], b[0].dtype, c, &d) < 0) goto bad;
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[0].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[3]), -1);
bad:
    release_all(b, nb);
    return NULL;
}

/* broadcast(buf, root, async) */
static PyObject *comm_broadcast(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[1];
    opdesc d = {K_BROADCAST};
    if (check_nargs(nargs, 3, "broadcast") < 0 || !comm_live(c)) return NULL;
    if (get_rank_arg(c, args[1], &d.root, "root") < 0) return NULL;
    /* The root only reads its buffer: a read-only one is fine there. */
    if (pyhccl_buf_get(args[0], &b[0], d.root != c->rank, "tensor") < 0) return NULL;
    d.recv = b[0].ptr;
    d.count = b[0].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, 1, PyObject_IsTrue(args[2]), d.root);
}

/* reduce(send, recv or None, op, root, async): recv is needed on the root only. */
static PyObject *comm_reduce(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_REDUCE};
    if (check_nargs(nargs, 5, "reduce") < 0 || !comm_live(c)) return NULL;
    if (get_rank_arg(c, args[3], &d.root, "root") < 0) return NULL;
    if (args[1] == Py_None) {
        if (d.root == c->rank) {
            PyErr_SetString(PyExc_ValueError, "hccl reduce: the root needs an output buffer");
            return NULL;
        }
        if (pyhccl_buf_get(args[0], &b[1], 0, "input") < 0) return NULL;
        b[0] = b[1];
        b[0].has_view = 0;
        nb = 2; /* b[1] holds the view */
    } else if (get_pair(args[0], args[1], b, &nb, "reduce") < 0) {
        goto bad;
    }
    if (b[1].count != b[0].count) {
        PyErr_Format(PyExc_ValueError, "hccl reduce: input has %llu elements, output %llu",
                     (unsigned long long)b[1].count, (unsigned long long)b[0].count);
        goto bad;
    }
    if (get_op(args[2], b[0].dtype, c, &d) < 0) goto bad;
    if (d.root != c->rank) d.avg_n = 0; /* only the root has a result (recv is the input here) */
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[1].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[4]), d.root);
bad:
    release_all(b, nb);
    return NULL;
}

/* all_gather(send, recv, async): recv holds size * len(send) elements. */
static PyObject *comm_all_gather(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_ALLGATHER};
    if (check_nargs(nargs, 3, "all_gather") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[1], b, &nb, "all_gather") < 0) goto bad;
    if (b[0].count != b[1].count * c->size) {
        PyErr_Format(PyExc_ValueError, "hccl all_gather: output has %llu elements, expected %u ranks x %llu",
                     (unsigned long long)b[0].count, c->size, (unsigned long long)b[1].count);
        goto bad;
    }
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[1].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[2]), -1);
bad:
    release_all(b, nb);
    return NULL;
}

/* reduce_scatter(send, recv, op, async): send holds size * len(recv) elements. */
static PyObject *comm_reduce_scatter(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_REDUCESCATTER};
    if (check_nargs(nargs, 4, "reduce_scatter") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[1], b, &nb, "reduce_scatter") < 0) goto bad;
    if (b[1].count != b[0].count * c->size) {
        PyErr_Format(PyExc_ValueError, "hccl reduce_scatter: input has %llu elements, expected %u ranks x %llu",
                     (unsigned long long)b[1].count, c->size, (unsigned long long)b[0].count);
        goto bad;
    }
    if (get_op(args[2], b[0].dtype, c, &d) < 0) goto bad;
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[0].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[3]), -1);
bad:
    release_all(b, nb);
    return NULL;
}

/* gather(send, recv or None, root, async) and scatter(send or None, recv, root, async):
 * the root's whole buffer holds size blocks. */
static PyObject *rooted_blocks(CommObject *c, PyObject *const *args, Py_ssize_t nargs, int kind)
{
    const char *fn = op_names[kind];
    hbuf b[2];
    int nb = 0;
    opdesc d = {kind};
    if (check_nargs(nargs, 4, fn) < 0 || !comm_live(c)) return NULL;
    if (get_rank_arg(c, args[2], &d.root, "root") < 0) return NULL;
    int is_root = d.root == c->rank;
    PyObject *whole = kind == K_GATHER ? args[1] : args[0];
    PyObject *part = kind == K_GATHER ? args[0] : args[1];
    if (pyhccl_buf_get(part, &b[0], kind == K_SCATTER, kind == K_GATHER ? "input" : "output") < 0) return NULL;
    nb = 1;
    if (is_root) {
        if (whole == Py_None) {
            PyErr_Format(PyExc_ValueError, "hccl %s: the root needs the %s buffer", fn,
                         kind == K_GATHER ? "output" : "input");
            goto bad;
        }
        if (whole == part) {
            b[1] = b[0];
            b[1].has_view = 0;
        } else if (pyhccl_buf_get(whole, &b[1], kind == K_GATHER, kind == K_GATHER ? "output" : "input") < 0) {
            goto bad;
        }
        nb = 2;
        if (same_dtype(&b[0], &b[1], fn) < 0) goto bad;
        if (b[1].count != b[0].count * c->size) {
            PyErr_Format(PyExc_ValueError, "hccl %s: the root's buffer has %llu elements, expected %u ranks x %llu",
                         fn, (unsigned long long)b[1].count, c->size, (unsigned long long)b[0].count);
            goto bad;
        }
    }
    d.count = b[0].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    if (kind == K_GATHER) {
        d.send = b[0].ptr;
        d.recv = is_root ? b[1].ptr : NULL;
    } else {
        d.recv = b[0].ptr;
        d.send = is_root ? b[1].ptr : NULL;
    }
    return submit(c, &d, b, nb, PyObject_IsTrue(args[3]), d.root);
bad:
    release_all(b, nb);
    return NULL;
}

static PyObject *comm_gather(CommObject *c, PyObject *const *a, Py_ssize_t n) { return rooted_blocks(c, a, n, K_GATHER); }
static PyObject *comm_scatter(CommObject *c, PyObject *const *a, Py_ssize_t n) { return rooted_blocks(c, a, n, K_SCATTER); }

/* all_to_all(send, recv, async): equal sizes, size blocks each. */
static PyObject *comm_all_to_all(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_ALLTOALL};
    if (check_nargs(nargs, 3, "all_to_all") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[1], b, &nb, "all_to_all") < 0) goto bad;
    if (b[0].count != b[1].count || b[0].count % c->size) {
        PyErr_Format(PyExc_ValueError, "hccl all_to_all: input (%llu) and output (%llu) elements must be equal "
                     "and divisible by the %u ranks", (unsigned long long)b[1].count, (unsigned long long)b[0].count,
                     c->size);
        goto bad;
    }
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[0].count / c->size;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[2]), -1);
bad:
    release_all(b, nb);
    return NULL;
}

/* Reads n counts and n displacements (elements) into out[0..n) and out[n..2n), and
 * checks every block lies within a buffer of `limit` elements. */
static int get_layout(PyObject *counts, PyObject *displs, uint32_t n, uint64_t *out, uint64_t limit,
                      const char *fn, const char *what)
{
    PyObject *seqs[2] = {counts, displs};
    for (int k = 0; k < 2; k++) {
        PyObject *f = PySequence_Fast(seqs[k], "hccl: counts and displacements must be sequences of int");
        if (!f) return -1;
        if (PySequence_Fast_GET_SIZE(f) != (Py_ssize_t)n) {
            PyErr_Format(PyExc_ValueError, "hccl %s: %s %s has %zd entries, expected one per rank (%u)", fn, what,
                         k ? "displacements" : "counts", PySequence_Fast_GET_SIZE(f), n);
            Py_DECREF(f);
            return -1;
        }
        for (uint32_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(f, i);
            long long v = PyLong_AsLongLong(item);
            if (v == -1 && PyErr_Occurred()) {
                int_out_of_range(item, fn, k ? "displacement" : "count");
                Py_DECREF(f);
                return -1;
            }
            if (v < 0) {
                PyErr_Format(PyExc_ValueError, "hccl %s: %s %s[%u] (rank %u's block) is negative: %lld", fn, what,
                             k ? "displacements" : "counts", i, i, v);
                Py_DECREF(f);
                return -1;
            }
            out[k * n + i] = (uint64_t)v;
        }
        Py_DECREF(f);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (out[i] > limit || out[n + i] > limit - out[i]) {
            PyErr_Format(PyExc_ValueError, "hccl %s: %s block %u (count %llu at displacement %llu) exceeds the "
                         "buffer of %llu elements", fn, what, i, (unsigned long long)out[i],
                         (unsigned long long)out[n + i], (unsigned long long)limit);
            return -1;
        }
    }
    return 0;
}

/* all_to_all_v(send, scounts, sdispls, recv, rcounts, rdispls, async) */
static PyObject *comm_all_to_all_v(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_ALLTOALLV};
    if (check_nargs(nargs, 7, "all_to_all_v") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[3], b, &nb, "all_to_all_v") < 0) goto bad;
    d.arr = malloc(sizeof(uint64_t) * 4 * c->size);
    if (!d.arr) {
        PyErr_NoMemory();
        goto bad;
    }
    if (get_layout(args[1], args[2], c->size, d.arr, b[1].count, "all_to_all_v", "input") < 0 ||
        get_layout(args[4], args[5], c->size, d.arr + 2 * c->size, b[0].count, "all_to_all_v", "output") < 0)
        goto bad;
    d.send = SEND(b);
    d.recv = RECV(b);
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[6]), -1);
bad:
    free(d.arr);
    release_all(b, nb);
    return NULL;
}

/* all_gather_v(send, recv, rcounts, rdispls, async) */
static PyObject *comm_all_gather_v(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_ALLGATHERV};
    if (check_nargs(nargs, 5, "all_gather_v") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[1], b, &nb, "all_gather_v") < 0) goto bad;
    d.arr = malloc(sizeof(uint64_t) * 4 * c->size);
    if (!d.arr) {
        PyErr_NoMemory();
        goto bad;
    }
    if (get_layout(args[2], args[3], c->size, d.arr + 2 * c->size, b[0].count, "all_gather_v", "output") < 0)
        goto bad;
    if (d.arr[2 * c->size + c->rank] != b[1].count) {
        PyErr_Format(PyExc_ValueError, "hccl all_gather_v: this rank's count %llu differs from its input's %llu "
                     "elements", (unsigned long long)d.arr[2 * c->size + c->rank], (unsigned long long)b[1].count);
        goto bad;
    }
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[1].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[4]), -1);
bad:
    free(d.arr);
    release_all(b, nb);
    return NULL;
}

/* reduce_scatter_v(send, scounts, sdispls, recv, op, async) */
static PyObject *comm_reduce_scatter_v(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b[2];
    int nb = 0;
    opdesc d = {K_REDUCESCATTERV};
    if (check_nargs(nargs, 6, "reduce_scatter_v") < 0 || !comm_live(c)) return NULL;
    if (get_pair(args[0], args[3], b, &nb, "reduce_scatter_v") < 0) goto bad;
    d.arr = malloc(sizeof(uint64_t) * 4 * c->size);
    if (!d.arr) {
        PyErr_NoMemory();
        goto bad;
    }
    if (get_layout(args[1], args[2], c->size, d.arr, b[1].count, "reduce_scatter_v", "input") < 0) goto bad;
    if (d.arr[c->rank] != b[0].count) {
        PyErr_Format(PyExc_ValueError, "hccl reduce_scatter_v: this rank's count %llu differs from its output's "
                     "%llu elements", (unsigned long long)d.arr[c->rank], (unsigned long long)b[0].count);
        goto bad;
    }
    if (get_op(args[4], b[0].dtype, c, &d) < 0) goto bad;
    d.send = SEND(b);
    d.recv = RECV(b);
    d.count = b[0].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, nb, PyObject_IsTrue(args[5]), -1);
bad:
    free(d.arr);
    release_all(b, nb);
    return NULL;
}

/* barrier(async) */
static PyObject *comm_barrier(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    opdesc d = {K_BARRIER};
    if (check_nargs(nargs, 1, "barrier") < 0 || !comm_live(c)) return NULL;
    return submit(c, &d, NULL, 0, PyObject_IsTrue(args[0]), -1);
}

/* send(buf, dst, async) and recv(buf, src, async) */
static PyObject *p2p(CommObject *c, PyObject *const *args, Py_ssize_t nargs, int kind)
{
    hbuf b[1];
    opdesc d = {kind};
    if (check_nargs(nargs, 3, op_names[kind]) < 0 || !comm_live(c)) return NULL;
    if (get_rank_arg(c, args[1], &d.root, kind == K_SEND ? "dst" : "src") < 0) return NULL;
    if (d.root == c->rank) {
        PyErr_Format(PyExc_ValueError, "hccl %s: rank %u cannot %s itself", op_names[kind], c->rank,
                     kind == K_SEND ? "send to" : "receive from");
        return NULL;
    }
    if (pyhccl_buf_get(args[0], &b[0], kind == K_RECV, "tensor") < 0) return NULL;
    d.send = d.recv = b[0].ptr;
    d.count = b[0].count;
    d.dt = pyhccl_wire_dtype(b[0].dtype);
    return submit(c, &d, b, 1, PyObject_IsTrue(args[2]), d.root);
}

static PyObject *comm_send(CommObject *c, PyObject *const *a, Py_ssize_t n) { return p2p(c, a, n, K_SEND); }
static PyObject *comm_recv(CommObject *c, PyObject *const *a, Py_ssize_t n) { return p2p(c, a, n, K_RECV); }

/* batch_send_recv(items, async): items = [(is_recv, buf, peer), ...], one exchange. */
static PyObject *comm_batch_send_recv(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    opdesc d = {K_BATCH};
    hbuf *b = NULL;
    int nb = 0;
    if (check_nargs(nargs, 2, "batch_send_recv") < 0 || !comm_live(c)) return NULL;
    PyObject *f = PySequence_Fast(args[0], "hccl batch_send_recv: items must be a sequence");
    if (!f) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    b = calloc(n ? (size_t)n : 1, sizeof *b);
    d.items = calloc(n ? (size_t)n : 1, sizeof *d.items);
    if (!b || !d.items) {
        PyErr_NoMemory();
        goto bad;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(f, i);
        if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 3) {
            PyErr_SetString(PyExc_TypeError, "hccl batch_send_recv: each item is (is_recv, buffer, peer)");
            goto bad;
        }
        int is_recv = PyObject_IsTrue(PyTuple_GET_ITEM(it, 0));
        uint32_t peer;
        if (is_recv < 0 || get_rank_arg(c, PyTuple_GET_ITEM(it, 2), &peer, "peer") < 0) goto bad;
        if (pyhccl_buf_get(PyTuple_GET_ITEM(it, 1), &b[nb], is_recv, is_recv ? "irecv tensor" : "isend tensor") < 0)
            goto bad;
        nb++;
        d.items[i].sendRecvType = is_recv ? HCCL_RECV : HCCL_SEND;
        d.items[i].buf = b[i].ptr;
        d.items[i].count = b[i].count;
        d.items[i].dataType = pyhccl_wire_dtype(b[i].dtype);
        d.items[i].remoteRank = peer;
    }
    d.nitems = (uint32_t)n;
    Py_DECREF(f);
    f = NULL;
    PyObject *r = submit(c, &d, b, nb, PyObject_IsTrue(args[1]), -1);
    free(b);
    return r;
bad:
    Py_XDECREF(f);
    release_all(b, nb);
    free(b);
    free(d.items);
    return NULL;
}

/* create_sub(ranks, sub_id) -> Comm: a sub-communicator of the listed parent ranks
 * (HcclCreateSubCommConfig); every listed rank calls it with the same list and id. */
static PyObject *comm_create_sub(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, "create_sub") < 0 || !comm_live(c)) return NULL;
    PyObject *f = PySequence_Fast(args[0], "hccl create_sub: ranks must be a sequence of int");
    if (!f) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    uint32_t *ids = calloc(n ? (size_t)n : 1, sizeof *ids);
    uint32_t me = UINT32_MAX;
    unsigned long long sub_id = PyLong_AsUnsignedLongLong(args[1]);
    if (!ids || (sub_id == (unsigned long long)-1 && PyErr_Occurred())) goto bad;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (get_rank_arg(c, PySequence_Fast_GET_ITEM(f, i), &ids[i], "rank") < 0) goto bad;
        if (ids[i] == c->rank) me = (uint32_t)i;
    }
    if (me == UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "hccl create_sub: rank %u is not in the list", c->rank);
        goto bad;
    }
    HcclComm parent = c->comm, sub = NULL;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    HcclResult r;
    Py_BEGIN_ALLOW_THREADS
    r = HcclCreateSubCommConfig(&parent, (uint32_t)n, ids, sub_id, me, &cfg, &sub);
    Py_END_ALLOW_THREADS
    free(ids);
    Py_DECREF(f);
    if (init_interrupted(r, sub)) return NULL;
    if (r != HCCL_SUCCESS) return raise_hccl(r, "create_sub", (PyObject *)c, -1, NULL, last_warning());
    return (PyObject *)comm_new(sub);
bad:
    free(ids);
    Py_DECREF(f);
    return NULL;
}

/* _bench_c_allreduce(buf, iters, mode) -> seconds: the C baseline of the overhead
 * benchmark. mode 0: HcclAllReduce(in place, SUM, stream NULL) per iteration (the
 * path Python's synchronous calls take); mode 1: HcclAllReduce on a stream followed
 * by aclrtSynchronizeStream (the usual C pattern). */
static PyObject *comm_bench_c_allreduce(CommObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    hbuf b;
    if (check_nargs(nargs, 3, "_bench_c_allreduce") < 0 || !comm_live(c)) return NULL;
    long iters = PyLong_AsLong(args[1]), mode = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (pyhccl_buf_get(args[0], &b, 1, "buffer") < 0) return NULL;
    HcclDataType dt = pyhccl_wire_dtype(b.dtype);
    HcclResult r = HCCL_SUCCESS;
    aclrtStream s = NULL;
    struct timespec t0, t1;
    Py_BEGIN_ALLOW_THREADS
    if (mode == 1 && aclrtCreateStream(&s) != ACL_SUCCESS) r = HCCL_E_RUNTIME;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < iters && r == HCCL_SUCCESS; i++) {
        r = HcclAllReduce(b.ptr, b.ptr, b.count, dt, HCCL_REDUCE_SUM, c->comm, s);
        if (r == HCCL_SUCCESS && s && aclrtSynchronizeStream(s) != ACL_SUCCESS) r = HCCL_E_RUNTIME;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (s) aclrtDestroyStream(s);
    Py_END_ALLOW_THREADS
    pyhccl_buf_release(&b);
    if (r != HCCL_SUCCESS) return raise_hccl(r, "all_reduce", (PyObject *)c, -1, NULL, last_warning());
    return PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

/* _dump_flight_recorder(path): HcclCommDumpFlightRecorder (the library's record of the
 * last operations, with the error text of a failed one); used to put the library's
 * own message into HcclError. */
static PyObject *comm_dump_flight_recorder(CommObject *c, PyObject *arg)
{
    if (!comm_live(c)) return NULL;
#ifdef HCCL_EXT_FLIGHT_RECORDER
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path) return NULL;
    HcclResult r;
    Py_BEGIN_ALLOW_THREADS
    r = HcclCommDumpFlightRecorder(c->comm, path);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(r == HCCL_SUCCESS);
#else
    (void)arg;
    Py_RETURN_FALSE;
#endif
}

/* exec_timeout: seconds the communicator's operations wait for their peers (0:
 * forever), from HcclCommGetExecTimeout (its config's, else HCCL_EXEC_TIMEOUT as the
 * library read it), or None where the library has no such call; the timeout messages
 * quote it. */
static PyObject *comm_get_exec_timeout(CommObject *c, void *closure)
{
    (void)closure;
    if (!comm_live(c)) return NULL;
#ifdef HCCL_EXT_EXEC_TIMEOUT
    uint64_t s = 0;
    if (HcclCommGetExecTimeout(c->comm, &s) == HCCL_SUCCESS) return PyLong_FromUnsignedLongLong(s);
#endif
    Py_RETURN_NONE;
}

/* flight_recorder_size: operations the communicator's flight recorder keeps (0: it is
 * off, and a dump writes nothing), from HcclCommGetFlightRecorderSize, or None where the
 * library has no such call. */
static PyObject *comm_get_flight_recorder_size(CommObject *c, void *closure)
{
    (void)closure;
    if (!comm_live(c)) return NULL;
#ifdef HCCL_EXT_FLIGHT_RECORDER_SIZE
    uint32_t ops = 0;
    if (HcclCommGetFlightRecorderSize(c->comm, &ops) == HCCL_SUCCESS) return PyLong_FromUnsignedLong(ops);
#endif
    Py_RETURN_NONE;
}

static PyMethodDef comm_methods[] = {
    {"_dump_flight_recorder", (PyCFunction)comm_dump_flight_recorder, METH_O,
     "_dump_flight_recorder(path) -> bool: write the library's flight recorder as JSON"},
    {"destroy", (PyCFunction)comm_destroy, METH_NOARGS, "Destroy the communicator (waits for queued work)."},
    {"__enter__", (PyCFunction)comm_enter, METH_NOARGS, "with comm: ... destroys it on leaving"},
    {"__exit__", (PyCFunction)comm_exit, METH_VARARGS, "destroy() (an exception inside the block propagates)"},
    {"async_error", (PyCFunction)comm_async_error, METH_NOARGS, "HcclGetCommAsyncError as an int (0 = none)."},
    {"all_reduce", (PyCFunction)(void (*)(void))comm_all_reduce, METH_FASTCALL, "all_reduce(send, recv, op, async)"},
    {"broadcast", (PyCFunction)(void (*)(void))comm_broadcast, METH_FASTCALL, "broadcast(buf, root, async)"},
    {"reduce", (PyCFunction)(void (*)(void))comm_reduce, METH_FASTCALL, "reduce(send, recv|None, op, root, async)"},
    {"all_gather", (PyCFunction)(void (*)(void))comm_all_gather, METH_FASTCALL, "all_gather(send, recv, async)"},
    {"reduce_scatter", (PyCFunction)(void (*)(void))comm_reduce_scatter, METH_FASTCALL,
     "reduce_scatter(send, recv, op, async)"},
    {"gather", (PyCFunction)(void (*)(void))comm_gather, METH_FASTCALL, "gather(send, recv|None, root, async)"},
    {"scatter", (PyCFunction)(void (*)(void))comm_scatter, METH_FASTCALL, "scatter(send|None, recv, root, async)"},
    {"all_to_all", (PyCFunction)(void (*)(void))comm_all_to_all, METH_FASTCALL, "all_to_all(send, recv, async)"},
    {"all_to_all_v", (PyCFunction)(void (*)(void))comm_all_to_all_v, METH_FASTCALL,
     "all_to_all_v(send, scounts, sdispls, recv, rcounts, rdispls, async)"},
    {"all_gather_v", (PyCFunction)(void (*)(void))comm_all_gather_v, METH_FASTCALL,
     "all_gather_v(send, recv, rcounts, rdispls, async)"},
    {"reduce_scatter_v", (PyCFunction)(void (*)(void))comm_reduce_scatter_v, METH_FASTCALL,
     "reduce_scatter_v(send, scounts, sdispls, recv, op, async)"},
    {"barrier", (PyCFunction)(void (*)(void))comm_barrier, METH_FASTCALL, "barrier(async)"},
    {"send", (PyCFunction)(void (*)(void))comm_send, METH_FASTCALL, "send(buf, dst, async)"},
    {"recv", (PyCFunction)(void (*)(void))comm_recv, METH_FASTCALL, "recv(buf, src, async)"},
    {"batch_send_recv", (PyCFunction)(void (*)(void))comm_batch_send_recv, METH_FASTCALL,
     "batch_send_recv([(is_recv, buf, peer), ...], async)"},
    {"create_sub", (PyCFunction)(void (*)(void))comm_create_sub, METH_FASTCALL, "create_sub(ranks, sub_id)"},
    {"_bench_c_allreduce", (PyCFunction)(void (*)(void))comm_bench_c_allreduce, METH_FASTCALL,
     "_bench_c_allreduce(buf, iters, mode) -> seconds"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef comm_getset[] = {
    {"rank", (getter)comm_get_rank, NULL, "this process's rank in the communicator", NULL},
    {"size", (getter)comm_get_size, NULL, "number of ranks", NULL},
    {"name", (getter)comm_get_name, NULL, "HcclGetCommName", NULL},
    {"destroyed", (getter)comm_get_destroyed, NULL, "True after destroy()", NULL},
    {"exec_timeout", (getter)comm_get_exec_timeout, NULL,
     "seconds operations wait for their peers (0: forever), as the library runs them", NULL},
    {"flight_recorder_size", (getter)comm_get_flight_recorder_size, NULL,
     "operations the library's flight recorder keeps (0: it is off)", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyObject *comm_repr(CommObject *c)
{
    return PyUnicode_FromFormat("<hccl.Comm rank %u of %u%s>", c->rank, c->size, c->comm ? "" : " (destroyed)");
}

static PyTypeObject CommType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hccl.Comm",
    .tp_basicsize = sizeof(CommObject),
    .tp_dealloc = (destructor)comm_dealloc,
    .tp_repr = (reprfunc)comm_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An HCCL communicator. Create with hccl.init(), hccl.Comm-returning helpers, or torch's backend.",
    .tp_traverse = (traverseproc)comm_traverse,
    .tp_clear = (inquiry)comm_clear,
    .tp_methods = comm_methods,
    .tp_getset = comm_getset,
    .tp_dictoffset = offsetof(CommObject, dict),
    .tp_weaklistoffset = offsetof(CommObject, weaklist),
};

/* ------------------------------------------------------------------ Handle */

static int finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* The garbage collector. A Handle stored where its communicator reaches it (c.w =
 * c.all_reduce(..., async_op=True)) makes a cycle Comm -> __dict__ -> Work -> Handle ->
 * Comm, so the Handle reports its references. Its buffers only once the operation is
 * done: while it runs it writes into their memory, and a buffer the collector found
 * unreachable could be cleared (a torch tensor's tp_clear frees its storage) under it;
 * unreported, they count as referenced from outside and stay. */
static int handle_done(HandleObject *h) { return !h->st || __atomic_load_n(&h->st->done, __ATOMIC_ACQUIRE); }

static int handle_traverse(HandleObject *h, visitproc visit, void *arg)
{
    Py_VISIT(h->comm);
    if (handle_done(h)) {
        for (int i = 0; i < h->nbufs; i++) {
            Py_VISIT(h->bufs[i].obj);
            if (h->bufs[i].has_view) Py_VISIT(h->bufs[i].view.obj);
        }
    }
    return 0;
}

/* A running operation keeps everything (its buffers, and the communicator, whose
 * stream and counter of queued operations it uses): another member of the cycle (the
 * Comm's or the Work's attributes) breaks it, and handle_dealloc then waits for the
 * operation before letting go. */
static int handle_clear(HandleObject *h)
{
    if (!handle_done(h)) return 0;
    hbuf *b = h->bufs;
    int n = h->nbufs;
    h->bufs = NULL;
    h->nbufs = 0;
    for (int i = 0; i < n; i++) {
        pyhccl_buf_release(&b[i]);
        Py_XDECREF(b[i].obj);
    }
    free(b);
    Py_CLEAR(h->comm);
    return 0;
}

static void handle_dealloc(HandleObject *h)
{
    PyObject_GC_UnTrack(h);
    if (h->st) {
        op_state *st = h->st;
        if (state_inherited(st)) {
            /* A fork child's copy: the task's reference never goes, nor may its lock
             * (held at fork by the parent's worker, perhaps) be taken: leave it. */
        } else if (!__atomic_load_n(&st->done, __ATOMIC_ACQUIRE)) {
            /* The interpreter exits after Ctrl-C interrupted a wait on this operation
             * (one that could not complete: a peer never joined): waiting here would
             * hold the exit until HCCL_EXEC_TIMEOUT. Destroy the communicator instead,
             * which aborts its operations waiting for peers (the peers see the abort);
             * the wait below then ends at once. */
            HcclComm abort = NULL;
            if (h->interrupted && finalizing() && h->comm && h->comm->comm) {
                abort = h->comm->comm;
                h->comm->comm = NULL; /* its stream stays: the process is exiting */
            }
            Py_BEGIN_ALLOW_THREADS
            if (abort) HcclCommDestroy(abort);
            state_wait(st, -1.0);
            Py_END_ALLOW_THREADS
        }
        state_put(st);
    }
    for (int i = 0; i < h->nbufs; i++) {
        pyhccl_buf_release(&h->bufs[i]);
        Py_XDECREF(h->bufs[i].obj);
    }
    free(h->bufs);
    Py_XDECREF(h->comm);
    PyObject_GC_Del(h);
}

static PyObject *handle_error(HandleObject *h)
{
    return raise_hccl(h->st->res, op_names[h->kind], (PyObject *)h->comm, h->peer, NULL, h->st->warn);
}

/* wait(timeout=None): True once the operation succeeded; raises HcclError when it
 * failed, or when timeout (seconds) passes first (the operation keeps running). */
static PyObject *handle_wait(HandleObject *h, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *to = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &to)) return NULL;
    double t = -1.0;
    if (to != Py_None) {
        t = PyFloat_AsDouble(to);
        if (t == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) { /* "must be real number, not str": of what? */
                PyErr_Format(PyExc_TypeError,
                             "wait(timeout): timeout must be seconds (a number), a timedelta (hccl.Work) or None to "
                             "wait until done, not %.100s",
                             Py_TYPE(to)->tp_name);
            }
            return NULL;
        }
        if (t != t) {
            PyErr_SetString(PyExc_ValueError, "wait(timeout): timeout is NaN; give seconds, or None to wait until done");
            return NULL;
        }
        if (t < 0 || t > HCCL_WAIT_MAX_S) t = -1.0; /* forever (inf, or more than 31 years) */
    }
    op_state *st = h->st;
    if (state_inherited(st)) {
        char detail[200];
        snprintf(detail, sizeof detail,
                 "the operation was queued before fork() and runs in the parent process, not in this one "
                 "(pid %d): its result cannot be awaited here", (int)getpid());
        return raise_hccl(HCCL_E_PARA, op_names[h->kind], (PyObject *)h->comm, h->peer, detail, NULL);
    }
    int done = __atomic_load_n(&st->done, __ATOMIC_ACQUIRE);
    /* Wait in slices, running Python's signal handlers between them, so that Ctrl-C
     * (KeyboardInterrupt) or another handler's exception ends a wait on an operation
     * that cannot complete (the operation itself keeps running). */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!done) {
        double left = -1.0;
        if (t >= 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            left = t - ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9);
            if (left <= 0) break;
        }
        double slice = left < 0 || left > WAIT_SLICE_S ? WAIT_SLICE_S : left;
        Py_BEGIN_ALLOW_THREADS
        done = state_wait(st, slice);
        Py_END_ALLOW_THREADS
        if (!done && PyErr_CheckSignals() < 0) {
            h->interrupted = 1;
            return NULL;
        }
    }
    if (!done) {
        char detail[160];
        snprintf(detail, sizeof detail, "wait() gave up after %g s; the operation is still running", t);
        return raise_hccl(HCCL_E_TIMEOUT, op_names[h->kind], (PyObject *)h->comm, h->peer, detail, NULL);
    }
    if (st->res != HCCL_SUCCESS) return handle_error(h);
    Py_RETURN_TRUE;
}

static PyObject *handle_is_completed(HandleObject *h, PyObject *u)
{
    (void)u;
    return PyBool_FromLong(__atomic_load_n(&h->st->done, __ATOMIC_ACQUIRE));
}

/* exception(): None while running or after success, else the HcclError. */
static PyObject *handle_exception(HandleObject *h, PyObject *u)
{
    (void)u;
    if (!__atomic_load_n(&h->st->done, __ATOMIC_ACQUIRE) || h->st->res == HCCL_SUCCESS) Py_RETURN_NONE;
    handle_error(h);
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    return v;
}

static PyObject *handle_get_result(HandleObject *h, void *u)
{
    (void)u;
    if (!__atomic_load_n(&h->st->done, __ATOMIC_ACQUIRE)) Py_RETURN_NONE;
    return PyLong_FromLong((long)h->st->res);
}

static PyObject *handle_get_op(HandleObject *h, void *u) { (void)u; return PyUnicode_FromString(op_names[h->kind]); }

static PyMethodDef handle_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))handle_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None): block (GIL released) until done; raise HcclError on failure or timeout"},
    {"is_completed", (PyCFunction)handle_is_completed, METH_NOARGS, "True once the operation ran"},
    {"exception", (PyCFunction)handle_exception, METH_NOARGS, "the HcclError of a failed operation, else None"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef handle_getset[] = {
    {"result_code", (getter)handle_get_result, NULL, "HcclResult once completed, else None", NULL},
    {"op", (getter)handle_get_op, NULL, "operation name", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hccl.Handle",
    .tp_basicsize = sizeof(HandleObject),
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An asynchronous HCCL operation.",
    .tp_traverse = (traverseproc)handle_traverse,
    .tp_clear = (inquiry)handle_clear,
    .tp_methods = handle_methods,
    .tp_getset = handle_getset,
};

/* ------------------------------------------------------------------ module functions */

static PyObject *mod_get_root_info(PyObject *self, PyObject *u)
{
    (void)self;
    (void)u;
    HcclRootInfo ri;
    HcclResult r;
    Py_BEGIN_ALLOW_THREADS
    r = HcclGetRootInfo(&ri);
    Py_END_ALLOW_THREADS
    if (r != HCCL_SUCCESS) return raise_hccl(r, "get_root_info", NULL, -1, last_warning(), NULL);
    return PyBytes_FromStringAndSize(ri.internal, sizeof ri.internal);
}

/* exec_timeout argument: seconds, or < 0 for the default (HCCL_EXEC_TIMEOUT). */
static int get_exec_timeout(PyObject *o, int *out)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return int_out_of_range(o, NULL, "exec_timeout");
    if (v > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "hccl: exec_timeout %ld is out of range", v);
        return -1;
    }
    *out = v < 0 ? -1 : (int)v;
    return 0;
}

static void config_timeout(HcclCommConfig *cfg, int exec_timeout)
{
    HcclCommConfigInit(cfg);
    if (exec_timeout >= 0) cfg->hcclExecTimeOut = exec_timeout;
}

/* comm_init_root_info(nranks, root_info_bytes, rank, exec_timeout=-1) -> Comm */
static PyObject *mod_comm_init_root_info(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"nranks", "root_info", "rank", "exec_timeout", NULL};
    PyObject *nranks_o, *rank_o, *timeout_o = NULL;
    uint32_t nranks, rank;
    int exec_timeout = -1;
    Py_buffer ri;
    /* Not "I": it wraps silently (2**32 + 2 ranks would make a communicator of 2, a
     * rank of -1 would read as 4294967295). */
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oy*O|O:comm_init_root_info", kwlist, &nranks_o, &ri, &rank_o,
                                     &timeout_o))
        return NULL;
    if (get_u32(nranks_o, &nranks, "nranks") < 0 || get_u32(rank_o, &rank, "rank") < 0 ||
        (timeout_o && get_exec_timeout(timeout_o, &exec_timeout) < 0)) {
        PyBuffer_Release(&ri);
        return NULL;
    }
    if (ri.len != HCCL_ROOT_INFO_BYTES) {
        PyBuffer_Release(&ri);
        PyErr_Format(PyExc_ValueError, "hccl: root info must be %d bytes, not %zd", HCCL_ROOT_INFO_BYTES, ri.len);
        return NULL;
    }
    HcclRootInfo info;
    memcpy(info.internal, ri.buf, HCCL_ROOT_INFO_BYTES);
    PyBuffer_Release(&ri);
    HcclComm h = NULL;
    HcclCommConfig cfg;
    config_timeout(&cfg, exec_timeout);
    HcclResult r;
    Py_BEGIN_ALLOW_THREADS
    r = HcclCommInitRootInfoConfig(nranks, &info, rank, &cfg, &h);
    Py_END_ALLOW_THREADS
    if (init_interrupted(r, h)) return NULL;
    if (r != HCCL_SUCCESS) return raise_hccl(r, "comm_init_root_info", NULL, -1, last_warning(), NULL);
    return (PyObject *)comm_new(h);
}

/* comm_init_from_env(exec_timeout=-1) -> Comm (torchrun, Slurm, mpirun, hcclrun) */
static PyObject *mod_comm_init_from_env(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"exec_timeout", NULL};
    PyObject *timeout_o = NULL;
    int exec_timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:comm_init_from_env", kwlist, &timeout_o)) return NULL;
    if (timeout_o && get_exec_timeout(timeout_o, &exec_timeout) < 0) return NULL;
    HcclComm h = NULL;
    HcclCommConfig cfg;
    config_timeout(&cfg, exec_timeout);
    HcclResult r;
    Py_BEGIN_ALLOW_THREADS
    r = HcclCommInitFromEnv(&cfg, &h);
    Py_END_ALLOW_THREADS
    if (init_interrupted(r, h)) return NULL;
    if (r != HCCL_SUCCESS) return raise_hccl(r, "init", NULL, -1, last_warning(), NULL);
    return (PyObject *)comm_new(h);
}

/* comm_init_all(n) -> [Comm] * n: n ranks in this process (HcclCommInitAll). */
static PyObject *mod_comm_init_all(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        int_out_of_range(arg, "comm_init_all", "rank count");
        return NULL;
    }
    if (n < 1 || n > 4096) {
        PyErr_Format(PyExc_ValueError, "hccl: comm_init_all needs 1..4096 ranks, not %ld", n);
        return NULL;
    }
    int32_t *dev = calloc((size_t)n, sizeof *dev);
    HcclComm *hs = calloc((size_t)n, sizeof *hs);
    if (!dev || !hs) {
        free(dev);
        free(hs);
        return PyErr_NoMemory();
    }
    for (long i = 0; i < n; i++) dev[i] = (int32_t)i;
    HcclResult r;
    Py_BEGIN_ALLOW_THREADS
    r = HcclCommInitAll((uint32_t)n, dev, hs);
    Py_END_ALLOW_THREADS
    free(dev);
    if (r != HCCL_SUCCESS) {
        free(hs);
        return raise_hccl(r, "comm_init_all", NULL, -1, last_warning(), NULL);
    }
    PyObject *list = PyList_New(n);
    long i = 0;
    while (list && i < n) {
        PyObject *c = (PyObject *)comm_new(hs[i++]); /* which destroys it if it fails */
        if (!c) {
            Py_CLEAR(list); /* destroys the Comms made so far */
            break;
        }
        PyList_SET_ITEM(list, i - 1, c);
    }
    /* Out of memory: the communicators no Comm took are destroyed, not leaked. */
    for (; i < n; i++) {
        HcclComm h = hs[i];
        Py_BEGIN_ALLOW_THREADS
        HcclCommDestroy(h);
        Py_END_ALLOW_THREADS
    }
    free(hs);
    return list;
}

static PyObject *mod_error_string(PyObject *self, PyObject *arg)
{
    (void)self;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred()) return int_out_of_range(arg, "error_string", "code"), NULL;
    /* An HcclResult is a C int: a wider value must not be truncated into a known code
     * (2**32 would read as HCCL_SUCCESS). */
    if (code < INT_MIN || code > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "hccl error_string: code %R is out of range", arg);
        return NULL;
    }
    return PyUnicode_FromString(HcclGetErrorString((HcclResult)code));
}

/* _avg_divide(buffer, n): ReduceOp.AVG's division of a buffer by a group size n, on
 * its own (for the tests: a group of hundreds of ranks is not needed to check it). */
static PyObject *mod_avg_divide(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *obj;
    unsigned long n;
    hbuf b;
    if (!PyArg_ParseTuple(args, "Ok", &obj, &n)) return NULL;
    if (n == 0 || n > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError, "hccl: _avg_divide needs 1..%u, not %lu", UINT32_MAX, n);
        return NULL;
    }
    if (pyhccl_buf_get(obj, &b, 1, "buffer") < 0) return NULL;
    HcclResult r = b.dtype == PYHCCL_DT_BOOL ? HCCL_E_NOT_SUPPORT
                                             : avg_divide(b.ptr, b.count, pyhccl_wire_dtype(b.dtype), (uint32_t)n);
    if (r != HCCL_SUCCESS) PyErr_Format(PyExc_TypeError, "hccl: ReduceOp.AVG is not defined for %s", pyhccl_dtype_name(b.dtype));
    pyhccl_buf_release(&b);
    if (r != HCCL_SUCCESS) return NULL;
    Py_RETURN_NONE;
}

static PyObject *mod_set_error_factory(PyObject *self, PyObject *fn)
{
    (void)self;
    Py_INCREF(fn);
    Py_XSETREF(error_factory, fn);
    Py_RETURN_NONE;
}

/* connect_timeout(): HcclGetConnectTimeout, or None where the library has no such call;
 * new_group's failure quotes it. */
static PyObject *mod_connect_timeout(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
#ifdef HCCL_EXT_CONNECT_TIMEOUT
    uint64_t s = 0;
    if (HcclGetConnectTimeout(&s) == HCCL_SUCCESS) return PyLong_FromUnsignedLongLong(s);
#endif
    Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
    {"get_root_info", mod_get_root_info, METH_NOARGS, "HcclGetRootInfo() -> bytes"},
    {"comm_init_root_info", (PyCFunction)(void (*)(void))mod_comm_init_root_info, METH_VARARGS | METH_KEYWORDS,
     "comm_init_root_info(nranks, root_info, rank, exec_timeout=-1) -> Comm"},
    {"comm_init_from_env", (PyCFunction)(void (*)(void))mod_comm_init_from_env, METH_VARARGS | METH_KEYWORDS,
     "comm_init_from_env(exec_timeout=-1) -> Comm"},
    {"comm_init_all", mod_comm_init_all, METH_O, "comm_init_all(n) -> list of n Comm (ranks in this process)"},
    {"error_string", mod_error_string, METH_O, "HcclGetErrorString(code)"},
    {"connect_timeout", mod_connect_timeout, METH_NOARGS,
     "connect_timeout() -> seconds communicator creation waits (HCCL_CONNECT_TIMEOUT as the library read it)"},
    {"_set_error_factory", mod_set_error_factory, METH_O, NULL},
    {"_avg_divide", mod_avg_divide, METH_VARARGS, NULL},
    {"_set_torch_provider", pyhccl_set_torch_provider, METH_O, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "hccl._hccl",
                                    "libhccl for Python (see hccl/__init__.py for the public API).", -1,
                                    mod_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__hccl(void)
{
    if (PyType_Ready(&CommType) < 0 || PyType_Ready(&HandleType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    Py_INCREF(&CommType);
    Py_INCREF(&HandleType);
    if (PyModule_AddObject(m, "Comm", (PyObject *)&CommType) < 0 ||
        PyModule_AddObject(m, "Handle", (PyObject *)&HandleType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    static const struct { const char *name; int v; } consts[] = {
        {"SUM", HCCL_REDUCE_SUM}, {"PROD", HCCL_REDUCE_PROD}, {"MAX", HCCL_REDUCE_MAX}, {"MIN", HCCL_REDUCE_MIN},
        {"E_PARA", HCCL_E_PARA}, {"E_TIMEOUT", HCCL_E_TIMEOUT}, {"E_REMOTE", HCCL_E_REMOTE},
        {"ROOT_INFO_BYTES", HCCL_ROOT_INFO_BYTES},
        {"DT_INT8", HCCL_DATA_TYPE_INT8}, {"DT_INT16", HCCL_DATA_TYPE_INT16}, {"DT_INT32", HCCL_DATA_TYPE_INT32},
        {"DT_INT64", HCCL_DATA_TYPE_INT64}, {"DT_UINT8", HCCL_DATA_TYPE_UINT8}, {"DT_UINT16", HCCL_DATA_TYPE_UINT16},
        {"DT_UINT32", HCCL_DATA_TYPE_UINT32}, {"DT_UINT64", HCCL_DATA_TYPE_UINT64}, {"DT_FP16", HCCL_DATA_TYPE_FP16},
        {"DT_BF16", HCCL_DATA_TYPE_BFP16}, {"DT_FP32", HCCL_DATA_TYPE_FP32}, {"DT_FP64", HCCL_DATA_TYPE_FP64},
        {"DT_BOOL", PYHCCL_DT_BOOL}};
    for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++)
        if (PyModule_AddIntConstant(m, consts[i].name, consts[i].v) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    /* The main thread: threading.main_thread() (the import may run in another). */
    PyObject *th = PyImport_ImportModule("threading");
    PyObject *mt = th ? PyObject_CallMethod(th, "main_thread", NULL) : NULL;
    PyObject *ident = mt ? PyObject_GetAttrString(mt, "ident") : NULL;
    main_ident = ident ? PyLong_AsUnsignedLong(ident) : 0;
    Py_XDECREF(ident);
    Py_XDECREF(mt);
    Py_XDECREF(th);
    if (PyErr_Occurred()) {
        Py_DECREF(m);
        return NULL;
    }
    HcclSetInterruptCheck(interrupt_check);
    static int atfork_done;
    if (!atfork_done) {
        atfork_done = 1;
        pthread_atfork(NULL, NULL, fork_child);
    }
    return m;
}
