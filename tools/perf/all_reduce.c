/*
 * all_reduce.c - all_reduce_perf: HcclAllReduce; bytes = count * size,
 * busbw factor 2(n-1)/n.
 */
#include "common.h"

static double factor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }

static void counts(size_t total, int nranks, perf_counts *c)
{
    (void)nranks;
    c->send = c->recv = c->param = total;
    c->send_inplace = c->recv_inplace = 0;
}

static HcclResult run(const perf_rank *pr, void *send, void *recv, size_t count, const perf_dtype *t,
                      HcclReduceOp op, int root)
{
    (void)root;
    return HcclAllReduce(send, recv, count, t->type, op, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    (void)rank;
    return perf_reduce_all(d, i);
}

const perf_coll perf_test = {"AllReduce", 1, 0, 1, factor, counts, run, perf_always, perf_always, expected};
