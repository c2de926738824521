/*
 * copy.h - copies for data that will not stay in cache: stores that bypass it.
 */
#ifndef HCCL_UTIL_COPY_H
#define HCCL_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of the largest cache the CPU reports (sysconf), 0 when it reports none. */
size_t hccl_cache_bytes(void);

/* Whether copies writing `bytes` in all on this host (every rank's destinations of one
 * operation) should bypass the cache: from HCCL_COPY_NT_BYTES (docs/env.md), by
 * default more than a quarter of hccl_cache_bytes(). A memcpy through the cache then
 * evicts what it wrote before, and reads every destination line first. */
int hccl_copy_bypasses_cache(uint64_t bytes);
/* HCCL_COPY_NT_BYTES (-1 when unset); read it on an API call's thread before the
 * library's own threads may ask hccl_copy_bypasses_cache. */
int64_t hccl_param_copy_nt_bytes(void);

/* memcpy (no overlap) with non-temporal stores where the CPU has them (x86-64),
 * ordered before the caller's later stores (a store fence); a plain memcpy elsewhere. */
void hccl_copy_nt(void *dst, const void *src, size_t n);
/* Test hook: 1 = the 16-byte (SSE2) stores even where AVX-512 exists; 0 = ask the CPU. */
void hccl_copy_nt_sse2_only(int on);

#endif
