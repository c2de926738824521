/*
 * tree_broadcast.c - reference Broadcast over a binomial tree rooted at `root`.
 *
 * With relative ranks v = (r - root) mod n, a rank receives the whole buffer from its
 * parent (v with its lowest set bit cleared), then sends it to all of its children
 * (v + 2^k for each 2^k below that bit) in one exchange. ceil(log2 n) rounds deep:
 *
 *   v: 0 -> 1, 2, 4        1 -> 3, 5        2 -> 6        3 -> 7      (n = 8)
 *
 * The data moves straight between the ranks' buffers; count 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

HcclResult hccl_algo_tree_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0 || a->root >= n) return HCCL_E_PARA;
    if (a->count == 0 || n == 1) return HCCL_SUCCESS;
    const size_t bytes = a->count * es;
    const uint32_t v = hccl_pattern_rel_rank(r, a->root, n);
    const int64_t parent = hccl_pattern_tree_parent(v, n);
    if (parent >= 0) {
        hccl_xfer x = {HCCL_XFER_RECV, hccl_pattern_abs_rank((uint32_t)parent, a->root, n), a->recvbuf, bytes};
        CHECK(ctx->net->exchange(ctx->net, &x, 1));
    }
    const uint32_t nc = hccl_pattern_tree_nchildren(v, n);
    if (nc == 0) return HCCL_SUCCESS;
    hccl_xfer x[32];
    for (uint32_t i = 0; i < nc; i++)
        x[i] = (hccl_xfer){HCCL_XFER_SEND, hccl_pattern_abs_rank(hccl_pattern_tree_child(v, i), a->root, n),
                           a->recvbuf, bytes};
    CHECK(ctx->net->exchange(ctx->net, x, (int)nc));
    return HCCL_SUCCESS;
}
