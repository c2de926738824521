/*
 * direct_broadcast.c - broadcast between ranks of one host: every rank pulls the
 * root's buffer straight into its own (one copy per byte and reader).
 *
 *   1. all-to-all of buffer addresses          [the root's data is ready]
 *   2. every non-root copies root's buf -> buf, all but its tail; from
 *      DIRECT_BCAST_SPLIT_MIN bytes, the root writes the tails (1/n of each
 *      reader's buffer) into the readers' buffers meanwhile
 *   3. empty all-to-all                        [the root keeps its buffer until all read,
 *                                               the readers theirs until it wrote]
 *
 * Without the split the root idles while n-1 readers copy S bytes each; with it every
 * rank copies (n-1)S/n, and on 2 ranks two cores move the data instead of one.
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"
#include "util/copy.h"

#define DIRECT_BCAST_SPLIT_MIN (16u << 10)

HcclResult hccl_algo_direct_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    size_t es = hccl_dtype_size(a->dtype);
    uint32_t n = ctx->nranks;
    if (!es || n > HCCL_DIRECT_MAX_RANKS || !ctx->net->peer_copy) return HCCL_E_PARA;
    hccl_direct_addrs *peer = ctx->scratch;
    hccl_direct_addrs me = {(uint64_t)(uintptr_t)a->recvbuf, 0};
    HcclResult res = hccl_direct_open(ctx, me, peer);
    if (res != HCCL_SUCCESS) return res;
    size_t bytes = (size_t)a->count * es;
    /* The tail the root writes: whole 64-byte lines, a whole number of elements. */
    size_t tail = 0;
    if (bytes >= DIRECT_BCAST_SPLIT_MIN) {
        size_t unit = 64 % es == 0 ? 64 : es * 64;
        tail = bytes / n / unit * unit;
    }
    char *buf = a->recvbuf;
    int nt = hccl_copy_bypasses_cache((uint64_t)n * bytes); /* every rank's buffer */
    if (ctx->rank != a->root) {
        res = hccl_direct_copy(ctx, a->root, 0, buf, peer[a->root].send, bytes - tail, nt);
    } else if (tail) {
        for (uint32_t k = 1; k < n && res == HCCL_SUCCESS; k++) {
            uint32_t j = (a->root + k) % n;
            res = hccl_direct_copy(ctx, j, 1, buf + bytes - tail, peer[j].send + bytes - tail, tail, nt);
        }
    }
    if (res != HCCL_SUCCESS) return res;
    return hccl_direct_close(ctx);
}
