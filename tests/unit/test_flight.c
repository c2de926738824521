/*
 * test_flight.c - the flight recorder (src/core/flight.c) under concurrent use.
 *
 * Operations of one communicator are recorded from several threads at once (each
 * enqueuing thread, the streams' workers): every recorded operation must get an id of
 * its own, even when the ring is so small (HCCL_FLIGHT_RECORDER_SIZE=1, 2) that the
 * threads keep reusing each other's entries. Dumps of one communicator to one path
 * that overlap (a failing operation's and a watchdog's, say) leave a whole dump
 * there, never a mix of both. A default dump path stays inside its directory whatever
 * the communicator's name. A dump above RLIMIT_FSIZE fails without killing the
 * process. HCCL_FLIGHT_RECORDER_SIZE=0 writes no dumps. A long HCCL_FLIGHT_RECORDER_DIR
 * is kept whole.
 */
#include "core/flight.h"
#include "util/util.h"
#include "tinytest.h"

#include <cjson/cJSON.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NT 2
#define RUN_S 1.0

static hccl_flight g_f;
static uint64_t g_sum[NT], g_count[NT];
static volatile int g_go;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *enqueuer(void *p)
{
    long t = (long)p;
    hccl_op_args a;
    memset(&a, 0, sizeof a);
    a.type = HCCL_OP_ALLREDUCE;
    a.count = (uint64_t)t + 1;
    a.dtype = HCCL_DATA_TYPE_FP32;
    while (!g_go) {
    }
    double end = now_s() + RUN_S;
    uint64_t n = 0, sum = 0;
    for (;;) {
        for (int i = 0; i < 1024; i++, n++) sum += hccl_flight_enqueue(&g_f, &a, 1);
        if (now_s() >= end) break;
    }
    g_sum[t] = sum;
    g_count[t] = n;
    return NULL;
}

/* Each id handed out once: an enqueue returns the id of the entry it made, not of the
 * one another thread made in the same place just after. The ids are 1..total, so
 * they sum to total (total + 1) / 2 exactly when none was handed out twice. */
static void unique_ids(const char *size)
{
    /* HCCL_FLIGHT_RECORDER_SIZE is read once per process (util/param.h): the caller
     * runs each size in a child of its own, and the ring must have that size. */
    setenv("HCCL_FLIGHT_RECORDER_SIZE", size, 1);
    hccl_flight_init(&g_f, 2);
    TT_ASSERT_MSG(g_f.cap == (uint32_t)atoi(size), "HCCL_FLIGHT_RECORDER_SIZE=%s made a ring of %u entries", size,
                  g_f.cap);
    g_go = 0;
    pthread_t th[NT];
    for (long t = 0; t < NT; t++) TT_ASSERT(pthread_create(&th[t], NULL, enqueuer, (void *)t) == 0);
    g_go = 1;
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    uint64_t total = 0, sum = 0;
    for (int t = 0; t < NT; t++) {
        total += g_count[t];
        sum += g_sum[t];
    }
    uint64_t want = total * (total + 1) / 2;
    TT_ASSERT_MSG(sum == want, "HCCL_FLIGHT_RECORDER_SIZE=%s: %llu enqueues from %d threads were handed ids that sum "
                  "to %llu, not %llu: some id was handed out twice", size, (unsigned long long)total, NT,
                  (unsigned long long)sum, (unsigned long long)want);
    if (sum == want)
        printf("HCCL_FLIGHT_RECORDER_SIZE=%s: %llu enqueues from %d threads, every id distinct\n", size,
               (unsigned long long)total, NT);
    hccl_flight_free(&g_f);
}

/* ---- overlapping dumps to one path */

#define DUMP_ROUNDS 150
static pthread_barrier_t g_bar;
static char g_path[256];
static int g_dump_failed;

static void *dumper(void *p)
{
    long t = (long)p;
    /* Dumps of very different lengths: a long reason against a short one. */
    static char long_reason[3000];
    memset(long_reason, 'x', sizeof long_reason - 1);
    for (int i = 0; i < DUMP_ROUNDS; i++) {
        pthread_barrier_wait(&g_bar);
        if (hccl_flight_dump(&g_f, g_path, "comm", 0, 2, t ? long_reason : "short", NULL, 0) != 0)
            __atomic_add_fetch(&g_dump_failed, 1, __ATOMIC_RELAXED);
        pthread_barrier_wait(&g_bar);
    }
    return NULL;
}

static void overlapping_dumps(void)
{
    setenv("HCCL_FLIGHT_RECORDER_SIZE", "256", 1);
    hccl_flight_init(&g_f, 2);
    TT_ASSERT_EQ(g_f.cap, 256);
    hccl_op_args a;
    memset(&a, 0, sizeof a);
    a.type = HCCL_OP_ALLREDUCE;
    a.dtype = HCCL_DATA_TYPE_FP32;
    for (int i = 0; i < 256; i++) {
        a.count = (uint64_t)i * 977;
        uint64_t id = hccl_flight_enqueue(&g_f, &a, 1);
        hccl_flight_end(&g_f, id, (uint32_t)i + 1, (i & 3) ? NULL : "an error text of some length", 2);
    }
    char dir[] = "/tmp/test_flight_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(g_path, sizeof g_path, "%s/dump.json", dir);
    pthread_barrier_init(&g_bar, NULL, NT + 1);
    pthread_t th[NT];
    for (long t = 0; t < NT; t++) pthread_create(&th[t], NULL, dumper, (void *)t);
    int torn = 0;
    static char buf[1 << 20];
    for (int i = 0; i < DUMP_ROUNDS; i++) {
        pthread_barrier_wait(&g_bar);
        pthread_barrier_wait(&g_bar);
        FILE *in = fopen(g_path, "r");
        size_t n = in ? fread(buf, 1, sizeof buf - 1, in) : 0;
        if (in) fclose(in);
        buf[n] = 0;
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(buf, &end, 1); /* one document, nothing after it */
        torn += !j;
        cJSON_Delete(j);
    }
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    TT_ASSERT_MSG(g_dump_failed == 0, "%d of %d dumps failed (see the WARN lines)", g_dump_failed, 2 * DUMP_ROUNDS);
    TT_ASSERT_MSG(torn == 0, "%d of %d overlapping pairs of dumps left a file that is not one JSON document", torn,
                  DUMP_ROUNDS);
    DIR *d = opendir(dir);
    int left = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            left += strcmp(e->d_name, "dump.json") != 0;
            unlink(p);
        }
    if (d) closedir(d);
    rmdir(dir);
    TT_ASSERT_MSG(left == 0, "%d temporary files left beside the dump", left);
    hccl_flight_free(&g_f);
}

/* A dump to the default path (HCCL_FLIGHT_RECORDER_DIR) of a communicator whose
 * configured name holds '/' and '..' stays inside the directory. */
static void default_path_stays_in_dir(void)
{
    char dir[] = "/tmp/test_flight_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    char sub[64];
    snprintf(sub, sizeof sub, "%s/d", dir);
    TT_ASSERT(mkdir(sub, 0700) == 0);
    setenv("HCCL_FLIGHT_RECORDER_DIR", sub, 1);
    hccl_flight f;
    hccl_flight_init(&f, 2);
    char written[4096] = "";
    TT_ASSERT_EQ(hccl_flight_dump(&f, NULL, "../x/y", 0, 2, "why", written, sizeof written), 0);
    char want[256];
    snprintf(want, sizeof want, "%s/hccl_fr_.._x_y_r0_p%d.json", sub, (int)getpid());
    TT_ASSERT_MSG(strcmp(written, want) == 0, "the dump of comm \"../x/y\" went to %s, not %s", written, want);
    unlink(want);
    rmdir(sub);
    rmdir(dir);
    hccl_flight_free(&f);
    unsetenv("HCCL_FLIGHT_RECORDER_DIR");
}

/* HCCL_FLIGHT_RECORDER_DIR longer than 1023 characters (a deep job directory) is kept
 * whole: it was cut to 1023, and the dumps went to that other, shorter path (failing
 * with "No such file or directory" and a WARN naming the wrong path). One too long
 * for any file name in it fails with a WARN, writing nothing. */
static void long_dir_kept_whole(void)
{
    char dir[] = "/tmp/test_flight_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    static char deep[2048];
    char comp[200];
    memset(comp, 'd', sizeof comp - 1);
    comp[sizeof comp - 1] = 0;
    size_t n = (size_t)snprintf(deep, sizeof deep, "%s", dir);
    for (int i = 0; i < 7; i++) { /* about 1420 characters */
        n += (size_t)snprintf(deep + n, sizeof deep - n, "/%s", comp);
        TT_ASSERT(mkdir(deep, 0700) == 0);
    }
    setenv("HCCL_FLIGHT_RECORDER_DIR", deep, 1);
    hccl_flight f;
    hccl_flight_init(&f, 2);
    char written[4096] = "";
    TT_ASSERT_EQ(hccl_flight_dump(&f, NULL, "c", 0, 2, "why", written, sizeof written), 0);
    char want[4096];
    snprintf(want, sizeof want, "%s/hccl_fr_c_r0_p%d.json", deep, (int)getpid());
    TT_ASSERT_MSG(strcmp(written, want) == 0 && access(want, F_OK) == 0,
                  "a dump to a %zu-character HCCL_FLIGHT_RECORDER_DIR went to \"%s\"", strlen(deep), written);
    unlink(want);
    hccl_flight_free(&f);
    /* longer than any path: refused, nothing written anywhere */
    static char huge[5000];
    memset(huge, 'x', sizeof huge - 1);
    memcpy(huge, deep, n);
    huge[n] = '/';
    setenv("HCCL_FLIGHT_RECORDER_DIR", huge, 1);
    hccl_flight_init(&f, 2);
    TT_ASSERT(hccl_flight_dump(&f, NULL, "c", 0, 2, "why", NULL, 0) != 0);
    hccl_flight_free(&f);
    unsetenv("HCCL_FLIGHT_RECORDER_DIR");
    for (int i = 0; i < 7; i++) {
        TT_ASSERT_MSG(rmdir(deep) == 0, "%s not empty", deep);
        *strrchr(deep, '/') = 0;
    }
    rmdir(dir);
}

/* A dump larger than RLIMIT_FSIZE (ulimit -f) is not written: the call fails with a
 * WARN and leaves no file, where writing it used to raise SIGXFSZ and kill the
 * process (a failing operation dumps, so a peer's death killed the survivors). A
 * smaller one is written. In a child. */
static void dump_above_fsize_limit(void)
{
    char dir[] = "/tmp/test_flight_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/fr.json", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        hccl_flight f;
        hccl_flight_init(&f, 2);
        hccl_op_args a;
        memset(&a, 0, sizeof a);
        a.type = HCCL_OP_ALLREDUCE;
        a.count = 8;
        a.dtype = HCCL_DATA_TYPE_FP32;
        for (int i = 0; i < 16; i++) hccl_flight_enqueue(&f, &a, 1);
        struct rlimit rl = {16384, 16384};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        if (hccl_flight_dump(&f, path, "comm", 0, 2, "why", NULL, 0) != 0) _exit(11); /* fits */
        if (access(path, F_OK) != 0) _exit(12);
        rl.rlim_cur = 512;
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(13);
        unlink(path);
        if (hccl_flight_dump(&f, path, "comm", 0, 2, "why", NULL, 0) == 0) _exit(14);
        if (access(path, F_OK) == 0) _exit(15);
        DIR *d = opendir(dir);
        int left = 0;
        for (struct dirent *e; d && (e = readdir(d));) left += e->d_name[0] != '.';
        if (d) closedir(d);
        hccl_flight_free(&f);
        _exit(left ? 16 : 0);
    }
    TT_ASSERT_CHILD_OK(pid);
    unlink(path);
    rmdir(dir);
}

/* HCCL_FLIGHT_RECORDER_SIZE=0 turns the recorder off (docs/env.md): operations are not
 * recorded, and a dump, a failing operation's (path NULL) or a requested one, writes
 * no file and says so by returning 1, where it used to write dumps with no operations.
 * In a child: the size is read once per process. */
static void size_zero_writes_nothing(void)
{
    char dir[] = "/tmp/test_flight_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/fr.json", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("HCCL_FLIGHT_RECORDER_SIZE", "0", 1);
        setenv("HCCL_FLIGHT_RECORDER_DIR", dir, 1);
        hccl_flight f;
        hccl_flight_init(&f, 2);
        if (f.cap != 0) _exit(10);
        hccl_op_args a;
        memset(&a, 0, sizeof a);
        a.type = HCCL_OP_ALLREDUCE;
        a.count = 8;
        a.dtype = HCCL_DATA_TYPE_FP32;
        uint64_t id = hccl_flight_enqueue(&f, &a, 1);
        if (id != 0) _exit(11);
        hccl_flight_end(&f, id, 1, "an error", 2);
        char written[4096] = "";
        if (hccl_flight_dump(&f, NULL, "comm", 0, 2, "why", written, sizeof written) != 1) _exit(12);
        if (hccl_flight_dump(&f, path, "comm", 0, 2, "why", written, sizeof written) != 1) _exit(13);
        if (written[0]) _exit(14);
        hccl_flight_free(&f);
        _exit(0);
    }
    TT_ASSERT_CHILD_OK(pid);
    DIR *d = opendir(dir);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            printf("HCCL_FLIGHT_RECORDER_SIZE=0 left %s\n", p);
            unlink(p);
            left++;
        }
    if (d) closedir(d);
    rmdir(dir);
    TT_ASSERT_MSG(left == 0, "HCCL_FLIGHT_RECORDER_SIZE=0 (recorder off): dumps wrote %d files", left);
}

/* A point-to-point call's entry names its dtype and peer (Send, Recv) or its items
 * (BatchSendRecv): it read "point-to-point transfer", the fingerprint's text (such
 * calls match each other whatever they are), so a dump did not say who a rank was
 * sending to or waiting for. */
static const char *slurp(const char *path)
{
    static char buf[1 << 16];
    FILE *in = fopen(path, "r");
    if (!in) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, in);
    fclose(in);
    buf[n] = 0;
    return buf;
}

static void p2p_calls_named(void)
{
    char dir[] = "/tmp/test_flight_XXXXXX";
    TT_ASSERT(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/fr.json", dir);
    hccl_flight f;
    hccl_flight_init(&f, 4);
    hccl_op_args a;
    memset(&a, 0, sizeof a);
    a.type = HCCL_OP_SEND;
    a.count = 9;
    a.dtype = HCCL_DATA_TYPE_FP16;
    a.root = 3;
    hccl_flight_enqueue(&f, &a, 1);
    a.type = HCCL_OP_RECV;
    a.dtype = HCCL_DATA_TYPE_INT64;
    a.root = 2;
    hccl_flight_enqueue(&f, &a, 1);
    memset(&a, 0, sizeof a);
    a.type = HCCL_OP_BATCH_SEND_RECV;
    a.dtype = HCCL_DATA_TYPE_INT8;
    a.nitems = 5;
    hccl_flight_enqueue(&f, &a, 1);
    TT_ASSERT_EQ(hccl_flight_dump(&f, path, "comm", 0, 4, "why", NULL, 0), 0);
    const char *text = slurp(path);
    TT_ASSERT_MSG(text && strstr(text, "\"call\":\"Send(count=9, fp16, destRank=3)\"") &&
                      strstr(text, "\"call\":\"Recv(count=9, int64, srcRank=2)\"") &&
                      strstr(text, "\"call\":\"BatchSendRecv(itemNum=5)\""),
                  "point-to-point calls in the dump:\n%s", text ? text : "(none)");
    unlink(path);
    rmdir(dir);
    hccl_flight_free(&f);
}

/* unique_ids(size) in a child: the ring's size is fixed at the first read. */
static void unique_ids_in_child(const char *size)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        unique_ids(size);
        fflush(stdout);
        _exit(tt_failed ? 1 : 0);
    }
    int st = 0;
    TT_ASSERT(pid > 0 && waitpid(pid, &st, 0) == pid);
    TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "HCCL_FLIGHT_RECORDER_SIZE=%s: the child failed (status %d)",
                  size, st);
}

int main(void)
{
    /* Before anything here reads HCCL_FLIGHT_RECORDER_SIZE (once per process). */
    unique_ids_in_child("1");
    unique_ids_in_child("2");
    size_zero_writes_nothing();
    setenv("HCCL_FLIGHT_RECORDER_SIZE", "256", 1);
    default_path_stays_in_dir();
    long_dir_kept_whole();
    overlapping_dumps();
    dump_above_fsize_limit();
    p2p_calls_named();
    return tt_report("test_flight");
}
