/*
 * check.c - argument checks of the API layer (api_int.h).
 */
#include "api_int.h"

#include "reduce/reduce.h"
#include "util/log.h"
#include "util/util.h"

#include <stdlib.h>

HcclResult hccl_api_dtype(const char *fn, HcclDataType dt, size_t *size)
{
    size_t s = hccl_dtype_size(dt);
    if (s == 0) {
        HCCL_WARN(COLL, "%s: unknown data type %d", fn, (int)dt);
        return HCCL_E_PARA;
    }
    if (size) *size = s;
    return HCCL_SUCCESS;
}

HcclResult hccl_api_redop(const char *fn, HcclDataType dt, HcclReduceOp op)
{
    if (!hccl_redop_valid(op)) {
        HCCL_WARN(COLL, "%s: unknown reduce op %d", fn, (int)op);
        return HCCL_E_PARA;
    }
    if (!hccl_reduce_get(dt, op)) {
        HCCL_WARN(COLL, "%s: reduce op %s is not supported on data type %s", fn, hccl_redop_name(op),
                  hccl_dtype_name(dt));
        return HCCL_E_NOT_SUPPORT;
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_api_bytes(const char *fn, uint64_t count, size_t size, uint64_t mult, const char *what)
{
    uint64_t b;
    if (__builtin_mul_overflow(count, (uint64_t)size, &b) || !hccl_api_fits(b, mult, &b)) {
        HCCL_WARN(COLL, "%s: %s of %llu elements of %zu bytes overflows the addressable size", fn, what,
                  (unsigned long long)count, size);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_api_ptr(const char *fn, const void *p, uint64_t count, const char *what)
{
    if (!p && count > 0) {
        HCCL_WARN(COLL, "%s: %s is NULL (count %llu)", fn, what, (unsigned long long)count);
        return HCCL_E_PTR;
    }
    return HCCL_SUCCESS;
}

static uint64_t item_bytes(const HcclSendRecvItem *it)
{
    return it->count * hccl_dtype_size(it->dataType);
}

/* The next item from i on that this rank sends to (dir HCCL_SEND) or receives from
 * itself with data; n when none is left. */
static uint32_t next_self(const HcclSendRecvItem *items, uint32_t n, uint32_t i, uint32_t rank, HcclSendRecvType dir)
{
    while (i < n && !(items[i].remoteRank == rank && items[i].sendRecvType == dir && item_bytes(&items[i]) > 0)) i++;
    return i;
}

HcclResult hccl_api_self_pairs(const char *fn, const HcclSendRecvItem *items, uint32_t n, uint32_t rank)
{
    uint32_t s = next_self(items, n, 0, rank, HCCL_SEND), r = next_self(items, n, 0, rank, HCCL_RECV);
    for (; s < n || r < n; s = next_self(items, n, s + 1, rank, HCCL_SEND), r = next_self(items, n, r + 1, rank, HCCL_RECV)) {
        if (s < n && r < n && item_bytes(&items[s]) == item_bytes(&items[r])) continue;
        if (s < n && r < n)
            HCCL_WARN(COLL, "%s: item %u sends %llu bytes to rank %u itself, but its matching self receive, item %u, "
                      "takes %llu bytes", fn, s, (unsigned long long)item_bytes(&items[s]), rank, r,
                      (unsigned long long)item_bytes(&items[r]));
        else if (s < n)
            HCCL_WARN(COLL, "%s: item %u sends %llu bytes to rank %u itself, with no self receive to take them", fn,
                      s, (unsigned long long)item_bytes(&items[s]), rank);
        else
            HCCL_WARN(COLL, "%s: item %u receives %llu bytes from rank %u itself, with no self send to give them",
                      fn, r, (unsigned long long)item_bytes(&items[r]), rank);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}

typedef struct item_span {
    uintptr_t lo, hi; /* [lo, hi) in bytes */
    uint32_t i;
} item_span;

static int item_span_cmp(const void *a, const void *b)
{
    const item_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

HcclResult hccl_api_batch_overlap(const char *fn, const HcclSendRecvItem *items, uint32_t n, uint32_t rank)
{
    uint32_t k = 0, recvs = 0, peers = 0;
    for (uint32_t i = 0; i < n; i++)
        if (item_bytes(&items[i]) > 0) {
            k++;
            recvs += items[i].sendRecvType == HCCL_RECV;
            peers += items[i].remoteRank != rank;
        }
    if (k < 2 || recvs == 0 || peers == 0) return HCCL_SUCCESS;
    item_span small[16], *v = k <= 16 ? small : hccl_malloc(sizeof *v * k);
    if (!v) {
        HCCL_WARN(COLL, "%s: out of memory to check the items' buffers", fn);
        return HCCL_E_MEMORY;
    }
    k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (item_bytes(&items[i]) > 0)
            v[k++] = (item_span){(uintptr_t)items[i].buf, (uintptr_t)items[i].buf + item_bytes(&items[i]), i};
    qsort(v, k, sizeof *v, item_span_cmp);
    /* Two items conflict when they overlap, one is a receive and one is a transfer
     * with a peer. Sorted by start, item x overlaps an earlier item of a class iff it
     * starts before the furthest end among that class's earlier items. Classes: [0]
     * all, [1] receives, [2] peer items, [3] peer receives; x is checked against the
     * class it conflicts with: a peer receive against [0], a peer send against [1], a
     * receive from itself against [2], a send to itself against [3]. */
    uintptr_t hi[4] = {0, 0, 0, 0};
    uint32_t at[4] = {0, 0, 0, 0};
    HcclResult res = HCCL_SUCCESS;
    for (uint32_t x = 0; x < k && res == HCCL_SUCCESS; x++) {
        const HcclSendRecvItem *it = &items[v[x].i];
        int recv = it->sendRecvType == HCCL_RECV, peer = it->remoteRank != rank;
        int cls = peer ? (recv ? 0 : 1) : (recv ? 2 : 3);
        if (v[x].lo < hi[cls]) {
            uint32_t a = HCCL_MIN(at[cls], v[x].i), b = HCCL_MAX(at[cls], v[x].i);
            HCCL_WARN(COLL, "%s: the buffers of item %u (%s rank %u) and item %u (%s rank %u) overlap: a receive "
                      "buffer must not overlap another item's buffer (the transfers with peers run concurrently)",
                      fn, a, items[a].sendRecvType == HCCL_SEND ? "send to" : "receive from", items[a].remoteRank, b,
                      items[b].sendRecvType == HCCL_SEND ? "send to" : "receive from", items[b].remoteRank);
            res = HCCL_E_PARA;
        }
        for (int c = 0; c < 4; c++)
            if ((c & 1 ? recv : 1) && (c & 2 ? peer : 1) && v[x].hi > hi[c]) {
                hi[c] = v[x].hi;
                at[c] = v[x].i;
            }
    }
    if (v != small) hccl_free(v);
    return res;
}

HcclResult hccl_api_rank(const char *fn, uint32_t r, uint32_t nranks, const char *what)
{
    if (r >= nranks) {
        HCCL_WARN(COLL, "%s: %s %u is out of range (the communicator has %u ranks)", fn, what, r, nranks);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}
