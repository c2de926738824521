/*
 * tree_reduce.c - reference Reduce over a binomial tree rooted at `root`.
 *
 * Relative ranks v = (r - root) mod n; the tree is broadcast's (tree_broadcast.c)
 * run backwards: a rank receives the partial results of its children in order of
 * increasing subtree (v+1, v+2, v+4, ...), one exchange each, folds each into its
 * accumulator, and then sends the accumulator to its parent.
 *
 * The data moves in windows of `chunk` elements (half the scratch): per window a
 * child's partial lands in scratch half 1; a non-root accumulates in scratch half 0
 * (acc = child op sendbuf for the first child, acc = child op acc after), a leaf sends
 * its sendbuf piece directly. The root accumulates in recvbuf, which may equal
 * sendbuf. Non-root ranks never touch recvbuf. count 0 sends nothing.
 */
#include "algo/algo.h"
#include "algo/pattern/pattern.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_algo_tree_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    hccl_reduce_fn fn = hccl_reduce_get(a->dtype, a->redop);
    if (es == 0 || !fn || a->root >= n) {
        HCCL_WARN(COLL, "reduce: bad dtype %d / op %d / root %u", (int)a->dtype, (int)a->redop, a->root);
        return HCCL_E_PARA;
    }
    if (a->count == 0) return HCCL_SUCCESS;
    const char *src = a->sendbuf;
    char *dst = a->recvbuf;
    if (n == 1) {
        if (src != dst) memmove(dst, src, a->count * es);
        return HCCL_SUCCESS;
    }
    if (!ctx->scratch || ctx->scratch_bytes < HCCL_ALGO_SCRATCH_BYTES) return HCCL_E_PARA;
    const uint64_t chunk = HCCL_ALGO_SCRATCH_BYTES / 2 / es;
    char *acc = ctx->scratch, *in = (char *)ctx->scratch + chunk * es;
    const uint32_t v = hccl_pattern_rel_rank(r, a->root, n);
    const int64_t parent = hccl_pattern_tree_parent(v, n);
    const uint32_t nc = hccl_pattern_tree_nchildren(v, n);

    for (uint64_t base = 0; base < a->count; base += chunk) {
        const uint64_t len = HCCL_MIN(chunk, a->count - base);
        const char *mine = src + base * es;
        char *out = parent < 0 ? dst + base * es : acc;
        for (uint32_t i = 0; i < nc; i++) {
            hccl_xfer x = {HCCL_XFER_RECV, hccl_pattern_abs_rank(hccl_pattern_tree_child(v, i), a->root, n), in,
                           len * es};
            CHECK(ctx->net->exchange(ctx->net, &x, 1));
            fn(out, in, i == 0 ? mine : out, len);
        }
        if (parent >= 0) {
            hccl_xfer x = {HCCL_XFER_SEND, hccl_pattern_abs_rank((uint32_t)parent, a->root, n),
                           nc ? acc : (void *)mine, len * es};
            CHECK(ctx->net->exchange(ctx->net, &x, 1));
        }
    }
    return HCCL_SUCCESS;
}
