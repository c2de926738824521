/*
 * test_param.c - util/param.h: integers from the environment, and the range-checked
 * form: unset gives the default (even one outside the range), a value inside is
 * kept, one outside is clamped or replaced by the default, text is the default;
 * threads that read a cached one first at once warn once.
 */
#include "util/param.h"
#include "util/log.h"
#include "tinytest.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define V "HCCL_TEST_PARAM_VALUE"

static int64_t in(const char *val, int64_t dflt, int64_t lo, int64_t hi, hccl_param_outside how)
{
    if (val) setenv(V, val, 1);
    else unsetenv(V);
    return hccl_param_read_int_in(V, dflt, lo, hi, how);
}

HCCL_PARAM_INT_IN(cached_test, V, 5, 0, 10, HCCL_PARAM_CLAMP)

/* Threads that read a cached parameter with a bad value for the first time at once:
 * one WARN in all (each of them said it, so a log showed it two or three times). */
#define RACE "HCCL_TEST_PARAM_RACE"
#define RACE_PARAMS 16
#define RACE_THREADS 8
HCCL_PARAM_INT(race0, RACE, 1)
HCCL_PARAM_INT(race1, RACE, 1)
HCCL_PARAM_INT(race2, RACE, 1)
HCCL_PARAM_INT(race3, RACE, 1)
HCCL_PARAM_INT(race4, RACE, 1)
HCCL_PARAM_INT(race5, RACE, 1)
HCCL_PARAM_INT(race6, RACE, 1)
HCCL_PARAM_INT(race7, RACE, 1)
HCCL_PARAM_INT(race8, RACE, 1)
HCCL_PARAM_INT(race9, RACE, 1)
HCCL_PARAM_INT(race10, RACE, 1)
HCCL_PARAM_INT(race11, RACE, 1)
HCCL_PARAM_INT(race12, RACE, 1)
HCCL_PARAM_INT(race13, RACE, 1)
HCCL_PARAM_INT(race14, RACE, 1)
HCCL_PARAM_INT(race15, RACE, 1)
static int64_t (*const race_fns[RACE_PARAMS])(void) = {
    hccl_param_race0,  hccl_param_race1,  hccl_param_race2,  hccl_param_race3,  hccl_param_race4,  hccl_param_race5,
    hccl_param_race6,  hccl_param_race7,  hccl_param_race8,  hccl_param_race9,  hccl_param_race10, hccl_param_race11,
    hccl_param_race12, hccl_param_race13, hccl_param_race14, hccl_param_race15};
static pthread_barrier_t race_barrier;
static uint64_t race_warns;

static void *race_thread(void *arg)
{
    (void)arg;
    uint64_t w0 = hccl_log_warn_seq();
    int bad = 0;
    for (int i = 0; i < RACE_PARAMS; i++) {
        pthread_barrier_wait(&race_barrier);
        bad += race_fns[i]() != 1;
    }
    __atomic_add_fetch(&race_warns, hccl_log_warn_seq() - w0, __ATOMIC_RELAXED);
    return (void *)(intptr_t)bad;
}

static void racing_first_reads_once(void);
static void racing_first_reads(void)
{
    /* A long environment in front of it makes each getenv, so each first read, slow
     * enough for the threads to overlap even on few CPUs. */
    for (int i = 0; i < 20000; i++) {
        char name[32];
        snprintf(name, sizeof name, "HCCL_TEST_PAD_%d", i);
        setenv(name, "x", 1);
    }
    setenv(RACE, "abc", 1);
    /* Each try in a child of its own, where no parameter has been read yet. */
    for (int k = 0; k < 8; k++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            racing_first_reads_once();
            fflush(stdout);
            _exit(tt_failed ? 1 : 0);
        }
        int st = 0;
        TT_ASSERT(pid > 0 && waitpid(pid, &st, 0) == pid);
        TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "try %d: the child failed (status %#x)", k, st);
    }
}

static void racing_first_reads_once(void)
{
    pthread_barrier_init(&race_barrier, NULL, RACE_THREADS);
    pthread_t t[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) TT_ASSERT(pthread_create(&t[i], NULL, race_thread, NULL) == 0);
    for (int i = 0; i < RACE_THREADS; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        TT_ASSERT_MSG(bad == NULL, "a thread read a value other than the default");
    }
    pthread_barrier_destroy(&race_barrier);
    TT_ASSERT_MSG(race_warns == RACE_PARAMS, "%llu WARNs for %d parameters with a bad value read by %d threads at once",
                  (unsigned long long)race_warns, RACE_PARAMS, RACE_THREADS);
}

int main(void)
{
    setenv("HCCL_DEBUG", "NONE", 1); /* WARNs are still recorded for hccl_log_last_warn */
    TT_ASSERT_EQ(in(NULL, -1, 1, 65535, HCCL_PARAM_DEFAULT), -1);
    TT_ASSERT_EQ(in("", 7, 1, 9, HCCL_PARAM_CLAMP), 7);
    TT_ASSERT_EQ(in("5", 7, 1, 9, HCCL_PARAM_CLAMP), 5);
    TT_ASSERT_EQ(in("1", 7, 1, 9, HCCL_PARAM_CLAMP), 1);
    TT_ASSERT_EQ(in("9", 7, 1, 9, HCCL_PARAM_CLAMP), 9);
    TT_ASSERT_EQ(in("0x10", 7, 1, 99, HCCL_PARAM_CLAMP), 16);
    TT_ASSERT_EQ(in("010", 7, 1, 99, HCCL_PARAM_CLAMP), 10); /* decimal, not octal */
    TT_ASSERT_EQ(in("08", 7, 1, 99, HCCL_PARAM_CLAMP), 8);
    TT_ASSERT_EQ(in("-1", 7, 0, 1000000, HCCL_PARAM_CLAMP), 0);
    TT_ASSERT_EQ(in("99", 7, 1, 8, HCCL_PARAM_CLAMP), 8);
    TT_ASSERT_EQ(in("-5", 1836, 0, INT64_MAX, HCCL_PARAM_DEFAULT), 1836);
    TT_ASSERT_EQ(in("70000", 60000, 1, 65535, HCCL_PARAM_DEFAULT), 60000);
    TT_ASSERT_EQ(in("9223372036854775807", 3, 0, INT64_MAX, HCCL_PARAM_DEFAULT), INT64_MAX);
    TT_ASSERT_EQ(in("99999999999999999999", 3, 0, 10, HCCL_PARAM_CLAMP), 3); /* overflows: not an integer */
    TT_ASSERT_EQ(in("12abc", 3, 0, 100, HCCL_PARAM_CLAMP), 3);
    /* Text where the default means "not set" (outside the range): one WARN naming the
     * text, not a second one about a default the user never wrote. */
    TT_ASSERT_EQ(in("abc", -1, 1, 65535, HCCL_PARAM_DEFAULT), -1);
    const char *w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "\"abc\" is not an integer; ignored") != NULL, "last WARN: %s", w);
    TT_ASSERT_EQ(in("5x", 7, 0, 10, HCCL_PARAM_CLAMP), 7);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "\"5x\" is not an integer; using the default 7") != NULL, "last WARN: %s", w);
    /* The cached form reads once. */
    setenv(V, "42", 1);
    TT_ASSERT_EQ(hccl_param_cached_test(), 10);
    setenv(V, "3", 1);
    TT_ASSERT_EQ(hccl_param_cached_test(), 10);
    racing_first_reads();
    return tt_report("test_param");
}
