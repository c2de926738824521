/*
 * util.c - time, the allocation hook, randomness, overflow checks and the spin lock's wait.
 */
#include "util/util.h"

#include "util/spin.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t hccl_timeout_ns(int64_t s)
{
    if (s <= 0) return 0;
    return (uint64_t)(s > HCCL_TIMEOUT_MAX_S ? HCCL_TIMEOUT_MAX_S : s) * 1000000000ull;
}

uint64_t hccl_fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

uint64_t hccl_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

#ifndef CLOCK_MONOTONIC_COARSE
#define CLOCK_MONOTONIC_COARSE CLOCK_MONOTONIC
#endif
uint64_t hccl_coarse_ns(void) { return clock_ns(CLOCK_MONOTONIC_COARSE); }

static uint64_t syscall_ns;
static pthread_once_t syscall_once = PTHREAD_ONCE_INIT;

static void measure_syscall(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t a = hccl_now_ns();
        (void)syscall(SYS_getppid); /* the bare system call, whatever a libc may cache */
        uint64_t b = hccl_now_ns();
        if (b - a < best) best = b - a;
    }
    syscall_ns = best;
}

uint64_t hccl_syscall_ns(void)
{
    pthread_once(&syscall_once, measure_syscall);
    return syscall_ns;
}

static int (*interrupt_check)(void); /* atomic */

void hccl_interrupt_set(int (*check)(void)) { __atomic_store_n(&interrupt_check, check, __ATOMIC_RELEASE); }

int (*hccl_interrupt_get(void))(void) { return __atomic_load_n(&interrupt_check, __ATOMIC_ACQUIRE); }

static __thread unsigned interrupt_seq;

unsigned hccl_interrupt_seq(void) { return interrupt_seq; }

int hccl_interrupt_ask(int (*check)(void))
{
    if (!check()) return 0;
    interrupt_seq++;
    return 1;
}

int hccl_interrupt_due(hccl_iwait *w)
{
    int (*check)(void) = hccl_interrupt_get();
    if (!check) return 0;
    uint64_t now = hccl_now_ns();
    if (!w->since) w->since = now;
    if (now - w->since < HCCL_INTERRUPT_CHECK_NS || (w->checked_at && now - w->checked_at < HCCL_INTERRUPT_CHECK_NS))
        return 0;
    w->checked_at = now;
    return hccl_interrupt_ask(check);
}

static long alloc_fail_countdown;

void hccl_alloc_fail_after(long n) { __atomic_store_n(&alloc_fail_countdown, n, __ATOMIC_RELAXED); }

static int alloc_should_fail(void)
{
    long n = __atomic_load_n(&alloc_fail_countdown, __ATOMIC_RELAXED);
    if (n <= 0) return 0;
    return __atomic_sub_fetch(&alloc_fail_countdown, 1, __ATOMIC_RELAXED) == 0;
}

void *hccl_malloc(size_t n) { return alloc_should_fail() ? NULL : malloc(n ? n : 1); }

void *hccl_calloc(size_t n, size_t size) { return alloc_should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1); }

void hccl_free(void *p) { free(p); }

void *hccl_grow(void *arr, uint32_t *cap, uint32_t n, size_t elem, uint32_t first)
{
    if (n < *cap) return arr;
    uint32_t ncap = *cap ? *cap * 2 : first;
    void *a = hccl_malloc(elem * ncap);
    if (!a) return NULL;
    if (n) memcpy(a, arr, elem * n);
    hccl_free(arr);
    *cap = ncap;
    return a;
}

int hccl_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0 && errno == EINTR) continue; /* a signal while the pool was not ready yet */
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void hccl_prefault(void *p, size_t len)
{
    if (p && len) (void)madvise(p, len, MADV_POPULATE_WRITE);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

void *hccl_mmap_shared_aligned(int fd, size_t len, int prot)
{
    if (len < HCCL_HUGE_PAGE_BYTES) {
        void *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* Reserve len plus one huge page of addresses, map the file at the first aligned
     * address inside, and give back the rest. */
    const size_t span = len + HCCL_HUGE_PAGE_BYTES;
    char *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)r + HCCL_HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HCCL_HUGE_PAGE_BYTES - 1));
    void *p = mmap(a, len, prot, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        munmap(r, span);
        return NULL;
    }
    if (a > r) munmap(r, (size_t)(a - r));
    if (r + span > a + len) munmap(a + len, (size_t)(r + span - (a + len)));
    return p;
}

int hccl_collapse_huge(void *p, size_t len)
{
    char *a = (char *)(((uintptr_t)p + HCCL_HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HCCL_HUGE_PAGE_BYTES - 1));
    char *e = (char *)(((uintptr_t)p + len) & ~(uintptr_t)(HCCL_HUGE_PAGE_BYTES - 1));
    if (!p || e <= a) return 0;
    /* The kernel collapses a range with at least one page in the file (the others
     * holes, which become zeroes): write the first byte of each huge page (zero). */
    for (char *q = a; q < e; q += HCCL_HUGE_PAGE_BYTES) *(volatile char *)q = 0;
    return madvise(a, (size_t)(e - a), MADV_COLLAPSE) == 0;
}

#define SHM_RESERVE_PIECE ((size_t)256 << 10)

int hccl_shm_file_size(int fd, size_t len, int reserve)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)len > (uint64_t)rl.rlim_cur)
        return EFBIG;
    if (reserve && len) {
        /* In pieces, each tried again when a signal interrupts it: older kernels stop a
         * tmpfs fallocate at any pending signal (EINTR, having freed what it took), so
         * under a periodic timer (a profiler's, Python's setitimer) one large call may
         * fail or never complete. A piece takes tens of microseconds. */
        for (size_t off = 0; off < len;) {
            size_t piece = len - off < SHM_RESERVE_PIECE ? len - off : SHM_RESERVE_PIECE;
            int err = posix_fallocate(fd, (off_t)off, (off_t)piece);
            if (err == EINTR) continue;
            if (err) return err;
            off += piece;
        }
        return 0;
    }
    return ftruncate(fd, (off_t)len) == 0 ? 0 : errno;
}

const char *hccl_fsize_hint(int err) { return err == EFBIG ? " (above RLIMIT_FSIZE, ulimit -f)" : ""; }

int hccl_mul_overflow(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_mul_overflow(a, b, out) ? -1 : 0; }

void hccl_spin_lock_slow(hccl_spin *l)
{
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (!__atomic_load_n(&l->held, __ATOMIC_RELAXED) && !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE))
                return;
            hccl_cpu_relax();
        }
        sched_yield(); /* the holder may be waiting for this CPU */
    }
}

int hccl_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t own;
    sigset_t all, old;
    pthread_attr_init(&attr);
    if (!t) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(t ? t : &own, &attr, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return err;
}
