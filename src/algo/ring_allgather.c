/*
 * ring_allgather.c - reference AllGather and AllGatherV over a ring.
 *
 * Block j of recvbuf is [displ_j, displ_j + count_j) (AllGather: displ_j = j*count,
 * count_j = count). Rank r first places its input in block r (memmove, so the input
 * may sit anywhere in recvbuf: at its start, the in-place form, or already at block r,
 * the NCCL form), then
 *
 *   step s = 0..n-2: send block r-s to r+1 and receive block r-s-1 from r-1, both
 *   straight from / into recvbuf, in pieces of HCCL_ALGO_RING_BLOCK_BYTES (one
 *   exchange each: over TCP, 2 ranks, 1.3-1.5x faster than one exchange per block
 *   from 512 KiB, docs/performance.md).
 *
 * No scratch is needed, so there are no windows. Empty blocks are skipped on both
 * sides; all counts 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

static void block_of(const hccl_op_args *a, uint32_t j, uint64_t *displ, uint64_t *cnt)
{
    if (a->type == HCCL_OP_ALLGATHER_V) {
        *displ = a->recv_displs[j];
        *cnt = a->recv_counts[j];
    } else {
        *displ = (uint64_t)j * a->count;
        *cnt = a->count;
    }
}

HcclResult hccl_algo_ring_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0) return HCCL_E_PARA;
    if (a->type == HCCL_OP_ALLGATHER_V && (!a->recv_counts || !a->recv_displs)) return HCCL_E_PARA;
    char *dst = a->recvbuf;
    uint64_t mydispl, mycnt;
    block_of(a, r, &mydispl, &mycnt);
    if (mycnt != a->count) {
        HCCL_WARN(COLL, "allgatherv: sendCount %llu differs from recvCounts[%u] = %llu",
                  (unsigned long long)a->count, r, (unsigned long long)mycnt);
        return HCCL_E_PARA;
    }
    if (mycnt && (const char *)a->sendbuf != dst + mydispl * es) memmove(dst + mydispl * es, a->sendbuf, mycnt * es);
    const uint32_t next = hccl_pattern_ring_next(r, n), prev = hccl_pattern_ring_prev(r, n);
    for (uint32_t s = 0; s + 1 < n; s++) {
        uint32_t sb, rb;
        uint64_t sd, sc, rd, rc;
        hccl_pattern_ring_ag_step(r, n, s, &sb, &rb);
        block_of(a, sb, &sd, &sc);
        block_of(a, rb, &rd, &rc);
        /* In pieces of HCCL_ALGO_RING_BLOCK_BYTES: both sides cut the same block the
         * same way (its size is known to both). */
        const uint64_t piece = HCCL_ALGO_RING_BLOCK_BYTES, sbytes = sc * es, rbytes = rc * es;
        for (uint64_t off = 0; off < sbytes || off < rbytes; off += piece) {
            hccl_xfer x[2];
            int nx = 0;
            if (off < sbytes)
                x[nx++] = (hccl_xfer){HCCL_XFER_SEND, next, dst + sd * es + off, HCCL_MIN(piece, sbytes - off)};
            if (off < rbytes)
                x[nx++] = (hccl_xfer){HCCL_XFER_RECV, prev, dst + rd * es + off, HCCL_MIN(piece, rbytes - off)};
            CHECK(ctx->net->exchange(ctx->net, x, nx));
        }
    }
    return HCCL_SUCCESS;
}
