/*
 * ring_reduce_scatter.c - reference ReduceScatter and ReduceScatterV over a ring.
 *
 * Block j of sendbuf is [displ_j, displ_j + count_j) (ReduceScatter: displ_j = j*count,
 * count_j = count); rank r ends with the reduction of block r in recvbuf. Blocks are
 * cut in windows of `chunk` elements (half the scratch): window w of block j is
 * [w*chunk, min(count_j, (w+1)*chunk)), possibly empty, and the number of windows is
 * set by the largest block, so every rank walks the same windows. Per window:
 *
 *   step s = 0..n-2 (one exchange each): send the partial of block r-s-1 to r+1
 *   (at step 0 straight from sendbuf, later from the scratch half filled at step
 *   s-1), receive the partial of block r-s-2 from r-1 into scratch half s%2, then
 *   half = half op sendbuf[block]. At the last step the received block is r; its
 *   reduction is copied to recvbuf + w*chunk.
 *
 * The scratch halves alternate so a step sends one half while receiving into the
 * other. recvbuf is written only after every read of that window, and future windows
 * only read at offsets >= (w+1)*chunk of a block, so recvbuf == sendbuf (start of
 * sendbuf) and recvbuf == sendbuf + displ_r (NCCL style) both work. Empty pieces are
 * skipped on both sides.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

static void block_of(const hccl_op_args *a, uint32_t j, uint64_t *displ, uint64_t *cnt)
{
    if (a->type == HCCL_OP_REDUCE_SCATTER_V) {
        *displ = a->send_displs[j];
        *cnt = a->send_counts[j];
    } else {
        *displ = (uint64_t)j * a->count;
        *cnt = a->count;
    }
}

/* Piece of block j in window w: its offset inside sendbuf and its length. */
static void piece(const hccl_op_args *a, uint32_t j, uint64_t w, uint64_t chunk, uint64_t *off, uint64_t *len)
{
    uint64_t displ, cnt, start = w * chunk;
    block_of(a, j, &displ, &cnt);
    *off = displ + start;
    *len = start >= cnt ? 0 : HCCL_MIN(chunk, cnt - start);
}

HcclResult hccl_algo_ring_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (es == 0 || !fn) {
        HCCL_WARN(COLL, "reducescatter: dtype %d / op %d cannot be reduced", (int)a->dtype, (int)a->redop);
        return HCCL_E_PARA;
    }
    if (a->type == HCCL_OP_REDUCE_SCATTER_V && (!a->send_counts || !a->send_displs)) return HCCL_E_PARA;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    uint64_t maxcnt = 0, mydispl, mycnt;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t d, c;
        block_of(a, j, &d, &c);
        maxcnt = HCCL_MAX(maxcnt, c);
    }
    block_of(a, r, &mydispl, &mycnt);
    if (mycnt != a->count) {
        HCCL_WARN(COLL, "reducescatterv: recvCount %llu differs from sendCounts[%u] = %llu",
                  (unsigned long long)a->count, r, (unsigned long long)mycnt);
        return HCCL_E_PARA;
    }
    if (maxcnt == 0) return HCCL_SUCCESS;
    if (n == 1) {
        if (mycnt && dst != src + mydispl * es) memmove(dst, src + mydispl * es, mycnt * es);
        return HCCL_SUCCESS;
    }
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES) return HCCL_E_PARA;
    const uint64_t chunk = HCCL_ALGO_SCRATCH_BYTES / 2 / es;
    char *half[2] = {ctx->scratch, (char *)ctx->scratch + chunk * es};
    const uint32_t next = hccl_pattern_ring_next(r, n), prev = hccl_pattern_ring_prev(r, n);
    const uint64_t nwin = (maxcnt + chunk - 1) / chunk;

    for (uint64_t w = 0; w < nwin; w++) {
        for (uint32_t s = 0; s + 1 < n; s++) {
            uint32_t sb, rb;
            uint64_t soff, slen, roff, rlen;
            hccl_pattern_ring_rs_step(r, n, s, &sb, &rb);
            piece(a, sb, w, chunk, &soff, &slen);
            piece(a, rb, w, chunk, &roff, &rlen);
            char *in = half[s % 2];
            hccl_xfer x[2];
            int nx = 0;
            if (slen)
                x[nx++] = (hccl_xfer){HCCL_XFER_SEND, next, s == 0 ? (void *)(src + soff * es) : half[(s + 1) % 2],
                                      slen * es};
            if (rlen) x[nx++] = (hccl_xfer){HCCL_XFER_RECV, prev, in, rlen * es};
            if (nx) CHECK(ctx->net->exchange(ctx->net, x, nx));
            if (rlen) {
                fn(in, in, src + roff * es, rlen);
                if (s + 2 == n) memcpy(dst + w * chunk * es, in, rlen * es);
            }
        }
    }
    return HCCL_SUCCESS;
}
