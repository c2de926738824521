/*
 * pairwise_alltoall.c - reference AlltoAll, AlltoAllV and AlltoAllVC.
 *
 * Layout: rank r sends sc[j] elements from sendbuf + sd[j] to rank j and receives
 * rc[j] elements from rank j into recvbuf + rd[j]. AlltoAll: sc = rc = count,
 * sd = rd = j*count; AlltoAllV: the four arrays; AlltoAllVC: sc[j] = M[r][j],
 * rc[j] = M[j][r], displacements are prefix sums in rank order.
 *
 * Every layout runs one paired schedule, so ranks that disagree about running in place
 * still exchange the same messages (with the shifted pairwise schedule for out of
 * place, large blocks deadlocked against a partner in place over TCP):
 *   own block: local copy (in place: already there);
 *   round k = 0..n-1: partner p = (k - r) mod n (symmetric); if p != r, block p goes
 *   to p and p's block comes in, in pieces of the scratch size (the same pieces on
 *   both sides: piece i of each direction, either possibly empty), one exchange each.
 *   AlltoAllV, whose counts no fingerprint compares, ends each direction with a piece
 *   shorter than the scratch, possibly empty (an empty block: one empty message), so
 *   a receiver whose count differs from its sender's always meets a message of
 *   another length than it posted and fails naming both ranks; without it the
 *   surplus of the larger side went unread, or was waited for, and surfaced at a
 *   later operation as a skipped collective.
 * In place (sendbuf == recvbuf and the send layout equals the receive layout, always
 * true for AlltoAll) a piece goes out from a copy in scratch, so a block is
 * overwritten only by the transfer that replaces it. Overlapping buffers with
 * different layouts: the send span is copied to a heap buffer first.
 * AlltoAll and AlltoAllVC (counts that every rank shares, compared by the headers)
 * skip empty blocks on both sides; all counts 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_a2a_layout_of(const hccl_op_args *a, uint32_t n, uint32_t r, hccl_a2a_layout *L)
{
    uint64_t *m = hccl_malloc((size_t)n * 4 * sizeof(uint64_t));
    if (!m) return HCCL_E_MEMORY;
    L->sc = m;
    L->sd = m + n;
    L->rc = m + 2 * (size_t)n;
    L->rd = m + 3 * (size_t)n;
    uint64_t ps = 0, pr = 0;
    for (uint32_t j = 0; j < n; j++) {
        switch (a->type) {
        case HCCL_OP_ALLTOALL:
            L->sc[j] = L->rc[j] = a->count;
            L->sd[j] = L->rd[j] = (uint64_t)j * a->count;
            break;
        case HCCL_OP_ALLTOALLV:
            L->sc[j] = a->send_counts[j];
            L->sd[j] = a->send_displs[j];
            L->rc[j] = a->recv_counts[j];
            L->rd[j] = a->recv_displs[j];
            break;
        default: /* ALLTOALLVC */
            L->sc[j] = a->matrix[(size_t)r * n + j];
            L->rc[j] = a->matrix[(size_t)j * n + r];
            L->sd[j] = ps;
            L->rd[j] = pr;
            ps += L->sc[j];
            pr += L->rc[j];
            break;
        }
    }
    L->sspan = L->rspan = L->rtotal = 0;
    L->same = 1;
    for (uint32_t j = 0; j < n; j++) {
        if (L->sc[j]) L->sspan = HCCL_MAX(L->sspan, L->sd[j] + L->sc[j]);
        if (L->rc[j]) L->rspan = HCCL_MAX(L->rspan, L->rd[j] + L->rc[j]);
        if (L->sc[j] != L->rc[j] || (L->sc[j] && L->sd[j] != L->rd[j])) L->same = 0;
        L->rtotal += L->rc[j];
    }
    if (L->sc[r] != L->rc[r]) {
        HCCL_WARN(COLL, "alltoall: rank %u sends %llu elements to itself but expects %llu", r,
                  (unsigned long long)L->sc[r], (unsigned long long)L->rc[r]);
        hccl_free(m);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}

/* The paired schedule, from src into dst; swap: in place (src == dst, the same layout
 * for sending and receiving), each piece goes out from a copy in scratch. */
static HcclResult paired(hccl_algo_ctx *ctx, const hccl_a2a_layout *L, const char *src, char *dst, size_t es,
                         int swap, int tail)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES) return HCCL_E_PARA;
    const size_t piece = HCCL_ALGO_SCRATCH_BYTES;
    static char empty; /* an empty message still carries a valid pointer (the buffers may be NULL) */
    if (!swap && L->rc[r]) memcpy(dst + L->rd[r] * es, src + L->sd[r] * es, L->rc[r] * es);
    for (uint32_t k = 0; k < n; k++) {
        const uint32_t p = hccl_pattern_paired_partner(r, n, k);
        if (p == r) continue;
        const char *out = src + L->sd[p] * es;
        char *in = dst + L->rd[p] * es;
        const size_t sbytes = L->sc[p] * es, rbytes = L->rc[p] * es;
        /* pieces per direction: with tail, bytes / piece full ones and a short last one */
        const size_t sn = tail ? sbytes / piece + 1 : (sbytes + piece - 1) / piece;
        const size_t rn = tail ? rbytes / piece + 1 : (rbytes + piece - 1) / piece;
        for (size_t i = 0, off = 0; i < HCCL_MAX(sn, rn); i++, off += piece) {
            hccl_xfer x[2];
            int nx = 0;
            if (i < sn) {
                const size_t sl = HCCL_MIN(piece, sbytes - off);
                if (swap && sl) memcpy(ctx->scratch, out + off, sl);
                x[nx++] = (hccl_xfer){HCCL_XFER_SEND, p, !sl ? &empty : swap ? ctx->scratch : (void *)(out + off), sl};
            }
            if (i < rn) {
                const size_t rl = HCCL_MIN(piece, rbytes - off);
                x[nx++] = (hccl_xfer){HCCL_XFER_RECV, p, rl ? in + off : &empty, rl};
            }
            CHECK(ctx->net->exchange(ctx->net, x, nx));
        }
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_algo_pairwise_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0) return HCCL_E_PARA;
    if (a->type == HCCL_OP_ALLTOALLV && (!a->send_counts || !a->send_displs || !a->recv_counts || !a->recv_displs))
        return HCCL_E_PARA;
    if (a->type == HCCL_OP_ALLTOALLVC && !a->matrix) return HCCL_E_PARA;
    if (a->type != HCCL_OP_ALLTOALL && a->type != HCCL_OP_ALLTOALLV && a->type != HCCL_OP_ALLTOALLVC)
        return HCCL_E_PARA;
    hccl_a2a_layout L;
    CHECK(hccl_a2a_layout_of(a, n, r, &L));
    HcclResult res = HCCL_SUCCESS;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    const uint64_t sspan = L.sspan, rspan = L.rspan;
    const uintptr_t s0 = (uintptr_t)src, s1 = s0 + sspan * es, d0 = (uintptr_t)dst, d1 = d0 + rspan * es;
    const int overlap = sspan && rspan && s0 < d1 && d0 < s1, tail = a->type == HCCL_OP_ALLTOALLV;
    if (!overlap) {
        res = paired(ctx, &L, src, dst, es, 0, tail);
    } else if (src == dst && L.same) {
        res = paired(ctx, &L, dst, dst, es, 1, tail);
    } else {
        char *copy = hccl_malloc(sspan * es);
        if (!copy) {
            res = HCCL_E_MEMORY;
            goto out;
        }
        memcpy(copy, src, sspan * es);
        res = paired(ctx, &L, copy, dst, es, 0, tail);
        hccl_free(copy);
    }
out:
    hccl_free(L.sc);
    return res;
}
