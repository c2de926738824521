/*
 * net.h - the communicator's network: hccl_net.exchange() over transport connections.
 *
 * Message framing (every message, both kinds of operation):
 *
 *   +--------+--------+-----------------+---------------------+
 *   | seq u32| kind u32| length u64     | payload (length B)  |
 *   +--------+--------+-----------------+---------------------+
 *   kind = (operation type << 8) | (1 for point-to-point, 0 for collective)
 *
 * Collectives number their messages with the communicator's collective sequence
 * number (the same on every rank for matching calls); point-to-point messages with a
 * per-peer, per-direction counter. The receiver checks sequence, kind and length
 * against what it posted, so ranks that disagree fail with a message naming both
 * sides instead of corrupting data. Progress: every posted transfer advances
 * non-blockingly; when nothing moves, the engine spins briefly (HCCL_NET_SPIN_US)
 * and then sleeps in poll().
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

/* Set before running an operation: its type, whether it is point-to-point, the
 * collective sequence number, and the execution deadline (0 = none). */
void hccl_net_begin_op(hccl_netimpl *n, hccl_op_type type, int p2p, uint32_t coll_seq, uint64_t deadline_ns);

/* Text describing the last failure ("" when none). */
const char *hccl_net_error(hccl_netimpl *n);

#endif
