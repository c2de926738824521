/*
 * copy.h - copies for data that will not stay in cache: stores that bypass it.
 */
#ifndef HCCL_UTIL_COPY_H
#define HCCL_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Bytes of the largest cache the CPU reports (sysconf), 0 when it reports none. */
size_t hccl_cache_bytes(void);
/* Bytes of a core's private cache: the level 2 cache the CPU reports (sysconf), 0 when
 * it reports none. */
size_t hccl_cache_private_bytes(void);

/* Whether copies writing `bytes` in all on this host (every rank's destinations of one
 * operation) should bypass the cache: from HCCL_COPY_NT_BYTES (docs/env.md), by
 * default more than a quarter of hccl_cache_bytes(). A memcpy through the cache then
 * evicts what it wrote before, and reads every destination line first. */
int hccl_copy_bypasses_cache(uint64_t bytes);
/* An AllGather's or AlltoAll's copies: each rank writes `mine` bytes of output that
 * the operation does not read again, `all` on the host in all. Bypass the cache as
 * hccl_copy_bypasses_cache(all) says, and by default also once one rank's output fills
 * its core's private cache: through the cache, that output would push out the inputs
 * the copies still read, and every line of it would be read first. */
int hccl_copy_output_bypasses_cache(uint64_t all, uint64_t mine);
/* The rule behind both, on explicit values (nt_bytes: HCCL_COPY_NT_BYTES or -1; cache,
 * private_cache: as above, 0 = unknown; mine = 0: no per-rank rule). */
int hccl_copy_nt_rule(int64_t nt_bytes, size_t cache, size_t private_cache, uint64_t all, uint64_t mine);
/* HCCL_COPY_NT_BYTES (-1 when unset); read it on an API call's thread before the
 * library's own threads may ask hccl_copy_bypasses_cache. */
int64_t hccl_param_copy_nt_bytes(void);

/* memset(p, 0, n) for a small struct that a hot path clears on every call: 16-byte
 * stores where the CPU has them (x86-64), where the compiler would emit a string
 * store ("rep stos") whose start-up costs about 10 ns, a tenth of a whole call. */
static inline void hccl_zero_small(void *p, size_t n)
{
#if defined(__SSE2__)
    char *c = p;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(c + i), _mm_setzero_si128());
        __asm__("" ::: "memory"); /* keeps the compiler from turning the loop back into a memset */
    }
    for (; i < n; i++) c[i] = 0;
#else
    memset(p, 0, n);
#endif
}

/* memcpy (no overlap), except where this process's memcpy is pathologically slow for
 * a destination 1..63 bytes after its source modulo 4096: glibc 2.36's "rep movsb"
 * path (2 KiB up to the non-temporal threshold) ran at about 1 GB/s instead of 25-30
 * on an AMD Zen host. Such copies then take a 16-byte vector loop (22-30 GB/s in
 * cache there). Whether memcpy is slow is measured once per process (a 32 KiB copy
 * at both alignments, best of 5): on a host where it is not (the reference machine's
 * Zen 4: 80-105 GB/s at those offsets), the loop costs 1.1-1.5x in cache and more
 * from memory (4 ranks on 2 cores, one-round 512 KiB AlltoAll: 141-146 us a call
 * with it, 128-134 with memcpy). The shm rings copy with it (their messages start 32
 * bytes into a line, their sources and destinations mostly on line or page
 * boundaries). */
void hccl_copy_near(void *dst, const void *src, size_t n);
/* Test hook: 1 = the vector loop wherever the offset is 1..63, 0 = memcpy always,
 * -1 = measure (the default). */
void hccl_copy_near_force(int loop);
/* Whether the measurement found memcpy slow at those offsets (measures if not yet). */
int hccl_copy_near_loops(void);

/* memcpy (no overlap) with non-temporal stores where the CPU has them (x86-64),
 * ordered before the caller's later stores (a store fence); a plain memcpy elsewhere. */
void hccl_copy_nt(void *dst, const void *src, size_t n);
/* Test hook: 1 = the 16-byte (SSE2) stores even where AVX-512 exists; 0 = ask the CPU. */
void hccl_copy_nt_sse2_only(int on);

#endif
