/*
 * oneshot_reduce.c - small Reduce in one round, eager: the inputs go to the root.
 *
 *   every other rank:  send sendbuf to the root (the transport copies it into its
 *                      buffers) and return
 *   the root:          every peer's input into scratch slot j, then inputs 0, 1, ...,
 *                      n-1 reduced in rank order into recvbuf (its own read in place,
 *                      or from a copy in slot root when the result would overwrite it
 *                      first)
 *
 * The ranks that are not the root do not wait for anyone, as with the eager
 * Broadcast (oneshot_broadcast.c, which also says what a disagreement about the root
 * does: here a rank that sends to a rank that is not the root leaves the root
 * waiting for its input until its next message arrives, and its message is found at
 * the wrong rank's next operation). Every run reduces in the same order, so the
 * result is bitwise the same run to run. Chosen on one host while the root takes at
 * most 256 KiB in all and n slots fit the scratch.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <string.h>

HcclResult hccl_algo_oneshot_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank, root = a->root;
    size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (!fn || !es || n > 64 || root >= n) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es;
    if (bytes == 0) return HCCL_SUCCESS;
    if (n == 1) {
        if (a->recvbuf != a->sendbuf) memmove(a->recvbuf, a->sendbuf, bytes);
        return HCCL_SUCCESS;
    }
    if (r != root) {
        hccl_xfer x = {HCCL_XFER_SEND, root, (void *)a->sendbuf, bytes};
        return ctx->net->exchange(ctx->net, &x, 1);
    }
    size_t slot = (bytes + 63) & ~(size_t)63;
    if (slot * n > ctx->scratch_bytes) return HCCL_E_INTERNAL; /* selection keeps it small */
    char *s = ctx->scratch;
    hccl_xfer x[64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n;
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, j, s + slot * j, bytes};
    }
    CHECK(ctx->net->exchange(ctx->net, x, k));
    hccl_reduce_in_order_own(fn, a->recvbuf, s, slot, n, a->count, bytes, r, a->sendbuf);
    return HCCL_SUCCESS;
}
