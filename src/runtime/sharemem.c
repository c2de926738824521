/*
 * sharemem.c - memfd-backed device memory and its directory (see sharemem.h).
 */
#include "runtime/sharemem.h"

#include "runtime/devarena.h"
#include "util/param.h"
#include "util/util.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* 1 (default): aclrtMalloc memory is shared mappings (for small allocations,
 * devarena.c's chunks) that same-host peers may map; 0: private memory (peers copy
 * through the kernel). */
HCCL_PARAM_INT(share_device_mem, "HCCL_SHARE_DEVICE_MEM", 1)
HCCL_PARAM_INT(shm_disable_rt, "HCCL_SHM_DISABLE", 0)
/* 1 (default): shared allocations are backed by 2 MiB pages where whole ones fit. On a
 * guest whose hypervisor shadows page tables, a process's first access to a 4 KiB page
 * of a shared mapping cost 2-16 us (the more, the more processes fault at once), to one
 * of a huge page 0.05-0.7 us a 4 KiB page: a peer reading a buffer region for the first
 * time (each size of a sweep) pays that per page (docs/performance.md). */
HCCL_PARAM_INT(device_mem_huge, "HCCL_DEVICE_MEM_HUGE_PAGES", 1)

static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
static hccl_sharemem_dir *dir; /* NULL until first use, or after fork in the child */
static int dir_fd = -1;
static int dir_failed;
static uint32_t next_gen = 1;
static unsigned dir_refs;   /* communicators holding the directory (atomic: devarena.c reads it) */
static unsigned dir_allocs; /* live shared allocations */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static int enabled(void)
{
#ifdef __SANITIZE_THREAD__
    return 0; /* TSan cannot follow memory shared with another mapping */
#else
    return hccl_param_share_device_mem() != 0 && hccl_param_shm_disable_rt() == 0;
#endif
}

static void prefork(void) { pthread_mutex_lock(&dir_mu); }
static void postfork_parent(void) { pthread_mutex_unlock(&dir_mu); }

/* The child must not share its parent's memory: each shared allocation becomes a
 * private copy at the same address, and the child has no directory until it needs
 * one. */
static void postfork_child(void)
{
    if (dir) {
        for (uint32_t i = 0; i < dir->cap; i++) {
            hccl_sharemem_entry *e = &dir->e[i];
            if (!e->gen) continue;
            void *base = (void *)(uintptr_t)e->base;
            void *tmp = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (tmp != MAP_FAILED) {
                memcpy(tmp, base, e->len);
                if (mremap(tmp, e->len, e->len, MREMAP_MAYMOVE | MREMAP_FIXED, base) == MAP_FAILED)
                    munmap(tmp, e->len); /* keeps sharing with the parent: the best left */
            }
            close(e->fd);
        }
        munmap(dir, HCCL_SHAREMEM_DIR_BYTES);
        dir = NULL;
    }
    if (dir_fd >= 0) close(dir_fd);
    dir_fd = -1;
    dir_failed = 0;
    __atomic_store_n(&dir_refs, 0, __ATOMIC_SEQ_CST);
    dir_allocs = 0;
    pthread_mutex_unlock(&dir_mu);
}

/* dir_mu held: close the directory when nothing needs it any more. */
static void dir_close_if_unused(void)
{
    if (!dir || __atomic_load_n(&dir_refs, __ATOMIC_SEQ_CST) || dir_allocs) return;
    munmap(dir, HCCL_SHAREMEM_DIR_BYTES);
    close(dir_fd);
    dir = NULL;
    dir_fd = -1;
}

static void install_atfork(void) { pthread_atfork(prefork, postfork_parent, postfork_child); }

/* dir_mu held. */
static int dir_open(void)
{
    if (dir) return 1;
    if (dir_failed) return 0;
    pthread_once(&atfork_once, install_atfork);
    int fd = memfd_create("hccl-dir", MFD_CLOEXEC);
    if (fd >= 0 && hccl_shm_file_size(fd, HCCL_SHAREMEM_DIR_BYTES, 0) == 0) {
        void *p = mmap(NULL, HCCL_SHAREMEM_DIR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            dir = p;
            dir->version = HCCL_SHAREMEM_VERSION;
            dir->cap = HCCL_SHAREMEM_CAP;
            __atomic_store_n(&dir->magic, HCCL_SHAREMEM_MAGIC, __ATOMIC_RELEASE);
            dir_fd = fd;
            return 1;
        }
    }
    if (fd >= 0) close(fd);
    dir_failed = 1;
    return 0;
}

/* Sequence lock, writer side (dir_mu held): odd while the entries change. */
static void seq_begin(void)
{
    __atomic_store_n(&dir->seq, dir->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void seq_end(void) { __atomic_store_n(&dir->seq, dir->seq + 1, __ATOMIC_RELEASE); }

/* A memfd is sparse and MAP_SHARED escapes the kernel's overcommit heuristic, so a
 * request beyond RAM + swap would "succeed" here; leave it to the anonymous mapping,
 * which refuses it as a real device would (ACL_ERROR_BAD_ALLOC). */
static int fits_memory(size_t len)
{
    struct sysinfo si;
    if (sysinfo(&si) != 0) return 1;
    unsigned long long total = ((unsigned long long)si.totalram + si.totalswap) * si.mem_unit;
    return (unsigned long long)len <= total;
}

void *hccl_sharemem_alloc(size_t len)
{
    if (!enabled() || !fits_memory(len)) return NULL;
    pthread_mutex_lock(&dir_mu);
    void *p = NULL;
    uint32_t slot = HCCL_SHAREMEM_CAP;
    if (dir_open())
        for (uint32_t i = 0; i < dir->cap; i++)
            if (!dir->e[i].gen) {
                slot = i;
                break;
            }
    int fd = slot < HCCL_SHAREMEM_CAP ? memfd_create("hccl-dev", MFD_CLOEXEC) : -1;
    /* Each shared allocation holds a descriptor: leave half of them to the program. */
    struct rlimit rl;
    if (fd >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (rlim_t)fd >= rl.rlim_cur / 2) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0 && hccl_shm_file_size(fd, len, 0) == 0) { /* else private memory */
        p = hccl_mmap_shared_aligned(fd, len, PROT_READ | PROT_WRITE);
        if (p && hccl_param_device_mem_huge()) (void)hccl_collapse_huge(p, len);
    }
    if (p) {
        seq_begin();
        dir->e[slot] = (hccl_sharemem_entry){(uint64_t)(uintptr_t)p, len, fd, next_gen++};
        if (slot >= dir->used) dir->used = slot + 1;
        if (!next_gen) next_gen = 1;
        seq_end();
        dir_allocs++;
    } else if (fd >= 0) {
        close(fd);
    }
    dir_close_if_unused(); /* opened for nothing */
    pthread_mutex_unlock(&dir_mu);
    return p;
}

int hccl_sharemem_release(void *p, size_t len)
{
    int found = 0;
    pthread_mutex_lock(&dir_mu);
    for (uint32_t i = 0; dir && i < dir->cap; i++) {
        hccl_sharemem_entry *e = &dir->e[i];
        if (!e->gen || e->base != (uint64_t)(uintptr_t)p) continue;
        int fd = e->fd;
        seq_begin();
        memset(e, 0, sizeof *e);
        seq_end();
        munmap(p, len);
        close(fd);
        found = 1;
        dir_allocs--;
        dir_close_if_unused();
        break;
    }
    pthread_mutex_unlock(&dir_mu);
    return found;
}

int aclrtInternalShareDirAcquire(void)
{
    if (!enabled()) return -1;
    pthread_mutex_lock(&dir_mu);
    int fd = -1;
    if (dir_open()) {
        fd = dir_fd;
        __atomic_add_fetch(&dir_refs, 1, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&dir_mu);
    return fd;
}

void aclrtInternalShareDirRelease(void)
{
    pthread_mutex_lock(&dir_mu);
    const unsigned left = dir_refs ? __atomic_sub_fetch(&dir_refs, 1, __ATOMIC_SEQ_CST) : 0;
    dir_close_if_unused();
    pthread_mutex_unlock(&dir_mu);
    /* The last communicator is gone: the small-allocation arena's spare chunks go too
     * (devarena.h), and with them the directory when nothing else holds it. */
    if (!left) hccl_devarena_trim();
}

unsigned hccl_sharemem_refs(void) { return __atomic_load_n(&dir_refs, __ATOMIC_SEQ_CST); }
