/*
 * test_peermem.c - shared device memory between processes (runtime/sharemem.c,
 * core/peermem.c): a child maps its parent's aclrtMalloc buffers and sees the
 * parent's later writes; after fork the child's own copies are private; a freed
 * buffer is never returned, a reallocated one is remapped; small aclrtMalloc buffers
 * (blocks of runtime/devarena.c) are mapped too; ranges that leave an allocation and
 * host (heap) allocations give NULL; an allocation above RLIMIT_FSIZE is private
 * memory; allocations of whole huge pages are 2 MiB aligned, in the owner and in the
 * peer's mapping, and where the kernel collapses shared memory into huge pages
 * (MADV_COLLAPSE) they are mapped with them.
 */
#include "tinytest.h"

#include "core/peermem.h"
#include "runtime/sharemem.h"
#include "util/util.h"

#include <acl/acl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (1u << 20)
#define HUGE_SZ (5u << 20) /* two whole huge pages, and 1 MiB of 4 KiB ones */
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void say(int fd, char c) { (void)!write(fd, &c, 1); }
static char hear(int fd)
{
    char c = 0;
    (void)!read(fd, &c, 1);
    return c;
}

/* Child side; returns the number of failed checks. */
static int child(uint32_t ppid, int dirfd, uint64_t *buf, uint64_t *small, uint64_t *host, int to_parent,
                 int from_parent)
{
    int bad = 0;
    /* Our copy of buf is private now: writing it must not reach the parent. */
    buf[1] = 0xdeadbeef;
    hccl_peermem *m = hccl_peermem_open(ppid, dirfd);
    if (!m) return 100;
    uint64_t *p = hccl_peermem_ptr(m, (uint64_t)(uintptr_t)buf, BIG);
    if (!p) bad++;
    else {
        if (p[0] != 42) bad++;
        if (p[1] != 43) bad++; /* the parent's value, not ours */
    }
    if (hccl_peermem_ptr(m, (uint64_t)(uintptr_t)buf + 8, BIG) != NULL) bad++;     /* runs past the end */
    if (hccl_peermem_ptr(m, (uint64_t)(uintptr_t)buf - 8, 16) != NULL) bad++;      /* starts before it */
    if (hccl_peermem_ptr(m, (uint64_t)(uintptr_t)host, 8) != NULL) bad++;          /* heap allocation */
    const uint64_t *q = hccl_peermem_ptr(m, (uint64_t)(uintptr_t)small, 64);       /* a small block */
    if (!q || q[0] != 99 || q[7] != 0) bad++;
    uint64_t *mid = hccl_peermem_ptr(m, (uint64_t)(uintptr_t)(buf + 1000), 80);
    if (!p || mid != p + 1000) bad++;
    say(to_parent, 'a');
    /* The parent writes after our mapping exists: we see it. */
    if (hear(from_parent) != 'b') bad++;
    p = hccl_peermem_ptr(m, (uint64_t)(uintptr_t)buf, 8);
    if (!p || p[0] != 4242) bad++;
    say(to_parent, 'c');
    /* The parent freed buf and allocated buf2 (maybe at the same address). */
    if (hear(from_parent) != 'd') bad++;
    uint64_t *buf2;
    if (read(from_parent, &buf2, sizeof buf2) != (ssize_t)sizeof buf2) bad++;
    p = hccl_peermem_ptr(m, (uint64_t)(uintptr_t)buf2, HUGE_SZ);
    if (!p || p[0] != 7 || p[HUGE_SZ / 8 - 1] != 8) bad++;
    if ((uintptr_t)p % HUGE_PAGE) bad++; /* where the owner's huge pages can be mapped */
    if ((void *)buf2 != (void *)buf && hccl_peermem_ptr(m, (uint64_t)(uintptr_t)buf, 8) != NULL) bad++;
    hccl_peermem_close(m);
    return bad;
}

/* RLIMIT_FSIZE (ulimit -f) below an allocation's size: aclrtMalloc still succeeds,
 * with private memory (sizing the memfd used to raise SIGXFSZ, which killed the
 * process). In a child, whose directory is new (below the limit too). */
static void test_fsize_limit(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {16384, 16384};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        uint64_t *p = NULL;
        if (aclrtMalloc((void **)&p, BIG, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS || !p) _exit(11);
        if (p[0] != 0 || p[BIG / 8 - 1] != 0) _exit(12);
        p[0] = p[BIG / 8 - 1] = 5;
        _exit(aclrtFree(p) == ACL_SUCCESS ? 0 : 13);
    }
    TT_ASSERT_CHILD_OK(pid);
}

/* kB of field (e.g. "ShmemPmdMapped:") in /proc/self/smaps for the mapping holding
 * addr; -1 when not found. */
static long smaps_kb(const void *addr, const char *field)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[256];
    int in = 0;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (in && strncmp(line, field, strlen(field)) == 0) {
            kb = strtol(line + strlen(field), NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* An allocation of whole huge pages: 2 MiB aligned, zero-filled, and (where this
 * kernel collapses a shared mapping into huge pages, asked of a memfd of our own
 * first) mapped with them. */
static void test_huge_pages(void)
{
    int probe_fd = memfd_create("probe", MFD_CLOEXEC);
    TT_ASSERT(probe_fd >= 0 && ftruncate(probe_fd, 4 << 20) == 0);
    char *probe = hccl_mmap_shared_aligned(probe_fd, 4 << 20, PROT_READ | PROT_WRITE);
    TT_ASSERT(probe && (uintptr_t)probe % HUGE_PAGE == 0);
    const int collapses = hccl_collapse_huge(probe, 4 << 20);
    if (collapses) TT_ASSERT(smaps_kb(probe, "ShmemPmdMapped:") == 4096);
    TT_ASSERT(probe[0] == 0 && probe[(4 << 20) - 1] == 0);
    munmap(probe, 4 << 20);
    close(probe_fd);

    uint64_t *p = NULL;
    TT_ASSERT_EQ(aclrtMalloc((void **)&p, HUGE_SZ, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    TT_ASSERT((uintptr_t)p % HUGE_PAGE == 0);
    uint64_t sum = 0;
    for (size_t i = 0; i < HUGE_SZ / 8; i += 509) sum |= p[i];
    TT_ASSERT(sum == 0 && p[HUGE_SZ / 8 - 1] == 0);
    const char *env = getenv("HCCL_DEVICE_MEM_HUGE_PAGES");
    const int off = env && strcmp(env, "0") == 0;
    if (off) TT_ASSERT_EQ(smaps_kb(p, "ShmemPmdMapped:"), 0); /* HCCL_DEVICE_MEM_HUGE_PAGES=0: 4 KiB pages */
    else if (collapses) TT_ASSERT_EQ(smaps_kb(p, "ShmemPmdMapped:"), 4096);
    p[0] = 1;
    p[HUGE_SZ / 8 - 1] = 2;
    TT_ASSERT(p[0] == 1 && p[HUGE_SZ / 8 - 1] == 2);
    TT_ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
}

int main(void)
{
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    uint64_t *buf = NULL, *small = NULL, *host = NULL;
    TT_ASSERT_EQ(aclrtMalloc((void **)&buf, BIG, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMalloc((void **)&small, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMallocHost((void **)&host, 64), ACL_SUCCESS);
    test_fsize_limit();
    int dirfd = aclrtInternalShareDirAcquire();
#ifdef __SANITIZE_THREAD__
    TT_ASSERT(dirfd < 0); /* no shared device memory under TSan */
    return tt_report("test_peermem");
#endif
    const char *env = getenv("HCCL_SHARE_DEVICE_MEM");
    if (env && strcmp(env, "0") == 0) {
        TT_ASSERT(dirfd < 0);
        TT_ASSERT(hccl_peermem_open(getpid(), dirfd) == NULL);
        return tt_report("test_peermem");
    }
    TT_ASSERT(dirfd >= 0);
    test_huge_pages();
    TT_ASSERT(buf[0] == 0 && buf[BIG / 8 - 1] == 0); /* zero-filled */
    buf[0] = 42;
    buf[1] = 43;
    TT_ASSERT(small[0] == 0 && small[7] == 0); /* zero-filled */
    small[0] = 99;
    TT_ASSERT(hccl_peermem_open(getpid(), -1) == NULL);
    TT_ASSERT(hccl_peermem_open(getpid(), 0) == NULL); /* stdin is no directory */

    int up[2], down[2];
    TT_ASSERT(pipe(up) == 0 && pipe(down) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(child((uint32_t)getppid(), dirfd, buf, small, host, up[1], down[0]));
    }
    close(up[1]); /* a child that fails early gives EOF, not a hang */
    close(down[0]);
    TT_ASSERT(hear(up[0]) == 'a');
    TT_ASSERT_EQ(buf[1], 43); /* the child's write to its copy stayed there */
    buf[0] = 4242;
    say(down[1], 'b');
    TT_ASSERT(hear(up[0]) == 'c');
    TT_ASSERT_EQ(aclrtFree(buf), ACL_SUCCESS);
    uint64_t *buf2 = NULL;
    TT_ASSERT_EQ(aclrtMalloc((void **)&buf2, HUGE_SZ, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    buf2[0] = 7;
    buf2[HUGE_SZ / 8 - 1] = 8;
    say(down[1], 'd');
    (void)!write(down[1], &buf2, sizeof buf2);
    int st = 0;
    waitpid(pid, &st, 0);
    TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d failed check(s)", WEXITSTATUS(st));
    TT_ASSERT_EQ(aclrtFree(buf2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtFree(small), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
    /* Nothing holds the directory any more: its descriptor is closed. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", dirfd);
    TT_ASSERT(access(path, F_OK) == 0);
    aclrtInternalShareDirRelease();
    TT_ASSERT(access(path, F_OK) != 0);
    return tt_report("test_peermem");
}
