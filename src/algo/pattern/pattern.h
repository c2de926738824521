/*
 * pattern.h - pure rank arithmetic of the reference schedules (no I/O, no allocation).
 *
 * Every function is a total function of its integer arguments, so every rank of a
 * communicator computes the same schedule. Ranks are 0..n-1 with n >= 1.
 *
 *   block split   count elements in n blocks: the first count % n blocks hold one
 *                 element more than the others (blocks may be empty when count < n).
 *   ring          next = r+1, prev = r-1 (mod n).
 *                 reduce-scatter step s (0..n-2): send block r-s-1, receive r-s-2; after
 *                 n-1 steps rank r holds the reduction of block r.
 *                 allgather step s (0..n-2): send block r-s, receive block r-s-1.
 *   binomial tree relative rank v = (r - root) mod n; parent of v > 0 is v with its lowest
 *                 set bit cleared; children of v are v + 2^k for every 2^k below v's
 *                 lowest set bit (every 2^k < n for the root) with v + 2^k < n.
 *   dissemination round k (0..ceil(log2 n)-1): send to r + 2^k, receive from r - 2^k.
 *   pairwise      step k (1..n-1): send to r + k, receive from r - k.
 *   paired        round k (0..n-1): partner (k - r) mod n; partnership is symmetric, and
 *                 over the n rounds every rank meets every rank (itself included) once.
 */
#ifndef HCCL_ALGO_PATTERN_H
#define HCCL_ALGO_PATTERN_H

#include <stdint.h>

/* Offset and length (elements) of block i when count elements are split in n blocks. */
void hccl_pattern_block(uint64_t count, uint32_t n, uint32_t i, uint64_t *off, uint64_t *len);

uint32_t hccl_pattern_ring_next(uint32_t r, uint32_t n);
uint32_t hccl_pattern_ring_prev(uint32_t r, uint32_t n);
/* Blocks sent and received by rank r at ring reduce-scatter step s. */
void hccl_pattern_ring_rs_step(uint32_t r, uint32_t n, uint32_t s, uint32_t *send_blk, uint32_t *recv_blk);
/* Blocks sent and received by rank r at ring allgather step s. */
void hccl_pattern_ring_ag_step(uint32_t r, uint32_t n, uint32_t s, uint32_t *send_blk, uint32_t *recv_blk);

/* Relative rank of r for root, and back. */
uint32_t hccl_pattern_rel_rank(uint32_t r, uint32_t root, uint32_t n);
uint32_t hccl_pattern_abs_rank(uint32_t v, uint32_t root, uint32_t n);
/* Binomial tree over relative ranks: parent of v, or -1 for the root (v == 0). */
int64_t hccl_pattern_tree_parent(uint32_t v, uint32_t n);
/* Number of children of v; child i (0 <= i < that number) is v + 2^i, so children come
 * in order of increasing subtree size. */
uint32_t hccl_pattern_tree_nchildren(uint32_t v, uint32_t n);
uint32_t hccl_pattern_tree_child(uint32_t v, uint32_t i);

/* ceil(log2 n): the number of dissemination rounds (0 for n == 1). */
uint32_t hccl_pattern_log2_ceil(uint32_t n);
void hccl_pattern_dissem_peers(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from);

void hccl_pattern_pairwise_peers(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from);
uint32_t hccl_pattern_paired_partner(uint32_t r, uint32_t n, uint32_t k);

#endif
