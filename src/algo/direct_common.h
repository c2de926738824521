/*
 * direct_common.h - shared steps of the direct (same-host) algorithms: the
 * all-gather of buffer addresses that opens them and the empty round that closes
 * them (slot rounds where the communicator has slots), and a copy that uses the peer
 * pointer when there is one.
 */
#ifndef HCCL_ALGO_DIRECT_COMMON_H
#define HCCL_ALGO_DIRECT_COMMON_H

#include "algo/algo.h"

#include <stdint.h>

#define HCCL_DIRECT_MAX_RANKS 64

typedef struct hccl_direct_addrs {
    uint64_t send, recv;
} hccl_direct_addrs;

/* Give `mine` to every peer and get every peer's into theirs[j] (theirs[rank] =
 * mine): one slot round on a communicator with slots, else an all-to-all of messages.
 * Every rank must call it (it doubles as the entry barrier). */
HcclResult hccl_direct_open(hccl_algo_ctx *ctx, hccl_direct_addrs mine, hccl_direct_addrs *theirs);
/* Personalised variant: send mine[j] to peer j, receive theirs[j] from peer j. */
HcclResult hccl_direct_open_v(hccl_algo_ctx *ctx, const hccl_direct_addrs *mine, hccl_direct_addrs *theirs);
/* An empty slot round, or an empty message to and from every peer: nobody leaves
 * while others use its buffers. */
HcclResult hccl_direct_close(hccl_algo_ctx *ctx);
/* A peer's block for us has another length than we expect (the ranks' counts
 * disagree): fail the operation with a report naming both lengths (its abort fails
 * the others) before anything is read. */
HcclResult hccl_direct_disagree(hccl_algo_ctx *ctx, uint32_t from, uint32_t to, uint64_t sent, uint64_t expected);
/* Copy between local memory and peer j's address (pointer when possible); nt: with
 * stores that bypass the cache (hccl_copy_nt) when the copy is ours to make. */
HcclResult hccl_direct_copy(hccl_algo_ctx *ctx, uint32_t peer, int write, void *local, uint64_t remote, size_t bytes,
                            int nt);

/* Reduce elements [byte_off, byte_off + len x es) of every rank's sendbuf (peer[j].send;
 * ours from a->sendbuf) into out, in rank order (n >= 2): through acc (len elements)
 * for n > 2, reading a peer's bytes through a pointer or copying them into stage[0]
 * or stage[1] (len elements each). */
HcclResult hccl_direct_reduce_slice(hccl_algo_ctx *ctx, const hccl_op_args *a, const hccl_direct_addrs *peer,
                                    uint64_t byte_off, uint64_t len, void *out, char *acc, char *const stage[2]);

#endif
