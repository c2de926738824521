/*
 * sendrecv.c - sendrecv_perf: every rank sends count elements to (r+1)%n and receives
 * as many from (r-1+n)%n in one HcclBatchSendRecv (deadlock-free: the library pairs
 * the two directions); bytes = count * size, busbw factor 1. Sending and receiving
 * through one buffer is not a defined operation, so the in-place block prints n/a.
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
    HcclSendRecvItem items[2];
    (void)op, (void)root;
    items[0].sendRecvType = HCCL_SEND;
    items[0].buf = send;
    items[0].count = count;
    items[0].dataType = t->type;
    items[0].remoteRank = (uint32_t)((pr->rank + 1) % pr->nranks);
    items[1].sendRecvType = HCCL_RECV;
    items[1].buf = recv;
    items[1].count = count;
    items[1].dataType = t->type;
    items[1].remoteRank = (uint32_t)((pr->rank - 1 + pr->nranks) % pr->nranks);
    return HcclBatchSendRecv(items, 2, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    return perf_value(d, (rank - 1 + d->nranks) % d->nranks, i);
}

const perf_coll perf_test = {"SendRecv", 0, 0, 0, perf_factor_one, counts, run, perf_always, perf_always, expected};
