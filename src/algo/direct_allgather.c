/*
 * direct_allgather.c - allgather (and V) between ranks of one host by pulling each
 * peer's block straight into our receive buffer (one copy per byte).
 *
 *   1. an input that lies inside recvbuf (not in place): move it to our slot
 *   2. all-to-all of sendbuf addresses and lengths
 *   3. for every peer j: check that its length is our slot j's (AllGatherV: the
 *      ranks' recvCounts agree), copy peer j's sendbuf into our slot j
 *   4. otherwise (not in place): copy our input into our slot     [after 3: nobody
 *                                                                   waits in 2 for it]
 *   5. empty all-to-all                                           [nobody leaves early]
 *
 * Peers read our input, which nobody writes during the operation (when it lies in
 * recvbuf, in place, our slot of recvbuf instead), not our slot: a line just written
 * there sits dirty in this core's cache, and pulling it across cost the 2-rank
 * allgather 2-3x at 128 KiB-2 MiB (docs/performance.md).
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"
#include "util/copy.h"

#include <string.h>

HcclResult hccl_algo_direct_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || n > HCCL_DIRECT_MAX_RANKS || !ctx->net->peer_copy) return HCCL_E_PARA;
    int v = a->type == HCCL_OP_ALLGATHER_V;
#define SLOT_OFF(j) ((v ? a->recv_displs[j] : (uint64_t)(j) * a->count) * es)
#define SLOT_LEN(j) ((v ? a->recv_counts[j] : a->count) * es)
    char *recv = a->recvbuf;
    size_t own_len = SLOT_LEN(r);
    uint64_t recv_end = 0;
    for (uint32_t j = 0; j < n; j++)
        if (SLOT_OFF(j) + SLOT_LEN(j) > recv_end) recv_end = SLOT_OFF(j) + SLOT_LEN(j);
    const char *in = a->sendbuf;
    int inside = in + own_len > recv && in < recv + recv_end;
    /* Every rank writes its recvbuf (all of it unless the input is already in place)
     * and does not read it again: once that is as much as a core's private cache (or a
     * share of the host's in all), bypass the cache. */
    int in_place = in == recv + SLOT_OFF(r);
    int nt = hccl_copy_output_bypasses_cache((uint64_t)n * recv_end, recv_end - (in_place ? own_len : 0));
    /* An input inside recvbuf moves to our slot first: peers read it there. */
    if (own_len && !in_place && inside) memmove(recv + SLOT_OFF(r), in, own_len);
    hccl_direct_addrs *peer = ctx->scratch;
    /* What peers read: our input, unless it lies inside recvbuf (in place, either
     * form), where our slot r (written above) is the only stable copy. */
    hccl_direct_addrs me = {(uint64_t)(uintptr_t)(inside ? recv + SLOT_OFF(r) : in), own_len};
    HcclResult res = hccl_direct_open(ctx, me, peer);
    if (res != HCCL_SUCCESS) return res;
    for (uint32_t k = 1; k < n; k++) {
        uint32_t j = (r + k) % n; /* spread the readers over the sources */
        if (peer[j].recv != SLOT_LEN(j)) return hccl_direct_disagree(ctx, j, r, peer[j].recv, SLOT_LEN(j));
        res = hccl_direct_copy(ctx, j, 0, recv + SLOT_OFF(j), peer[j].send, SLOT_LEN(j), nt);
        if (res != HCCL_SUCCESS) return res;
    }
    /* Otherwise our own block last, with no wait between it and the peers' blocks. */
    if (own_len && !inside) {
        if (nt) hccl_copy_nt(recv + SLOT_OFF(r), in, own_len);
        else memcpy(recv + SLOT_OFF(r), in, own_len);
    }
#undef SLOT_OFF
#undef SLOT_LEN
    return hccl_direct_close(ctx);
}
