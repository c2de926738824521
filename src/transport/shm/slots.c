/*
 * slots.c - the shared mailboxes of a one-host communicator (see slots.h).
 *
 * Segment (created by one rank, mapped by all, unlinked once all have mapped it):
 *
 *   0      magic, version, nranks, stride                          (read-only)
 *   128    sleepers, bell; aborted (and in which call), leaving    (sleep/wake; failure)
 *   256    cpu[64]: the CPU each rank last said it ran on          (placement)
 *   512    slot (parity 0, rank 0), (0, 1), ..., (0, n-1), (1, 0), ..., (1, n-1)
 *
 *   slot:  +0 seq (the call it holds; 0 = none yet)   +8 tag   +48 data
 *
 * Posting writes the tag and the data, then stores seq: with release for the data,
 * sequentially consistent for the wake-up below. A reader loads seq with acquire
 * and, when it is the call it wants, reads the tag and the data behind it.
 *
 * Sleeping (Dekker, like the rings' doorbells in shm.c):
 *
 *   sleeper                                   poster
 *   sleepers += 1 (seq_cst)                   store seq (seq_cst)
 *   ticket = bell                             load sleepers (seq_cst); if any:
 *   look at the slots again; still missing:      bell += 1, futex_wake(bell, all)
 *   futex_wait(bell, ticket, timeout)
 *   sleepers -= 1
 *
 * Either the poster sees the sleeper (and moves bell past the ticket, so the wait
 * returns at once or is woken) or the sleeper's second look sees the post. One word
 * for all ranks: a post wakes every sleeper, each looks at its slots again. The
 * futex word is in a shared file mapping, so the kernel keys it by the file, not the
 * address: ranks that are threads of one process, each with its own mapping, meet.
 */
#include "transport/shm/slots.h"

#include "transport/shm/shm.h"
#include "util/log.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOTS_MAGIC 0x544c5348u /* "HSLT" */
#define SLOTS_VERSION 4u
#define SLOTS_BASE 512u

typedef struct slots_hdr {
    _Alignas(128) uint32_t magic;
    uint32_t version;
    uint32_t nranks;
    uint32_t stride;
    _Alignas(128) _Atomic uint32_t sleepers;
    _Atomic uint32_t bell;
    /* The first rank whose communicator failed, + 1, in the low half; the collective
     * it failed in (0: not known) in the high half: one word, so they go together. */
    _Atomic uint64_t aborted;
    _Atomic uint32_t leaving; /* the first rank that gave up on an operation, + 1 */
    _Alignas(128) _Atomic int32_t cpu[HCCL_SLOTS_MAX_RANKS]; /* where each rank last ran, + 1 (0: not said) */
} slots_hdr;
_Static_assert(sizeof(slots_hdr) == SLOTS_BASE, "slots segment layout");
_Static_assert(HCCL_SLOTS_TAG_OFF >= 8 && HCCL_SLOTS_DATA_OFF >= HCCL_SLOTS_TAG_OFF + HCCL_SLOTS_TAG_BYTES && HCCL_SLOTS_DATA_OFF % 16 == 0, "slot layout");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2, "address-free atomics");

struct hccl_slots {
    slots_hdr *hdr;
    size_t bytes;
    uint32_t nranks, rank;
    void *tok[HCCL_SLOTS_MAX_RANKS]; /* ThreadSanitizer: one per rank's slots (shm.h) */
};

static size_t seg_bytes(uint32_t nranks) { return SLOTS_BASE + 2u * (size_t)nranks * HCCL_SLOTS_STRIDE; }

static unsigned char *slot_at(const hccl_slots *s, uint64_t seq, uint32_t j)
{
    return (unsigned char *)s->hdr + SLOTS_BASE + ((seq & 1) * s->nranks + j) * (size_t)HCCL_SLOTS_STRIDE;
}

static HcclResult finish_map(hccl_slots *s, int fd, const char *name, int creator)
{
    void *p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        HCCL_WARN(SHM, "cannot map the %zu-byte slot segment %s: %s", s->bytes, name, strerror(errno));
        return HCCL_E_MEMORY;
    }
    s->hdr = p;
    hccl_prefault(p, s->bytes);
    if (creator) {
        s->hdr->magic = SLOTS_MAGIC;
        s->hdr->version = SLOTS_VERSION;
        s->hdr->nranks = s->nranks;
        s->hdr->stride = HCCL_SLOTS_STRIDE;
    } else if (s->hdr->magic != SLOTS_MAGIC || s->hdr->version != SLOTS_VERSION || s->hdr->nranks != s->nranks ||
               s->hdr->stride != HCCL_SLOTS_STRIDE) {
        HCCL_WARN(SHM, "slot segment %s has a bad header", name);
        return HCCL_E_INTERNAL;
    }
    for (uint32_t j = 0; j < s->nranks; j++) s->tok[j] = hccl_shm_token(name, (int)(1000 + j));
    return HCCL_SUCCESS;
}

static hccl_slots *slots_new(uint32_t nranks, uint32_t rank)
{
    if (nranks < 1 || nranks > HCCL_SLOTS_MAX_RANKS || rank >= nranks) return NULL;
    hccl_slots *s = hccl_calloc(1, sizeof *s);
    if (!s) return NULL;
    s->nranks = nranks;
    s->rank = rank;
    s->bytes = seg_bytes(nranks);
    return s;
}

HcclResult hccl_slots_create(uint32_t nranks, uint32_t rank, char *name, hccl_slots **out)
{
    *out = NULL;
    name[0] = 0;
    hccl_slots *s = slots_new(nranks, rank);
    if (!s) return nranks > HCCL_SLOTS_MAX_RANKS ? HCCL_E_PARA : HCCL_E_MEMORY;
    uint64_t rnd = 0;
    if (hccl_random_bytes(&rnd, sizeof rnd) != 0) rnd = hccl_now_ns() ^ ((uint64_t)getpid() << 32);
    snprintf(name, HCCL_SLOTS_NAME_LEN, "/" HCCL_SHM_NAME_PREFIX "%ld-slots-%016llx", (long)getpid(),
             (unsigned long long)rnd);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        HCCL_WARN(SHM, "cannot create the slot segment %s: %s", name, strerror(errno));
        hccl_free(s);
        name[0] = 0;
        return HCCL_E_SYSCALL;
    }
    /* Reserve the pages now: a full /dev/shm fails here, not with SIGBUS later. */
    int err = hccl_shm_file_size(fd, s->bytes, 1);
    HcclResult res = err ? HCCL_E_MEMORY : finish_map(s, fd, name, 1);
    if (err)
        HCCL_WARN(SHM, "cannot allocate %zu bytes in /dev/shm: %s%s", s->bytes, strerror(err), hccl_fsize_hint(err));
    close(fd);
    if (res != HCCL_SUCCESS) {
        shm_unlink(name);
        name[0] = 0;
        hccl_slots_close(s);
        return res;
    }
    *out = s;
    return HCCL_SUCCESS;
}

HcclResult hccl_slots_open(const char *name, uint32_t nranks, uint32_t rank, hccl_slots **out)
{
    *out = NULL;
    size_t plen = strlen(HCCL_SHM_NAME_PREFIX);
    if (strnlen(name, HCCL_SLOTS_NAME_LEN) == HCCL_SLOTS_NAME_LEN || name[0] != '/' ||
        strncmp(name + 1, HCCL_SHM_NAME_PREFIX, plen) != 0 || strchr(name + 1, '/')) {
        HCCL_WARN(SHM, "invalid slot segment name");
        return HCCL_E_PARA;
    }
    hccl_slots *s = slots_new(nranks, rank);
    if (!s) return nranks > HCCL_SLOTS_MAX_RANKS ? HCCL_E_PARA : HCCL_E_MEMORY;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        HCCL_INFO(SHM, "cannot open the slot segment %s: %s", name, strerror(errno));
        hccl_free(s);
        return HCCL_E_UNAVAIL;
    }
    struct stat st;
    HcclResult res = HCCL_SUCCESS;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != s->bytes) {
        HCCL_WARN(SHM, "slot segment %s has the wrong size", name);
        res = HCCL_E_INTERNAL;
    }
    if (res == HCCL_SUCCESS) res = finish_map(s, fd, name, 0);
    close(fd);
    if (res != HCCL_SUCCESS) {
        hccl_slots_close(s);
        return res;
    }
    *out = s;
    return HCCL_SUCCESS;
}

void hccl_slots_unlink(const char *name)
{
    if (name && name[0]) shm_unlink(name);
}

void hccl_slots_close(hccl_slots *s)
{
    if (!s) return;
    if (s->hdr) munmap(s->hdr, s->bytes);
    hccl_free(s);
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, 0);
}

void hccl_slots_post(hccl_slots *s, uint64_t seq, const void *tag, const void *data, size_t bytes)
{
    unsigned char *sl = slot_at(s, seq, s->rank);
    memcpy(sl + HCCL_SLOTS_TAG_OFF, tag, HCCL_SLOTS_TAG_BYTES);
    if (bytes) memcpy(sl + HCCL_SLOTS_DATA_OFF, data, bytes);
    HCCL_SHM_TSAN_RELEASE(s->tok[s->rank]);
    atomic_store_explicit((_Atomic uint64_t *)sl, seq, memory_order_seq_cst);
    if (atomic_load_explicit(&s->hdr->sleepers, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(&s->hdr->bell, 1, memory_order_seq_cst);
        futex(&s->hdr->bell, FUTEX_WAKE, INT_MAX, NULL);
    }
}

const unsigned char *hccl_slots_peek(hccl_slots *s, uint32_t j, uint64_t seq)
{
    const unsigned char *sl = slot_at(s, seq, j);
    if (atomic_load_explicit((_Atomic uint64_t *)sl, memory_order_acquire) != seq) return NULL;
    HCCL_SHM_TSAN_ACQUIRE(s->tok[j]);
    return sl;
}

uint32_t hccl_slots_arm(hccl_slots *s)
{
    atomic_fetch_add_explicit(&s->hdr->sleepers, 1, memory_order_seq_cst);
    return atomic_load_explicit(&s->hdr->bell, memory_order_seq_cst);
}

void hccl_slots_disarm(hccl_slots *s) { atomic_fetch_sub_explicit(&s->hdr->sleepers, 1, memory_order_seq_cst); }

void hccl_slots_sleep(hccl_slots *s, uint32_t ticket, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
    futex(&s->hdr->bell, FUTEX_WAIT, ticket, &ts); /* EAGAIN: bell moved since the arm */
    hccl_slots_disarm(s);
}

void hccl_slots_abort(hccl_slots *s, uint32_t seq)
{
    uint64_t none = 0;
    atomic_compare_exchange_strong_explicit(&s->hdr->aborted, &none, (uint64_t)seq << 32 | (s->rank + 1),
                                            memory_order_seq_cst, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->hdr->bell, 1, memory_order_seq_cst);
    futex(&s->hdr->bell, FUTEX_WAKE, INT_MAX, NULL);
}

uint32_t hccl_slots_aborted(hccl_slots *s, uint32_t *seq)
{
    uint64_t v = atomic_load_explicit(&s->hdr->aborted, memory_order_acquire);
    if (seq) *seq = (uint32_t)(v >> 32);
    return (uint32_t)v;
}

void hccl_slots_leave(hccl_slots *s)
{
    uint32_t none = 0;
    atomic_compare_exchange_strong_explicit(&s->hdr->leaving, &none, s->rank + 1, memory_order_seq_cst,
                                            memory_order_relaxed);
}

uint32_t hccl_slots_leaving(hccl_slots *s) { return atomic_load_explicit(&s->hdr->leaving, memory_order_seq_cst); }

void hccl_slots_set_cpu(hccl_slots *s, int cpu)
{
    if (atomic_load_explicit(&s->hdr->cpu[s->rank], memory_order_relaxed) != cpu + 1)
        atomic_store_explicit(&s->hdr->cpu[s->rank], cpu + 1, memory_order_relaxed);
}

int hccl_slots_cpu(hccl_slots *s, uint32_t j)
{
    return j < s->nranks ? atomic_load_explicit(&s->hdr->cpu[j], memory_order_relaxed) - 1 : -1;
}
