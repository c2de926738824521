/*
 * oneshot_allgather.c - small AllGather(V) in one round.
 *
 *   every rank r:  copy its input into its own slot of recvbuf, then send that slot
 *                  to every peer and receive every peer's block straight into slot j.
 *
 * One round of messages, where the direct algorithm needs two (the all-to-all of
 * buffer addresses, then the empty one that keeps a rank from leaving while a peer
 * still reads its input) and the ring n-1: what counts for small blocks, above all
 * when ranks share cores and every round waits for each of them to be scheduled.
 * Chosen for small totals only (each rank sends its block n-1 times). Blocks of 0
 * bytes send nothing: every rank knows every block's size (the same counts).
 */
#include "algo/algo.h"
#include "reduce/reduce.h"

#include <string.h>

HcclResult hccl_algo_oneshot_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    uint32_t n = ctx->nranks, r = ctx->rank;
    size_t es = hccl_dtype_size(a->dtype);
    if (!es || n > 64) return HCCL_E_PARA;
    int v = a->type == HCCL_OP_ALLGATHER_V;
#define SLOT_OFF(j) ((v ? a->recv_displs[j] : (uint64_t)(j) * a->count) * es)
#define SLOT_LEN(j) ((v ? a->recv_counts[j] : a->count) * es)
    char *recv = a->recvbuf;
    char *own = recv + SLOT_OFF(r);
    size_t own_len = SLOT_LEN(r);
    /* From our slot, which only we write: the input may overlap recvbuf (in place). */
    if (own_len && a->sendbuf != own) memmove(own, a->sendbuf, own_len);
    hccl_xfer x[2 * 64];
    int k = 0;
    for (uint32_t d = 1; d < n; d++) {
        uint32_t j = (r + d) % n;
        size_t len = SLOT_LEN(j);
        if (own_len != 0) x[k++] = (hccl_xfer){HCCL_XFER_SEND, j, own, own_len};
        if (len != 0) x[k++] = (hccl_xfer){HCCL_XFER_RECV, j, recv + SLOT_OFF(j), len};
    }
#undef SLOT_OFF
#undef SLOT_LEN
    return k ? ctx->net->exchange(ctx->net, x, k) : HCCL_SUCCESS;
}
