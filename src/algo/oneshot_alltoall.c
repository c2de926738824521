/*
 * oneshot_alltoall.c - small AlltoAll in one round.
 *
 *   every rank r:  copy its n send blocks into scratch, its own block from there to
 *                  block r of recvbuf, then send block j to rank j and receive rank
 *                  j's block into block j of recvbuf, for every j, in one exchange.
 *
 * One round of messages where the pairwise schedule takes n-1 (each waiting for its
 * peer to be scheduled: what counts for small blocks, above all when ranks share
 * CPUs). Sending from the copy in scratch lets recvbuf be sendbuf (in place) or
 * overlap it. Chosen for AlltoAll (uniform blocks) on one host while the n blocks
 * fit the scratch and are small.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"

#include <string.h>

HcclResult hccl_algo_oneshot_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || n > 64 || a->type != HCCL_OP_ALLTOALL) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es;
    if (bytes == 0) return HCCL_SUCCESS;
    if (bytes * n > ctx->scratch_bytes) return HCCL_E_INTERNAL; /* selection keeps it small */
    char *s = ctx->scratch, *out = a->recvbuf;
    memcpy(s, a->sendbuf, bytes * n);
    memcpy(out + bytes * r, s + bytes * r, bytes);
    hccl_xfer x[2 * 64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n, from = (r + n - d) % n;
        x[k++] = (hccl_xfer){HCCL_XFER_SEND, j, s + bytes * j, bytes};
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, from, out + bytes * from, bytes};
    }
    return k ? ctx->net->exchange(ctx->net, x, k) : HCCL_SUCCESS;
}
