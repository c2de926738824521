/*
 * all_gather.c - all_gather_perf: HcclAllGather; size = per-rank count * n * size
 * (the receive buffer), busbw factor (n-1)/n. In place: the send buffer is this
 * rank's slot of the receive buffer.
 */
#include "common.h"

static void counts(size_t total, int nranks, perf_counts *c)
{
    size_t per = total / (size_t)nranks;
    c->send = c->param = per;
    c->recv = per * (size_t)nranks;
    c->send_inplace = per;
    c->recv_inplace = 0;
}

static HcclResult run(const perf_rank *pr, void *send, void *recv, size_t count, const perf_dtype *t,
                      HcclReduceOp op, int root)
{
    (void)op, (void)root;
    return HcclAllGather(send, recv, count, t->type, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    (void)rank;
    return perf_value(d, (int)(i / d->c.param), i % d->c.param);
}

const perf_coll perf_test = {"AllGather", 0, 0, 1, perf_factor_ring, counts, run, perf_always, perf_always, expected};
