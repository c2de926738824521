/*
 * group.c - HcclGroupStart / HcclGroupEnd: point-to-point calls made inside a group
 * are collected (per thread) and issued at the outermost HcclGroupEnd as one
 * BatchSendRecv per (communicator, stream), so any order of sends and receives
 * inside a group completes without deadlock, as with NCCL groups. The batches of
 * several communicators go out in the order of the communicators' identities (the
 * same on every rank), not in the order of the calls: on one in-order stream, rank
 * 0's A-then-B against rank 1's B-then-A would wait for each other. Collectives
 * inside a group are issued at once.
 */
#include "api_int.h"

#include "util/log.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct pending {
    hccl_comm *comm; /* holds a reference */
    aclrtStream stream;
    HcclSendRecvItem item;
    uint32_t seq; /* call order */
} pending;

static __thread int group_depth;
static __thread pending *group_ops;
static __thread uint32_t group_n, group_cap;

int hccl_api_group_active(void) { return group_depth > 0; }

HcclResult hccl_api_group_add(hccl_comm *c, aclrtStream stream, const HcclSendRecvItem *item)
{
    if (group_n == group_cap) {
        uint32_t cap = group_cap ? group_cap * 2 : 16;
        pending *p = hccl_malloc(sizeof *p * cap);
        if (!p) return HCCL_E_MEMORY;
        if (group_n) memcpy(p, group_ops, sizeof *p * group_n);
        hccl_free(group_ops);
        group_ops = p;
        group_cap = cap;
    }
    hccl_comm_retain(c);
    group_ops[group_n] = (pending){c, stream, *item, group_n};
    group_n++;
    return HCCL_SUCCESS;
}

HcclResult HcclGroupStart(void)
{
    group_depth++;
    return HCCL_SUCCESS;
}

/* The pending items by their communicator's identity, then in call order. */
static int by_comm(const void *x, const void *y)
{
    const pending *a = x, *b = y;
    if (a->comm->ident.id != b->comm->ident.id) return a->comm->ident.id < b->comm->ident.id ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

HcclResult HcclGroupEnd(void)
{
    if (group_depth == 0) {
        HCCL_WARN(COLL, "HcclGroupEnd without HcclGroupStart");
        return HCCL_E_PARA;
    }
    if (--group_depth > 0) return HCCL_SUCCESS;
    HcclResult res = HCCL_SUCCESS;
    if (group_n > 1) qsort(group_ops, group_n, sizeof *group_ops, by_comm);
    for (uint32_t i = 0; i < group_n; i++) {
        if (!group_ops[i].comm) continue;
        hccl_comm *c = group_ops[i].comm;
        aclrtStream s = group_ops[i].stream;
        uint32_t n = 0;
        for (uint32_t j = i; j < group_n; j++)
            if (group_ops[j].comm == c && group_ops[j].stream == s) n++;
        hccl_op_args *a = hccl_calloc(1, sizeof *a);
        HcclSendRecvItem *items = hccl_malloc(sizeof *items * n);
        if (!a || !items) {
            hccl_free(a);
            hccl_free(items);
            a = NULL;
            items = NULL;
            res = HCCL_E_MEMORY;
        }
        uint32_t k = 0;
        for (uint32_t j = i; j < group_n; j++) {
            if (group_ops[j].comm != c || group_ops[j].stream != s) continue;
            if (items) items[k++] = group_ops[j].item;
            group_ops[j].comm = NULL;
            if (j != i) hccl_comm_release(c);
        }
        HcclResult self = a && items ? hccl_api_self_pairs("HcclGroupEnd", items, n, c->rank) : HCCL_SUCCESS;
        if (self != HCCL_SUCCESS) {
            hccl_free(a);
            hccl_free(items);
            hccl_comm_release(c);
            if (res == HCCL_SUCCESS) res = self;
        } else if (a && items) {
            a->type = HCCL_OP_BATCH_SEND_RECV;
            a->dtype = HCCL_DATA_TYPE_INT8;
            a->items = items;
            a->nitems = n;
            HcclResult r = hccl_comm_enqueue(c, a, s); /* takes our reference to c */
            if (r != HCCL_SUCCESS && res == HCCL_SUCCESS) res = r;
        } else {
            hccl_comm_release(c);
        }
    }
    group_n = 0;
    hccl_free(group_ops);
    group_ops = NULL;
    group_cap = 0;
    return res;
}
