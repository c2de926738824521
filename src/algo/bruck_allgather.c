/*
 * bruck_allgather.c - AllGather and AllGatherV by Bruck's algorithm, any number of
 * ranks, ceil(log2 n) rounds.
 *
 * Before step k rank r holds the 2^k blocks r, r+1, ... (mod n) in their places in
 * recvbuf. Step k (one exchange): send those of them that the receiver lacks, blocks
 * r .. r+cnt-1, to r - 2^k, and receive blocks r+2^k .. r+2^k+cnt-1 from r + 2^k,
 * cnt = min(2^k, n - 2^k) (pattern.h).
 *
 *   n = 5, rank 0:  k=0: has {0}      gets {1}        from 1
 *                   k=1: has {0,1}    gets {2,3}      from 2
 *                   k=2: has {0..3}   gets {4}        from 4
 *
 * Blocks go straight between the recvbufs in their final places (no rotation: the
 * classic version's temporary and final shift are not needed when every block has
 * its place). A run that wraps past block n-1 is two runs; uniform layouts move a run
 * in one message, V layouts one message per non-empty block. Every rank sends (n-1)/n
 * of the result in total, in ceil(log2 n) rounds. Count 0 everywhere sends nothing.
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

/* Transfers for the cyclic run lo, lo+1, ..., lo+cnt-1 (mod n). */
static int cyclic_xfers(const hccl_blocks *b, uint32_t lo, uint32_t cnt, hccl_xfer_dir dir, uint32_t peer,
                        hccl_xfer *x)
{
    uint32_t first = lo + cnt <= b->n ? cnt : b->n - lo;
    int k = hccl_blocks_xfers(b, lo, first, dir, peer, x);
    return k + hccl_blocks_xfers(b, 0, cnt - first, dir, peer, x + k);
}

HcclResult hccl_algo_bruck_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    hccl_blocks b;
    CHECK(hccl_net_allgather_open(ctx, a, &b));
    if (n == 1) return HCCL_SUCCESS;
    hccl_xfer *x = hccl_malloc(sizeof(hccl_xfer) * 2 * (size_t)n);
    if (!x) return HCCL_E_MEMORY;
    HcclResult res = HCCL_SUCCESS;
    const uint32_t steps = hccl_pattern_log2_ceil(n);
    for (uint32_t s = 0; s < steps && res == HCCL_SUCCESS; s++) {
        uint32_t to, from, cnt;
        hccl_pattern_bruck_ag_step(r, n, s, &to, &from, &cnt);
        int k = cyclic_xfers(&b, r, cnt, HCCL_XFER_SEND, to, x);
        k += cyclic_xfers(&b, from, cnt, HCCL_XFER_RECV, from, x + k);
        if (k) res = ctx->net->exchange(ctx->net, x, k);
    }
    hccl_free(x);
    return res;
}
