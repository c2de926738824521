/*
 * algo.c - algorithm selection (hccl_algo_select) and dispatch.
 *
 * Selection is a pure function of the operation, its size and the context, so every
 * rank makes the same choice:
 *   One host with shared slots (ctx->net->slot_gather): AllReduce up to 512 B,
 *                      AllGather, ReduceScatter and AlltoAll up to 512 B in all; 1
 *                      KiB on a crowded host; Barrier       -> slots (one round
 *                      through shared memory, no messages)
 *   AllReduce, n > 1:  bytes <= 16 KiB and n <= 64             -> oneshot, or
 *                      recursive doubling when ctx->crowded and n > 2 (not with
 *                      ctx->deterministic: its order differs from the oneshot's)
 *                      ctx->direct (all ranks on one host)      -> direct
 *   Broadcast:         ctx->direct and bytes <= 8 KiB (96 KiB when ctx->crowded),
 *                      or no direct copies, bytes <= 8 KiB and no algorithm forced
 *                                                           -> oneshot (eager: the
 *                      root sends and returns)
 *   Reduce:            ctx->direct, or no direct copies, bytes <= 8 KiB and no
 *                      algorithm forced; (n - 1) x bytes <= 256 KiB (32 KiB: 2
 *                      uncrowded ranks with direct copies) and n slots fit the
 *                      scratch                              -> oneshot (eager: the
 *                      others send to the root and return)
 *                      above, ctx->direct                   -> direct
 *   Scatter, Gather:   ctx->direct or bytes <= 8 KiB; (n - 1) x bytes <= 256 KiB
 *                                                           -> oneshot (the linear
 *                      algorithms without the agreement: eager)
 *   AlltoAll:          ctx->direct, n x bytes <= 8 KiB (128 KiB when ctx->crowded, 2
 *                      KiB with 2 uncrowded ranks with direct copies)
 *                                                           -> oneshot (one round)
 *                      above, ctx->direct (when ctx->crowded: blocks from 16 KiB)
 *                                                           -> direct
 *   AlltoAllV, VC:     ctx->direct                          -> direct
 *   AllGather(V), ReduceScatter(V), and Broadcast above the eager limit:
 *                      ctx->direct, n x bytes <= 16 KiB (32 KiB when ctx->crowded)
 *                      and n > 2 -> oneshot (not ReduceScatterV, not Broadcast)
 *                      ctx->direct and (n > 2 or >= 4 KiB)      -> direct
 *   Several hosts, some with several ranks: AllReduce above 16 KiB, Broadcast,
 *                      AllGather, ReduceScatter -> hierarchical (inside hosts, then
 *                      across host leaders)
 *   otherwise (TCP between hosts, HCCL_SHM_DISABLE=1, the leaders' step of the
 *   hierarchical algorithms, and the Reduce / AlltoAll left): the cheapest by the
 *   alpha-beta model of cost.c among the reference and
 *                      AllReduce, ReduceScatter(V)  -> halving-doubling
 *                      AllGather(V)                 -> halving-doubling, Bruck
 *                      Broadcast, Reduce            -> pipelined chain
 *                      AlltoAll                     -> Bruck
 *   ctx->reference == 1 forces the reference algorithms; HCCL_ALGO_FORCED(id) forces
 *   algorithm id where it implements the operation, except on direct (one host) and
 *   hierarchical communicators, and for what goes through the slots, whose choice
 *   stays as above.
 *
 * The reference algorithms:
 *   AllReduce -> ring             ReduceScatter(V) -> ring      AllGather(V) -> ring
 *   Broadcast, Reduce -> binomial tree                          Scatter, Gather -> linear
 *   AlltoAll(V, VC) -> pairwise   Barrier -> dissemination      Send, Recv, Batch -> p2p
 *
 * Checks here are the ones every algorithm relies on (a context, a network, a rank
 * inside the communicator); the API layer has validated the rest.
 */
#include "algo/algo.h"
#include "algo/direct_common.h"
#include "reduce/reduce.h"
#include "util/log.h"

#define ONESHOT_MAX_BYTES (16u << 10)
/* The one-round AllGather and ReduceScatter on a crowded host up to this many bytes in
 * all, direct above (4 and 8 ranks on 2 cores, 300 calls on a stream, 32 KiB in all:
 * AllGather 1.3-1.5x and ReduceScatter 1.2-1.4x faster; at 64 KiB ReduceScatter even
 * to 1.1x faster, at 128 KiB AllGather 1.1-1.4x slower; docs/performance.md). */
#define ONESHOT_GATHER_CROWDED_BYTES (32u << 10)
/* 2 ranks with a CPU each and direct copies: the oneshot AllReduce only up to this
 * size, the direct one above (2 ranks pinned: 8-16 KiB 2.8-4x faster in shared device
 * memory, 1.2-1.6x with `malloc`'d buffers, which the direct one reads through the
 * kernel; 2-4 KiB 1.5-2x faster in shared memory, which every `aclrtMalloc` buffer is,
 * and 5-20% slower with `malloc`'d ones such as torch tensors; 1 KiB even). */
#define ONESHOT_PAIR_MAX_BYTES (1u << 10)
/* 2 ranks: AllGather and ReduceScatter direct from this many bytes per rank, the
 * ring's single exchange below (2 ranks pinned, blocking: 2 KiB 1.6x faster in shared
 * memory, 1.1-1.3x slower with `malloc`'d buffers; 1 KiB 1.2x and 1.7x). */
#define DIRECT_MIN_BYTES (2u << 10)
/* AllReduce, AllGather, ReduceScatter and AlltoAll through the host's shared slots
 * (when the communicator has them) up to these sizes (the others: n blocks in all),
 * against the oneshot (2 ranks) and recursive doubling or the oneshot (4 and 8 ranks
 * on 2 cores), alternated: 2 ranks about equal up to 512 B and 7-12% slower
 * from 1 KiB; 4 and 8 ranks 1.3-1.9x faster up to 1 KiB, and at 2 KiB faster or
 * slower depending on where the ranks run (docs/performance.md). */
#define SLOT_MAX_BYTES 512u
#define SLOT_MAX_BYTES_CROWDED HCCL_NET_SLOT_BYTES
/* The eager Broadcast's root copies its buffer into the ring of every peer, and each
 * receiver copies it out again; the direct broadcast copies it once but waits for
 * every rank. Measured, the eager one is faster up to 8 KiB with a CPU per rank (2
 * ranks, in place: from 16 KiB the direct one is 1.5-5x faster, although eager wins
 * up to 256 KiB when the root wrote its buffer just before the call;
 * docs/performance.md) and up to 96 KiB on a crowded host (4 and 8 ranks on 2 cores,
 * 20 operations on a stream: 1.1-1.5x at 64-96 KiB; at 128 KiB even with 4 ranks and
 * 1.3-1.4x slower with 8, whose root copies 7 x 128 KiB), where that wait costs most
 * (docs/performance.md). */
#define EAGER_BCAST_BYTES (8u << 10)
#define EAGER_BCAST_CROWDED_BYTES (96u << 10)
/* The eager Reduce's and Gather's root takes one block per peer, Scatter's sends one:
 * up to this many bytes in all, against their reference algorithms (tree, linear)
 * with the agreement round first, faster at every size measured (2 and 4 ranks). */
#define EAGER_ROOTED_MAX_BYTES (256u << 10)
/* Above that, Reduce on one host is direct (every rank reduces a slice from all the
 * inputs into the root's buffer: 2 ranks 2-16 MiB 2.1-2.3x faster than the chain when
 * the root still collected the slices itself; 4 and 8
 * ranks on 2 cores, 20 operations on a stream, 64-128 KiB: 1.2-1.5x faster than the
 * chain, 1.0-1.3x than the tree, 1.2-2x from 256 KiB; docs/performance.md). */
/* ... and with 2 ranks (a CPU each) the eager Reduce only up to this size: above, the
 * direct one (2 ranks: with `malloc`'d buffers, which it reads through the kernel, even
 * at 64 KiB and 1.5x faster at 128 KiB; more with shared device memory, 1.5-3.9x at
 * 128-512 KiB). Up to 32 KiB eager: 1.3-2x faster with `malloc`'d buffers, 1.9-2.8x
 * slower with shared device memory, where the direct one reads the peer in place. */
#define EAGER_REDUCE_PAIR_BYTES (32u << 10)
/* Over the network (no direct copies), Broadcast, Reduce, Scatter and Gather are eager
 * up to this many bytes per block: against their tree or linear rounds after an
 * agreement round over TCP, 2.5-3x faster at 2 ranks and 2.3-15x at 4 up to 8 KiB; the
 * Broadcast no faster at 32 KiB (docs/performance.md). */
#define EAGER_NET_BYTES (8u << 10)
/* The direct AlltoAll (one copy per byte, but two rounds in which every rank must run)
 * against the pairwise rounds (two copies, each round waiting for one partner): with
 * ranks that have a core each, faster from above the one-round limit on; with more
 * ranks than cores, from blocks of this many bytes (4 and 8 ranks on 2 cores: 1.2-1.9x
 * faster with 16 KiB blocks, 3-4x with 64 KiB; up to 1.4x slower with 8 KiB). */
#define DIRECT_A2A_CROWDED_BYTES (16u << 10)
/* ... and the one-round AlltoAll (which copies every block twice) up to this many
 * bytes per rank in all where ranks have a core each (2 ranks: 1.6x faster at 16 KiB
 * direct, even at 8 KiB, 1.5x slower at 4 KiB), and on a crowded host up to
 * ONESHOT_A2A_CROWDED_BYTES (4-8 ranks on 2 cores, 1000 blocking calls: 2-64 KiB in
 * all 1.1-1.7x faster than Bruck's or the pairwise rounds and than direct at 64 KiB;
 * at 128 KiB, 300 calls on a stream, 2-2.8x faster in place and 10-15% slower out of
 * place, and in the 20-call sweep after smaller sizes 2.6-3x and 2.2-7x faster:
 * direct's first call there reads pages of the peers' buffers that this process
 * never touched, at 15-40 us a page on a guest with shadow page tables; from 512 KiB
 * direct; docs/performance.md). */
#define ONESHOT_A2A_BYTES (8u << 10)
#define ONESHOT_A2A_CROWDED_BYTES (128u << 10)
/* ... and with 2 ranks (a CPU each) up to this many (2 ranks pinned, blocking, in all:
 * 4-8 KiB direct 1.6-1.8x faster in shared memory, which every `aclrtMalloc` buffer
 * is, 1.2-1.4x slower with `malloc`'d buffers; 2 KiB even and 2x slower). */
#define ONESHOT_A2A_PAIR_BYTES (2u << 10)

int hccl_algo_implements(hccl_algo_id id, hccl_op_type t)
{
    switch (id) {
    case HCCL_ALGO_REFERENCE: return t < HCCL_OP_COUNT;
    case HCCL_ALGO_ONESHOT:
        return t == HCCL_OP_ALLREDUCE || t == HCCL_OP_ALLGATHER || t == HCCL_OP_ALLGATHER_V ||
               t == HCCL_OP_REDUCE_SCATTER || t == HCCL_OP_BROADCAST || t == HCCL_OP_REDUCE || t == HCCL_OP_ALLTOALL ||
               t == HCCL_OP_SCATTER || t == HCCL_OP_GATHER;
    case HCCL_ALGO_DIRECT:
        return t == HCCL_OP_ALLREDUCE || t == HCCL_OP_ALLGATHER || t == HCCL_OP_ALLGATHER_V ||
               t == HCCL_OP_REDUCE_SCATTER || t == HCCL_OP_REDUCE_SCATTER_V || t == HCCL_OP_BROADCAST ||
               t == HCCL_OP_ALLTOALL || t == HCCL_OP_ALLTOALLV || t == HCCL_OP_ALLTOALLVC || t == HCCL_OP_REDUCE;
    case HCCL_ALGO_HIER:
        return t == HCCL_OP_ALLREDUCE || t == HCCL_OP_ALLGATHER || t == HCCL_OP_REDUCE_SCATTER ||
               t == HCCL_OP_BROADCAST;
    case HCCL_ALGO_HD:
        return t == HCCL_OP_ALLREDUCE || t == HCCL_OP_REDUCE_SCATTER || t == HCCL_OP_REDUCE_SCATTER_V ||
               t == HCCL_OP_ALLGATHER || t == HCCL_OP_ALLGATHER_V;
    case HCCL_ALGO_BRUCK: return t == HCCL_OP_ALLGATHER || t == HCCL_OP_ALLGATHER_V || t == HCCL_OP_ALLTOALL;
    case HCCL_ALGO_CHAIN: return t == HCCL_OP_BROADCAST || t == HCCL_OP_REDUCE;
    case HCCL_ALGO_RD: return t == HCCL_OP_ALLREDUCE;
    case HCCL_ALGO_SLOT:
        return t == HCCL_OP_ALLREDUCE || t == HCCL_OP_ALLGATHER || t == HCCL_OP_REDUCE_SCATTER || t == HCCL_OP_ALLTOALL ||
               t == HCCL_OP_BARRIER;
    default: return 0;
    }
}

/* The cheapest network algorithm for the operation by the cost model (cost.c). */
static hccl_algo_id cheapest(const hccl_algo_ctx *ctx, hccl_op_type type, uint64_t bytes)
{
    static const hccl_algo_id candidates[] = {HCCL_ALGO_REFERENCE, HCCL_ALGO_HD, HCCL_ALGO_BRUCK, HCCL_ALGO_CHAIN};
    hccl_link_kind link = hccl_algo_link(ctx);
    hccl_algo_id best = HCCL_ALGO_REFERENCE;
    double best_cost = hccl_algo_cost(best, type, ctx->nranks, bytes, link);
    for (size_t i = 1; i < sizeof candidates / sizeof candidates[0]; i++) {
        double c = hccl_algo_cost(candidates[i], type, ctx->nranks, bytes, link);
        if (c < best_cost) {
            best = candidates[i];
            best_cost = c;
        }
    }
    return best;
}

/* Every rank of the communicator can pull from every other's buffers: the direct
 * algorithms apply. */
static int pulls(const hccl_algo_ctx *ctx)
{
    return ctx->direct && ctx->nranks <= HCCL_DIRECT_MAX_RANKS && ctx->net->peer_copy;
}

/* 2 ranks with a CPU each and direct copies: where ONESHOT_PAIR_MAX_BYTES,
 * EAGER_REDUCE_PAIR_BYTES and ONESHOT_A2A_PAIR_BYTES apply. */
static int pair_pulls(const hccl_algo_ctx *ctx) { return ctx->nranks == 2 && !ctx->crowded && pulls(ctx); }

hccl_algo_id hccl_algo_select(const hccl_algo_ctx *ctx, const hccl_op_args *a)
{
    if (ctx->reference == 1 || ctx->nranks == 1) return HCCL_ALGO_REFERENCE;
    size_t es = hccl_dtype_size(a->dtype);
    uint64_t bytes = a->count * es;
    /* V forms: a->count is this rank's own count; decide on the average block,
     * which every rank computes the same from the shared counts array. */
    const uint64_t *counts = a->type == HCCL_OP_ALLGATHER_V      ? a->recv_counts
                             : a->type == HCCL_OP_REDUCE_SCATTER_V ? a->send_counts
                                                                   : NULL;
    if (counts) {
        uint64_t total = 0;
        for (uint32_t j = 0; j < ctx->nranks; j++) total += counts[j];
        bytes = total / ctx->nranks * es;
    }
    /* Several hosts, some with several ranks: work inside hosts first. */
    int hier = ctx->host_of && ctx->nhosts > 1 && ctx->nhosts < ctx->nranks;
    /* An algorithm forced by HCCL_ALGO, where the choice is the network algorithms'. */
    hccl_algo_id forced = (ctx->reference & 0x100) ? (hccl_algo_id)(ctx->reference & 0xff) : HCCL_ALGO_REFERENCE;
    if ((forced != HCCL_ALGO_HD && forced != HCCL_ALGO_BRUCK && forced != HCCL_ALGO_CHAIN && forced != HCCL_ALGO_RD) ||
        !hccl_algo_implements(forced, a->type) || ctx->direct ||
        (hier && hccl_algo_implements(HCCL_ALGO_HIER, a->type)))
        forced = HCCL_ALGO_REFERENCE;
    switch (a->type) {
    case HCCL_OP_ALLREDUCE:
        if (hier && bytes > ONESHOT_MAX_BYTES) return HCCL_ALGO_HIER;
        if (ctx->net->slot_gather && bytes <= (ctx->crowded ? SLOT_MAX_BYTES_CROWDED : SLOT_MAX_BYTES))
            return HCCL_ALGO_SLOT; /* like the direct algorithms, not replaced by a forced one */
        if (forced) return forced;
        if (ctx->nranks <= 64 &&
            bytes <= (pair_pulls(ctx) ? ONESHOT_PAIR_MAX_BYTES : ONESHOT_MAX_BYTES) &&
            (((bytes + 63) & ~63ull) * ctx->nranks) <= ctx->scratch_bytes)
            /* RD combines in another order than the oneshot (and the slots): with
             * HCCL_DETERMINISTIC the result must not depend on the CPUs the ranks have. */
            return ctx->crowded && ctx->nranks > 2 && !ctx->deterministic ? HCCL_ALGO_RD : HCCL_ALGO_ONESHOT;
        if (pulls(ctx)) return HCCL_ALGO_DIRECT;
        return cheapest(ctx, a->type, bytes);
    case HCCL_OP_ALLGATHER:
    case HCCL_OP_ALLGATHER_V:
    case HCCL_OP_REDUCE_SCATTER:
    case HCCL_OP_REDUCE_SCATTER_V:
    case HCCL_OP_BROADCAST:
        if (hier && (a->type == HCCL_OP_BROADCAST || a->type == HCCL_OP_ALLGATHER || a->type == HCCL_OP_REDUCE_SCATTER))
            return HCCL_ALGO_HIER;
        /* Eager on one host, and over the network too (TCP, no direct copies: instead
         * of the tree's rounds after an agreement round) unless an algorithm is forced
         * (never on one host: see forced above). */
        if (a->type == HCCL_OP_BROADCAST && !forced && ctx->nranks <= 64 &&
            bytes <= (!ctx->direct ? EAGER_NET_BYTES : ctx->crowded ? EAGER_BCAST_CROWDED_BYTES : EAGER_BCAST_BYTES))
            return HCCL_ALGO_ONESHOT;
        if ((a->type == HCCL_OP_ALLGATHER || a->type == HCCL_OP_REDUCE_SCATTER) && ctx->net->slot_gather &&
            bytes * ctx->nranks <= (ctx->crowded ? SLOT_MAX_BYTES_CROWDED : SLOT_MAX_BYTES))
            return HCCL_ALGO_SLOT;
        if (ctx->direct && ctx->nranks <= 64 && a->type != HCCL_OP_REDUCE_SCATTER_V &&
            a->type != HCCL_OP_BROADCAST && ctx->nranks > 2 &&
            bytes * ctx->nranks <= (ctx->crowded ? ONESHOT_GATHER_CROWDED_BYTES : ONESHOT_MAX_BYTES) &&
            ((bytes + 63) & ~63ull) * ctx->nranks <= ctx->scratch_bytes)
            return HCCL_ALGO_ONESHOT;
        if (pulls(ctx) && (ctx->nranks > 2 || bytes >= DIRECT_MIN_BYTES))
            return HCCL_ALGO_DIRECT;
        return forced ? forced : cheapest(ctx, a->type, bytes);
    case HCCL_OP_REDUCE:
        if ((ctx->direct || (!forced && bytes <= EAGER_NET_BYTES)) && ctx->nranks <= 64 &&
            bytes * (ctx->nranks - 1) <=
                (pair_pulls(ctx) ? EAGER_REDUCE_PAIR_BYTES : EAGER_ROOTED_MAX_BYTES) &&
            ((bytes + 63) & ~63ull) * ctx->nranks <= ctx->scratch_bytes)
            return HCCL_ALGO_ONESHOT;
        if (pulls(ctx)) return HCCL_ALGO_DIRECT;
        return forced ? forced : cheapest(ctx, a->type, bytes);
    case HCCL_OP_ALLTOALL:
        if (ctx->net->slot_gather && bytes * ctx->nranks <= (ctx->crowded ? SLOT_MAX_BYTES_CROWDED : SLOT_MAX_BYTES))
            return HCCL_ALGO_SLOT;
        if (ctx->direct && ctx->nranks <= 64 &&
            bytes * ctx->nranks <= (ctx->crowded      ? ONESHOT_A2A_CROWDED_BYTES
                                    : pair_pulls(ctx) ? ONESHOT_A2A_PAIR_BYTES
                                                      : ONESHOT_A2A_BYTES))
            return HCCL_ALGO_ONESHOT;
        if (pulls(ctx) && (!ctx->crowded || bytes >= DIRECT_A2A_CROWDED_BYTES))
            return HCCL_ALGO_DIRECT;
        return forced ? forced : cheapest(ctx, a->type, bytes);
    case HCCL_OP_ALLTOALLV:
    case HCCL_OP_ALLTOALLVC:
        /* Every size (each rank knows only its own counts: the choice cannot depend on them). */
        if (pulls(ctx)) return HCCL_ALGO_DIRECT;
        return HCCL_ALGO_REFERENCE;
    case HCCL_OP_SCATTER:
    case HCCL_OP_GATHER:
        if ((ctx->direct || bytes <= EAGER_NET_BYTES) && bytes * (ctx->nranks - 1) <= EAGER_ROOTED_MAX_BYTES)
            return HCCL_ALGO_ONESHOT;
        return HCCL_ALGO_REFERENCE;
    case HCCL_OP_BARRIER:
        return ctx->net->slot_gather ? HCCL_ALGO_SLOT : HCCL_ALGO_REFERENCE;
    default:
        return HCCL_ALGO_REFERENCE;
    }
}

int hccl_algo_rs_own_block_shared(const hccl_op_args *a, uint32_t nranks, uint32_t r)
{
    if (a->type != HCCL_OP_REDUCE_SCATTER_V || !a->send_counts || !a->send_displs || !a->send_counts[r]) return 0;
    const uint64_t lo = a->send_displs[r], hi = lo + a->send_counts[r];
    for (uint32_t j = 0; j < nranks; j++)
        if (j != r && a->send_counts[j] && a->send_displs[j] < hi && lo < a->send_displs[j] + a->send_counts[j])
            return 1;
    return 0;
}

static int needs_agreement(const hccl_algo_ctx *ctx, hccl_op_type t);

HcclResult hccl_algo_run(hccl_algo_ctx *ctx, const hccl_op_args *args)
{
    if (!ctx || !args) return HCCL_E_PARA;
    return hccl_algo_run_with(ctx, args, hccl_algo_select(ctx, args));
}

HcclResult hccl_algo_run_with(hccl_algo_ctx *ctx, const hccl_op_args *args, hccl_algo_id id)
{
    if (!ctx || !args || !ctx->net || !ctx->net->exchange || ctx->nranks == 0 || ctx->rank >= ctx->nranks)
        return HCCL_E_PARA;
    switch (id) {
    case HCCL_ALGO_ONESHOT:
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_oneshot_allreduce(ctx, args);
        case HCCL_OP_ALLGATHER:
        case HCCL_OP_ALLGATHER_V: return hccl_algo_oneshot_allgather(ctx, args);
        case HCCL_OP_REDUCE_SCATTER: return hccl_algo_oneshot_reduce_scatter(ctx, args);
        case HCCL_OP_BROADCAST: return hccl_algo_oneshot_broadcast(ctx, args);
        case HCCL_OP_REDUCE: return hccl_algo_oneshot_reduce(ctx, args);
        case HCCL_OP_ALLTOALL: return hccl_algo_oneshot_alltoall(ctx, args);
        /* The linear algorithms already are one round: without the agreement first. */
        case HCCL_OP_SCATTER: return hccl_algo_linear_scatter(ctx, args);
        case HCCL_OP_GATHER: return hccl_algo_linear_gather(ctx, args);
        default: return hccl_algo_run_reference(ctx, args);
        }
    case HCCL_ALGO_DIRECT:
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_direct_allreduce(ctx, args);
        case HCCL_OP_ALLGATHER:
        case HCCL_OP_ALLGATHER_V: return hccl_algo_direct_allgather(ctx, args);
        case HCCL_OP_REDUCE_SCATTER:
        case HCCL_OP_REDUCE_SCATTER_V: return hccl_algo_direct_reduce_scatter(ctx, args);
        case HCCL_OP_BROADCAST: return hccl_algo_direct_broadcast(ctx, args);
        case HCCL_OP_REDUCE: return hccl_algo_direct_reduce(ctx, args);
        case HCCL_OP_ALLTOALL:
        case HCCL_OP_ALLTOALLV:
        case HCCL_OP_ALLTOALLVC: return hccl_algo_direct_alltoall(ctx, args);
        default: return hccl_algo_run_reference(ctx, args);
        }
    case HCCL_ALGO_HIER:
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_hier_allreduce(ctx, args);
        case HCCL_OP_ALLGATHER: return hccl_algo_hier_allgather(ctx, args);
        case HCCL_OP_REDUCE_SCATTER: return hccl_algo_hier_reduce_scatter(ctx, args);
        default: return hccl_algo_hier_broadcast(ctx, args);
        }
    case HCCL_ALGO_HD:
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_hd_allreduce(ctx, args);
        case HCCL_OP_REDUCE_SCATTER:
        case HCCL_OP_REDUCE_SCATTER_V: return hccl_algo_hd_reduce_scatter(ctx, args);
        case HCCL_OP_ALLGATHER:
        case HCCL_OP_ALLGATHER_V: return hccl_algo_hd_allgather(ctx, args);
        default: return hccl_algo_run_reference(ctx, args);
        }
    case HCCL_ALGO_BRUCK:
        switch (args->type) {
        case HCCL_OP_ALLGATHER:
        case HCCL_OP_ALLGATHER_V: return hccl_algo_bruck_allgather(ctx, args);
        case HCCL_OP_ALLTOALL: return hccl_algo_bruck_alltoall(ctx, args);
        default: return hccl_algo_run_reference(ctx, args);
        }
    case HCCL_ALGO_RD:
        return args->type == HCCL_OP_ALLREDUCE ? hccl_algo_rd_allreduce(ctx, args) : hccl_algo_run_reference(ctx, args);
    case HCCL_ALGO_SLOT:
        if (!ctx->net->slot_gather) return hccl_algo_run_reference(ctx, args);
        switch (args->type) {
        case HCCL_OP_ALLREDUCE: return hccl_algo_slot_allreduce(ctx, args);
        case HCCL_OP_ALLGATHER: return hccl_algo_slot_allgather(ctx, args);
        case HCCL_OP_REDUCE_SCATTER: return hccl_algo_slot_reduce_scatter(ctx, args);
        case HCCL_OP_ALLTOALL: return hccl_algo_slot_alltoall(ctx, args);
        case HCCL_OP_BARRIER: return hccl_algo_slot_barrier(ctx, args);
        default: return hccl_algo_run_reference(ctx, args);
        }
    case HCCL_ALGO_CHAIN:
        if (args->type != HCCL_OP_BROADCAST && args->type != HCCL_OP_REDUCE) return hccl_algo_run_reference(ctx, args);
        if (args->count > 0 && needs_agreement(ctx, args->type)) CHECK(hccl_direct_close(ctx));
        return args->type == HCCL_OP_BROADCAST ? hccl_algo_chain_broadcast(ctx, args) : hccl_algo_chain_reduce(ctx, args);
    default: return hccl_algo_run_reference(ctx, args);
    }
}

/* Rooted operations: a rank that believes it is the root may receive nothing, so
 * it could never notice that its peers disagree about the root (or the count).
 * An empty round first (hccl_direct_close: a slot round on one host with slots,
 * else an empty all-to-all) lets every pair compare fingerprints. */
static int needs_agreement(const hccl_algo_ctx *ctx, hccl_op_type t)
{
    return ctx->nranks > 1 && ctx->nranks <= HCCL_DIRECT_MAX_RANKS &&
           (t == HCCL_OP_BROADCAST || t == HCCL_OP_REDUCE || t == HCCL_OP_SCATTER || t == HCCL_OP_GATHER);
}

HcclResult hccl_algo_run_reference(hccl_algo_ctx *ctx, const hccl_op_args *args)
{
    if (!ctx || !args || !ctx->net || !ctx->net->exchange || ctx->nranks == 0 || ctx->rank >= ctx->nranks)
        return HCCL_E_PARA;
    if (args->count > 0 && needs_agreement(ctx, args->type)) CHECK(hccl_direct_close(ctx));
    HcclResult res;
    switch (args->type) {
    case HCCL_OP_ALLREDUCE: res = hccl_algo_ring_allreduce(ctx, args); break;
    case HCCL_OP_BROADCAST: res = hccl_algo_tree_broadcast(ctx, args); break;
    case HCCL_OP_REDUCE: res = hccl_algo_tree_reduce(ctx, args); break;
    case HCCL_OP_REDUCE_SCATTER:
    case HCCL_OP_REDUCE_SCATTER_V: res = hccl_algo_ring_reduce_scatter(ctx, args); break;
    case HCCL_OP_ALLGATHER:
    case HCCL_OP_ALLGATHER_V: res = hccl_algo_ring_allgather(ctx, args); break;
    case HCCL_OP_SCATTER: res = hccl_algo_linear_scatter(ctx, args); break;
    case HCCL_OP_GATHER: res = hccl_algo_linear_gather(ctx, args); break;
    case HCCL_OP_ALLTOALL:
    case HCCL_OP_ALLTOALLV:
    case HCCL_OP_ALLTOALLVC: res = hccl_algo_pairwise_alltoall(ctx, args); break;
    case HCCL_OP_BARRIER: res = hccl_algo_dissemination_barrier(ctx, args); break;
    case HCCL_OP_SEND:
    case HCCL_OP_RECV:
    case HCCL_OP_BATCH_SEND_RECV: res = hccl_algo_p2p(ctx, args); break;
    default: HCCL_WARN(COLL, "unknown operation type %d", (int)args->type); return HCCL_E_PARA;
    }
    if (res != HCCL_SUCCESS)
        HCCL_INFO(COLL, "%s failed on rank %u of %u: %d", hccl_op_name(args->type), ctx->rank, ctx->nranks, (int)res);
    return res;
}
