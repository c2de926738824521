/*
 * helper_fake_net.h - an in-process network for algorithm tests: ranks are threads.
 *
 * fake_net_run(n, fn, arg) starts n threads; thread r gets an hccl_algo_ctx (rank r,
 * its own 64-byte aligned HCCL_ALGO_SCRATCH_BYTES scratch, and an hccl_net whose
 * exchange() is strict rendezvous: a send completes only once the receiver has posted
 * the matching receive, so a schedule that would deadlock over TCP deadlocks here).
 * A deadlock (every unfinished rank waiting on transfers nobody can match) or a wait
 * over the timeout (10 s by default) fails the exchange; a byte-count mismatch
 * between a send and its receive fails both with HCCL_E_PARA.
 */
#ifndef HELPER_FAKE_NET_H
#define HELPER_FAKE_NET_H

#include "algo/algo.h"

#include <stdint.h>

typedef HcclResult (*fake_rank_fn)(hccl_algo_ctx *ctx, void *arg);

typedef struct fake_net_stats {
    uint64_t msgs;      /* transfers matched (each send/receive pair counts once) */
    uint64_t bytes;     /* bytes moved by them */
    uint64_t exchanges; /* exchange() calls, all ranks */
    int deadlock;       /* 1 when a deadlock or timeout was detected */
} fake_net_stats;

/* Run fn on n rank threads; returns the first failure of any rank (by rank order)
 * or HCCL_SUCCESS. stats may be NULL. */
HcclResult fake_net_run(uint32_t nranks, fake_rank_fn fn, void *arg, fake_net_stats *stats);

/* Seconds an exchange may wait before it is declared a deadlock (default 10). */
void fake_net_set_timeout(double seconds);

/* Direct access between the rank threads for the next runs: 0 none (default);
 * 1 peer_ptr and peer_copy (like threads of one process); 2 peer_copy only (like
 * cross-memory attach between processes). Sets ctx->direct accordingly. */
void fake_net_set_direct(int mode);

/* Slots for the next runs: 1 gives every rank an hccl_net.slot_gather (one host's
 * shared mailboxes, here memory of the test process); 0 none (default). */
void fake_net_set_slots(int on);

/* Simulated hosts for the next runs: host_of[r] for every rank (NULL: one host).
 * With hosts set, ctx->direct is 0 and the direct mode applies within hosts only
 * (ctx->direct_local). The array must outlive the runs. */
void fake_net_set_hosts(const uint32_t *host_of, uint32_t nhosts);

#endif
