/*
 * net.h - the communicator's network: hccl_net.exchange() over transport connections.
 *
 * Message framing (every message, both kinds of operation), 32 bytes of header:
 *
 *   +---------+----+-------+-------+-------+---------+------------+-----------+-----------+---------+
 *   | seq u32 | op | flags | dtype | redop | root u32| digest u32 | count u64 | length u64| payload |
 *   +---------+----+-------+-------+-------+---------+------------+-----------+-----------+---------+
 *
 * flags: bit 0 point-to-point, bit 1 a STATUS answer, bits 4-7 the algorithm (+1).
 *
 * Collectives number their messages with the communicator's collective sequence
 * number (the same on every rank for matching calls) and carry the operation's
 * fingerprint (op, dtype, redop, root, count, and the digest of a count array every
 * rank must share: hccl_fingerprint below); point-to-point messages carry a
 * per-peer, per-direction counter. The receiver checks everything against what it
 * posted, so ranks that disagree fail with a message naming both calls instead of
 * corrupting data. op = 255 is an ABORT frame: its payload is the sender's error
 * text; a rank that fails sends one to every peer it can (best effort) and shuts its
 * connections, so peers fail promptly too, naming the cause.
 * op = 254 is a STATUS frame (HCCL_EXEC_TIMEOUT reports): seq = the sender's collective,
 * flags bit 2 = an answer, payload (length at most 64, checked before it is read)
 * version 1: {u8 version, u8 state (1 idle, 2 in an operation), u8 current op, u8
 * current is point-to-point, u32 current seq, u32 last completed seq, u8 its op, 3
 * pad}; later versions append fields. A rank that times out in a collective sends one
 * to every peer and listens a second for theirs: ranks inside an operation answer
 * with their own, idle ones through a background responder (net.c) that reads ahead
 * between operations. The report names each rank that has not reached the operation
 * with where it said it is and its last completed collective, or as silent.
 * Progress: every posted transfer advances non-blockingly; when nothing moves, the
 * engine spins briefly (HCCL_NET_SPIN_US) and then sleeps in poll(), waking every
 * 100 ms to check the execution deadline and the abort flag.
 */
#ifndef HCCL_CORE_NET_H
#define HCCL_CORE_NET_H

#include "algo/algo.h"
#include "transport/transport.h"

#include <stdint.h>

typedef struct hccl_netimpl hccl_netimpl;

HcclResult hccl_net_create(uint32_t rank, uint32_t nranks, hccl_conn **conns, hccl_netimpl **out);
void hccl_net_destroy(hccl_netimpl *n);
hccl_net *hccl_net_base(hccl_netimpl *n);

/* What an operation looks like to its peers (compared field by field; it travels
 * whole in a slot's 32-byte tag). */
typedef struct hccl_fingerprint {
    uint8_t op;     /* hccl_op_type */
    uint8_t p2p;
    uint8_t dtype;  /* HcclDataType */
    uint8_t redop;  /* HcclReduceOp; HCCL_REDUCE_RESERVED when the op does not reduce */
    uint32_t seq;
    uint32_t root;  /* UINT32_MAX when the op has no root */
    uint32_t digest; /* a hash of the count array every rank must share (AllGatherV's
                        recvCounts, ReduceScatterV's sendCounts, AlltoAllVC's matrix); 0 */
    uint64_t count; /* UINT64_MAX when counts may differ between ranks (AlltoAllV,
                       point-to-point); the sum of the shared array for those above */
    uint8_t algo;   /* the algorithm the operation runs (hccl_algo_id + 1; 0: not said),
                       chosen alike on every rank unless their HCCL_ALGO differ */
    uint8_t zero[7]; /* 0: the tag's size */
} hccl_fingerprint;

/* Describe args, an operation of a communicator of nranks, as its fingerprint (seq
 * filled by the caller). */
void hccl_fingerprint_of(const hccl_op_args *args, uint32_t nranks, hccl_fingerprint *fp);
/* "AllReduce(count=1024, fp32, sum)" */
void hccl_fingerprint_str(const hccl_fingerprint *fp, char *buf, size_t len);

/* Set before running an operation: its fingerprint and its execution timeout
 * (0 = none), which counts from the operation's first wait that reads the clock
 * (a few hundred nanoseconds of polling in; an operation that never waits reads no
 * clock). */
void hccl_net_begin_op(hccl_netimpl *n, const hccl_fingerprint *fp, uint64_t timeout_ns);

/* After an operation begun with hccl_net_begin_op (ok: it succeeded; a collective's
 * sequence number and kind become the last completed collective). After a failure the
 * connections are not read between operations any more. */
void hccl_net_end_op(hccl_netimpl *n, int ok);

/* Once the communicator is set up: between operations, a background thread answers
 * peers' STATUS questions with this rank's last completed collective. stop (before
 * the connections are closed; waits for a pass in progress) ends that; destroy does
 * too. */
void hccl_net_start_responder(hccl_netimpl *n);
void hccl_net_stop_responder(hccl_netimpl *n);

/* Abort flag checked by the engine while it waits (set by destroy / watchdog). */
void hccl_net_set_abort_flag(hccl_netimpl *n, const int *flag);
/* Suspend flag (HcclCommSuspend): an idle rank's answer to a STATUS question says so. */
void hccl_net_set_suspend_flag(hccl_netimpl *n, const int *flag);

/* Give the algorithms direct access (hccl_net.peer_copy / peer_ptr) to the peers
 * whose pid is listed (0 = not reachable): same process -> memcpy, another process
 * on this host -> cross-memory attach (process_vm_readv / writev). */
HcclResult hccl_net_enable_direct(hccl_netimpl *n, const uint32_t *pids);
/* After hccl_net_enable_direct: map the shared device memory of the listed peers
 * (dirfds[p]: the descriptor of peer p's memory directory in its process, -1 =
 * none), so hccl_net.peer_ptr gives pointers into other processes' aclrtMalloc
 * buffers too. Peers that cannot be mapped keep cross-memory attach. */
void hccl_net_enable_peermem(hccl_netimpl *n, const int32_t *dirfds);
/* Try one cross-memory-attach read of 8 bytes from pid at addr; 0 when it works. */
int hccl_net_probe_direct(uint32_t pid, uint64_t addr, uint64_t expect);

/* For peers whose data moves over a transport that cannot see a dead process
 * (shared memory), the TCP connection to watch for the peer's exit (NULL = none).
 * The engine polls these for hang-up while it sleeps. */
void hccl_net_set_liveness(hccl_netimpl *n, hccl_conn **live);
/* A communicator of one host whose ranks all mapped one slot segment (agreed by
 * every rank): hccl_net.slot_gather posts through it. The engine owns s from now on
 * (closed with it); NULL: none. */
typedef struct hccl_slots hccl_slots;
void hccl_net_enable_slots(hccl_netimpl *n, hccl_slots *s);
/* More ranks than CPUs on some host (agreed by every rank): waits behave as when their
 * yields find the CPU contended, from the first wait on. */
void hccl_net_set_crowded(hccl_netimpl *n, int crowded);
/* Failure messages that name peer (a rank of another host) say where it runs: "rank 5
 * (host NAME IP) exited ...". Peers never set (those of this rank's own host) are
 * named by rank alone. Set at set-up; the text is only read when an operation fails. */
HcclResult hccl_net_set_peer_host(hccl_netimpl *n, uint32_t peer, const char *name, const char *ip);

/* After a failure: tell every peer (best effort) and shut the connections. */
void hccl_net_abort(hccl_netimpl *n, const char *why);

/* Text describing the last failure ("" when none). */
const char *hccl_net_error(hccl_netimpl *n);
/* When the last failure was a peer's ABORT with a reason: that reason (NULL otherwise). */
const char *hccl_net_peer_abort(hccl_netimpl *n);

#endif
