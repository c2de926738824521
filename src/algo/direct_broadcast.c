/*
 * direct_broadcast.c - broadcast between ranks of one host: every rank pulls the
 * root's buffer straight into its own (one copy per byte and reader).
 *
 *   1. all-to-all of buffer addresses          [the root's data is ready]
 *   2. every non-root copies root's buf -> buf
 *   3. empty all-to-all                        [the root keeps its buffer until all read]
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"

HcclResult hccl_algo_direct_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || ctx->nranks > HCCL_DIRECT_MAX_RANKS || !ctx->net->peer_copy) return HCCL_E_PARA;
    hccl_direct_addrs *peer = ctx->scratch;
    hccl_direct_addrs me = {(uint64_t)(uintptr_t)a->recvbuf, 0};
    HcclResult res = hccl_direct_open(ctx, me, peer);
    if (res != HCCL_SUCCESS) return res;
    if (ctx->rank != a->root) {
        res = hccl_direct_copy(ctx, a->root, 0, a->recvbuf, peer[a->root].send, (size_t)a->count * es);
        if (res != HCCL_SUCCESS) return res;
    }
    return hccl_direct_close(ctx);
}
