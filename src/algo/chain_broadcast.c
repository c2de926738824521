/*
 * chain_broadcast.c - Broadcast down a pipelined chain: root -> root+1 -> ... ->
 * root+n-1 (mod n), the buffer cut in segments so that every link of the chain
 * carries a different segment at the same time.
 *
 * With position q = (r - root) mod n and nseg segments, step t = 0..nseg+n-3 (one
 * exchange each): q > 0 receives segment t-q+1 from q-1, q < n-1 sends segment t-q
 * to q+1 (pattern.h), straight between the buffers. nseg+n-2 rounds of one segment:
 * for large buffers about one buffer's time on the slowest link, against ceil(log2 n)
 * buffers for the binomial tree. The segment size is the cost model's optimum
 * (hccl_algo_chain_segment: sqrt of the ratio of latency to per-byte cost, times
 * the rest of the chain), the same on every rank. Count 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

HcclResult hccl_algo_chain_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0 || a->root >= n) return HCCL_E_PARA;
    if (a->count == 0 || n == 1) return HCCL_SUCCESS;
    const uint64_t seg = hccl_algo_chain_segment(n, a->count, es, 0, hccl_algo_link(ctx));
    const uint64_t nseg = (a->count + seg - 1) / seg, steps = hccl_pattern_chain_steps(n, nseg);
    const uint32_t q = hccl_pattern_rel_rank(r, a->root, n);
    const uint32_t prev = hccl_pattern_abs_rank(q + n - 1, a->root, n), next = hccl_pattern_abs_rank(q + 1, a->root, n);
    char *buf = a->recvbuf;
    for (uint64_t t = 0; t < steps; t++) {
        int64_t rs = hccl_pattern_chain_recv_seg(q, n, nseg, t), ss = hccl_pattern_chain_send_seg(q, n, nseg, t);
        hccl_xfer x[2];
        int nx = 0;
        if (ss >= 0) {
            uint64_t off = (uint64_t)ss * seg;
            x[nx++] = (hccl_xfer){HCCL_XFER_SEND, next, buf + off * es, HCCL_MIN(seg, a->count - off) * es};
        }
        if (rs >= 0) {
            uint64_t off = (uint64_t)rs * seg;
            x[nx++] = (hccl_xfer){HCCL_XFER_RECV, prev, buf + off * es, HCCL_MIN(seg, a->count - off) * es};
        }
        if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
    }
    return HCCL_SUCCESS;
}
