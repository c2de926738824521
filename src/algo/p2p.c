/*
 * p2p.c - Send, Recv and BatchSendRecv.
 *
 * Send / Recv: one transfer of count elements to / from `root`, the peer (from
 * sendbuf / into recvbuf; either buffer field is accepted when the other is NULL).
 * BatchSendRecv: every item to another rank becomes one transfer (bytes = count *
 * size of the item's dtype) and all of them are posted in a single exchange, so the
 * order of the items between peers cannot deadlock; items to the rank itself are
 * matched locally, k-th send with k-th receive, by a copy. Zero-byte items and count
 * 0 post nothing (both sides know the counts).
 */
#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

static HcclResult batch(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    if (a->nitems == 0) return HCCL_SUCCESS;
    if (!a->items) return HCCL_E_PARA;
    hccl_xfer *x = hccl_malloc((size_t)a->nitems * sizeof(*x));
    if (!x) return HCCL_E_MEMORY;
    HcclResult res = HCCL_SUCCESS;
    int nx = 0;
    uint32_t next_self_recv = 0;
    for (uint32_t i = 0; i < a->nitems; i++) {
        const HcclSendRecvItem *it = &a->items[i];
        const size_t es = hccl_dtype_size(it->dataType);
        if (es == 0 || it->remoteRank >= n ||
            (it->sendRecvType != HCCL_SEND && it->sendRecvType != HCCL_RECV)) {
            HCCL_WARN(COLL, "batchsendrecv: bad item %u (type %d, dtype %d, peer %u)", i, (int)it->sendRecvType,
                      (int)it->dataType, it->remoteRank);
            res = HCCL_E_PARA;
            goto out;
        }
        const size_t bytes = it->count * es;
        if (bytes == 0) continue;
        if (it->remoteRank != r) {
            x[nx++] = (hccl_xfer){it->sendRecvType == HCCL_SEND ? HCCL_XFER_SEND : HCCL_XFER_RECV, it->remoteRank,
                                  it->buf, bytes};
            continue;
        }
        if (it->sendRecvType != HCCL_SEND) continue;
        /* Self send: copy into the next self receive with data. */
        for (; next_self_recv < a->nitems; next_self_recv++) {
            const HcclSendRecvItem *q = &a->items[next_self_recv];
            if (q->remoteRank == r && q->sendRecvType == HCCL_RECV && q->count * hccl_dtype_size(q->dataType) > 0)
                break;
        }
        if (next_self_recv == a->nitems ||
            a->items[next_self_recv].count * hccl_dtype_size(a->items[next_self_recv].dataType) != bytes) {
            HCCL_WARN(COLL, "batchsendrecv: self send item %u has no matching self receive", i);
            res = HCCL_E_PARA;
            goto out;
        }
        memmove(a->items[next_self_recv].buf, it->buf, bytes);
        next_self_recv++;
    }
    /* Self receives left over have no matching send. */
    for (; next_self_recv < a->nitems; next_self_recv++) {
        const HcclSendRecvItem *q = &a->items[next_self_recv];
        if (q->remoteRank == r && q->sendRecvType == HCCL_RECV && q->count * hccl_dtype_size(q->dataType) > 0) {
            HCCL_WARN(COLL, "batchsendrecv: self receive item %u has no matching self send", next_self_recv);
            res = HCCL_E_PARA;
            goto out;
        }
    }
    if (nx) res = ctx->net->exchange(ctx->net, x, nx);
out:
    hccl_free(x);
    return res;
}

HcclResult hccl_algo_p2p(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    if (a->type == HCCL_OP_BATCH_SEND_RECV) return batch(ctx, a);
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0 || a->root >= ctx->nranks || (a->type != HCCL_OP_SEND && a->type != HCCL_OP_RECV))
        return HCCL_E_PARA;
    if (a->count == 0) return HCCL_SUCCESS;
    if (a->root == ctx->rank) {
        HCCL_WARN(COLL, "%s to the rank itself", hccl_op_name(a->type));
        return HCCL_E_PARA;
    }
    hccl_xfer x = {a->type == HCCL_OP_SEND ? HCCL_XFER_SEND : HCCL_XFER_RECV, a->root,
                   a->type == HCCL_OP_SEND ? (void *)(a->sendbuf ? a->sendbuf : a->recvbuf)
                                           : (a->recvbuf ? a->recvbuf : (void *)a->sendbuf),
                   a->count * es};
    CHECK(ctx->net->exchange(ctx->net, &x, 1));
    return HCCL_SUCCESS;
}
