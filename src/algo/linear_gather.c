/*
 * linear_gather.c - reference Gather: every rank j != root sends its count elements to
 * the root, which first moves its own input to block root of recvbuf and then
 * receives block j (recvbuf + j*count) from every other rank in one exchange.
 * Moving first lets the root's input sit anywhere in recvbuf (sendbuf == recvbuf, or
 * sendbuf == recvbuf + root*count). count 0 sends nothing.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <string.h>

HcclResult hccl_algo_linear_gather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    const uint32_t n = ctx->nranks, r = ctx->rank;
    const size_t es = hccl_dtype_size(a->dtype);
    if (es == 0 || a->root >= n) return HCCL_E_PARA;
    if (a->count == 0) return HCCL_SUCCESS;
    const size_t bytes = a->count * es;
    if (r != a->root) {
        hccl_xfer x = {HCCL_XFER_SEND, a->root, (void *)a->sendbuf, bytes};
        CHECK(ctx->net->exchange(ctx->net, &x, 1));
        return HCCL_SUCCESS;
    }
    char *dst = a->recvbuf;
    if ((const char *)a->sendbuf != dst + r * bytes) memmove(dst + r * bytes, a->sendbuf, bytes);
    if (n == 1) return HCCL_SUCCESS;
    hccl_xfer *x = hccl_malloc((size_t)(n - 1) * sizeof(*x));
    if (!x) return HCCL_E_MEMORY;
    int nx = 0;
    for (uint32_t j = 0; j < n; j++)
        if (j != r) x[nx++] = (hccl_xfer){HCCL_XFER_RECV, j, dst + j * bytes, bytes};
    HcclResult res = ctx->net->exchange(ctx->net, x, nx);
    hccl_free(x);
    CHECK(res);
    return HCCL_SUCCESS;
}
