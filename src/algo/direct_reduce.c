/*
 * direct_reduce.c - Reduce between ranks of one host, reading the peers' inputs
 * directly (as direct_allreduce.c does) and writing the result straight into the
 * root's recvbuf.
 *
 *   1. all-gather of (sendbuf, the root's recvbuf) addresses       [all have entered]
 *   2. the data is cut in windows of n x C elements; in each window rank r owns
 *      slice r (block split of the window), reduces it in rank order from every
 *      rank's input and writes it into the root's recvbuf (through the peer pointer,
 *      or from a scratch slice with the peer copy)
 *   3. empty all-gather                  [the result is written and nobody's input is
 *                                          read any more: nobody leaves early]
 *
 * (Steps 1 and 3 are slot rounds on one host with slots: direct_common.h.) On a crowded
 * host up to WHOLE_CROWDED_MAX_INPUTS of inputs in all, the root alone reduces the
 * whole vector from every input between steps 1 and 3 (no other rank's share of the
 * work to wait for a CPU). With a CPU per rank the slices win at every size, 2 ranks
 * included (2 ranks, 64-512 KiB: 1.5-2.3x faster than the root alone with shared device
 * memory or thread ranks; about even with `malloc`'d buffers, read through the kernel).
 *
 * Every rank reads every input once and writes 1/n of the result, instead of the
 * tree's or chain's copies through the rings, and nobody copies the result twice
 * (the root used to pull the slices from the others' scratch, alone: 2 and 4 ranks,
 * 2-8 MiB, 1.8-2x slower). Like the direct Broadcast's share, these are writes into a
 * peer's buffer, which its owner waits for in step 3; only the root has a recvbuf (the
 * others may pass none). In place at the root is safe: slice j of the root's buffer is
 * read (as the root's input) and written by rank j only. Reduction order is fixed, so
 * results are bitwise reproducible. Chosen on one host above the eager Reduce's size.
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <string.h>

#define CHUNK_BYTES (256u << 10)
/* On a crowded host (more ranks than cores): the root alone while it reads at most this
 * many bytes of inputs in all (n x the vector): there every round waits for every
 * rank to be scheduled (3-8 ranks on 2 cores, 20 operations on a stream: 1.2-1.5x
 * faster up to 1 MiB in all, 8 ranks at 2 MiB 1.2-1.3x slower; docs/performance.md). */
#define WHOLE_CROWDED_MAX_INPUTS (1u << 20)

HcclResult hccl_algo_direct_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank, root = a->root;
    const size_t es = hccl_dtype_size(a->dtype);
    if (!hccl_reduce_get(a->dtype, a->redop) || !es || n > HCCL_DIRECT_MAX_RANKS || root >= n ||
        !ctx->net->peer_copy)
        return HCCL_E_PARA;
    if (a->count == 0) return HCCL_SUCCESS;
    if (n == 1) {
        if (a->recvbuf != a->sendbuf) memcpy(a->recvbuf, a->sendbuf, (size_t)(a->count * es));
        return HCCL_SUCCESS;
    }

    char *s = ctx->scratch;
    hccl_direct_addrs *peer = (hccl_direct_addrs *)s; /* n entries */
    const size_t hdr = ((sizeof(hccl_direct_addrs) * n) + 63) & ~(size_t)63;
    char *mine = s + hdr, *acc = mine + CHUNK_BYTES; /* our slice without a peer pointer, the running sum */
    char *stage[2] = {acc + CHUNK_BYTES, acc + 2 * (size_t)CHUNK_BYTES};
    if (hdr + 4 * (size_t)CHUNK_BYTES > ctx->scratch_bytes) return HCCL_E_INTERNAL;
    const uint64_t chunk = CHUNK_BYTES / es; /* elements per slice */

    hccl_direct_addrs me = {(uint64_t)(uintptr_t)a->sendbuf, (uint64_t)(uintptr_t)(r == root ? a->recvbuf : NULL)};
    CHECK(hccl_direct_open(ctx, me, peer));
    const uint64_t bytes = a->count * es;
    if (ctx->crowded && bytes * n <= WHOLE_CROWDED_MAX_INPUTS) {
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
        if (!len) continue;
        const uint64_t byte_off = (base + off) * es;
        if (r == root) {
            CHECK(hccl_direct_reduce_slice(ctx, a, peer, byte_off, len, (char *)a->recvbuf + byte_off, acc, stage));
            continue;
        }
        const uint64_t dst = peer[root].recv + byte_off;
        const size_t slice = (size_t)len * es;
        void *p = ctx->net->peer_ptr ? ctx->net->peer_ptr(ctx->net, root, dst, slice) : NULL;
        CHECK(hccl_direct_reduce_slice(ctx, a, peer, byte_off, len, p ? p : mine, acc, stage));
        if (!p) CHECK(hccl_direct_copy(ctx, root, 1, mine, dst, slice, 0));
    }
    return hccl_direct_close(ctx);
}
