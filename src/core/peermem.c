/*
 * peermem.c - mapping a same-host peer's shared device memory (see peermem.h).
 */
#include "core/peermem.h"

#include "runtime/sharemem.h"
#include "util/log.h"
#include "util/util.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE 16

typedef struct cached {
    uint32_t gen; /* 0: empty */
    uint32_t slot;
    uint64_t base, len;
    char *local;
} cached;

struct hccl_peermem {
    uint32_t pid;
    const hccl_sharemem_dir *dir;
    pthread_mutex_t mu;
    cached c[CACHE];
    unsigned next; /* round-robin victim */
};

/* Map the peer's descriptor fd (at least len bytes) with prot; NULL on failure. */
static void *map_fd_of(uint32_t pid, int32_t fd, size_t len, int prot)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/fd/%d", pid, fd);
    int f = open(path, (prot & PROT_WRITE ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (f < 0) return NULL;
    struct stat st;
    void *p = NULL;
    if (fstat(f, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= len) {
        p = hccl_mmap_shared_aligned(f, len, prot); /* the owner's huge pages, one entry each */
    }
    close(f);
    return p;
}

hccl_peermem *hccl_peermem_open(uint32_t pid, int32_t dirfd)
{
    if (!pid || dirfd < 0) return NULL;
    const hccl_sharemem_dir *d = map_fd_of(pid, dirfd, HCCL_SHAREMEM_DIR_BYTES, PROT_READ);
    if (!d) return NULL;
    if (__atomic_load_n(&d->magic, __ATOMIC_ACQUIRE) != HCCL_SHAREMEM_MAGIC || d->version != HCCL_SHAREMEM_VERSION ||
        d->cap != HCCL_SHAREMEM_CAP) {
        munmap((void *)d, HCCL_SHAREMEM_DIR_BYTES);
        return NULL;
    }
    hccl_peermem *m = hccl_calloc(1, sizeof *m);
    if (!m) {
        munmap((void *)d, HCCL_SHAREMEM_DIR_BYTES);
        return NULL;
    }
    m->pid = pid;
    m->dir = d;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

/* Sequence-lock reader: run body(entry copy) over a stable snapshot of the
 * directory slots [from, to); 1 when the snapshot was stable. */
static int read_stable(const hccl_sharemem_dir *d, uint32_t from, uint32_t to, uint64_t remote, size_t bytes,
                       hccl_sharemem_entry *hit, uint32_t *slot)
{
    for (int tries = 0; tries < 10000; tries++) {
        uint64_t s1 = __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1) {
            sched_yield();
            continue;
        }
        uint32_t used = __atomic_load_n(&d->used, __ATOMIC_RELAXED);
        if (to > used) to = used;
        if (to > d->cap) to = d->cap;
        hit->gen = 0;
        for (uint32_t i = from; i < to; i++) {
            hccl_sharemem_entry e;
            e.base = __atomic_load_n(&d->e[i].base, __ATOMIC_RELAXED);
            e.len = __atomic_load_n(&d->e[i].len, __ATOMIC_RELAXED);
            e.fd = __atomic_load_n(&d->e[i].fd, __ATOMIC_RELAXED);
            e.gen = __atomic_load_n(&d->e[i].gen, __ATOMIC_RELAXED);
            if (e.gen && e.base <= remote && bytes <= e.len && remote - e.base <= e.len - bytes) {
                *hit = e;
                *slot = i;
                break;
            }
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&d->seq, __ATOMIC_RELAXED) == s1) return 1;
    }
    return 0;
}

/* The generation now in slot (0 when free or unreadable). */
static uint32_t gen_of(const hccl_sharemem_dir *d, uint32_t slot)
{
    for (int tries = 0; tries < 10000; tries++) {
        uint64_t s1 = __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1) {
            sched_yield();
            continue;
        }
        uint32_t g = __atomic_load_n(&d->e[slot].gen, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&d->seq, __ATOMIC_RELAXED) == s1) return g;
    }
    return 0;
}

static void drop(cached *c)
{
    munmap(c->local, c->len);
    memset(c, 0, sizeof *c);
}

void *hccl_peermem_ptr(hccl_peermem *m, uint64_t remote, size_t bytes)
{
    if (!m) return NULL;
    void *out = NULL;
    pthread_mutex_lock(&m->mu);
    /* A cached mapping whose allocation is still the same (same generation). */
    for (unsigned i = 0; i < CACHE && !out; i++) {
        cached *c = &m->c[i];
        if (!c->gen || remote < c->base || bytes > c->len || remote - c->base > c->len - bytes) continue;
        if (gen_of(m->dir, c->slot) == c->gen) out = c->local + (remote - c->base);
        else drop(c);
    }
    if (!out) {
        hccl_sharemem_entry e = {0};
        uint32_t slot = 0;
        if (read_stable(m->dir, 0, HCCL_SHAREMEM_CAP, remote, bytes, &e, &slot) && e.gen) {
            /* Forget mappings of allocations the peer has freed since. */
            for (unsigned i = 0; i < CACHE; i++)
                if (m->c[i].gen && gen_of(m->dir, m->c[i].slot) != m->c[i].gen) drop(&m->c[i]);
            char *local = map_fd_of(m->pid, e.fd, e.len, PROT_READ | PROT_WRITE);
            /* The descriptor may have been reused between our read and the open. */
            if (local && gen_of(m->dir, slot) != e.gen) {
                munmap(local, e.len);
                local = NULL;
            }
            if (local) {
                cached *c = NULL;
                for (unsigned i = 0; i < CACHE && !c; i++)
                    if (!m->c[i].gen) c = &m->c[i];
                if (!c) {
                    c = &m->c[m->next++ % CACHE];
                    drop(c);
                }
                *c = (cached){e.gen, slot, e.base, e.len, local};
                out = local + (remote - e.base);
                HCCL_TRACE(NET, "mapped %llu bytes of pid %u's device memory at %#llx", (unsigned long long)e.len,
                           m->pid, (unsigned long long)e.base);
            }
        }
    }
    pthread_mutex_unlock(&m->mu);
    return out;
}

void hccl_peermem_close(hccl_peermem *m)
{
    if (!m) return;
    for (unsigned i = 0; i < CACHE; i++)
        if (m->c[i].gen) drop(&m->c[i]);
    munmap((void *)m->dir, HCCL_SHAREMEM_DIR_BYTES);
    pthread_mutex_destroy(&m->mu);
    hccl_free(m);
}
