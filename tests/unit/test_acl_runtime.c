/*
 * test_acl_runtime.c - the host runtime's devices, contexts, init, memory, copies,
 * error messages and behaviour after fork (streams and events: test_acl_stream.c).
 */
#include "tinytest.h"

#include "runtime/sharemem.h"

#include <acl/acl.h>

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_device_count(void)
{
    uint32_t n = 0;
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    unsetenv("HCCL_HOST_DEVICE_COUNT");
    TT_ASSERT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    TT_ASSERT_EQ(n, 8);
    setenv("HCCL_HOST_DEVICE_COUNT", "3", 1);
    TT_ASSERT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    TT_ASSERT_EQ(n, 3);
    setenv("ASCEND_RT_VISIBLE_DEVICES", "4,5", 1); /* takes precedence */
    TT_ASSERT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    TT_ASSERT_EQ(n, 2);
    setenv("ASCEND_RT_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7,8,9,10,11", 1);
    TT_ASSERT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    TT_ASSERT_EQ(n, 12);
    setenv("ASCEND_RT_VISIBLE_DEVICES", "", 1); /* empty: ignored */
    TT_ASSERT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    TT_ASSERT_EQ(n, 3);
    setenv("HCCL_HOST_DEVICE_COUNT", "abc", 1); /* invalid: default */
    TT_ASSERT_EQ(aclrtGetDeviceCount(&n), ACL_SUCCESS);
    TT_ASSERT_EQ(n, 8);
    unsetenv("ASCEND_RT_VISIBLE_DEVICES");
    unsetenv("HCCL_HOST_DEVICE_COUNT");
    TT_ASSERT_EQ(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
}

static void *thread_device(void *arg)
{
    int32_t *out = arg;
    int32_t d = -7;
    out[0] = aclrtGetDevice(&d); /* never set on this thread */
    out[1] = aclrtSetDevice(5);
    out[2] = aclrtGetDevice(&d);
    out[3] = d;
    return NULL;
}

static void test_set_device(void)
{
    int32_t d = -1;
    TT_ASSERT_EQ(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "aclrtSetDevice") != NULL);
    TT_ASSERT_EQ(aclrtSetDevice(8), ACL_ERROR_RT_INVALID_DEVICEID);
    TT_ASSERT_EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    TT_ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtGetDevice(&d), ACL_SUCCESS);
    TT_ASSERT_EQ(d, 1);
    int32_t out[4] = {0};
    pthread_t t;
    pthread_create(&t, NULL, thread_device, out);
    pthread_join(t, NULL);
    TT_ASSERT_EQ(out[0], ACL_ERROR_RT_CONTEXT_NULL);
    TT_ASSERT_EQ(out[1], ACL_SUCCESS);
    TT_ASSERT_EQ(out[2], ACL_SUCCESS);
    TT_ASSERT_EQ(out[3], 5);
    TT_ASSERT_EQ(aclrtGetDevice(&d), ACL_SUCCESS);
    TT_ASSERT_EQ(d, 1); /* unaffected by the other thread */
    TT_ASSERT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
    aclrtRunMode mode = ACL_DEVICE;
    TT_ASSERT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
    TT_ASSERT_EQ(mode, ACL_HOST);
    TT_ASSERT_EQ(aclrtSynchronizeDevice(), ACL_SUCCESS);
}

/* ---- aclrtResetDevice: the reset that drops the last aclrtSetDevice reference waits
 * for the device's streams, as upstream's does; earlier ones do not. */
static int reset_flag;
static aclError slow_set_flag(void *arg)
{
    (void)arg;
    usleep(100 * 1000);
    __atomic_store_n(&reset_flag, 1, __ATOMIC_RELEASE);
    return ACL_SUCCESS;
}

static aclError failing_task(void *arg)
{
    (void)arg;
    return ACL_ERROR_RT_INTERNAL_ERROR;
}

static void test_reset_device(void)
{
    aclrtStream s = NULL, other = NULL;
    TT_ASSERT_EQ(aclrtSetDevice(6), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(7), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS); /* another device's stream */
    TT_ASSERT_EQ(aclrtSetDevice(6), ACL_SUCCESS);         /* device 6: two references */

    __atomic_store_n(&reset_flag, 0, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, slow_set_flag, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetDevice(6), ACL_SUCCESS); /* one reference left: returns at once */
    TT_ASSERT_EQ(__atomic_load_n(&reset_flag, __ATOMIC_ACQUIRE), 0);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, failing_task, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetDevice(6), ACL_SUCCESS); /* the last one: waits for the tasks */
    TT_ASSERT_EQ(__atomic_load_n(&reset_flag, __ATOMIC_ACQUIRE), 1);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_INTERNAL_ERROR); /* the error stays for it */

    __atomic_store_n(&reset_flag, 0, __ATOMIC_RELEASE);
    TT_ASSERT_EQ(aclrtLaunchHostTask(other, slow_set_flag, NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetDevice(6), ACL_SUCCESS); /* no reference left: waits for device 6 only */
    TT_ASSERT_EQ(__atomic_load_n(&reset_flag, __ATOMIC_ACQUIRE), 0);
    TT_ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS);
    TT_ASSERT_EQ(__atomic_load_n(&reset_flag, __ATOMIC_ACQUIRE), 1);

    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtResetDevice(7), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
}

static void test_init(void)
{
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    TT_ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    TT_ASSERT_EQ(aclInit("/nonexistent/acl.json"), ACL_SUCCESS); /* warned, not fatal */
    TT_ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    TT_ASSERT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE); /* as upstream */
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "aclFinalize: already finalized") != NULL);
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS); /* a new cycle */
    TT_ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
    int32_t ma = -1, mi = -1, pa = -1;
    TT_ASSERT_EQ(aclrtGetVersion(&ma, &mi, &pa), ACL_SUCCESS);
    TT_ASSERT(ma >= 0 && mi >= 0 && pa >= 0);
    TT_ASSERT_EQ(aclrtGetVersion(&ma, NULL, &pa), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "aclrtGetVersion: minor") != NULL); /* says why */
}

static void test_contexts(void)
{
    aclrtContext c = NULL, cur = NULL, def = NULL;
    int32_t d = -1;
    TT_ASSERT_EQ(aclrtSetDevice(2), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtGetCurrentContext(&def), ACL_SUCCESS);
    TT_ASSERT(def != NULL);
    TT_ASSERT_EQ(aclrtCreateContext(&c, 3), ACL_SUCCESS);
    TT_ASSERT(c != NULL && c != def);
    TT_ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    TT_ASSERT(cur == c); /* a new context becomes current */
    TT_ASSERT_EQ(aclrtGetDevice(&d), ACL_SUCCESS);
    TT_ASSERT_EQ(d, 3);
    TT_ASSERT_EQ(aclrtSetCurrentContext(def), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtGetDevice(&d), ACL_SUCCESS);
    TT_ASSERT_EQ(d, 2);
    TT_ASSERT_EQ(aclrtDestroyContext(def), ACL_ERROR_INVALID_PARAM); /* default context */
    TT_ASSERT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyContext(c), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtSetCurrentContext(c), ACL_ERROR_RT_INVALID_HANDLE);
    int junk;
    TT_ASSERT_EQ(aclrtSetCurrentContext(&junk), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtSetCurrentContext(NULL), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT_EQ(aclrtCreateContext(&c, 100), ACL_ERROR_RT_INVALID_DEVICEID);
    TT_ASSERT_EQ(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static void test_malloc(void)
{
    static const size_t sizes[] = {1, 63, 64, 100, 4096, 262144, 262145, 1 << 20, 10u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int pol = 0; pol < 3; pol++) {
            void *p = NULL;
            TT_ASSERT_EQ(aclrtMalloc(&p, sizes[i], (aclrtMemMallocPolicy)pol), ACL_SUCCESS);
            TT_ASSERT(p != NULL);
            TT_ASSERT_EQ((uintptr_t)p % 64, 0);
            TT_ASSERT_MSG(all_zero(p, sizes[i]), "size %zu not zero-filled", sizes[i]);
            memset(p, 0xee, sizes[i]);
            TT_ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
            TT_ASSERT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM); /* double free */
        }
        void *h = NULL;
        TT_ASSERT_EQ(aclrtMallocHost(&h, sizes[i]), ACL_SUCCESS);
        TT_ASSERT_EQ((uintptr_t)h % 64, 0);
        TT_ASSERT(all_zero(h, sizes[i]));
        memset(h, 0x11, sizes[i]);
        TT_ASSERT_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM); /* wrong kind */
        TT_ASSERT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
        TT_ASSERT_EQ(aclrtFreeHost(h), ACL_ERROR_INVALID_PARAM);
    }
    void *p = NULL;
    int local = 0;
    TT_ASSERT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMalloc(&p, 16, (aclrtMemMallocPolicy)77), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "policy 77") != NULL);
    TT_ASSERT_EQ(aclrtMalloc(&p, SIZE_MAX / 2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
    TT_ASSERT_EQ(aclrtMalloc(&p, (size_t)1 << 46, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_BAD_ALLOC);
    TT_ASSERT_EQ(aclrtFree(&local), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    char *heap = malloc(1);
    TT_ASSERT_EQ(aclrtFreeHost(heap), ACL_ERROR_INVALID_PARAM);
    free(heap);
    TT_ASSERT_EQ(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMallocHost(NULL, 8), ACL_ERROR_INVALID_PARAM);
    /* upstream's P2P policy twins and memory-type flags are accepted */
    TT_ASSERT_EQ(aclrtMalloc(&p, 16, (aclrtMemMallocPolicy)(0x1000 | 3)), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
}

/* Many live allocations, freed in a scrambled order: the registry grows and shrinks. */
static void test_registry(void)
{
    enum { N = 20000 };
    void **ps = calloc(N, sizeof *ps);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= aclrtMalloc(&ps[i], 8 + (size_t)(i % 200), ACL_MEM_MALLOC_HUGE_FIRST) == 0;
    TT_ASSERT(ok);
    /* i -> i * 7919 mod N is a permutation (7919 is prime), so this frees N/2 distinct pointers */
    for (int i = 0; i < N; i += 2) ok &= aclrtFree(ps[(size_t)i * 7919 % N]) == ACL_SUCCESS;
    TT_ASSERT(ok);
    int freed = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        aclError rc = aclrtFree(ps[i]);
        if (rc == ACL_SUCCESS) freed++;
        else if (rc == ACL_ERROR_INVALID_PARAM) bad++;
    }
    TT_ASSERT_EQ(freed, N / 2);
    TT_ASSERT_EQ(bad, N / 2);
    for (int i = 0; i < N; i++) TT_ASSERT_EQ(aclrtFree(ps[i]), ACL_ERROR_INVALID_PARAM);
    free(ps);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* Blocks of the small-allocation arena (runtime/devarena.c, where shared memory is
 * on) do not overlap, a reused block is zero again, and pattern checks hold while
 * other blocks come and go. */
static int arena_round(unsigned seed, int n)
{
    unsigned char **ps = calloc((size_t)n, sizeof *ps);
    size_t *sz = calloc((size_t)n, sizeof *sz);
    int bad = !ps || !sz;
    for (int round = 0; !bad && round < 3; round++) {
        for (int i = 0; i < n; i++) {
            if (ps[i] && (i + round) % 2) continue; /* keep every other one across rounds */
            if (ps[i]) bad += aclrtFree(ps[i]) != ACL_SUCCESS;
            seed = seed * 1103515245u + 12345u;
            sz[i] = 1 + (seed >> 8) % ((seed >> 4) % 4 ? 5000 : 262144);
            bad += aclrtMalloc((void **)&ps[i], sz[i], ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS;
            if (bad) break;
            bad += (uintptr_t)ps[i] % 64 != 0;
            bad += !all_zero(ps[i], sz[i]);
            memset(ps[i], (int)(i & 0xff), sz[i]);
        }
        for (int i = 0; !bad && i < n; i++)
            for (size_t j = 0; j < sz[i]; j += 61) bad += ps[i][j] != (unsigned char)(i & 0xff);
    }
    for (int i = 0; ps && sz && i < n; i++)
        if (ps[i]) bad += aclrtFree(ps[i]) != ACL_SUCCESS;
    free(ps);
    free(sz);
    return bad;
}

static void *thread_arena(void *arg)
{
    *(int *)arg = arena_round((unsigned)(uintptr_t)arg, 300);
    return NULL;
}

static void test_arena(void)
{
    const int fds = count_fds();
    TT_ASSERT_EQ(arena_round(7, 2000), 0);
    TT_ASSERT_EQ(count_fds(), fds); /* every chunk went back with its last block */
    pthread_t t[4];
    int bad[4];
    for (int i = 0; i < 4; i++) TT_ASSERT_EQ(pthread_create(&t[i], NULL, thread_arena, &bad[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        TT_ASSERT_EQ(bad[i], 0);
    }
    TT_ASSERT_EQ(count_fds(), fds);
    /* While a communicator holds the directory, a lone block's chunk stays as a spare:
     * allocating and freeing it in a loop reuses it (no memfd each time); the spare
     * goes when the holder lets go. */
    int dirfd = aclrtInternalShareDirAcquire();
    const int fds_dir = count_fds();
    void *first = NULL, *p = NULL;
    int same = 1, zero = 1;
    for (int i = 0; i < 100; i++) {
        TT_ASSERT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        if (!first) first = p;
        same &= p == first;
        zero &= all_zero(p, 4096);
        memset(p, 0x5a, 4096);
        TT_ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
    TT_ASSERT(zero);
    if (dirfd >= 0) {
        TT_ASSERT(same);
        TT_ASSERT_EQ(count_fds(), fds_dir + 1); /* the spare */
    }
    aclrtInternalShareDirRelease();
    TT_ASSERT_EQ(count_fds(), fds);
}

static void test_memcpy_memset(void)
{
    char a[64], b[64];
    memset(a, 'a', sizeof a);
    memset(b, 'b', sizeof b);
    TT_ASSERT_EQ(aclrtMemcpy(b, 64, a, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    TT_ASSERT(b[0] == 'a' && b[31] == 'a' && b[32] == 'b');
    TT_ASSERT_EQ(aclrtMemcpy(b, 32, a, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_MSG(strcmp(aclGetRecentErrMsg(), "aclrtMemcpy: count 64 exceeds destMax 32") == 0, "msg '%s'",
                  aclGetRecentErrMsg());
    TT_ASSERT_EQ(aclrtMemcpy(NULL, 64, a, 1, ACL_MEMCPY_DEFAULT), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpy(b, 64, NULL, 1, ACL_MEMCPY_DEFAULT), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpy(NULL, 0, NULL, 0, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
    for (int k = ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE; k <= ACL_MEMCPY_INTER_DEVICE_TO_DEVICE; k++) /* upstream's */
        TT_ASSERT_EQ(aclrtMemcpy(b, 64, a, 1, (aclrtMemcpyKind)k), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpy(b, 64, a, 1, (aclrtMemcpyKind)8), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemcpy(b, 64, a, 1, (aclrtMemcpyKind)-1), ACL_ERROR_INVALID_PARAM);
    /* overlapping: memmove semantics */
    for (int i = 0; i < 64; i++) a[i] = (char)i;
    TT_ASSERT_EQ(aclrtMemcpy(a + 8, 56, a, 48, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    int ok = 1;
    for (int i = 0; i < 48; i++) ok &= a[8 + i] == (char)i;
    TT_ASSERT(ok);

    void *d = NULL;
    TT_ASSERT_EQ(aclrtMalloc(&d, 128, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemset(d, 128, 0x1AB, 100), ACL_SUCCESS);
    unsigned char *u = d;
    TT_ASSERT(u[0] == 0xAB && u[99] == 0xAB && u[100] == 0);
    TT_ASSERT_EQ(aclrtMemset(d, 64, 1, 65), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(strstr(aclGetRecentErrMsg(), "exceeds maxCount") != NULL);
    TT_ASSERT_EQ(aclrtMemset(NULL, 64, 1, 1), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemset(NULL, 0, 1, 0), ACL_SUCCESS);
    TT_ASSERT_EQ(u[64], 0xAB); /* untouched by the failed call */
    TT_ASSERT_EQ(aclrtFree(d), ACL_SUCCESS);
}

static void *thread_errmsg(void *arg)
{
    char *out = arg;
    strcpy(out, aclGetRecentErrMsg()); /* empty: errors are per thread */
    aclrtFree(NULL);
    strcat(out, "|");
    strcat(out, aclGetRecentErrMsg());
    return NULL;
}

static void test_errmsg(void)
{
    aclrtMemcpy(NULL, 0, NULL, 8, ACL_MEMCPY_DEFAULT);
    char before[512];
    snprintf(before, sizeof before, "%s", aclGetRecentErrMsg());
    char out[1100] = {0};
    pthread_t t;
    pthread_create(&t, NULL, thread_errmsg, out);
    pthread_join(t, NULL);
    TT_ASSERT_MSG(strncmp(out, "|aclrtFree:", 11) == 0, "other thread saw '%s'", out);
    TT_ASSERT_EQ(strcmp(before, aclGetRecentErrMsg()), 0);
    TT_ASSERT(strstr(before, "aclrtMemcpy") != NULL);
}

static aclError add_one(void *arg)
{
    (*(int *)arg)++;
    return ACL_SUCCESS;
}

/* The child of a fork can allocate, copy and use new streams; old streams are invalid there. */
static void test_fork(void)
{
    aclrtStream s = NULL;
    void *p = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    aclrtEvent ev = NULL;
    TT_ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    pid_t pid = fork();
    if (pid == 0) {
        int fails = 0, n = 0;
        void *q = NULL;
        aclrtStream s2 = NULL;
        char src[16] = "hello";
        fails += aclrtMalloc(&q, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS;
        fails += aclrtMemcpy(q, 4096, src, sizeof src, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS;
        fails += strcmp(q, "hello") != 0;
        fails += aclrtFree(q) != ACL_SUCCESS;
        fails += aclrtFree(p) != ACL_SUCCESS; /* the parent's allocation, copied */
        fails += aclrtSynchronizeStream(s) != ACL_ERROR_RT_INVALID_HANDLE;
#ifdef __SANITIZE_THREAD__
        _exit(fails); /* TSan cannot start threads in the child of a multi-threaded process */
#endif
        fails += aclrtCreateStream(&s2) != ACL_SUCCESS;
        for (int i = 0; i < 100; i++) fails += aclrtLaunchHostTask(s2, add_one, &n) != ACL_SUCCESS;
        fails += aclrtRecordEvent(ev, s2) != ACL_SUCCESS;
        fails += aclrtSynchronizeEvent(ev) != ACL_SUCCESS;
        fails += aclrtSynchronizeStream(s2) != ACL_SUCCESS;
        fails += n != 100;
        fails += aclrtDestroyStream(s2) != ACL_SUCCESS;
        _exit(fails);
    }
    int status = -1;
    TT_ASSERT(pid > 0);
    TT_ASSERT_EQ(waitpid(pid, &status, 0), pid);
    TT_ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS); /* parent unaffected */
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
}

int main(void)
{
    test_device_count();
    test_set_device();
    test_init();
    test_reset_device();
    test_contexts();
    test_malloc();
    test_registry();
    test_arena();
    test_memcpy_memset();
    test_errmsg();
    test_fork();
    return tt_report("test_acl_runtime");
}
