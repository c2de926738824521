/*
 * direct_alltoall.c - AlltoAll, AlltoAllV and AlltoAllVC between ranks of one host by
 * pulling each peer's block for us straight into our receive buffer (one copy per
 * byte; the pairwise schedule over the rings makes two, with a wait per round).
 *
 *   1. personalised all-to-all: peer j gets the address and length of our block for
 *      j, and whether we swap it in place (below)
 *   2. rounds k = 0..n-1, partner p = (k - r) mod n (symmetric: p's partner is r):
 *      check that p's block for us has the length we expect, then
 *        - neither swaps: copy p's block into our receive block p
 *        - either swaps: piece by piece (the same pieces on both sides): copy p's
 *          piece (into the scratch if we swap, else into place), an empty exchange
 *          with p (both have read), then (if we swap) the scratch into place
 *   3. our own block: local copy (not when swapping)
 *   4. empty all-to-all                                        [nobody leaves early]
 *
 * In place (sendbuf == recvbuf, the same layout for sending and receiving: always for
 * AlltoAll), a send span of up to 1 MiB goes to the scratch (shared device memory),
 * which peers read instead; a larger one is swapped: the block the rank sends to p is
 * the one p's block replaces, so it overwrites a piece only after p has read it. Send
 * and receive spans that overlap otherwise: the send span goes to a private buffer (the
 * scratch when it fits), which peers read instead. Either way no rank writes what a
 * peer may still read, and peers read only our send blocks (or the copy). In each
 * round the pairs form a perfect matching: every rank reads from a different peer.
 *
 * A length that differs from what the peer sends (AlltoAllV or VC with counts that
 * disagree) fails this rank before anything is copied from that peer, with a report
 * that names both counts; its abort fails the others (no rank reads past a block).
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

/* In the length we send a peer: we swap our block in place. */
#define SWAPS (1ull << 63)
/* A swap's piece: its scratch copy stays in the core's private cache. */
#define SWAP_PIECE_BYTES (1u << 20)

/* Our block from p: into place piece by piece, with an empty exchange with p after
 * each piece is read (p may overwrite it then, or we may: swap). */
static HcclResult pieces(hccl_algo_ctx *ctx, uint32_t p, char *dst, uint64_t src, uint64_t len, uint64_t out_len,
                         int swap, char *tmp, size_t piece, int nt)
{
    const uint64_t most = len > out_len ? len : out_len, npieces = (most + piece - 1) / piece;
    for (uint64_t i = 0; i < npieces; i++) {
        const uint64_t off = i * piece, l = off < len ? HCCL_MIN(piece, len - off) : 0;
        if (l) CHECK(hccl_direct_copy(ctx, p, 0, swap ? tmp : dst + off, src + off, l, swap ? 0 : nt));
        hccl_xfer x[2] = {{HCCL_XFER_SEND, p, NULL, 0}, {HCCL_XFER_RECV, p, NULL, 0}};
        CHECK(ctx->net->exchange(ctx->net, x, 2));
        if (swap && l) {
            if (nt) hccl_copy_nt(dst + off, tmp, l);
            else memcpy(dst + off, tmp, l);
        }
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_algo_direct_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (!es || n > HCCL_DIRECT_MAX_RANKS || !ctx->net->peer_copy) return HCCL_E_PARA;
    hccl_a2a_layout L;
    CHECK(hccl_a2a_layout_of(a, n, r, &L));
    HcclResult res = HCCL_SUCCESS;
    char *copy = NULL;
    const uint64_t sspan = L.sspan, rspan = L.rspan, out_bytes = L.rtotal * es;
    /* The scratch holds the address lists, then a swap's piece or the private copy. */
    const size_t lists = ((2 * (size_t)n * sizeof(hccl_direct_addrs)) + 63) & ~(size_t)63;
    if (lists + SWAP_PIECE_BYTES > ctx->scratch_bytes) {
        res = HCCL_E_INTERNAL;
        goto out;
    }
    char *const tmp = (char *)ctx->scratch + lists;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    const uintptr_t s0 = (uintptr_t)src, s1 = s0 + sspan * es, d0 = (uintptr_t)dst, d1 = d0 + rspan * es;
    /* In place, a send span that fits in the core's private cache is copied into the
     * scratch, and peers read the copy: no wait per peer, dear where ranks share CPUs
     * (8 ranks on 2 cores, 512 KiB in place: 604-611 us a call swapping, 317-375 from
     * the copy). Larger spans are swapped: their copy would go through memory (4 ranks,
     * 2 MiB: 683-713 us from the copy, 324-336 swapping; docs/performance.md). */
    const int in_scratch = sspan * es <= ctx->scratch_bytes - lists, fits = in_scratch && sspan * es <= SWAP_PIECE_BYTES;
    const int overlap = sspan && rspan && s0 < d1 && d0 < s1, swap = overlap && src == dst && L.same && !fits;
    if (overlap && !swap) {
        char *priv = in_scratch ? tmp : (copy = hccl_malloc(sspan * es));
        if (!priv) {
            res = HCCL_E_MEMORY;
            goto out;
        }
        memcpy(priv, src, sspan * es);
        src = priv;
    }
    /* Our output is written once and not read again here: once it fills a core's
     * private cache, bypass the cache (as the AllGather does). */
    const int nt = hccl_copy_output_bypasses_cache(out_bytes * n, out_bytes);
    hccl_direct_addrs *mine = ctx->scratch, *theirs = mine + n;
    for (uint32_t j = 0; j < n; j++)
        mine[j] = (hccl_direct_addrs){(uint64_t)(uintptr_t)(src + L.sd[j] * es), L.sc[j] * es | (swap ? SWAPS : 0)};
    res = hccl_direct_open_v(ctx, mine, theirs);
    for (uint32_t k = 0; res == HCCL_SUCCESS && k < n; k++) {
        const uint32_t p = hccl_pattern_paired_partner(r, n, k);
        if (p == r) continue;
        const uint64_t len = theirs[p].recv & ~SWAPS, want = L.rc[p] * es;
        if (len != want) {
            res = hccl_direct_disagree(ctx, p, r, len, want);
            break;
        }
        char *into = dst + L.rd[p] * es;
        if (swap || (theirs[p].recv & SWAPS))
            res = pieces(ctx, p, into, theirs[p].send, len, L.sc[p] * es, swap, tmp, SWAP_PIECE_BYTES, nt);
        else
            res = hccl_direct_copy(ctx, p, 0, into, theirs[p].send, len, nt);
    }
    if (res == HCCL_SUCCESS && L.rc[r] && !swap) {
        if (nt) hccl_copy_nt(dst + L.rd[r] * es, src + L.sd[r] * es, L.rc[r] * es);
        else memcpy(dst + L.rd[r] * es, src + L.sd[r] * es, L.rc[r] * es);
    }
    if (res == HCCL_SUCCESS) res = hccl_direct_close(ctx);
out:
    hccl_free(copy);
    hccl_free(L.sc);
    return res;
}
