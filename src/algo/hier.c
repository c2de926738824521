/*
 * hier.c - hierarchical algorithms for communicators spanning several hosts: work
 * inside each host (shared memory, direct copies), and only one rank per host (its
 * leader) crosses the network.
 *
 *   AllReduce:  1. allreduce inside each host        (every rank gets its host's sum)
 *               2. allreduce among the host leaders  (the first rank of each host)
 *               3. broadcast inside each host from its leader
 *   Broadcast:  leader of a host = the root on the root's host, else its first rank
 *               1. broadcast among the leaders from the root
 *               2. broadcast inside each host from its leader
 *   AllGather:  1. allgather-V inside each host, blocks at their global places
 *               2. every leader sends its host's blocks to every other leader and
 *                  receives theirs (one exchange, blocks in rank order per pair)
 *               3. broadcast of the whole result inside each host from its leader
 *   ReduceScatter:
 *               1. allreduce of the whole input inside each host into a temporary
 *               2. allreduce of the temporary among the leaders
 *               3. each leader sends every rank of its host that rank's block
 *
 * Each step runs an ordinary algorithm on a sub-group through a group network that
 * renumbers ranks (group rank i = communicator rank map[i]), so the sub-steps are
 * chosen by the usual selection (direct inside a host, ring across hosts) and tested
 * by the same oracle.
 */
#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/util.h"

#include <string.h>

typedef struct group_net {
    hccl_net base;
    hccl_net *parent;
    const uint32_t *map;
} group_net;

static HcclResult g_exchange(hccl_net *net, hccl_xfer *x, int n)
{
    group_net *g = (group_net *)net;
    uint32_t local[128], *orig = n <= 128 ? local : hccl_malloc(sizeof(uint32_t) * (size_t)n);
    if (!orig) return HCCL_E_MEMORY;
    for (int i = 0; i < n; i++) {
        orig[i] = x[i].peer;
        x[i].peer = g->map[x[i].peer];
    }
    HcclResult res = g->parent->exchange(g->parent, x, n);
    for (int i = 0; i < n; i++) x[i].peer = orig[i]; /* the caller's numbering again */
    if (orig != local) hccl_free(orig);
    return res;
}

static HcclResult g_peer_copy(hccl_net *net, uint32_t peer, int write, void *local, uint64_t remote, size_t bytes)
{
    group_net *g = (group_net *)net;
    return g->parent->peer_copy(g->parent, g->map[peer], write, local, remote, bytes);
}

static void *g_peer_ptr(hccl_net *net, uint32_t peer, uint64_t remote, size_t bytes)
{
    group_net *g = (group_net *)net;
    return g->parent->peer_ptr ? g->parent->peer_ptr(g->parent, g->map[peer], remote, bytes) : NULL;
}

/* A context for the sub-group map[0..n-1] (which must contain ctx->rank). */
static void sub_ctx(const hccl_algo_ctx *ctx, group_net *g, const uint32_t *map, uint32_t n, int direct,
                    hccl_algo_ctx *out)
{
    g->base.exchange = g_exchange;
    g->base.peer_copy = direct && ctx->net->peer_copy ? g_peer_copy : NULL;
    g->base.peer_ptr = direct && ctx->net->peer_copy ? g_peer_ptr : NULL;
    g->base.slot_gather = NULL; /* the slots span the whole communicator, not a group */
    g->parent = ctx->net;
    g->map = map;
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < n; i++)
        if (map[i] == ctx->rank) out->rank = i;
    out->nranks = n;
    out->net = &g->base;
    out->scratch = ctx->scratch;
    out->scratch_bytes = ctx->scratch_bytes;
    out->direct = direct && ctx->net->peer_copy;
    out->direct_local = out->direct;
    out->crowded = ctx->crowded;
    out->deterministic = ctx->deterministic;
    out->reference = ctx->reference;
}

typedef struct groups {
    uint32_t *mem;
    uint32_t *host;    /* ranks of this rank's host, in rank order */
    uint32_t nhost;
    uint32_t *leaders; /* leader of every host, in host order */
} groups;

/* leader_rank_of_root_host: the root on its own host (broadcast), else UINT32_MAX. */
static HcclResult make_groups(const hccl_algo_ctx *ctx, uint32_t root, groups *g)
{
    uint32_t n = ctx->nranks, me = ctx->host_of[ctx->rank];
    g->mem = hccl_malloc(sizeof(uint32_t) * (n + ctx->nhosts));
    if (!g->mem) return HCCL_E_MEMORY;
    g->host = g->mem;
    g->leaders = g->mem + n;
    g->nhost = 0;
    for (uint32_t h = 0; h < ctx->nhosts; h++) g->leaders[h] = UINT32_MAX;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t h = ctx->host_of[r];
        if (g->leaders[h] == UINT32_MAX) g->leaders[h] = r;
        if (h == me) g->host[g->nhost++] = r;
    }
    if (root != UINT32_MAX) g->leaders[ctx->host_of[root]] = root;
    return HCCL_SUCCESS;
}

static uint32_t index_of(const uint32_t *map, uint32_t n, uint32_t r)
{
    for (uint32_t i = 0; i < n; i++)
        if (map[i] == r) return i;
    return 0;
}

HcclResult hccl_algo_hier_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    groups g;
    HcclResult res = make_groups(ctx, UINT32_MAX, &g);
    if (res != HCCL_SUCCESS) return res;
    group_net gn;
    hccl_algo_ctx hc;
    sub_ctx(ctx, &gn, g.host, g.nhost, ctx->direct_local, &hc);
    hccl_op_args s = *a;
    res = hccl_algo_run(&hc, &s); /* 1: inside the host */
    uint32_t leader = g.leaders[ctx->host_of[ctx->rank]];
    if (res == HCCL_SUCCESS && leader == ctx->rank) { /* 2: across hosts */
        group_net ln;
        hccl_algo_ctx lc;
        sub_ctx(ctx, &ln, g.leaders, ctx->nhosts, 0, &lc);
        s.sendbuf = a->recvbuf;
        res = hccl_algo_run(&lc, &s);
    }
    if (res == HCCL_SUCCESS) { /* 3: back inside the host */
        hccl_op_args b = {.type = HCCL_OP_BROADCAST, .sendbuf = a->recvbuf, .recvbuf = a->recvbuf,
                          .count = a->count, .dtype = a->dtype, .root = index_of(g.host, g.nhost, leader)};
        res = hccl_algo_run(&hc, &b);
    }
    hccl_free(g.mem);
    return res;
}

HcclResult hccl_algo_hier_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    groups g;
    HcclResult res = make_groups(ctx, a->root, &g);
    if (res != HCCL_SUCCESS) return res;
    uint32_t leader = g.leaders[ctx->host_of[ctx->rank]];
    hccl_op_args b = *a;
    if (leader == ctx->rank) { /* 1: among the leaders, from the root */
        group_net ln;
        hccl_algo_ctx lc;
        sub_ctx(ctx, &ln, g.leaders, ctx->nhosts, 0, &lc);
        b.root = ctx->host_of[a->root];
        res = hccl_algo_run(&lc, &b);
    }
    if (res == HCCL_SUCCESS) { /* 2: inside each host */
        group_net gn;
        hccl_algo_ctx hc;
        sub_ctx(ctx, &gn, g.host, g.nhost, ctx->direct_local, &hc);
        b.root = index_of(g.host, g.nhost, leader);
        res = hccl_algo_run(&hc, &b);
    }
    hccl_free(g.mem);
    return res;
}

HcclResult hccl_algo_hier_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    groups g;
    HcclResult res = make_groups(ctx, UINT32_MAX, &g);
    if (res != HCCL_SUCCESS) return res;
    size_t es = hccl_dtype_size(a->dtype), blk = (size_t)a->count * es;
    uint32_t n = ctx->nranks, me = ctx->host_of[ctx->rank], leader = g.leaders[me];
    uint64_t *cd = hccl_malloc(sizeof(uint64_t) * 2 * g.nhost);
    /* Step 2: this host's blocks go to every other leader, and the other hosts' come in. */
    hccl_xfer *x = hccl_malloc(sizeof(hccl_xfer) * ((size_t)(ctx->nhosts - 1) * g.nhost + n));
    if (!cd || !x) res = HCCL_E_MEMORY;
    group_net gn;
    hccl_algo_ctx hc;
    sub_ctx(ctx, &gn, g.host, g.nhost, ctx->direct_local, &hc);
    if (res == HCCL_SUCCESS) { /* 1 */
        for (uint32_t i = 0; i < g.nhost; i++) {
            cd[i] = a->count;
            cd[g.nhost + i] = (uint64_t)g.host[i] * a->count;
        }
        hccl_op_args v = *a;
        v.type = HCCL_OP_ALLGATHER_V;
        v.recv_counts = cd;
        v.recv_displs = cd + g.nhost;
        res = hccl_algo_run(&hc, &v);
    }
    if (res == HCCL_SUCCESS && leader == ctx->rank && blk) { /* 2 */
        int k = 0;
        for (uint32_t h = 0; h < ctx->nhosts; h++) {
            if (h == me) continue;
            for (uint32_t r = 0; r < n; r++) {
                if (ctx->host_of[r] == me)
                    x[k++] = (hccl_xfer){HCCL_XFER_SEND, g.leaders[h], (char *)a->recvbuf + (size_t)r * blk, blk};
                else if (ctx->host_of[r] == h)
                    x[k++] = (hccl_xfer){HCCL_XFER_RECV, g.leaders[h], (char *)a->recvbuf + (size_t)r * blk, blk};
            }
        }
        res = ctx->net->exchange(ctx->net, x, k);
    }
    if (res == HCCL_SUCCESS) { /* 3 */
        hccl_op_args b = {.type = HCCL_OP_BROADCAST, .sendbuf = a->recvbuf, .recvbuf = a->recvbuf,
                          .count = a->count * n, .dtype = a->dtype, .root = index_of(g.host, g.nhost, leader)};
        res = hccl_algo_run(&hc, &b);
    }
    hccl_free(cd);
    hccl_free(x);
    hccl_free(g.mem);
    return res;
}

HcclResult hccl_algo_hier_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    groups g;
    HcclResult res = make_groups(ctx, UINT32_MAX, &g);
    if (res != HCCL_SUCCESS) return res;
    size_t es = hccl_dtype_size(a->dtype), blk = (size_t)a->count * es;
    uint32_t n = ctx->nranks, me = ctx->host_of[ctx->rank], leader = g.leaders[me];
    size_t tbytes = blk * n;
    char *t = hccl_malloc(tbytes ? tbytes : 1);
    hccl_xfer *x = hccl_malloc(sizeof(hccl_xfer) * (g.nhost + 1));
    if (!t || !x) res = HCCL_E_MEMORY;
    group_net gn;
    hccl_algo_ctx hc;
    sub_ctx(ctx, &gn, g.host, g.nhost, ctx->direct_local, &hc);
    hccl_op_args s = *a;
    s.type = HCCL_OP_ALLREDUCE;
    s.count = a->count * n;
    s.sendbuf = a->sendbuf;
    s.recvbuf = t;
    if (res == HCCL_SUCCESS) res = hccl_algo_run(&hc, &s); /* 1 */
    if (res == HCCL_SUCCESS && leader == ctx->rank) {       /* 2 */
        group_net ln;
        hccl_algo_ctx lc;
        sub_ctx(ctx, &ln, g.leaders, ctx->nhosts, 0, &lc);
        s.sendbuf = t;
        res = hccl_algo_run(&lc, &s);
    }
    if (res == HCCL_SUCCESS && blk) { /* 3 */
        int k = 0;
        if (leader == ctx->rank) {
            for (uint32_t i = 0; i < g.nhost; i++)
                if (g.host[i] != ctx->rank)
                    x[k++] = (hccl_xfer){HCCL_XFER_SEND, g.host[i], t + (size_t)g.host[i] * blk, blk};
            memcpy(a->recvbuf, t + (size_t)ctx->rank * blk, blk);
        } else {
            x[k++] = (hccl_xfer){HCCL_XFER_RECV, leader, a->recvbuf, blk};
        }
        res = ctx->net->exchange(ctx->net, x, k);
    }
    hccl_free(t);
    hccl_free(x);
    hccl_free(g.mem);
    return res;
}
