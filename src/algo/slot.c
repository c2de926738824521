/*
 * slot.c - small AllReduce, AllGather, ReduceScatter and AlltoAll through the host's shared
 * slots (hccl_net.slot_gather: every rank publishes its bytes in its slot of one
 * shared segment and waits until every rank's is there; one round, no messages).
 *
 *   AllReduce:     publish the input; reduce slots 0, 1, ..., n-1 in rank order.
 *   AllGather:     publish the input; copy slot j into block j of recvbuf.
 *   ReduceScatter: publish the whole input (n blocks); reduce block r of slots
 *                  0, 1, ..., n-1 in rank order.
 *   AlltoAll:      publish the whole input (n blocks); copy block r of slot j into
 *                  block j of recvbuf.
 *   Barrier:       publish nothing (every rank's slot of the call is there: all arrived).
 *
 * The oneshot's math (the same order on every rank, so results are bitwise the same
 * on every rank and run to run) without its n - 1 framed messages per rank: each
 * rank writes its input once, into memory every rank reads. Every slot is a copy, so
 * in place works. Only on communicators of one host with slots (every rank agrees),
 * for what fits a slot (HCCL_NET_SLOT_BYTES).
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <string.h>

/* Publish bytes of in; on success rank j's bytes are at *first + j * *stride. */
static HcclResult gather(hccl_algo_ctx *ctx, const void *in, size_t bytes, const char **first, size_t *stride)
{
    if (!ctx->net->slot_gather || bytes > HCCL_NET_SLOT_BYTES) return HCCL_E_INTERNAL;
    const unsigned char *f = NULL;
    HcclResult res = ctx->net->slot_gather(ctx->net, in, bytes, &f, stride);
    *first = (const char *)f;
    return res;
}

HcclResult hccl_algo_slot_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (!fn || !es) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es, stride = 0;
    if (bytes == 0) return HCCL_SUCCESS;
    const char *first = NULL;
    CHECK(gather(ctx, a->sendbuf, bytes, &first, &stride));
    if (ctx->nranks == 1) memcpy(a->recvbuf, first, bytes);
    else hccl_reduce_in_order(fn, a->recvbuf, first, stride, ctx->nranks, a->count);
    return HCCL_SUCCESS;
}

/* AllGather (each rank publishes its block) and AlltoAll (its n blocks): block j of
 * recvbuf is slot j's only block, or its block r. */
static HcclResult copy_blocks(hccl_algo_ctx *ctx, const hccl_op_args *a, hccl_op_type type)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || a->type != type) return HCCL_E_PARA;
    const int a2a = type == HCCL_OP_ALLTOALL;
    size_t bytes = (size_t)a->count * es, stride = 0;
    if (bytes == 0) return HCCL_SUCCESS;
    if (a2a && bytes > HCCL_NET_SLOT_BYTES / n) return HCCL_E_INTERNAL;
    const char *first = NULL;
    CHECK(gather(ctx, a->sendbuf, a2a ? bytes * n : bytes, &first, &stride));
    const size_t off = a2a ? bytes * r : 0;
    char *out = a->recvbuf;
    for (uint32_t j = 0; j < n; j++) /* AllGather: ours too, unless the input is already in place */
        if (a2a || j != r || out + bytes * r != (const char *)a->sendbuf)
            memcpy(out + bytes * j, first + stride * j + off, bytes);
    return HCCL_SUCCESS;
}

HcclResult hccl_algo_slot_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    return copy_blocks(ctx, a, HCCL_OP_ALLGATHER);
}

HcclResult hccl_algo_slot_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (!fn || !es || a->type != HCCL_OP_REDUCE_SCATTER) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es, stride = 0;
    if (bytes == 0) return HCCL_SUCCESS;
    if (bytes > HCCL_NET_SLOT_BYTES / n) return HCCL_E_INTERNAL;
    const char *first = NULL;
    CHECK(gather(ctx, a->sendbuf, bytes * n, &first, &stride));
    if (n == 1) memcpy(a->recvbuf, first, bytes);
    else hccl_reduce_in_order(fn, a->recvbuf, first + bytes * r, stride, n, a->count);
    return HCCL_SUCCESS;
}

HcclResult hccl_algo_slot_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    return copy_blocks(ctx, a, HCCL_OP_ALLTOALL);
}

HcclResult hccl_algo_slot_barrier(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    (void)a;
    if (!ctx->net->slot_gather) return HCCL_E_INTERNAL;
    return hccl_direct_close(ctx); /* the direct algorithms' closing round: an empty slot round */
}
