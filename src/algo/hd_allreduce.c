/*
 * hd_allreduce.c - AllReduce by recursive halving-doubling (Rabenseifner): a
 * reduce-scatter by recursive halving, then an allgather by recursive doubling, for
 * any number of ranks.
 *
 * The n ranks fold onto p = 2^floor(log2 n) virtual ranks (pattern.h): with rem =
 * n - p, ranks 2i and 2i+1 (i < rem) pair up, the even one sends its whole input to
 * the odd one, which reduces (x_2i op x_2i+1) and acts as virtual rank i; rank r >=
 * 2*rem is virtual rank r - rem. A window of the vector is cut in p blocks (pattern.h
 * block split; blocks may be empty), and
 *
 *   halving, step s = 0..log2(p)-1: partner v ^ (p >> (s+1)); send the half of the
 *       blocks still held that the partner keeps, receive the other half into scratch
 *       and reduce: recvbuf = lower virtual rank's partial op higher one's;
 *       after it virtual rank v holds block v fully reduced;
 *   doubling, step s = 0..log2(p)-1: partner v ^ 2^s; swap the aligned groups of
 *       2^s reduced blocks, straight between the recvbufs;
 *   unfold: 2i+1 sends the whole result to 2i.
 *
 * 2 log2(p) rounds (+2 with a fold), (p-1)/p of the vector sent twice per rank (+ the
 * whole vector twice by the folded pairs). Every element is reduced once, at its
 * block's owner, in an order fixed by n alone, so the result is bitwise the same on
 * every rank and in every run.
 *
 * Windows: p blocks of HCCL_ALGO_RING_BLOCK_BYTES (in cache, as the ring's), at most
 * what the scratch allows (it receives at most half a window, the whole window for
 * the fold's odd rank), rounded down to a multiple of p.
 * Reads of sendbuf happen before the writes of the same elements of recvbuf, so
 * sendbuf == recvbuf works. Empty blocks are skipped on both sides; count 0 sends
 * nothing.
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

/* Elements [off, off+len) of virtual blocks [lo, lo + nb) of a window of w elements. */
static void span(uint64_t w, uint32_t p, uint32_t lo, uint32_t nb, uint64_t *off, uint64_t *len)
{
    uint64_t o1, l1;
    hccl_pattern_block(w, p, lo, off, &l1);
    hccl_pattern_block(w, p, lo + nb - 1, &o1, &l1);
    *len = o1 + l1 - *off;
}

HcclResult hccl_algo_hd_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es;
    hccl_reduce_fn fn;
    int done;
    CHECK(hccl_net_reduce_open(ctx, a, "allreduce", &es, &fn, &done));
    if (done) return HCCL_SUCCESS;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    const uint32_t p = hccl_pattern_pow2_floor(n), rem = n - p, steps = hccl_pattern_log2_floor(n);
    const int64_t v = hccl_pattern_fold_vrank(r, n);
    /* A multiple of p, so the halves of a full window are equal (and of a partial one
     * no larger). */
    const uint64_t fit = (uint64_t)HCCL_ALGO_SCRATCH_BYTES * (rem ? 1 : 2);
    const uint64_t window = HCCL_MIN((uint64_t)HCCL_ALGO_RING_BLOCK_BYTES * p, fit) / es / p * p;
    char *tmp = ctx->scratch;

    for (uint64_t base = 0; base < a->count; base += window) {
        const uint64_t w = HCCL_MIN(window, a->count - base);
        const char *cur;
        char *wdst = dst + base * es;
        CHECK(hccl_net_fold(ctx, fn, src + base * es, wdst, tmp, w, es, &cur));
        for (uint32_t s = 0; v >= 0 && s < steps; s++) {
            uint32_t pv, klo, slo, nb;
            hccl_pattern_halving_step((uint32_t)v, p, s, &pv, &klo, &slo, &nb);
            uint64_t koff, klen, soff, slen;
            span(w, p, klo, nb, &koff, &klen);
            span(w, p, slo, nb, &soff, &slen);
            const uint32_t peer = hccl_pattern_fold_rank(pv, n);
            hccl_xfer x[2];
            int nx = 0;
            if (slen) x[nx++] = (hccl_xfer){HCCL_XFER_SEND, peer, (void *)(cur + soff * es), slen * es};
            if (klen) x[nx++] = (hccl_xfer){HCCL_XFER_RECV, peer, tmp, klen * es};
            if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
            if (klen) {
                if ((uint32_t)v < pv) fn(wdst + koff * es, cur + koff * es, tmp, klen);
                else fn(wdst + koff * es, tmp, cur + koff * es, klen);
            }
            cur = wdst;
        }
        for (uint32_t s = 0; v >= 0 && s < steps; s++) {
            uint32_t pv, slo, rlo, nb;
            hccl_pattern_doubling_step((uint32_t)v, s, &pv, &slo, &rlo, &nb);
            uint64_t soff, slen, roff, rlen;
            span(w, p, slo, nb, &soff, &slen);
            span(w, p, rlo, nb, &roff, &rlen);
            const uint32_t peer = hccl_pattern_fold_rank(pv, n);
            hccl_xfer x[2];
            int nx = 0;
            if (slen) x[nx++] = (hccl_xfer){HCCL_XFER_SEND, peer, wdst + soff * es, slen * es};
            if (rlen) x[nx++] = (hccl_xfer){HCCL_XFER_RECV, peer, wdst + roff * es, rlen * es};
            if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
        }
        CHECK(hccl_net_unfold(ctx, wdst, w * es));
    }
    return HCCL_SUCCESS;
}
