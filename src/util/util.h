/*
 * util.h - small helpers shared by all modules: time, allocation hook, strings.
 */
#ifndef HCCL_UTIL_UTIL_H
#define HCCL_UTIL_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Monotonic clock in nanoseconds. */
uint64_t hccl_now_ns(void);
/* A timeout in seconds as nanoseconds, at most 10^9 s (31 years: "forever"), so that
 * now + timeout cannot wrap; 0 for s <= 0. */
#define HCCL_TIMEOUT_MAX_S 1000000000ll
uint64_t hccl_timeout_ns(int64_t s);
/* 64-bit FNV-1a of n bytes, continuing from h (HCCL_FNV_SEED to start): the
 * identities of jobs, communicators and hosts. */
#define HCCL_FNV_SEED 14695981039346656037ull

/* The most ranks a communicator may have, and so a rank table's and a launcher world's
 * limit too (boot/ranktable.c, boot/launch_env.c, api/comm_api.c). A full TCP mesh of
 * more would need more sockets per rank than any system allows. */
#define HCCL_COMM_MAX_RANKS 65536u
uint64_t hccl_fnv1a(const void *p, size_t n, uint64_t h);
/* The same clock as of the last timer tick (a few ms behind; a quarter of the cost),
 * for idle times measured in tens of milliseconds. Compare only with itself. */
uint64_t hccl_coarse_ns(void);
/* What a system call that does nothing costs here, measured once per process (the
 * least of 16 getppid calls): about 0.1 us on most hosts, over 1 us in a guest whose
 * system calls all pass through its hypervisor (a PVM guest). */
uint64_t hccl_syscall_ns(void);

/* HcclSetInterruptCheck's function (NULL: none), process-wide. */
void hccl_interrupt_set(int (*check)(void));
int (*hccl_interrupt_get(void))(void);
/* A wait that may be interrupted: zero it when the wait begins. */
typedef struct hccl_iwait {
    uint64_t since, checked_at;
} hccl_iwait;
#define HCCL_INTERRUPT_CHECK_NS 100000000ull
/* Whether the application's check asks to stop this wait: called between the wait's
 * steps, it calls the check once the wait has lasted HCCL_INTERRUPT_CHECK_NS, then at
 * most that often (no clock read while no check is set). */
int hccl_interrupt_due(hccl_iwait *w);
/* Calls the check (set) now; nonzero: it asks to stop. */
int hccl_interrupt_ask(int (*check)(void));
/* How many times the check asked this thread to stop: a caller compares the count
 * before and after a step that failed to tell an interruption from other failures. */
unsigned hccl_interrupt_seq(void);
/* The reason communicator creation gives when it was interrupted. */
#define HCCL_INTERRUPTED_INIT "communicator creation interrupted by the application (HcclSetInterruptCheck)"

/* All library allocations go through these, so tests can inject failures. */
void *hccl_malloc(size_t n);
void *hccl_calloc(size_t n, size_t size);
void hccl_free(void *p);
/* Room for one more element in array arr of n elements (elem bytes each) and capacity
 * *cap: arr itself, or when full a copy twice as large (first capacity: first) with
 * arr freed and *cap updated. NULL out of memory (arr and *cap left as they were). */
void *hccl_grow(void *arr, uint32_t *cap, uint32_t n, size_t elem, uint32_t first);
/* Test hook: make the n-th following allocation fail (0 disables). */
void hccl_alloc_fail_after(long n);

/* Fill buf with n random bytes from the kernel (getrandom); 0 on success. */
int hccl_random_bytes(void *buf, size_t n);

/* Start one of the library's threads: every signal blocked, so that the application's
 * handlers run on its own threads; detached when t is NULL. Returns pthread_create's
 * error (0 on success). */
int hccl_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* Map the page tables of [p, p+len) now, writable, for a shared mapping whose pages
 * the caller will write and read soon: a minor fault per page on first touch costs
 * more than the copy of its 4 KiB (MADV_POPULATE_WRITE, Linux 5.14; elsewhere a
 * no-op). The data is not touched. */
void hccl_prefault(void *p, size_t len);

/* The size of the huge pages shared mappings may use (one page-table entry per 2 MiB:
 * the PMD size with 4 KiB pages). */
#define HCCL_HUGE_PAGE_BYTES ((size_t)2 << 20)
/* mmap(NULL, len, prot, MAP_SHARED, fd, 0), at an address that is a multiple of
 * HCCL_HUGE_PAGE_BYTES when len is at least that (so the kernel can map the file's
 * huge pages with one entry each); NULL on failure. */
void *hccl_mmap_shared_aligned(int fd, size_t len, int prot);
/* Back [p, p+len) of a new, zero-filled shared mapping (from hccl_mmap_shared_aligned)
 * with huge pages where whole ones fit (MADV_COLLAPSE, Linux 6.1, whatever the
 * system's transparent-huge-page settings; elsewhere, or when the kernel has none to
 * give, the 4 KiB pages stay). Their memory is taken now. 1 when all of them were. */
int hccl_collapse_huge(void *p, size_t len);

/* Give a new shared-memory file (shm_open, memfd_create) its size of len bytes:
 * posix_fallocate when reserve (the pages are taken now, so a full tmpfs fails here and
 * not with SIGBUS at the first touch; in pieces, each retried on EINTR), else ftruncate
 * (sparse). A len above
 * RLIMIT_FSIZE (ulimit -f) fails with EFBIG without asking the kernel, which would
 * also send SIGXFSZ: by default that kills the whole process. Returns 0 or an errno
 * value. */
int hccl_shm_file_size(int fd, size_t len, int reserve);

/* " (above RLIMIT_FSIZE, ulimit -f)" for EFBIG, else "": to follow strerror(err). */
const char *hccl_fsize_hint(int err);

/* Overflow-checked a*b; returns 0 and sets *out, or -1 on overflow. */
int hccl_mul_overflow(uint64_t a, uint64_t b, uint64_t *out);

#define HCCL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define HCCL_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
