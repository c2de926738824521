/*
 * oneshot_broadcast.c - small Broadcast in one round that is also the agreement.
 *
 *   the root:      send buf to every peer, receive an empty message from each
 *   every other:   receive buf from the root, send an empty message to every peer
 *                  and receive one from every non-root
 *
 * A rooted operation needs every pair of ranks to exchange a message (a rank that
 * wrongly believes it is the root receives nothing, and would return with its own
 * buffer unchanged): the reference and direct broadcasts run an empty all-to-all for
 * it besides their data rounds. Here the root's data messages are its part of that
 * all-to-all, so a disagreement about the root or the count still fails this very
 * operation on every rank (the message headers differ), in one round.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"

HcclResult hccl_algo_oneshot_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank, root = a->root;
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || n > 64 || root >= n) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es;
    if (bytes == 0 || n == 1) return HCCL_SUCCESS;
    hccl_xfer x[2 * 64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n;
        x[k++] = r == root ? (hccl_xfer){HCCL_XFER_SEND, j, a->recvbuf, bytes} : (hccl_xfer){HCCL_XFER_SEND, j, NULL, 0};
        x[k++] = j == root ? (hccl_xfer){HCCL_XFER_RECV, j, a->recvbuf, bytes} : (hccl_xfer){HCCL_XFER_RECV, j, NULL, 0};
    }
    return ctx->net->exchange(ctx->net, x, k);
}
