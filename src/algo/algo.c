/*
 * algo.c - algorithm selection (hccl_algo_select) and dispatch.
 *
 * Selection is a pure function of the operation, its size and the context, so every
 * rank makes the same choice:
 *   AllReduce, n > 1:  bytes <= 16 KiB and n <= 64             -> oneshot
 *                      ctx->direct (all ranks on one host)      -> direct
 *                      otherwise                                -> ring (reference)
 *   AllGather(V), ReduceScatter(V), Broadcast:
 *                      ctx->direct and (n > 2 or >= 4 KiB)      -> direct
 *                      otherwise                                -> reference
 *   Several hosts, some with several ranks: AllReduce above 16 KiB, Broadcast,
 *                      AllGather, ReduceScatter -> hierarchical (inside hosts, then
 *                      across host leaders)
 *   ctx->reference forces the reference algorithms.
 *
 * The reference algorithms:
 *   AllReduce -> ring             ReduceScatter(V) -> ring      AllGather(V) -> ring
 *   Broadcast, Reduce -> binomial tree                          Scatter, Gather -> linear
 *   AlltoAll(V, VC) -> pairwise   Barrier -> dissemination      Send, Recv, Batch -> p2p
 *
 * Checks here are the ones every algorithm relies on (a context, a network, a rank
 * inside the communicator); the API layer has validated the rest.
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"
#include "util/log.h"

#define ONESHOT_MAX_BYTES (16u << 10)
#define DIRECT_MIN_BYTES (4u << 10)

hccl_algo_id hccl_algo_select(const hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    if (ctx->reference || ctx->nranks == 1) return HCCL_ALGO_REFERENCE;
    size_t es = hccl_dtype_size(a->dtype);
    uint64_t bytes = a->count * es;
    /* V forms: a->count is this rank's own count; decide on the average block,
     * which every rank computes the same from the shared counts array. */
    const uint64_t *counts = a->type == HCCL_OP_ALLGATHER_V      ? a->recv_counts
                             : a->type == HCCL_OP_REDUCE_SCATTER_V ? a->send_counts
                                                                   : NULL;
    if (counts) {
        uint64_t total = 0;
        for (uint32_t j = 0; j < ctx->nranks; j++) total += counts[j];
        bytes = total / ctx->nranks * es;
    }
    /* Several hosts, some with several ranks: work inside hosts first. */
    int hier = ctx->host_of && ctx->nhosts > 1 && ctx->nhosts < ctx->nranks;
    switch (a->type) {
    case HCCL_OP_ALLREDUCE:
        if (hier && bytes > ONESHOT_MAX_BYTES) return HCCL_ALGO_HIER;
        if (ctx->nranks <= 64 && bytes <= ONESHOT_MAX_BYTES &&
            (((bytes + 63) & ~63ull) * ctx->nranks) <= ctx->scratch_bytes)
            return HCCL_ALGO_ONESHOT;
        if (ctx->direct && ctx->nranks <= 64 && ctx->net->peer_copy) return HCCL_ALGO_DIRECT;
        return HCCL_ALGO_REFERENCE;
    case HCCL_OP_ALLGATHER:
    case HCCL_OP_ALLGATHER_V:
    case HCCL_OP_REDUCE_SCATTER:
    case HCCL_OP_REDUCE_SCATTER_V:
    case HCCL_OP_BROADCAST:
        if (hier && (a->type == HCCL_OP_BROADCAST || a->type == HCCL_OP_ALLGATHER || a->type == HCCL_OP_REDUCE_SCATTER))
            return HCCL_ALGO_HIER;
        if (ctx->direct && ctx->nranks <= 64 && ctx->net->peer_copy && (ctx->nranks > 2 || bytes >= DIRECT_MIN_BYTES))
            return HCCL_ALGO_DIRECT;
        return HCCL_ALGO_REFERENCE;
    default:
        return HCCL_ALGO_REFERENCE;
    }
}

const char *hccl_algo_id_name(hccl_algo_id id, hccl_op_type type)
{
    switch (id) {
    case HCCL_ALGO_ONESHOT: return "oneshot";
    case HCCL_ALGO_DIRECT: return "direct";
    case HCCL_ALGO_HIER: return "hierarchical";
    default: return hccl_algo_name(type);
    }
}

HcclResult hccl_algo_run(hccl_algo_ctx *ctx, const hccl_op_args *args)
{
    if (!ctx || !args) return HCCL_E_PARA;
    return hccl_algo_run_with(ctx, args, hccl_algo_select(ctx, args));
}

HcclResult hccl_algo_run_with(hccl_algo_ctx *ctx, const hccl_op_args *args, hccl_algo_id id)
{
    if (!ctx || !args || !ctx->net || !ctx->net->exchange || ctx->nranks == 0 || ctx->rank >= ctx->nranks)
        return HCCL_E_PARA;
    switch (id) {
    case HCCL_ALGO_ONESHOT: return hccl_algo_oneshot_allreduce(ctx, args);
    case HCCL_ALGO_DIRECT:
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_direct_allreduce(ctx, args);
        case HCCL_OP_ALLGATHER:
        case HCCL_OP_ALLGATHER_V: return hccl_algo_direct_allgather(ctx, args);
        case HCCL_OP_REDUCE_SCATTER:
        case HCCL_OP_REDUCE_SCATTER_V: return hccl_algo_direct_reduce_scatter(ctx, args);
        case HCCL_OP_BROADCAST: return hccl_algo_direct_broadcast(ctx, args);
        default: return hccl_algo_run_reference(ctx, args);
        }
    case HCCL_ALGO_HIER:
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_hier_allreduce(ctx, args);
        case HCCL_OP_ALLGATHER: return hccl_algo_hier_allgather(ctx, args);
        case HCCL_OP_REDUCE_SCATTER: return hccl_algo_hier_reduce_scatter(ctx, args);
        default: return hccl_algo_hier_broadcast(ctx, args);
        }
    default: return hccl_algo_run_reference(ctx, args);
    }
}

/* Rooted operations: a rank that believes it is the root may receive nothing, so
 * it could never notice that its peers disagree about the root (or the count).
 * An empty all-to-all first lets every pair compare fingerprints. */
static int needs_agreement(const hccl_algo_ctx *ctx, hccl_op_type t)
{
    return ctx->nranks > 1 && ctx->nranks <= HCCL_DIRECT_MAX_RANKS &&
           (t == HCCL_OP_BROADCAST || t == HCCL_OP_REDUCE || t == HCCL_OP_SCATTER || t == HCCL_OP_GATHER);
}

HcclResult hccl_algo_run_reference(hccl_algo_ctx *ctx, const hccl_op_args *args)
{
    if (!ctx || !args || !ctx->net || !ctx->net->exchange || ctx->nranks == 0 || ctx->rank >= ctx->nranks)
        return HCCL_E_PARA;
    if (args->count > 0 && needs_agreement(ctx, args->type)) CHECK(hccl_direct_close(ctx));
    HcclResult res;
    switch (args->type) {
    case HCCL_OP_ALLREDUCE: res = hccl_algo_ring_allreduce(ctx, args); break;
    case HCCL_OP_BROADCAST: res = hccl_algo_tree_broadcast(ctx, args); break;
    case HCCL_OP_REDUCE: res = hccl_algo_tree_reduce(ctx, args); break;
    case HCCL_OP_REDUCE_SCATTER:
    case HCCL_OP_REDUCE_SCATTER_V: res = hccl_algo_ring_reduce_scatter(ctx, args); break;
    case HCCL_OP_ALLGATHER:
    case HCCL_OP_ALLGATHER_V: res = hccl_algo_ring_allgather(ctx, args); break;
    case HCCL_OP_SCATTER: res = hccl_algo_linear_scatter(ctx, args); break;
    case HCCL_OP_GATHER: res = hccl_algo_linear_gather(ctx, args); break;
    case HCCL_OP_ALLTOALL:
    case HCCL_OP_ALLTOALLV:
    case HCCL_OP_ALLTOALLVC: res = hccl_algo_pairwise_alltoall(ctx, args); break;
    case HCCL_OP_BARRIER: res = hccl_algo_dissemination_barrier(ctx, args); break;
    case HCCL_OP_SEND:
    case HCCL_OP_RECV:
    case HCCL_OP_BATCH_SEND_RECV: res = hccl_algo_p2p(ctx, args); break;
    default: HCCL_WARN(COLL, "unknown operation type %d", (int)args->type); return HCCL_E_PARA;
    }
    if (res != HCCL_SUCCESS)
        HCCL_INFO(COLL, "%s failed on rank %u of %u: %d", hccl_op_name(args->type), ctx->rank, ctx->nranks, (int)res);
    return res;
}
