/*
 * direct_reduce.c - Reduce between ranks of one host, reading the peers' inputs
 * directly (as direct_allreduce.c does), with only the root collecting the result.
 *
 *   1. all-to-all of (sendbuf, scratch accumulator) addresses     [all have entered]
 *   2. the data is cut in windows of n x C elements; in each window rank r owns
 *      slice r (block split of the window) and reduces it in rank order from every
 *      rank's input: the root into its recvbuf, the others into their accumulator
 *   3. empty all-to-all                                            [the window is reduced]
 *   4. the root copies slice j of the window from rank j's accumulator into recvbuf
 *   5. empty all-to-all                     [the accumulators may be reused; the last:
 *                                            nobody leaves early]
 *
 * With 2 ranks up to WHOLE_MAX_BYTES the root alone reduces the whole vector from both
 * inputs between steps 1 and 5 (two rounds instead of three, no collection).
 *
 * Every rank reads every input once and writes 1/n of the result, instead of the
 * tree's or chain's copies through the rings; only the root writes its recvbuf (the
 * others may pass none). In place at the root is safe: it writes only its own slice
 * before step 3, which no other rank reads, and the rest after it. Reduction order is
 * fixed, so results are bitwise reproducible. Chosen on one host above the eager
 * Reduce's size.
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <string.h>

#define CHUNK_BYTES (256u << 10)
/* 2 ranks up to this size: the root reduces the whole vector (2 ranks, 128-512 KiB:
 * 2.6-4.8x faster than the slices and their collection, whose rounds cost more than the
 * other core's share of the work saves; at 1 MiB 1.5x slower). */
#define WHOLE_MAX_BYTES (512u << 10)

HcclResult hccl_algo_direct_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank, root = a->root;
    const size_t es = hccl_dtype_size(a->dtype);
    if (!hccl_reduce_get(a->dtype, a->redop) || !es || n > HCCL_DIRECT_MAX_RANKS || root >= n ||
        !ctx->net->peer_copy)
        return HCCL_E_PARA;
    if (a->count == 0) return HCCL_SUCCESS;

    char *s = ctx->scratch;
    hccl_direct_addrs *peer = (hccl_direct_addrs *)s; /* n entries */
    const size_t hdr = ((sizeof(hccl_direct_addrs) * n) + 63) & ~(size_t)63;
    char *mine = s + hdr, *acc = mine + CHUNK_BYTES; /* our slice (not the root), the running sum */
    char *stage[2] = {acc + CHUNK_BYTES, acc + 2 * (size_t)CHUNK_BYTES};
    if (hdr + 4 * (size_t)CHUNK_BYTES > ctx->scratch_bytes) return HCCL_E_INTERNAL;
    const uint64_t chunk = CHUNK_BYTES / es; /* elements per slice */

    hccl_direct_addrs me = {(uint64_t)(uintptr_t)a->sendbuf, (uint64_t)(uintptr_t)mine};
    CHECK(hccl_direct_open(ctx, me, peer));
    if (n == 2 && a->count * es <= WHOLE_MAX_BYTES) {
        if (r == root)
            for (uint64_t base = 0; base < a->count; base += chunk) {
                const uint64_t len = a->count - base < chunk ? a->count - base : chunk;
                CHECK(hccl_direct_reduce_slice(ctx, a, peer, base * es, len, (char *)a->recvbuf + base * es, acc,
                                               stage));
            }
        return hccl_direct_close(ctx);
    }
    for (uint64_t base = 0; base < a->count; base += chunk * n) {
        const uint64_t wlen = a->count - base < chunk * n ? a->count - base : chunk * n;
        uint64_t off, len;
        hccl_pattern_block(wlen, n, r, &off, &len);
        if (len) {
            const uint64_t byte_off = (base + off) * es;
            char *out = r == root ? (char *)a->recvbuf + byte_off : mine;
            if (n == 1) {
                if (out != (const char *)a->sendbuf + byte_off)
                    memcpy(out, (const char *)a->sendbuf + byte_off, (size_t)len * es);
            } else {
                CHECK(hccl_direct_reduce_slice(ctx, a, peer, byte_off, len, out, acc, stage));
            }
        }
        CHECK(hccl_direct_close(ctx));
        if (r == root)
            for (uint32_t k = 1; k < n; k++) {
                const uint32_t j = (r + k) % n;
                hccl_pattern_block(wlen, n, j, &off, &len);
                CHECK(hccl_direct_copy(ctx, j, 0, (char *)a->recvbuf + (base + off) * es, peer[j].recv,
                                       (size_t)len * es, 0));
            }
        CHECK(hccl_direct_close(ctx));
    }
    return HCCL_SUCCESS;
}
