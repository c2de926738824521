/*
 * dissemination_barrier.c - reference Barrier (Hensgen, Finkel and Manber).
 *
 *   round k = 0..ceil(log2 n)-1 (one exchange each): send a zero-byte message to
 *   (r + 2^k) mod n and receive one from (r - 2^k) mod n.
 *
 * After round k every rank has heard, directly or not, from the 2^(k+1) ranks before
 * it, so after the last round no rank leaves before all have arrived.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "util/log.h"

HcclResult hccl_algo_dissemination_barrier(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    (void)a;
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const uint32_t rounds = hccl_pattern_log2_ceil(n);
    static char token; /* zero-byte messages still carry a valid pointer */
    for (uint32_t k = 0; k < rounds; k++) {
        uint32_t to, from;
        hccl_pattern_dissem_peers(r, n, k, &to, &from);
        hccl_xfer x[2] = {{HCCL_XFER_SEND, to, &token, 0}, {HCCL_XFER_RECV, from, &token, 0}};
        CHECK(ctx->net->exchange(ctx->net, x, 2));
    }
    return HCCL_SUCCESS;
}
