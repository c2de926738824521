/*
 * conf_p2p.c - conformance of point-to-point operations and the barrier.
 *
 *   pairs:  rank 2k <-> 2k+1, lower rank sends then receives, upper the reverse; every
 *           dtype at counts 0, 1, 2n+1, and 4 MiB once (all queued, one sync).
 *   ring:   even ranks send to r+1 then receive from r-1, odd ranks the reverse.
 *   batch:  HcclBatchSendRecv with receives listed before sends (the library must not
 *           run the items one after another), to r+-1 and r+-2, and to every peer with
 *           uneven counts.
 *   queue:  120 small AllReduces queued before one synchronisation.
 *   groups: HcclGroupStart/End around AllReduces, and around a Send/Recv ring in which
 *           every rank sends first (the group must not run them one by one); and (from
 *           the multicomm suite) a group over two communicators, listed in another
 *           order on odd ranks; a group whose sends are on one stream (or the NULL
 *           stream) and whose receives are on another, 4 MiB each; a group of an
 *           AllReduce on the stream and a Send/Recv ring on the NULL stream.
 *   mixed:  a Send received by a BatchSendRecv item and a BatchSendRecv send item
 *           received by a Recv, with other dtypes on each side (bytes match).
 *   barrier: each rank bumps a counter in shared memory, then HcclBarrier; after the
 *           synchronisation every rank must see all n increments (the last rank is late).
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUARD 16

typedef struct {
    conf_ctx *ctx;
    conf_batch *b;
    int n, r;
} P;

/* Payload from rank `from` to rank `to` for case seed. */
static void payload(unsigned char *dst, size_t len, uint64_t seed, int from, int to)
{
    conf_pattern(dst, len, seed * 1000003ull + (uint64_t)to, (uint64_t)from);
}

static unsigned char *send_buf(P *p, uint64_t seed, int to, size_t len)
{
    unsigned char *h = malloc(len + GUARD), *d = conf_dev(p->b, len + GUARD);
    if (h == NULL) abort();
    payload(h, len + GUARD, seed, p->r, to);
    conf_upload(p->b, d, h, len + GUARD);
    /* the send buffer must come back unchanged */
    conf_expect(p->b, "Send buffer (must be unchanged)", d, h, len + GUARD, HCCL_DATA_TYPE_UINT8, 0);
    free(h);
    return d;
}

static unsigned char *recv_buf(P *p, uint64_t seed, int from, size_t len, const char *label)
{
    unsigned char *h = malloc(len + GUARD), *d = conf_dev(p->b, len + GUARD);
    if (h == NULL) abort();
    conf_pattern(h, len + GUARD, seed ^ 0xabcdefull, 99); /* stale contents */
    conf_upload(p->b, d, h, len + GUARD);
    payload(h, len, seed, from, p->r);
    conf_expect(p->b, label, d, h, len + GUARD, HCCL_DATA_TYPE_UINT8, 0);
    free(h);
    return d;
}

static void send_s(P *p, HcclComm comm, aclrtStream s, HcclDataType dt, uint64_t count, int to, uint64_t seed)
{
    char label[128];
    unsigned char *d = send_buf(p, seed, to, count * conf_dt_size(dt));
    snprintf(label, sizeof label, "Send(%s, count=%llu, to=%d)", conf_dt_name(dt), (unsigned long long)count, to);
    conf_enq(p->b, HcclSend(d, count, dt, (uint32_t)to, comm, s), label);
}

static void recv_s(P *p, HcclComm comm, aclrtStream s, HcclDataType dt, uint64_t count, int from, uint64_t seed)
{
    char label[128];
    snprintf(label, sizeof label, "Recv(%s, count=%llu, from=%d)", conf_dt_name(dt), (unsigned long long)count,
             from);
    unsigned char *d = recv_buf(p, seed, from, count * conf_dt_size(dt), label);
    conf_enq(p->b, HcclRecv(d, count, dt, (uint32_t)from, comm, s), label);
}

static void send_on(P *p, HcclComm comm, HcclDataType dt, uint64_t count, int to, uint64_t seed)
{
    send_s(p, comm, p->ctx->stream, dt, count, to, seed);
}

static void recv_on(P *p, HcclComm comm, HcclDataType dt, uint64_t count, int from, uint64_t seed)
{
    recv_s(p, comm, p->ctx->stream, dt, count, from, seed);
}

static void do_send(P *p, HcclDataType dt, uint64_t count, int to, uint64_t seed)
{
    send_on(p, p->ctx->comm, dt, count, to, seed);
}

static void do_recv(P *p, HcclDataType dt, uint64_t count, int from, uint64_t seed)
{
    recv_on(p, p->ctx->comm, dt, count, from, seed);
}

static void pairs(P *p)
{
    int partner = p->r ^ 1;
    uint64_t seed = 1;
    if (partner >= p->n) return; /* the last rank of an odd count sits out */
    int lower = p->r < partner;
    uint64_t counts[3] = {0, 1, 2 * (uint64_t)p->n + 1};
    p->b = conf_batch_new(p->ctx);
    for (int i = 0; i < CONF_NDTYPES; i++) {
        HcclDataType dt = conf_all_dtypes[i];
        for (int k = 0; k < 3; k++, seed++) {
            if (lower) {
                do_send(p, dt, counts[k], partner, seed);
                do_recv(p, dt, counts[k], partner, seed);
            } else {
                do_recv(p, dt, counts[k], partner, seed);
                do_send(p, dt, counts[k], partner, seed);
            }
        }
    }
    /* 4 MiB each way */
    if (lower) {
        do_send(p, HCCL_DATA_TYPE_FP32, 1u << 20, partner, seed);
        do_recv(p, HCCL_DATA_TYPE_FP32, 1u << 20, partner, seed);
    } else {
        do_recv(p, HCCL_DATA_TYPE_FP32, 1u << 20, partner, seed);
        do_send(p, HCCL_DATA_TYPE_FP32, 1u << 20, partner, seed);
    }
    conf_batch_run(p->b);
}

static void ring(P *p)
{
    int n = p->n, to = (p->r + 1) % n, from = (p->r + n - 1) % n;
    p->b = conf_batch_new(p->ctx);
    for (uint64_t s = 100; s < 103; s++) {
        uint64_t count = 2 * (uint64_t)n + 1 + s;
        if (p->r % 2 == 0) {
            do_send(p, HCCL_DATA_TYPE_INT64, count, to, s);
            do_recv(p, HCCL_DATA_TYPE_INT64, count, from, s);
        } else {
            do_recv(p, HCCL_DATA_TYPE_INT64, count, from, s);
            do_send(p, HCCL_DATA_TYPE_INT64, count, to, s);
        }
    }
    conf_batch_run(p->b);
}

static void batch_items(P *p, HcclSendRecvItem *items, uint32_t nitems, const char *what)
{
    char label[128];
    snprintf(label, sizeof label, "BatchSendRecv(%s, %u items)", what, nitems);
    HcclResult rc = HcclBatchSendRecv(items, nitems, p->ctx->comm, p->ctx->stream);
    memset(items, 0xff, sizeof *items * nitems); /* the library must not read them later */
    conf_enq(p->b, rc, label);
}

static void batch_sendrecv(P *p)
{
    int n = p->n, r = p->r;
    HcclSendRecvItem items[2 * CONF_MAX_RANKS];
    uint32_t k = 0;
    const size_t es = 4;

    /* distances 1 and 2; receives first */
    p->b = conf_batch_new(p->ctx);
    for (int d = 1; d <= 2 && d < n; d++) {
        int from = (r + n - d) % n;
        uint64_t count = 5 + (uint64_t)d;
        char label[96];
        snprintf(label, sizeof label, "BatchSendRecv recv item (distance %d, from %d)", d, from);
        items[k++] = (HcclSendRecvItem){HCCL_RECV, recv_buf(p, 200 + (uint64_t)d, from, count * es, label), count,
                                        HCCL_DATA_TYPE_INT32, (uint32_t)from};
    }
    for (int d = 1; d <= 2 && d < n; d++) {
        int to = (r + d) % n;
        uint64_t count = 5 + (uint64_t)d;
        items[k++] = (HcclSendRecvItem){HCCL_SEND, send_buf(p, 200 + (uint64_t)d, to, count * es), count,
                                        HCCL_DATA_TYPE_INT32, (uint32_t)to};
    }
    batch_items(p, items, k, "distance 1 and 2");

    /* every peer, uneven counts (0 included), sends and receives interleaved */
    k = 0;
    for (int i = 0; i < n; i++) {
        int qs = i, qr = n - 1 - i;
        if (qr != r) {
            uint64_t count = (uint64_t)((qr + r) % 3) * 3;
            char label[96];
            snprintf(label, sizeof label, "BatchSendRecv recv item (all peers, from %d)", qr);
            items[k++] = (HcclSendRecvItem){HCCL_RECV, recv_buf(p, 300, qr, count * 2, label), count,
                                            HCCL_DATA_TYPE_FP16, (uint32_t)qr};
        }
        if (qs != r) {
            uint64_t count = (uint64_t)((qs + r) % 3) * 3;
            items[k++] = (HcclSendRecvItem){HCCL_SEND, send_buf(p, 300, qs, count * 2), count, HCCL_DATA_TYPE_FP16,
                                            (uint32_t)qs};
        }
    }
    if (k) batch_items(p, items, k, "all peers");
    conf_batch_run(p->b);
}

static void barrier(P *p)
{
    conf_ctx *ctx = p->ctx;
    for (int round = 0; round < 3; round++) {
        char what[64];
        snprintf(what, sizeof what, "HcclBarrier round %d", round);
        conf_step(ctx, "%s", what);
        if (round == 1 && p->r == p->n - 1) usleep(200 * 1000); /* a late rank */
        atomic_fetch_add(&g_shared->counter[round], 1);
        if (!conf_ok(ctx, HcclBarrier(ctx->comm, ctx->stream), what)) return;
        if (!conf_sync(ctx, ctx->stream, what)) return;
        int seen = atomic_load(&g_shared->counter[round]);
        if (seen != p->n)
            conf_fail(ctx, "%s: returned before every rank arrived (%d of %d)", what, seen, p->n);
    }
    /* several barriers queued, then one synchronisation */
    for (int i = 0; i < 5; i++)
        if (!conf_ok(ctx, HcclBarrier(ctx->comm, ctx->stream), "HcclBarrier (queued)")) return;
    conf_sync(ctx, ctx->stream, "5 queued barriers");
}

/* AllReduce(int32, SUM) of count elements, rank r contributing r + i + k; queued only. */
static void queue_allreduce(P *p, uint64_t count, int k, const char *label)
{
    int32_t *h = malloc(4 * count + 4);
    if (h == NULL) abort();
    unsigned char *s = conf_dev(p->b, 4 * count), *r = conf_dev(p->b, 4 * count);
    for (uint64_t i = 0; i < count; i++) h[i] = p->r + (int32_t)i + k;
    conf_upload(p->b, s, h, 4 * count);
    for (uint64_t i = 0; i < count; i++) h[i] = p->n * (p->n - 1) / 2 + p->n * ((int32_t)i + k);
    if (conf_enq(p->b, HcclAllReduce(s, r, count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, p->ctx->comm, p->ctx->stream),
                 label))
        conf_expect(p->b, label, r, h, 4 * count, HCCL_DATA_TYPE_INT32, 0);
    free(h);
}

/* Many small operations queued before a single synchronisation. */
static void deep_queue(P *p)
{
    char label[96];
    p->b = conf_batch_new(p->ctx);
    for (int k = 0; k < 120; k++) {
        snprintf(label, sizeof label, "AllReduce #%d of 120 queued", k);
        queue_allreduce(p, 1 + (uint64_t)(k % 7), k, label);
    }
    conf_batch_run(p->b);
}

/* HcclGroupStart/End: collectives in a group; a ring where every rank sends first. */
static void groups(P *p)
{
    conf_ctx *ctx = p->ctx;
    int n = p->n;
    p->b = conf_batch_new(ctx);
    conf_step(ctx, "HcclGroupStart + 3 AllReduce + HcclGroupEnd");
    if (!conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) goto out;
    for (int k = 0; k < 3; k++) queue_allreduce(p, 5 + (uint64_t)k, 1000 + k, "AllReduce in a group");
    conf_ok(ctx, HcclGroupEnd(), "HcclGroupEnd");
    if (n > 1) {
        conf_step(ctx, "HcclGroupStart + Send/Recv ring (all send first) + HcclGroupEnd");
        if (!conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) goto out;
        do_send(p, HCCL_DATA_TYPE_INT32, 1000, (p->r + 1) % n, 400);
        do_recv(p, HCCL_DATA_TYPE_INT32, 1000, (p->r + n - 1) % n, 400);
        conf_ok(ctx, HcclGroupEnd(), "HcclGroupEnd");
    }
    conf_batch_run(p->b);
    p->b = NULL;
    /* A group's sends on one stream and receives on another (or on the NULL stream),
     * 4 MiB each (more than the transports buffer): one batch joining the streams, not
     * one per stream, each of which would wait for the other's half. */
    aclrtStream s2 = NULL;
    if (n > 1 && conf_acl_ok(ctx, aclrtCreateStream(&s2), "aclrtCreateStream")) {
        for (int null_send = 0; null_send < 2; null_send++) {
            conf_step(ctx, "HcclGroupStart + Send on %s, Recv on a second stream (4 MiB ring) + HcclGroupEnd",
                      null_send ? "the NULL stream" : "the stream");
            p->b = conf_batch_new(ctx);
            if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
                send_s(p, ctx->comm, null_send ? NULL : ctx->stream, HCCL_DATA_TYPE_INT32, 1u << 20, (p->r + 1) % n,
                       410 + (uint64_t)null_send);
                recv_s(p, ctx->comm, s2, HCCL_DATA_TYPE_INT32, 1u << 20, (p->r + n - 1) % n,
                       410 + (uint64_t)null_send);
                conf_ok(ctx, HcclGroupEnd(), "HcclGroupEnd");
            }
            conf_sync(ctx, s2, "the second stream");
            conf_batch_run(p->b);
        }
        aclrtDestroyStream(s2);
    }
    /* An AllReduce on the stream, then a Send/Recv ring on the NULL stream, in one
     * group: the ring (run by HcclGroupEnd) must follow the AllReduce on every rank,
     * not run beside it in whichever order each rank's threads take them (8 times:
     * it deadlocked in some runs only). */
    for (int k = 0; n > 1 && k < 8 && ctx->fails == 0; k++) {
        conf_step(ctx, "HcclGroupStart + AllReduce on the stream + Send/Recv ring on the NULL stream + HcclGroupEnd "
                  "(%d of 8)", k + 1);
        p->b = conf_batch_new(ctx);
        if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
            queue_allreduce(p, 1u << 20, 1100 + k, "AllReduce on the stream in a group with NULL-stream Send/Recv");
            send_s(p, ctx->comm, NULL, HCCL_DATA_TYPE_INT32, 1000, (p->r + 1) % n, 430 + (uint64_t)k);
            recv_s(p, ctx->comm, NULL, HCCL_DATA_TYPE_INT32, 1000, (p->r + n - 1) % n, 430 + (uint64_t)k);
            conf_ok(ctx, HcclGroupEnd(), "HcclGroupEnd");
        }
        conf_batch_run(p->b);
    }
    return;
out:
    conf_batch_run(p->b);
}

/* Point-to-point calls of different kinds match each other by bytes, as NCCL's do:
 * a Send with a BatchSendRecv receive item, a BatchSendRecv send item with a Recv,
 * with other dtypes on each side (24 bytes each way between rank 2k and 2k+1). */
static void mixed_kinds(P *p)
{
    int partner = p->r ^ 1;
    if (partner >= p->n) return;
    p->b = conf_batch_new(p->ctx);
    if (p->r < partner) {
        send_on(p, p->ctx->comm, HCCL_DATA_TYPE_FP32, 6, partner, 420);
        recv_on(p, p->ctx->comm, HCCL_DATA_TYPE_FP16, 12, partner, 421);
    } else {
        HcclSendRecvItem it = {HCCL_RECV, recv_buf(p, 420, partner, 24, "BatchSendRecv recv item (INT32 x 6) of a Send"),
                               6, HCCL_DATA_TYPE_INT32, (uint32_t)partner};
        batch_items(p, &it, 1, "recv of a Send");
        it = (HcclSendRecvItem){HCCL_SEND, send_buf(p, 421, partner, 24), 24, HCCL_DATA_TYPE_UINT8,
                                (uint32_t)partner};
        batch_items(p, &it, 1, "send to a Recv");
    }
    conf_batch_run(p->b);
}

/* One group over both communicators on one stream, listed in the opposite order on
 * odd ranks: a ring of 8 MiB per communicator (more than the transports buffer), so
 * the batches must run in the same communicator order on every rank. */
void conf_p2p_two_comms_group(conf_ctx *ctx)
{
    P p = {.ctx = ctx, .n = ctx->nranks, .r = ctx->rank};
    if (p.n < 2) return;
    const uint64_t count = 2u << 20; /* int32: 8 MiB */
    p.b = conf_batch_new(ctx);
    conf_step(ctx, "HcclGroupStart + Send/Recv rings on two communicators in rank-dependent order + HcclGroupEnd");
    if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
        for (int k = 0; k < 2; k++) {
            int which = p.r % 2 ? 1 - k : k;
            HcclComm c = which ? ctx->comm2 : ctx->comm;
            send_on(&p, c, HCCL_DATA_TYPE_INT32, count, (p.r + 1) % p.n, 500 + (uint64_t)which);
            recv_on(&p, c, HCCL_DATA_TYPE_INT32, count, (p.r + p.n - 1) % p.n, 500 + (uint64_t)which);
        }
        conf_ok(ctx, HcclGroupEnd(), "HcclGroupEnd");
    }
    conf_batch_run(p.b);
}

void conf_suite_p2p(conf_ctx *ctx)
{
    P p = {.ctx = ctx, .n = ctx->nranks, .r = ctx->rank};
    barrier(&p);
    deep_queue(&p);
    groups(&p);
    if (p.n < 2) return; /* nothing to send to */
    pairs(&p);
    ring(&p);
    batch_sendrecv(&p);
    mixed_kinds(&p);
}
