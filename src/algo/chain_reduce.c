/*
 * chain_reduce.c - Reduce up a pipelined chain: root+n-1 -> root+n-2 -> ... -> root
 * (mod n), the buffer cut in segments so that every link carries a different segment
 * at the same time.
 *
 * Position q = n-1 - ((r - root) mod n) (the chain's head is q = 0, the root q =
 * n-1); with nseg segments, step t = 0..nseg+n-3 (one exchange each): q > 0 receives
 * the partial of segment t-q+1 from q-1 into scratch half 1, q < n-1 sends segment t-q
 * to q+1 (the head straight from sendbuf, the others their partial in scratch half
 * 0), then q > 0 folds what it received: partial = x_r op received (the root writes
 * recvbuf). The partial sent at step t was made at step t-1, so each of the two
 * halves holds one segment. The root's result is x_root op (x_root+1 op (... op
 * x_root+n-1)): an order fixed by n, bitwise the same in every run. Segments are the
 * cost model's (hccl_algo_chain_segment), at most half the scratch. Non-root ranks
 * never touch recvbuf; sendbuf == recvbuf works at the root. Count 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_algo_chain_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es;
    hccl_reduce_fn fn;
    int done;
    CHECK(hccl_net_reduce_open(ctx, a, "reduce", &es, &fn, &done));
    if (done) return HCCL_SUCCESS;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    const uint64_t seg = HCCL_MIN(hccl_algo_chain_segment(n, a->count, es, 1, hccl_algo_link(ctx)),
                                  HCCL_ALGO_SCRATCH_BYTES / 2 / es);
    const uint64_t nseg = (a->count + seg - 1) / seg, steps = hccl_pattern_chain_steps(n, nseg);
    const uint32_t v = hccl_pattern_rel_rank(r, a->root, n), q = n - 1 - v;
    const uint32_t prev = hccl_pattern_abs_rank(v + 1, a->root, n), next = hccl_pattern_abs_rank(v + n - 1, a->root, n);
    char *acc = ctx->scratch, *in = acc + seg * es;
    for (uint64_t t = 0; t < steps; t++) {
        int64_t rs = hccl_pattern_chain_recv_seg(q, n, nseg, t), ss = hccl_pattern_chain_send_seg(q, n, nseg, t);
        hccl_xfer x[2];
        int nx = 0;
        uint64_t roff = 0, rlen = 0;
        if (ss >= 0) {
            uint64_t off = (uint64_t)ss * seg;
            x[nx++] = (hccl_xfer){HCCL_XFER_SEND, next, q == 0 ? (void *)(src + off * es) : acc,
                                  HCCL_MIN(seg, a->count - off) * es};
        }
        if (rs >= 0) {
            roff = (uint64_t)rs * seg;
            rlen = HCCL_MIN(seg, a->count - roff);
            x[nx++] = (hccl_xfer){HCCL_XFER_RECV, prev, in, rlen * es};
        }
        if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
        if (rlen) fn(q == n - 1 ? dst + roff * es : acc, src + roff * es, in, rlen);
    }
    return HCCL_SUCCESS;
}
