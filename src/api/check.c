/*
 * check.c - argument checks of the API layer (api_int.h).
 */
#include "api_int.h"

#include "reduce/reduce.h"
#include "util/log.h"

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
    if (__builtin_mul_overflow(count, (uint64_t)size, &b) || __builtin_mul_overflow(b, mult, &b) ||
        b >= (1ull << 62)) {
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

HcclResult hccl_api_rank(const char *fn, uint32_t r, uint32_t nranks, const char *what)
{
    if (r >= nranks) {
        HCCL_WARN(COLL, "%s: %s %u is out of range (the communicator has %u ranks)", fn, what, r, nranks);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}
