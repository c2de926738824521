/*
 * api_int.h - argument checking shared by the exported entry points.
 *
 * Every check logs one WARN line naming the function and the bad argument, and
 * returns the HcclResult the caller gets (E_PTR for missing pointers, E_PARA for
 * values out of range).
 */
#ifndef HCCL_API_INT_H
#define HCCL_API_INT_H

#include "core/comm.h"

#include <hccl/hccl.h>

HcclResult hccl_api_dtype(const char *fn, HcclDataType dt, size_t *size);
/* Checks op and that (dt, op) has a reduction kernel. */
HcclResult hccl_api_redop(const char *fn, HcclDataType dt, HcclReduceOp op);
/* Whether n elements of size bytes fit the addressable size: their product (*bytes)
 * does not overflow and stays below 2^62 bytes. */
static inline int hccl_api_fits(uint64_t n, uint64_t size, uint64_t *bytes)
{
    return !__builtin_mul_overflow(n, size, bytes) && *bytes < (1ull << 62);
}
/* count * size * mult must fit (and stay below 2^62 bytes). */
HcclResult hccl_api_bytes(const char *fn, uint64_t count, size_t size, uint64_t mult, const char *what);
HcclResult hccl_api_ptr(const char *fn, const void *p, uint64_t count, const char *what);
HcclResult hccl_api_rank(const char *fn, uint32_t r, uint32_t nranks, const char *what);
/* A batch's items addressed to this rank itself (checked items): the k-th self send
 * with data goes to the k-th self receive with data (algo/p2p.c), which must be as
 * many bytes; a send or receive left without a partner would fail the batch when it
 * ran, so it is refused here. */
HcclResult hccl_api_self_pairs(const char *fn, const HcclSendRecvItem *items, uint32_t n, uint32_t rank);
/* A batch's transfers with peers (checked items) run concurrently, after its copies
 * to the rank itself: a receive whose buffer overlaps another item's buffer (a
 * send's or a receive's) would make the result depend on timing or on that order,
 * so it is refused (E_PARA). Items to the rank itself may overlap each other (copied
 * in order, as memmove). */
HcclResult hccl_api_batch_overlap(const char *fn, const HcclSendRecvItem *items, uint32_t n, uint32_t rank);

/* Pending point-to-point operations inside HcclGroupStart/End (thread-local). */
extern int hccl_api_groups_open; /* threads with a group open */
int hccl_api_group_active_here(void);
static inline int hccl_api_group_active(void)
{
    return __atomic_load_n(&hccl_api_groups_open, __ATOMIC_RELAXED) && hccl_api_group_active_here();
}
/* A call of an operation inside the calling thread's open group failed with res (its
 * WARN just logged): the first such failure is what HcclGroupEnd returns, and the
 * group's point-to-point calls are then not issued. Nothing outside a group. */
void hccl_api_group_failed(HcclResult res);
HcclResult hccl_api_group_add(hccl_comm *c, aclrtStream stream, const HcclSendRecvItem *item);
/* The stream on which an operation of c called on the NULL stream inside a group is
 * queued (one per communicator and group, made on first use; HcclGroupEnd waits for
 * it and reports its failure); NULL when none can be made (the operation then runs
 * at once, as outside a group). */
aclrtStream hccl_api_group_stream(hccl_comm *c);
/* An operation of c other than Send and Recv queued on stream (not NULL) inside a
 * group: c's point-to-point batch at HcclGroupEnd runs after it (group.c). */
void hccl_api_group_note_stream(hccl_comm *c, aclrtStream stream);

#endif
