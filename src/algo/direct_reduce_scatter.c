/*
 * direct_reduce_scatter.c - reduce-scatter (and V) between ranks of one host: rank r
 * reads block r of every rank's input directly and reduces it, in rank order, in
 * cache-sized windows.
 *
 *   1. personalised all-to-all: rank j tells rank r where its block r is, how long
 *      (checked against our count: ReduceScatterV's sendCounts agree), and whether
 *      it must defer its writes (its recvbuf overlaps a part of its sendbuf that
 *      other ranks read: in-place with sendbuf == recvbuf)
 *   2. for each window of block r: acc = x_0 op x_1 op ... op x_{n-1}; store acc
 *      into recvbuf, or, when deferring, into a temporary buffer
 *   3. if any rank defers: empty all-to-all (all reads done), then copy the
 *      temporary buffer into recvbuf
 *   4. empty all-to-all
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"
#include "util/util.h"

#include <string.h>

#define CHUNK_BYTES (256u << 10)
/* In the length we send a peer: we defer our writes. */
#define DEFERS (1ull << 63)

HcclResult hccl_algo_direct_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (!fn || !es || n > HCCL_DIRECT_MAX_RANKS || !ctx->net->peer_copy) return HCCL_E_PARA;
    int v = a->type == HCCL_OP_REDUCE_SCATTER_V;
    size_t tbl = ((2 * sizeof(hccl_direct_addrs) * n) + 63) & ~(size_t)63;
    if (tbl + 2 * (size_t)CHUNK_BYTES > ctx->scratch_bytes) return HCCL_E_INTERNAL;
    hccl_direct_addrs *mine = ctx->scratch, *theirs = mine + n;
    char *acc = (char *)ctx->scratch + tbl, *stage = acc + CHUNK_BYTES;

    /* Does our recvbuf overlap sendbuf anywhere but our own block (or is our own block
     * also part of another rank's, which the ReduceScatterV's blocks may be)? */
    const char *sb = a->sendbuf;
    char *rb = a->recvbuf;
    uint64_t total = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t end = v ? a->send_displs[j] + a->send_counts[j] : (uint64_t)(j + 1) * a->count;
        if (end > total) total = end;
    }
    const char *own = sb + (v ? a->send_displs[r] : (uint64_t)r * a->count) * es;
    size_t bytes = (size_t)a->count * es;
    int overlap = bytes && rb < sb + total * es && sb < rb + bytes &&
                  (rb != own || hccl_algo_rs_own_block_shared(a, n, r));
    for (uint32_t j = 0; j < n; j++)
        mine[j] = (hccl_direct_addrs){(uint64_t)(uintptr_t)(sb + (v ? a->send_displs[j] : (uint64_t)j * a->count) * es),
                                      (v ? a->send_counts[j] : a->count) * es | (overlap ? DEFERS : 0)};
    HcclResult res = hccl_direct_open_v(ctx, mine, theirs);
    if (res != HCCL_SUCCESS) return res;
    int defer = 0;
    for (uint32_t j = 0; j < n; j++) {
        if ((theirs[j].recv & ~DEFERS) != bytes) return hccl_direct_disagree(ctx, j, r, theirs[j].recv & ~DEFERS, bytes);
        defer |= (theirs[j].recv & DEFERS) != 0;
    }

    char *out = rb, *tmp = NULL;
    if (overlap && bytes) {
        tmp = hccl_malloc(bytes);
        if (!tmp) return HCCL_E_MEMORY;
        out = tmp;
    }
    uint64_t chunk = CHUNK_BYTES / es;
    for (uint64_t off = 0; off < a->count && res == HCCL_SUCCESS; off += chunk) {
        uint64_t len = a->count - off < chunk ? a->count - off : chunk;
        size_t b = (size_t)len * es, boff = (size_t)off * es;
        for (uint32_t j = 0; j < n && res == HCCL_SUCCESS; j++) {
            const void *xj;
            void *p = NULL;
            if (j == r) xj = own + boff;
            else if (ctx->net->peer_ptr && (p = ctx->net->peer_ptr(ctx->net, j, theirs[j].send + boff, b)) != NULL) xj = p;
            else {
                res = ctx->net->peer_copy(ctx->net, j, 0, stage, theirs[j].send + boff, b);
                xj = stage;
            }
            if (res != HCCL_SUCCESS) break;
            if (j == 0) memcpy(acc, xj, b);
            else fn(acc, acc, xj, len);
        }
        if (res == HCCL_SUCCESS) memcpy(out + boff, acc, b);
    }
    if (res == HCCL_SUCCESS && defer) {
        res = hccl_direct_close(ctx);
        if (res == HCCL_SUCCESS && tmp) memcpy(rb, tmp, bytes);
    }
    hccl_free(tmp);
    if (res != HCCL_SUCCESS) return res;
    return hccl_direct_close(ctx);
}
