/*
 * direct_allreduce.c - allreduce between ranks of one host, reading the peers'
 * buffers directly (net->peer_copy: threads of one process, or cross-memory attach
 * between processes). Each rank moves about 2 x the data through memory instead of
 * the ring's copies through sockets or ring buffers. A rank only ever writes its own
 * buffers, so a peer that gave up on the operation is never written to.
 *
 *   1. all-to-all of (sendbuf, recvbuf) addresses                  [all have entered]
 *   2. the data is cut in windows of n x C elements; in each window rank r owns
 *      slice r (block split of the window):
 *         recvbuf_r[slice] = x_0[slice] op x_1[slice] op ... op x_{n-1}[slice]
 *      (rank order; x_j is read from rank j's sendbuf through a pointer, or copied
 *      into a cache-sized staging chunk)
 *   3. empty all-to-all                                            [all slices reduced]
 *   4. for every window and every peer j: copy slice j of rank j's recvbuf into ours
 *   5. empty all-to-all                                            [nobody leaves early]
 *
 * With 2 ranks, out of place and up to WHOLE_MAX_BYTES, steps 2-4 become: each rank
 * reduces the whole vector from its input and the peer's (same order on both), then
 * step 5: one barrier less, and nobody reads lines another core has just written.
 *
 * In-place (sendbuf == recvbuf) is safe: in step 2 rank r overwrites only its own
 * slice r, which no other rank reads; step 4 runs after everyone's reads.
 * Reduction order is fixed, so results are bitwise reproducible.
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/copy.h"
#include "util/log.h"

#include <string.h>

#define CHUNK_BYTES (256u << 10)
/* 2 ranks out of place up to this size: each rank reduces the whole vector. Measured
 * with 2 ranks one per CPU (2 MiB of level 2 cache each): 362-512 KiB 1.9-2.1x faster
 * than the slices, 741 KiB 1.0-1.3x, 1 MiB even, 1-16 MiB up to 1.3x slower (more so
 * when the buffers are not in cache). It must be a constant: both ranks choose. */
#define WHOLE_MAX_BYTES (512u << 10)

HcclResult hccl_direct_reduce_slice(hccl_algo_ctx *ctx, const hccl_op_args *a, const hccl_direct_addrs *peer,
                                    uint64_t byte_off, uint64_t len, void *out, char *acc, char *const stage[2])
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t bytes = (size_t)len * hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    hccl_net *net = ctx->net;
    /* x_0 op x_1 straight into the destination (out when n == 2, else acc), then each
     * further input; the last step writes out. No extra pass. */
    const void *x[2];
    for (uint32_t j = 0; j < n; j++) {
        const void *xj;
        char *st = stage[j & 1];
        if (j == r) {
            xj = (const char *)a->sendbuf + byte_off;
        } else if (net->peer_ptr && (xj = net->peer_ptr(net, j, peer[j].send + byte_off, bytes)) != NULL) {
        } else {
            CHECK(net->peer_copy(net, j, 0, st, peer[j].send + byte_off, bytes));
            xj = st;
        }
        if (j < 2) {
            x[j] = xj;
            if (j == 1) fn(n == 2 ? out : acc, x[0], x[1], len);
        } else {
            fn(j == n - 1 ? out : acc, acc, xj, len);
        }
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_algo_direct_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    hccl_net *net = ctx->net;
    if (!fn || !es || n > HCCL_DIRECT_MAX_RANKS || !net->peer_copy) return HCCL_E_PARA;
    if (a->count == 0) return HCCL_SUCCESS;

    char *s = ctx->scratch;
    hccl_direct_addrs *peer = (hccl_direct_addrs *)s; /* n entries */
    size_t hdr = ((sizeof(hccl_direct_addrs) * n) + 63) & ~(size_t)63;
    char *acc = s + hdr;
    char *stage[2] = {acc + CHUNK_BYTES, acc + 2 * (size_t)CHUNK_BYTES};
    if (hdr + 3 * (size_t)CHUNK_BYTES > ctx->scratch_bytes) return HCCL_E_INTERNAL;
    uint64_t chunk = CHUNK_BYTES / es; /* elements per slice */

    hccl_direct_addrs me = {(uint64_t)(uintptr_t)a->sendbuf, (uint64_t)(uintptr_t)a->recvbuf};
    HcclResult res = hccl_direct_open(ctx, me, peer);
    if (res != HCCL_SUCCESS) return res;

    /* 2 ranks, out of place, up to WHOLE_MAX_BYTES: each rank reduces the whole vector
     * (x_0 op x_1, the same order on both) from its input and the peer's untouched
     * input. No middle barrier, and no reading of lines the peer has just written. */
    if (n == 2 && a->sendbuf != a->recvbuf && a->count * es <= WHOLE_MAX_BYTES) {
        for (uint64_t base = 0; base < a->count; base += chunk) {
            uint64_t len = a->count - base < chunk ? a->count - base : chunk;
            size_t byte_off = (size_t)(base * es), bytes = (size_t)len * es;
            const char *mine = (const char *)a->sendbuf + byte_off;
            const void *theirs = net->peer_ptr ? net->peer_ptr(net, 1 - r, peer[1 - r].send + byte_off, bytes) : NULL;
            if (!theirs) {
                res = net->peer_copy(net, 1 - r, 0, stage[0], peer[1 - r].send + byte_off, bytes);
                if (res != HCCL_SUCCESS) return res;
                theirs = stage[0];
            }
            fn((char *)a->recvbuf + byte_off, r == 0 ? mine : theirs, r == 0 ? theirs : mine, len);
        }
        return hccl_direct_close(ctx);
    }

    for (uint64_t base = 0; base < a->count; base += chunk * n) {
        uint64_t wlen = a->count - base < chunk * n ? a->count - base : chunk * n;
        uint64_t off, len;
        hccl_pattern_block(wlen, n, r, &off, &len);
        if (len == 0) continue;
        uint64_t byte_off = (base + off) * es;
        size_t bytes = (size_t)len * es;
        char *out = (char *)a->recvbuf + byte_off;
        if (n == 1) {
            if (out != (const char *)a->sendbuf + byte_off) memcpy(out, (const char *)a->sendbuf + byte_off, bytes);
            continue;
        }
        res = hccl_direct_reduce_slice(ctx, a, peer, byte_off, len, out, acc, stage);
        if (res != HCCL_SUCCESS) return res;
    }
    res = hccl_direct_close(ctx);
    if (res != HCCL_SUCCESS) return res;
    int nt = hccl_copy_bypasses_cache((uint64_t)n * a->count * es); /* every rank's recvbuf */
    for (uint64_t base = 0; base < a->count; base += chunk * n) {
        uint64_t wlen = a->count - base < chunk * n ? a->count - base : chunk * n;
        for (uint32_t k = 1; k < n; k++) {
            uint32_t j = (r + k) % n; /* spread the readers over the sources */
            uint64_t off, len;
            hccl_pattern_block(wlen, n, j, &off, &len);
            uint64_t byte_off = (base + off) * es;
            res = hccl_direct_copy(ctx, j, 0, (char *)a->recvbuf + byte_off, peer[j].recv + byte_off,
                                   (size_t)len * es, nt);
            if (res != HCCL_SUCCESS) return res;
        }
    }
    return hccl_direct_close(ctx);
}
