/*
 * hd_allgather.c - AllGather and AllGatherV by recursive doubling, any number of ranks.
 *
 * The n ranks fold onto p = 2^floor(log2 n) virtual ranks (pattern.h): with rem =
 * n - p, ranks 2i and 2i+1 (i < rem) pair up, the even one hands its block to the odd
 * one and waits; virtual rank v then holds the real blocks [first(v), first(v+1)).
 *
 *   fold      (rem > 0): 2i sends block 2i to 2i+1
 *   step s = 0..log2(p)-1 (one exchange each): v and v ^ 2^s swap the blocks of their
 *             aligned groups of 2^s virtual ranks, straight from / into recvbuf
 *   unfold    (rem > 0): 2i+1 sends every block but 2i's to 2i
 *
 * ceil(log2 n) + (rem > 0) rounds; bytes sent per rank (n-1)/n of the result on a
 * power of two, plus the unfold's whole result otherwise (the cost model weighs this
 * against ring and Bruck). Uniform layouts move each run of blocks in one message,
 * V layouts one message per non-empty block. Count 0 everywhere sends nothing.
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

HcclResult hccl_algo_hd_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    hccl_blocks b;
    CHECK(hccl_net_allgather_open(ctx, a, &b));
    if (n == 1) return HCCL_SUCCESS;
    const uint32_t p = hccl_pattern_pow2_floor(n), rem = n - p, steps = hccl_pattern_log2_floor(n);
    const int64_t v = hccl_pattern_fold_vrank(r, n);
    hccl_xfer *x = hccl_malloc(sizeof(hccl_xfer) * 2 * (size_t)n);
    if (!x) return HCCL_E_MEMORY;
    HcclResult res = HCCL_SUCCESS;
    int k = 0;
    if (r < 2 * rem) { /* fold */
        k = r % 2 == 0 ? hccl_blocks_xfers(&b, r, 1, HCCL_XFER_SEND, r + 1, x)
                       : hccl_blocks_xfers(&b, r - 1, 1, HCCL_XFER_RECV, r - 1, x);
        if (k) res = ctx->net->exchange(ctx->net, x, k);
    }
    for (uint32_t s = 0; v >= 0 && s < steps && res == HCCL_SUCCESS; s++) {
        uint32_t pv, slo, rlo, nb;
        hccl_pattern_doubling_step((uint32_t)v, s, &pv, &slo, &rlo, &nb);
        uint32_t peer = hccl_pattern_fold_rank(pv, n);
        uint32_t s0 = hccl_pattern_fold_first(slo, n), s1 = hccl_pattern_fold_first(slo + nb, n);
        uint32_t r0 = hccl_pattern_fold_first(rlo, n), r1 = hccl_pattern_fold_first(rlo + nb, n);
        k = hccl_blocks_xfers(&b, s0, s1 - s0, HCCL_XFER_SEND, peer, x);
        k += hccl_blocks_xfers(&b, r0, r1 - r0, HCCL_XFER_RECV, peer, x + k);
        if (k) res = ctx->net->exchange(ctx->net, x, k);
    }
    if (r < 2 * rem && res == HCCL_SUCCESS) { /* unfold: everything but the even rank's own block */
        uint32_t even = r - r % 2;
        hccl_xfer_dir dir = r % 2 ? HCCL_XFER_SEND : HCCL_XFER_RECV;
        uint32_t peer = r % 2 ? r - 1 : r + 1;
        k = hccl_blocks_xfers(&b, 0, even, dir, peer, x);
        k += hccl_blocks_xfers(&b, even + 1, n - even - 1, dir, peer, x + k);
        if (k) res = ctx->net->exchange(ctx->net, x, k);
    }
    hccl_free(x);
    return res;
}
