/*
 * test_copy.c - util/copy.h: the non-temporal copy gives memcpy's bytes for every
 * alignment of source and destination, every length around the 64-byte lines, and
 * touches nothing outside the destination, with the CPU's widest streaming stores
 * and with SSE2's; the cache-bypass rule (the largest and the private cache, or
 * HCCL_COPY_NT_BYTES alone when set); the copy that avoids memcpy's slow offsets gives
 * memcpy's bytes through its vector loop and through memcpy, for every offset between
 * source and destination modulo 4096 below 64 and around it.
 */
#include "util/copy.h"
#include "tinytest.h"

#include <stdlib.h>
#include <string.h>

#define GUARD 256

static void check_copies(void)
{
    size_t max = 4096 + 3 * 64;
    unsigned char *src = malloc(max + 2 * GUARD), *dst = malloc(max + 2 * GUARD), *want = malloc(max + 2 * GUARD);
    TT_ASSERT(src && dst && want);
    for (size_t i = 0; i < max + 2 * GUARD; i++) src[i] = (unsigned char)(i * 131 + 7);
    static const size_t lens[] = {0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 192, 255, 1000, 4096, 4096 + 3 * 64};
    int mismatches = 0;
    for (size_t so = 0; so < 64; so += 7)
        for (size_t d_o = 0; d_o < 64; d_o += 5)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                size_t n = lens[li];
                memset(dst, 0xA5, max + 2 * GUARD);
                memset(want, 0xA5, max + 2 * GUARD);
                memcpy(want + GUARD + d_o, src + GUARD + so, n);
                hccl_copy_nt(dst + GUARD + d_o, src + GUARD + so, n);
                if (memcmp(dst, want, max + 2 * GUARD) != 0) {
                    if (mismatches++ < 5)
                        TT_ASSERT_MSG(0, "copy of %zu bytes, source offset %zu, destination offset %zu", n, so, d_o);
                }
            }
    TT_ASSERT_EQ(mismatches, 0);
    /* A large copy (the streaming loop's steady state). */
    size_t big = (8u << 20) + 40;
    unsigned char *bs = malloc(big), *bd = malloc(big + 1);
    TT_ASSERT(bs && bd);
    for (size_t i = 0; i < big; i++) bs[i] = (unsigned char)(i ^ (i >> 9));
    hccl_copy_nt(bd + 1, bs, big);
    TT_ASSERT(memcmp(bd + 1, bs, big) == 0);
    free(bs);
    free(bd);
    free(src);
    free(dst);
    free(want);
}

/* hccl_copy_near, in the mode set: every offset 0..70 of the destination after the
 * source, lengths around the loop's 1 KiB floor, its 64-byte passes and a page. */
static void check_near(void)
{
    size_t max = 8192 + 3 * 64;
    /* Page-aligned (aligned_alloc would want a size that is a multiple of the page). */
    void *sp = NULL, *dp = NULL;
    TT_ASSERT(posix_memalign(&sp, 4096, max + 2 * GUARD + 4096) == 0 &&
              posix_memalign(&dp, 4096, max + 2 * GUARD + 4096) == 0);
    unsigned char *src = sp, *dst = dp, *want = malloc(max + 2 * GUARD + 4096);
    TT_ASSERT(src && dst && want);
    for (size_t i = 0; i < max + 2 * GUARD + 4096; i++) src[i] = (unsigned char)(i * 29 + 3);
    static const size_t lens[] = {0, 1, 63, 1023, 1024, 1025, 1087, 4096, 4096 + 17, 8192 + 3 * 64};
    int mismatches = 0;
    for (size_t so = 0; so < 80; so += 13)
        for (size_t delta = 0; delta <= 70; delta++)
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                size_t n = lens[li], d_o = so + delta;
                memset(dst, 0x5A, max + 2 * GUARD + 4096);
                memset(want, 0x5A, max + 2 * GUARD + 4096);
                memcpy(want + GUARD + d_o, src + GUARD + so, n);
                hccl_copy_near(dst + GUARD + d_o, src + GUARD + so, n);
                if (memcmp(dst, want, max + 2 * GUARD + 4096) != 0 && mismatches++ < 5)
                    TT_ASSERT_MSG(0, "near copy of %zu bytes, source offset %zu, destination %zu after it", n, so,
                                  delta);
            }
    TT_ASSERT_EQ(mismatches, 0);
    free(src);
    free(dst);
    free(want);
}

int main(void)
{
    /* The measurement says yes or no; then the loop, memcpy, and the measured choice. */
    int measured = hccl_copy_near_loops();
    TT_ASSERT(measured == 0 || measured == 1);
    for (int loop = 1; loop >= -1; loop--) {
        hccl_copy_near_force(loop);
        TT_ASSERT_EQ(hccl_copy_near_loops(), loop < 0 ? measured : loop);
        check_near();
    }

    for (int narrow = 0; narrow < 2; narrow++) { /* the CPU's widest stores, then SSE2's */
        hccl_copy_nt_sse2_only(narrow);
        check_copies();
    }
    hccl_copy_nt_sse2_only(0);

    /* The rule: HCCL_COPY_NT_BYTES decides alone when set; unset, more than a quarter
     * of the largest cache in all, or (an AllGather's output) one rank's output that
     * fills the private cache; unknown caches never bypass. */
    const size_t L3 = 480u << 20, L2 = 2u << 20;
    TT_ASSERT(!hccl_copy_nt_rule(-1, L3, L2, L3 / 4, 0));
    TT_ASSERT(hccl_copy_nt_rule(-1, L3, L2, L3 / 4 + 1, 0));
    TT_ASSERT(!hccl_copy_nt_rule(-1, L3, L2, 2 * (L2 - 1), L2 - 1));
    TT_ASSERT(hccl_copy_nt_rule(-1, L3, L2, 2 * L2, L2));
    TT_ASSERT(!hccl_copy_nt_rule(-1, L3, 0, 2 * L2, L2));
    TT_ASSERT(!hccl_copy_nt_rule(-1, 0, 0, UINT64_MAX / 2, UINT64_MAX / 4));
    TT_ASSERT(!hccl_copy_nt_rule(0, L3, L2, L3, L3));
    TT_ASSERT(hccl_copy_nt_rule(4096, L3, L2, 4096, 1));
    TT_ASSERT(!hccl_copy_nt_rule(4096, L3, L2, 4095, L2));

    /* The threshold: HCCL_COPY_NT_BYTES (read once, so this process sets it first). */
    setenv("HCCL_COPY_NT_BYTES", "1048576", 1);
    TT_ASSERT_EQ(hccl_param_copy_nt_bytes(), 1048576);
    TT_ASSERT(!hccl_copy_bypasses_cache(1048575));
    TT_ASSERT(hccl_copy_bypasses_cache(1048576));
    TT_ASSERT(!hccl_copy_output_bypasses_cache(1048575, 1u << 30)); /* the variable decides alone */
    TT_ASSERT(hccl_copy_output_bypasses_cache(1048576, 1));
    return tt_report("test_copy");
}
