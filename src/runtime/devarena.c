/*
 * devarena.c - small device allocations carved from shared memory (see devarena.h).
 *
 * Each chunk serves one size class: blocks are handed out by a bump index first,
 * then from the chunk's list of freed blocks (linked through their first word). The
 * chunks of a class that have a free block are on the class's list. A map from each
 * live block to its chunk lets free find the chunk.
 *
 * A chunk whose last block is freed goes back to the kernel, except one per class that
 * stays as a spare while communicators hold the shared-memory directory (a program
 * that allocates and frees a buffer per step would otherwise make and release a memfd
 * each time). When the last communicator lets go of the directory, sharemem.c calls
 * hccl_devarena_trim. Against a free that races with that: the free reads the count of
 * holders and keeps its spare under the lock; the trim runs after the count dropped
 * and takes the lock, so either the free sees 0 and releases the chunk itself or the
 * trim finds the spare.
 */
#include "runtime/devarena.h"

#include "runtime/runtime_int.h"
#include "runtime/sharemem.h"
#include "util/util.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define MIN_SHIFT 6 /* 64 B */
#define MAX_SHIFT 18
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)
/* A chunk holds at least this many bytes and CHUNK_MIN_BLOCKS blocks. */
#define CHUNK_MIN_BYTES ((size_t)256 << 10)
#define CHUNK_MIN_BLOCKS 4

_Static_assert(((size_t)1 << MAX_SHIFT) == HCCL_DEVARENA_MAX_BYTES, "the largest class is the arena's bound");

typedef struct chunk {
    struct chunk *prev, *next; /* on its class's list while it has a free block */
    char *base;
    size_t len, block;
    unsigned cls;
    uint32_t nblocks, live, bumped;
    void *freed; /* freed blocks, each holding the next one's address */
} chunk;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static chunk *room[NCLASS];  /* per class: the chunks with a free block */
static chunk *spare[NCLASS]; /* per class: an empty chunk kept (also on room) */
static hccl_rt_map owner;   /* live block -> its chunk */

static unsigned class_of(size_t size)
{
    unsigned s = MIN_SHIFT;
    while (((size_t)1 << s) < size) s++;
    return s - MIN_SHIFT;
}

/* mu held. */
static void link_room(chunk *c)
{
    c->prev = NULL;
    c->next = room[c->cls];
    if (c->next) c->next->prev = c;
    room[c->cls] = c;
}

/* mu held. */
static void unlink_room(chunk *c)
{
    if (c->prev) c->prev->next = c->next;
    else room[c->cls] = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* After fork the chunk is the child's private mapping, no longer in a directory. */
static void release_chunk(chunk *c)
{
    if (!hccl_sharemem_release(c->base, c->len)) munmap(c->base, c->len);
    hccl_free(c);
}

/* A new chunk of class cls, made without the lock (sharemem.c takes its own). */
static chunk *new_chunk(unsigned cls)
{
    const size_t block = (size_t)1 << (cls + MIN_SHIFT);
    const size_t len = block * CHUNK_MIN_BLOCKS > CHUNK_MIN_BYTES ? block * CHUNK_MIN_BLOCKS : CHUNK_MIN_BYTES;
    char *base = hccl_sharemem_alloc(len);
    if (!base) return NULL;
    chunk *c = hccl_calloc(1, sizeof *c);
    if (!c) {
        hccl_sharemem_release(base, len);
        return NULL;
    }
    c->base = base;
    c->len = len;
    c->block = block;
    c->cls = cls;
    c->nblocks = (uint32_t)(len / block);
    return c;
}

/* mu held: a block of a chunk on room[cls], or NULL; *fresh = never handed out. */
static void *take(unsigned cls, int *fresh)
{
    chunk *c = room[cls];
    if (!c) return NULL;
    void *p;
    if (c->freed) {
        p = c->freed;
        memcpy(&c->freed, p, sizeof c->freed);
        *fresh = 0;
    } else {
        p = c->base + (size_t)c->bumped++ * c->block;
        *fresh = 1;
    }
    if (hccl_rt_map_put(&owner, (uintptr_t)p, (uint64_t)(uintptr_t)c) != ACL_SUCCESS) {
        memcpy(p, &c->freed, sizeof c->freed); /* back on the free list */
        c->freed = p;
        return NULL;
    }
    if (spare[cls] == c) spare[cls] = NULL;
    if (++c->live == c->nblocks) unlink_room(c);
    return p;
}

void *hccl_devarena_alloc(size_t size)
{
    if (size == 0 || size > HCCL_DEVARENA_MAX_BYTES) return NULL;
    const unsigned cls = class_of(size);
    int fresh = 0;
    pthread_mutex_lock(&mu);
    void *p = take(cls, &fresh);
    pthread_mutex_unlock(&mu);
    if (!p) {
        chunk *c = new_chunk(cls);
        if (!c) return NULL;
        pthread_mutex_lock(&mu);
        link_room(c);
        p = take(cls, &fresh);
        /* The map could not grow: the heap's turn. Nobody else has seen the chunk (the
         * lock was held from linking it), so it goes back at once. */
        if (!p) unlink_room(c);
        pthread_mutex_unlock(&mu);
        if (!p) {
            release_chunk(c);
            return NULL;
        }
    }
    if (!fresh) memset(p, 0, size);
    return p;
}

int hccl_devarena_free(void *p)
{
    uint64_t v = 0;
    pthread_mutex_lock(&mu);
    if (!p || !hccl_rt_map_del(&owner, (uintptr_t)p, &v)) {
        pthread_mutex_unlock(&mu);
        return 0;
    }
    chunk *c = (chunk *)(uintptr_t)v;
    if (c->live == c->nblocks) link_room(c);
    memcpy(p, &c->freed, sizeof c->freed);
    c->freed = p;
    int release = --c->live == 0;
    if (release && !spare[c->cls] && hccl_sharemem_refs()) {
        spare[c->cls] = c; /* stays on room */
        release = 0;
    }
    if (release) unlink_room(c);
    pthread_mutex_unlock(&mu);
    if (release) release_chunk(c);
    return 1;
}

void hccl_devarena_trim(void)
{
    chunk *gone[NCLASS];
    unsigned n = 0;
    pthread_mutex_lock(&mu);
    for (unsigned k = 0; k < NCLASS; k++)
        if (spare[k]) {
            unlink_room(spare[k]);
            gone[n++] = spare[k];
            spare[k] = NULL;
        }
    pthread_mutex_unlock(&mu);
    for (unsigned i = 0; i < n; i++) release_chunk(gone[i]);
}

void hccl_devarena_atfork_prepare(void) { pthread_mutex_lock(&mu); }

void hccl_devarena_atfork_parent(void) { pthread_mutex_unlock(&mu); }

void hccl_devarena_atfork_child(void) { pthread_mutex_unlock(&mu); /* taken by this thread in prepare */ }
