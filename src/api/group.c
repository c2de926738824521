/*
 * group.c - HcclGroupStart / HcclGroupEnd: point-to-point calls made inside a group
 * are collected (per thread) and issued at the outermost HcclGroupEnd as one
 * BatchSendRecv per communicator, so any order of sends and receives inside a group
 * completes without deadlock, as with NCCL groups. Calls of one communicator on
 * several streams join them, as NCCL's do: the batch runs on the first stream named
 * after the work queued before it on the others (their events), and the others'
 * later work waits for the batch (the others include the streams of the
 * communicator's other operations queued on a stream inside the group: run beside
 * them, the batch would take the communicator first on one rank and second on
 * another); with the NULL stream among them, the others are
 * synchronized and the batch runs before HcclGroupEnd returns: alone in the calling
 * thread, or, when the group has batches of several communicators, on a stream of its
 * own that HcclGroupEnd synchronizes after issuing them all (one thread driving the
 * ranks of several communicators, as with HcclCommInitAll, would otherwise wait in
 * the first rank's batch for the next rank's, never issued). (Two batches, one per
 * stream, would each wait for the other's half under the communicator's one
 * operation at a time.) The batches of
 * several communicators go out in the order of the communicators' identities (the
 * same on every rank), not in the order of the calls: on one in-order stream, rank
 * 0's A-then-B against rank 1's B-then-A would wait for each other. Collectives
 * inside a group are issued at once on the streams they name; those on the NULL
 * stream are queued, in call order, on a stream of their communicator's own
 * (hccl_api_group_stream), where that communicator's NULL-stream batch follows them,
 * and HcclGroupEnd waits for these streams after issuing every batch: as in NCCL,
 * a group's operations are complete when HcclGroupEnd returns, and one thread can
 * issue a collective on each of several ranks' communicators without waiting in the
 * first for the others. An operation called inside the group that fails (its
 * argument checks, or queueing it) fails the group, as in NCCL: HcclGroupEnd returns
 * the first such failure, quoting its message, and issues none of the group's
 * point-to-point calls (its collectives were queued when called; it still waits for
 * them).
 */
#include "api_int.h"

#include "util/errors.h"
#include "util/log.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pending {
    hccl_comm *comm; /* a handle while collected (no reference: destroying the
                      * communicator meanwhile never waits for the group); at
                      * HcclGroupEnd a reference, or NULL once destroyed */
    aclrtStream stream;
    HcclSendRecvItem item;
    uint32_t seq; /* call order */
} pending;

static __thread int group_depth;
/* The first failure of an operation called inside the open group, and its message:
 * HcclGroupEnd returns it and issues none of the group's point-to-point calls. */
static __thread HcclResult group_error;
static __thread char group_error_msg[768];
static __thread pending *group_ops;
static __thread uint32_t group_n, group_cap;

/* Threads with a group open, process-wide: an operation outside any group reads this
 * word, not its thread's depth (a thread-local of a shared library costs a call to
 * __tls_get_addr on every operation). */
int hccl_api_groups_open;

int hccl_api_group_active_here(void) { return group_depth > 0; }

/* The group's streams for NULL-stream operations, one per communicator (a reference). */
typedef struct group_stream {
    hccl_comm *comm;
    aclrtStream stream;
} group_stream;
static __thread group_stream *group_streams;
static __thread uint32_t group_nstreams, group_streams_cap;

static aclrtStream group_stream_of(const hccl_comm *c)
{
    for (uint32_t i = 0; i < group_nstreams; i++)
        if (group_streams[i].comm == c) return group_streams[i].stream;
    return NULL;
}

aclrtStream hccl_api_group_stream(hccl_comm *c)
{
    aclrtStream s = group_stream_of(c);
    if (s) return s;
    group_stream *g = hccl_grow(group_streams, &group_streams_cap, group_nstreams, sizeof *g, 8);
    if (!g) return NULL;
    group_streams = g;
    if (aclrtCreateStream(&s) != ACL_SUCCESS) return NULL;
    hccl_comm_retain(c);
    group_streams[group_nstreams++] = (group_stream){c, s};
    return s;
}

/* The streams on which operations other than Send and Recv were queued inside the
 * group, per communicator (no reference: only compared with a communicator that
 * HcclGroupEnd holds). */
static __thread group_stream *group_coll_streams;
static __thread uint32_t group_ncoll, group_coll_cap;

void hccl_api_group_note_stream(hccl_comm *c, aclrtStream stream)
{
    for (uint32_t i = 0; i < group_ncoll; i++)
        if (group_coll_streams[i].comm == c && group_coll_streams[i].stream == stream) return;
    group_stream *g = hccl_grow(group_coll_streams, &group_coll_cap, group_ncoll, sizeof *g, 8);
    if (!g) return; /* then the batch may run beside it, as before */
    group_coll_streams = g;
    group_coll_streams[group_ncoll++] = (group_stream){c, stream};
}

static uint32_t coll_streams_of(const hccl_comm *c)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < group_ncoll; i++) k += group_coll_streams[i].comm == c;
    return k;
}

/* Wait for stream s of communicator c at HcclGroupEnd: the group's result, unless an
 * earlier failure is already it (res). */
static HcclResult group_wait(hccl_comm *c, aclrtStream s, HcclResult res)
{
    if (aclrtSynchronizeStream(s) != ACL_SUCCESS && res == HCCL_SUCCESS) {
        res = (HcclResult)__atomic_load_n(&c->async_error, __ATOMIC_ACQUIRE);
        if (res == HCCL_SUCCESS) res = HCCL_E_RUNTIME;
    }
    aclrtDestroyStream(s);
    hccl_comm_release(c);
    return res;
}

void hccl_api_group_failed(HcclResult res)
{
    if (group_depth == 0 || res == HCCL_SUCCESS || group_error != HCCL_SUCCESS) return;
    group_error = res;
    snprintf(group_error_msg, sizeof group_error_msg, "%s", hccl_log_last_warn());
}

HcclResult hccl_api_group_add(hccl_comm *c, aclrtStream stream, const HcclSendRecvItem *item)
{
    pending *p = hccl_grow(group_ops, &group_cap, group_n, sizeof *p, 16);
    if (!p) return HCCL_E_MEMORY;
    group_ops = p;
    group_ops[group_n] = (pending){c, stream, *item, group_n};
    group_n++;
    return HCCL_SUCCESS;
}

HcclResult HcclGroupStart(void)
{
    if (group_depth++ == 0) __atomic_add_fetch(&hccl_api_groups_open, 1, __ATOMIC_RELAXED);
    return HCCL_SUCCESS;
}

/* The pending items by their communicator's identity, then in call order. */
static int by_comm(const void *x, const void *y)
{
    const pending *a = x, *b = y;
    if (a->comm->ident.id != b->comm->ident.id) return a->comm->ident.id < b->comm->ident.id ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Streams[0] (the batch's) after the work queued on streams[1..n-1]: their events
 * (after = 0); or those after the batch (after = 1). Streams[0] NULL: synchronize the
 * others first, nothing after. */
static HcclResult join(aclrtStream *streams, uint32_t n, int after)
{
    if (n < 2 || (after && !streams[0])) return HCCL_SUCCESS;
    aclrtEvent ev = NULL;
    if (streams[0] && aclrtCreateEvent(&ev) != ACL_SUCCESS) return HCCL_E_RUNTIME;
    aclError e = ACL_SUCCESS;
    for (uint32_t k = 1; k < n && e == ACL_SUCCESS; k++) {
        if (!streams[0]) {
            e = aclrtSynchronizeStream(streams[k]);
            continue;
        }
        aclrtStream from = after ? streams[0] : streams[k], to = after ? streams[k] : streams[0];
        e = aclrtRecordEvent(ev, from);
        if (e == ACL_SUCCESS) e = aclrtStreamWaitEvent(to, ev);
    }
    if (ev) aclrtDestroyEvent(ev); /* pending records and waits keep it */
    if (e == ACL_SUCCESS) return HCCL_SUCCESS;
    HCCL_WARN(COLL, "HcclGroupEnd: cannot join the streams of a communicator's calls (aclError %d: not a live "
              "stream?)", (int)e);
    return e == ACL_ERROR_RT_INVALID_HANDLE || e == ACL_ERROR_INVALID_PARAM ? HCCL_E_PARA : HCCL_E_RUNTIME;
}

HcclResult HcclGroupEnd(void)
{
    if (group_depth == 0) {
        HCCL_WARN(COLL, "HcclGroupEnd without HcclGroupStart");
        return HCCL_E_PARA;
    }
    if (--group_depth > 0) return HCCL_SUCCESS;
    __atomic_sub_fetch(&hccl_api_groups_open, 1, __ATOMIC_RELAXED);
    HcclResult res = group_error;
    if (res != HCCL_SUCCESS) { /* a call inside the group failed: its peers' batches
                                * would pair with what is left of this rank's, item
                                * for item, so none of it is issued (as NCCL's
                                * ncclGroupEnd launches nothing of a failed group) */
        HCCL_WARN(COLL, "HcclGroupEnd: a call inside the group failed (%s: %s); none of the group's %u "
                  "point-to-point calls were issued", hccl_result_str(res), group_error_msg, group_n);
        group_n = 0;
        group_error = HCCL_SUCCESS;
    }
    for (uint32_t i = 0; i < group_n; i++) { /* a reference per item, as a call takes */
        hccl_comm *h = group_ops[i].comm;
        if (!h || hccl_comm_acquire("HcclGroupEnd", (HcclComm)h, &group_ops[i].comm) == HCCL_SUCCESS) continue;
        HCCL_WARN(COLL, "HcclGroupEnd: communicator %p was destroyed inside the group; its point-to-point calls are "
                  "dropped", (void *)h);
        for (uint32_t j = i; j < group_n; j++) /* this item and the later ones of that handle */
            if (group_ops[j].comm == h) group_ops[j].comm = NULL;
        res = HCCL_E_PARA;
    }
    uint32_t live = 0;
    for (uint32_t i = 0; i < group_n; i++)
        if (group_ops[i].comm) group_ops[live++] = group_ops[i];
    group_n = live;
    if (group_n > 1) qsort(group_ops, group_n, sizeof *group_ops, by_comm);
    uint32_t ncomms = 0;
    for (uint32_t i = 0; i < group_n; i++) ncomms += !i || group_ops[i].comm != group_ops[i - 1].comm;
    /* NULL-stream batches of a group of several communicators: their streams. */
    typedef struct held_batch {
        hccl_comm *comm; /* a reference */
        aclrtStream stream;
    } held_batch;
    held_batch *held = ncomms > 1 ? hccl_malloc(sizeof *held * ncomms) : NULL;
    uint32_t nheld = 0;
    for (uint32_t i = 0; i < group_n; i++) {
        if (!group_ops[i].comm) continue;
        hccl_comm *c = group_ops[i].comm;
        uint32_t n = 0;
        for (uint32_t j = i; j < group_n; j++)
            if (group_ops[j].comm == c) n++;
        hccl_op_args *a = hccl_calloc(1, sizeof *a);
        HcclSendRecvItem *items = hccl_malloc(sizeof *items * n);
        /* [0]: the batch's; then the calls' other streams and those of c's other
         * operations in the group (the batch follows them: on their own streams
         * they would run beside it, in either order on each rank) */
        aclrtStream *streams = hccl_malloc(sizeof *streams * (n + coll_streams_of(c)));
        if (!a || !items || !streams) {
            hccl_free(a);
            hccl_free(items);
            hccl_free(streams);
            a = NULL;
            items = NULL;
            streams = NULL;
            res = HCCL_E_MEMORY;
        }
        uint32_t k = 0, ns = 0;
        for (uint32_t j = i; j < group_n; j++) {
            if (group_ops[j].comm != c) continue;
            if (items) {
                items[k++] = group_ops[j].item;
                aclrtStream s = group_ops[j].stream;
                uint32_t q = 0;
                while (q < ns && streams[q] != s) q++;
                if (q == ns) streams[ns++] = s;
                if (!s && q) { /* the NULL stream first: the batch runs there */
                    streams[q] = streams[0];
                    streams[0] = NULL;
                }
            }
            group_ops[j].comm = NULL;
            if (j != i) hccl_comm_release(c);
        }
        for (uint32_t q, g = 0; streams && g < group_ncoll; g++) {
            if (group_coll_streams[g].comm != c) continue;
            for (q = 0; q < ns && streams[q] != group_coll_streams[g].stream; q++) {}
            if (q == ns) streams[ns++] = group_coll_streams[g].stream;
        }
        HcclResult self = a && items ? hccl_api_self_pairs("HcclGroupEnd", items, n, c->rank) : HCCL_SUCCESS;
        if (self == HCCL_SUCCESS && a && items) self = hccl_api_batch_overlap("HcclGroupEnd", items, n, c->rank);
        if (self == HCCL_SUCCESS && a && items) self = join(streams, ns, 0);
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
            aclrtStream on = streams[0], own = NULL;
            if (!on) on = group_stream_of(c); /* after the group's NULL-stream collectives */
            if (!on && held && aclrtCreateStream(&own) == ACL_SUCCESS) {
                hccl_comm_retain(c);
                held[nheld++] = (held_batch){c, own};
                on = own;
            }
            HcclResult r = hccl_comm_enqueue(c, a, on); /* takes our reference to c */
            if (r == HCCL_SUCCESS) r = join(streams, ns, 1);
            if (r != HCCL_SUCCESS && res == HCCL_SUCCESS) res = r;
        } else {
            hccl_comm_release(c);
        }
        hccl_free(streams);
    }
    for (uint32_t k = 0; k < nheld; k++) res = group_wait(held[k].comm, held[k].stream, res);
    hccl_free(held);
    for (uint32_t k = 0; k < group_nstreams; k++) res = group_wait(group_streams[k].comm, group_streams[k].stream, res);
    hccl_free(group_streams);
    group_streams = NULL;
    group_nstreams = group_streams_cap = 0;
    hccl_free(group_coll_streams);
    group_coll_streams = NULL;
    group_ncoll = group_coll_cap = 0;
    group_n = 0;
    hccl_free(group_ops);
    group_ops = NULL;
    group_cap = 0;
    return res;
}
