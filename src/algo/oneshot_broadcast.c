/*
 * oneshot_broadcast.c - small Broadcast in one round, eager: the root sends and returns.
 *
 *   the root:      send buf to every peer (the transport copies it into its buffers)
 *   every other:   receive buf from the root
 *
 * The root does not wait for anyone: a loop of broadcasts from one root runs like
 * MPI's eager sends, the root ahead by as many messages as the connections buffer,
 * and ranks that share CPUs need not all be scheduled once per broadcast. That costs
 * the synchronous root check that the reference and direct broadcasts still make
 * (their empty all-to-all, besides the data rounds). What remains, with every message
 * header carrying the operation number, root, count and dtype:
 *   - a receiver whose count, dtype or root differs from the root's fails at once,
 *     and its abort fails the other ranks' next operation;
 *   - a receiver that waits for a rank that did not act as root fails when that rank's
 *     next message arrives (its next collective, or its abort), and names the rank
 *     that did act as root where its message is there (net.c, mismatch);
 *   - a rank that wrongly acted as root fails at its next operation with the peer
 *     that finds its message there;
 *   - when no rank acted as root, every rank waits in the broadcast until
 *     HCCL_EXEC_TIMEOUT, whose report gives the root each rank passed.
 * (docs/debugging.md.) Chosen on one host for small sizes only: the root copies its
 * buffer once per peer.
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
    hccl_xfer x[64];
    int k = 0;
    if (r != root) {
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, root, a->recvbuf, bytes};
    } else {
        for (uint32_t d = 1; d < n; d++) x[k++] = (hccl_xfer){HCCL_XFER_SEND, (r + d) % n, a->recvbuf, bytes};
    }
    return ctx->net->exchange(ctx->net, x, k);
}
