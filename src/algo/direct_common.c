/*
 * direct_common.c - entry/exit exchanges and copies of the direct algorithms.
 */
#include "algo/direct_common.h"

#include "util/copy.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

static HcclResult all_to_all(hccl_algo_ctx *ctx, void *mine, size_t bytes, char *theirs)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    hccl_xfer x[2 * HCCL_DIRECT_MAX_RANKS];
    int k = 0;
    if (n > HCCL_DIRECT_MAX_RANKS) return HCCL_E_INTERNAL;
    for (uint32_t j = 0; j < n; j++) {
        if (j == r) continue;
        x[k++] = (hccl_xfer){HCCL_XFER_SEND, j, mine, bytes};
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, j, theirs ? theirs + bytes * j : NULL, bytes};
    }
    return ctx->net->exchange(ctx->net, x, k);
}

/* On one host with shared slots (ctx->net->slot_gather), each of these rounds is one
 * slot_gather: every rank publishes its addresses (or nothing) in its slot and reads
 * the others', with no framed message to send or to take. Elsewhere (several hosts,
 * a group of hier.c), or where the addresses fit no slot, the all-to-all over the
 * connections. */
static HcclResult slot_round(hccl_algo_ctx *ctx, const void *mine, size_t bytes, size_t at, hccl_direct_addrs *theirs)
{
    static const char none; /* an empty round still passes a valid pointer */
    const unsigned char *first = NULL;
    size_t stride = 0;
    CHECK(ctx->net->slot_gather(ctx->net, bytes ? mine : &none, bytes, &first, &stride));
    if (theirs) /* rank j's entry for us: at `at` of its slot */
        for (uint32_t j = 0; j < ctx->nranks; j++) memcpy(&theirs[j], first + stride * j + at, sizeof theirs[j]);
    return HCCL_SUCCESS;
}

HcclResult hccl_direct_open(hccl_algo_ctx *ctx, hccl_direct_addrs mine, hccl_direct_addrs *theirs)
{
    if (ctx->net->slot_gather) return slot_round(ctx, &mine, sizeof mine, 0, theirs);
    theirs[ctx->rank] = mine;
    return all_to_all(ctx, &mine, sizeof mine, (char *)theirs);
}

HcclResult hccl_direct_open_v(hccl_algo_ctx *ctx, const hccl_direct_addrs *mine, hccl_direct_addrs *theirs)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    if (n > HCCL_DIRECT_MAX_RANKS) return HCCL_E_INTERNAL;
    if (ctx->net->slot_gather && sizeof *mine * n <= HCCL_NET_SLOT_BYTES) /* every rank's n entries: ours is [r] */
        return slot_round(ctx, mine, sizeof *mine * n, sizeof *mine * r, theirs);
    hccl_xfer x[2 * HCCL_DIRECT_MAX_RANKS];
    int k = 0;
    theirs[r] = mine[r];
    for (uint32_t j = 0; j < n; j++) {
        if (j == r) continue;
        x[k++] = (hccl_xfer){HCCL_XFER_SEND, j, (void *)&mine[j], sizeof mine[j]};
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, j, &theirs[j], sizeof theirs[j]};
    }
    return ctx->net->exchange(ctx->net, x, k);
}

HcclResult hccl_direct_disagree(hccl_algo_ctx *ctx, uint32_t from, uint32_t to, uint64_t sent, uint64_t expected)
{
    char why[200];
    snprintf(why, sizeof why,
             "rank %u sends %llu bytes to rank %u, which expects %llu from it (the counts of the ranks disagree)", from,
             (unsigned long long)sent, to, (unsigned long long)expected);
    return ctx->net->fail ? ctx->net->fail(ctx->net, HCCL_E_PARA, why) : HCCL_E_PARA;
}

HcclResult hccl_direct_close(hccl_algo_ctx *ctx)
{
    if (ctx->net->slot_gather) return slot_round(ctx, NULL, 0, 0, NULL);
    return all_to_all(ctx, NULL, 0, NULL);
}

HcclResult hccl_direct_copy(hccl_algo_ctx *ctx, uint32_t peer, int write, void *local, uint64_t remote, size_t bytes,
                            int nt)
{
    if (bytes == 0) return HCCL_SUCCESS;
    hccl_net *net = ctx->net;
    void *p = net->peer_ptr ? net->peer_ptr(net, peer, remote, bytes) : NULL;
    if (p) {
        void *d = write ? p : local;
        const void *s = write ? local : p;
        if (nt) hccl_copy_nt(d, s, bytes);
        else memcpy(d, s, bytes);
        return HCCL_SUCCESS;
    }
    return net->peer_copy(net, peer, write, local, remote, bytes);
}
