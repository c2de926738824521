/*
 * conf_coll.c - conformance of the collectives: AllReduce, Reduce, ReduceScatter,
 * ReduceScatterV (every reducible dtype x SUM/PROD/MAX/MIN), AllGather, AllGatherV,
 * Broadcast, Scatter, HcclGather, AlltoAll, AlltoAllV, AlltoAllVC (every dtype, moved
 * bit for bit), at counts 0, 1, not divisible by nranks and a few MiB, in place
 * (sendBuf == recvBuf, and the NCCL-style offset form where it exists), out of place,
 * and with recvBuf partly overlapping sendBuf (AllReduce, Reduce, ReduceScatter, AlltoAll;
 * ReduceScatterV in place with blocks of sendBuf that overlap each other).
 *
 * Every buffer gets GUARD bytes after its end that no operation may touch; out-of-place
 * operations must leave sendBuf unchanged; receive buffers start filled with a pattern so
 * a missing write is seen. One batch queues all cases of one dtype before one
 * aclrtSynchronizeStream. Expected values are computed here from the inputs every rank
 * can regenerate (conf_value / conf_pattern are pure functions of seed, rank, index).
 */
#include "conf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 16

typedef struct {
    conf_ctx *ctx;
    conf_batch *b;
    int n, r;
    uint64_t seed;
    HcclComm comm;
    aclrtStream stream;
} T;

typedef struct {
    unsigned char *dev;
    unsigned char *init; /* what was uploaded */
    unsigned char *exp;  /* what must be there after the batch */
    size_t bytes, total;
} buf_t;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) abort();
    return p;
}

static buf_t *newbuf(T *t, size_t bytes, uint64_t seed)
{
    buf_t *x = xmalloc(sizeof *x);
    x->bytes = bytes;
    x->total = bytes + GUARD;
    x->dev = conf_dev(t->b, x->total);
    x->init = xmalloc(x->total);
    x->exp = xmalloc(x->total);
    conf_pattern(x->init, x->total, seed ^ 0x5a5a5a5aull, (uint64_t)t->r);
    return x;
}

/* Uploads init and makes the expectation "unchanged". */
static void upload(T *t, buf_t *x)
{
    conf_upload(t->b, x->dev, x->init, x->total);
    memcpy(x->exp, x->init, x->total);
}

static void expect_range(T *t, buf_t *x, size_t off, size_t len, const char *label, const char *what,
                         HcclDataType dt, int byvalue)
{
    char l[300];
    snprintf(l, sizeof l, "%s %s", label, what);
    conf_expect(t->b, l, x->dev + off, x->exp + off, len, dt, byvalue);
}

static void expect_all(T *t, buf_t *x, const char *label, const char *what, HcclDataType dt, int byvalue)
{
    expect_range(t, x, 0, x->total, label, what, dt, byvalue);
}

static void freebuf(buf_t *x)
{
    if (x == NULL) return;
    free(x->init);
    free(x->exp);
    free(x);
}

/* Input values of rank `rank` for elements idx0.. into a host array at el offset off. */
static void put_vals(unsigned char *host, size_t off, uint64_t nel, HcclDataType dt, HcclReduceOp op, int n,
                     int rank, uint64_t seed, uint64_t idx0)
{
    size_t es = conf_dt_size(dt);
    for (uint64_t k = 0; k < nel; k++)
        conf_put(dt, host + (off + k) * es, conf_value(dt, op, n, rank, idx0 + k, seed));
}

static void put_reduced(unsigned char *host, size_t off, uint64_t nel, HcclDataType dt, HcclReduceOp op, int n,
                        uint64_t seed, uint64_t idx0)
{
    size_t es = conf_dt_size(dt);
    for (uint64_t k = 0; k < nel; k++) {
        double acc = conf_value(dt, op, n, 0, idx0 + k, seed);
        for (int q = 1; q < n; q++) acc = conf_apply(op, acc, conf_value(dt, op, n, q, idx0 + k, seed));
        conf_put(dt, host + (off + k) * es, acc);
    }
}

/* ---- reducing collectives --------------------------------------------------------- */

/* Names of the placement modes of AllReduce and Reduce. */
static const char *placement(int inplace)
{
    static const char *const names[] = {"out-of-place", "in-place", "recvBuf = sendBuf + 1 element",
                                        "sendBuf = recvBuf + 1 element"};
    return names[inplace];
}

/* AllReduce (root < 0) or Reduce whose buffers partly overlap, in one allocation of
 * count + 1 elements: inplace 2 puts recvBuf one element after sendBuf, 3 sendBuf one
 * after recvBuf. The result is what separate buffers would give; the element of
 * sendBuf outside recvBuf stays as it was, and so does all of it off the root. */
static void t_reducing_shifted(T *t, HcclDataType dt, HcclReduceOp op, uint64_t count, int root, int inplace)
{
    size_t es = conf_dt_size(dt), so = inplace == 2 ? 0 : 1, ro = 1 - so;
    uint64_t seed = ++t->seed;
    char label[160];
    if (root < 0)
        snprintf(label, sizeof label, "AllReduce(%s, %s, count=%llu, %s)", conf_dt_name(dt), conf_op_name(op),
                 (unsigned long long)count, placement(inplace));
    else
        snprintf(label, sizeof label, "Reduce(%s, %s, count=%llu, root=%d, %s)", conf_dt_name(dt),
                 conf_op_name(op), (unsigned long long)count, root, placement(inplace));
    buf_t *b = newbuf(t, (count + 1) * es, seed);
    put_vals(b->init, so, count, dt, op, t->n, t->r, seed, 0);
    upload(t, b);
    int gets = root < 0 || root == t->r;
    if (gets) put_reduced(b->exp, ro, count, dt, op, t->n, seed, 0);
    unsigned char *send = b->dev + so * es, *recv = b->dev + ro * es;
    HcclResult rc = root < 0 ? HcclAllReduce(send, recv, count, dt, op, t->comm, t->stream)
                             : HcclReduce(send, recv, count, dt, op, (uint32_t)root, t->comm, t->stream);
    if (conf_enq(t->b, rc, label)) {
        if (gets) {
            expect_range(t, b, ro * es, count * es, label, "recvBuf", dt, 1);
            expect_range(t, b, ro ? 0 : count * es, es, label, "the element of sendBuf outside recvBuf", dt, 0);
            expect_range(t, b, (count + 1) * es, GUARD, label, "guard", dt, 0);
        } else {
            expect_all(t, b, label, "sendBuf off the root (must be unchanged)", dt, 0);
        }
    }
    freebuf(b);
}

/* inplace: 0 out of place, 1 sendBuf == recvBuf, 2 and 3 partial overlaps (above) */
static void t_allreduce(T *t, HcclDataType dt, HcclReduceOp op, uint64_t count, int inplace)
{
    if (inplace >= 2) {
        t_reducing_shifted(t, dt, op, count, -1, inplace);
        return;
    }
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed;
    char label[128];
    snprintf(label, sizeof label, "AllReduce(%s, %s, count=%llu, %s)", conf_dt_name(dt), conf_op_name(op),
             (unsigned long long)count, placement(inplace));
    buf_t *sb = newbuf(t, count * es, seed), *rb = inplace ? sb : newbuf(t, count * es, seed + 1000);
    put_vals(sb->init, 0, count, dt, op, t->n, t->r, seed, 0);
    upload(t, sb);
    if (!inplace) upload(t, rb);
    put_reduced(rb->exp, 0, count, dt, op, t->n, seed, 0);
    if (conf_enq(t->b, HcclAllReduce(sb->dev, rb->dev, count, dt, op, t->comm, t->stream), label)) {
        expect_all(t, rb, label, "recvBuf", dt, 1);
        if (!inplace) expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    freebuf(sb);
    if (!inplace) freebuf(rb);
}

/* inplace as t_allreduce's */
static void t_reduce(T *t, HcclDataType dt, HcclReduceOp op, uint64_t count, int root, int inplace)
{
    if (inplace >= 2) {
        t_reducing_shifted(t, dt, op, count, root, inplace);
        return;
    }
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed;
    char label[128];
    snprintf(label, sizeof label, "Reduce(%s, %s, count=%llu, root=%d, %s)", conf_dt_name(dt), conf_op_name(op),
             (unsigned long long)count, root, placement(inplace));
    buf_t *sb = newbuf(t, count * es, seed), *rb = inplace ? sb : newbuf(t, count * es, seed + 1000);
    put_vals(sb->init, 0, count, dt, op, t->n, t->r, seed, 0);
    upload(t, sb);
    if (!inplace) upload(t, rb);
    if (t->r == root) put_reduced(rb->exp, 0, count, dt, op, t->n, seed, 0);
    if (conf_enq(t->b, HcclReduce(sb->dev, rb->dev, count, dt, op, (uint32_t)root, t->comm, t->stream), label)) {
        if (t->r == root) expect_all(t, rb, label, "recvBuf at root", dt, 1);
        else if (!inplace) expect_range(t, rb, count * es, GUARD, label, "guard after recvBuf", dt, 0);
        if (!inplace) expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    freebuf(sb);
    if (!inplace) freebuf(rb);
}

/* inplace: 0 out of place, 1 sendBuf == recvBuf, 2 recvBuf = sendBuf + rank * recvCount */
static void t_reduce_scatter(T *t, HcclDataType dt, HcclReduceOp op, uint64_t rc, int inplace)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed, n = (uint64_t)t->n;
    char label[128];
    snprintf(label, sizeof label, "ReduceScatter(%s, %s, recvCount=%llu, %s)", conf_dt_name(dt), conf_op_name(op),
             (unsigned long long)rc, inplace == 0 ? "out-of-place" : inplace == 1 ? "in-place" : "in-place+offset");
    buf_t *sb = newbuf(t, n * rc * es, seed), *rb = NULL;
    put_vals(sb->init, 0, n * rc, dt, op, t->n, t->r, seed, 0);
    upload(t, sb);
    unsigned char *recv;
    if (inplace == 0) {
        rb = newbuf(t, rc * es, seed + 1000);
        upload(t, rb);
        put_reduced(rb->exp, 0, rc, dt, op, t->n, seed, (uint64_t)t->r * rc);
        recv = rb->dev;
    } else {
        size_t off = inplace == 1 ? 0 : (size_t)t->r * rc;
        put_reduced(sb->exp, off, rc, dt, op, t->n, seed, (uint64_t)t->r * rc);
        recv = sb->dev + off * es;
    }
    if (conf_enq(t->b, HcclReduceScatter(sb->dev, recv, rc, dt, op, t->comm, t->stream), label)) {
        if (inplace == 0) {
            expect_all(t, rb, label, "recvBuf", dt, 1);
            expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
        } else {
            size_t off = inplace == 1 ? 0 : (size_t)t->r * rc * es;
            expect_range(t, sb, off, rc * es, label, "recvBuf", dt, 1);
            expect_range(t, sb, n * rc * es, GUARD, label, "guard", dt, 0);
        }
    }
    freebuf(sb);
    freebuf(rb);
}

/* ReduceScatter whose recvBuf starts one element into sendBuf (one allocation of
 * n * rc + 1 elements): partly overlapping buffers that are not the in-place form.
 * recvBuf gets what separate buffers give; the elements of sendBuf outside recvBuf
 * stay as they were. */
static void t_reduce_scatter_shifted(T *t, HcclDataType dt, HcclReduceOp op, uint64_t rc)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed, n = (uint64_t)t->n;
    char label[128];
    snprintf(label, sizeof label, "ReduceScatter(%s, %s, recvCount=%llu, recvBuf = sendBuf + 1 element)",
             conf_dt_name(dt), conf_op_name(op), (unsigned long long)rc);
    buf_t *b = newbuf(t, (n * rc + 1) * es, seed);
    put_vals(b->init, 0, n * rc, dt, op, t->n, t->r, seed, 0);
    upload(t, b);
    put_reduced(b->exp, 1, rc, dt, op, t->n, seed, (uint64_t)t->r * rc);
    if (conf_enq(t->b, HcclReduceScatter(b->dev, b->dev + es, rc, dt, op, t->comm, t->stream), label))
        expect_all(t, b, label, "sendBuf and recvBuf", dt, 1);
    freebuf(b);
}

/* ReduceScatterV in place whose blocks of sendBuf overlap: rank q's block starts at
 * element q, so every rank's own block (its recvBuf) is also part of its neighbours'
 * blocks, which the other ranks still read while it is written. */
static void t_reduce_scatter_v_overlapping(T *t, HcclDataType dt, HcclReduceOp op, uint64_t rc)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed, n = (uint64_t)t->n, total = rc + n - 1;
    uint64_t *cnt = xmalloc(sizeof(uint64_t) * n), *displ = xmalloc(sizeof(uint64_t) * n);
    for (uint64_t q = 0; q < n; q++) {
        cnt[q] = rc;
        displ[q] = q;
    }
    char label[128];
    snprintf(label, sizeof label, "ReduceScatterV(%s, %s, recvCount=%llu, blocks at elements 0, 1, ..., in place)",
             conf_dt_name(dt), conf_op_name(op), (unsigned long long)rc);
    buf_t *b = newbuf(t, total * es, seed);
    put_vals(b->init, 0, total, dt, op, t->n, t->r, seed, 0);
    upload(t, b);
    put_reduced(b->exp, (size_t)t->r, rc, dt, op, t->n, seed, (uint64_t)t->r);
    if (conf_enq(t->b, HcclReduceScatterV(b->dev, cnt, displ, b->dev + (size_t)t->r * es, rc, dt, op, t->comm,
                                          t->stream), label))
        expect_all(t, b, label, "sendBuf and recvBuf", dt, 1);
    free(cnt);
    free(displ);
    freebuf(b);
}

/* Uneven counts (some zero) and displacements in reverse rank order with gaps. */
static void v_layout(int n, uint64_t seed, int zero, uint64_t *cnt, uint64_t *displ, uint64_t *total, int reverse,
                     uint64_t gap)
{
    uint64_t pos = 0;
    for (int q = 0; q < n; q++) cnt[q] = zero ? 0 : ((uint64_t)q * 3 + seed) % 4;
    for (int k = 0; k < n; k++) {
        int q = reverse ? n - 1 - k : k;
        displ[q] = pos;
        pos += cnt[q] + gap;
    }
    *total = pos;
}

static void t_reduce_scatter_v(T *t, HcclDataType dt, HcclReduceOp op, int zero, int inplace)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed, total;
    int n = t->n, r = t->r;
    uint64_t *cnt = xmalloc(sizeof(uint64_t) * (size_t)n), *displ = xmalloc(sizeof(uint64_t) * (size_t)n);
    v_layout(n, seed, zero, cnt, displ, &total, 1, 1);
    char label[128];
    snprintf(label, sizeof label, "ReduceScatterV(%s, %s, counts=%s, %s)", conf_dt_name(dt), conf_op_name(op),
             zero ? "all 0" : "uneven", inplace ? "in-place" : "out-of-place");
    buf_t *sb = newbuf(t, total * es, seed), *rb = NULL;
    put_vals(sb->init, 0, total, dt, op, n, r, seed, 0);
    upload(t, sb);
    unsigned char *recv = sb->dev;
    if (!inplace) {
        rb = newbuf(t, cnt[r] * es, seed + 1000);
        upload(t, rb);
        put_reduced(rb->exp, 0, cnt[r], dt, op, n, seed, displ[r]);
        recv = rb->dev;
    } else {
        put_reduced(sb->exp, 0, cnt[r], dt, op, n, seed, displ[r]);
    }
    uint64_t rc = cnt[r];
    HcclResult rc_ = HcclReduceScatterV(sb->dev, cnt, displ, recv, rc, dt, op, t->comm, t->stream);
    memset(cnt, 0xff, sizeof(uint64_t) * (size_t)n); /* the library must not read them later */
    memset(displ, 0xff, sizeof(uint64_t) * (size_t)n);
    if (conf_enq(t->b, rc_, label)) {
        if (!inplace) {
            expect_all(t, rb, label, "recvBuf", dt, 1);
            expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
        } else {
            expect_range(t, sb, 0, rc * es, label, "recvBuf", dt, 1);
            expect_range(t, sb, total * es, GUARD, label, "guard", dt, 0);
        }
    }
    free(cnt);
    free(displ);
    freebuf(sb);
    freebuf(rb);
}

static void reducing_batch(T *t, HcclDataType dt, int dti)
{
    int n = t->n;
    uint64_t odd = 2 * (uint64_t)n + 1;
    t->b = conf_batch_new(t->ctx);
    for (int k = 0; k < 4; k++) {
        HcclReduceOp op = conf_all_ops[k];
        if (!conf_reduce_checked(dt, op, n)) continue;
        t_allreduce(t, dt, op, odd, 0);
        t_allreduce(t, dt, op, odd, 1);
        t_reduce(t, dt, op, odd, (dti + k) % n, 0);
        t_reduce(t, dt, op, odd, (dti + k + 1) % n, 1);
        t_reduce_scatter(t, dt, op, 3, 0);
        t_reduce_scatter(t, dt, op, 3, k % 2 ? 1 : 2);
        t_reduce_scatter_v(t, dt, op, 0, 0);
        t_reduce_scatter_v(t, dt, op, 0, 1);
    }
    HcclReduceOp op0 = conf_reduce_checked(dt, HCCL_REDUCE_SUM, n) ? HCCL_REDUCE_SUM : HCCL_REDUCE_MAX;
    t_allreduce(t, dt, op0, 0, 0);
    t_allreduce(t, dt, op0, 1, 0);
    t_allreduce(t, dt, op0, 1, 1);
    t_reduce(t, dt, op0, 0, n - 1, 0);
    t_reduce(t, dt, op0, 1, 0, 0);
    t_allreduce(t, dt, op0, odd, 2 + dti % 2);
    t_reduce(t, dt, op0, odd, dti % n, 3 - dti % 2);
    t_reduce_scatter(t, dt, op0, 0, 0);
    t_reduce_scatter(t, dt, op0, 1, 0);
    t_reduce_scatter_v(t, dt, op0, 1, 0);
    conf_batch_run(t->b);
}

/*
 * Rounding: with 2 ranks every algorithm computes op(a, b) once, in fp32, then rounds
 * to the type, to nearest even. Inputs are arbitrary representable values with
 * magnitudes in [1/4, R) so that the fp32 sum or product is exact; the expected value
 * is the exact result rounded here (ties occur among the 257 elements).
 */
static double rounding_input(HcclDataType dt, HcclReduceOp op, int rank, uint64_t i, uint64_t seed)
{
    double hi = op == HCCL_REDUCE_PROD ? (dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_BFP16 ? 200 : 16)
                                       : (dt == HCCL_DATA_TYPE_FP16 || dt == HCCL_DATA_TYPE_BFP16 ? 1024 : 16);
    size_t es = conf_dt_size(dt);
    for (uint64_t k = 0;; k++) {
        uint64_t h = conf_hash(seed, (uint64_t)rank * 1000003u + i, k);
        unsigned char b[2] = {(unsigned char)h, (unsigned char)(h >> 8)};
        double v = conf_get(dt, b);
        (void)es;
        if (v == v && fabs(v) >= 0.25 && fabs(v) < hi) return v;
    }
}

static void t_rounding(T *t, HcclDataType dt, HcclReduceOp op)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed, count = 257;
    char label[128];
    snprintf(label, sizeof label, "AllReduce rounding (%s, %s, 2 ranks, ties to even)", conf_dt_name(dt),
             conf_op_name(op));
    buf_t *sb = newbuf(t, count * es, seed), *rb = newbuf(t, count * es, seed + 1000);
    for (uint64_t i = 0; i < count; i++) {
        conf_put(dt, sb->init + i * es, rounding_input(dt, op, t->r, i, seed));
        double a = rounding_input(dt, op, 0, i, seed), b = rounding_input(dt, op, 1, i, seed);
        conf_put(dt, rb->exp + i * es, conf_round(dt, conf_apply(op, a, b)));
    }
    unsigned char *exp_copy = xmalloc(rb->total);
    memcpy(exp_copy, rb->exp, rb->total);
    upload(t, sb);
    upload(t, rb);
    memcpy(rb->exp, exp_copy, count * es);
    free(exp_copy);
    if (conf_enq(t->b, HcclAllReduce(sb->dev, rb->dev, count, dt, op, t->comm, t->stream), label))
        expect_all(t, rb, label, "recvBuf", dt, 1);
    freebuf(sb);
    freebuf(rb);
}

static void rounding_batch(T *t)
{
    static const HcclDataType dts[] = {HCCL_DATA_TYPE_FP16, HCCL_DATA_TYPE_BFP16, HCCL_DATA_TYPE_FP8E4M3,
                                       HCCL_DATA_TYPE_FP8E5M2};
    t->b = conf_batch_new(t->ctx);
    for (int i = 0; i < 4; i++) {
        t_rounding(t, dts[i], HCCL_REDUCE_SUM);
        t_rounding(t, dts[i], HCCL_REDUCE_PROD);
    }
    conf_batch_run(t->b);
}

/* ---- data movement ---------------------------------------------------------------- */

/* Bytes [off, off+len) of rank q's pattern for seed (what rank q uploaded). */
static void rank_bytes(T *t, unsigned char *dst, uint64_t seed, int q, size_t off, size_t len)
{
    unsigned char *tmp = xmalloc(off + len);
    conf_pattern(tmp, off + len, seed ^ 0x5a5a5a5aull, (uint64_t)q);
    memcpy(dst, tmp + off, len);
    free(tmp);
    (void)t;
}

/* inplace: 0 out of place, 1 sendBuf == recvBuf, 2 sendBuf = recvBuf + rank * count */
static void t_allgather(T *t, HcclDataType dt, uint64_t c, int inplace)
{
    size_t es = conf_dt_size(dt), blk = c * es;
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    char label[128];
    snprintf(label, sizeof label, "AllGather(%s, sendCount=%llu, %s)", conf_dt_name(dt), (unsigned long long)c,
             inplace == 0 ? "out-of-place" : inplace == 1 ? "in-place" : "in-place+offset");
    buf_t *sb = NULL, *rb = newbuf(t, (size_t)n * blk, seed + 1000);
    unsigned char *send;
    if (inplace == 0) {
        sb = newbuf(t, blk, seed);
        rank_bytes(t, sb->init, seed, r, 0, blk);
        upload(t, sb);
        send = sb->dev;
    } else {
        size_t off = inplace == 1 ? 0 : (size_t)r * blk;
        rank_bytes(t, rb->init + off, seed, r, 0, blk);
        send = rb->dev + off;
    }
    upload(t, rb);
    for (int q = 0; q < n; q++) rank_bytes(t, rb->exp + (size_t)q * blk, seed, q, 0, blk);
    if (conf_enq(t->b, HcclAllGather(send, rb->dev, c, dt, t->comm, t->stream), label)) {
        expect_all(t, rb, label, "recvBuf", dt, 0);
        if (sb) expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    freebuf(sb);
    freebuf(rb);
}

static void t_allgather_v(T *t, HcclDataType dt, int zero, int inplace)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed, total;
    int n = t->n, r = t->r;
    uint64_t *cnt = xmalloc(sizeof(uint64_t) * (size_t)n), *displ = xmalloc(sizeof(uint64_t) * (size_t)n);
    v_layout(n, seed, zero, cnt, displ, &total, 1, 1);
    char label[128];
    snprintf(label, sizeof label, "AllGatherV(%s, counts=%s, %s)", conf_dt_name(dt), zero ? "all 0" : "uneven",
             inplace ? "in-place+offset" : "out-of-place");
    buf_t *sb = NULL, *rb = newbuf(t, total * es, seed + 1000);
    unsigned char *send;
    uint64_t sc = cnt[r];
    if (!inplace) {
        sb = newbuf(t, sc * es, seed);
        rank_bytes(t, sb->init, seed, r, 0, sc * es);
        upload(t, sb);
        send = sb->dev;
    } else {
        rank_bytes(t, rb->init + displ[r] * es, seed, r, 0, sc * es);
        send = rb->dev + displ[r] * es;
    }
    upload(t, rb);
    for (int q = 0; q < n; q++) rank_bytes(t, rb->exp + displ[q] * es, seed, q, 0, cnt[q] * es);
    HcclResult rc = HcclAllGatherV(send, sc, rb->dev, cnt, displ, dt, t->comm, t->stream);
    memset(cnt, 0xff, sizeof(uint64_t) * (size_t)n);
    memset(displ, 0xff, sizeof(uint64_t) * (size_t)n);
    if (conf_enq(t->b, rc, label)) {
        expect_all(t, rb, label, "recvBuf (gaps untouched)", dt, 0);
        if (sb) expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    free(cnt);
    free(displ);
    freebuf(sb);
    freebuf(rb);
}

static void t_broadcast(T *t, HcclDataType dt, uint64_t c, int root)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed;
    char label[128];
    snprintf(label, sizeof label, "Broadcast(%s, count=%llu, root=%d)", conf_dt_name(dt), (unsigned long long)c,
             root);
    buf_t *bb = newbuf(t, c * es, seed + (t->r == root ? 0 : 1000));
    if (t->r == root) rank_bytes(t, bb->init, seed, root, 0, c * es);
    upload(t, bb);
    rank_bytes(t, bb->exp, seed, root, 0, c * es);
    if (conf_enq(t->b, HcclBroadcast(bb->dev, c, dt, (uint32_t)root, t->comm, t->stream), label))
        expect_all(t, bb, label, "buf", dt, 0);
    freebuf(bb);
}

static void t_scatter(T *t, HcclDataType dt, uint64_t c, int root, int inplace)
{
    size_t es = conf_dt_size(dt), blk = c * es;
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    char label[128];
    snprintf(label, sizeof label, "Scatter(%s, recvCount=%llu, root=%d, %s)", conf_dt_name(dt),
             (unsigned long long)c, root, inplace ? "in-place" : "out-of-place");
    buf_t *sb = newbuf(t, (size_t)n * blk, r == root ? seed : seed + 2000), *rb = inplace ? sb : newbuf(t, blk, seed + 1000);
    if (r == root) rank_bytes(t, sb->init, seed, root, 0, (size_t)n * blk);
    upload(t, sb);
    if (!inplace) upload(t, rb);
    rank_bytes(t, rb->exp, seed, root, (size_t)r * blk, blk);
    if (conf_enq(t->b, HcclScatter(sb->dev, rb->dev, c, dt, (uint32_t)root, t->comm, t->stream), label)) {
        if (!inplace) {
            expect_all(t, rb, label, "recvBuf", dt, 0);
            if (r == root) expect_all(t, sb, label, "sendBuf at root (must be unchanged)", dt, 0);
        } else {
            expect_range(t, rb, 0, blk, label, "recvBuf", dt, 0);
            expect_range(t, rb, (size_t)n * blk, GUARD, label, "guard", dt, 0);
        }
    }
    freebuf(sb);
    if (!inplace) freebuf(rb);
}

/* inplace: 0 out of place, 1 sendBuf == recvBuf, 2 out of place with recvBuf NULL on
 * non-root ranks (hccl_ext.h: "recvBuf is ignored on other ranks") */
static void t_gather(T *t, HcclDataType dt, uint64_t c, int root, int inplace)
{
    size_t es = conf_dt_size(dt), blk = c * es;
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    char label[128];
    snprintf(label, sizeof label, "HcclGather(%s, sendCount=%llu, root=%d, %s)", conf_dt_name(dt),
             (unsigned long long)c, root,
             inplace == 1 ? "in-place" : inplace == 2 ? "recvBuf NULL off root" : "out-of-place");
    buf_t *rb = newbuf(t, (size_t)n * blk, seed + 1000), *sb = NULL;
    unsigned char *send = rb->dev, *recv = rb->dev;
    if (inplace == 1) {
        rank_bytes(t, rb->init, seed, r, 0, blk);
    } else {
        sb = newbuf(t, blk, seed);
        rank_bytes(t, sb->init, seed, r, 0, blk);
        upload(t, sb);
        send = sb->dev;
        if (inplace == 2 && r != root) recv = NULL;
    }
    upload(t, rb);
    for (int q = 0; q < n; q++) rank_bytes(t, rb->exp + (size_t)q * blk, seed, q, 0, blk);
    if (conf_enq(t->b, HcclGather(send, recv, c, dt, (uint32_t)root, t->comm, t->stream), label)) {
        if (r == root) expect_all(t, rb, label, "recvBuf at root", dt, 0);
        if (sb) expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    freebuf(sb);
    freebuf(rb);
}

static void t_alltoall(T *t, HcclDataType dt, uint64_t c, int inplace)
{
    size_t es = conf_dt_size(dt), blk = c * es;
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    char label[128];
    snprintf(label, sizeof label, "AlltoAll(%s, count=%llu, %s)", conf_dt_name(dt), (unsigned long long)c,
             inplace ? "in-place" : "out-of-place");
    buf_t *sb = newbuf(t, (size_t)n * blk, seed), *rb = inplace ? sb : newbuf(t, (size_t)n * blk, seed + 1000);
    rank_bytes(t, sb->init, seed, r, 0, (size_t)n * blk);
    upload(t, sb);
    if (!inplace) upload(t, rb);
    for (int q = 0; q < n; q++) rank_bytes(t, rb->exp + (size_t)q * blk, seed, q, (size_t)r * blk, blk);
    if (conf_enq(t->b, HcclAlltoAll(sb->dev, c, dt, rb->dev, c, dt, t->comm, t->stream), label)) {
        expect_all(t, rb, label, "recvBuf", dt, 0);
        if (!inplace) expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    freebuf(sb);
    if (!inplace) freebuf(rb);
}

/* AlltoAll whose recvBuf starts one element into sendBuf (one allocation of n * c + 1
 * elements): the result is what separate buffers give; the first element of sendBuf
 * stays as it was. */
static void t_alltoall_shifted(T *t, HcclDataType dt, uint64_t c)
{
    size_t es = conf_dt_size(dt), blk = c * es;
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    char label[128];
    snprintf(label, sizeof label, "AlltoAll(%s, count=%llu, recvBuf = sendBuf + 1 element)", conf_dt_name(dt),
             (unsigned long long)c);
    buf_t *b = newbuf(t, (size_t)n * blk + es, seed);
    rank_bytes(t, b->init, seed, r, 0, (size_t)n * blk);
    upload(t, b);
    for (int q = 0; q < n; q++) rank_bytes(t, b->exp + es + (size_t)q * blk, seed, q, (size_t)r * blk, blk);
    if (conf_enq(t->b, HcclAlltoAll(b->dev, c, dt, b->dev + es, c, dt, t->comm, t->stream), label))
        expect_all(t, b, label, "sendBuf and recvBuf", dt, 0);
    freebuf(b);
}

/* Count from rank s to rank d. */
static uint64_t a2a_count(uint64_t seed, int s, int d, int zero)
{
    return zero ? 0 : ((uint64_t)s * 7 + (uint64_t)d * 3 + seed) % 5;
}

/* AlltoAllV send layout of rank s: blocks in reverse rank order with 1-element gaps. */
static uint64_t a2av_sdispl(uint64_t seed, int n, int s, int d, int zero)
{
    uint64_t pos = 0;
    for (int q = n - 1; q > d; q--) pos += a2a_count(seed, s, q, zero) + 1;
    return pos;
}

static void t_alltoallv(T *t, HcclDataType dt, int zero)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    uint64_t *sc = xmalloc(8 * (size_t)n), *sd = xmalloc(8 * (size_t)n), *rc = xmalloc(8 * (size_t)n),
             *rd = xmalloc(8 * (size_t)n);
    uint64_t stot = 0, rtot = 0;
    for (int q = 0; q < n; q++) {
        sc[q] = a2a_count(seed, r, q, zero);
        sd[q] = a2av_sdispl(seed, n, r, q, zero);
        stot += sc[q] + 1;
        rc[q] = a2a_count(seed, q, r, zero);
        rd[q] = rtot;
        rtot += rc[q] + 2;
    }
    char label[128];
    snprintf(label, sizeof label, "AlltoAllV(%s, counts=%s)", conf_dt_name(dt), zero ? "all 0" : "uneven");
    buf_t *sb = newbuf(t, stot * es, seed), *rb = newbuf(t, rtot * es, seed + 1000);
    rank_bytes(t, sb->init, seed, r, 0, stot * es);
    upload(t, sb);
    upload(t, rb);
    for (int q = 0; q < n; q++) {
        uint64_t off = a2av_sdispl(seed, n, q, r, zero);
        rank_bytes(t, rb->exp + rd[q] * es, seed, q, off * es, rc[q] * es);
    }
    HcclResult res = HcclAlltoAllV(sb->dev, sc, sd, dt, rb->dev, rc, rd, dt, t->comm, t->stream);
    memset(sc, 0xff, 8 * (size_t)n);
    memset(sd, 0xff, 8 * (size_t)n);
    memset(rc, 0xff, 8 * (size_t)n);
    memset(rd, 0xff, 8 * (size_t)n);
    if (conf_enq(t->b, res, label)) {
        expect_all(t, rb, label, "recvBuf (gaps untouched)", dt, 0);
        expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    freebuf(sb);
    freebuf(rb);
}

static void t_alltoallvc(T *t, HcclDataType dt, int zero)
{
    size_t es = conf_dt_size(dt);
    uint64_t seed = ++t->seed;
    int n = t->n, r = t->r;
    uint64_t *m = xmalloc(8 * (size_t)n * (size_t)n);
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) m[s * n + d] = a2a_count(seed, s, d, zero);
    uint64_t stot = 0, rtot = 0;
    for (int q = 0; q < n; q++) {
        stot += m[r * n + q];
        rtot += m[q * n + r];
    }
    char label[128];
    snprintf(label, sizeof label, "AlltoAllVC(%s, matrix=%s)", conf_dt_name(dt), zero ? "all 0" : "uneven");
    buf_t *sb = newbuf(t, stot * es, seed), *rb = newbuf(t, rtot * es, seed + 1000);
    rank_bytes(t, sb->init, seed, r, 0, stot * es);
    upload(t, sb);
    upload(t, rb);
    uint64_t roff = 0;
    for (int q = 0; q < n; q++) {
        uint64_t soff = 0; /* where rank q's block for r starts in q's send buffer */
        for (int d = 0; d < r; d++) soff += m[q * n + d];
        rank_bytes(t, rb->exp + roff * es, seed, q, soff * es, m[q * n + r] * es);
        roff += m[q * n + r];
    }
    HcclResult res = HcclAlltoAllVC(sb->dev, m, dt, rb->dev, dt, t->comm, t->stream);
    memset(m, 0xff, 8 * (size_t)n * (size_t)n);
    if (conf_enq(t->b, res, label)) {
        expect_all(t, rb, label, "recvBuf", dt, 0);
        expect_all(t, sb, label, "sendBuf (must be unchanged)", dt, 0);
    }
    free(m);
    freebuf(sb);
    freebuf(rb);
}

static void movement_batch(T *t, HcclDataType dt, int dti)
{
    int n = t->n;
    uint64_t odd = 2 * (uint64_t)n + 1;
    t->b = conf_batch_new(t->ctx);
    for (uint64_t c = 0; c <= 3; c += (c == 1 ? 2 : 1)) { /* 0, 1, 3 */
        t_allgather(t, dt, c, 0);
        t_broadcast(t, dt, c ? odd : 0, (dti + (int)c) % n);
        t_scatter(t, dt, c, (dti + 1) % n, 0);
        t_gather(t, dt, c, (dti + 2) % n, 0);
        t_alltoall(t, dt, c, 0);
    }
    t_allgather(t, dt, 3, 1);
    t_allgather(t, dt, 3, 2);
    t_allgather_v(t, dt, 0, 0);
    t_allgather_v(t, dt, 0, 1);
    t_allgather_v(t, dt, 1, 0);
    t_scatter(t, dt, 3, dti % n, 1);
    t_gather(t, dt, 3, (dti + 3) % n, 1);
    t_gather(t, dt, 2, (dti + 4) % n, 2);
    t_alltoall(t, dt, 2, 1);
    t_alltoallv(t, dt, 0);
    t_alltoallv(t, dt, 1);
    t_alltoallvc(t, dt, 0);
    t_alltoallvc(t, dt, 1);
    conf_batch_run(t->b);
}

/* Every root of the rooted operations at a small size. */
static void roots_batch(T *t)
{
    int n = t->n;
    t->b = conf_batch_new(t->ctx);
    for (int root = 0; root < n; root++) {
        t_reduce(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 5, root, 0);
        t_reduce(t, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MIN, 5, root, root % 2);
        t_broadcast(t, HCCL_DATA_TYPE_INT16, 5, root);
        t_scatter(t, HCCL_DATA_TYPE_FP32, 2, root, 0);
        t_gather(t, HCCL_DATA_TYPE_UINT8, 3, root, 0);
    }
    conf_batch_run(t->b);
}

/* A few MiB through a subset of operations and types. */
static void large_batch(T *t)
{
    int n = t->n;
    uint64_t m = 1u << 20;
    t->b = conf_batch_new(t->ctx);
    t_allreduce(t, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, m + 3, 0);   /* 4 MiB */
    t_allreduce(t, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM, m + 1, 1);  /* 2 MiB */
    t_allreduce(t, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, m / 8 - 3, 0); /* under 512 KiB: 2 ranks' whole vector, 2 chunks */
    t_reduce_scatter(t, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MAX, m / (uint64_t)n + 1, 0);
    t_reduce(t, HCCL_DATA_TYPE_INT64, HCCL_REDUCE_MIN, m / 4 + 1, n - 1, 0); /* 2 MiB */
    t_reduce(t, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, m / 8 + 3, 0, 1);     /* 512 KiB, in place at the root */
    /* partly overlapping buffers, at the sizes of the direct and the chunked paths */
    t_allreduce(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 4099, 2);
    t_allreduce(t, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, m / 4 + 5, 3);
    t_reduce(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MAX, 4099, n - 1, 3);
    t_reduce(t, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, m / 4 + 5, 0, 2);
    /* ReduceScatter and AlltoAll the same way: small, and over several windows of the
     * network algorithms (which write recvBuf while later windows still read sendBuf) */
    t_reduce_scatter_shifted(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 5);
    t_reduce_scatter_shifted(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, m / 2 + 3);
    t_reduce_scatter_v_overlapping(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 5);
    t_reduce_scatter_v_overlapping(t, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, m / 2 + 3);
    t_alltoall_shifted(t, HCCL_DATA_TYPE_INT16, 7);
    t_alltoall_shifted(t, HCCL_DATA_TYPE_INT32, m / 4 + 3);
    conf_batch_run(t->b);
    t->b = conf_batch_new(t->ctx);
    t_allgather(t, HCCL_DATA_TYPE_INT8, (4 * m) / (uint64_t)n + 5, 0);
    t_broadcast(t, HCCL_DATA_TYPE_INT32, m + 7, n / 2);
    t_broadcast(t, HCCL_DATA_TYPE_INT8, 200003, n - 1); /* direct, with 2 ranks and crowded */
    t_broadcast(t, HCCL_DATA_TYPE_FP16, 40001, 0);      /* crowded hosts: eager */
    t_alltoall(t, HCCL_DATA_TYPE_FP32, m / (uint64_t)n + 1, 0);
    t_scatter(t, HCCL_DATA_TYPE_INT16, m / (uint64_t)n + 3, 0, 0);
    conf_batch_run(t->b);
    /* Ranks that disagree about in place (odd ranks in place): the direct AlltoAll's
     * swapping ranks and its others still agree on every piece; and the same in place
     * everywhere, over several pieces. */
    t->b = conf_batch_new(t->ctx);
    t_alltoall(t, HCCL_DATA_TYPE_INT32, 5000, t->r % 2);
    t_alltoall(t, HCCL_DATA_TYPE_INT32, m / 2 + 3, t->r % 2);
    t_alltoall(t, HCCL_DATA_TYPE_INT32, m / 2 + 3, 1);
    conf_batch_run(t->b);
}

/* An operation on a NULL stream runs synchronously: the result is there on return. */
static void null_stream(T *t)
{
    conf_ctx *ctx = t->ctx;
    int n = t->n;
    uint64_t c = 2 * (uint64_t)n + 1;
    int32_t *in = xmalloc(4 * c), *out = xmalloc(4 * c);
    void *s = NULL, *r = NULL;
    conf_step(ctx, "AllReduce on a NULL stream");
    if (!conf_acl_ok(ctx, aclrtMalloc(&s, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&r, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc"))
        goto out;
    for (uint64_t i = 0; i < c; i++) in[i] = (int32_t)(t->r * 100 + (int)i);
    aclrtMemcpy(s, 4 * c, in, 4 * c, ACL_MEMCPY_HOST_TO_DEVICE);
    if (conf_ok(ctx, HcclAllReduce(s, r, c, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, t->comm, NULL),
                "AllReduce(int32, NULL stream)")) {
        aclrtMemcpy(out, 4 * c, r, 4 * c, ACL_MEMCPY_DEVICE_TO_HOST);
        for (uint64_t i = 0; i < c; i++) {
            int32_t want = 100 * n * (n - 1) / 2 + n * (int32_t)i;
            if (out[i] != want) {
                conf_fail(ctx, "AllReduce on NULL stream: element %llu is %d, expected %d", (unsigned long long)i,
                          out[i], want);
                break;
            }
        }
    }
out:
    if (s) aclrtFree(s);
    if (r) aclrtFree(r);
    free(in);
    free(out);
}

void conf_suite_coll(conf_ctx *ctx)
{
    T t = {.ctx = ctx, .n = ctx->nranks, .r = ctx->rank, .seed = 1, .comm = ctx->comm, .stream = ctx->stream};
    for (int i = 0; i < CONF_NDTYPES; i++) {
        HcclDataType dt = conf_all_dtypes[i];
        if (conf_dt_reducible(dt)) reducing_batch(&t, dt, i);
        movement_batch(&t, dt, i);
    }
    roots_batch(&t);
    if (t.n == 2) rounding_batch(&t);
    large_batch(&t);
    null_stream(&t);
}

/* ---- two communicators at once ---------------------------------------------------- */

/*
 * Operations of two communicators over the same ranks, interleaved on two streams and
 * synchronised together; then an event orders stream2 after stream1 so the second
 * communicator reduces the first one's result; then ACL async copies around an
 * operation on one stream.
 */
void conf_suite_multicomm(conf_ctx *ctx)
{
    int n = ctx->nranks;
    if (ctx->comm2 == NULL) {
        conf_fail(ctx, "multicomm suite needs two communicators");
        return;
    }
    T a = {.ctx = ctx, .n = n, .r = ctx->rank, .seed = 50000, .comm = ctx->comm, .stream = ctx->stream};
    T b = {.ctx = ctx, .n = n, .r = ctx->rank, .seed = 60000, .comm = ctx->comm2, .stream = ctx->stream2};
    conf_batch *bt = conf_batch_new(ctx);
    conf_batch_use_stream2(bt);
    a.b = b.b = bt;
    for (int i = 0; i < 4; i++) {
        t_allreduce(&a, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 2 * (uint64_t)n + 1 + (uint64_t)i, 0);
        t_allgather(&b, HCCL_DATA_TYPE_FP16, 3 + (uint64_t)i, 0);
        t_broadcast(&a, HCCL_DATA_TYPE_INT8, 100, i % n);
        t_allreduce(&b, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, 1000 + (uint64_t)i, 1);
        t_reduce_scatter(&a, HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_SUM, 7, 0);
        t_alltoall(&b, HCCL_DATA_TYPE_INT64, 2, 0);
    }
    conf_batch_run(bt);

    /* stream1: comm AllReduce -> event -> stream2: comm2 AllReduce of that result */
    uint64_t c = 64;
    int32_t *host = malloc(4 * c), *res = malloc(4 * c);
    void *x = NULL, *y = NULL, *z = NULL;
    aclrtEvent ev = NULL;
    conf_step(ctx, "event-ordered AllReduce on two communicators");
    if (host == NULL || res == NULL) abort();
    if (conf_acl_ok(ctx, aclrtMalloc(&x, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") &&
        conf_acl_ok(ctx, aclrtMalloc(&y, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") &&
        conf_acl_ok(ctx, aclrtMalloc(&z, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") &&
        conf_acl_ok(ctx, aclrtCreateEvent(&ev), "aclrtCreateEvent")) {
        for (uint64_t i = 0; i < c; i++) host[i] = ctx->rank + (int32_t)i;
        /* the input arrives by an async copy queued on stream1 before the operation */
        int ok = conf_acl_ok(ctx, aclrtMemcpyAsync(x, 4 * c, host, 4 * c, ACL_MEMCPY_HOST_TO_DEVICE, ctx->stream),
                             "aclrtMemcpyAsync(H2D)") &&
                 conf_ok(ctx, HcclAllReduce(x, y, c, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, ctx->comm, ctx->stream),
                         "AllReduce on comm/stream1") &&
                 conf_acl_ok(ctx, aclrtRecordEvent(ev, ctx->stream), "aclrtRecordEvent") &&
                 conf_acl_ok(ctx, aclrtStreamWaitEvent(ctx->stream2, ev), "aclrtStreamWaitEvent") &&
                 conf_ok(ctx, HcclAllReduce(y, z, c, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, ctx->comm2, ctx->stream2),
                         "AllReduce on comm2/stream2") &&
                 conf_acl_ok(ctx, aclrtMemcpyAsync(res, 4 * c, z, 4 * c, ACL_MEMCPY_DEVICE_TO_HOST, ctx->stream2),
                             "aclrtMemcpyAsync(D2H)");
        if (ok && conf_sync(ctx, ctx->stream2, "event-ordered AllReduce (stream2)") &&
            conf_sync(ctx, ctx->stream, "event-ordered AllReduce (stream1)")) {
            for (uint64_t i = 0; i < c; i++) {
                int32_t want = n * (n * (n - 1) / 2 + n * (int32_t)i);
                if (res[i] != want) {
                    conf_fail(ctx, "event-ordered AllReduce: element %llu is %d, expected %d",
                              (unsigned long long)i, res[i], want);
                    break;
                }
            }
        }
    }
    if (ev) aclrtDestroyEvent(ev);
    if (x) aclrtFree(x);
    if (y) aclrtFree(y);
    if (z) aclrtFree(z);
    free(host);
    free(res);
    conf_p2p_two_comms_group(ctx);
}
