/*
 * bruck_alltoall.c - AlltoAll by Bruck's algorithm: ceil(log2 n) rounds instead of
 * the pairwise schedule's n-1, at the price of sending about half of the data in
 * every round (for small blocks, where rounds cost more than bytes).
 *
 * Per window of the blocks (pieces of `cw` elements; slots of one piece each):
 *   rotate:  slot i = the piece for rank r+i (mod n)
 *   step k = 0..ceil(log2 n)-1 (one exchange): the slots whose index has bit k set
 *            are packed, sent to r + 2^k, and replaced by the ones received from
 *            r - 2^k (pattern.h);
 *   unrotate: slot i now holds the piece rank r-i sent us: it goes to block r-i.
 * A piece in slot i travels i ranks forward, one power of two per set bit, so slot
 * i of rank r ends holding what rank r-i had for rank r.
 *
 * Scratch: n slots plus two pack buffers of ceil(n/2) slots, so cw = scratch / (2n
 * (+1) elements). Everything of a window is read into the slots before anything of it
 * is written back, so sendbuf == recvbuf works. AlltoAllV and VC are not uniform;
 * they run the pairwise schedule. Count 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_algo_bruck_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    if (a->type != HCCL_OP_ALLTOALL) return hccl_algo_pairwise_alltoall(ctx, a);
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0) return HCCL_E_PARA;
    const uint64_t count = a->count;
    if (count == 0) return HCCL_SUCCESS;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    if (n == 1) {
        if (src != dst) memmove(dst, src, count * es);
        return HCCL_SUCCESS;
    }
    const uint32_t half = (n + 1) / 2, steps = hccl_pattern_log2_ceil(n);
    const uint64_t cw = HCCL_ALGO_SCRATCH_BYTES / (((uint64_t)n + 2 * half) * es);
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES || cw == 0) return HCCL_E_PARA;
    for (uint64_t base = 0; base < count; base += cw) {
        const size_t len = (size_t)HCCL_MIN(cw, count - base) * es;
        char *slot = ctx->scratch, *spk = slot + (size_t)n * len, *rpk = spk + (size_t)half * len;
        for (uint32_t i = 0; i < n; i++) memcpy(slot + i * len, src + (((r + i) % n) * count + base) * es, len);
        for (uint32_t k = 0; k < steps; k++) {
            uint32_t to, from, m = 0;
            hccl_pattern_bruck_a2a_peers(r, n, k, &to, &from);
            for (uint32_t i = 1; i < n; i++)
                if (i >> k & 1) memcpy(spk + (m++) * len, slot + i * len, len);
            hccl_xfer x[2] = {{HCCL_XFER_SEND, to, spk, m * len}, {HCCL_XFER_RECV, from, rpk, m * len}};
            CHECK(ctx->net->exchange(ctx->net, x, 2));
            m = 0;
            for (uint32_t i = 1; i < n; i++)
                if (i >> k & 1) memcpy(slot + i * len, rpk + (m++) * len, len);
        }
        for (uint32_t i = 0; i < n; i++)
            memcpy(dst + (((r + n - i) % n) * count + base) * es, slot + i * len, len);
    }
    return HCCL_SUCCESS;
}
