/*
 * alltoall.c - alltoall_perf: HcclAlltoAll; size = per-peer count * n * size,
 * busbw factor (n-1)/n. Block p of rank r's send buffer goes to rank p, where it
 * lands in block r. In place uses one buffer for both.
 */
#include "common.h"

static void counts(size_t total, int nranks, perf_counts *c)
{
    size_t per = total / (size_t)nranks;
    c->send = c->recv = per * (size_t)nranks;
    c->param = per;
    c->send_inplace = c->recv_inplace = 0;
}

static HcclResult run(const perf_rank *pr, void *send, void *recv, size_t count, const perf_dtype *t,
                      HcclReduceOp op, int root)
{
    (void)op, (void)root;
    return HcclAlltoAll(send, count, t->type, recv, count, t->type, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    size_t per = d->c.param;
    return perf_value(d, (int)(i / per), (size_t)rank * per + i % per);
}

const perf_coll perf_test = {"AlltoAll", 0, 0, 1, perf_factor_ring, counts, run, perf_always, perf_always, expected};
