/*
 * broadcast.c - broadcast_perf: HcclBroadcast from root (-r); bytes = count * size,
 * busbw factor 1. HcclBroadcast works in place, so the out-of-place block first
 * copies the root's send buffer into its receive buffer (on the stream, timed).
 */
#include "common.h"

static void counts(size_t total, int nranks, perf_counts *c)
{
    (void)nranks;
    c->send = c->recv = c->param = total;
    c->send_inplace = c->recv_inplace = 0;
}

static HcclResult run(const perf_rank *pr, void *send, void *recv, size_t count, const perf_dtype *t,
                      HcclReduceOp op, int root)
{
    (void)op;
    if (send != recv && pr->rank == root && count > 0) {
        size_t bytes = count * t->size;
        if (aclrtMemcpyAsync(recv, bytes, send, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, pr->stream) != ACL_SUCCESS)
            return HCCL_E_RUNTIME;
    }
    return HcclBroadcast(recv, count, t->type, (uint32_t)root, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    (void)rank;
    return perf_value(d, d->root, i);
}

const perf_coll perf_test = {"Broadcast", 0, 1, 1, perf_factor_one, counts, run, perf_root_only, perf_always,
                             expected};
