/*
 * test_pattern.c - exhaustive checks of the rank arithmetic in src/algo/pattern for
 * n = 1..16: block split, ring reduce-scatter and allgather (simulated), binomial
 * tree shape, dissemination knowledge spread, pairwise and paired peer matching.
 */
#include "algo/pattern/pattern.h"
#include "tinytest.h"

#include <stdint.h>

static void test_block(uint32_t n)
{
    for (uint64_t count = 0; count <= 3 * n + 5; count++) {
        uint64_t expect_off = 0, minlen = UINT64_MAX, maxlen = 0, prevlen = UINT64_MAX;
        int ok = 1;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t off, len;
            hccl_pattern_block(count, n, i, &off, &len);
            if (off != expect_off || len > prevlen) ok = 0;
            expect_off = off + len;
            prevlen = len;
            if (len < minlen) minlen = len;
            if (len > maxlen) maxlen = len;
        }
        TT_ASSERT_MSG(ok && expect_off == count && maxlen - minlen <= 1, "n %u count %llu", n,
                      (unsigned long long)count);
    }
    uint64_t off, len;
    hccl_pattern_block(UINT64_MAX, n, n - 1, &off, &len);
    TT_ASSERT(off + len == UINT64_MAX);
}

static void test_ring(uint32_t n)
{
    uint32_t full = n == 32 ? 0xffffffffu : (1u << n) - 1;
    for (uint32_t r = 0; r < n; r++) {
        TT_ASSERT(hccl_pattern_ring_prev(hccl_pattern_ring_next(r, n), n) == r);
        TT_ASSERT(hccl_pattern_ring_next(r, n) == (r + 1) % n);
    }
    /* Reduce-scatter: part[r][b] = ranks whose contribution rank r holds for block b. */
    uint32_t part[16][16], sent[16];
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t b = 0; b < n; b++) part[r][b] = 1u << r;
    int ok = 1;
    for (uint32_t s = 0; s + 1 < n; s++) {
        uint32_t sb[16], rb[16];
        for (uint32_t r = 0; r < n; r++) {
            hccl_pattern_ring_rs_step(r, n, s, &sb[r], &rb[r]);
            sent[r] = part[r][sb[r]];
            if (s > 0) {
                uint32_t psb, prb;
                hccl_pattern_ring_rs_step(r, n, s - 1, &psb, &prb);
                if (sb[r] != prb) ok = 0; /* sends what it reduced the step before */
            }
        }
        for (uint32_t r = 0; r < n; r++) {
            uint32_t p = hccl_pattern_ring_prev(r, n);
            if (sb[p] != rb[r]) ok = 0;
            if (part[r][rb[r]] & sent[p]) ok = 0; /* no contribution counted twice */
            part[r][rb[r]] |= sent[p];
        }
    }
    for (uint32_t r = 0; r < n; r++)
        if (part[r][r] != full) ok = 0;
    TT_ASSERT_MSG(ok, "ring reduce-scatter n %u", n);

    /* Allgather: have[r] = blocks rank r holds. */
    uint32_t have[16];
    for (uint32_t r = 0; r < n; r++) have[r] = 1u << r;
    ok = 1;
    for (uint32_t s = 0; s + 1 < n; s++) {
        uint32_t sb[16], rb[16], before[16];
        for (uint32_t r = 0; r < n; r++) {
            hccl_pattern_ring_ag_step(r, n, s, &sb[r], &rb[r]);
            if (!(have[r] & (1u << sb[r]))) ok = 0;
            before[r] = have[r];
        }
        for (uint32_t r = 0; r < n; r++) {
            uint32_t p = hccl_pattern_ring_prev(r, n);
            if (sb[p] != rb[r] || (before[r] & (1u << rb[r]))) ok = 0;
            have[r] |= 1u << rb[r];
        }
    }
    for (uint32_t r = 0; r < n; r++)
        if (have[r] != full) ok = 0;
    TT_ASSERT_MSG(ok, "ring allgather n %u", n);
}

static void test_tree(uint32_t n)
{
    int ok = 1;
    uint32_t nparent_refs[16] = {0};
    for (uint32_t root = 0; root < n; root++)
        for (uint32_t r = 0; r < n; r++) {
            uint32_t v = hccl_pattern_rel_rank(r, root, n);
            if (v >= n || hccl_pattern_abs_rank(v, root, n) != r) ok = 0;
            if ((r == root) != (v == 0)) ok = 0;
        }
    TT_ASSERT_MSG(ok, "rel/abs rank n %u", n);
    ok = 1;
    TT_ASSERT(hccl_pattern_tree_parent(0, n) == -1);
    uint32_t depth[16] = {0}, maxdepth = 0;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t nc = hccl_pattern_tree_nchildren(v, n), prev = v;
        for (uint32_t i = 0; i < nc; i++) {
            uint32_t c = hccl_pattern_tree_child(v, i);
            if (c >= n || c <= prev || hccl_pattern_tree_parent(c, n) != (int64_t)v) ok = 0;
            if (c < n) nparent_refs[c]++;
            prev = c;
        }
        if (v > 0) {
            int64_t p = hccl_pattern_tree_parent(v, n);
            if (p < 0 || p >= v) ok = 0;
            else depth[v] = depth[p] + 1; /* parents come first: p < v */
            if (depth[v] > maxdepth) maxdepth = depth[v];
        }
    }
    for (uint32_t v = 1; v < n; v++)
        if (nparent_refs[v] != 1) ok = 0; /* every non-root is exactly one node's child */
    if (nparent_refs[0] != 0 || maxdepth > hccl_pattern_log2_ceil(n)) ok = 0;
    TT_ASSERT_MSG(ok, "binomial tree n %u", n);
}

static void test_dissem(uint32_t n)
{
    uint32_t full = (1u << n) - 1, know[16];
    uint32_t rounds = hccl_pattern_log2_ceil(n);
    TT_ASSERT((1u << rounds) >= n && (rounds == 0 || (1u << (rounds - 1)) < n));
    for (uint32_t r = 0; r < n; r++) know[r] = 1u << r;
    int ok = 1;
    for (uint32_t k = 0; k < rounds; k++) {
        uint32_t before[16];
        for (uint32_t r = 0; r < n; r++) before[r] = know[r];
        for (uint32_t r = 0; r < n; r++) {
            uint32_t to, from, to2, from2;
            hccl_pattern_dissem_peers(r, n, k, &to, &from);
            hccl_pattern_dissem_peers(to, n, k, &to2, &from2);
            if (from2 != r || to == r) ok = 0;
            know[to] |= before[r];
        }
    }
    for (uint32_t r = 0; r < n; r++)
        if (know[r] != full) ok = 0;
    TT_ASSERT_MSG(ok, "dissemination n %u", n);
}

static void test_pairwise(uint32_t n)
{
    int ok = 1;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t seen_to = 1u << r, seen_from = 1u << r, met = 0;
        for (uint32_t k = 1; k < n; k++) {
            uint32_t to, from, to2, from2;
            hccl_pattern_pairwise_peers(r, n, k, &to, &from);
            hccl_pattern_pairwise_peers(to, n, k, &to2, &from2);
            if (from2 != r) ok = 0;
            seen_to |= 1u << to;
            seen_from |= 1u << from;
        }
        if (seen_to != (1u << n) - 1 || seen_from != (1u << n) - 1) ok = 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t p = hccl_pattern_paired_partner(r, n, k);
            if (p >= n || hccl_pattern_paired_partner(p, n, k) != r || (met & (1u << p))) ok = 0;
            met |= 1u << p;
        }
        if (met != (1u << n) - 1) ok = 0;
    }
    TT_ASSERT_MSG(ok, "pairwise / paired n %u", n);
}

int main(void)
{
    for (uint32_t n = 1; n <= 16; n++) {
        test_block(n);
        test_ring(n);
        test_tree(n);
        test_dissem(n);
        test_pairwise(n);
    }
    TT_ASSERT(hccl_pattern_log2_ceil(1) == 0 && hccl_pattern_log2_ceil(2) == 1 && hccl_pattern_log2_ceil(5) == 3);
    TT_ASSERT(hccl_pattern_tree_nchildren(0, 1) == 0 && hccl_pattern_tree_nchildren(0, 8) == 3);
    TT_ASSERT(hccl_pattern_tree_nchildren(4, 8) == 2 && hccl_pattern_tree_nchildren(4, 6) == 1);
    return tt_report("test_pattern");
}
