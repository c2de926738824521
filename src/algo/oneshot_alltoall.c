/*
 * oneshot_alltoall.c - small AlltoAll in one round.
 *
 *   every rank r:  when recvbuf overlaps sendbuf (in place), copy the n send blocks
 *                  into scratch and send from there; then its own block to block r
 *                  of recvbuf, send block j to rank j and receive rank j's block into
 *                  block j of recvbuf, for every j, in one exchange.
 *
 * One round of messages where the pairwise schedule takes n-1 (each waiting for its
 * peer to be scheduled: what counts for small blocks, above all when ranks share
 * CPUs). The copy in scratch lets recvbuf be sendbuf or overlap it; apart, the blocks
 * go straight from sendbuf (one copy fewer, and no scratch pages touched: 4 ranks on
 * 2 cores, 128 KiB in all, the first call after smaller sizes took 0.9 ms with the
 * copy, its 24 new scratch pages costing a page fault each; docs/performance.md).
 * Chosen for AlltoAll (uniform blocks) on one host while the n blocks fit the scratch
 * and are small (algo.c).
 */
#include "algo/algo.h"
#include "reduce/reduce.h"

#include <stdint.h>
#include <string.h>

HcclResult hccl_algo_oneshot_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || n > 64 || a->type != HCCL_OP_ALLTOALL) return HCCL_E_PARA;
    size_t bytes = (size_t)a->count * es;
    if (bytes == 0) return HCCL_SUCCESS;
    if (bytes * n > ctx->scratch_bytes) return HCCL_E_INTERNAL; /* selection keeps it small */
    const char *s = a->sendbuf;
    char *out = a->recvbuf;
    const uintptr_t s0 = (uintptr_t)s, d0 = (uintptr_t)out, span = bytes * n;
    if (s0 < d0 + span && d0 < s0 + span) {
        memcpy(ctx->scratch, s, span);
        s = ctx->scratch;
    }
    memcpy(out + bytes * r, s + bytes * r, bytes);
    hccl_xfer x[2 * 64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n, from = (r + n - d) % n;
        x[k++] = (hccl_xfer){HCCL_XFER_SEND, j, (void *)(s + bytes * j), bytes};
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, from, out + bytes * from, bytes};
    }
    return k ? ctx->net->exchange(ctx->net, x, k) : HCCL_SUCCESS;
}
