/*
 * ring_allreduce.c - reference AllReduce: ring reduce-scatter, then ring allgather.
 *
 * The data is processed in windows of at most n * chunk elements, chunk being the
 * number of elements in HCCL_ALGO_RING_BLOCK_BYTES (a constant, not the context's
 * scratch size, so that every rank cuts the same windows; it fits the scratch). A window is split into
 * n blocks as evenly as possible (pattern.h; blocks may be empty), and
 *
 *   reduce-scatter, step s = 0..n-2 (one exchange each):
 *       send block r-s-1 to r+1 (from sendbuf at step 0, else the partial result in
 *       recvbuf), receive block r-s-2 from r-1 into scratch, then
 *       recvbuf[b] = scratch op sendbuf[b];
 *       after n-1 steps recvbuf holds block r fully reduced;
 *   allgather, step s = 0..n-2: send block r-s, receive block r-s-1 into recvbuf.
 *
 *   rank:      0      1      2            (n = 3, window of 3 blocks A B C)
 *   RS s=0:  C->1   A->2   B->0           each rank sends one block, reduces one
 *   RS s=1:  B->1   C->2   A->0           rank r now owns block r reduced
 *   AG s=0:  A->1   B->2   C->0
 *   AG s=1:  C->1   A->2   B->0
 *
 * Block r-1 of a window is never written by the reduce-scatter phase, and every read
 * of sendbuf[b] happens before recvbuf[b] is written, so sendbuf == recvbuf works.
 * Empty blocks are skipped on both sides; count 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_algo_ring_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (es == 0 || !fn) {
        HCCL_WARN(COLL, "allreduce: dtype %d / op %d cannot be reduced", (int)a->dtype, (int)a->redop);
        return HCCL_E_PARA;
    }
    if (a->count == 0) return HCCL_SUCCESS;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    if (n == 1) {
        if (src != dst) memmove(dst, src, a->count * es);
        return HCCL_SUCCESS;
    }
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES) return HCCL_E_PARA;
    const uint64_t chunk = HCCL_ALGO_RING_BLOCK_BYTES / es;
    const uint64_t window = chunk * n;
    const uint32_t next = hccl_pattern_ring_next(r, n), prev = hccl_pattern_ring_prev(r, n);
    char *tmp = ctx->scratch;

    for (uint64_t base = 0; base < a->count; base += window) {
        const uint64_t w = HCCL_MIN(window, a->count - base);
        const char *wsrc = src + base * es;
        char *wdst = dst + base * es;
        for (uint32_t s = 0; s + 1 < n; s++) {
            uint32_t sb, rb;
            uint64_t soff, slen, roff, rlen;
            hccl_pattern_ring_rs_step(r, n, s, &sb, &rb);
            hccl_pattern_block(w, n, sb, &soff, &slen);
            hccl_pattern_block(w, n, rb, &roff, &rlen);
            hccl_xfer x[2];
            int nx = 0;
            if (slen)
                x[nx++] = (hccl_xfer){HCCL_XFER_SEND, next, (void *)((s == 0 ? wsrc : wdst) + soff * es), slen * es};
            if (rlen) x[nx++] = (hccl_xfer){HCCL_XFER_RECV, prev, tmp, rlen * es};
            if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
            if (rlen) fn(wdst + roff * es, tmp, wsrc + roff * es, rlen);
        }
        for (uint32_t s = 0; s + 1 < n; s++) {
            uint32_t sb, rb;
            uint64_t soff, slen, roff, rlen;
            hccl_pattern_ring_ag_step(r, n, s, &sb, &rb);
            hccl_pattern_block(w, n, sb, &soff, &slen);
            hccl_pattern_block(w, n, rb, &roff, &rlen);
            hccl_xfer x[2];
            int nx = 0;
            if (slen) x[nx++] = (hccl_xfer){HCCL_XFER_SEND, next, wdst + soff * es, slen * es};
            if (rlen) x[nx++] = (hccl_xfer){HCCL_XFER_RECV, prev, wdst + roff * es, rlen * es};
            if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
        }
    }
    return HCCL_SUCCESS;
}
