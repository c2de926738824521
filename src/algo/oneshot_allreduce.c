/*
 * oneshot_allreduce.c - small-message allreduce in one round.
 *
 *   every rank r:  send sendbuf to every peer, receive every peer's input into
 *                  scratch slot j, then reduce inputs 0, 1, ..., n-1 in rank order
 *                  into recvbuf (its own read in place, or from a copy in slot r
 *                  when the result would overwrite it first).
 *
 * One message latency instead of the ring's 2(n-1), at the price of (n-1) x the
 * bytes; chosen for small inputs only (n * bytes fits the scratch). Every rank reduces
 * in the same order, so every rank gets bitwise the same result, run after run.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"

#include <string.h>

HcclResult hccl_algo_oneshot_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    size_t bytes = (size_t)a->count * es;
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (!fn || !es) return HCCL_E_PARA;
    if (bytes == 0) return HCCL_SUCCESS;
    size_t slot = (bytes + 63) & ~(size_t)63;
    if (slot * n > ctx->scratch_bytes) return HCCL_E_INTERNAL;
    char *s = ctx->scratch;
    if (n > 1) {
        hccl_xfer x[2 * 64];
        hccl_xfer *xs = x;
        if (n > 64) return HCCL_E_INTERNAL; /* selection keeps oneshot to n <= 64 */
        int k = 0;
        for (uint32_t j = 0; j < n; j++) {
            if (j == r) continue;
            xs[k++] = (hccl_xfer){HCCL_XFER_SEND, j, (void *)a->sendbuf, bytes};
            xs[k++] = (hccl_xfer){HCCL_XFER_RECV, j, s + slot * j, bytes};
        }
        HcclResult res = ctx->net->exchange(ctx->net, xs, k);
        if (res != HCCL_SUCCESS) return res;
    }
    if (n == 1) {
        if (a->recvbuf != a->sendbuf) memmove(a->recvbuf, a->sendbuf, bytes);
        return HCCL_SUCCESS;
    }
    hccl_reduce_in_order_own(fn, a->recvbuf, s, slot, n, a->count, bytes, r, a->sendbuf);
    return HCCL_SUCCESS;
}
