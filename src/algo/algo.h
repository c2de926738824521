/*
 * algo.h - collective schedules, seen from above (core) and below (the network).
 *
 * An algorithm knows its rank, the number of ranks, a scratch buffer, and one
 * primitive: hccl_net.exchange(), which posts a set of sends and receives to peers
 * and returns when all are complete (on one host, optionally also slot_gather and
 * direct access to peers' buffers). It never sees a transport, a socket or a stream.
 * Messages between one pair of ranks in one direction are matched in posting order.
 *
 * The reference algorithms (ring, binomial tree, linear, pairwise) stay in the tree
 * as the oracle for the fast ones.
 */
#ifndef HCCL_ALGO_H
#define HCCL_ALGO_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { HCCL_XFER_SEND = 0, HCCL_XFER_RECV = 1 } hccl_xfer_dir;

typedef struct hccl_xfer {
    hccl_xfer_dir dir;
    uint32_t peer;
    void *buf; /* read for sends, written for receives */
    size_t bytes;
} hccl_xfer;

typedef struct hccl_net hccl_net;
struct hccl_net {
    /* Post n transfers and wait until all have completed (or one failed). The
     * receiver must post exactly the byte count the sender posts. */
    HcclResult (*exchange)(hccl_net *net, hccl_xfer *xfers, int n);
    /* Optional (NULL when unavailable): copy `bytes` between local memory and the
     * address `remote` of a peer on the same host (valid in the peer's process);
     * write = 0 reads from the peer. Only while the peer is inside the same
     * operation, between synchronising exchanges. */
    HcclResult (*peer_copy)(hccl_net *net, uint32_t peer, int write, void *local, uint64_t remote, size_t bytes);
    /* Optional: a pointer through which this rank reaches the peer's bytes
     * [remote, remote + bytes) directly (peers that are threads of this process, or
     * processes whose shared device memory holds them), or NULL. */
    void *(*peer_ptr)(hccl_net *net, uint32_t peer, uint64_t remote, size_t bytes);
    /* Optional (NULL when unavailable, which every rank agrees on): on a communicator
     * of one host, every rank publishes `bytes` (at most HCCL_NET_SLOT_BYTES, the same
     * on every rank) in its slot of one shared segment and waits until every rank's is
     * there: rank j's bytes are then at *first + j * *stride, readable until this
     * rank's next call. One round and no messages: the small-message path. */
    HcclResult (*slot_gather)(hccl_net *net, const void *mine, size_t bytes, const unsigned char **first,
                              size_t *stride);
    /* Optional: record why the operation fails where the algorithm found it (the
     * communicator's report, and what the peers are told); returns code. */
    HcclResult (*fail)(hccl_net *net, HcclResult code, const char *why);
};

/* The most bytes per rank hccl_net.slot_gather takes. */
#define HCCL_NET_SLOT_BYTES 1024u

typedef enum {
    HCCL_OP_ALLREDUCE = 0,
    HCCL_OP_BROADCAST,
    HCCL_OP_REDUCE,
    HCCL_OP_REDUCE_SCATTER,
    HCCL_OP_REDUCE_SCATTER_V,
    HCCL_OP_ALLGATHER,
    HCCL_OP_ALLGATHER_V,
    HCCL_OP_SCATTER,
    HCCL_OP_GATHER,
    HCCL_OP_ALLTOALL,
    HCCL_OP_ALLTOALLV,
    HCCL_OP_ALLTOALLVC,
    HCCL_OP_BARRIER,
    HCCL_OP_SEND,
    HCCL_OP_RECV,
    HCCL_OP_BATCH_SEND_RECV,
    HCCL_OP_COUNT
} hccl_op_type;

/* "AllReduce", "Broadcast", ... */
const char *hccl_op_name(hccl_op_type type);
/* The algorithm hccl_algo_run uses for an operation type: "ring", "tree", ... */
const char *hccl_algo_name(hccl_op_type type);

/*
 * One operation, already validated by the API layer. Field meanings follow the API:
 *   ALLREDUCE, REDUCE, BROADCAST: count elements (BROADCAST uses recvbuf only).
 *   REDUCE_SCATTER: count = recvCount; sendbuf holds nranks * count.
 *   REDUCE_SCATTER_V: send_counts/send_displs (nranks each, elements) locate each
 *     rank's block in sendbuf; count = this rank's recvCount.
 *   ALLGATHER: count = sendCount; recvbuf holds nranks * count.
 *   ALLGATHER_V: count = sendCount; recv_counts/recv_displs locate blocks in recvbuf.
 *   SCATTER: count = recvCount; root's sendbuf holds nranks * count.
 *   GATHER: count = sendCount; root's recvbuf holds nranks * count.
 *   ALLTOALL: count elements to and from every rank.
 *   ALLTOALLV: send_counts/send_displs/recv_counts/recv_displs (nranks each).
 *   ALLTOALLVC: matrix (nranks x nranks, row = sender); blocks are packed in rank
 *     order (displacements are prefix sums of the row / column).
 *   SEND / RECV: count elements to / from `root` (the peer).
 *   BATCH_SEND_RECV: items[nitems].
 * Arrays are owned by the operation (copied from the caller at enqueue time).
 */
typedef struct hccl_op_args {
    hccl_op_type type;
    const void *sendbuf;
    void *recvbuf;
    uint64_t count;
    HcclDataType dtype;
    HcclReduceOp redop;
    uint32_t root;
    uint64_t *send_counts, *send_displs, *recv_counts, *recv_displs;
    uint64_t *matrix;
    HcclSendRecvItem *items;
    uint32_t nitems;
    /* core/exec.c's, while the operation is queued on a stream (no allocation of its own). */
    void *queued_comm;
    uint64_t queued_fr_id;
    int borrowed; /* the API's caller's (on its stack): cleared, never freed */
} hccl_op_args;

/* Bytes of scratch memory the caller provides in hccl_algo_ctx (at least). */
#define HCCL_ALGO_SCRATCH_BYTES (4u << 20)
/* The ring allreduce's block per rank and step (a window is n of them): small enough
 * that a step's send, receive, scratch and destination stay in cache and in the
 * socket buffers. Over loopback TCP, 2 ranks, busbw rose from 1.9-2.1 GB/s (4 MiB
 * blocks) to 2.8-4.4 (256 KiB); 128 KiB and 512 KiB were worse (docs/performance.md). */
#define HCCL_ALGO_RING_BLOCK_BYTES (256u << 10)

typedef struct hccl_algo_ctx {
    uint32_t rank;
    uint32_t nranks;
    hccl_net *net;
    void *scratch; /* HCCL_ALGO_SCRATCH_BYTES, 64-byte aligned, private to this op */
    size_t scratch_bytes;
    int direct;    /* every peer is reachable with net->peer_copy (same on all ranks) */
    int reference; /* 1: the reference algorithms only; HCCL_ALGO_FORCED(id): that
                      algorithm where it implements the operation (see below); 0: the
                      selection chooses (same on all ranks) */
    /* Topology (same on all ranks): host index of every rank (0..nhosts-1, numbered
     * in order of first appearance), or NULL / nhosts <= 1 for one host. */
    const uint32_t *host_of;
    uint32_t nhosts;
    int direct_local; /* peers on this rank's host are reachable with net->peer_copy */
    int crowded;      /* some host has more ranks than CPUs to run them (same on all ranks) */
    int deterministic; /* HCCL_DETERMINISTIC: no choice between algorithms whose reduction
                          orders differ may depend on ctx->crowded (same on all ranks) */
} hccl_algo_ctx;

/* Run one operation; every rank of the communicator calls it with matching
 * arguments (and the same ctx->direct / ctx->reference). hccl_algo_select picks
 * the algorithm from the operation, its size and the context; it is a pure
 * function, so every rank picks the same one. */
typedef enum {
    HCCL_ALGO_REFERENCE = 0, /* the per-op reference below */
    HCCL_ALGO_ONESHOT,       /* one round: everyone sends its part to everyone (allreduce, allgather,
                                reduce-scatter, alltoall), or eager to or from the root
                                (broadcast, reduce, scatter, gather); small sizes */
    HCCL_ALGO_DIRECT,        /* same host: read peers' buffers directly, reduce owned slices */
    HCCL_ALGO_HIER,          /* several hosts: within each host, then across host leaders */
    HCCL_ALGO_HD,            /* recursive halving-doubling (allreduce, reduce-scatter, allgather) */
    HCCL_ALGO_BRUCK,         /* Bruck (allgather, alltoall) */
    HCCL_ALGO_CHAIN,         /* pipelined chain (broadcast, reduce) */
    HCCL_ALGO_RD,            /* recursive doubling (allreduce; small sizes, crowded hosts) */
    HCCL_ALGO_SLOT,          /* one round through the host's shared slots (allreduce, allgather,
                                reduce-scatter; small sizes) */
    HCCL_ALGO_COUNT
} hccl_algo_id;

/* ctx->reference value that forces algorithm id (HCCL_ALGO): used where id implements
 * the operation and the communicator is not one host's direct group (ctx->direct) nor
 * hierarchical; elsewhere the selection chooses as usual. */
#define HCCL_ALGO_FORCED(id) (0x100 | (int)(id))
/* Does algorithm id implement operation type (the reference implements them all)? */
int hccl_algo_implements(hccl_algo_id id, hccl_op_type type);
hccl_algo_id hccl_algo_select(const hccl_algo_ctx *ctx, const hccl_op_args *args);
const char *hccl_algo_id_name(hccl_algo_id id, hccl_op_type type);
HcclResult hccl_algo_run(hccl_algo_ctx *ctx, const hccl_op_args *args);
/* Run with an algorithm already chosen by hccl_algo_select for these arguments. */
HcclResult hccl_algo_run_with(hccl_algo_ctx *ctx, const hccl_op_args *args, hccl_algo_id id);
/* A ReduceScatterV whose block of sendBuf for rank r overlaps another rank's non-empty
 * block: then "in place" (recvBuf at that block) is not, since writing the result would
 * change input still to be read. 0 for the other operations. */
int hccl_algo_rs_own_block_shared(const hccl_op_args *a, uint32_t nranks, uint32_t r);
/* The reference algorithm of each operation (the oracle of the fast ones). */
HcclResult hccl_algo_run_reference(hccl_algo_ctx *ctx, const hccl_op_args *args);

/* The reference algorithms, one per file. */
HcclResult hccl_algo_ring_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_ring_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a); /* also _V */
HcclResult hccl_algo_ring_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a);      /* also _V */
HcclResult hccl_algo_tree_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_tree_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_linear_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_linear_gather(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_pairwise_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a); /* all three forms */
/* The blocks of an AlltoAll, AlltoAllV or AlltoAllVC at rank r of n, in elements: send
 * count and displacement, receive count and displacement, per peer (one allocation:
 * free with hccl_free(L->sc)); the send and receive spans (ends of the furthest
 * non-empty block), the elements received in all, and whether the send and receive
 * layouts are the same. HCCL_E_PARA (nothing to free) when the rank's block to itself
 * differs from the one it expects from itself. */
typedef struct hccl_a2a_layout {
    uint64_t *sc, *sd, *rc, *rd;
    uint64_t sspan, rspan, rtotal;
    int same;
} hccl_a2a_layout;
HcclResult hccl_a2a_layout_of(const hccl_op_args *a, uint32_t n, uint32_t r, hccl_a2a_layout *L);
HcclResult hccl_algo_dissemination_barrier(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_p2p(hccl_algo_ctx *ctx, const hccl_op_args *a); /* SEND, RECV, BATCH */

/* The fast algorithms. */
HcclResult hccl_algo_oneshot_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
/* The slot algorithms need net->slot_gather. */
HcclResult hccl_algo_slot_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_slot_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a);      /* AllGather only */
HcclResult hccl_algo_slot_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a); /* ReduceScatter only */
HcclResult hccl_algo_slot_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a);       /* AlltoAll only */
HcclResult hccl_algo_slot_barrier(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_oneshot_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a); /* also _V */
HcclResult hccl_algo_oneshot_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_oneshot_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_oneshot_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_oneshot_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a); /* AlltoAll only */
HcclResult hccl_algo_direct_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_direct_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a);      /* also _V */
HcclResult hccl_algo_direct_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a); /* also _V */
HcclResult hccl_algo_direct_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_direct_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_direct_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a); /* all three forms */
HcclResult hccl_algo_hier_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_hier_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_hier_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_hier_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a);
/* The network algorithms for any transport and any number of ranks (one per file). */
HcclResult hccl_algo_hd_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_rd_allreduce(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_hd_reduce_scatter(hccl_algo_ctx *ctx, const hccl_op_args *a); /* also _V */
HcclResult hccl_algo_hd_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a);      /* also _V */
HcclResult hccl_algo_bruck_allgather(hccl_algo_ctx *ctx, const hccl_op_args *a);   /* also _V */
HcclResult hccl_algo_bruck_alltoall(hccl_algo_ctx *ctx, const hccl_op_args *a);    /* ALLTOALL only */
HcclResult hccl_algo_chain_broadcast(hccl_algo_ctx *ctx, const hccl_op_args *a);
HcclResult hccl_algo_chain_reduce(hccl_algo_ctx *ctx, const hccl_op_args *a);

/*
 * The alpha-beta cost model (cost.c): predicted time in microseconds of algorithm id
 * for operation type over n ranks, where `bytes` is the size hccl_algo_select
 * measures (allreduce, broadcast, reduce: the vector; allgather, reduce-scatter: one
 * rank's block; alltoall: one pair's block); HUGE_VAL where id does not implement
 * type. Links are TCP unless every pair is on one host with direct copies (then
 * shared memory); TCP between ranks that all share one host (HCCL_SHM_DISABLE=1)
 * is TCP_HOST: loopback, whose concurrent flows share the host's CPUs.
 */
typedef enum { HCCL_LINK_TCP = 0, HCCL_LINK_SHM = 1, HCCL_LINK_TCP_HOST = 2 } hccl_link_kind;
hccl_link_kind hccl_algo_link(const hccl_algo_ctx *ctx);
double hccl_algo_cost(hccl_algo_id id, hccl_op_type type, uint32_t n, uint64_t bytes, hccl_link_kind link);
/* Elements per segment of the pipelined chain for count elements of es bytes (the
 * same on every rank): the model's optimum, a power of two in bytes, 8 KiB..1 MiB. */
uint64_t hccl_algo_chain_segment(uint32_t n, uint64_t count, size_t es, int reduce, hccl_link_kind link);

#endif
