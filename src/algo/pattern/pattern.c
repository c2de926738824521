/*
 * pattern.c - the rank arithmetic declared in pattern.h (ring, binomial tree,
 * dissemination, pairwise, paired exchange, block split, fold, halving, doubling,
 * Bruck, chain). Pure functions.
 */
#include "algo/pattern/pattern.h"

void hccl_pattern_block(uint64_t count, uint32_t n, uint32_t i, uint64_t *off, uint64_t *len)
{
    uint64_t base = count / n, rem = count % n;
    *len = base + (i < rem ? 1 : 0);
    *off = (uint64_t)i * base + (i < rem ? i : rem);
}

uint32_t hccl_pattern_ring_next(uint32_t r, uint32_t n) { return r + 1 == n ? 0 : r + 1; }

uint32_t hccl_pattern_ring_prev(uint32_t r, uint32_t n) { return r == 0 ? n - 1 : r - 1; }

/* (r - d) mod n for any d, without overflow. */
static uint32_t sub_mod(uint32_t r, uint64_t d, uint32_t n) { return (uint32_t)(((uint64_t)r + n - d % n) % n); }

void hccl_pattern_ring_rs_step(uint32_t r, uint32_t n, uint32_t s, uint32_t *send_blk, uint32_t *recv_blk)
{
    *send_blk = sub_mod(r, (uint64_t)s + 1, n);
    *recv_blk = sub_mod(r, (uint64_t)s + 2, n);
}

void hccl_pattern_ring_ag_step(uint32_t r, uint32_t n, uint32_t s, uint32_t *send_blk, uint32_t *recv_blk)
{
    *send_blk = sub_mod(r, s, n);
    *recv_blk = sub_mod(r, (uint64_t)s + 1, n);
}

uint32_t hccl_pattern_rel_rank(uint32_t r, uint32_t root, uint32_t n) { return sub_mod(r, root, n); }

uint32_t hccl_pattern_abs_rank(uint32_t v, uint32_t root, uint32_t n)
{
    return (uint32_t)(((uint64_t)v + root) % n);
}

int64_t hccl_pattern_tree_parent(uint32_t v, uint32_t n)
{
    (void)n;
    if (v == 0) return -1;
    return (int64_t)(v & (v - 1));
}

uint32_t hccl_pattern_tree_nchildren(uint32_t v, uint32_t n)
{
    uint32_t k = 0;
    /* 2^k must stay below v's lowest set bit (any power for the root) and v + 2^k < n. */
    while (k < 32) {
        uint64_t m = 1ull << k;
        if (v != 0 && m >= (v & (~v + 1u))) break;
        if ((uint64_t)v + m >= n) break;
        k++;
    }
    return k;
}

uint32_t hccl_pattern_tree_child(uint32_t v, uint32_t i) { return v + (1u << i); }

uint32_t hccl_pattern_log2_ceil(uint32_t n)
{
    uint32_t k = 0;
    while (k < 32 && (1ull << k) < n) k++;
    return k;
}

void hccl_pattern_dissem_peers(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from)
{
    uint64_t d = (1ull << k) % n;
    *to = (uint32_t)(((uint64_t)r + d) % n);
    *from = sub_mod(r, d, n);
}

void hccl_pattern_pairwise_peers(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from)
{
    *to = (uint32_t)(((uint64_t)r + k) % n);
    *from = sub_mod(r, k, n);
}

uint32_t hccl_pattern_paired_partner(uint32_t r, uint32_t n, uint32_t k) { return sub_mod(k % n, r, n); }

uint32_t hccl_pattern_log2_floor(uint32_t n)
{
    uint32_t k = 0;
    while (k < 31 && (2ull << k) <= n) k++;
    return k;
}

uint32_t hccl_pattern_pow2_floor(uint32_t n) { return 1u << hccl_pattern_log2_floor(n); }

int64_t hccl_pattern_fold_vrank(uint32_t r, uint32_t n)
{
    uint32_t rem = n - hccl_pattern_pow2_floor(n);
    if (r < 2 * rem) return r % 2 == 0 ? -1 : (int64_t)(r / 2);
    return (int64_t)(r - rem);
}

uint32_t hccl_pattern_fold_rank(uint32_t v, uint32_t n)
{
    uint32_t rem = n - hccl_pattern_pow2_floor(n);
    return v < rem ? 2 * v + 1 : v + rem;
}

uint32_t hccl_pattern_fold_first(uint32_t v, uint32_t n)
{
    uint32_t rem = n - hccl_pattern_pow2_floor(n);
    return v < rem ? 2 * v : v + rem;
}

void hccl_pattern_halving_step(uint32_t v, uint32_t p, uint32_t s, uint32_t *partner, uint32_t *keep_lo,
                               uint32_t *send_lo, uint32_t *nblk)
{
    uint32_t half = p >> (s + 1), group = v & ~((half << 1) - 1);
    *partner = v ^ half;
    *nblk = half;
    *keep_lo = v & half ? group + half : group;
    *send_lo = v & half ? group : group + half;
}

void hccl_pattern_doubling_step(uint32_t v, uint32_t s, uint32_t *partner, uint32_t *send_lo, uint32_t *recv_lo,
                                uint32_t *nblk)
{
    uint32_t m = 1u << s;
    *partner = v ^ m;
    *nblk = m;
    *send_lo = v & ~(m - 1);
    *recv_lo = *partner & ~(m - 1);
}

void hccl_pattern_bruck_ag_step(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from, uint32_t *cnt)
{
    uint64_t d = 1ull << k;
    *to = sub_mod(r, d, n);
    *from = (uint32_t)(((uint64_t)r + d) % n);
    *cnt = (uint32_t)(d < n - d ? d : n - d);
}

void hccl_pattern_bruck_a2a_peers(uint32_t r, uint32_t n, uint32_t k, uint32_t *to, uint32_t *from)
{
    uint64_t d = (1ull << k) % n;
    *to = (uint32_t)(((uint64_t)r + d) % n);
    *from = sub_mod(r, d, n);
}

uint64_t hccl_pattern_chain_steps(uint32_t n, uint64_t nseg) { return n < 2 || nseg == 0 ? 0 : nseg + n - 2; }

int64_t hccl_pattern_chain_recv_seg(uint32_t q, uint32_t n, uint64_t nseg, uint64_t t)
{
    if (q == 0 || q >= n || t + 1 < q) return -1;
    uint64_t i = t + 1 - q;
    return i < nseg ? (int64_t)i : -1;
}

int64_t hccl_pattern_chain_send_seg(uint32_t q, uint32_t n, uint64_t nseg, uint64_t t)
{
    if (q + 1 >= n || t < q) return -1;
    uint64_t i = t - q;
    return i < nseg ? (int64_t)i : -1;
}
