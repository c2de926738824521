/*
 * test_eintr.c - the helpers of util.c under signals that interrupt system calls.
 *
 * An application's periodic timer (a profiler's ITIMER_PROF, Python's
 * signal.setitimer) with a handler installed without SA_RESTART makes slow system
 * calls fail with EINTR. Kernels before the change to fatal signals only stop a
 * tmpfs fallocate at any pending signal and free what it had taken, so a large
 * posix_fallocate may fail or, retried whole, never finish. This test links its own
 * posix_fallocate and getrandom in front of the C library's, modelling such a kernel
 * under a timer: a call that asks for more than 1 MiB at once is always interrupted,
 * and so is every third call anyway; getrandom is interrupted at its first call (a
 * pool not initialised yet). hccl_shm_file_size must reserve the whole file (the
 * shared-memory rings and slots of every one-host communicator) and
 * hccl_random_bytes (HcclGetRootInfo's secret) must fill its buffer. A real
 * 100 us SIGALRM timer without SA_RESTART runs meanwhile.
 */
#include "tinytest.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define INTERRUPT_ABOVE ((off_t)1 << 20)

static int falloc_calls, falloc_eintr, random_calls;

int posix_fallocate(int fd, off_t off, off_t len)
{
    falloc_calls++;
    if (len > INTERRUPT_ABOVE || falloc_calls % 3 == 1) {
        falloc_eintr++;
        return EINTR;
    }
    return fallocate(fd, 0, off, len) == 0 ? 0 : errno;
}

ssize_t getrandom(void *buf, size_t n, unsigned flags)
{
    if (random_calls++ == 0) {
        errno = EINTR;
        return -1;
    }
    return syscall(SYS_getrandom, buf, n, flags);
}

static volatile sig_atomic_t ticks;
static void on_tick(int s)
{
    (void)s;
    ticks++;
}

static void reserve(size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "/hccl_test_eintr_%d", (int)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    TT_ASSERT(fd >= 0);
    if (fd < 0) return;
    shm_unlink(name);
    int before = falloc_eintr;
    int err = hccl_shm_file_size(fd, len, 1);
    TT_ASSERT_MSG(err == 0, "%zu bytes: %s", len, strerror(err));
    TT_ASSERT(falloc_eintr > before); /* the model did interrupt it */
    struct stat st;
    TT_ASSERT(fstat(fd, &st) == 0);
    TT_ASSERT_EQ(st.st_size, (off_t)len);
    TT_ASSERT_MSG((off_t)st.st_blocks * 512 >= (off_t)len, "only %lld of %zu bytes allocated",
                  (long long)st.st_blocks * 512, len);
    close(fd);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, NULL);

    reserve(4096);
    reserve(((size_t)3 << 20) + 12345); /* not a whole number of pieces */
    reserve((size_t)16 << 20);

    unsigned char a[64], b[64];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    int ra = hccl_random_bytes(a, sizeof a), rb = hccl_random_bytes(b, sizeof b);
    TT_ASSERT_EQ(ra, 0);
    TT_ASSERT_EQ(rb, 0);
    TT_ASSERT(random_calls >= 3);
    TT_ASSERT(memcmp(a, b, sizeof a) != 0);

    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    return tt_report("test_eintr");
}
