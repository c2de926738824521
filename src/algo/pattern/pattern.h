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
 *
 * And of the other network algorithms (halving-doubling, Bruck, pipelined chain):
 *
 *   fold          n ranks onto p = 2^floor(log2 n) virtual ranks: with rem = n - p, the
 *                 first 2*rem ranks pair up (2i, 2i+1); the even one hands its data to the
 *                 odd one and sits out (virtual rank -1), the odd one becomes virtual
 *                 rank i; rank r >= 2*rem becomes r - rem. Virtual rank v stands for the
 *                 real blocks [first(v), first(v+1)): {2v, 2v+1} for v < rem, else {v+rem}.
 *   halving       step s (0..log2 p - 1): partner v ^ (p >> (s+1)); before it, v holds
 *                 the virtual blocks of its aligned group of p >> s; it keeps the half
 *                 holding v and sends the other. After all steps v holds block v.
 *   doubling      step s (0..log2 p - 1): partner v ^ 2^s; v sends its aligned group of
 *                 2^s blocks and receives the partner's. After all steps v holds all.
 *   bruck         allgather step k (0..ceil(log2 n)-1): send to r - 2^k the blocks
 *                 r .. r+cnt-1 (mod n), receive from r + 2^k its blocks r+2^k ..
 *                 r+2^k+cnt-1, cnt = min(2^k, n - 2^k). Before step k rank r holds the
 *                 2^k blocks from r on. Alltoall step k: send to r + 2^k, receive from
 *                 r - 2^k, the slots whose index has bit k set.
 *   chain         positions 0 -> 1 -> ... -> n-1, nseg segments, steps t = 0 ..
 *                 nseg+n-3: position q > 0 receives segment t-q+1 from q-1 and q < n-1
 *                 sends segment t-q to q+1, each when it lies in 0..nseg-1.
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

/* Largest power of two <= n (n >= 1), and its log2. */
uint32_t hccl_pattern_pow2_floor(uint32_t n);
uint32_t hccl_pattern_log2_floor(uint32_t n);
/* Fold: virtual rank of r (-1: sits out, having handed its data to r + 1), the real
 * rank behind virtual rank v, and the first real block of v (first(p) = n). */
int64_t hccl_pattern_fold_vrank(uint32_t r, uint32_t n);
uint32_t hccl_pattern_fold_rank(uint32_t v, uint32_t n);
uint32_t hccl_pattern_fold_first(uint32_t v, uint32_t n);
/* Halving step s over p virtual ranks: the partner, the first block and number of
 * blocks v keeps, and the first block it sends (as many as it keeps). */
void hccl_pattern_halving_step(uint32_t v, uint32_t p, uint32_t s, uint32_t *partner, uint32_t *keep_lo,
                               uint32_t *send_lo, uint32_t *nblk);
/* Doubling step s: the partner, the first block v sends and the first it receives
 * (2^s blocks each). */
void hccl_pattern_doubling_step(uint32_t v, uint32_t s, uint32_t *partner, uint32_t *send_lo, uint32_t *recv_lo,
                                uint32_t *nblk);
/* Bruck allgather step k: peers and the number of blocks moved. */
void hccl_pattern_bruck_ag_step(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from, uint32_t *cnt);
/* Bruck alltoall step k: peers (the slots moved are those with bit k set). */
void hccl_pattern_bruck_a2a_peers(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from);
/* Chain: number of steps, and the segment position q receives / sends at step t
 * (-1: none). */
uint64_t hccl_pattern_chain_steps(uint32_t n, uint64_t nseg);
int64_t hccl_pattern_chain_recv_seg(uint32_t q, uint32_t n, uint64_t nseg, uint64_t t);
int64_t hccl_pattern_chain_send_seg(uint32_t q, uint32_t n, uint64_t nseg, uint64_t t);

#endif
