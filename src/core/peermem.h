/*
 * peermem.h - map the shared device memory of another process of this host.
 *
 * The peer publishes its memfd-backed allocations in a directory
 * (runtime/sharemem.h). We map the directory once, and each allocation the first
 * time an algorithm asks for an address inside it (opening /proc/<pid>/fd/<fd>,
 * which needs the same permission as the cross-memory attach we otherwise use).
 * Mappings are cached per peer and dropped when the peer frees the allocation (its
 * generation leaves the directory) or when the cache is full.
 */
#ifndef HCCL_CORE_PEERMEM_H
#define HCCL_CORE_PEERMEM_H

#include <stddef.h>
#include <stdint.h>

typedef struct hccl_peermem hccl_peermem;

/* Map the directory of process pid, whose descriptor there is dirfd; NULL when it
 * cannot be (then every lookup must go through cross-memory attach). */
hccl_peermem *hccl_peermem_open(uint32_t pid, int32_t dirfd);
/* Local address of the peer's bytes [remote, remote + bytes), or NULL when they do
 * not lie inside one shared allocation of the peer or cannot be mapped. */
void *hccl_peermem_ptr(hccl_peermem *m, uint64_t remote, size_t bytes);
void hccl_peermem_close(hccl_peermem *m);

#endif
