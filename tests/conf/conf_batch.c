/*
 * conf_batch.c - queue several operations, synchronise once, verify every result.
 *
 * A batch owns the device buffers (aclrtMalloc) of a group of enqueued operations and
 * the expected contents of every buffer region it checks. conf_batch_run() calls
 * aclrtSynchronizeStream once (per stream used), copies each checked region back with
 * aclrtMemcpy(DEVICE_TO_HOST) and compares it with the expectation, printing the first
 * mismatching elements of each region.
 */
#include "conf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOCS 512
#define MAX_CHECKS 256

typedef struct {
    char label[320];
    const void *dev;
    unsigned char *expect;
    size_t bytes;
    HcclDataType dt;
    int byvalue;
} check_t;

struct conf_batch {
    conf_ctx *ctx;
    void *allocs[MAX_ALLOCS];
    int nallocs;
    check_t checks[MAX_CHECKS];
    int nchecks;
    int enq_failed;
    int use_stream2;
};

conf_batch *conf_batch_new(conf_ctx *ctx)
{
    conf_batch *b = calloc(1, sizeof *b);
    if (b == NULL) abort();
    b->ctx = ctx;
    return b;
}

void conf_batch_use_stream2(conf_batch *b)
{
    b->use_stream2 = 1;
}

void *conf_dev(conf_batch *b, size_t bytes)
{
    void *p = NULL;
    size_t n = bytes < 64 ? 64 : bytes;
    aclError rc = aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST);
    if (rc != ACL_SUCCESS || p == NULL) {
        fprintf(stderr, "FATAL: aclrtMalloc(%zu) returned %d\n", n, (int)rc);
        abort();
    }
    if (b->nallocs == MAX_ALLOCS) abort();
    b->allocs[b->nallocs++] = p;
    return p;
}

void conf_upload(conf_batch *b, void *dev, const void *host, size_t bytes)
{
    if (bytes == 0) return;
    aclError rc = aclrtMemcpy(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    if (rc != ACL_SUCCESS) conf_fail(b->ctx, "aclrtMemcpy(H2D, %zu) returned %d", bytes, (int)rc);
}

void conf_expect(conf_batch *b, const char *label, const void *dev, const void *expect, size_t bytes,
                 HcclDataType dt, int byvalue)
{
    if (b->nchecks == MAX_CHECKS) abort();
    check_t *c = &b->checks[b->nchecks++];
    snprintf(c->label, sizeof c->label, "%s", label);
    c->dev = dev;
    c->bytes = bytes;
    c->expect = malloc(bytes ? bytes : 1);
    if (c->expect == NULL) abort();
    if (bytes) memcpy(c->expect, expect, bytes);
    c->dt = dt;
    c->byvalue = byvalue;
}

int conf_enq(conf_batch *b, HcclResult rc, const char *label)
{
    conf_step(b->ctx, "enqueue %s", label);
    if (rc == HCCL_SUCCESS) return 1;
    conf_fail(b->ctx, "%s returned %d (%s)", label, (int)rc, HcclGetErrorString(rc));
    b->enq_failed++;
    return 0;
}

static void hexdump(char *out, size_t outlen, const unsigned char *p, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && k + 3 < outlen; i++) k += (size_t)snprintf(out + k, outlen - k, "%02x", p[i]);
}

static int verify(conf_batch *b, check_t *c)
{
    conf_ctx *ctx = b->ctx;
    size_t es = conf_dt_size(c->dt);
    if (es == 0) es = 1;
    unsigned char *got = malloc(c->bytes ? c->bytes : 1);
    if (got == NULL) abort();
    if (c->bytes) {
        aclError rc = aclrtMemcpy(got, c->bytes, c->dev, c->bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        if (rc != ACL_SUCCESS) {
            conf_fail(ctx, "%s: aclrtMemcpy(D2H) returned %d", c->label, (int)rc);
            free(got);
            return 1;
        }
    }
    size_t nel = c->bytes / es, bad = 0, first = 0;
    for (size_t i = 0; i < nel; i++) {
        const unsigned char *g = got + i * es, *e = c->expect + i * es;
        if (memcmp(g, e, es) == 0) continue;
        if (c->byvalue) {
            double gv = conf_get(c->dt, g), ev = conf_get(c->dt, e);
            if (gv == ev) continue; /* e.g. -0 and +0 */
        }
        if (bad < 4) {
            char gh[40], eh[40];
            hexdump(gh, sizeof gh, g, es);
            hexdump(eh, sizeof eh, e, es);
            if (c->byvalue)
                conf_fail(ctx, "%s: element %zu of %zu is %.17g (0x%s), expected %.17g (0x%s)", c->label, i, nel,
                          conf_get(c->dt, g), gh, conf_get(c->dt, e), eh);
            else
                conf_fail(ctx, "%s: element %zu of %zu is 0x%s, expected 0x%s", c->label, i, nel, gh, eh);
        }
        if (bad == 0) first = i;
        bad++;
    }
    if (bad > 4) conf_fail(ctx, "%s: %zu of %zu elements wrong (first at %zu)", c->label, bad, nel, first);
    free(got);
    return bad ? 1 : 0;
}

int conf_batch_run(conf_batch *b)
{
    conf_ctx *ctx = b->ctx;
    int before = ctx->fails;
    int synced = conf_sync(ctx, ctx->stream, b->nchecks ? b->checks[b->nchecks - 1].label : "batch");
    if (b->use_stream2) synced &= conf_sync(ctx, ctx->stream2, "batch on stream2");
    if (synced) {
        for (int i = 0; i < b->nchecks; i++) {
            conf_step(ctx, "verify %s", b->checks[i].label);
            verify(b, &b->checks[i]);
        }
    }
    for (int i = 0; i < b->nchecks; i++) free(b->checks[i].expect);
    for (int i = 0; i < b->nallocs; i++) aclrtFree(b->allocs[i]);
    free(b);
    return ctx->fails - before;
}
