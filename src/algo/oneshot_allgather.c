/*
 * oneshot_allgather.c - small AllGather(V) in one round.
 *
 *   every rank r:  copy its input into its own slot of recvbuf, then send that slot
 *                  to every peer and receive every peer's block straight into slot j.
 *
 * One round of messages, where the direct algorithm needs two (the all-to-all of
 * buffer addresses, then the empty one that keeps a rank from leaving while a peer
 * still reads its input) and the ring n-1: what counts for small blocks, above all
 * when ranks share cores and every round waits for each of them to be scheduled.
 * Chosen for small totals only (each rank sends its block n-1 times). Blocks of 0
 * bytes send nothing: every rank knows every block's size (the same counts).
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "util/log.h"

HcclResult hccl_algo_oneshot_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    if (n > 64) return HCCL_E_PARA;
    hccl_blocks b;
    CHECK(hccl_net_allgather_open(ctx, a, &b)); /* our input into our own block */
    hccl_xfer x[2 * 64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n;
        k += hccl_blocks_xfers(&b, r, 1, HCCL_XFER_SEND, j, x + k);
        k += hccl_blocks_xfers(&b, j, 1, HCCL_XFER_RECV, j, x + k);
    }
    return k ? ctx->net->exchange(ctx->net, x, k) : HCCL_SUCCESS;
}
