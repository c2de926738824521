/*
 * reduce_scatter.c - reduce_scatter_perf: HcclReduceScatter; size = per-rank count
 * * n * size (the send buffer), busbw factor (n-1)/n. In place: the receive buffer
 * is this rank's slot of the send buffer.
 */
#include "common.h"

static void counts(size_t total, int nranks, perf_counts *c)
{
    size_t per = total / (size_t)nranks;
    c->send = per * (size_t)nranks;
    c->recv = c->param = per;
    c->send_inplace = 0;
    c->recv_inplace = per;
}

static HcclResult run(const perf_rank *pr, void *send, void *recv, size_t count, const perf_dtype *t,
                      HcclReduceOp op, int root)
{
    (void)root;
    return HcclReduceScatter(send, recv, count, t->type, op, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    return perf_reduce_all(d, (size_t)rank * d->c.param + i);
}

const perf_coll perf_test = {"ReduceScatter", 1, 0, 1, perf_factor_ring, counts, run, perf_always, perf_always,
                             expected};
