/*
 * sharemem.h - device memory that other processes of the host can map.
 *
 * Large aclrtMalloc allocations, and the chunks small ones are cut from (devarena.c),
 * are memfd-backed shared mappings, listed in a per-process directory (itself a small
 * memfd) that peers map read-only. A peer that
 * may read this process's memory anyway (the cross-memory-attach probe passed) opens
 * /proc/<pid>/fd/<fd> of the directory and of the allocations it needs and maps them,
 * so same-host collectives between processes read each other's buffers through
 * pointers, as thread ranks do, instead of copying through the kernel.
 *
 * Directory: a header and HCCL_SHAREMEM_CAP entries {base, len, fd, gen}; gen != 0
 * marks a live allocation (gens are never reused within a process). The owner
 * updates it under a sequence lock (seq odd while writing), so readers in other
 * processes retry until they see a stable, even seq.
 *
 * After fork the child turns each shared allocation into a private copy at the same
 * address (its own memory, as with ordinary mappings) and starts without a directory.
 */
#ifndef HCCL_RUNTIME_SHAREMEM_H
#define HCCL_RUNTIME_SHAREMEM_H

#include <stddef.h>
#include <stdint.h>

#define HCCL_SHAREMEM_MAGIC 0x48434d44u /* "HCMD" */
#define HCCL_SHAREMEM_VERSION 1u
#define HCCL_SHAREMEM_CAP 1024u

typedef struct hccl_sharemem_entry {
    uint64_t base;
    uint64_t len; /* mapped length (page multiple) */
    int32_t fd;   /* in the owner process */
    uint32_t gen; /* 0: free slot */
} hccl_sharemem_entry;

typedef struct hccl_sharemem_dir {
    uint32_t magic;
    uint32_t version;
    uint64_t seq;
    uint32_t cap;
    uint32_t used; /* slots at or above this index have never been used */
    uint64_t pad2;
    hccl_sharemem_entry e[];
} hccl_sharemem_dir;

#define HCCL_SHAREMEM_DIR_BYTES (sizeof(hccl_sharemem_dir) + HCCL_SHAREMEM_CAP * sizeof(hccl_sharemem_entry))

/* For memory.c: a zeroed shared mapping of len bytes (page multiple), or NULL when
 * shared memory is unavailable or disabled (the caller falls back to a private one). */
void *hccl_sharemem_alloc(size_t len);
/* For memory.c: unmap p (len bytes) when it is a shared allocation; returns 1 if it
 * was, 0 if not (the caller unmaps it as an ordinary mapping). */
int hccl_sharemem_release(void *p, size_t len);

/* For libhccl (exported by libascendcl, not part of the public API): take a
 * reference on this process's directory (created on first use) and return its
 * descriptor, or -1 when there is none (HCCL_SHARE_DEVICE_MEM=0, HCCL_SHM_DISABLE=1,
 * ThreadSanitizer; then nothing is to be released). The directory is closed when no
 * reference and no shared allocation is left, so a program that destroyed its
 * communicators and freed its buffers holds no descriptor of ours. */
int aclrtInternalShareDirAcquire(void);
void aclrtInternalShareDirRelease(void);
/* For devarena.c: how many communicators hold the directory now (read without a lock). */
unsigned hccl_sharemem_refs(void);

#endif
