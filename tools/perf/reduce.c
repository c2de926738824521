/*
 * reduce.c - reduce_perf: HcclReduce to root (-r); bytes = count * size, busbw
 * factor 1. Only the root's receive buffer is checked.
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
    return HcclReduce(send, recv, count, t->type, op, (uint32_t)root, pr->comm, pr->stream);
}

static double expected(const perf_data *d, int rank, size_t i)
{
    (void)rank;
    return perf_reduce_all(d, i);
}

const perf_coll perf_test = {"Reduce", 1, 1, 1, perf_factor_one, counts, run, perf_always, perf_root_only, expected};
