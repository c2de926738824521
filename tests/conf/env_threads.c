/*
 * env_threads.c - the library's background threads never read the environment, and
 * block every signal.
 *
 * glibc's getenv is not safe against a setenv on another thread, and applications
 * call setenv while streams run (Python's os.environ, launchers, test harnesses): a
 * stream worker that read ACL_HOST_SPIN_US on its first wait crashed a fault test
 * that set RANK meanwhile. This program defines getenv itself, so every lookup of
 * libhccl and libascendcl comes here, and counts the ones made on a stream worker
 * ("acl-stream-N"), the responder ("hccl-responder") or the bootstrap root's thread
 * ("hccl-boot-root"). It runs a host task on a
 * stream and lets the worker wait on its own, then two communicators of
 * HcclCommInitAll with AllReduces queued on their streams while another thread
 * keeps calling setenv; the results are checked and no lookup may come from those
 * threads. Meanwhile every such thread must block all signals (/proc's SigBlk), so
 * that the application's handlers run on its own threads. Public API only (links
 * libhccl.so and libascendcl.so).
 */
#include <acl/acl.h>
#include <hccl/hccl.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

extern char **environ;
static atomic_int g_bad;
static char g_bad_name[128];

__attribute__((visibility("default"))) char *getenv(const char *name)
{
    char t[17] = "";
    prctl(PR_GET_NAME, t);
    if (!strncmp(t, "acl-stream-", 11) || !strcmp(t, "hccl-responder") || !strcmp(t, "hccl-boot-root")) {
        if (atomic_fetch_add(&g_bad, 1) == 0) snprintf(g_bad_name, sizeof g_bad_name, "%s on thread %s", name, t);
    }
    size_t n = strlen(name);
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

static int g_failed;
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                                                     \
            fprintf(stderr, "\n");                                                                                     \
            g_failed++;                                                                                                \
        }                                                                                                              \
    } while (0)

static atomic_int g_task_ran, g_stop;

static aclError mark(void *arg)
{
    (void)arg;
    atomic_store(&g_task_ran, 1);
    return ACL_SUCCESS;
}

/* The library's threads alive now (by name) and how many of them do not block every
 * signal (SigBlk in /proc: the application's handlers must run on its own threads). */
static int library_threads(int *unblocked)
{
    int n = 0;
    *unblocked = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[300], line[256], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
        fclose(f);
        if (strncmp(name, "acl-stream-", 11) && strcmp(name, "hccl-responder") && strcmp(name, "hccl-boot-root"))
            continue;
        n++;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        int all = 0;
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "SigBlk:", 7)) /* all but SIGKILL, SIGSTOP and glibc's two internal ones */
                all = (strtoull(line + 7, NULL, 16) | 0x180040100ull) == ~0ull;
        if (f) fclose(f);
        if (!all) {
            fprintf(stderr, "thread %s does not block every signal\n", name);
            (*unblocked)++;
        }
    }
    if (d) closedir(d);
    return n;
}

static void *setenv_loop(void *arg)
{
    (void)arg;
    char v[32];
    for (unsigned i = 0; !atomic_load(&g_stop); i++) {
        snprintf(v, sizeof v, "%u", i);
        setenv("ENV_THREADS_TEST_VAR", v, 1); /* grows and moves the environment */
        if (i % 64 == 0) unsetenv("ENV_THREADS_TEST_VAR");
    }
    return NULL;
}

int main(void)
{
    enum { N = 1024, OPS = 200 };
    /* 1: a stream's worker runs a task, then waits for more on its own. */
    CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice(0)");
    aclrtStream s[2] = {NULL, NULL};
    CHECK(aclrtCreateStream(&s[0]) == ACL_SUCCESS, "aclrtCreateStream");
    CHECK(aclrtLaunchHostTask(s[0], mark, NULL) == ACL_SUCCESS, "aclrtLaunchHostTask");
    for (int i = 0; i < 5000 && !atomic_load(&g_task_ran); i++) usleep(1000);
    CHECK(atomic_load(&g_task_ran), "the host task did not run within 5 s");
    usleep(20000); /* the worker spins, then sleeps, with nothing queued */

    /* 2: AllReduces queued on two communicators' streams, setenv running beside them. */
    int32_t devs[2] = {0, 1};
    HcclComm comm[2] = {NULL, NULL};
    CHECK(HcclCommInitAll(2, devs, comm) == HCCL_SUCCESS, "HcclCommInitAll");
    CHECK(aclrtSetDevice(1) == ACL_SUCCESS, "aclrtSetDevice(1)");
    CHECK(aclrtCreateStream(&s[1]) == ACL_SUCCESS, "aclrtCreateStream");
    float *in[2], *out[2];
    for (int r = 0; r < 2; r++) {
        in[r] = malloc(N * sizeof(float));
        out[r] = malloc(N * sizeof(float));
        for (int i = 0; i < N; i++) in[r][i] = (float)(r + 1) * (float)(i % 7);
    }
    pthread_t t;
    pthread_create(&t, NULL, setenv_loop, NULL);
    for (int k = 0; k < OPS && !g_failed; k++)
        for (int r = 0; r < 2; r++)
            CHECK(HcclAllReduce(in[r], out[r], N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm[r], s[r]) == HCCL_SUCCESS,
                  "HcclAllReduce on rank %d", r);
    for (int r = 0; r < 2; r++) CHECK(aclrtSynchronizeStream(s[r]) == ACL_SUCCESS, "aclrtSynchronizeStream");
    int unblocked, nthreads = library_threads(&unblocked);
    CHECK(nthreads >= 3, "found %d of the library's threads (2 stream workers and the responder expected)", nthreads);
    CHECK(unblocked == 0, "%d of the library's threads do not block every signal", unblocked);
    atomic_store(&g_stop, 1);
    pthread_join(t, NULL);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < N; i++)
            if (out[r][i] != 3.0f * (float)(i % 7)) {
                CHECK(0, "rank %d element %d = %g, want %g", r, i, out[r][i], 3.0f * (float)(i % 7));
                break;
            }
    for (int r = 0; r < 2; r++) {
        CHECK(HcclCommDestroy(comm[r]) == HCCL_SUCCESS, "HcclCommDestroy");
        CHECK(aclrtDestroyStream(s[r]) == ACL_SUCCESS, "aclrtDestroyStream");
        free(in[r]);
        free(out[r]);
    }
    CHECK(atomic_load(&g_bad) == 0, "%d environment lookup(s) on the library's background threads, the first: %s",
          atomic_load(&g_bad), g_bad_name);
    printf("env_threads: %s\n", g_failed ? "FAIL" : "PASS");
    return g_failed ? 1 : 0;
}
