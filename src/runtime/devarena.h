/*
 * devarena.h - small device allocations carved from shared memory.
 *
 * aclrtMalloc sizes up to HCCL_DEVARENA_MAX_BYTES would be too many memfds one by one,
 * so they are blocks of power-of-two size classes (64 B .. HCCL_DEVARENA_MAX_BYTES)
 * cut from shared chunks (sharemem.c: one directory entry and one descriptor per
 * chunk), which same-host peers map as they map large allocations: a collective then
 * reads a peer's small buffer in place instead of through the kernel.
 *
 * A block is zero when handed out (a fresh chunk is; a reused block is cleared over
 * the size asked for). A chunk goes back to the kernel when its last block is freed,
 * except one spare per class while communicators hold the directory (sharemem.c), so
 * a program that destroyed its communicators and freed its buffers holds no
 * descriptor of ours. The
 * chunks' bookkeeping is private memory; the lock is never held while sharemem.c is
 * called, so fork handlers cannot deadlock on the two.
 */
#ifndef HCCL_RUNTIME_DEVARENA_H
#define HCCL_RUNTIME_DEVARENA_H

#include <stddef.h>

#define HCCL_DEVARENA_MAX_BYTES ((size_t)256 << 10)

/* A zeroed block of at least size bytes (1..HCCL_DEVARENA_MAX_BYTES), 64-byte aligned,
 * in shared memory; NULL when shared memory is unavailable or disabled (the caller
 * falls back to the heap). */
void *hccl_devarena_alloc(size_t size);
/* Gives back a block of hccl_devarena_alloc; returns 0 (and does nothing) when p is
 * not one. */
int hccl_devarena_free(void *p);
/* Releases the spare chunks (sharemem.c, when the last communicator lets go of the
 * directory). */
void hccl_devarena_trim(void);
/* For memory.c's fork handlers (after fork each chunk is the child's private copy,
 * sharemem.c, and stays usable). */
void hccl_devarena_atfork_prepare(void);
void hccl_devarena_atfork_parent(void);
void hccl_devarena_atfork_child(void);

#endif
