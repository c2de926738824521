/*
 * test_algo.c - the reference algorithms against a serial computation, with ranks as
 * threads over the strict-rendezvous fake network (helper_fake_net.c).
 *
 * Matrix: every op; nranks 1..8; counts 0, 1, nranks-1, 1001; reductions over int32,
 * fp32, fp16, int8, int128 x sum/prod/max/min with small integer inputs (exact
 * results; int8 products wrap); every root for the rooted ops (reductions: every
 * root for two dtype/op pairs, the last root for the others); out of place, in place
 * (same pointer) and NCCL-style offsets; V variants with uneven, zero and gapped
 * blocks. Large counts that span several scratch windows for allreduce,
 * reduce-scatter(V), allgather, reduce and in-place alltoall. Out of place, the send
 * buffer must come back unchanged and untouched receive bytes keep their sentinel.
 * Count 0 must post no exchange at all. The direct (same-host) algorithms and the
 * one-round small AllGather(V) / ReduceScatter / Broadcast run the same checks with
 * direct copies on (test_direct). Also: the fake network's own failure modes
 * (byte-count mismatch, deadlock) fail instead of hanging, and barrier semantics.
 */
#include "algo/algo.h"
#include "helper_fake_net.h"
#include "reduce/reduce.h"
#include "tinytest.h"

#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXR 16 /* the largest communicator a test case may have */
#define MATRIX_N 8 /* the full matrix runs n = 1..MATRIX_N */
#define SENTINEL 0xee

typedef struct tc {
    uint32_t n;
    hccl_op_type type;
    HcclDataType dt;
    HcclReduceOp op;
    uint64_t count;
    uint32_t root;
    int mode; /* 0 out of place, 1 in place (same pointer), 2 NCCL offset / same layout */
    size_t es;
    hccl_op_args args[MAXR];
    uint8_t *mem[MAXR][2], *exp[MAXR][2], *care[MAXR][2];
    size_t sz[MAXR][2];
    uint64_t sc[MAXR][MAXR], sd[MAXR][MAXR], rc[MAXR][MAXR], rd[MAXR][MAXR];
    uint64_t matrix[MAXR * MAXR];
} tc;

static const HcclDataType red_dtypes[] = {HCCL_DATA_TYPE_INT32, HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_FP16,
                                          HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_INT128};
static const HcclDataType move_dtypes[] = {HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_FP16, HCCL_DATA_TYPE_INT32,
                                           HCCL_DATA_TYPE_INT128};
static const HcclReduceOp red_ops[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};
static long runs;
/* ctx->reference of the runs: 0 (the selection), or HCCL_ALGO_FORCED(id), in which
 * case run_case skips the operations id does not implement and checks that the
 * selection honours the forcing. */
static int g_force;
static atomic_int g_wrong_algo;
static int g_expect = -1; /* >= 0: the algorithm the selection must pick (n > 1) */

/* ---------- values ---------- */

static int64_t rval(HcclReduceOp op, uint32_t r, uint64_t pos)
{
    switch (op) {
    case HCCL_REDUCE_SUM: return (int64_t)((r * 5 + pos * 3 + (pos >> 7)) % 7) - 3;
    case HCCL_REDUCE_PROD: return 1 + (int64_t)((r + pos + (pos >> 5)) % 2);
    default: return (int64_t)((r * 7 + pos * 13 + (pos >> 9)) % 41) - 20;
    }
}

static int64_t fold(HcclReduceOp op, int64_t a, int64_t b)
{
    switch (op) {
    case HCCL_REDUCE_SUM: return a + b;
    case HCCL_REDUCE_PROD: return a * b;
    case HCCL_REDUCE_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

static void put_val(HcclDataType dt, uint8_t *p, int64_t v)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_INT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_FP32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_FP16: { uint16_t x = hccl_fp32_to_fp16((float)v); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_INT128: { __int128 x = v; memcpy(p, &x, 16); break; }
    default: break;
    }
}

static uint8_t pbyte(uint32_t r, uint64_t pos) { return (uint8_t)(r * 59 + pos * 13 + (pos >> 8) * 7 + 1); }

static void red_result(const tc *t, uint64_t pos, uint8_t *dst)
{
    int64_t acc = rval(t->op, 0, pos);
    for (uint32_t r = 1; r < t->n; r++) acc = fold(t->op, acc, rval(t->op, r, pos));
    put_val(t->dt, dst, acc);
}

/* ---------- buffers ---------- */

static uint8_t *alloc_mem(tc *t, uint32_t r, int k, size_t bytes)
{
    t->sz[r][k] = bytes;
    t->mem[r][k] = malloc(bytes + 1);
    t->exp[r][k] = malloc(bytes + 1);
    t->care[r][k] = malloc(bytes + 1);
    memset(t->mem[r][k], SENTINEL, bytes + 1);
    memset(t->exp[r][k], SENTINEL, bytes + 1);
    memset(t->care[r][k], 1, bytes + 1);
    return t->mem[r][k];
}

/* Reduction input of rank r at element positions [0, nelem) in both mem and exp. */
static void fill_red(tc *t, uint32_t r, int k, uint64_t nelem)
{
    for (uint64_t i = 0; i < nelem; i++) put_val(t->dt, t->mem[r][k] + i * t->es, rval(t->op, r, i));
    memcpy(t->exp[r][k], t->mem[r][k], nelem * t->es);
}

static void fill_bytes(tc *t, uint32_t r, int k, size_t off, size_t nbytes, uint64_t pos0)
{
    for (size_t b = 0; b < nbytes; b++) t->mem[r][k][off + b] = t->exp[r][k][off + b] = pbyte(r, pos0 + b);
}

static void care_only(tc *t, uint32_t r, int k, size_t off, size_t nbytes)
{
    memset(t->care[r][k], 0, t->sz[r][k] + 1);
    memset(t->care[r][k] + off, 1, nbytes);
}

static void free_tc(tc *t)
{
    for (uint32_t r = 0; r < MAXR; r++)
        for (int k = 0; k < 2; k++) {
            free(t->mem[r][k]);
            free(t->exp[r][k]);
            free(t->care[r][k]);
        }
}

static uint64_t vcnt(uint64_t j, uint64_t c) { return j % 3 == 1 ? 0 : c * (1 + j % 2); }

/* Reverse-order layout with 1-element gaps: block n-1 first. */
static uint64_t rev_layout(uint32_t n, const uint64_t *cnt, uint64_t *displ)
{
    uint64_t p = 0;
    for (uint32_t j = n; j-- > 0;) {
        displ[j] = p;
        p += cnt[j] + 1;
    }
    return p;
}

static uint64_t fwd_layout(uint32_t n, const uint64_t *cnt, uint64_t *displ, uint64_t gap)
{
    uint64_t p = 0;
    for (uint32_t j = 0; j < n; j++) {
        displ[j] = p;
        p += cnt[j] + gap;
    }
    return p;
}

/* ---------- setup per op ---------- */

static void setup_allreduce(tc *t, uint32_t r, hccl_op_args *a)
{
    const uint64_t c = t->count;
    const size_t bytes = c * t->es;
    int result_here = t->type == HCCL_OP_ALLREDUCE || r == t->root;
    uint8_t *s = alloc_mem(t, r, 0, bytes);
    fill_red(t, r, 0, c);
    if (t->mode == 0) {
        uint8_t *d = alloc_mem(t, r, 1, bytes);
        a->sendbuf = s;
        a->recvbuf = d;
        if (result_here)
            for (uint64_t i = 0; i < c; i++) red_result(t, i, t->exp[r][1] + i * t->es);
    } else {
        a->sendbuf = a->recvbuf = s;
        if (result_here)
            for (uint64_t i = 0; i < c; i++) red_result(t, i, t->exp[r][0] + i * t->es);
    }
}

static void setup_reduce_scatter(tc *t, uint32_t r, hccl_op_args *a)
{
    const uint32_t n = t->n;
    const size_t es = t->es;
    uint64_t *cnt = t->sc[r], *displ = t->sd[r], span;
    for (uint32_t j = 0; j < n; j++) cnt[j] = t->type == HCCL_OP_REDUCE_SCATTER_V ? vcnt(j, t->count) : t->count;
    if (t->type == HCCL_OP_REDUCE_SCATTER_V) {
        span = rev_layout(n, cnt, displ);
        a->send_counts = cnt;
        a->send_displs = displ;
        a->count = cnt[r];
    } else {
        span = fwd_layout(n, cnt, displ, 0);
    }
    uint8_t *s = alloc_mem(t, r, 0, span * es);
    fill_red(t, r, 0, span);
    a->sendbuf = s;
    int k = t->mode == 0 ? 1 : 0;
    size_t off = t->mode == 2 ? displ[r] * es : 0;
    if (t->mode == 0) a->recvbuf = alloc_mem(t, r, 1, cnt[r] * es);
    else a->recvbuf = s + off;
    if (t->mode != 0) care_only(t, r, 0, off, cnt[r] * es);
    for (uint64_t i = 0; i < cnt[r]; i++) red_result(t, displ[r] + i, t->exp[r][k] + off + i * es);
}

static void setup_allgather(tc *t, uint32_t r, hccl_op_args *a)
{
    const uint32_t n = t->n;
    const size_t es = t->es;
    uint64_t *cnt = t->rc[r], *displ = t->rd[r], span;
    for (uint32_t j = 0; j < n; j++) cnt[j] = t->type == HCCL_OP_ALLGATHER_V ? vcnt(j, t->count) : t->count;
    if (t->type == HCCL_OP_ALLGATHER_V) {
        span = rev_layout(n, cnt, displ);
        a->recv_counts = cnt;
        a->recv_displs = displ;
        a->count = cnt[r];
    } else {
        span = fwd_layout(n, cnt, displ, 0);
    }
    int k;
    if (t->mode == 0) {
        a->sendbuf = alloc_mem(t, r, 0, cnt[r] * es);
        fill_bytes(t, r, 0, 0, cnt[r] * es, 0);
        a->recvbuf = alloc_mem(t, r, 1, span * es);
        k = 1;
    } else {
        uint8_t *d = alloc_mem(t, r, 0, span * es);
        size_t off = t->mode == 2 ? displ[r] * es : 0;
        fill_bytes(t, r, 0, off, cnt[r] * es, 0);
        a->sendbuf = d + off;
        a->recvbuf = d;
        memset(t->care[r][0], 0, span * es + 1);
        k = 0;
    }
    for (uint32_t j = 0; j < n; j++)
        for (size_t b = 0; b < cnt[j] * es; b++) {
            t->exp[r][k][displ[j] * es + b] = pbyte(j, b);
            t->care[r][k][displ[j] * es + b] = 1;
        }
}

static void setup_rooted_move(tc *t, uint32_t r, hccl_op_args *a)
{
    const uint32_t n = t->n, root = t->root;
    const size_t bytes = t->count * t->es;
    if (t->type == HCCL_OP_BROADCAST) {
        uint8_t *d = alloc_mem(t, r, 0, bytes);
        a->recvbuf = d;
        if (r == root) fill_bytes(t, r, 0, 0, bytes, 0);
        for (size_t b = 0; b < bytes; b++) t->exp[r][0][b] = pbyte(root, b);
        return;
    }
    if (t->type == HCCL_OP_SCATTER) {
        if (r != root) {
            a->recvbuf = alloc_mem(t, r, 1, bytes);
            for (size_t b = 0; b < bytes; b++) t->exp[r][1][b] = pbyte(root, r * bytes + b);
            return;
        }
        uint8_t *s = alloc_mem(t, r, 0, n * bytes);
        fill_bytes(t, r, 0, 0, n * bytes, 0);
        a->sendbuf = s;
        if (t->mode == 0) {
            a->recvbuf = alloc_mem(t, r, 1, bytes);
            for (size_t b = 0; b < bytes; b++) t->exp[r][1][b] = pbyte(root, r * bytes + b);
        } else {
            size_t off = t->mode == 2 ? r * bytes : 0;
            a->recvbuf = s + off;
            care_only(t, r, 0, off, bytes);
            for (size_t b = 0; b < bytes; b++) t->exp[r][0][off + b] = pbyte(root, r * bytes + b);
        }
        return;
    }
    /* GATHER */
    if (r != root) {
        a->sendbuf = alloc_mem(t, r, 0, bytes);
        fill_bytes(t, r, 0, 0, bytes, 0);
        return;
    }
    int k = 1;
    if (t->mode == 0) {
        a->sendbuf = alloc_mem(t, r, 0, bytes);
        fill_bytes(t, r, 0, 0, bytes, 0);
        a->recvbuf = alloc_mem(t, r, 1, n * bytes);
    } else {
        uint8_t *d = alloc_mem(t, r, 0, n * bytes);
        size_t off = t->mode == 2 ? r * bytes : 0;
        fill_bytes(t, r, 0, off, bytes, 0);
        a->sendbuf = d + off;
        a->recvbuf = d;
        k = 0;
    }
    for (uint32_t j = 0; j < n; j++)
        for (size_t b = 0; b < bytes; b++) t->exp[r][k][j * bytes + b] = pbyte(j, b);
}

/* All ranks' layouts of the alltoall family first (every rank needs its peers'). */
static void layout_alltoall(tc *t)
{
    const uint32_t n = t->n;
    const uint64_t c = t->count;
    int sym = t->mode == 2;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
            uint64_t m;
            if (t->type == HCCL_OP_ALLTOALL) m = c;
            else if (sym) m = vcnt(i + j, c);
            else m = (i * 3 + j * 5) % 4 == 0 ? 0 : c * (1 + (i + 2 * j) % 3);
            t->matrix[i * n + j] = m;
        }
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t j = 0; j < n; j++) {
            t->sc[r][j] = t->matrix[r * n + j];
            t->rc[r][j] = t->matrix[j * n + r];
        }
        if (t->type == HCCL_OP_ALLTOALLV && !sym) {
            rev_layout(n, t->sc[r], t->sd[r]);
            fwd_layout(n, t->rc[r], t->rd[r], 2);
        } else {
            fwd_layout(n, t->sc[r], t->sd[r], t->type == HCCL_OP_ALLTOALLV ? 1 : 0);
            fwd_layout(n, t->rc[r], t->rd[r], t->type == HCCL_OP_ALLTOALLV ? 1 : 0);
        }
    }
}

static void setup_alltoall(tc *t, uint32_t r, hccl_op_args *a)
{
    const uint32_t n = t->n;
    const size_t es = t->es;
    uint64_t sspan = 0, rspan = 0;
    for (uint32_t j = 0; j < n; j++) {
        sspan = t->sd[r][j] + t->sc[r][j] > sspan ? t->sd[r][j] + t->sc[r][j] : sspan;
        rspan = t->rd[r][j] + t->rc[r][j] > rspan ? t->rd[r][j] + t->rc[r][j] : rspan;
    }
    if (t->type == HCCL_OP_ALLTOALLV) {
        a->send_counts = t->sc[r];
        a->send_displs = t->sd[r];
        a->recv_counts = t->rc[r];
        a->recv_displs = t->rd[r];
    } else if (t->type == HCCL_OP_ALLTOALLVC) {
        a->matrix = t->matrix;
    }
    int k;
    if (t->mode == 0 || (t->mode == 3 && r % 2 == 0)) { /* mode 3: odd ranks in place, even ones not */
        a->sendbuf = alloc_mem(t, r, 0, sspan * es);
        fill_bytes(t, r, 0, 0, sspan * es, 0);
        a->recvbuf = alloc_mem(t, r, 1, rspan * es);
        k = 1;
    } else {
        uint8_t *d = alloc_mem(t, r, 0, (sspan > rspan ? sspan : rspan) * es);
        fill_bytes(t, r, 0, 0, sspan * es, 0);
        a->sendbuf = a->recvbuf = d;
        memset(t->care[r][0], 0, t->sz[r][0] + 1);
        k = 0;
    }
    for (uint32_t j = 0; j < n; j++)
        for (size_t b = 0; b < t->rc[r][j] * es; b++) {
            t->exp[r][k][t->rd[r][j] * es + b] = pbyte(j, t->sd[j][r] * es + b);
            t->care[r][k][t->rd[r][j] * es + b] = 1;
        }
}

/* ---------- running ---------- */

static HcclResult rank_fn(hccl_algo_ctx *ctx, void *arg)
{
    tc *t = arg;
    ctx->reference = g_force;
    int hier = ctx->host_of && ctx->nhosts > 1 && ctx->nhosts < ctx->nranks; /* forcing applies to its leaders */
    if (g_force && !hier && ctx->nranks > 1 &&
        hccl_algo_select(ctx, &t->args[ctx->rank]) != (hccl_algo_id)(g_force & 0xff))
        atomic_fetch_add(&g_wrong_algo, 1);
    if (g_expect >= 0 && ctx->nranks > 1 && hccl_algo_select(ctx, &t->args[ctx->rank]) != (hccl_algo_id)g_expect)
        atomic_fetch_add(&g_wrong_algo, 1);
    return hccl_algo_run(ctx, &t->args[ctx->rank]);
}

static int check_tc(tc *t, HcclResult res, const fake_net_stats *st)
{
    int ok = res == HCCL_SUCCESS;
    for (uint32_t r = 0; r < t->n && ok; r++)
        for (int k = 0; k < 2 && ok; k++) {
            if (!t->mem[r][k]) continue;
            for (size_t b = 0; b <= t->sz[r][k]; b++)
                if (t->care[r][k][b] && t->mem[r][k][b] != t->exp[r][k][b]) {
                    fprintf(stderr, "  rank %u buf %d byte %zu of %zu: got 0x%02x want 0x%02x\n", r, k, b,
                            t->sz[r][k], t->mem[r][k][b], t->exp[r][k][b]);
                    ok = 0;
                    break;
                }
        }
    /* Count 0 sends nothing, except AlltoAllV's pairwise schedule: one empty message
     * to each partner, so a partner that sends a block there fails the receiver
     * instead of leaving its message unread (pairwise_alltoall.c). */
    if (ok && t->count == 0 && t->type != HCCL_OP_ALLTOALLV && st->exchanges != 0) ok = 0;
    if (ok && t->count == 0 && t->type == HCCL_OP_ALLTOALLV && st->exchanges > (uint64_t)t->n * (t->n - 1)) ok = 0;
    TT_ASSERT_MSG(ok, "%s n=%u count=%llu dtype=%s op=%s root=%u mode=%d: result %d, %llu exchanges",
                  hccl_op_name(t->type), t->n, (unsigned long long)t->count, hccl_dtype_name(t->dt),
                  hccl_redop_name(t->op), t->root, t->mode, (int)res, (unsigned long long)st->exchanges);
    return ok;
}

static int run_case(hccl_op_type type, uint32_t n, uint64_t count, HcclDataType dt, HcclReduceOp op, uint32_t root,
                    int mode)
{
    if (g_force && !hccl_algo_implements((hccl_algo_id)(g_force & 0xff), type)) return 1;
    static tc t;
    memset(&t, 0, sizeof(t));
    t.n = n;
    t.type = type;
    t.dt = dt;
    t.op = op;
    t.count = count;
    t.root = root;
    t.mode = mode;
    t.es = hccl_dtype_size(dt);
    if (type == HCCL_OP_ALLTOALL || type == HCCL_OP_ALLTOALLV || type == HCCL_OP_ALLTOALLVC) layout_alltoall(&t);
    for (uint32_t r = 0; r < n; r++) {
        hccl_op_args *a = &t.args[r];
        a->type = type;
        a->count = count;
        a->dtype = dt;
        a->redop = op;
        a->root = root;
        switch (type) {
        case HCCL_OP_ALLREDUCE:
        case HCCL_OP_REDUCE: setup_allreduce(&t, r, a); break;
        case HCCL_OP_REDUCE_SCATTER:
        case HCCL_OP_REDUCE_SCATTER_V: setup_reduce_scatter(&t, r, a); break;
        case HCCL_OP_ALLGATHER:
        case HCCL_OP_ALLGATHER_V: setup_allgather(&t, r, a); break;
        case HCCL_OP_BROADCAST:
        case HCCL_OP_SCATTER:
        case HCCL_OP_GATHER: setup_rooted_move(&t, r, a); break;
        default: setup_alltoall(&t, r, a); break;
        }
    }
    fake_net_stats st;
    HcclResult res = fake_net_run(n, rank_fn, &t, &st);
    int ok = check_tc(&t, res, &st);
    free_tc(&t);
    runs++;
    return ok;
}

/* ---------- the matrix ---------- */

static void test_reductions(uint32_t n, uint64_t c)
{
    /* count 0 moves nothing whatever the type: one dtype and op suffice */
    const size_t ndt = c ? sizeof(red_dtypes) / sizeof(red_dtypes[0]) : 1, nop = c ? 4 : 1;
    for (size_t d = 0; d < ndt; d++)
        for (size_t o = 0; o < nop; o++) {
            HcclDataType dt = red_dtypes[d];
            HcclReduceOp op = red_ops[o];
            for (int mode = 0; mode < 2; mode++) run_case(HCCL_OP_ALLREDUCE, n, c, dt, op, 0, mode);
            for (int mode = 0; mode < 3; mode++) {
                run_case(HCCL_OP_REDUCE_SCATTER, n, c, dt, op, 0, mode);
                run_case(HCCL_OP_REDUCE_SCATTER_V, n, c, dt, op, 0, mode);
            }
            int all_roots = (d == 0 && o == 0) || (d == 2 && o == 2);
            for (uint32_t root = all_roots ? 0 : n - 1; root < n; root++)
                for (int mode = 0; mode < 2; mode++) run_case(HCCL_OP_REDUCE, n, c, dt, op, root, mode);
        }
}

static void test_moves(uint32_t n, uint64_t c)
{
    const size_t ndt = c ? sizeof(move_dtypes) / sizeof(move_dtypes[0]) : 1;
    for (size_t d = 0; d < ndt; d++) {
        HcclDataType dt = move_dtypes[d];
        for (int mode = 0; mode < 3; mode++) {
            run_case(HCCL_OP_ALLGATHER, n, c, dt, 0, 0, mode);
            run_case(HCCL_OP_ALLGATHER_V, n, c, dt, 0, 0, mode);
            run_case(HCCL_OP_ALLTOALLV, n, c, dt, 0, 0, mode);
            run_case(HCCL_OP_ALLTOALLVC, n, c, dt, 0, 0, mode);
            if (mode < 2) run_case(HCCL_OP_ALLTOALL, n, c, dt, 0, 0, mode);
        }
        for (uint32_t root = 0; root < n; root++) {
            run_case(HCCL_OP_BROADCAST, n, c, dt, 0, root, 0);
            for (int mode = 0; mode < 3; mode++) {
                run_case(HCCL_OP_SCATTER, n, c, dt, 0, root, mode);
                run_case(HCCL_OP_GATHER, n, c, dt, 0, root, mode);
            }
        }
    }
}

static void test_large(void)
{
    /* fp32 chunk = 1 Mi elements: allreduce windows hold n Mi, reduce-scatter and
     * reduce windows 512 Ki per block. */
    const uint64_t mi = 1u << 20;
    run_case(HCCL_OP_ALLREDUCE, 2, 2 * mi + mi / 2 + 3, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 0);
    run_case(HCCL_OP_ALLREDUCE, 3, 3 * mi + mi / 2 + 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, 0, 1);
    run_case(HCCL_OP_ALLREDUCE, 2, mi / 2 + 77, HCCL_DATA_TYPE_INT128, HCCL_REDUCE_PROD, 0, 1);
    run_case(HCCL_OP_REDUCE_SCATTER, 3, mi + mi / 4 + 5, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 0);
    run_case(HCCL_OP_REDUCE_SCATTER, 2, mi + 9, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MIN, 0, 1);
    run_case(HCCL_OP_REDUCE_SCATTER, 2, mi + 9, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM, 0, 2);
    run_case(HCCL_OP_REDUCE_SCATTER_V, 3, mi / 2 + 11, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 1);
    run_case(HCCL_OP_REDUCE, 3, mi + 13, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 1, 0);
    run_case(HCCL_OP_REDUCE, 2, mi + 13, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MAX, 1, 1);
    run_case(HCCL_OP_ALLGATHER, 3, mi + 17, HCCL_DATA_TYPE_FP32, 0, 0, 1);
    run_case(HCCL_OP_ALLGATHER_V, 3, mi / 2 + 17, HCCL_DATA_TYPE_FP32, 0, 0, 0);
    run_case(HCCL_OP_ALLTOALL, 2, mi + 19, HCCL_DATA_TYPE_FP32, 0, 0, 1);
    run_case(HCCL_OP_ALLTOALLVC, 3, mi / 2 + 19, HCCL_DATA_TYPE_FP32, 0, 0, 2);
    run_case(HCCL_OP_BROADCAST, 3, mi + 23, HCCL_DATA_TYPE_FP32, 0, 2, 0);
}

/* The direct (same-host) allreduce, with pointers and with staged copies, against
 * the serial result: sizes above the oneshot limit, and one spanning many windows. */
static void test_direct(void)
{
    static const struct {
        HcclDataType dt;
        HcclReduceOp op;
        uint64_t count;
    } cases[] = {{HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 5003},  {HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX, 20011},
                 {HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM, 9001},  {HCCL_DATA_TYPE_INT128, HCCL_REDUCE_PROD, 1503},
                 {HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MIN, 70001}};
    for (int dmode = 1; dmode <= 2; dmode++) {
        fake_net_set_direct(dmode);
        for (uint32_t n = 1; n <= MATRIX_N; n++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                for (int mode = 0; mode < 2; mode++)
                    run_case(HCCL_OP_ALLREDUCE, n, cases[i].count, cases[i].dt, cases[i].op, 0, mode);
        run_case(HCCL_OP_ALLREDUCE, 3, (3u << 20) + 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, dmode - 1);
        for (uint32_t n = 1; n <= MATRIX_N; n++) {
            uint64_t counts[3] = {1, n + 1, 3001};
            for (int ci = 0; ci < 3; ci++)
                for (int mode = 0; mode < 3; mode++) {
                    run_case(HCCL_OP_ALLGATHER, n, counts[ci], HCCL_DATA_TYPE_FP32, 0, 0, mode);
                    run_case(HCCL_OP_ALLGATHER_V, n, counts[ci], HCCL_DATA_TYPE_INT8, 0, 0, mode);
                    run_case(HCCL_OP_REDUCE_SCATTER, n, counts[ci], HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, mode);
                    run_case(HCCL_OP_REDUCE_SCATTER_V, n, counts[ci], HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MAX, 0, mode);
                }
            /* Above the eager limit: the direct broadcast (from 256 KiB the root writes
             * part of every reader's buffer). */
            for (uint32_t root = 0; root < n; root++) {
                run_case(HCCL_OP_BROADCAST, n, 5001, HCCL_DATA_TYPE_INT32, 0, root, 0);
                run_case(HCCL_OP_BROADCAST, n, 70001, HCCL_DATA_TYPE_INT32, 0, root, 0);
            }
        }
        run_case(HCCL_OP_REDUCE_SCATTER, 3, (1u << 20) + 5, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 1);
        /* Outputs past a core's private cache: non-temporal copies, every layout. */
        for (int mode = 0; mode < 3; mode++) {
            run_case(HCCL_OP_ALLGATHER, 3, (1u << 20) + 7, HCCL_DATA_TYPE_FP32, 0, 0, mode);
            run_case(HCCL_OP_ALLTOALL, 3, (1u << 19) + 7, HCCL_DATA_TYPE_FP32, 0, 0, mode);
        }
        /* The direct Reduce above the eager one's size: every root, in and out of place,
         * a few dtypes and reduce ops (2 ranks: the root's whole-vector path); and ones of
         * many windows. */
        for (uint32_t n = 2; n <= MATRIX_N; n++)
            for (uint32_t root = 0; root < n; root++)
                for (int mode = 0; mode < 2; mode++) {
                    run_case(HCCL_OP_REDUCE, n, 70001, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, root, mode);
                    if (root == n - 1) {
                        run_case(HCCL_OP_REDUCE, n, 140003, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MAX, root, mode);
                        run_case(HCCL_OP_REDUCE, n, 17501, HCCL_DATA_TYPE_INT128, HCCL_REDUCE_PROD, root, mode);
                    }
                }
        for (int mode = 0; mode < 2; mode++) {
            run_case(HCCL_OP_REDUCE, 3, (1u << 20) + 3, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 1, mode);
            run_case(HCCL_OP_REDUCE, 2, (1u << 18) + 5, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, mode); /* slices */
        }
        /* Ranks that disagree about in place: the same messages either way. */
        for (uint32_t n = 2; n <= MATRIX_N; n++) {
            run_case(HCCL_OP_ALLTOALL, n, 5001, HCCL_DATA_TYPE_INT32, 0, 0, 3);
            run_case(HCCL_OP_ALLTOALLV, n, 1001, HCCL_DATA_TYPE_INT8, 0, 0, 3);
        }
        run_case(HCCL_OP_ALLTOALL, 3, (1u << 19) + 7, HCCL_DATA_TYPE_FP32, 0, 0, 3);
        /* The direct AlltoAll above the one-round limit, and AlltoAllV and VC at every
         * size (empty blocks, in place with layouts that differ: a private copy). */
        for (uint32_t n = 1; n <= MATRIX_N; n++)
            for (int mode = 0; mode < 3; mode++) {
                run_case(HCCL_OP_ALLTOALL, n, 5001, HCCL_DATA_TYPE_INT32, 0, 0, mode);
                uint64_t counts[3] = {1, 7, 1001};
                for (int ci = 0; ci < 3; ci++) {
                    run_case(HCCL_OP_ALLTOALLV, n, counts[ci], ci == 1 ? HCCL_DATA_TYPE_FP16 : HCCL_DATA_TYPE_INT8,
                             0, 0, mode);
                    run_case(HCCL_OP_ALLTOALLVC, n, counts[ci], HCCL_DATA_TYPE_FP32, 0, 0, mode);
                }
            }
        /* The one-round Broadcast of small sizes: every root, odd counts. */
        for (uint32_t n = 2; n <= MATRIX_N; n++)
            for (uint32_t root = 0; root < n; root++)
                for (size_t d = 0; d < sizeof move_dtypes / sizeof move_dtypes[0]; d++) {
                    run_case(HCCL_OP_BROADCAST, n, 1, move_dtypes[d], 0, root, 0);
                    run_case(HCCL_OP_BROADCAST, n, 2 * n + 1, move_dtypes[d], 0, root, 0);
                }
        /* The eager Reduce of small sizes: every root, dtype and reduce op, odd counts,
         * in and out of place; and the one-round AlltoAll, every buffer layout. */
        for (uint32_t n = 2; n <= MATRIX_N; n++) {
            for (uint32_t root = 0; root < n; root++)
                for (size_t d = 0; d < sizeof red_dtypes / sizeof red_dtypes[0]; d++)
                    for (size_t o = 0; o < sizeof red_ops / sizeof red_ops[0]; o++)
                        for (int mode = 0; mode < 2; mode++)
                            run_case(HCCL_OP_REDUCE, n, root % 2 ? 1 : 2 * n + 1, red_dtypes[d], red_ops[o], root,
                                     mode);
            /* Scatter and Gather without the agreement: every root, dtype, layout. */
            for (uint32_t root = 0; root < n; root++)
                for (size_t d = 0; d < sizeof move_dtypes / sizeof move_dtypes[0]; d++)
                    for (int mode = 0; mode < 2; mode++) {
                        run_case(HCCL_OP_SCATTER, n, root % 2 ? 1 : 2 * n + 1, move_dtypes[d], 0, root, mode);
                        run_case(HCCL_OP_GATHER, n, root % 2 ? 2 * n + 1 : 1, move_dtypes[d], 0, root, mode);
                    }
            for (int mode = 0; mode < 3; mode++)
                for (size_t d = 0; d < sizeof move_dtypes / sizeof move_dtypes[0]; d++) {
                    run_case(HCCL_OP_ALLTOALL, n, 1, move_dtypes[d], 0, 0, mode);
                    run_case(HCCL_OP_ALLTOALL, n, 2 * n + 1, move_dtypes[d], 0, 0, mode);
                }
        }
        /* The one-round AllGather(V) and ReduceScatter of small sizes (n > 2): every
         * dtype, every reduce op, odd counts, every buffer layout. */
        for (uint32_t n = 3; n <= MATRIX_N; n++)
            for (int mode = 0; mode < 3; mode++) {
                uint64_t counts[2] = {1, 2 * n + 1};
                for (int ci = 0; ci < 2; ci++) {
                    for (size_t d = 0; d < sizeof red_dtypes / sizeof red_dtypes[0]; d++)
                        for (size_t o = 0; o < sizeof red_ops / sizeof red_ops[0]; o++)
                            run_case(HCCL_OP_REDUCE_SCATTER, n, counts[ci], red_dtypes[d], red_ops[o], 0, mode);
                    for (size_t d = 0; d < sizeof move_dtypes / sizeof move_dtypes[0]; d++) {
                        run_case(HCCL_OP_ALLGATHER, n, counts[ci], move_dtypes[d], 0, 0, mode);
                        run_case(HCCL_OP_ALLGATHER_V, n, counts[ci], move_dtypes[d], 0, 0, mode);
                    }
                }
            }
    }
    fake_net_set_direct(0);
    /* Over the network (the pairwise rounds, or Bruck): ranks that disagree about in place. */
    for (uint32_t n = 2; n <= MATRIX_N; n++) {
        run_case(HCCL_OP_ALLTOALL, n, 5001, HCCL_DATA_TYPE_INT32, 0, 0, 3);
        run_case(HCCL_OP_ALLTOALLV, n, 1001, HCCL_DATA_TYPE_INT8, 0, 0, 3);
        run_case(HCCL_OP_ALLTOALLVC, n, 1001, HCCL_DATA_TYPE_FP16, 0, 0, 3);
    }
    run_case(HCCL_OP_ALLTOALL, 3, (1u << 20) + 7, HCCL_DATA_TYPE_FP32, 0, 0, 3); /* pieces */
}

/* Hierarchical allreduce, broadcast, allgather and reduce-scatter over simulated hosts, with and without direct
 * copies inside hosts, against the serial result; also with each network algorithm forced (for the leaders'
 * step), and one rank per host (the network algorithms throughout). Uneven hosts too (3+1, 1+3, 2+3 interleaved,
 * 1+1+1+2, 3+1+1+1+1: the leaders' AllGather exchange with more hosts than ranks per host). */
static void test_hier(void)
{
    static const uint32_t l3[] = {0, 0, 1}, l4[] = {0, 0, 1, 1}, l5[] = {0, 1, 0, 1, 1}, l6[] = {0, 0, 0, 1, 1, 2},
                          l8[] = {0, 1, 2, 3, 0, 1, 2, 3}, l5f[] = {0, 1, 2, 3, 4},
                          l31[] = {0, 0, 0, 1}, l13[] = {0, 1, 1, 1}, l23[] = {0, 1, 1, 0, 1}, l1112[] = {0, 1, 2, 3, 3},
                          l7[] = {0, 0, 0, 1, 2, 3, 4};
    static const struct {
        const uint32_t *host_of;
        uint32_t n, nhosts;
    } layouts[] = {{l3, 3, 2}, {l4, 4, 2}, {l5, 5, 2}, {l6, 6, 3}, {l8, 8, 4}, {l5f, 5, 5},
                   {l31, 4, 2}, {l13, 4, 2}, {l23, 5, 2}, {l1112, 5, 4}, {l7, 7, 5}};
    static const int forces[] = {0, HCCL_ALGO_FORCED(HCCL_ALGO_HD), HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK),
                                 HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN)};
    for (int step = 0; step < 8; step++) {
        int dmode = step % 2 * 2;
        g_force = forces[step / 2];
        fake_net_set_direct(dmode);
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
            uint32_t n = layouts[l].n;
            fake_net_set_hosts(layouts[l].host_of, layouts[l].nhosts);
            for (int mode = 0; mode < 2; mode++) {
                run_case(HCCL_OP_ALLREDUCE, n, 5003, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, mode);
                run_case(HCCL_OP_ALLREDUCE, n, 20011, HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX, 0, mode);
                run_case(HCCL_OP_ALLREDUCE, n, 7, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_PROD, 0, mode);
            }
            for (int mode = 0; mode < 3; mode++) {
                run_case(HCCL_OP_ALLGATHER, n, 1, HCCL_DATA_TYPE_INT8, 0, 0, mode);
                run_case(HCCL_OP_ALLGATHER, n, 3001, HCCL_DATA_TYPE_FP32, 0, 0, mode);
                run_case(HCCL_OP_REDUCE_SCATTER, n, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 0, mode);
                run_case(HCCL_OP_REDUCE_SCATTER, n, 3001, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MAX, 0, mode);
            }
            for (uint32_t root = 0; root < n; root++) {
                run_case(HCCL_OP_BROADCAST, n, 1, HCCL_DATA_TYPE_INT8, 0, root, 0);
                run_case(HCCL_OP_BROADCAST, n, 5001, HCCL_DATA_TYPE_INT32, 0, root, 0);
            }
        }
        run_case(HCCL_OP_ALLREDUCE, 4, (1u << 20) + 3, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 1);
    }
    g_force = 0;
    fake_net_set_hosts(NULL, 0);
    fake_net_set_direct(0);
}

/* ---------- the network algorithms (halving-doubling, Bruck, pipelined chain, recursive doubling) ---------- */

/* The whole matrix (every op, dtype, reduce op, mode, root) for n in [n0, n1]. */
static void test_matrix(uint32_t n0, uint32_t n1)
{
    for (uint32_t n = n0; n <= n1; n++) {
        uint64_t counts[4] = {0, 1, n - 1, 1001};
        for (int ci = 0; ci < 4; ci++) {
            if (ci == 2 && (n - 1 == 0 || n - 1 == 1)) continue; /* already covered */
            test_reductions(n, counts[ci]);
            test_moves(n, counts[ci]);
        }
    }
}

/* Each network algorithm forced, against the same serial results as the reference
 * algorithms: the whole matrix for n = 1..8, a lighter one for 13 and 16 ranks, and
 * counts past the scratch windows (halving-doubling, Bruck alltoall) and the chain's
 * segments (16 KiB and up). */
static void test_network(void)
{
    static const hccl_algo_id algos[] = {HCCL_ALGO_HD, HCCL_ALGO_BRUCK, HCCL_ALGO_CHAIN, HCCL_ALGO_RD};
    static const uint32_t big_n[] = {13, 16};
    const uint64_t mi = 1u << 20;
    long before = runs;
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        g_force = HCCL_ALGO_FORCED(algos[i]);
        test_matrix(1, MATRIX_N);
        for (size_t k = 0; k < 2; k++) {
            uint32_t n = big_n[k];
            uint64_t counts[4] = {0, 1, n - 1, 1001};
            for (int ci = 0; ci < 4; ci++) {
                uint64_t c = counts[ci];
                for (int mode = 0; mode < 3; mode++) {
                    if (mode < 2) {
                        run_case(HCCL_OP_ALLREDUCE, n, c, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, mode);
                        run_case(HCCL_OP_ALLREDUCE, n, c, HCCL_DATA_TYPE_INT8, HCCL_REDUCE_PROD, 0, mode);
                        run_case(HCCL_OP_ALLTOALL, n, c, HCCL_DATA_TYPE_INT32, 0, 0, mode);
                        run_case(HCCL_OP_REDUCE, n, c, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_MAX, n - 1, mode);
                        run_case(HCCL_OP_REDUCE, n, c, HCCL_DATA_TYPE_INT128, HCCL_REDUCE_SUM, 5, mode);
                    }
                    run_case(HCCL_OP_REDUCE_SCATTER, n, c, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM, 0, mode);
                    run_case(HCCL_OP_REDUCE_SCATTER_V, n, c, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MIN, 0, mode);
                    run_case(HCCL_OP_ALLGATHER, n, c, HCCL_DATA_TYPE_INT8, 0, 0, mode);
                    run_case(HCCL_OP_ALLGATHER_V, n, c, HCCL_DATA_TYPE_INT128, 0, 0, mode);
                }
                for (uint32_t root = 0; root < n; root += 3)
                    run_case(HCCL_OP_BROADCAST, n, c, HCCL_DATA_TYPE_INT32, 0, root, 0);
            }
        }
        for (uint32_t n = 2; n <= 8; n++) {
            run_case(HCCL_OP_ALLREDUCE, n, 40001, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, n % 2);
            run_case(HCCL_OP_REDUCE_SCATTER, n, 40001, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, 0, n % 3);
            run_case(HCCL_OP_ALLGATHER, n, 40001, HCCL_DATA_TYPE_FP32, 0, 0, n % 3);
            run_case(HCCL_OP_ALLTOALL, n, 20001, HCCL_DATA_TYPE_FP16, 0, 0, n % 2);
            for (uint32_t root = 0; root < n; root++) {
                run_case(HCCL_OP_BROADCAST, n, 40001, HCCL_DATA_TYPE_FP32, 0, root, 0);
                run_case(HCCL_OP_REDUCE, n, 40001, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, root, root % 2);
            }
        }
        /* Several windows: halving-doubling allreduce (1 Mi fp32 with a fold, 2 Mi
         * without), reduce-scatter (scratch / 2n per block), Bruck alltoall (scratch /
         * (n + 2 ceil(n/2)) per block); chain segments of 1 MiB. */
        run_case(HCCL_OP_ALLREDUCE, 3, mi + 3, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 0);
        run_case(HCCL_OP_ALLREDUCE, 4, 2 * mi + 5, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, 0, 1);
        run_case(HCCL_OP_ALLREDUCE, 6, mi / 4 + 1, HCCL_DATA_TYPE_INT128, HCCL_REDUCE_PROD, 0, 1);
        run_case(HCCL_OP_REDUCE_SCATTER, 5, 2 * (mi / 40) + 3, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 1);
        run_case(HCCL_OP_REDUCE_SCATTER, 4, mi / 8 + 3, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 2);
        run_case(HCCL_OP_REDUCE_SCATTER_V, 3, mi / 6 + 11, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 0);
        run_case(HCCL_OP_REDUCE_SCATTER_V, 6, mi / 12 + 11, HCCL_DATA_TYPE_INT8, HCCL_REDUCE_MAX, 0, 2);
        run_case(HCCL_OP_ALLTOALL, 5, mi / 11 + 3, HCCL_DATA_TYPE_FP32, 0, 0, 0);
        run_case(HCCL_OP_ALLTOALL, 4, mi / 8 + 3, HCCL_DATA_TYPE_FP32, 0, 0, 1);
        run_case(HCCL_OP_ALLGATHER_V, 5, mi / 4 + 17, HCCL_DATA_TYPE_FP32, 0, 0, 2);
        run_case(HCCL_OP_BROADCAST, 4, 3 * mi + 7, HCCL_DATA_TYPE_FP32, 0, 1, 0);
        run_case(HCCL_OP_REDUCE, 5, mi + 7, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 2, 1);
    }
    g_force = 0;
    TT_ASSERT_MSG(atomic_load(&g_wrong_algo) == 0, "%d runs did not use the forced algorithm",
                  atomic_load(&g_wrong_algo));
    printf("test_algo: %ld runs of the network algorithms\n", runs - before);
}

/* The slot algorithms (one round through the host's shared mailboxes), which the
 * selection picks for small vectors when the network has slots: AllReduce,
 * AllGather, ReduceScatter and AlltoAll, every dtype and reduce op, in and out of place, n =
 * 1..8, from 1 element to the limit with a CPU per rank (512 bytes in all). */
static void test_slots(void)
{
    long before = runs;
    fake_net_set_slots(1);
    g_expect = HCCL_ALGO_SLOT;
    for (uint32_t n = 1; n <= MATRIX_N; n++)
        for (size_t d = 0; d < sizeof(red_dtypes) / sizeof(red_dtypes[0]); d++) {
            size_t es = hccl_dtype_size(red_dtypes[d]);
            uint64_t counts[3] = {1, n + 2, 512 / es};
            for (size_t o = 0; o < 4; o++)
                for (int ci = 0; ci < 3; ci++)
                    for (int mode = 0; mode < 2; mode++)
                        run_case(HCCL_OP_ALLREDUCE, n, counts[ci], red_dtypes[d], red_ops[o], 0, mode);
        }
    /* AllGather and ReduceScatter up to n blocks of 512 bytes in all (modes: in place too). */
    for (uint32_t n = 1; n <= MATRIX_N; n++) {
        for (size_t d = 0; d < sizeof(move_dtypes) / sizeof(move_dtypes[0]); d++) {
            uint64_t top = 512 / (hccl_dtype_size(move_dtypes[d]) * n);
            for (uint64_t c = 1; c <= top; c = c * 3 + 1)
                for (int mode = 0; mode < 3; mode++) run_case(HCCL_OP_ALLGATHER, n, c, move_dtypes[d], 0, 0, mode);
        }
        for (size_t d = 0; d < sizeof(red_dtypes) / sizeof(red_dtypes[0]); d++) {
            uint64_t top = 512 / (hccl_dtype_size(red_dtypes[d]) * n);
            for (size_t o = 0; o < 4; o++)
                for (uint64_t c = 1; c <= top; c = c * 3 + 1)
                    for (int mode = 0; mode < 3; mode++)
                        run_case(HCCL_OP_REDUCE_SCATTER, n, c, red_dtypes[d], red_ops[o], 0, mode);
        }
        /* AlltoAll likewise (in place too). */
        for (size_t d = 0; d < sizeof(move_dtypes) / sizeof(move_dtypes[0]); d++) {
            uint64_t top = 512 / (hccl_dtype_size(move_dtypes[d]) * n);
            for (uint64_t c = 1; c <= top; c = c * 3 + 1)
                for (int mode = 0; mode < 3; mode++) run_case(HCCL_OP_ALLTOALL, n, c, move_dtypes[d], 0, 0, mode);
        }
    }
    g_expect = -1;
    /* Above the limit the slots are not used (and the result is still right). */
    run_case(HCCL_OP_ALLREDUCE, 4, 129, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 0, 0);
    run_case(HCCL_OP_ALLGATHER, 4, 33, HCCL_DATA_TYPE_FP32, 0, 0, 1);
    run_case(HCCL_OP_REDUCE_SCATTER, 4, 33, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX, 0, 2);
    fake_net_set_slots(0);
    TT_ASSERT_MSG(atomic_load(&g_wrong_algo) == 0, "%d runs did not use the slots", atomic_load(&g_wrong_algo));
    printf("test_algo: %ld runs of the slot algorithms\n", runs - before);
}

/* ---------- determinism: non-integer fp inputs, results bitwise the same run to run ---------- */

typedef struct det_case {
    hccl_op_type type;
    uint32_t n;
    uint64_t count;
    float *in[MAXR], *out[MAXR];
} det_case;

static HcclResult det_fn(hccl_algo_ctx *ctx, void *arg)
{
    det_case *d = arg;
    uint32_t r = ctx->rank;
    ctx->reference = g_force;
    hccl_op_args a = {.type = d->type, .sendbuf = d->in[r], .recvbuf = d->out[r], .count = d->count,
                      .dtype = HCCL_DATA_TYPE_FP32, .redop = HCCL_REDUCE_SUM, .root = d->n / 2};
    return hccl_algo_run(ctx, &a);
}

static float det_val(uint32_t r, uint64_t i)
{
    uint64_t x = (r + 1) * 0x9e3779b97f4a7c15ull ^ (i + 1) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    x *= 0x94d049bb133111ebull;
    return (float)((double)(x >> 11) / (double)(1ull << 53) * 2.0 - 1.0) * (float)(1 + r % 3) * 1000.0f;
}

/* Runs the case twice; the outputs of the second run must equal the first's bit for
 * bit, and (allreduce) every rank's the same. For the chain reduce the order is the
 * documented one, x_root + (x_root+1 + (... + x_root+n-1)), checked against a serial
 * fp32 loop. */
static void det_check(hccl_op_type type, uint32_t n, uint64_t count, const char *what)
{
    det_case d = {type, n, count, {0}, {0}};
    uint64_t out_elems = count;
    uint64_t in_elems = type == HCCL_OP_REDUCE_SCATTER ? count * n : count;
    float *first[MAXR];
    for (uint32_t r = 0; r < n; r++) {
        d.in[r] = malloc(in_elems * sizeof(float));
        d.out[r] = calloc(out_elems, sizeof(float));
        first[r] = malloc(out_elems * sizeof(float));
        for (uint64_t i = 0; i < in_elems; i++) d.in[r][i] = det_val(r, i);
    }
    int ok = 1;
    for (int round = 0; round < 2 && ok; round++) {
        ok = fake_net_run(n, det_fn, &d, NULL) == HCCL_SUCCESS;
        for (uint32_t r = 0; r < n && ok; r++) {
            if (type == HCCL_OP_REDUCE && r != n / 2) continue;
            if (round == 0) memcpy(first[r], d.out[r], out_elems * sizeof(float));
            else if (memcmp(first[r], d.out[r], out_elems * sizeof(float)) != 0) ok = 0;
            if (type == HCCL_OP_ALLREDUCE && memcmp(d.out[r], first[0], out_elems * sizeof(float)) != 0) ok = 0;
            memset(d.out[r], 0, out_elems * sizeof(float));
        }
    }
    if (ok && type == HCCL_OP_REDUCE && (g_force & 0xff) == HCCL_ALGO_CHAIN) {
        uint32_t root = n / 2;
        for (uint64_t i = 0; i < count && ok; i++) {
            float acc = d.in[(root + n - 1) % n][i];
            for (uint32_t k = n - 1; k-- > 0;) acc = d.in[(root + k) % n][i] + acc;
            if (memcmp(&acc, &first[root][i], sizeof acc) != 0) ok = 0;
        }
    }
    TT_ASSERT_MSG(ok, "determinism: %s %s n=%u count=%llu", what, hccl_op_name(type), n, (unsigned long long)count);
    for (uint32_t r = 0; r < n; r++) {
        free(d.in[r]);
        free(d.out[r]);
        free(first[r]);
    }
}

static void test_determinism(void)
{
    static const uint32_t ns[] = {2, 3, 5, 8, 13};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t n = ns[k];
        g_force = 1;
        det_check(HCCL_OP_ALLREDUCE, n, 30001, "ring");
        det_check(HCCL_OP_REDUCE, n, 30001, "tree");
        g_force = HCCL_ALGO_FORCED(HCCL_ALGO_HD);
        det_check(HCCL_OP_ALLREDUCE, n, 30001, "halving-doubling");
        det_check(HCCL_OP_ALLREDUCE, n, 7, "halving-doubling");
        det_check(HCCL_OP_REDUCE_SCATTER, n, 3001, "halving-doubling");
        g_force = HCCL_ALGO_FORCED(HCCL_ALGO_RD);
        det_check(HCCL_OP_ALLREDUCE, n, 3001, "recursive doubling");
        g_force = HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN);
        det_check(HCCL_OP_REDUCE, n, 30001, "chain");
        det_check(HCCL_OP_REDUCE, n, 3, "chain");
    }
    g_force = 0;
}

/* ---------- NaN and signed zeros: the same bits whatever the algorithm ---------- */

typedef struct edge_case {
    hccl_op_type type;
    HcclDataType dt;
    HcclReduceOp op;
    uint64_t count;
    uint8_t *in[MAXR], *out[MAXR];
} edge_case;

static HcclResult edge_fn(hccl_algo_ctx *ctx, void *arg)
{
    edge_case *e = arg;
    ctx->reference = g_force;
    hccl_op_args a = {.type = e->type, .sendbuf = e->in[ctx->rank], .recvbuf = e->out[ctx->rank],
                      .count = e->count, .dtype = e->dt, .redop = e->op, .root = 0};
    return hccl_algo_run(ctx, &a);
}

/* Input element i of rank r: NaNs of both signs and several payloads (quiet and
 * signalling), infinities, zeros of both signs and 1, spread so that elements combine
 * different NaNs in different positions of the reduction order. */
static void edge_val(HcclDataType dt, uint32_t r, uint64_t i, uint8_t *dst)
{
    static const uint32_t f32[8] = {0x7FC00000u, 0xFFC00000u, 0x7FC12345u, 0xFFD00001u,
                                    0x7F800001u, 0xFF800000u, 0x7F800000u, 0x3F800000u};
    static const uint16_t f16[8] = {0x7E00, 0xFE00, 0x7E45, 0xFF01, 0x7C01, 0xFC00, 0x7C00, 0x3C00};
    static const uint16_t bf16[8] = {0x7FC0, 0xFFC0, 0x7FC5, 0xFF81, 0x7F81, 0xFF80, 0x7F80, 0x3F80};
    unsigned k = (unsigned)((i + r * 7) % 8);
    int zero = i % 5 == 4; /* +0 on even ranks, -0 on odd ones */
    if (dt == HCCL_DATA_TYPE_FP32 || dt == HCCL_DATA_TYPE_FP64) {
        uint32_t x = zero ? (r & 1) << 31 : f32[k];
        if (dt == HCCL_DATA_TYPE_FP32) {
            memcpy(dst, &x, 4);
        } else { /* the same value, payload moved into place */
            uint64_t y = ((uint64_t)(x & 0x80000000u) << 32) |
                         ((x & 0x7F800000u) == 0x7F800000u ? 0x7FF0000000000000ull : (x & 0x7FFFFFFFu) ? 0x3FF0000000000000ull : 0) |
                         ((uint64_t)(x & 0x7FFFFFu) << 29);
            memcpy(dst, &y, 8);
        }
    } else {
        uint16_t x = zero ? (uint16_t)((r & 1) << 15) : dt == HCCL_DATA_TYPE_FP16 ? f16[k] : bf16[k];
        memcpy(dst, &x, 2);
    }
}

/* The reduced vector of one algorithm configuration (force: g_force; direct / slots: the
 * fake network's modes), root's (Reduce) or rank 0's output; NULL on failure. */
static uint8_t *edge_run(edge_case *e, uint32_t n, int force, int direct, int slots)
{
    size_t es = hccl_dtype_size(e->dt);
    uint64_t in_elems = e->type == HCCL_OP_REDUCE_SCATTER ? e->count * n : e->count;
    for (uint32_t r = 0; r < n; r++) {
        e->in[r] = malloc(in_elems * es);
        e->out[r] = calloc(e->count, es);
        for (uint64_t i = 0; i < in_elems; i++) edge_val(e->dt, r, i, e->in[r] + i * es);
    }
    g_force = force;
    fake_net_set_direct(direct);
    fake_net_set_slots(slots);
    HcclResult res = fake_net_run(n, edge_fn, e, NULL);
    g_force = 0;
    fake_net_set_direct(0);
    fake_net_set_slots(0);
    for (uint32_t r = 0; r < n; r++) {
        free(e->in[r]);
        if (r) free(e->out[r]);
    }
    if (res == HCCL_SUCCESS) return e->out[0];
    free(e->out[0]);
    return NULL;
}

/* A NaN result is the canonical quiet NaN, and every result the reference algorithm's
 * bits, whichever algorithm reduced (ring / tree, halving-doubling, recursive doubling,
 * chain, oneshot, direct, slots), for 2..4 ranks, fp32/fp64/fp16/bf16, every op. */
static void test_edge_values(void)
{
    static const HcclDataType dts[] = {HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_FP64, HCCL_DATA_TYPE_FP16,
                                       HCCL_DATA_TYPE_BFP16};
    static const struct {
        const char *name;
        int force, direct, slots;
    } cfg[] = {{"reference", 1, 0, 0},
               {"default", 0, 0, 0},
               {"halving-doubling", HCCL_ALGO_FORCED(HCCL_ALGO_HD), 0, 0},
               {"recursive doubling", HCCL_ALGO_FORCED(HCCL_ALGO_RD), 0, 0},
               {"chain", HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN), 0, 0},
               {"oneshot", HCCL_ALGO_FORCED(HCCL_ALGO_ONESHOT), 0, 0},
               {"direct", 0, 1, 0},
               {"slots", 0, 0, 1}};
    static const hccl_op_type types[] = {HCCL_OP_ALLREDUCE, HCCL_OP_REDUCE, HCCL_OP_REDUCE_SCATTER};
    for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (int op = 0; op < 4; op++)
                for (uint32_t n = 2; n <= 4; n++) {
                    edge_case e = {types[ty], dts[d], (HcclReduceOp)op, 40, {0}, {0}};
                    size_t es = hccl_dtype_size(e.dt);
                    uint8_t qnan[8];
                    edge_val(e.dt, 0, 0, qnan); /* the canonical NaN is input k = 0 */
                    uint8_t *ref = edge_run(&e, n, cfg[0].force, 0, 0);
                    TT_ASSERT_MSG(ref != NULL, "edge values: reference %s failed", hccl_op_name(e.type));
                    if (!ref) continue;
                    for (size_t c = 1; c < sizeof cfg / sizeof cfg[0]; c++) {
                        if (cfg[c].force && !hccl_algo_implements((hccl_algo_id)(cfg[c].force & 0xff), e.type))
                            continue;
                        uint8_t *got = edge_run(&e, n, cfg[c].force, cfg[c].direct, cfg[c].slots);
                        uint64_t i = 0;
                        while (got && i < e.count && memcmp(got + i * es, ref + i * es, es) == 0) i++;
                        TT_ASSERT_MSG(got && i == e.count,
                                      "edge values: %s %s n=%u %s %s: element %llu differs from the reference's",
                                      cfg[c].name, hccl_op_name(e.type), n, hccl_dtype_name(e.dt),
                                      hccl_redop_name(e.op), (unsigned long long)i);
                        free(got);
                    }
                    for (uint64_t i = 0; i < e.count; i++) {
                        double v = 0;
                        if (e.dt == HCCL_DATA_TYPE_FP32) {
                            float f;
                            memcpy(&f, ref + i * es, 4);
                            v = f;
                        } else if (e.dt == HCCL_DATA_TYPE_FP64) {
                            memcpy(&v, ref + i * es, 8);
                        } else {
                            uint16_t h;
                            memcpy(&h, ref + i * es, 2);
                            v = e.dt == HCCL_DATA_TYPE_FP16 ? hccl_fp16_to_fp32(h) : hccl_bf16_to_fp32(h);
                        }
                        TT_ASSERT_MSG(v == v || memcmp(ref + i * es, qnan, es) == 0,
                                      "edge values: %s n=%u %s %s element %llu: NaN not the canonical one",
                                      hccl_op_name(e.type), n, hccl_dtype_name(e.dt), hccl_redop_name(e.op),
                                      (unsigned long long)i);
                    }
                    free(ref);
                }
}

/* ---------- selection and HCCL_ALGO ---------- */

static hccl_algo_id pick(uint32_t n, int direct, hccl_op_type type, uint64_t count, HcclDataType dt)
{
    static hccl_net net = {NULL};
    hccl_algo_ctx ctx = {.rank = 0, .nranks = n, .net = &net, .scratch_bytes = HCCL_ALGO_SCRATCH_BYTES,
                         .direct = direct, .direct_local = direct};
    static uint64_t counts[MAXR];
    hccl_op_args a = {.type = type, .count = count, .dtype = dt, .recv_counts = counts, .send_counts = counts};
    for (uint32_t j = 0; j < n; j++) counts[j] = count;
    return hccl_algo_select(&ctx, &a);
}

/* The selection picks `at` for count elements and `above` for one more. */
static void expect_bound(const hccl_algo_ctx *ctx, hccl_op_args *a, uint64_t count, hccl_algo_id at,
                         hccl_algo_id above)
{
    a->count = count;
    TT_ASSERT_EQ(hccl_algo_select(ctx, a), at);
    a->count = count + 1;
    TT_ASSERT_EQ(hccl_algo_select(ctx, a), above);
}

/* The cost model's choices over TCP, and the choices it must not change. */
static void test_selection(void)
{
    const HcclDataType f = HCCL_DATA_TYPE_FP32;
    const uint64_t k = 1024 / 4, m = 1024 * k;
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_ALLREDUCE, 2 * k, f), HCCL_ALGO_ONESHOT); /* unchanged */
    TT_ASSERT_EQ(pick(2, 0, HCCL_OP_ALLREDUCE, 1 * m, f), HCCL_ALGO_REFERENCE); /* 2 ranks: a tie */
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_ALLREDUCE, 64 * k, f), HCCL_ALGO_HD);
    /* Both cut 256 KiB blocks per rank: H-D's fewer rounds per window win (measured:
     * 4 ranks over TCP, 2-32 MiB, H-D 0.66-0.94x the ring's time). */
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_ALLREDUCE, 64 * m, f), HCCL_ALGO_HD);
    TT_ASSERT_EQ(pick(5, 0, HCCL_OP_ALLREDUCE, 20 * k, f), HCCL_ALGO_HD);
    TT_ASSERT_EQ(pick(5, 0, HCCL_OP_ALLREDUCE, 1 * m, f), HCCL_ALGO_REFERENCE); /* the fold costs bytes */
    TT_ASSERT_EQ(pick(3, 0, HCCL_OP_ALLREDUCE, 64 * k, f), HCCL_ALGO_REFERENCE);
    TT_ASSERT_EQ(pick(8, 0, HCCL_OP_REDUCE_SCATTER, 4 * k, f), HCCL_ALGO_HD);
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_ALLGATHER, 1 * k, f), HCCL_ALGO_HD);
    TT_ASSERT_EQ(pick(5, 0, HCCL_OP_ALLGATHER, 1 * k, f), HCCL_ALGO_BRUCK);
    TT_ASSERT_EQ(pick(5, 0, HCCL_OP_ALLGATHER_V, 1 * k, f), HCCL_ALGO_BRUCK);
    TT_ASSERT_EQ(pick(2, 0, HCCL_OP_ALLGATHER, 1 * k, f), HCCL_ALGO_REFERENCE);
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_BROADCAST, 4 * m, f), HCCL_ALGO_CHAIN);
    /* Small broadcasts are eager over the network too, up to 8 KiB. */
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_BROADCAST, 1 * k, f), HCCL_ALGO_ONESHOT);
    TT_ASSERT_EQ(pick(16, 0, HCCL_OP_BROADCAST, 8 * k, f), HCCL_ALGO_ONESHOT);
    TT_ASSERT_EQ(pick(4, 0, HCCL_OP_BROADCAST, 8 * k + 1, f), HCCL_ALGO_REFERENCE);
    {
        static hccl_net netn = {NULL};
        hccl_algo_ctx big = {.rank = 0, .nranks = 64, .net = &netn, .scratch_bytes = HCCL_ALGO_SCRATCH_BYTES};
        hccl_op_args b = {.type = HCCL_OP_BROADCAST, .count = 1, .dtype = f};
        TT_ASSERT_EQ(hccl_algo_select(&big, &b), HCCL_ALGO_ONESHOT);
        big.nranks = 65; /* more peers than the oneshot's transfers */
        TT_ASSERT(hccl_algo_select(&big, &b) != HCCL_ALGO_ONESHOT);
    }
    TT_ASSERT_EQ(pick(2, 0, HCCL_OP_BROADCAST, 4 * m, f), HCCL_ALGO_REFERENCE);
    TT_ASSERT_EQ(pick(8, 0, HCCL_OP_REDUCE, 4 * m, f), HCCL_ALGO_CHAIN);
    TT_ASSERT_EQ(pick(8, 0, HCCL_OP_ALLTOALL, 16, f), HCCL_ALGO_BRUCK);
    TT_ASSERT_EQ(pick(8, 0, HCCL_OP_ALLTOALL, 1 * m, f), HCCL_ALGO_REFERENCE);
    TT_ASSERT_EQ(pick(8, 0, HCCL_OP_ALLTOALLV, 16, f), HCCL_ALGO_REFERENCE);
    /* TCP within one host (a topology of one host, no direct copies): the chain's
     * rounds do not overlap there, so it waits for larger buffers. */
    {
        static const uint32_t one_host[4] = {0, 0, 0, 0};
        static hccl_net net0 = {NULL};
        hccl_algo_ctx h = {.rank = 0, .nranks = 4, .net = &net0, .scratch_bytes = HCCL_ALGO_SCRATCH_BYTES,
                           .host_of = one_host, .nhosts = 1};
        TT_ASSERT_EQ(hccl_algo_link(&h), HCCL_LINK_TCP_HOST);
        hccl_op_args b = {.type = HCCL_OP_BROADCAST, .count = 2 * m, .dtype = f};
        TT_ASSERT_EQ(hccl_algo_select(&h, &b), HCCL_ALGO_REFERENCE);
        b.count = 32 * m;
        TT_ASSERT_EQ(hccl_algo_select(&h, &b), HCCL_ALGO_CHAIN);
        b.type = HCCL_OP_ALLREDUCE;
        b.count = 64 * k;
        TT_ASSERT_EQ(hccl_algo_select(&h, &b), HCCL_ALGO_HD);
    }
    /* A forced algorithm does not override one host's direct algorithms. */
    static hccl_net net = {.peer_copy = (void *)1};
    hccl_algo_ctx ctx = {.rank = 0, .nranks = 4, .net = &net, .scratch_bytes = HCCL_ALGO_SCRATCH_BYTES,
                         .direct = 1, .direct_local = 1, .reference = HCCL_ALGO_FORCED(HCCL_ALGO_HD)};
    hccl_op_args a = {.type = HCCL_OP_ALLREDUCE, .count = m, .dtype = f};
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &a), HCCL_ALGO_DIRECT);
    ctx.direct = 0;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &a), HCCL_ALGO_HD);
    a.count = 4;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &a), HCCL_ALGO_HD); /* also below the oneshot limit */
    a.type = HCCL_OP_BROADCAST;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &a), HCCL_ALGO_ONESHOT); /* not one of H-D's: the selection's */
    ctx.reference = HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN);
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &a), HCCL_ALGO_CHAIN); /* a forced broadcast algorithm wins */
    ctx.reference = HCCL_ALGO_FORCED(HCCL_ALGO_HD);
    /* One host, more than 2 ranks: small AllGather(V) and ReduceScatter in one round
     * (n x bytes <= 16 KiB, 32 KiB on a crowded host), larger ones and ReduceScatterV
     * direct; 2 ranks keep the ring's single exchange below 2 KiB. Broadcast eager
     * (oneshot) up to 8 KiB, 96 KiB on a crowded host, at any n. */
    ctx.direct = 1;
    ctx.reference = 0;
    static uint64_t cnt4[4];
    hccl_op_args g = {.type = HCCL_OP_ALLGATHER, .count = k, .dtype = f, .recv_counts = cnt4, .send_counts = cnt4};
    for (int j = 0; j < 4; j++) cnt4[j] = k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT);
    g.type = HCCL_OP_ALLGATHER_V;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT);
    g.type = HCCL_OP_REDUCE_SCATTER;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT);
    g.type = HCCL_OP_REDUCE_SCATTER_V;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_DIRECT);
    g.type = HCCL_OP_BROADCAST;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT);
    expect_bound(&ctx, &g, 8 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    ctx.crowded = 1;
    expect_bound(&ctx, &g, 96 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    ctx.crowded = 0;
    g.count = 4 * k + 1; /* 4 x (4 KiB + 4 B) */
    g.type = HCCL_OP_ALLGATHER;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_DIRECT);
    ctx.crowded = 1; /* up to 32 KiB in all */
    expect_bound(&ctx, &g, 8 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    g.type = HCCL_OP_REDUCE_SCATTER;
    expect_bound(&ctx, &g, 8 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    g.type = HCCL_OP_ALLGATHER;
    ctx.crowded = 0;
    ctx.nranks = 2; /* 2 ranks: the ring's exchange below 2 KiB per rank */
    expect_bound(&ctx, &g, 2 * k - 1, HCCL_ALGO_REFERENCE, HCCL_ALGO_DIRECT);
    g.type = HCCL_OP_REDUCE_SCATTER;
    expect_bound(&ctx, &g, 2 * k - 1, HCCL_ALGO_REFERENCE, HCCL_ALGO_DIRECT);
    g.type = HCCL_OP_ALLGATHER;
    g.count = k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_REFERENCE);
    g.type = HCCL_OP_BROADCAST;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT);
    expect_bound(&ctx, &g, 8 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    ctx.crowded = 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT); /* crowded: up to 96 KiB, at any n */
    ctx.crowded = 0;
    g.count = k;
    /* Reduce eager on one host up to 256 KiB to the root (2 ranks with a CPU each: 32
     * KiB), direct above, crowded or not; AlltoAll in one round up to 8 KiB in all
     * (2 KiB with 2 ranks, 128 KiB with more ranks than CPUs), direct above
     * (with more ranks than CPUs from 16 KiB blocks; below, pairwise); AlltoAllV and VC
     * direct at every size; without direct copies, by the cost model. */
    hccl_op_args rd = {.type = HCCL_OP_REDUCE, .count = 32 * k, .dtype = f, .redop = HCCL_REDUCE_SUM};
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_ONESHOT); /* 2 ranks */
    rd.count = 32 * k + 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_DIRECT); /* above: direct */
    ctx.crowded = 1; /* 2 ranks on one CPU: eager up to 256 KiB, then direct */
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_ONESHOT);
    rd.count = 256 * k + 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_DIRECT);
    ctx.nranks = 4; /* 3 x 85 KiB to the root: eager; 3 x 86 KiB: direct */
    rd.count = 85 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_ONESHOT);
    rd.count = 86 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_DIRECT);
    ctx.crowded = 0;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_DIRECT);
    ctx.nranks = 2;
    /* AllReduce, 2 ranks with a CPU each: oneshot up to 1 KiB, direct above; crowded or
     * without direct copies, oneshot up to 16 KiB. */
    hccl_op_args ar = {.type = HCCL_OP_ALLREDUCE, .dtype = f, .redop = HCCL_REDUCE_SUM};
    expect_bound(&ctx, &ar, k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    ctx.crowded = 1;
    expect_bound(&ctx, &ar, 16 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT);
    ctx.crowded = 0;
    ctx.direct = 0;
    ar.count = 16 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &ar), HCCL_ALGO_ONESHOT);
    ctx.direct = 1;
    hccl_op_args aa = {.type = HCCL_OP_ALLTOALL, .dtype = f};
    expect_bound(&ctx, &aa, k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT); /* 2 x 1 KiB */
    /* Without peer copies there is no direct AlltoAll to go to: one round up to 8 KiB
     * in all, as with more ranks, then the cost model's pick. */
    net.peer_copy = NULL;
    expect_bound(&ctx, &aa, 4 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_REFERENCE); /* pairwise: one exchange */
    net.peer_copy = (void *)1;
    ctx.nranks = 4;
    rd.count = 84 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_ONESHOT);
    rd.count = 88 * k;
    TT_ASSERT(hccl_algo_select(&ctx, &rd) != HCCL_ALGO_ONESHOT);
    aa.count = 2 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_ONESHOT);
    aa.count = 4 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_DIRECT);
    ctx.crowded = 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_ONESHOT); /* 4 ranks on fewer CPUs */
    expect_bound(&ctx, &aa, 32 * k, HCCL_ALGO_ONESHOT, HCCL_ALGO_DIRECT); /* 4 x 32 KiB */
    ctx.nranks = 9;
    aa.count = 14 * k; /* 9 crowded ranks, 126 KiB in all: one round too */
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_ONESHOT);
    aa.count = 15 * k; /* 135 KiB */
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_REFERENCE);
    aa.count = 16 * k - 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_REFERENCE);
    aa.count = 16 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_DIRECT);
    ctx.crowded = 0;
    ctx.nranks = 5;
    aa.count = k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_ONESHOT);
    aa.count = 2 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &aa), HCCL_ALGO_DIRECT);
    hccl_op_args av = {.type = HCCL_OP_ALLTOALLV, .dtype = f};
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &av), HCCL_ALGO_DIRECT);
    av.type = HCCL_OP_ALLTOALLVC;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &av), HCCL_ALGO_DIRECT);
    ctx.direct = 0;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &av), HCCL_ALGO_REFERENCE);
    TT_ASSERT(hccl_algo_select(&ctx, &aa) != HCCL_ALGO_DIRECT);
    ctx.direct = 1;
    ctx.nranks = 4;
    hccl_op_args sg = {.type = HCCL_OP_SCATTER, .count = 84 * k, .dtype = f};
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &sg), HCCL_ALGO_ONESHOT);
    sg.type = HCCL_OP_GATHER;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &sg), HCCL_ALGO_ONESHOT);
    sg.count = 88 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &sg), HCCL_ALGO_REFERENCE);
    /* Without direct copies (over TCP): the rooted ones eager up to 8 KiB a block, the
     * AlltoAll not. */
    sg.count = 1;
    ctx.direct = 0;
    rd.count = 1;
    aa.count = 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &rd), HCCL_ALGO_ONESHOT);
    TT_ASSERT(hccl_algo_select(&ctx, &aa) != HCCL_ALGO_ONESHOT);
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &sg), HCCL_ALGO_ONESHOT);
    rd.count = sg.count = 8 * k + 1; /* 8 KiB + 4 B */
    TT_ASSERT(hccl_algo_select(&ctx, &rd) != HCCL_ALGO_ONESHOT);
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &sg), HCCL_ALGO_REFERENCE);
    rd.count = sg.count = 1;
    ctx.direct = 1;
    ctx.nranks = 2;
    /* More ranks than CPUs on a host: small AllReduce by recursive doubling from 3
     * ranks, direct or not; larger ones and the other operations as before. */
    hccl_op_args s = {.type = HCCL_OP_ALLREDUCE, .count = 16 * k, .dtype = f}; /* 16 KiB */
    ctx.crowded = 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &s), HCCL_ALGO_ONESHOT); /* 2 ranks: one exchange either way */
    ctx.nranks = 3;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &s), HCCL_ALGO_RD);
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &g), HCCL_ALGO_ONESHOT);
    ctx.direct = 0;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &s), HCCL_ALGO_RD);
    ctx.direct = 1;
    s.count = 16 * k + 1;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &s), HCCL_ALGO_DIRECT);
    ctx.crowded = 0;
    s.count = 16 * k;
    TT_ASSERT_EQ(hccl_algo_select(&ctx, &s), HCCL_ALGO_ONESHOT);
    /* HCCL_DETERMINISTIC: the oneshot crowded or not, as recursive doubling combines
     * in another order, so that the result does not depend on the CPUs the ranks may
     * use. */
    ctx.deterministic = 1;
    for (int crowded = 0; crowded < 2; crowded++)
        for (uint32_t nr = 3; nr <= 8; nr++) {
            ctx.crowded = crowded;
            ctx.nranks = nr;
            ctx.direct = nr & 1;
            TT_ASSERT_EQ(hccl_algo_select(&ctx, &s), HCCL_ALGO_ONESHOT);
        }
    ctx.deterministic = 0;
    ctx.crowded = 0;
    ctx.nranks = 3;
    ctx.direct = 1;
    /* With the host's shared slots: AllReduce up to 512 B, AllGather, ReduceScatter and
     * AlltoAll up to 512 B in all, 1 KiB on a crowded host; not forced away by HCCL_ALGO (one
     * host). */
    static hccl_net snet = {.peer_copy = (void *)1, .slot_gather = (void *)1};
    ctx.net = &snet;
    ctx.nranks = 4;
    hccl_op_args sl[4] = {{.type = HCCL_OP_ALLREDUCE, .dtype = f, .redop = HCCL_REDUCE_SUM},
                          {.type = HCCL_OP_ALLGATHER, .dtype = f},
                          {.type = HCCL_OP_REDUCE_SCATTER, .dtype = f, .redop = HCCL_REDUCE_SUM},
                          {.type = HCCL_OP_ALLTOALL, .dtype = f}};
    const uint64_t lim[2][4] = {{128, 32, 32, 32}, {256, 64, 64, 64}}; /* elements: [crowded][op] */
    for (int cr = 0; cr < 2; cr++)
        for (int o = 0; o < 4; o++) {
            ctx.crowded = cr;
            sl[o].count = lim[cr][o];
            TT_ASSERT_MSG(hccl_algo_select(&ctx, &sl[o]) == HCCL_ALGO_SLOT, "op %d crowded %d", o, cr);
            ctx.reference = HCCL_ALGO_FORCED(HCCL_ALGO_HD);
            TT_ASSERT_MSG(hccl_algo_select(&ctx, &sl[o]) == HCCL_ALGO_SLOT, "op %d crowded %d forced", o, cr);
            ctx.reference = 0;
            sl[o].count = lim[cr][o] + 1;
            TT_ASSERT_MSG(hccl_algo_select(&ctx, &sl[o]) != HCCL_ALGO_SLOT, "op %d crowded %d above", o, cr);
        }
    ctx.direct = 0; /* one host without direct copies: still the slots, even when forced */
    ctx.reference = HCCL_ALGO_FORCED(HCCL_ALGO_HD);
    for (int o = 0; o < 4; o++) {
        sl[o].count = 1;
        TT_ASSERT_MSG(hccl_algo_select(&ctx, &sl[o]) == HCCL_ALGO_SLOT, "op %d, no direct copies, forced", o);
    }
    ctx.reference = 0;
    ctx.direct = 1;
    ctx.crowded = 0;
    ctx.net = &net;
    sl[0].count = 1;
    TT_ASSERT(hccl_algo_select(&ctx, &sl[0]) != HCCL_ALGO_SLOT); /* no slots */
    /* Costs are finite where implemented, and the chain segment a power of two. */
    TT_ASSERT(hccl_algo_cost(HCCL_ALGO_CHAIN, HCCL_OP_ALLREDUCE, 4, 64, HCCL_LINK_TCP) > 1e300);
    uint64_t seg = hccl_algo_chain_segment(4, 64 * m, 4, 0, HCCL_LINK_TCP);
    TT_ASSERT_MSG(seg >= 4096 && seg <= 262144 && (seg & (seg - 1)) == 0, "segment %llu", (unsigned long long)seg);
}

int hccl_algo_env_reference(hccl_op_type type); /* src/core/algo_env.c */

/* HCCL_ALGO, parsed once per process: every form this test needs in one string. */
static void test_algo_env(void)
{
    setenv("HCCL_ALGO",
           "allreduce=level0:NA;level1:H-D_R/allgather=level0:NA;level1:NB/broadcast=level1:pipeline/"
           "reduce=level0:ring;level1:pipeline/alltoall=level1:NB/reducescatter=level1:NHR",
           1);
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_ALLREDUCE), HCCL_ALGO_FORCED(HCCL_ALGO_HD));
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_ALLGATHER), HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK));
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_ALLGATHER_V), HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK));
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_BROADCAST), HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN));
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_REDUCE), 1); /* ring at any level wins */
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_ALLTOALL), HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK));
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_ALLTOALLV), 0); /* Bruck is AlltoAll only */
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_REDUCE_SCATTER), 0); /* NHR: not here */
    TT_ASSERT_EQ(hccl_algo_env_reference(HCCL_OP_SCATTER), 0);
    unsetenv("HCCL_ALGO");
}

/* HCCL_ALGO forms beyond the ones above, each in a child (the variable is read once per
 * process) with the log in a file: the child writes every operation's force value
 * after its log, the parent checks both. want[] lists (op, value) pairs ended by -1;
 * the others must be 0. warn: a text a WARN line must hold, or NULL for no WARN. */
typedef struct algo_env_case {
    const char *value;
    int want[8];
    const char *warn;
} algo_env_case;

static void algo_env_child(const algo_env_case *k, const char *log)
{
    setenv("HCCL_ALGO", k->value, 1);
    setenv("HCCL_DEBUG", "WARN", 1);
    setenv("HCCL_DEBUG_FILE", log, 1);
    unsetenv("HCCL_REFERENCE_ALGOS");
    char out[512];
    snprintf(out, sizeof out, "%s.ops", log);
    FILE *f = fopen(out, "w");
    if (!f) _exit(2);
    for (int op = 0; op < HCCL_OP_COUNT; op++) fprintf(f, "%d\n", hccl_algo_env_reference((hccl_op_type)op));
    fclose(f);
    exit(0);
}

static void test_algo_env_forms(void)
{
    static char long_value[4000];
    size_t n = 0;
    while (n < 2000) n += (size_t)snprintf(long_value + n, sizeof long_value - n, "allreduce=level0:NA;level1:NA/");
    snprintf(long_value + n, sizeof long_value - n, "allgather=level0:NA;level1:NB");
    const algo_env_case cases[] = {
        /* Upstream's per-operation names include scatter. */
        {"scatter=level0:NA;level1:ring", {HCCL_OP_SCATTER, 1, -1}, NULL},
        /* Case, trailing separators, and upstream values we lack (quietly the selection). */
        {"ALLREDUCE=LEVEL0:NA;LEVEL1:h-d_r;/", {HCCL_OP_ALLREDUCE, HCCL_ALGO_FORCED(HCCL_ALGO_HD), -1}, NULL},
        {"level0:NA;level1:NHR", {-1}, NULL},
        /* A typo: a WARN naming it, and the selection (not some other algorithm). */
        {"level0:NA;level1:H-D_X", {-1}, "unknown algorithm \"H-D_X\""},
        {"allreduce=level0:NA;level1: ring", {-1}, "unknown algorithm \" ring\""},
        /* A global part mixed into the per-operation form: a WARN, the rest applied. */
        {"level0:NA;level1:H-D_R/allgather=level1:NB",
         {HCCL_OP_ALLGATHER, HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK), HCCL_OP_ALLGATHER_V, HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK), -1},
         "\"level0:NA;level1:H-D_R\" names no operation"},
        /* Longer than any fixed buffer: the operation at the end still counts. */
        {long_value,
         {HCCL_OP_ALLGATHER, HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK), HCCL_OP_ALLGATHER_V, HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK), -1},
         NULL},
    };
    char dir[] = "/tmp/test_algo_env_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const algo_env_case *k = &cases[i];
        char log[256], ops[300];
        snprintf(log, sizeof log, "%s/case%zu.log", dir, i);
        snprintf(ops, sizeof ops, "%s.ops", log);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) algo_env_child(k, log);
        int st = 0;
        waitpid(pid, &st, 0);
        TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case %zu: child status %#x", i, st);
        int got[HCCL_OP_COUNT] = {0}, want[HCCL_OP_COUNT] = {0};
        FILE *f = fopen(ops, "r");
        TT_ASSERT_MSG(f != NULL, "case %zu: no %s", i, ops);
        for (int op = 0; f && op < HCCL_OP_COUNT; op++)
            if (fscanf(f, "%d", &got[op]) != 1) got[op] = -99;
        if (f) fclose(f);
        for (int j = 0; k->want[j] >= 0; j += 2) want[k->want[j]] = k->want[j + 1];
        for (int op = 0; op < HCCL_OP_COUNT; op++)
            TT_ASSERT_MSG(got[op] == want[op], "case %zu (%.60s): op %d forced %#x, expected %#x", i, k->value, op,
                          got[op], want[op]);
        char text[8192] = "";
        f = fopen(log, "r");
        if (f) {
            size_t m = fread(text, 1, sizeof text - 1, f);
            text[m] = 0;
            fclose(f);
        }
        if (k->warn)
            TT_ASSERT_MSG(strstr(text, "WARN") && strstr(text, k->warn), "case %zu: no WARN with '%s' in: %s", i,
                          k->warn, text);
        else
            TT_ASSERT_MSG(!strstr(text, "WARN"), "case %zu (%.60s): unexpected WARN: %s", i, k->value, text);
        unlink(log);
        unlink(ops);
    }
    rmdir(dir);
}

/* ---------- barrier, p2p, batch, failure modes ---------- */

static atomic_int barrier_arrived, barrier_bad;

static HcclResult barrier_fn(hccl_algo_ctx *ctx, void *arg)
{
    (void)arg;
    hccl_op_args a = {.type = HCCL_OP_BARRIER};
    for (int round = 0; round < 3; round++) {
        usleep(200 * ((ctx->rank * 7 + round) % 5));
        atomic_fetch_add(&barrier_arrived, 1);
        HcclResult res = hccl_algo_run(ctx, &a);
        if (res != HCCL_SUCCESS) return res;
        if (atomic_load(&barrier_arrived) < (int)ctx->nranks * (round + 1)) atomic_fetch_add(&barrier_bad, 1);
        /* Second barrier so nobody arrives for the next round before all checked. */
        res = hccl_algo_run(ctx, &a);
        if (res != HCCL_SUCCESS) return res;
    }
    return HCCL_SUCCESS;
}

static void test_barrier(void)
{
    for (uint32_t n = 1; n <= 8; n++) {
        atomic_store(&barrier_arrived, 0);
        atomic_store(&barrier_bad, 0);
        fake_net_stats st;
        HcclResult res = fake_net_run(n, barrier_fn, NULL, &st);
        TT_ASSERT_MSG(res == HCCL_SUCCESS && atomic_load(&barrier_bad) == 0, "barrier n=%u res %d", n, (int)res);
        TT_ASSERT(st.bytes == 0);
    }
}

typedef struct p2p_case {
    uint64_t count;
    uint64_t recv_count; /* differs from count to provoke a mismatch */
    uint8_t *buf[MAXR][2];
} p2p_case;

/* Pairs (0,1), (2,3), ...: even ranks send then receive, odd ranks the reverse. */
static HcclResult p2p_fn(hccl_algo_ctx *ctx, void *arg)
{
    p2p_case *p = arg;
    uint32_t r = ctx->rank, peer = r ^ 1;
    if (peer >= ctx->nranks) return HCCL_SUCCESS;
    hccl_op_args s = {.type = HCCL_OP_SEND, .sendbuf = p->buf[r][0], .count = p->count,
                      .dtype = HCCL_DATA_TYPE_INT32, .root = peer};
    hccl_op_args v = {.type = HCCL_OP_RECV, .recvbuf = p->buf[r][1], .count = p->recv_count,
                      .dtype = HCCL_DATA_TYPE_INT32, .root = peer};
    HcclResult res;
    if (r % 2 == 0) {
        if ((res = hccl_algo_run(ctx, &s)) != HCCL_SUCCESS) return res;
        return hccl_algo_run(ctx, &v);
    }
    if ((res = hccl_algo_run(ctx, &v)) != HCCL_SUCCESS) return res;
    return hccl_algo_run(ctx, &s);
}

static void test_p2p(void)
{
    static const uint64_t counts[] = {0, 1, 1001, 300000};
    for (uint32_t n = 1; n <= 5; n++)
        for (size_t ci = 0; ci < 4; ci++) {
            p2p_case p = {.count = counts[ci], .recv_count = counts[ci]};
            size_t bytes = counts[ci] * 4;
            for (uint32_t r = 0; r < n; r++) {
                p.buf[r][0] = malloc(bytes + 1);
                p.buf[r][1] = malloc(bytes + 1);
                for (size_t b = 0; b < bytes; b++) p.buf[r][0][b] = pbyte(r, b);
                memset(p.buf[r][1], SENTINEL, bytes + 1);
            }
            fake_net_stats st;
            HcclResult res = fake_net_run(n, p2p_fn, &p, &st);
            int ok = res == HCCL_SUCCESS && (counts[ci] || st.exchanges == 0);
            for (uint32_t r = 0; r < n && ok; r++) {
                uint32_t peer = r ^ 1;
                for (size_t b = 0; b <= bytes && ok; b++) {
                    uint8_t want = b == bytes || peer >= n ? SENTINEL : pbyte(peer, b);
                    if (p.buf[r][1][b] != want) ok = 0;
                }
            }
            TT_ASSERT_MSG(ok, "send/recv n=%u count=%llu res %d", n, (unsigned long long)counts[ci], (int)res);
            for (uint32_t r = 0; r < n; r++) {
                free(p.buf[r][0]);
                free(p.buf[r][1]);
            }
        }
    /* A receive that expects fewer bytes than sent fails both sides, no hang. */
    p2p_case p = {.count = 10, .recv_count = 9};
    for (uint32_t r = 0; r < 2; r++) {
        p.buf[r][0] = calloc(1, 64);
        p.buf[r][1] = calloc(1, 64);
    }
    TT_ASSERT(fake_net_run(2, p2p_fn, &p, NULL) == HCCL_E_PARA);
    for (uint32_t r = 0; r < 2; r++) {
        free(p.buf[r][0]);
        free(p.buf[r][1]);
    }
}

static HcclResult deadlock_fn(hccl_algo_ctx *ctx, void *arg)
{
    (void)arg;
    int32_t x = 0;
    hccl_op_args v = {.type = HCCL_OP_RECV, .recvbuf = &x, .count = 1, .dtype = HCCL_DATA_TYPE_INT32,
                      .root = ctx->rank ^ 1};
    return hccl_algo_run(ctx, &v);
}

static void test_fake_net_failures(void)
{
    fake_net_stats st;
    HcclResult res = fake_net_run(2, deadlock_fn, NULL, &st);
    TT_ASSERT(res == HCCL_E_TIMEOUT && st.deadlock == 1);
}

/* Batch: each rank sends two items to every peer and one to itself, receives the
 * matching items, with dtypes varying per pair and items in a rank-dependent order. */
#define BATCH_MAX (4 * MATRIX_N + 2)
typedef struct batch_case {
    uint64_t c;
    HcclSendRecvItem items[MATRIX_N][BATCH_MAX];
    uint32_t nitems[MATRIX_N];
} batch_case;

static const HcclDataType batch_dt[] = {HCCL_DATA_TYPE_INT8, HCCL_DATA_TYPE_FP16, HCCL_DATA_TYPE_INT32,
                                        HCCL_DATA_TYPE_INT128};

static uint64_t batch_count(uint32_t from, uint32_t to, int which, uint64_t c)
{
    return which ? c / 2 : c + (from + 2 * to) % 3 * (c > 0);
}

static uint32_t batch_tag(uint32_t from, uint32_t to, int which) { return from * 64 + to * 2 + (uint32_t)which; }

static HcclResult batch_fn(hccl_algo_ctx *ctx, void *arg)
{
    batch_case *b = arg;
    hccl_op_args a = {.type = HCCL_OP_BATCH_SEND_RECV, .items = b->items[ctx->rank], .nitems = b->nitems[ctx->rank]};
    return hccl_algo_run(ctx, &a);
}

static void test_batch(void)
{
    static const uint64_t counts[] = {0, 1, 1001};
    for (uint32_t n = 1; n <= 8; n++)
        for (size_t ci = 0; ci < 3; ci++) {
            static batch_case b;
            memset(&b, 0, sizeof(b));
            uint64_t c = counts[ci];
            for (uint32_t r = 0; r < n; r++) {
                uint32_t m = 0;
                for (int pass = 0; pass < 2; pass++) {
                    /* even ranks: sends first; odd ranks: receives first */
                    int sending = (pass == 0) == (r % 2 == 0);
                    for (uint32_t k = 0; k < n; k++) {
                        uint32_t j = sending ? (r + k) % n : (r + n - k) % n;
                        for (int which = 0; which < (j == r ? 1 : 2); which++) {
                            uint32_t from = sending ? r : j, to = sending ? j : r;
                            HcclDataType dt = batch_dt[(from + to) % 4];
                            uint64_t cnt = batch_count(from, to, which, c);
                            size_t bytes = cnt * hccl_dtype_size(dt);
                            uint8_t *buf = malloc(bytes + 1);
                            if (sending)
                                for (size_t x = 0; x < bytes; x++) buf[x] = pbyte(batch_tag(from, to, which), x);
                            else memset(buf, SENTINEL, bytes + 1);
                            b.items[r][m++] = (HcclSendRecvItem){sending ? HCCL_SEND : HCCL_RECV, buf, cnt, dt, j};
                        }
                    }
                }
                b.nitems[r] = m;
            }
            fake_net_stats st;
            HcclResult res = fake_net_run(n, batch_fn, &b, &st);
            int ok = res == HCCL_SUCCESS && (c || st.exchanges == 0);
            for (uint32_t r = 0; r < n; r++) {
                int which_seen[MAXR] = {0};
                for (uint32_t i = 0; i < b.nitems[r]; i++) {
                    HcclSendRecvItem *it = &b.items[r][i];
                    if (it->sendRecvType == HCCL_RECV && ok) {
                        int which = which_seen[it->remoteRank]++;
                        size_t bytes = it->count * hccl_dtype_size(it->dataType);
                        const uint8_t *p = it->buf;
                        for (size_t x = 0; x <= bytes && ok; x++)
                            if (p[x] != (x == bytes ? SENTINEL : pbyte(batch_tag(it->remoteRank, r, which), x))) ok = 0;
                    }
                    free(it->buf);
                }
            }
            TT_ASSERT_MSG(ok, "batch n=%u count=%llu res %d", n, (unsigned long long)c, (int)res);
        }
}

static void test_bad_args(void)
{
    /* HIF8 has no reduction kernel; a root outside the communicator is refused. */
    static uint8_t buf[64];
    hccl_op_args a = {.type = HCCL_OP_ALLREDUCE, .sendbuf = buf, .recvbuf = buf, .count = 4,
                      .dtype = HCCL_DATA_TYPE_HIF8, .redop = HCCL_REDUCE_SUM};
    hccl_net dummy = {NULL};
    hccl_algo_ctx ctx = {.rank = 0, .nranks = 1, .net = &dummy};
    TT_ASSERT(hccl_algo_run(&ctx, &a) == HCCL_E_PARA); /* no exchange function */
    TT_ASSERT(hccl_algo_run(NULL, &a) == HCCL_E_PARA);
}

static HcclResult bad_args_fn(hccl_algo_ctx *ctx, void *arg)
{
    (void)arg;
    static uint8_t buf[64];
    hccl_op_args a = {.type = HCCL_OP_ALLREDUCE, .sendbuf = buf, .recvbuf = buf, .count = 4,
                      .dtype = HCCL_DATA_TYPE_HIF8, .redop = HCCL_REDUCE_SUM};
    if (hccl_algo_run(ctx, &a) != HCCL_E_PARA) return HCCL_E_INTERNAL;
    hccl_op_args b = {.type = HCCL_OP_BROADCAST, .recvbuf = buf, .count = 4, .dtype = HCCL_DATA_TYPE_INT8,
                      .root = ctx->nranks};
    if (hccl_algo_run(ctx, &b) != HCCL_E_PARA) return HCCL_E_INTERNAL;
    hccl_op_args c = {.type = HCCL_OP_COUNT};
    if (hccl_algo_run(ctx, &c) != HCCL_E_PARA) return HCCL_E_INTERNAL;
    return HCCL_SUCCESS;
}

int main(void)
{
    test_algo_env_forms(); /* first: its children must not inherit a parsed HCCL_ALGO or log */
    fake_net_set_timeout(10.0);
    test_bad_args();
    TT_ASSERT(fake_net_run(3, bad_args_fn, NULL, NULL) == HCCL_SUCCESS);
    test_fake_net_failures();
    test_algo_env();
    test_selection();
    test_matrix(1, MATRIX_N);
    test_large();
    test_network();
    test_slots();
    test_determinism();
    test_edge_values();
    test_direct();
    test_hier();
    test_barrier();
    test_p2p();
    test_batch();
    printf("test_algo: %ld collective runs\n", runs);
    return tt_report("test_algo");
}
