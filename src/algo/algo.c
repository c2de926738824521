/*
 * algo.c - hccl_algo_run: dispatch of an operation to its reference algorithm.
 *
 *   AllReduce -> ring             ReduceScatter(V) -> ring      AllGather(V) -> ring
 *   Broadcast, Reduce -> binomial tree                          Scatter, Gather -> linear
 *   AlltoAll(V, VC) -> pairwise   Barrier -> dissemination      Send, Recv, Batch -> p2p
 *
 * Checks here are the ones every algorithm relies on (a context, a network, a rank
 * inside the communicator); the API layer has validated the rest.
 */
#include "algo/algo.h"
#include "util/log.h"

HcclResult hccl_algo_run(hccl_algo_ctx *ctx, const hccl_op_args *args)
{
    if (!ctx || !args || !ctx->net || !ctx->net->exchange || ctx->nranks == 0 || ctx->rank >= ctx->nranks)
        return HCCL_E_PARA;
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
