/*
 * coll_api.c - exported operations: argument checks, then an operation descriptor
 * (with private copies of the caller's count arrays) enqueued on the stream.
 */
#include "api_int.h"

#include "reduce/reduce.h"
#include "util/copy.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An operation whose count (the same on every rank) is 0 moves nothing anywhere and
 * returns once its arguments are checked, as HCCL's own do ("input count is 0,
 * return ... success") and NCCL's: no rendezvous, no sequence number, nothing queued.
 * The vector forms still run: their counts may be 0 on one rank only. */
static int moves_nothing(hccl_op_type type, uint64_t count)
{
    switch (type) {
    case HCCL_OP_ALLREDUCE:
    case HCCL_OP_BROADCAST:
    case HCCL_OP_REDUCE:
    case HCCL_OP_REDUCE_SCATTER:
    case HCCL_OP_ALLGATHER:
    case HCCL_OP_SCATTER:
    case HCCL_OP_GATHER:
    case HCCL_OP_ALLTOALL:
    case HCCL_OP_SEND:
    case HCCL_OP_RECV:
        return count == 0;
    default:
        return 0;
    }
}

/* What the checks read of the communicator: copies of its size, rank and async error,
 * and the communicator itself, held by a reference, or NULL for an operation that
 * moves nothing (checked against the copies from the registry, with no reference or
 * lock taken: about 13 ns a call). An operation that moves nothing on a communicator
 * that failed earlier returns that failure, as one that moves data does. */
typedef struct api_comm {
    uint32_t nranks, rank;
    HcclResult failed;
    HcclComm handle;
    hccl_comm *comm;
    aclrtStream stream; /* where the operation goes: the caller's, or its group's (begin) */
} api_comm;

/* A failure of an operation called inside a group is also the group's (HcclGroupEnd
 * returns it). */
static HcclResult in_group(HcclResult res)
{
    if (res != HCCL_SUCCESS && hccl_api_group_active()) hccl_api_group_failed(res);
    return res;
}

/* Look the communicator up and get a zeroed descriptor: for an operation on the NULL
 * stream, which runs before the call returns, or one that moves nothing, the caller's
 * own (on its stack: no allocation); for one queued on a stream, an allocated one the
 * stream frees. begin() notes a failure in the group. */
static HcclResult begin_checked(const char *fn, HcclComm comm, hccl_op_type type, uint64_t count,
                                aclrtStream stream, hccl_op_args *local, api_comm *c, hccl_op_args **a)
{
    c->comm = NULL;
    c->handle = comm;
    /* Not Send and Recv: a group may collect them. */
    if (moves_nothing(type, count) && type != HCCL_OP_SEND && type != HCCL_OP_RECV) {
        CHECK(hccl_comm_peek(fn, comm, &c->nranks, &c->rank, &c->failed));
    } else {
        CHECK(hccl_comm_acquire(fn, comm, &c->comm));
        c->nranks = c->comm->nranks;
        c->rank = c->comm->rank;
        c->failed = (HcclResult)__atomic_load_n(&c->comm->async_error, __ATOMIC_ACQUIRE);
    }
    /* Inside a group, an operation on the NULL stream (not a Send or Recv: the group
     * collects those) is queued on a stream of the group's, which HcclGroupEnd waits
     * for: one thread may drive several communicators' ranks (group.c); one on a
     * stream is noted, for the group's point-to-point batch to follow it. */
    if (c->comm && type != HCCL_OP_SEND && type != HCCL_OP_RECV && hccl_api_group_active()) {
        if (!stream) stream = hccl_api_group_stream(c->comm);
        else hccl_api_group_note_stream(c->comm, stream);
    }
    c->stream = stream;
    if (!stream || !c->comm) {
        hccl_zero_small(local, sizeof *local);
        local->borrowed = 1;
        *a = local;
    } else if (!(*a = hccl_calloc(1, sizeof **a))) {
        hccl_comm_release(c->comm);
        return HCCL_E_MEMORY;
    }
    (*a)->type = type;
    return HCCL_SUCCESS;
}

static HcclResult begin(const char *fn, HcclComm comm, hccl_op_type type, uint64_t count, aclrtStream stream,
                        hccl_op_args *local, api_comm *c, hccl_op_args **a)
{
    return in_group(begin_checked(fn, comm, type, count, stream, local, c, a));
}

static void drop(hccl_op_args *a)
{
    if (a->borrowed) hccl_op_args_clear(a);
    else hccl_op_args_free(a);
}

/* Run or enqueue (which takes the descriptor and our reference to c), or drop the
 * descriptor after a failed check or when there is nothing to do (c->comm is NULL
 * only then: begin had the same type and count). */
static HcclResult finish(HcclResult res, api_comm *c, hccl_op_args *a)
{
    aclrtStream stream = c->stream;
    if (res == HCCL_SUCCESS && moves_nothing(a->type, a->count) && c->failed != HCCL_SUCCESS) {
        /* The failure path: a reference for the name (the communicator may be gone by now). */
        hccl_comm *named = c->comm;
        if (!named && hccl_comm_acquire(hccl_op_name(a->type), c->handle, &named) != HCCL_SUCCESS) named = NULL;
        HCCL_WARN(COLL, "comm %s rank %u: %s of 0 elements refused: the communicator failed earlier (%s)",
                  named ? named->name : "?", c->rank, hccl_op_name(a->type), hccl_result_str(c->failed));
        if (named && named != c->comm) hccl_comm_release(named);
        res = c->failed;
    } else if (res == HCCL_SUCCESS && moves_nothing(a->type, a->count)) {
        HCCL_TRACE(COLL, "rank %u: %s of 0 elements: nothing to do", c->rank, hccl_op_name(a->type));
    } else if (res == HCCL_SUCCESS && stream) {
        return in_group(hccl_comm_enqueue(c->comm, a, stream));
    } else if (res == HCCL_SUCCESS) {
        res = hccl_comm_run(c->comm, a, 0);
    }
    drop(a);
    if (c->comm) hccl_comm_release(c->comm);
    return in_group(res);
}

static uint64_t *copy_u64(const void *src, size_t n)
{
    uint64_t *d = hccl_malloc(sizeof(uint64_t) * (n ? n : 1));
    if (d && n) memcpy(d, src, sizeof(uint64_t) * n);
    return d;
}

/* Checks of an array of per-rank (count, displ) blocks inside a buffer. */
static HcclResult check_blocks(const char *fn, const void *buf, const uint64_t *counts, const uint64_t *displs,
                               uint32_t n, size_t size, const char *what)
{
    for (uint32_t r = 0; r < n; r++) {
        uint64_t end, bytes;
        /* hccl_api_bytes's bound, with the block named: its end alone says nothing */
        if (__builtin_add_overflow(counts[r], displs ? displs[r] : 0, &end) || !hccl_api_fits(end, size, &bytes)) {
            HCCL_WARN(COLL, "%s: %s block of rank %u (count %llu at displacement %llu, elements of %zu bytes) ends "
                      "beyond the addressable size", fn, what, r, (unsigned long long)counts[r],
                      (unsigned long long)(displs ? displs[r] : 0), size);
            return HCCL_E_PARA;
        }
        CHECK(hccl_api_ptr(fn, buf, counts[r], what));
    }
    return HCCL_SUCCESS;
}

typedef struct span {
    uint64_t lo, hi; /* [lo, hi) in elements */
    uint32_t rank;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The blocks an operation writes must not overlap (MPI calls such a call erroneous):
 * two peers' data would land on the same elements, and which one stays would depend
 * on timing. check_blocks has bounded every block first (no overflow). */
static HcclResult check_disjoint(const char *fn, const uint64_t *counts, const uint64_t *displs, uint32_t n,
                                 const char *what)
{
    /* The usual layout (blocks in rank order, as prefix sums make them) in one pass:
     * no copy, no sort on every call. */
    uint64_t end = 0;
    uint32_t r = 0;
    for (; r < n; r++) {
        if (!counts[r]) continue;
        if (displs[r] < end) break;
        end = displs[r] + counts[r];
    }
    if (r == n) return HCCL_SUCCESS;
    span small[16], *v = n <= 16 ? small : hccl_malloc(sizeof *v * n);
    if (!v) {
        HCCL_WARN(COLL, "%s: out of memory to check the %s blocks", fn, what);
        return HCCL_E_MEMORY;
    }
    uint32_t k = 0;
    for (r = 0; r < n; r++)
        if (counts[r]) v[k++] = (span){displs[r], displs[r] + counts[r], r};
    qsort(v, k, sizeof *v, span_cmp);
    HcclResult res = HCCL_SUCCESS;
    for (uint32_t i = 1; i < k && res == HCCL_SUCCESS; i++)
        if (v[i].lo < v[i - 1].hi) {
            HCCL_WARN(COLL, "%s: the %s blocks of ranks %u (elements %llu..%llu) and %u (elements %llu..%llu) overlap",
                      fn, what, v[i - 1].rank, (unsigned long long)v[i - 1].lo, (unsigned long long)v[i - 1].hi - 1,
                      v[i].rank, (unsigned long long)v[i].lo, (unsigned long long)v[i].hi - 1);
            res = HCCL_E_PARA;
        }
    if (v != small) hccl_free(v);
    return res;
}

static HcclResult reducing(const char *fn, hccl_op_type type, void *sendBuf, void *recvBuf, uint64_t count,
                           HcclDataType dt, HcclReduceOp op, uint32_t root, HcclComm comm, aclrtStream stream)
{
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, type, count, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, dt, &size);
    uint64_t mult = type == HCCL_OP_REDUCE_SCATTER ? c->nranks : 1;
    if (res == HCCL_SUCCESS) res = hccl_api_redop(fn, dt, op);
    if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, count, size, c->nranks, "count");
    if (res == HCCL_SUCCESS && type == HCCL_OP_REDUCE) res = hccl_api_rank(fn, root, c->nranks, "root");
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, sendBuf, count * mult, "sendBuf");
    if (res == HCCL_SUCCESS && (type != HCCL_OP_REDUCE || root == c->rank))
        res = hccl_api_ptr(fn, recvBuf, count, "recvBuf");
    a->sendbuf = sendBuf;
    a->recvbuf = recvBuf;
    a->count = count;
    a->dtype = dt;
    a->redop = op;
    a->root = root;
    return finish(res, c, a);
}

HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream)
{
    return reducing("HcclAllReduce", HCCL_OP_ALLREDUCE, sendBuf, recvBuf, count, dataType, op, 0, comm, stream);
}

HcclResult HcclReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream stream)
{
    return reducing("HcclReduce", HCCL_OP_REDUCE, sendBuf, recvBuf, count, dataType, op, root, comm, stream);
}

HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream)
{
    return reducing("HcclReduceScatter", HCCL_OP_REDUCE_SCATTER, sendBuf, recvBuf, recvCount, dataType, op, 0, comm,
                    stream);
}

HcclResult HcclReduceScatterV(void *sendBuf, const void *sendCounts, const void *sendDispls, void *recvBuf,
                              uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                              aclrtStream stream)
{
    const char *fn = "HcclReduceScatterV";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, HCCL_OP_REDUCE_SCATTER_V, recvCount, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, dataType, &size);
    if (res == HCCL_SUCCESS) res = hccl_api_redop(fn, dataType, op);
    if (res == HCCL_SUCCESS && (!sendCounts || !sendDispls)) {
        HCCL_WARN(COLL, "%s: %s is NULL", fn, !sendCounts ? "sendCounts" : "sendDispls");
        res = HCCL_E_PTR;
    }
    if (res == HCCL_SUCCESS) {
        a->send_counts = copy_u64(sendCounts, c->nranks);
        a->send_displs = copy_u64(sendDispls, c->nranks);
        if (!a->send_counts || !a->send_displs) res = HCCL_E_MEMORY;
    }
    if (res == HCCL_SUCCESS) res = check_blocks(fn, sendBuf, a->send_counts, a->send_displs, c->nranks, size, "sendBuf");
    if (res == HCCL_SUCCESS && a->send_counts[c->rank] != recvCount) {
        HCCL_WARN(COLL, "%s: recvCount %llu differs from sendCounts[%u] = %llu", fn, (unsigned long long)recvCount,
                  c->rank, (unsigned long long)a->send_counts[c->rank]);
        res = HCCL_E_PARA;
    }
    if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, recvCount, size, 1, "recvCount");
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, recvBuf, recvCount, "recvBuf");
    a->sendbuf = sendBuf;
    a->recvbuf = recvBuf;
    a->count = recvCount;
    a->dtype = dataType;
    a->redop = op;
    return finish(res, c, a);
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream)
{
    const char *fn = "HcclBroadcast";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, HCCL_OP_BROADCAST, count, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, dataType, &size);
    if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, count, size, 1, "count");
    if (res == HCCL_SUCCESS) res = hccl_api_rank(fn, root, c->nranks, "root");
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, buf, count, "buf");
    a->sendbuf = buf;
    a->recvbuf = buf;
    a->count = count;
    a->dtype = dataType;
    a->root = root;
    return finish(res, c, a);
}

/* Scatter, Gather, AllGather: one block per rank of `count` elements. */
static HcclResult blocks(const char *fn, hccl_op_type type, void *sendBuf, void *recvBuf, uint64_t count,
                         HcclDataType dt, uint32_t root, HcclComm comm, aclrtStream stream)
{
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, type, count, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, dt, &size);
    if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, count, size, c->nranks, "count");
    if (res == HCCL_SUCCESS && type != HCCL_OP_ALLGATHER) res = hccl_api_rank(fn, root, c->nranks, "root");
    if (res == HCCL_SUCCESS) {
        int root_side = type == HCCL_OP_ALLGATHER || root == c->rank;
        uint64_t big = count * c->nranks;
        if (type == HCCL_OP_SCATTER) {
            if (root_side) res = hccl_api_ptr(fn, sendBuf, big, "sendBuf");
            if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, recvBuf, count, "recvBuf");
        } else {
            res = hccl_api_ptr(fn, sendBuf, count, "sendBuf");
            if (res == HCCL_SUCCESS && root_side) res = hccl_api_ptr(fn, recvBuf, big, "recvBuf");
        }
    }
    a->sendbuf = sendBuf;
    a->recvbuf = recvBuf;
    a->count = count;
    a->dtype = dt;
    a->root = root;
    return finish(res, c, a);
}

HcclResult HcclScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType, uint32_t root,
                       HcclComm comm, aclrtStream stream)
{
    return blocks("HcclScatter", HCCL_OP_SCATTER, sendBuf, recvBuf, recvCount, dataType, root, comm, stream);
}

HcclResult HcclGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, uint32_t root,
                      HcclComm comm, aclrtStream stream)
{
    return blocks("HcclGather", HCCL_OP_GATHER, sendBuf, recvBuf, sendCount, dataType, root, comm, stream);
}

HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream)
{
    return blocks("HcclAllGather", HCCL_OP_ALLGATHER, sendBuf, recvBuf, sendCount, dataType, 0, comm, stream);
}

HcclResult HcclAllGatherV(void *sendBuf, uint64_t sendCount, void *recvBuf, const void *recvCounts,
                          const void *recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream stream)
{
    const char *fn = "HcclAllGatherV";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, HCCL_OP_ALLGATHER_V, sendCount, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, dataType, &size);
    if (res == HCCL_SUCCESS && (!recvCounts || !recvDispls)) {
        HCCL_WARN(COLL, "%s: %s is NULL", fn, !recvCounts ? "recvCounts" : "recvDispls");
        res = HCCL_E_PTR;
    }
    if (res == HCCL_SUCCESS) {
        a->recv_counts = copy_u64(recvCounts, c->nranks);
        a->recv_displs = copy_u64(recvDispls, c->nranks);
        if (!a->recv_counts || !a->recv_displs) res = HCCL_E_MEMORY;
    }
    if (res == HCCL_SUCCESS) res = check_blocks(fn, recvBuf, a->recv_counts, a->recv_displs, c->nranks, size, "recvBuf");
    if (res == HCCL_SUCCESS) res = check_disjoint(fn, a->recv_counts, a->recv_displs, c->nranks, "recvBuf");
    if (res == HCCL_SUCCESS && a->recv_counts[c->rank] != sendCount) {
        HCCL_WARN(COLL, "%s: sendCount %llu differs from recvCounts[%u] = %llu", fn, (unsigned long long)sendCount,
                  c->rank, (unsigned long long)a->recv_counts[c->rank]);
        res = HCCL_E_PARA;
    }
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, sendBuf, sendCount, "sendBuf");
    a->sendbuf = sendBuf;
    a->recvbuf = recvBuf;
    a->count = sendCount;
    a->dtype = dataType;
    return finish(res, c, a);
}

HcclResult HcclAlltoAll(const void *sendBuf, uint64_t sendCount, HcclDataType sendType, const void *recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream stream)
{
    const char *fn = "HcclAlltoAll";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, HCCL_OP_ALLTOALL, sendCount, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, sendType, &size);
    if (res == HCCL_SUCCESS) res = hccl_api_dtype(fn, recvType, NULL);
    if (res == HCCL_SUCCESS && (sendType != recvType || sendCount != recvCount)) {
        HCCL_WARN(COLL, "%s: send (%llu x %s) and receive (%llu x %s) blocks must match", fn,
                  (unsigned long long)sendCount, hccl_dtype_name(sendType), (unsigned long long)recvCount,
                  hccl_dtype_name(recvType));
        res = HCCL_E_PARA;
    }
    if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, sendCount, size, c->nranks, "sendCount");
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, sendBuf, sendCount, "sendBuf");
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, recvBuf, recvCount, "recvBuf");
    a->sendbuf = sendBuf;
    a->recvbuf = (void *)recvBuf;
    a->count = sendCount;
    a->dtype = sendType;
    return finish(res, c, a);
}

HcclResult HcclAlltoAllV(const void *sendBuf, const void *sendCounts, const void *sdispls, HcclDataType sendType,
                         const void *recvBuf, const void *recvCounts, const void *rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream stream)
{
    const char *fn = "HcclAlltoAllV";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, HCCL_OP_ALLTOALLV, 0, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, sendType, &size);
    if (res == HCCL_SUCCESS) res = hccl_api_dtype(fn, recvType, NULL);
    if (res == HCCL_SUCCESS && sendType != recvType) {
        HCCL_WARN(COLL, "%s: sendType %d and recvType %d must be the same", fn, (int)sendType, (int)recvType);
        res = HCCL_E_PARA;
    }
    if (res == HCCL_SUCCESS && (!sendCounts || !sdispls || !recvCounts || !rdispls)) {
        HCCL_WARN(COLL, "%s: a counts or displacements array is NULL", fn);
        res = HCCL_E_PTR;
    }
    if (res == HCCL_SUCCESS) {
        a->send_counts = copy_u64(sendCounts, c->nranks);
        a->send_displs = copy_u64(sdispls, c->nranks);
        a->recv_counts = copy_u64(recvCounts, c->nranks);
        a->recv_displs = copy_u64(rdispls, c->nranks);
        if (!a->send_counts || !a->send_displs || !a->recv_counts || !a->recv_displs) res = HCCL_E_MEMORY;
    }
    if (res == HCCL_SUCCESS) res = check_blocks(fn, sendBuf, a->send_counts, a->send_displs, c->nranks, size, "sendBuf");
    if (res == HCCL_SUCCESS) res = check_blocks(fn, recvBuf, a->recv_counts, a->recv_displs, c->nranks, size, "recvBuf");
    if (res == HCCL_SUCCESS) res = check_disjoint(fn, a->recv_counts, a->recv_displs, c->nranks, "recvBuf");
    a->sendbuf = sendBuf;
    a->recvbuf = (void *)recvBuf;
    a->dtype = sendType;
    return finish(res, c, a);
}

HcclResult HcclAlltoAllVC(const void *sendBuf, const void *sendCountMatrix, HcclDataType sendType,
                          const void *recvBuf, HcclDataType recvType, HcclComm comm, aclrtStream stream)
{
    const char *fn = "HcclAlltoAllVC";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    size_t size = 0;
    CHECK(begin(fn, comm, HCCL_OP_ALLTOALLVC, 0, stream, &local, c, &a));
    HcclResult res = hccl_api_dtype(fn, sendType, &size);
    if (res == HCCL_SUCCESS) res = hccl_api_dtype(fn, recvType, NULL);
    if (res == HCCL_SUCCESS && sendType != recvType) {
        HCCL_WARN(COLL, "%s: sendType %d and recvType %d must be the same", fn, (int)sendType, (int)recvType);
        res = HCCL_E_PARA;
    }
    if (res == HCCL_SUCCESS && !sendCountMatrix) {
        HCCL_WARN(COLL, "%s: sendCountMatrix is NULL", fn);
        res = HCCL_E_PTR;
    }
    uint32_t n = c->nranks;
    if (res == HCCL_SUCCESS) {
        a->matrix = copy_u64(sendCountMatrix, (size_t)n * n);
        if (!a->matrix) res = HCCL_E_MEMORY;
    }
    /* Every rank checks every row (what rank i sends) and column (what rank i
     * receives), not only its own: the matrix is the same on every rank, so all of
     * them refuse it alike, and none is left waiting in the operation for ranks that
     * refused it. */
    uint64_t stotal = 0, rtotal = 0;
    for (uint32_t i = 0; res == HCCL_SUCCESS && i < n; i++) {
        uint64_t st = 0, rt = 0;
        for (uint32_t j = 0; res == HCCL_SUCCESS && j < n; j++) {
            if (__builtin_add_overflow(st, a->matrix[(size_t)i * n + j], &st) ||
                __builtin_add_overflow(rt, a->matrix[(size_t)j * n + i], &rt)) {
                HCCL_WARN(COLL, "%s: the counts of sendCountMatrix overflow (%s of rank %u)", fn,
                          st < a->matrix[(size_t)i * n + j] ? "row" : "column", i);
                res = HCCL_E_PARA;
            }
        }
        char what[48];
        snprintf(what, sizeof what, "send total of rank %u", i);
        if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, st, size, 1, what);
        snprintf(what, sizeof what, "receive total of rank %u", i);
        if (res == HCCL_SUCCESS) res = hccl_api_bytes(fn, rt, size, 1, what);
        if (i == c->rank) {
            stotal = st;
            rtotal = rt;
        }
    }
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, sendBuf, stotal, "sendBuf");
    if (res == HCCL_SUCCESS) res = hccl_api_ptr(fn, recvBuf, rtotal, "recvBuf");
    a->sendbuf = sendBuf;
    a->recvbuf = (void *)recvBuf;
    a->dtype = sendType;
    return finish(res, c, a);
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream stream)
{
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    CHECK(begin("HcclBarrier", comm, HCCL_OP_BARRIER, 0, stream, &local, c, &a));
    a->dtype = HCCL_DATA_TYPE_INT8;
    return finish(HCCL_SUCCESS, c, a);
}

/* An item of a BatchSendRecv (bufname NULL: the messages name it "item i" and its
 * fields), or the arguments of a Send or Recv (named bufname and rankname). */
static HcclResult check_item(const char *fn, const HcclSendRecvItem *it, uint32_t i, const api_comm *c,
                             const char *bufname, const char *rankname)
{
    size_t size = hccl_dtype_size(it->dataType);
    uint64_t bytes;
    if (it->sendRecvType != HCCL_SEND && it->sendRecvType != HCCL_RECV) {
        HCCL_WARN(COLL, "%s: item %u has an unknown sendRecvType %d", fn, i, (int)it->sendRecvType);
        return HCCL_E_PARA;
    }
    if (size && hccl_api_fits(it->count, size, &bytes) && (it->buf || !it->count) && it->remoteRank < c->nranks)
        return HCCL_SUCCESS;
    /* A failure: the checks again, with messages that say which item. */
    char where[96];
    if (!bufname) {
        snprintf(where, sizeof where, "%s: item %u (%s rank %u)", fn, i,
                 it->sendRecvType == HCCL_SEND ? "send to" : "receive from", it->remoteRank);
        fn = where;
        bufname = "buf";
        rankname = "remoteRank";
    }
    CHECK(hccl_api_dtype(fn, it->dataType, &size));
    CHECK(hccl_api_bytes(fn, it->count, size, 1, "count"));
    CHECK(hccl_api_ptr(fn, it->buf, it->count, bufname));
    CHECK(hccl_api_rank(fn, it->remoteRank, c->nranks, rankname));
    return HCCL_SUCCESS;
}

static HcclResult p2p(const char *fn, HcclSendRecvType dir, void *buf, uint64_t count, HcclDataType dt,
                      uint32_t peer, HcclComm comm, aclrtStream stream)
{
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    CHECK(begin(fn, comm, dir == HCCL_SEND ? HCCL_OP_SEND : HCCL_OP_RECV, count, stream, &local, c, &a));
    HcclSendRecvItem it = {dir, buf, count, dt, peer};
    HcclResult res = check_item(fn, &it, 0, c, dir == HCCL_SEND ? "sendBuf" : "recvBuf",
                                dir == HCCL_SEND ? "destRank" : "srcRank");
    if (res == HCCL_SUCCESS && peer == c->rank && count && !hccl_api_group_active()) {
        HCCL_WARN(COLL, "%s: rank %u cannot %s itself outside a group (it would wait forever)", fn, peer,
                  dir == HCCL_SEND ? "send to" : "receive from");
        res = HCCL_E_PARA;
    }
    if (res == HCCL_SUCCESS && hccl_api_group_active()) {
        res = hccl_api_group_add(c->comm, stream, &it);
        if (res != HCCL_SUCCESS) {
            HCCL_WARN(COLL, "%s: cannot collect the call in the group (%s)", fn, hccl_result_str(res));
            hccl_api_group_failed(res);
        }
        drop(a);
        hccl_comm_release(c->comm);
        return res;
    }
    a->sendbuf = buf;
    a->recvbuf = buf;
    a->count = count;
    a->dtype = dt;
    a->root = peer;
    return finish(res, c, a);
}

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream)
{
    return p2p("HcclSend", HCCL_SEND, sendBuf, count, dataType, destRank, comm, stream);
}

HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream)
{
    return p2p("HcclRecv", HCCL_RECV, recvBuf, count, dataType, srcRank, comm, stream);
}

HcclResult HcclBatchSendRecv(HcclSendRecvItem *sendRecvInfo, uint32_t itemNum, HcclComm comm, aclrtStream stream)
{
    const char *fn = "HcclBatchSendRecv";
    api_comm cv, *c = &cv;
    hccl_op_args *a, local;
    CHECK(begin(fn, comm, HCCL_OP_BATCH_SEND_RECV, 0, stream, &local, c, &a));
    HcclResult res = HCCL_SUCCESS;
    if (itemNum > 0 && !sendRecvInfo) {
        HCCL_WARN(COLL, "%s: sendRecvInfo is NULL (itemNum %u)", fn, itemNum);
        res = HCCL_E_PTR;
    }
    for (uint32_t i = 0; res == HCCL_SUCCESS && i < itemNum; i++) res = check_item(fn, &sendRecvInfo[i], i, c, NULL, NULL);
    if (res == HCCL_SUCCESS) res = hccl_api_self_pairs(fn, sendRecvInfo, itemNum, c->rank);
    if (res == HCCL_SUCCESS) res = hccl_api_batch_overlap(fn, sendRecvInfo, itemNum, c->rank);
    if (res == HCCL_SUCCESS) {
        a->items = hccl_malloc(sizeof(HcclSendRecvItem) * (itemNum ? itemNum : 1));
        if (!a->items) res = HCCL_E_MEMORY;
        else if (itemNum) memcpy(a->items, sendRecvInfo, sizeof(HcclSendRecvItem) * itemNum);
        a->nitems = itemNum;
    }
    a->dtype = HCCL_DATA_TYPE_INT8;
    return finish(res, c, a);
}
