/*
 * op_name.c - names of the operations, as the API spells them, and of the
 * algorithms that run them.
 */
#include "algo/algo.h"

const char *hccl_op_name(hccl_op_type type)
{
    static const char *names[HCCL_OP_COUNT] = {
        "AllReduce", "Broadcast",  "Reduce",   "ReduceScatter", "ReduceScatterV", "AllGather",
        "AllGatherV", "Scatter",   "Gather",   "AlltoAll",      "AlltoAllV",      "AlltoAllVC",
        "Barrier",   "Send",       "Recv",     "BatchSendRecv"};
    return (unsigned)type < HCCL_OP_COUNT ? names[type] : "Unknown";
}

const char *hccl_algo_name(hccl_op_type type)
{
    static const char *names[HCCL_OP_COUNT] = {
        "ring",   "binomial-tree", "binomial-tree", "ring",     "ring",          "ring",
        "ring",   "linear",        "linear",        "pairwise", "pairwise",      "pairwise",
        "dissemination", "p2p",    "p2p",           "p2p"};
    return (unsigned)type < HCCL_OP_COUNT ? names[type] : "none";
}

const char *hccl_algo_id_name(hccl_algo_id id, hccl_op_type type)
{
    switch (id) {
    case HCCL_ALGO_ONESHOT: return "oneshot";
    case HCCL_ALGO_DIRECT: return "direct";
    case HCCL_ALGO_HIER: return "hierarchical";
    case HCCL_ALGO_HD: return "halving-doubling";
    case HCCL_ALGO_BRUCK: return "bruck";
    case HCCL_ALGO_CHAIN: return "pipelined chain";
    case HCCL_ALGO_RD: return "recursive doubling";
    case HCCL_ALGO_SLOT: return "slots";
    default: return hccl_algo_name(type);
    }
}
