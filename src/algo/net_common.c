/*
 * net_common.c - shared openings and block layouts of the network algorithms
 * (net_common.h).
 */
#include "algo/net_common.h"

#include "algo/pattern/pattern.h"
#include "util/log.h"

#include <string.h>

HcclResult hccl_net_reduce_open(const hccl_algo_ctx *ctx, const hccl_op_args *a, const char *what, size_t *es,
                                hccl_reduce_fn *fn, int *done)
{
    *es = hccl_dtype_size(a->dtype);
    *fn = hccl_reduce_get(a->dtype, a->redop);
    *done = 1;
    if (*es == 0 || !*fn || (a->type == HCCL_OP_REDUCE && a->root >= ctx->nranks)) {
        HCCL_WARN(COLL, "%s: bad dtype %d / op %d / root %u", what, (int)a->dtype, (int)a->redop, a->root);
        return HCCL_E_PARA;
    }
    if (a->count == 0) return HCCL_SUCCESS;
    if (ctx->nranks == 1) {
        if (a->sendbuf != a->recvbuf) memmove(a->recvbuf, a->sendbuf, a->count * *es);
        return HCCL_SUCCESS;
    }
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES) return HCCL_E_PARA;
    *done = 0;
    return HCCL_SUCCESS;
}

HcclResult hccl_net_fold(hccl_algo_ctx *ctx, hccl_reduce_fn fn, const char *src, char *dst, char *tmp, uint64_t w,
                         size_t es, const char **cur)
{
    const uint32_t r = ctx->rank, rem = ctx->nranks - hccl_pattern_pow2_floor(ctx->nranks);
    *cur = src;
    if (r >= 2 * rem) return HCCL_SUCCESS;
    hccl_xfer x = r % 2 == 0 ? (hccl_xfer){HCCL_XFER_SEND, r + 1, (void *)src, w * es}
                             : (hccl_xfer){HCCL_XFER_RECV, r - 1, tmp, w * es};
    CHECK(ctx->net->exchange(ctx->net, &x, 1));
    if (r % 2) {
        fn(dst, tmp, src, w);
        *cur = dst;
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_net_unfold(hccl_algo_ctx *ctx, char *dst, size_t bytes)
{
    const uint32_t r = ctx->rank, rem = ctx->nranks - hccl_pattern_pow2_floor(ctx->nranks);
    if (r >= 2 * rem) return HCCL_SUCCESS;
    hccl_xfer x = r % 2 ? (hccl_xfer){HCCL_XFER_SEND, r - 1, dst, bytes} : (hccl_xfer){HCCL_XFER_RECV, r + 1, dst, bytes};
    return ctx->net->exchange(ctx->net, &x, 1);
}

HcclResult hccl_net_allgather_open(const hccl_algo_ctx *ctx, const hccl_op_args *a, hccl_blocks *b)
{
    const size_t es = hccl_dtype_size(a->dtype);
    const int v = a->type == HCCL_OP_ALLGATHER_V;
    if (es == 0 || (v && (!a->recv_counts || !a->recv_displs))) return HCCL_E_PARA;
    *b = (hccl_blocks){a->recvbuf, es, ctx->nranks, a->count, v ? a->recv_counts : NULL, v ? a->recv_displs : NULL};
    uint64_t mine = hccl_blocks_count(b, ctx->rank);
    if (mine != a->count) {
        HCCL_WARN(COLL, "allgatherv: sendCount %llu differs from recvCounts[%u] = %llu", (unsigned long long)a->count,
                  ctx->rank, (unsigned long long)mine);
        return HCCL_E_PARA;
    }
    char *dst = hccl_blocks_ptr(b, ctx->rank);
    if (mine && (const char *)a->sendbuf != dst) memmove(dst, a->sendbuf, mine * es);
    return HCCL_SUCCESS;
}

void hccl_blocks_of_reduce_scatter(const hccl_op_args *a, uint32_t n, size_t es, hccl_blocks *b)
{
    int v = a->type == HCCL_OP_REDUCE_SCATTER_V;
    *b = (hccl_blocks){(char *)a->sendbuf, es, n, a->count, v ? a->send_counts : NULL, v ? a->send_displs : NULL};
}
