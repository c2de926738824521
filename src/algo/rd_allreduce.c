/*
 * rd_allreduce.c - AllReduce by recursive doubling, for small vectors.
 *
 * The n ranks fold onto p = 2^floor(log2 n) virtual ranks as in hd_allreduce.c
 * (ranks 2i and 2i+1, i < n - p, pair up: the even one sends its input to the odd
 * one, which reduces and acts as virtual rank i). Then, step s = 0..log2(p)-1,
 * virtual rank v swaps its whole partial result with v ^ 2^s and combines the two as
 * lower virtual rank's op higher one's; finally each odd rank of a pair sends the
 * result to its even partner. Vectors larger than the scratch go window by window.
 *
 * log2(p) rounds (+2 with a fold), each moving the whole vector, against the
 * oneshot's single round of n-1 messages: selected for small vectors when the
 * ranks outnumber the CPUs of their host (ctx->crowded), where every round costs the
 * same few context switches whatever it carries and the oneshot's (n-1) copies and
 * reductions per rank are what a shared CPU pays for. Both partners of a step combine
 * the same two operands in the same order, so every rank gets bitwise the same
 * result, run after run. Reads of sendbuf come before any write of recvbuf (the
 * first combine reads it whole), so sendbuf == recvbuf works.
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

HcclResult hccl_algo_rd_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es;
    hccl_reduce_fn fn;
    int done;
    CHECK(hccl_net_reduce_open(ctx, a, "allreduce", &es, &fn, &done));
    if (done) return HCCL_SUCCESS;
    const uint32_t p = hccl_pattern_pow2_floor(n);
    const int64_t v = hccl_pattern_fold_vrank(r, n);
    const uint64_t window = ctx->scratch_bytes / es;
    char *tmp = ctx->scratch;
    for (uint64_t base = 0; base < a->count; base += window) {
        const uint64_t w = HCCL_MIN(window, a->count - base);
        const size_t bytes = w * es;
        const char *cur;
        char *dst = (char *)a->recvbuf + base * es;
        CHECK(hccl_net_fold(ctx, fn, (const char *)a->sendbuf + base * es, dst, tmp, w, es, &cur));
        for (uint32_t bit = 1; v >= 0 && bit < p; bit <<= 1) {
            const uint32_t pv = (uint32_t)v ^ bit, peer = hccl_pattern_fold_rank(pv, n);
            hccl_xfer x[2] = {{HCCL_XFER_SEND, peer, (void *)cur, bytes}, {HCCL_XFER_RECV, peer, tmp, bytes}};
            CHECK(ctx->net->exchange(ctx->net, x, 2));
            if ((uint32_t)v < pv) fn(dst, cur, tmp, w);
            else fn(dst, tmp, cur, w);
            cur = dst;
        }
        CHECK(hccl_net_unfold(ctx, dst, bytes));
    }
    return HCCL_SUCCESS;
}
