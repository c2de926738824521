/*
 * oneshot_reduce_scatter.c - small ReduceScatter in one round.
 *
 *   every rank r:  copy block r of its input to scratch slot r, send block j to every
 *                  peer j and receive every peer's block r into scratch slot j, then
 *                  reduce slots 0, 1, ..., n-1 in rank order into recvbuf.
 *
 * One round of messages instead of the direct algorithm's two and the ring's n-1
 * (see oneshot_allgather.c); every rank reduces in the same order, so the result does
 * not depend on timing. Chosen for small inputs only (n blocks of scratch).
 */
#include "algo/algo.h"
#include "reduce/reduce.h"

#include <string.h>

HcclResult hccl_algo_oneshot_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (!fn || !es || n > 64 || a->type != HCCL_OP_REDUCE_SCATTER) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es;
    if (bytes == 0) return HCCL_SUCCESS;
    size_t slot = (bytes + 63) & ~(size_t)63;
    if (slot * n > ctx->scratch_bytes) return HCCL_E_INTERNAL;
    const char *in = a->sendbuf;
    char *s = ctx->scratch;
    /* Our own block first: recvbuf may be that very block (in place). */
    memcpy(s + slot * r, in + bytes * r, bytes);
    if (n == 1) {
        memcpy(a->recvbuf, s, bytes);
        return HCCL_SUCCESS;
    }
    hccl_xfer x[2 * 64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n;
        x[k++] = (hccl_xfer){HCCL_XFER_SEND, j, (void *)(in + bytes * j), bytes};
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, j, s + slot * j, bytes};
    }
    HcclResult res = ctx->net->exchange(ctx->net, x, k);
    if (res != HCCL_SUCCESS) return res;
    hccl_reduce_in_order(fn, a->recvbuf, s, slot, n, a->count);
    return HCCL_SUCCESS;
}
