/*
 * linear_scatter.c - reference Scatter: the root sends block j (sendbuf + j*count) to
 * every rank j != root in one exchange, then copies its own block to its recvbuf;
 * every other rank receives its block from the root. Copying last lets the root's
 * recvbuf overlap its sendbuf (recvbuf == sendbuf, or recvbuf == sendbuf + root*count).
 * count 0 sends nothing.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_algo_linear_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0 || a->root >= n) return HCCL_E_PARA;
    if (a->count == 0) return HCCL_SUCCESS;
    const size_t bytes = a->count * es;
    if (r != a->root) {
        hccl_xfer x = {HCCL_XFER_RECV, a->root, a->recvbuf, bytes};
        CHECK(ctx->net->exchange(ctx->net, &x, 1));
        return HCCL_SUCCESS;
    }
    const char *src = a->sendbuf;
    if (n > 1) {
        hccl_xfer *x = hccl_malloc((size_t)(n - 1) * sizeof(*x));
        if (!x) return HCCL_E_MEMORY;
        int nx = 0;
        for (uint32_t j = 0; j < n; j++)
            if (j != r) x[nx++] = (hccl_xfer){HCCL_XFER_SEND, j, (void *)(src + j * bytes), bytes};
        HcclResult res = ctx->net->exchange(ctx->net, x, nx);
        hccl_free(x);
        CHECK(res);
    }
    if ((char *)a->recvbuf != src + r * bytes) memmove(a->recvbuf, src + r * bytes, bytes);
    return HCCL_SUCCESS;
}
