/*
 * exec.c - running operations: on the caller's thread (NULL stream) or as a task on
 * an aclrtStream. One operation at a time per communicator (the exec lock), since
 * its connections and scratch buffer carry one operation's messages at a time.
 *
 * A failure inside an operation leaves the connections in an unknown state, so it
 * marks the communicator broken (HcclGetCommAsyncError reports it) and later
 * operations fail at once with the same code.
 */
#include "core/comm.h"

#include "reduce/reduce.h"
#include "runtime/stream_task.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/param.h"
#include "util/ticks.h"
#include "util/util.h"

#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

void hccl_op_args_clear(hccl_op_args *a)
{
    if (!a->send_counts && !a->send_displs && !a->recv_counts && !a->recv_displs && !a->matrix && !a->items)
        return; /* most operations: nothing allocated */
    hccl_free(a->send_counts);
    hccl_free(a->send_displs);
    hccl_free(a->recv_counts);
    hccl_free(a->recv_displs);
    hccl_free(a->matrix);
    hccl_free(a->items);
}

void hccl_op_args_free(hccl_op_args *a)
{
    if (!a) return;
    hccl_op_args_clear(a);
    hccl_free(a);
}

HcclResult hccl_comm_dump_flight(hccl_comm *c, const char *path, const char *reason)
{
    char written[4096];
    int rc = hccl_flight_dump(&c->flight, path, c->name, c->rank, c->nranks, reason, written, sizeof written);
    if (rc > 0) {
        HCCL_WARN(COLL, "comm %s rank %u: no flight recorder to dump: it is off (HCCL_FLIGHT_RECORDER_SIZE=0, or no "
                  "memory for it when the communicator was made)", c->name, c->rank);
        return HCCL_E_NOT_SUPPORT;
    }
    if (rc != 0) return HCCL_E_OPEN_FILE_FAILURE;
    HCCL_INFO(COLL, "comm %s rank %u: flight recorder written to %s", c->name, c->rank, written);
    return HCCL_SUCCESS;
}

/* An operation refused before it started: recorded as queued and failed. */
static void refused(hccl_comm *c, const hccl_op_args *args, uint64_t fr_id, const char *why)
{
    uint64_t now = hccl_ticks();
    if (!fr_id) fr_id = hccl_flight_enqueue(&c->flight, args, now);
    hccl_flight_end(&c->flight, fr_id, 0, why, now);
}

/* Microseconds between two timestamps (tracing only: a conversion reads the clock). */
static double ticks_us(uint64_t t0, uint64_t t1)
{
    hccl_ticks_ref r;
    hccl_ticks_ref_now(&r);
    return (double)(hccl_ticks_ns(&r, t1) - hccl_ticks_ns(&r, t0)) / 1e3;
}

/* An AllReduce, or a Reduce at its root, whose buffers partly overlap (not the same
 * address: that is in place) would read inputs it has already overwritten. MPI and
 * NCCL leave it undefined; here the input moves to recvBuf first (memmove, as the
 * caller's recvBuf is ours to write) and the operation runs in place, so the result
 * is what separate buffers give. private_input (below) covers the ReduceScatter(V)
 * and AlltoAll algorithms that need it; the others handle overlaps themselves. */
static const hccl_op_args *unshift(const hccl_comm *c, const hccl_op_args *args, hccl_op_args *local)
{
    if ((args->type != HCCL_OP_ALLREDUCE && !(args->type == HCCL_OP_REDUCE && args->root == c->rank)) ||
        args->sendbuf == args->recvbuf)
        return args;
    size_t bytes = (size_t)args->count * hccl_dtype_size(args->dtype);
    const char *s = args->sendbuf, *r = args->recvbuf;
    if (!(s < r + bytes && r < s + bytes)) return args;
    memmove(args->recvbuf, args->sendbuf, bytes);
    *local = *args;
    local->sendbuf = local->recvbuf;
    return local;
}

/* The network algorithms' ReduceScatter(V) (ring, halving-doubling, hierarchical)
 * and AlltoAll (Bruck) write recvBuf window by window while later windows still read
 * sendBuf: right for the in-place forms (recvBuf == sendBuf, or the own block of
 * sendBuf), but a recvBuf that partly overlaps sendBuf otherwise would overwrite
 * input not yet read. Such an operation reads a private copy of its input instead
 * (*copy, freed by the caller). 0 when that copy cannot be allocated. */
static int private_input(const hccl_comm *c, const hccl_op_args *args, hccl_algo_id algo, hccl_op_args *local,
                         const hccl_op_args **out, void **copy)
{
    *copy = NULL;
    *out = args;
    int rs = args->type == HCCL_OP_REDUCE_SCATTER || args->type == HCCL_OP_REDUCE_SCATTER_V;
    if (!(rs && (algo == HCCL_ALGO_REFERENCE || algo == HCCL_ALGO_HD || algo == HCCL_ALGO_HIER)) &&
        !(args->type == HCCL_OP_ALLTOALL && algo == HCCL_ALGO_BRUCK))
        return 1;
    const size_t es = hccl_dtype_size(args->dtype);
    uint64_t sbytes = 0, rbytes = args->count * es, own = (uint64_t)c->rank * args->count * es;
    if (args->type == HCCL_OP_REDUCE_SCATTER_V) {
        for (uint32_t j = 0; j < c->nranks; j++)
            if (args->send_counts[j])
                sbytes = HCCL_MAX(sbytes, (args->send_displs[j] + args->send_counts[j]) * es);
        own = args->send_displs[c->rank] * es;
    } else {
        sbytes = (uint64_t)c->nranks * args->count * es;
        if (args->type == HCCL_OP_ALLTOALL) rbytes = sbytes;
    }
    const char *s = args->sendbuf, *r = args->recvbuf;
    /* In place needs no copy, unless a ReduceScatterV's own block is also part of
     * another rank's block (blocks of sendBuf may overlap: they are only read). */
    int in_place = r == s || (rs && r == s + own);
    if (!sbytes || !rbytes || !(s < r + rbytes && r < s + sbytes) ||
        (in_place && !hccl_algo_rs_own_block_shared(args, c->nranks, c->rank)))
        return 1;
    if (!(*copy = hccl_malloc(sbytes))) {
        HCCL_WARN(COLL, "comm %s rank %u: %s: out of memory for a copy of sendBuf (%llu bytes), which recvBuf "
                  "partly overlaps", c->name, c->rank, hccl_op_name(args->type), (unsigned long long)sbytes);
        return 0;
    }
    memcpy(*copy, s, sbytes);
    *local = *args;
    local->sendbuf = *copy;
    *out = local;
    return 1;
}

/* fr_id: the flight recorder's entry of an enqueued operation; 0 for one called on
 * the NULL stream (recorded here). */
/* A fork child's copy of a communicator shares the parent's connections and shared
 * memory: an operation on it would take the parent's place with its peers (and one
 * queued on a stream would never run: the child has no stream workers). 1 (said) for
 * such a copy. */
static int inherited(const hccl_comm *c, const hccl_op_args *args)
{
    if (!hccl_comm_inherited(c)) return 0;
    HCCL_WARN(COLL, "comm %s rank %u: %s refused: this process (pid %d) is a fork() child of the one that "
              "created the communicator (pid %d), and cannot use it; create a new communicator in the child",
              c->name, c->rank, hccl_op_name(args->type), hccl_comm_fork_pid, c->owner_pid);
    return 1;
}

/* Operations compute in the default floating-point environment (round to nearest even,
 * subnormals kept, exceptions masked: src/reduce's contract), whatever the thread that
 * runs them has set. A caller with flush-to-zero / denormals-are-zero (as
 * torch.set_flush_denormal(True) or -ffast-math's start-up code sets), another rounding
 * mode or unmasked exceptions would otherwise get results, or a SIGFPE, that depend on
 * whether its own thread (NULL stream, a synchronize that runs the task) or the
 * stream's worker ran the operation. On x86 only MXCSR matters (SSE arithmetic), and
 * it is written only when it differs from the default. */
typedef struct fp_saved {
#if defined(__SSE2__)
    unsigned csr;
#else
    fenv_t env;
#endif
    int changed;
} fp_saved;

static void fp_default(fp_saved *s)
{
#if defined(__SSE2__)
    s->csr = _mm_getcsr();
    s->changed = (s->csr & ~0x3Fu) != 0x1F80u; /* ignoring the sticky exception flags */
    if (s->changed) _mm_setcsr(0x1F80u);
#else
    s->changed = fegetenv(&s->env) == 0 && fesetenv(FE_DFL_ENV) == 0;
#endif
}

static void fp_restore(const fp_saved *s)
{
    if (!s->changed) return;
#if defined(__SSE2__)
    _mm_setcsr(s->csr);
#else
    fesetenv(&s->env);
#endif
}

HcclResult hccl_comm_run(hccl_comm *c, const hccl_op_args *args, uint64_t fr_id)
{
    if (inherited(c, args)) return HCCL_E_PARA;
    int broken = __atomic_load_n(&c->async_error, __ATOMIC_ACQUIRE);
    if (broken != HCCL_SUCCESS) {
        HCCL_WARN(COLL, "comm %s rank %u: %s refused: the communicator failed earlier (%s)", c->name, c->rank,
                  hccl_op_name(args->type), hccl_result_str((HcclResult)broken));
        refused(c, args, fr_id, "refused: the communicator failed earlier");
        return (HcclResult)broken;
    }
    if (__atomic_load_n(&c->suspended, __ATOMIC_ACQUIRE)) {
        HCCL_WARN(COLL, "comm %s rank %u: %s refused: the communicator is suspended (HcclCommSuspend; "
                  "HcclCommResume resumes it)", c->name, c->rank, hccl_op_name(args->type));
        refused(c, args, fr_id, "refused: the communicator is suspended");
        return HCCL_E_SUSPENDING;
    }
    if (__atomic_load_n(&c->aborting, __ATOMIC_ACQUIRE)) {
        HCCL_WARN(COLL, "comm %s rank %u: %s dropped: the communicator is being destroyed", c->name, c->rank,
                  hccl_op_name(args->type));
        refused(c, args, fr_id, "dropped: the communicator is being destroyed");
        return HCCL_E_INTERNAL;
    }

    pthread_mutex_lock(&c->exec_lock);
    hccl_op_args unshifted;
    args = unshift(c, args, &unshifted);
    hccl_fingerprint fp;
    hccl_fingerprint_of(args, c->nranks, &fp);
    if (!fp.p2p && ++c->coll_seq == 0) c->coll_seq = 1; /* 0 is "none" (point-to-point, no failure) */
    fp.seq = fp.p2p ? 0 : c->coll_seq;
    uint64_t t0 = hccl_ticks();
    hccl_algo_ctx ctx = {c->rank, c->nranks, hccl_net_base(c->net), c->scratch, HCCL_ALGO_SCRATCH_BYTES,
                         c->direct, hccl_comm_algo_force(c, args->type), c->host_of, c->nhosts,
                         c->direct_local, c->crowded, c->cfg.deterministic};
    hccl_algo_id algo = hccl_algo_select(&ctx, args);
    /* The peers check it: ranks whose settings choose another algorithm fail at once. */
    if (!fp.p2p) fp.algo = (uint8_t)(algo + 1);
    hccl_net_begin_op(c->net, &fp, c->cfg.exec_timeout_ns);
    fr_id = hccl_flight_start(&c->flight, fr_id, args, &fp, algo, t0);
    if (!(c->algo_logged[args->type] & (1u << algo))) { /* name each choice once */
        c->algo_logged[args->type] |= 1u << algo;
        HCCL_INFO(COLL, "comm %s rank %u: %s of %llu elements uses the %s algorithm (%u ranks on %u host(s))", c->name,
                  c->rank, hccl_op_name(args->type), (unsigned long long)args->count,
                  hccl_algo_id_name(algo, args->type), c->nranks, c->nhosts);
    }
    hccl_op_args copied;
    void *copy;
    const hccl_op_args *run;
    fp_saved fp_env;
    fp_default(&fp_env);
    HcclResult res = private_input(c, args, algo, &copied, &run, &copy) ? hccl_algo_run_with(&ctx, run, algo)
                                                                       : HCCL_E_MEMORY;
    fp_restore(&fp_env);
    if (copy) hccl_free(copy);
    if (res != HCCL_SUCCESS) {
        char what[160];
        hccl_fingerprint_str(&fp, what, sizeof what);
        const char *why = hccl_net_error(c->net);
        /* A failure this rank found itself (an argument the algorithm refused): its WARN
         * line is the reason, for the record, the error message and the peers. */
        char own[1024];
        const char *warned;
        if (!why[0] && (warned = hccl_log_warn_since(t0)) != NULL) {
            snprintf(own, sizeof own, "%s", warned);
            why = own;
        }
        char msg[1400];
        if (fp.p2p)
            snprintf(msg, sizeof msg, "comm %s rank %u: %s failed (%s): %s", c->name, c->rank, what,
                     hccl_result_str(res), why[0] ? why : "see the lines above");
        else
            snprintf(msg, sizeof msg, "comm %s rank %u: op #%u %s failed (%s): %s", c->name, c->rank, fp.seq, what,
                     hccl_result_str(res), why[0] ? why : "see the lines above");
        hccl_flight_end(&c->flight, fr_id, fp.seq, why[0] ? why : hccl_result_str(res), hccl_ticks());
        char written[4096] = "";
        if (hccl_flight_dump(&c->flight, NULL, c->name, c->rank, c->nranks, msg, written, sizeof written) == 0)
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " [flight recorder: %s]", written);
        HCCL_WARN(COLL, "%s", msg);
        hccl_comm_set_async_error(c, res);
        /* The connections are now mid-message: tell the peers and shut them. */
        hccl_net_abort(c->net, why[0] ? why : msg);
        hccl_net_end_op(c->net, 0);
    } else {
        uint64_t t1 = hccl_ticks();
        hccl_net_end_op(c->net, 1);
        hccl_flight_end(&c->flight, fr_id, fp.seq, NULL, t1);
        HCCL_TRACE(COLL, "comm %s rank %u: %s #%u count %llu done in %.1f us", c->name, c->rank,
                   hccl_op_name(args->type), fp.seq, (unsigned long long)args->count, ticks_us(t0, t1));
    }
    pthread_mutex_unlock(&c->exec_lock);
    return res;
}

static aclError run_task(void *p)
{
    hccl_op_args *a = p;
    hccl_comm *c = a->queued_comm;
    __atomic_sub_fetch(&c->queued, 1, __ATOMIC_SEQ_CST); /* before its check of c->aborting */
    HcclResult res = hccl_comm_run(c, a, a->queued_fr_id);
    hccl_comm_release(c);
    hccl_op_args_free(a);
    if (res == HCCL_SUCCESS) return ACL_SUCCESS;
    /* Its WARN text is this thread's: hand it to the thread that synchronizes the
     * stream (aclGetRecentErrMsg, HcclGetLastErrorMessage there). */
    aclrtInternalSetTaskFailure(hccl_log_last_warn());
    return ACL_ERROR_RT_STREAM_TASK_EXCEPTION;
}

HcclResult hccl_comm_enqueue(hccl_comm *c, hccl_op_args *args, aclrtStream stream)
{
    if (!stream) {
        HcclResult res = hccl_comm_run(c, args, 0);
        hccl_op_args_free(args);
        hccl_comm_release(c);
        return res;
    }
    if (inherited(c, args)) {
        hccl_op_args_free(args);
        hccl_comm_release(c);
        return HCCL_E_PARA;
    }
    args->queued_comm = c; /* the caller's reference, released by run_task */
    args->queued_fr_id = hccl_flight_enqueue(&c->flight, args, hccl_ticks());
    __atomic_add_fetch(&c->queued, 1, __ATOMIC_SEQ_CST);
    aclError e = aclrtLaunchHostTask(stream, run_task, args);
    if (e != ACL_SUCCESS) {
        __atomic_sub_fetch(&c->queued, 1, __ATOMIC_SEQ_CST);
        HCCL_WARN(COLL, "comm %s: cannot enqueue %s on stream %p (aclError %d: not a live stream?)", c->name,
                  hccl_op_name(args->type), stream, e);
        hccl_flight_end(&c->flight, args->queued_fr_id, 0, "not enqueued: the stream refused it", hccl_ticks());
        hccl_comm_release(c);
        hccl_op_args_free(args);
        return e == ACL_ERROR_RT_INVALID_HANDLE || e == ACL_ERROR_INVALID_PARAM ? HCCL_E_PARA : HCCL_E_RUNTIME;
    }
    return HCCL_SUCCESS;
}
