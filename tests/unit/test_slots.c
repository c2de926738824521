/*
 * test_slots.c - the shared slots of a one-host communicator (src/transport/shm/slots.c).
 *
 * Ranks are forked processes or threads; each maps the segment on its own (as the
 * ranks of a communicator do), rank 0 having created it. Rounds in lockstep: every
 * rank posts a tag and data whose size and bytes depend on (rank, round), then waits
 * until every slot of the round is there, checks every byte, and goes on. Waits poll
 * with sched_yield or, in some rounds, sleep (arm, look again, sleep with a 2 s
 * timeout); in those rounds one rank is late on purpose, so the others really sleep,
 * and a sleep that lasts until its timeout is a lost wake-up and fails the test.
 * Also: the name is gone from /dev/shm after unlink; bad names, missing segments
 * and a wrong rank count are refused; the first rank to abort is what every mapping
 * reads; a segment above RLIMIT_FSIZE fails cleanly.
 */
#include "tinytest.h"

#include "helper_shm_entries.h"

#include "transport/shm/shm.h"
#include "transport/shm/slots.h"
#include "util/util.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR 4
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROUNDS 600
#else
#define ROUNDS 3000
#endif
#define SLEEP_TIMEOUT_NS 2000000000ull

static char g_name[HCCL_SLOTS_NAME_LEN];

static unsigned char pat(uint32_t rank, uint64_t round, size_t i)
{
    return (unsigned char)(rank * 131u + round * 7u + i * 13u + (i >> 8));
}

static size_t size_of(uint32_t rank, uint64_t round)
{
    (void)rank;
    return (size_t)((round * 37u) % (HCCL_SLOTS_DATA_MAX + 1));
}

static int sleepy(uint64_t round) { return round % 10 == 3; }

typedef struct rank_arg {
    uint32_t rank;
    int fails;
    int slept;
} rank_arg;

static int run_rank(uint32_t rank, int *slept)
{
    int fails = 0;
    hccl_slots *s = NULL;
    if (hccl_slots_open(g_name, NR, rank, &s) != HCCL_SUCCESS) {
        fprintf(stderr, "rank %u: cannot open %s\n", rank, g_name);
        return 1;
    }
    unsigned char data[HCCL_SLOTS_DATA_MAX], tag[HCCL_SLOTS_TAG_BYTES];
    for (uint64_t round = 1; round <= ROUNDS && fails < 10; round++) {
        size_t bytes = size_of(rank, round);
        for (size_t i = 0; i < bytes; i++) data[i] = pat(rank, round, i);
        memset(tag, 0, sizeof tag);
        memcpy(tag, &round, sizeof round);
        memcpy(tag + 8, &rank, sizeof rank);
        /* The late rank of a sleepy round: the others go to sleep meanwhile. */
        if (sleepy(round) && rank == (round / 10) % NR) {
            struct timespec ts = {0, 3000000};
            nanosleep(&ts, NULL);
        }
        hccl_slots_post(s, round, tag, data, bytes);
        for (uint32_t j = 0; j < NR; j++) {
            const unsigned char *sl;
            while (!(sl = hccl_slots_peek(s, j, round))) {
                if (!sleepy(round)) {
                    sched_yield();
                    continue;
                }
                uint32_t ticket = hccl_slots_arm(s);
                if (hccl_slots_peek(s, j, round)) {
                    hccl_slots_disarm(s);
                    continue;
                }
                uint64_t t0 = hccl_now_ns();
                hccl_slots_sleep(s, ticket, SLEEP_TIMEOUT_NS);
                uint64_t dt = hccl_now_ns() - t0;
                (*slept)++;
                if (dt > SLEEP_TIMEOUT_NS / 2) {
                    fprintf(stderr, "rank %u round %llu: slept %.2f s waiting for rank %u (lost wake-up)\n", rank,
                            (unsigned long long)round, dt / 1e9, j);
                    fails++;
                }
            }
            uint64_t r2;
            uint32_t j2;
            memcpy(&r2, sl + HCCL_SLOTS_TAG_OFF, sizeof r2);
            memcpy(&j2, sl + HCCL_SLOTS_TAG_OFF + 8, sizeof j2);
            if (r2 != round || j2 != j) {
                fprintf(stderr, "rank %u round %llu: rank %u's tag says round %llu rank %u\n", rank,
                        (unsigned long long)round, j, (unsigned long long)r2, j2);
                fails++;
            }
            size_t nb = size_of(j, round);
            for (size_t i = 0; i < nb; i++)
                if (sl[HCCL_SLOTS_DATA_OFF + i] != pat(j, round, i)) {
                    fprintf(stderr, "rank %u round %llu: rank %u's byte %zu of %zu is wrong\n", rank,
                            (unsigned long long)round, j, i, nb);
                    fails++;
                    break;
                }
            /* Slots of one call lie HCCL_SLOTS_STRIDE apart (what the reductions use). */
            const unsigned char *s0 = hccl_slots_peek(s, 0, round);
            if (s0 && sl != s0 + (size_t)j * HCCL_SLOTS_STRIDE) {
                fprintf(stderr, "rank %u: slot %u is not %u strides after slot 0\n", rank, j, j);
                fails++;
            }
        }
    }
    hccl_slots_close(s);
    return fails;
}

static void *thr_main(void *p)
{
    rank_arg *a = p;
    a->fails = run_rank(a->rank, &a->slept);
    return NULL;
}

/* The creator keeps its mapping (and posts nothing): the ranks map it themselves. */
static hccl_slots *create(void)
{
    hccl_slots *c = NULL;
    TT_ASSERT_EQ(hccl_slots_create(NR, 0, g_name, &c), HCCL_SUCCESS);
    TT_ASSERT(c != NULL);
    TT_ASSERT_EQ(shm_entries_of(getpid()), 1);
    return c;
}

static void test_processes(void)
{
    hccl_slots *c = create();
    pid_t pid[NR];
    for (uint32_t r = 0; r < NR; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            int slept = 0;
            int f = run_rank(r, &slept);
            if (!f && slept == 0) {
                fprintf(stderr, "rank %u never slept in the sleepy rounds\n", r);
                f = 1;
            }
            _exit(f ? 1 : 0);
        }
    }
    int bad = 0;
    for (uint32_t r = 0; r < NR; r++) {
        int st = 0;
        waitpid(pid[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    TT_ASSERT_MSG(bad == 0, "%d of %d process ranks failed", bad, NR);
    hccl_slots_unlink(g_name);
    TT_ASSERT_EQ(shm_entries_of(getpid()), 0);
    hccl_slots_close(c);
}

static void test_threads(void)
{
    hccl_slots *c = create();
    pthread_t th[NR];
    rank_arg a[NR];
    for (uint32_t r = 0; r < NR; r++) {
        a[r] = (rank_arg){r, 0, 0};
        pthread_create(&th[r], NULL, thr_main, &a[r]);
    }
    int slept = 0;
    for (uint32_t r = 0; r < NR; r++) {
        pthread_join(th[r], NULL);
        TT_ASSERT_MSG(a[r].fails == 0, "thread rank %u: %d failure(s)", r, a[r].fails);
        slept += a[r].slept;
    }
    TT_ASSERT_MSG(slept > 0, "no thread rank ever slept in the sleepy rounds");
    hccl_slots_unlink(g_name);
    TT_ASSERT_EQ(shm_entries_of(getpid()), 0);
    hccl_slots_close(c);
}

static void test_refusals(void)
{
    hccl_slots *s = NULL;
    TT_ASSERT_EQ(hccl_slots_open("/etc-passwd", NR, 1, &s), HCCL_E_PARA);
    TT_ASSERT_EQ(hccl_slots_open("/" HCCL_SHM_NAME_PREFIX "a/b", NR, 1, &s), HCCL_E_PARA);
    TT_ASSERT_EQ(hccl_slots_open(HCCL_SHM_NAME_PREFIX "1-slots-0", NR, 1, &s), HCCL_E_PARA);
    TT_ASSERT_EQ(hccl_slots_open("/" HCCL_SHM_NAME_PREFIX "0-slots-nonexistent", NR, 1, &s), HCCL_E_UNAVAIL);
    TT_ASSERT(s == NULL);
    hccl_slots *c = create();
    TT_ASSERT_EQ(hccl_slots_open(g_name, NR + 1, 1, &s), HCCL_E_INTERNAL); /* another size */
    TT_ASSERT_EQ(hccl_slots_open(g_name, HCCL_SLOTS_MAX_RANKS + 1, 1, &s), HCCL_E_PARA);
    TT_ASSERT(s == NULL);
    hccl_slots_unlink(g_name);
    TT_ASSERT_EQ(hccl_slots_open(g_name, NR, 1, &s), HCCL_E_UNAVAIL); /* gone once unlinked */
    hccl_slots_close(c);
    TT_ASSERT_EQ(hccl_slots_create(HCCL_SLOTS_MAX_RANKS + 1, 0, g_name, &c), HCCL_E_PARA);
    TT_ASSERT_EQ(shm_entries_of(getpid()), 0);
}

/* RLIMIT_FSIZE (ulimit -f) below the segment's size: creating it fails with
 * HCCL_E_MEMORY and leaves nothing in /dev/shm (sizing it used to raise SIGXFSZ,
 * which killed the process). In a child. */
static void test_fsize_limit(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {512, 512};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        hccl_slots *c = NULL;
        if (hccl_slots_create(NR, 0, g_name, &c) != HCCL_E_MEMORY || c || g_name[0]) _exit(11);
        _exit(shm_entries_of(getpid()) == 0 ? 0 : 12);
    }
    TT_ASSERT_CHILD_OK(pid);
}

/* The first rank to abort stays recorded, with the collective it failed in, seen by
 * every mapping. */
static void test_abort(void)
{
    hccl_slots *c = create(), *a = NULL, *b = NULL;
    TT_ASSERT_EQ(hccl_slots_open(g_name, NR, 2, &a), HCCL_SUCCESS);
    TT_ASSERT_EQ(hccl_slots_open(g_name, NR, 3, &b), HCCL_SUCCESS);
    hccl_slots_unlink(g_name);
    TT_ASSERT_EQ(hccl_slots_aborted(b, NULL), 0u);
    hccl_slots_abort(a, 7);
    hccl_slots_abort(b, 9);
    uint32_t seq = 0;
    TT_ASSERT_EQ(hccl_slots_aborted(b, NULL), 3u); /* rank 2 + 1 */
    TT_ASSERT_EQ(hccl_slots_aborted(c, &seq), 3u);
    TT_ASSERT_EQ(seq, 7u); /* the collective rank 2 failed in */
    hccl_slots_close(a);
    hccl_slots_close(b);
    hccl_slots_close(c);
}

/* Where each rank last ran: every mapping sees what each rank said, -1 before. */
static void test_cpu(void)
{
    hccl_slots *c = create(), *a = NULL;
    TT_ASSERT_EQ(hccl_slots_open(g_name, NR, 2, &a), HCCL_SUCCESS);
    hccl_slots_unlink(g_name);
    TT_ASSERT_EQ(hccl_slots_cpu(c, 2), -1);
    hccl_slots_set_cpu(a, 0); /* CPU 0 is not "not said" */
    hccl_slots_set_cpu(c, 7);
    TT_ASSERT_EQ(hccl_slots_cpu(c, 2), 0);
    TT_ASSERT_EQ(hccl_slots_cpu(a, 0), 7);
    hccl_slots_set_cpu(a, 5);
    TT_ASSERT_EQ(hccl_slots_cpu(c, 2), 5);
    TT_ASSERT_EQ(hccl_slots_cpu(c, 1), -1);
    TT_ASSERT_EQ(hccl_slots_cpu(c, NR), -1); /* not a rank */
    hccl_slots_close(a);
    hccl_slots_close(c);
}

int main(void)
{
    test_refusals();
    test_fsize_limit();
    test_abort();
    test_cpu();
    test_processes();
    test_threads();
    return tt_report("test_slots");
}
