/*
 * copy.c - the non-temporal copy and the cache size that decides when to use it; the
 * copy that avoids memcpy's slow offsets where it has them.
 */
#include "util/copy.h"

#include "util/param.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* The largest of the given sysconf cache sizes (0: none reported), read once. */
static size_t cache_size(size_t *cached, const int *names, size_t count)
{
    size_t v = __atomic_load_n(cached, __ATOMIC_RELAXED);
    if (v != (size_t)-1) return v;
    long best = 0;
    for (size_t i = 0; i < count; i++) {
        long s = sysconf(names[i]);
        if (s > best) best = s;
    }
    v = (size_t)best;
    __atomic_store_n(cached, v, __ATOMIC_RELAXED);
    return v;
}

size_t hccl_cache_bytes(void)
{
    static size_t cached = (size_t)-1;
#ifdef _SC_LEVEL1_DCACHE_SIZE
    static const int names[] = {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE,
                                _SC_LEVEL4_CACHE_SIZE};
    return cache_size(&cached, names, sizeof names / sizeof names[0]);
#else
    return cache_size(&cached, NULL, 0);
#endif
}

size_t hccl_cache_private_bytes(void)
{
    static size_t cached = (size_t)-1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    static const int names[] = {_SC_LEVEL2_CACHE_SIZE};
    return cache_size(&cached, names, 1);
#else
    return cache_size(&cached, NULL, 0);
#endif
}

HCCL_PARAM_INT_IN(copy_nt_bytes, "HCCL_COPY_NT_BYTES", -1, -1, INT64_MAX, HCCL_PARAM_CLAMP)

int hccl_copy_nt_rule(int64_t nt_bytes, size_t cache, size_t private_cache, uint64_t all, uint64_t mine)
{
    if (nt_bytes > 0) return all >= (uint64_t)nt_bytes;
    if (nt_bytes == 0) return 0;
    return (cache && all > cache / 4) || (private_cache && mine && mine >= private_cache);
}

int hccl_copy_bypasses_cache(uint64_t bytes)
{
    return hccl_copy_nt_rule(hccl_param_copy_nt_bytes(), hccl_cache_bytes(), 0, bytes, 0);
}

int hccl_copy_output_bypasses_cache(uint64_t all, uint64_t mine)
{
    return hccl_copy_nt_rule(hccl_param_copy_nt_bytes(), hccl_cache_bytes(), hccl_cache_private_bytes(), all, mine);
}

#if defined(__x86_64__)
/* 64 bytes (a cache line) per pass; d is 64-byte aligned by the caller. */
__attribute__((target("avx512f"))) static void stream_avx512(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i + 64 <= n; i += 64) _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512(s + i));
}

static void stream_sse2(char *d, const char *s, size_t n)
{
    for (size_t i = 0; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16)),
                c = _mm_loadu_si128((const __m128i *)(s + i + 32)), e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
}
#endif

static int use_avx512 = -1; /* -1: ask the CPU at the first copy */

void hccl_copy_nt_sse2_only(int on) { __atomic_store_n(&use_avx512, on ? 0 : -1, __ATOMIC_RELAXED); }

void hccl_copy_nt(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (64 - ((uintptr_t)d & 63)) & 63; /* whole destination lines */
    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t body = n & ~(size_t)63;
    int wide = __atomic_load_n(&use_avx512, __ATOMIC_RELAXED);
    if (wide < 0) {
        __builtin_cpu_init();
        wide = __builtin_cpu_supports("avx512f") != 0;
        __atomic_store_n(&use_avx512, wide, __ATOMIC_RELAXED);
    }
    if (wide) stream_avx512(d, s, body);
    else stream_sse2(d, s, body);
    _mm_sfence();
    memcpy(d + body, s + body, n - body);
#else
    memcpy(dst, src, n);
#endif
}

/* ---- hccl_copy_near ---------------------------------------------------------------- */

typedef unsigned char v16u __attribute__((vector_size(16), aligned(1), may_alias));
typedef unsigned char v16a __attribute__((vector_size(16), may_alias));

/* 16-byte loads and stores, the destination aligned; the loop must not be turned back
 * into a memcpy call by the compiler. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void vector_loop(unsigned char *d,
                                                                                      const unsigned char *s, size_t n)
{
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    while (n >= 64) {
        v16u a = *(const v16u *)s, b = *(const v16u *)(s + 16), c = *(const v16u *)(s + 32),
             e = *(const v16u *)(s + 48);
        *(v16a *)d = a;
        *(v16a *)(d + 16) = b;
        *(v16a *)(d + 32) = c;
        *(v16a *)(d + 48) = e;
        d += 64;
        s += 64;
        n -= 64;
    }
    memcpy(d, s, n);
}

#define NEAR_PROBE_BYTES (32u << 10)
static int near_loops = -1; /* -1: not measured yet */
static int near_forced = -1;

/* Best of 5 memcpy's of NEAR_PROBE_BYTES, the destination `off` bytes after a page. */
static uint64_t probe_ns(unsigned char *d, const unsigned char *s, size_t off)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 6; i++) {
        uint64_t t = hccl_now_ns();
        memcpy(d + off, s, NEAR_PROBE_BYTES);
        __asm__ volatile("" ::"r"(d) : "memory");
        t = hccl_now_ns() - t;
        if (i && t < best) best = t; /* the first pass warms the lines */
    }
    return best;
}

static int measure_near(void)
{
    const size_t bytes = NEAR_PROBE_BYTES + 4096;
    unsigned char *s = aligned_alloc(4096, bytes), *d = aligned_alloc(4096, bytes);
    int slow = 0;
    if (s && d) {
        memset(s, 1, bytes);
        memset(d, 2, bytes);
        uint64_t even = probe_ns(d, s, 0), near = probe_ns(d, s, 32);
        /* Slow is 25x or more there; noise is a preemption, which best-of-5 drops. */
        slow = near > 4 * even + 2000;
    }
    free(s);
    free(d);
    return slow;
}

void hccl_copy_near_force(int loop) { __atomic_store_n(&near_forced, loop, __ATOMIC_RELAXED); }

int hccl_copy_near_loops(void)
{
    int f = __atomic_load_n(&near_forced, __ATOMIC_RELAXED);
    if (f >= 0) return f;
    int v = __atomic_load_n(&near_loops, __ATOMIC_RELAXED);
    if (v < 0) { /* threads that race both measure: either answer copies right */
        v = measure_near();
        __atomic_store_n(&near_loops, v, __ATOMIC_RELAXED);
    }
    return v;
}

void hccl_copy_near(void *dst, const void *src, size_t n)
{
    size_t delta = (size_t)((uintptr_t)dst - (uintptr_t)src) & 4095;
    if (n < 1024 || delta == 0 || delta >= 64 || !hccl_copy_near_loops()) memcpy(dst, src, n);
    else vector_loop(dst, src, n);
}
