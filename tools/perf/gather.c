/*
 * gather.c - gather_perf: HcclGather (this project's extension) to root (-r);
 * size = per-rank count * n * size, busbw factor (n-1)/n. Only the root's receive
 * buffer is checked. In place: the send buffer is this rank's slot.
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
    (void)op;
    return HcclGather(send, recv, count, t->type, (uint32_t)root, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    (void)rank;
    return perf_value(d, (int)(i / d->c.param), i % d->c.param);
}

const perf_coll perf_test = {"Gather", 0, 1, 1, perf_factor_ring, counts, run, perf_always, perf_root_only, expected};
