/*
 * hd_reduce_scatter.c - ReduceScatter and ReduceScatterV by recursive halving, any
 * number of ranks.
 *
 * The n ranks fold onto p = 2^floor(log2 n) virtual ranks (pattern.h): with rem =
 * n - p, ranks 2i and 2i+1 (i < rem) pair up, the even one sends its whole input to
 * the odd one, which reduces and acts as virtual rank i, standing for the real blocks
 * 2i and 2i+1; rank r >= 2*rem is virtual rank r - rem, standing for block r. So
 * virtual rank v stands for the contiguous real blocks [first(v), first(v+1)).
 *
 *   halving, step s = 0..log2(p)-1: partner v ^ (p >> (s+1)); send the real blocks
 *       of the half of the virtual ranks that the partner keeps, receive the other
 *       half into scratch and reduce (lower virtual rank's partial op higher one's);
 *   unfold: 2i+1 sends the reduced block 2i to 2i; every rank copies its block out.
 *
 * log2(p) rounds (+2 with a fold); (p-1)/p of the input sent per rank (+ the whole
 * input by the folded pairs). Every block is reduced in an order fixed by n alone.
 *
 * Windows: the blocks are cut in pieces of `cw` elements (piece w of block j is
 * [w*cw, min(count_j, (w+1)*cw))), the number of windows set by the largest block.
 * Per window the partials live packed in the first half of the scratch (block j's
 * piece at the prefix sum of the pieces before it) and received pieces in the second
 * half at the same offsets, so cw = scratch / (2 n elements). A run of blocks moves
 * in one message when it is contiguous on the sending side (packed partials, or the
 * uniform layout of sendbuf in a single window), else one message per non-empty
 * piece; the receiver derives the same from the step and its partner's fold.
 * recvbuf is written only after every read of its window, and later windows read
 * only further into each block, so recvbuf == sendbuf and recvbuf == sendbuf +
 * displ_r both work. Empty pieces are skipped; all counts 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/net_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

typedef struct window {
    const hccl_blocks *b;
    const uint64_t *poff; /* packed offset of block j's piece; poff[n] = total */
    uint64_t base;        /* element offset of the pieces inside their blocks */
} window;

/* Block j's piece: in the packed buffer pk, or in sendbuf when pk is NULL. */
static char *piece(const window *w, char *pk, uint32_t j)
{
    return pk ? pk + w->poff[j] * w->b->es : hccl_blocks_ptr(w->b, j) + w->base * w->b->es;
}

/* Transfers for the pieces of blocks [lo, hi): one when merged, else one per piece. */
static int piece_xfers(const window *w, char *pk, uint32_t lo, uint32_t hi, int merged, hccl_xfer_dir dir,
                       uint32_t peer, hccl_xfer *x)
{
    const size_t es = w->b->es;
    int k = 0;
    if (merged) {
        uint64_t len = w->poff[hi] - w->poff[lo];
        if (len) x[k++] = (hccl_xfer){dir, peer, piece(w, pk, lo), len * es};
        return k;
    }
    for (uint32_t j = lo; j < hi; j++) {
        uint64_t len = w->poff[j + 1] - w->poff[j];
        if (len) x[k++] = (hccl_xfer){dir, peer, piece(w, pk, j), len * es};
    }
    return k;
}

HcclResult hccl_algo_hd_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (es == 0 || !fn) {
        HCCL_WARN(COLL, "reducescatter: dtype %d / op %d cannot be reduced", (int)a->dtype, (int)a->redop);
        return HCCL_E_PARA;
    }
    if (a->type == HCCL_OP_REDUCE_SCATTER_V && (!a->send_counts || !a->send_displs)) return HCCL_E_PARA;
    hccl_blocks b;
    hccl_blocks_of_reduce_scatter(a, n, es, &b);
    uint64_t maxcnt = 0, mycnt = hccl_blocks_count(&b, r);
    for (uint32_t j = 0; j < n; j++) maxcnt = HCCL_MAX(maxcnt, hccl_blocks_count(&b, j));
    if (mycnt != a->count) {
        HCCL_WARN(COLL, "reducescatterv: recvCount %llu differs from sendCounts[%u] = %llu",
                  (unsigned long long)a->count, r, (unsigned long long)mycnt);
        return HCCL_E_PARA;
    }
    if (maxcnt == 0) return HCCL_SUCCESS;
    char *dst = a->recvbuf;
    if (n == 1) {
        if (mycnt && dst != hccl_blocks_ptr(&b, r)) memmove(dst, hccl_blocks_ptr(&b, r), mycnt * es);
        return HCCL_SUCCESS;
    }
    const uint64_t cw = HCCL_ALGO_SCRATCH_BYTES / (2 * (uint64_t)n * es);
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES || cw == 0) return HCCL_E_PARA;
    const uint32_t p = hccl_pattern_pow2_floor(n), rem = n - p, steps = hccl_pattern_log2_floor(n);
    const int64_t v = hccl_pattern_fold_vrank(r, n);
    const uint64_t nwin = (maxcnt + cw - 1) / cw;
    const int sendbuf_packed = !b.cnt && nwin == 1; /* sendbuf's layout is the packed one */
    char *acc = ctx->scratch, *tmp = acc + (size_t)n * cw * es;
    uint64_t *poff = hccl_malloc(sizeof(uint64_t) * (n + 1));
    hccl_xfer *x = hccl_malloc(sizeof(hccl_xfer) * ((size_t)n + 1));
    HcclResult res = poff && x ? HCCL_SUCCESS : HCCL_E_MEMORY;

    for (uint64_t wi = 0; wi < nwin && res == HCCL_SUCCESS; wi++) {
        window w = {&b, poff, wi * cw};
        poff[0] = 0;
        for (uint32_t j = 0; j < n; j++) {
            uint64_t c = hccl_blocks_count(&b, j);
            poff[j + 1] = poff[j] + (c > w.base ? HCCL_MIN(cw, c - w.base) : 0);
        }
        char *cur = NULL; /* where this rank's partials are: packed in acc, or (NULL) in sendbuf */
        int k;
        if (r < 2 * rem) { /* fold */
            k = r % 2 == 0 ? piece_xfers(&w, NULL, 0, n, sendbuf_packed, HCCL_XFER_SEND, r + 1, x)
                           : piece_xfers(&w, tmp, 0, n, sendbuf_packed, HCCL_XFER_RECV, r - 1, x);
            if (k && (res = ctx->net->exchange(ctx->net, x, k)) != HCCL_SUCCESS) break;
            if (r % 2) {
                for (uint32_t j = 0; j < n; j++)
                    fn(piece(&w, acc, j), piece(&w, tmp, j), piece(&w, NULL, j), poff[j + 1] - poff[j]);
                cur = acc;
            }
        }
        for (uint32_t s = 0; v >= 0 && s < steps && res == HCCL_SUCCESS; s++) {
            uint32_t pv, klo, slo, nb;
            hccl_pattern_halving_step((uint32_t)v, p, s, &pv, &klo, &slo, &nb);
            const uint32_t peer = hccl_pattern_fold_rank(pv, n);
            const uint32_t k0 = hccl_pattern_fold_first(klo, n), k1 = hccl_pattern_fold_first(klo + nb, n);
            const uint32_t s0 = hccl_pattern_fold_first(slo, n), s1 = hccl_pattern_fold_first(slo + nb, n);
            /* The partner's partials are packed after its first step or its fold. */
            const int peer_packed = s > 0 || pv < rem;
            k = piece_xfers(&w, cur, s0, s1, cur || sendbuf_packed, HCCL_XFER_SEND, peer, x);
            k += piece_xfers(&w, tmp, k0, k1, peer_packed || sendbuf_packed, HCCL_XFER_RECV, peer, x + k);
            if (k && (res = ctx->net->exchange(ctx->net, x, k)) != HCCL_SUCCESS) break;
            for (uint32_t j = k0; j < k1; j++) {
                uint64_t len = poff[j + 1] - poff[j];
                if ((uint32_t)v < pv) fn(piece(&w, acc, j), piece(&w, cur, j), piece(&w, tmp, j), len);
                else fn(piece(&w, acc, j), piece(&w, tmp, j), piece(&w, cur, j), len);
            }
            cur = acc;
        }
        if (res != HCCL_SUCCESS) break;
        const uint64_t mine = poff[r + 1] - poff[r];
        if (r < 2 * rem && r % 2 == 0) { /* unfold: my block comes from r + 1 */
            hccl_xfer y = {HCCL_XFER_RECV, r + 1, dst + w.base * es, mine * es};
            if (mine) res = ctx->net->exchange(ctx->net, &y, 1);
            continue;
        }
        if (r < 2 * rem) {
            hccl_xfer y = {HCCL_XFER_SEND, r - 1, piece(&w, acc, r - 1), (poff[r] - poff[r - 1]) * es};
            if (y.bytes) res = ctx->net->exchange(ctx->net, &y, 1);
        }
        if (mine) memcpy(dst + w.base * es, piece(&w, acc, r), mine * es);
    }
    hccl_free(poff);
    hccl_free(x);
    return res;
}
