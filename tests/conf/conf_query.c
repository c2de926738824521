/*
 * conf_query.c - conformance of communicator queries, destroyed handles and
 * sub-communicators.
 *
 * queries: HcclGetRankSize/RankId, HcclGetCommName (one name on every rank, another for
 *   the second communicator), HcclCommGetHandleWithName, HcclGetErrorString (a distinct
 *   non-empty text per code 0..24), HcclGetCommAsyncError, HcclSet/GetConfig, the ACL
 *   device queries, aclrtMalloc zero fill; then HcclCommDestroy of the second
 *   communicator and calls on the destroyed handle (an error, never a crash), while the
 *   first communicator keeps working; then rank 0 forks 20 times while another thread
 *   keeps looking up a handle, and each child creates, uses and destroys a communicator.
 * subcomm: HcclCommConfigInit defaults; HcclCreateSubCommConfig for even and odd ranks
 *   (the odd group's root late), for all ranks in reverse order (with a configured
 *   name; then that subCommId and that name again: refused) and for each rank alone; collectives on the sub-communicators interleaved
 *   with the parent's. Then lifecycle edges on an all-ranks sub-communicator: destroyed
 *   inside an open group holding its Send/Recv (destroy returns within 2 s and
 *   HcclGroupEnd fails with HCCL_E_PARA instead of destroy waiting forever); its stale
 *   handle refused even after another sub-communicator was created; each rank's own
 *   one-rank sub-communicator destroyed by a host task with an AllReduce of it queued
 *   behind on the same stream (destroy returns, the AllReduce fails); and (processes
 *   only) a fork child destroying its copy of one with an operation queued returns
 *   within 10 s while the parent's operation completes.
 * config: HcclCommInitRootInfoConfig with a configured name and a 1 MB buffer (a 6 MiB
 *   AllReduce must still be right), then with an older, shorter config struct (size
 *   and version of a version-1 caller, garbage after it); one rank arrives late.
 *   Threads as ranks (3 or more): a retry of HcclCreateSubCommConfig with the same
 *   subCommId and rankIds after a try where a rank failed in the mesh must succeed.
 */
#include "conf.h"
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* AllReduce(SUM) of one int32 per rank, then AllGather of it; checks both. */
static void check_comm(conf_ctx *ctx, HcclComm comm, int32_t mine, const int32_t *all, int nr, const char *what)
{
    char label[160];
    void *s = NULL, *r = NULL, *g = NULL;
    int32_t sum = 0, out = 0, *gat = calloc((size_t)nr, 4);
    for (int i = 0; i < nr; i++) sum += all[i];
    snprintf(label, sizeof label, "%s: AllReduce + AllGather", what);
    conf_step(ctx, "%s", label);
    if (!conf_acl_ok(ctx, aclrtMalloc(&s, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&r, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&g, 4 * (size_t)nr, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc"))
        goto out;
    aclrtMemcpy(s, 4, &mine, 4, ACL_MEMCPY_HOST_TO_DEVICE);
    if (!conf_ok(ctx, HcclAllReduce(s, r, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, ctx->stream), label) ||
        !conf_ok(ctx, HcclAllGather(s, g, 1, HCCL_DATA_TYPE_INT32, comm, ctx->stream), label) ||
        !conf_sync(ctx, ctx->stream, label))
        goto out;
    aclrtMemcpy(&out, 4, r, 4, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtMemcpy(gat, 4 * (size_t)nr, g, 4 * (size_t)nr, ACL_MEMCPY_DEVICE_TO_HOST);
    if (out != sum) conf_fail(ctx, "%s: AllReduce gave %d, expected %d", what, out, sum);
    for (int i = 0; i < nr; i++)
        if (gat[i] != all[i]) {
            conf_fail(ctx, "%s: AllGather element %d is %d, expected %d", what, i, gat[i], all[i]);
            break;
        }
out:
    if (s) aclrtFree(s);
    if (r) aclrtFree(r);
    if (g) aclrtFree(g);
    free(gat);
}

static void check_world(conf_ctx *ctx, HcclComm comm, const char *what)
{
    int32_t all[CONF_MAX_RANKS];
    for (int i = 0; i < ctx->nranks; i++) all[i] = 10 * i + 1;
    check_comm(ctx, comm, 10 * ctx->rank + 1, all, ctx->nranks, what);
}

static void check_name(conf_ctx *ctx, HcclComm comm, char *name, const char *what)
{
    char buf[COMM_NAME_MAX_LENGTH + 16];
    memset(buf, 0x7f, sizeof buf);
    name[0] = '\0';
    if (!conf_ok(ctx, HcclGetCommName(comm, buf), what)) return;
    if (memchr(buf, '\0', COMM_NAME_MAX_LENGTH) == NULL) {
        conf_fail(ctx, "%s: name not NUL-terminated within %d bytes", what, COMM_NAME_MAX_LENGTH);
        return;
    }
    if (buf[0] == '\0') conf_fail(ctx, "%s: empty communicator name", what);
    memcpy(name, buf, COMM_NAME_MAX_LENGTH); /* NUL within the first COMM_NAME_MAX_LENGTH bytes */
}

static void error_strings(conf_ctx *ctx)
{
    const char *s[HCCL_E_OOM + 1];
    for (int c = 0; c <= HCCL_E_OOM; c++) {
        s[c] = HcclGetErrorString((HcclResult)c);
        if (s[c] == NULL || s[c][0] == '\0') {
            conf_fail(ctx, "HcclGetErrorString(%d) is %s", c, s[c] ? "empty" : "NULL");
            continue;
        }
        for (int d = 0; d < c; d++)
            if (s[d] && strcmp(s[c], s[d]) == 0)
                conf_fail(ctx, "HcclGetErrorString(%d) == HcclGetErrorString(%d) == \"%s\"", c, d, s[c]);
    }
    const char *x = HcclGetErrorString(HCCL_E_RESERVED), *y = HcclGetErrorString((HcclResult)1000);
    if (x == NULL || y == NULL) conf_fail(ctx, "HcclGetErrorString of an unknown code returned NULL");
}

static void acl_queries(conf_ctx *ctx)
{
    int32_t dev = -1;
    uint32_t count = 0;
    conf_step(ctx, "ACL queries");
    if (conf_acl_ok(ctx, aclrtGetDevice(&dev), "aclrtGetDevice") && dev != ctx->rank)
        conf_fail(ctx, "aclrtGetDevice gave %d, expected %d", dev, ctx->rank);
    if (conf_acl_ok(ctx, aclrtGetDeviceCount(&count), "aclrtGetDeviceCount") && count < (uint32_t)ctx->nranks)
        conf_fail(ctx, "aclrtGetDeviceCount gave %u with %d devices in use", count, ctx->nranks);
    /* aclrtMalloc memory comes back zero-filled, even after a dirty block was freed */
    for (int k = 0; k < 2; k++) {
        size_t n = (size_t)1 << 20;
        unsigned char *p = NULL, *h = malloc(n);
        if (h == NULL) abort();
        if (conf_acl_ok(ctx, aclrtMalloc((void **)&p, n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(1 MiB)")) {
            aclrtMemcpy(h, n, p, n, ACL_MEMCPY_DEVICE_TO_HOST);
            for (size_t i = 0; i < n; i++)
                if (h[i]) {
                    conf_fail(ctx, "aclrtMalloc memory not zero-filled (byte %zu is %d, pass %d)", i, h[i], k);
                    break;
                }
            conf_acl_ok(ctx, aclrtMemset(p, n, 0x5a, n), "aclrtMemset");
            aclrtMemcpy(h, n, p, n, ACL_MEMCPY_DEVICE_TO_HOST);
            if (h[0] != 0x5a || h[n - 1] != 0x5a) conf_fail(ctx, "aclrtMemset did not fill");
            aclrtFree(p);
        }
        free(h);
    }
}

static atomic_int lookups_stop;

static void *look_up_handle(void *arg)
{
    uint32_t v;
    while (!atomic_load(&lookups_stop)) HcclGetRankSize((HcclComm)arg, &v);
    return NULL;
}

/* fork while another thread keeps looking up a handle (every such call holds the
 * library's lock of live handles for a moment): each child creates, uses and destroys
 * a communicator of its own, which it could not while that lock stayed held in it. */
static void fork_while_looking_up(conf_ctx *ctx)
{
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer cannot start threads in the child of a multi-threaded fork
     * ("not supported. Dying"), and the child's communicator needs some. */
    (void)ctx;
    return;
#endif
    conf_step(ctx, "fork while another thread looks up handles; each child makes its own communicator");
    pthread_t t;
    atomic_store(&lookups_stop, 0);
    if (pthread_create(&t, NULL, look_up_handle, ctx->comm) != 0) {
        conf_fail(ctx, "pthread_create");
        return;
    }
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            signal(SIGALRM, SIG_DFL); /* not the watchdog's handler: a hang shows as SIGALRM */
            alarm(5);
            HcclRootInfo ri;
            HcclComm c;
            int32_t x[4] = {1, 2, 3, 4};
            if (HcclGetRootInfo(&ri) != HCCL_SUCCESS || HcclCommInitRootInfo(1, &ri, 0, &c) != HCCL_SUCCESS) _exit(2);
            if (HcclAllReduce(x, x, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c, NULL) != HCCL_SUCCESS || x[3] != 4)
                _exit(3);
            _exit(HcclCommDestroy(c) == HCCL_SUCCESS ? 0 : 4);
        }
        int status = -1;
        if (pid > 0) waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            conf_fail(ctx, "fork %d: the child's own communicator failed (status %#x; SIGALRM: it hung)", i, status);
            break;
        }
    }
    atomic_store(&lookups_stop, 1);
    pthread_join(t, NULL);
}

void conf_suite_queries(conf_ctx *ctx)
{
    int n = ctx->nranks, r = ctx->rank;
    uint32_t v = 12345;
    char what[96];

    for (int k = 0; k < 2; k++) {
        HcclComm c = k ? ctx->comm2 : ctx->comm;
        conf_step(ctx, "rank queries comm #%d", k);
        snprintf(what, sizeof what, "HcclGetRankSize(comm #%d)", k);
        if (conf_ok(ctx, HcclGetRankSize(c, &v), what) && v != (uint32_t)n)
            conf_fail(ctx, "%s gave %u, expected %d", what, v, n);
        snprintf(what, sizeof what, "HcclGetRankId(comm #%d)", k);
        if (conf_ok(ctx, HcclGetRankId(c, &v), what) && v != (uint32_t)r)
            conf_fail(ctx, "%s gave %u, expected %d", what, v, r);
        HcclResult ae = HCCL_E_RESERVED;
        snprintf(what, sizeof what, "HcclGetCommAsyncError(comm #%d)", k);
        if (conf_ok(ctx, HcclGetCommAsyncError(c, &ae), what) && ae != HCCL_SUCCESS)
            conf_fail(ctx, "%s reported %d on a healthy communicator", what, (int)ae);
    }

    conf_step(ctx, "HcclGetCommName");
    check_name(ctx, ctx->comm, g_shared->names[r], "HcclGetCommName(comm)");
    check_name(ctx, ctx->comm2, g_shared->names2[r], "HcclGetCommName(comm2)");
    g_shared->handles[r] = (uintptr_t)ctx->comm;
    conf_host_barrier(ctx);
    if (strcmp(g_shared->names[r], g_shared->names[0]) != 0)
        conf_fail(ctx, "comm name \"%s\" differs from rank 0's \"%s\"", g_shared->names[r], g_shared->names[0]);
    if (strcmp(g_shared->names2[r], g_shared->names2[0]) != 0)
        conf_fail(ctx, "comm2 name \"%s\" differs from rank 0's \"%s\"", g_shared->names2[r], g_shared->names2[0]);
    if (strcmp(g_shared->names[r], g_shared->names2[r]) == 0)
        conf_fail(ctx, "two communicators share the name \"%s\"", g_shared->names[r]);

    conf_step(ctx, "HcclCommGetHandleWithName");
    HcclComm h = NULL;
    if (conf_ok(ctx, HcclCommGetHandleWithName(g_shared->names[r], &h), "HcclCommGetHandleWithName")) {
        if (ctx->mode == MODE_PROCS) {
            if (h != ctx->comm) conf_fail(ctx, "HcclCommGetHandleWithName gave %p, expected %p", h, ctx->comm);
        } else {
            /* one process holds every rank's communicator of that name: any one of them */
            int found = 0;
            for (int q = 0; q < n; q++) found |= g_shared->handles[q] == (uintptr_t)h;
            if (!found) conf_fail(ctx, "HcclCommGetHandleWithName gave %p, not a communicator of that name", h);
        }
    }
    h = NULL;
    if (HcclCommGetHandleWithName("conf-no-such-communicator", &h) == HCCL_SUCCESS)
        conf_fail(ctx, "HcclCommGetHandleWithName of an unknown name succeeded (%p)", h);

    if (r == 0) {
        conf_step(ctx, "HcclGetErrorString");
        error_strings(ctx);
        conf_step(ctx, "HcclSetConfig/HcclGetConfig");
        HcclConfigValue cv = {.value = 1}, got = {.value = -1};
        if (conf_ok(ctx, HcclSetConfig(HCCL_DETERMINISTIC, cv), "HcclSetConfig(DETERMINISTIC, 1)") &&
            conf_ok(ctx, HcclGetConfig(HCCL_DETERMINISTIC, &got), "HcclGetConfig") && got.value != 1)
            conf_fail(ctx, "HcclGetConfig(DETERMINISTIC) gave %d after setting 1", got.value);
        cv.value = 2; /* upstream's strict */
        if (conf_ok(ctx, HcclSetConfig(HCCL_DETERMINISTIC, cv), "HcclSetConfig(DETERMINISTIC, 2)") &&
            conf_ok(ctx, HcclGetConfig(HCCL_DETERMINISTIC, &got), "HcclGetConfig") && got.value != 2)
            conf_fail(ctx, "HcclGetConfig(DETERMINISTIC) gave %d after setting 2", got.value);
        cv.value = 3;
        if (HcclSetConfig(HCCL_DETERMINISTIC, cv) != HCCL_E_PARA)
            conf_fail(ctx, "HcclSetConfig(DETERMINISTIC, 3) was not refused with HCCL_E_PARA");
        cv.value = 0;
        if (conf_ok(ctx, HcclSetConfig(HCCL_DETERMINISTIC, cv), "HcclSetConfig(DETERMINISTIC, 0)") &&
            conf_ok(ctx, HcclGetConfig(HCCL_DETERMINISTIC, &got), "HcclGetConfig") && got.value != 0)
            conf_fail(ctx, "HcclGetConfig(DETERMINISTIC) gave %d after setting 0", got.value);
    }
    acl_queries(ctx);
    check_world(ctx, ctx->comm, "comm before destroying comm2");
    conf_host_barrier(ctx);

    /* destroy comm2; every later use of its handle is an error, not a crash */
    HcclComm dead = ctx->comm2;
    conf_step(ctx, "HcclCommDestroy(comm2)");
    ctx->comm2 = NULL;
    if (!conf_ok(ctx, HcclCommDestroy(dead), "HcclCommDestroy(comm2)")) return;
    conf_host_barrier(ctx);
    conf_step(ctx, "calls on a destroyed communicator");
    HcclResult rc;
    if ((rc = HcclGetRankSize(dead, &v)) == HCCL_SUCCESS)
        conf_fail(ctx, "HcclGetRankSize on a destroyed communicator succeeded");
    if ((rc = HcclGetRankId(dead, &v)) == HCCL_SUCCESS)
        conf_fail(ctx, "HcclGetRankId on a destroyed communicator succeeded");
    HcclResult ae;
    if ((rc = HcclGetCommAsyncError(dead, &ae)) == HCCL_SUCCESS)
        conf_fail(ctx, "HcclGetCommAsyncError on a destroyed communicator succeeded");
    void *buf = NULL;
    if (conf_acl_ok(ctx, aclrtMalloc(&buf, 64, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) {
        double t0 = conf_now();
        if ((rc = HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, dead, ctx->stream)) ==
            HCCL_SUCCESS)
            conf_fail(ctx, "HcclAllReduce on a destroyed communicator succeeded");
        if (conf_now() - t0 > 2) conf_fail(ctx, "HcclAllReduce on a destroyed communicator took %.1f s", conf_now() - t0);
        conf_sync(ctx, ctx->stream, "after rejected AllReduce");
        aclrtFree(buf);
    }
    if ((rc = HcclCommDestroy(dead)) == HCCL_SUCCESS) conf_fail(ctx, "a second HcclCommDestroy succeeded");
    h = NULL;
    if (HcclCommGetHandleWithName(g_shared->names2[r], &h) == HCCL_SUCCESS)
        conf_fail(ctx, "HcclCommGetHandleWithName found destroyed communicator \"%s\" (%p)", g_shared->names2[r], h);
    check_world(ctx, ctx->comm, "comm after destroying comm2");
    if (r == 0) fork_while_looking_up(ctx);
}

/* ---- sub-communicators ------------------------------------------------------------ */

static void config_defaults(conf_ctx *ctx)
{
    HcclCommConfig c;
    memset(&c, 0x33, sizeof c);
    HcclCommConfigInit(&c);
    HcclCommConfigInfo info;
    memcpy(&info, c.reserved, sizeof info);
    if (info.size != sizeof(HcclCommConfig) || info.magicWord != HCCL_COMM_CONFIG_MAGIC_WORD ||
        info.version != HCCL_COMM_CONFIG_VERSION)
        conf_fail(ctx, "HcclCommConfigInit header: size %zu magic %#x version %u", info.size, info.magicWord,
                  info.version);
    if (c.hcclBufferSize != HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET ||
        c.hcclDeterministic != HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET || c.hcclCommName[0] != '\0' ||
        c.hcclUdi[0] != '\0' || c.hcclWorldRankID != HCCL_COMM_WORLD_RANK_ID_CONFIG_NOT_SET ||
        c.hcclJobID != HCCL_COMM_JOB_ID_CONFIG_NOT_SET || c.hcclExecTimeOut != HCCL_COMM_EXEC_TIMEOUT_CONFIG_NOT_SET ||
        c.hcclAlgo[0] != '\0' || c.hcclQos != HCCL_COMM_QOS_CONFIG_NOT_SET ||
        c.hcclSymWinMaxMemSizePerRank != HCCL_COMM_SYM_WIN_SIZE_CONFIG_NOT_SET)
        conf_fail(ctx, "HcclCommConfigInit left a field set");
}

static HcclComm make_sub(conf_ctx *ctx, uint32_t cnt, uint32_t *ids, uint64_t id, uint32_t subrank,
                         const char *name, const char *what)
{
    HcclCommConfig cfg;
    HcclComm sub = NULL;
    char label[160];
    HcclCommConfigInit(&cfg);
    if (name) snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "%s", name);
    snprintf(label, sizeof label, "HcclCreateSubCommConfig(%s, %u ranks, id %llu, subrank %u)", what, cnt,
             (unsigned long long)id, subrank);
    conf_step(ctx, "%s", label);
    if (!conf_ok(ctx, HcclCreateSubCommConfig(&ctx->comm, cnt, ids, id, subrank, &cfg, &sub), label)) return NULL;
    if (sub == NULL) {
        conf_fail(ctx, "%s gave a NULL communicator", label);
        return NULL;
    }
    uint32_t v;
    if (conf_ok(ctx, HcclGetRankSize(sub, &v), "HcclGetRankSize(sub)") && v != cnt)
        conf_fail(ctx, "%s: rank size %u, expected %u", what, v, cnt);
    if (conf_ok(ctx, HcclGetRankId(sub, &v), "HcclGetRankId(sub)") && v != subrank)
        conf_fail(ctx, "%s: rank id %u, expected %u", what, v, subrank);
    return sub;
}

static aclError sleep_300ms(void *arg)
{
    (void)arg;
    usleep(300 * 1000);
    return ACL_SUCCESS;
}

typedef struct {
    HcclComm comm;
    HcclResult rc;
    double secs;
    atomic_int queued; /* the AllReduce is enqueued behind the task */
} destroy_arg;

static aclError wait_queued(void *arg)
{
    destroy_arg *a = arg;
    for (int i = 0; i < 10000 && !atomic_load(&a->queued); i++) usleep(1000);
    return ACL_SUCCESS;
}

/* HcclCommDestroy from a host task, with an operation of the communicator queued
 * behind it on the same stream (it cannot run before the task returns). */
static aclError destroy_task(void *arg)
{
    destroy_arg *a = arg;
    double t0 = conf_now();
    a->rc = HcclCommDestroy(a->comm);
    a->secs = conf_now() - t0;
    return ACL_SUCCESS;
}

/* Each rank's own one-rank sub-communicator destroyed by a host task on ctx->stream
 * with an AllReduce of it queued behind: destroy returns, the AllReduce is dropped (the
 * stream reports it) and the stream keeps working. */
static void destroy_in_task(conf_ctx *ctx)
{
    uint32_t me = (uint32_t)ctx->rank;
    destroy_arg a = {make_sub(ctx, 1, &me, 202, 0, NULL, "destroyed in a host task"), HCCL_E_RESERVED, 0, 0};
    if (!a.comm) return;
    int32_t x[4] = {1, 2, 3, 4};
    conf_step(ctx, "HcclCommDestroy in a host task, an AllReduce of the communicator queued behind it");
    if (!conf_acl_ok(ctx, aclrtLaunchHostTask(ctx->stream, wait_queued, &a), "aclrtLaunchHostTask(wait)") ||
        !conf_acl_ok(ctx, aclrtLaunchHostTask(ctx->stream, destroy_task, &a), "aclrtLaunchHostTask(destroy)"))
        return;
    conf_ok(ctx, HcclAllReduce(x, x, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, a.comm, ctx->stream),
            "AllReduce queued behind the destroy");
    atomic_store(&a.queued, 1);
    if (aclrtSynchronizeStream(ctx->stream) == ACL_SUCCESS)
        conf_fail(ctx, "the AllReduce queued behind its communicator's destroy did not fail");
    if (a.rc != HCCL_SUCCESS) conf_fail(ctx, "HcclCommDestroy in a host task returned %d", (int)a.rc);
    if (a.secs > 5.0) conf_fail(ctx, "HcclCommDestroy in a host task took %.1f s", a.secs);
    conf_acl_ok(ctx, aclrtLaunchHostTask(ctx->stream, sleep_300ms, NULL), "aclrtLaunchHostTask after it");
    conf_sync(ctx, ctx->stream, "the stream after the destroy in a host task");
}

static void lifecycle(conf_ctx *ctx)
{
    int n = ctx->nranks, r = ctx->rank;
    uint32_t all[CONF_MAX_RANKS];
    for (int i = 0; i < n; i++) all[i] = (uint32_t)i;
    destroy_in_task(ctx);
    if (n < 2) return;
    HcclComm a = make_sub(ctx, (uint32_t)n, all, 200, (uint32_t)r, NULL, "lifecycle A");
    if (!a) return;
    void *buf = NULL;
    if (!conf_acl_ok(ctx, aclrtMalloc(&buf, 64, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) return;
    conf_step(ctx, "HcclCommDestroy inside an open group holding the communicator's Send/Recv");
    if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
        conf_ok(ctx, HcclSend(buf, 4, HCCL_DATA_TYPE_INT32, (uint32_t)((r + 1) % n), a, ctx->stream), "HcclSend");
        conf_ok(ctx, HcclRecv((char *)buf + 32, 4, HCCL_DATA_TYPE_INT32, (uint32_t)((r + n - 1) % n), a, ctx->stream),
                "HcclRecv");
        double t0 = conf_now();
        conf_ok(ctx, HcclCommDestroy(a), "HcclCommDestroy(A) inside the group");
        if (conf_now() - t0 > 2.0) conf_fail(ctx, "HcclCommDestroy inside a group took %.1f s", conf_now() - t0);
        HcclResult g = HcclGroupEnd();
        if (g != HCCL_E_PARA) conf_fail(ctx, "HcclGroupEnd after its communicator's destroy returned %d", (int)g);
    }
    HcclComm b = make_sub(ctx, (uint32_t)n, all, 201, (uint32_t)r, NULL, "lifecycle B");
    uint32_t v = 0;
    HcclResult st = HcclGetRankSize(a, &v);
    if (st != HCCL_E_PARA) conf_fail(ctx, "HcclGetRankSize on a destroyed handle returned %d", (int)st);
    if (b) {
        int32_t me = 10 * r + 1, vals[CONF_MAX_RANKS];
        for (int i = 0; i < n; i++) vals[i] = 10 * i + 1;
        check_comm(ctx, b, me, vals, n, "sub-comm created after a destroyed one");
        if (ctx->mode == MODE_PROCS) {
            /* fork with an operation queued behind a slow task; the child's operation on
             * its copy is refused (it would take the parent's place with the peers), then
             * the child destroys its copy */
            conf_step(ctx, "fork with an operation queued; the child's AllReduce is refused, it destroys its copy");
            conf_acl_ok(ctx, aclrtLaunchHostTask(ctx->stream, sleep_300ms, NULL), "aclrtLaunchHostTask");
            conf_ok(ctx, HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, b, ctx->stream),
                    "AllReduce queued");
            pid_t pid = fork();
            if (pid == 0) {
                alarm(10);
                int32_t mine[4] = {0};
                if (HcclAllReduce(mine, mine, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, b, NULL) != HCCL_E_PARA)
                    _exit(2);
                /* on a stream too: refused when queued, saying why (the child has no stream
                 * workers, and the runtime refuses the stream: "not a live stream?") */
                if (HcclAllReduce(mine, mine, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, b, ctx->stream) != HCCL_E_PARA ||
                    !strstr(HcclGetLastErrorMessage(), "fork() child"))
                    _exit(3);
                _exit(HcclCommDestroy(b) == HCCL_SUCCESS ? 0 : 1);
            }
            int status = -1;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                conf_fail(ctx, "the fork child's AllReduce (exit 2, 3 on a stream: not refused) or HcclCommDestroy with an "
                          "operation queued: status %#x", status);
            conf_sync(ctx, ctx->stream, "the parent's queued AllReduce");
        }
        conf_ok(ctx, HcclCommDestroy(b), "HcclCommDestroy(B)");
    }
    aclrtFree(buf);
}

void conf_suite_subcomm(conf_ctx *ctx)
{
    int n = ctx->nranks, r = ctx->rank;
    uint32_t ids[CONF_MAX_RANKS], cnt = 0;
    int32_t vals[CONF_MAX_RANKS];

    config_defaults(ctx);

    /* even ranks and odd ranks; the odd group's root (rank 1) comes late, after the
     * even ranks have gone on to serve or join the next sub-communicator (with ranks as
     * threads, a process-wide serve lock once made this wait for the timeout) */
    if (r == 1) usleep(200 * 1000);
    for (int q = r % 2; q < n; q += 2) ids[cnt++] = (uint32_t)q;
    HcclComm parity = make_sub(ctx, cnt, ids, 1 + (uint64_t)(r % 2), (uint32_t)(r / 2), NULL, r % 2 ? "odd" : "even");
    for (uint32_t i = 0; i < cnt; i++) vals[i] = 10 * (int32_t)ids[i] + 1;

    /* every rank in reverse order, with a configured name */
    uint32_t rev[CONF_MAX_RANKS];
    int32_t rvals[CONF_MAX_RANKS];
    for (int i = 0; i < n; i++) {
        rev[i] = (uint32_t)(n - 1 - i);
        rvals[i] = 10 * (n - 1 - i) + 1;
    }
    HcclComm reversed = make_sub(ctx, (uint32_t)n, rev, 10, (uint32_t)(n - 1 - r), "conf_reversed", "reversed");

    /* each rank alone */
    uint32_t self = (uint32_t)r;
    HcclComm alone = make_sub(ctx, 1, &self, 100 + (uint64_t)r, 0, NULL, "self");

    for (int round = 0; round < 2; round++) {
        if (parity) check_comm(ctx, parity, 10 * r + 1, vals, (int)cnt, r % 2 ? "odd sub-comm" : "even sub-comm");
        check_world(ctx, ctx->comm, "parent between sub-comm operations");
        if (reversed) check_comm(ctx, reversed, 10 * r + 1, rvals, n, "reversed sub-comm");
        if (alone) {
            int32_t me = 10 * r + 1;
            check_comm(ctx, alone, me, &me, 1, "single-rank sub-comm");
        }
    }
    if (reversed) {
        char name[COMM_NAME_MAX_LENGTH];
        check_name(ctx, reversed, name, "HcclGetCommName(reversed)");
        if (strcmp(name, "conf_reversed") != 0)
            conf_fail(ctx, "sub-comm configured as \"conf_reversed\" is named \"%s\"", name);
    }
    if (parity && reversed) {
        char a[COMM_NAME_MAX_LENGTH], b[COMM_NAME_MAX_LENGTH], c[COMM_NAME_MAX_LENGTH];
        check_name(ctx, parity, a, "HcclGetCommName(parity)");
        check_name(ctx, reversed, b, "HcclGetCommName(reversed)");
        check_name(ctx, ctx->comm, c, "HcclGetCommName(parent)");
        if (!strcmp(a, b) || !strcmp(a, c)) conf_fail(ctx, "sub-comm name \"%s\" is not unique", a);
    }
    /* A second live sub-communicator with the same subCommId and rankIds, or with a
     * configured name already taken, would share its name: refused on every rank
     * before any rendezvous (so at once, not at HCCL_CONNECT_TIMEOUT). */
    if (parity && reversed) {
        HcclCommConfig cfg;
        HcclComm dup = NULL;
        HcclCommConfigInit(&cfg);
        conf_step(ctx, "HcclCreateSubCommConfig with a live sub-communicator's subCommId and rankIds");
        double t0 = conf_now();
        HcclResult dr = HcclCreateSubCommConfig(&ctx->comm, cnt, ids, 1 + (uint64_t)(r % 2), (uint32_t)(r / 2), &cfg,
                                                &dup);
        if (dr != HCCL_E_PARA || dup) conf_fail(ctx, "a repeated subCommId returned %d (comm %p)", (int)dr, dup);
        if (dup) HcclCommDestroy(dup);
        dup = NULL;
        snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "conf_reversed");
        dr = HcclCreateSubCommConfig(&ctx->comm, (uint32_t)n, rev, 11, (uint32_t)(n - 1 - r), &cfg, &dup);
        if (dr != HCCL_E_PARA || dup) conf_fail(ctx, "a repeated hcclCommName returned %d (comm %p)", (int)dr, dup);
        if (dup) HcclCommDestroy(dup);
        if (conf_now() - t0 > 2.0) conf_fail(ctx, "refusing repeated names took %.1f s", conf_now() - t0);
    }
    conf_step(ctx, "destroy sub-comms");
    if (parity) conf_ok(ctx, HcclCommDestroy(parity), "HcclCommDestroy(parity)");
    if (reversed) conf_ok(ctx, HcclCommDestroy(reversed), "HcclCommDestroy(reversed)");
    if (alone) conf_ok(ctx, HcclCommDestroy(alone), "HcclCommDestroy(self)");
    check_world(ctx, ctx->comm, "parent after destroying sub-comms");
    lifecycle(ctx);
}

/* ---- communicator configs ----------------------------------------------------------- */

typedef struct {
    HcclRootInfo root;
    int variant; /* 0: named, 1 MB buffer; 1: an older, shorter config struct; 2: only
                    rank 0 sets hcclDeterministic, every rank on one CPU at creation;
                    3: hcclAlgo on rank 0 only; 4: hcclExecTimeOut 1 s, and
                    sub-communicators with their own or the parent's */
    char name[64];
} cfg_arg;

static HcclResult init_config(conf_ctx *ctx, HcclComm *comm, void *arg)
{
    cfg_arg *a = arg;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    if (a->variant == 2) {
        /* The ranks agree their host has more ranks than CPUs (from their affinity at
         * creation): small AllReduces of 3+ ranks would go by recursive doubling. */
        cfg.hcclDeterministic = ctx->rank == 0;
        cpu_set_t was, one;
        HcclResult rc;
        if (sched_getaffinity(0, sizeof was, &was) != 0) return HCCL_E_INTERNAL;
        CPU_ZERO(&one);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &was)) {
                CPU_SET(c, &one);
                break;
            }
        sched_setaffinity(0, sizeof one, &one);
        conf_step(ctx, "HcclCommInitRootInfoConfig (deterministic on rank 0 only, one CPU)");
        rc = HcclCommInitRootInfoConfig((uint32_t)ctx->nranks, &a->root, (uint32_t)ctx->rank, &cfg, comm);
        sched_setaffinity(0, sizeof was, &was);
        return rc;
    }
    if (a->variant == 3) {
        /* hcclAlgo (HCCL_ALGO's syntax) on rank 0 only: the ranks choose different
         * algorithms, which the first AllReduce must report on every rank. */
        if (ctx->rank == 0) snprintf(cfg.hcclAlgo, sizeof cfg.hcclAlgo, "%s", "allreduce=level0:NA;level1:ring");
        conf_step(ctx, "HcclCommInitRootInfoConfig (hcclAlgo on rank 0 only)");
        return HcclCommInitRootInfoConfig((uint32_t)ctx->nranks, &a->root, (uint32_t)ctx->rank, &cfg, comm);
    }
    if (a->variant == 4) {
        cfg.hcclExecTimeOut = 1;
        cfg.hcclDeterministic = 2; /* upstream's strict: accepted, on */
        conf_step(ctx, "HcclCommInitRootInfoConfig (hcclExecTimeOut 1 s, hcclDeterministic 2)");
        return HcclCommInitRootInfoConfig((uint32_t)ctx->nranks, &a->root, (uint32_t)ctx->rank, &cfg, comm);
    }
    if (a->variant == 0) {
        snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "%s", a->name);
        cfg.hcclBufferSize = 1; /* MB: large operations must go through it in pieces */
    } else {
        /* a version-1 caller knows only the fields up to hcclCommName; the rest is garbage */
        HcclCommConfigInfo info;
        memcpy(&info, cfg.reserved, sizeof info);
        info.size = offsetof(HcclCommConfig, hcclUdi);
        info.version = 1;
        memcpy(cfg.reserved, &info, sizeof info);
        memset((char *)&cfg + info.size, 0xa5, sizeof cfg - info.size);
        cfg.hcclBufferSize = 2;
    }
    if (ctx->rank == ctx->nranks - 1) usleep(300 * 1000); /* a late rank */
    conf_step(ctx, "HcclCommInitRootInfoConfig (variant %d)", a->variant);
    return HcclCommInitRootInfoConfig((uint32_t)ctx->nranks, &a->root, (uint32_t)ctx->rank, &cfg, comm);
}

static const cfg_arg *g_cfg;

/* Inputs whose fp32 sum shows the order of the additions in its bits. */
static float order_input(int rank, uint64_t i)
{
    uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(rank + 1) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    return ((float)(h % 2000001u) - 1000000.0f) * ldexpf(1.0f, (int)((h >> 32) % 24u) - 30);
}

/* Variant 2: one rank's hcclDeterministic makes the communicator deterministic (no
 * configuration mismatch), and a 4 KB AllReduce gives the in-rank-order fp32 sum,
 * x0 + x1 + ... + x(n-1) left to right, on a host with fewer CPUs than ranks too. */
static void rank_deterministic(conf_ctx *ctx)
{
    enum { C = 1000 };
    float h[C];
    void *s = NULL, *r = NULL;
    conf_step(ctx, "4 KB AllReduce, deterministic on rank 0 only");
    for (uint64_t i = 0; i < C; i++) h[i] = order_input(ctx->rank, i);
    if (conf_acl_ok(ctx, aclrtMalloc(&s, sizeof h, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") &&
        conf_acl_ok(ctx, aclrtMalloc(&r, sizeof h, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) {
        aclrtMemcpy(s, sizeof h, h, sizeof h, ACL_MEMCPY_HOST_TO_DEVICE);
        if (conf_ok(ctx, HcclAllReduce(s, r, C, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, ctx->comm, ctx->stream),
                    "AllReduce 4 KB (deterministic)") &&
            conf_sync(ctx, ctx->stream, "AllReduce 4 KB (deterministic)")) {
            aclrtMemcpy(h, sizeof h, r, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
            for (uint64_t i = 0; i < C; i++) {
                volatile float want = order_input(0, i);
                for (int j = 1; j < ctx->nranks; j++) want = want + order_input(j, i);
                if (memcmp(&h[i], (const void *)&want, sizeof want) != 0) {
                    conf_fail(ctx, "deterministic AllReduce: element %llu is %a, the in-order sum %a",
                              (unsigned long long)i, h[i], (double)want);
                    break;
                }
            }
        }
    }
    if (s) aclrtFree(s);
    if (r) aclrtFree(r);
}

/* Variant 3: rank 0's hcclAlgo forces the ring AllReduce, the others choose theirs:
 * the AllReduce fails on every rank with a configuration mismatch (hcclAlgo is not
 * ignored, and the ranks do not mix two schedules). */
static void rank_algo_mismatch(conf_ctx *ctx)
{
    enum { C = 1 << 16 };
    void *s = NULL, *r = NULL;
    conf_step(ctx, "256 KB AllReduce, hcclAlgo on rank 0 only");
    if (conf_acl_ok(ctx, aclrtMalloc(&s, 4 * C, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") &&
        conf_acl_ok(ctx, aclrtMalloc(&r, 4 * C, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) {
        aclrtMemset(s, 4 * C, 0, 4 * C);
        HcclResult rc = HcclAllReduce(s, r, C, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, ctx->comm, ctx->stream);
        aclError sync = aclrtSynchronizeStream(ctx->stream);
        /* (the reason is the last WARN of the thread that ran it: this one's or the
         * stream worker's, so it is not checked here) */
        if (rc == HCCL_SUCCESS && sync == ACL_SUCCESS)
            conf_fail(ctx, "AllReduce with hcclAlgo on rank 0 only succeeded (hcclAlgo ignored?)");
    }
    if (s) aclrtFree(s);
    if (r) aclrtFree(r);
}

/* An AllReduce on a sub-communicator of every rank (id) made with hcclExecTimeOut
 * `timeout` (-1: left unset), the last rank `late_ms` late. Returns whether it
 * succeeded on this rank, and how long it took in *took. */
static int late_sub_allreduce(conf_ctx *ctx, uint64_t id, int timeout, int late_ms, double *took)
{
    uint32_t ids[64];
    int n = ctx->nranks, ok = 0;
    for (int i = 0; i < n; i++) ids[i] = (uint32_t)i;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    if (timeout >= 0) cfg.hcclExecTimeOut = timeout;
    HcclComm sub = NULL;
    void *b = NULL;
    *took = 0;
    conf_step(ctx, "HcclCreateSubCommConfig (hcclExecTimeOut %d)", timeout);
    if (!conf_ok(ctx, HcclCreateSubCommConfig(&ctx->comm, (uint32_t)n, ids, id, (uint32_t)ctx->rank, &cfg, &sub),
                 "HcclCreateSubCommConfig"))
        return 0;
    if (conf_acl_ok(ctx, aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) {
        aclrtMemset(b, 64, 0, 64);
        if (ctx->rank == n - 1) usleep((useconds_t)late_ms * 1000);
        conf_step(ctx, "AllReduce on a sub-communicator (hcclExecTimeOut %d), the last rank %d ms late", timeout,
                  late_ms);
        double t0 = conf_now();
        ok = HcclAllReduce(b, b, 16, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, sub, ctx->stream) == HCCL_SUCCESS &&
             aclrtSynchronizeStream(ctx->stream) == ACL_SUCCESS;
        *took = conf_now() - t0;
        aclrtFree(b);
    }
    conf_ok(ctx, HcclCommDestroy(sub), "HcclCommDestroy(sub)");
    return ok;
}

/* HcclCreateSubCommConfig of every rank where rank `bad` passes an invalid config
 * (hcclDeterministic 7) and comes 300 ms after the others: every rank fails with
 * HCCL_E_PARA at once (the others with its reason), none waits for HCCL_CONNECT_TIMEOUT. */
static void bad_sub_config(conf_ctx *ctx, int bad, uint64_t id)
{
    uint32_t ids[64];
    for (int i = 0; i < ctx->nranks; i++) ids[i] = (uint32_t)i;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    if (ctx->rank == bad) {
        cfg.hcclDeterministic = 7;
        usleep(300 * 1000);
    }
    HcclComm sub = NULL;
    conf_step(ctx, "HcclCreateSubCommConfig, rank %d's config invalid", bad);
    double t0 = conf_now();
    HcclResult rc = HcclCreateSubCommConfig(&ctx->comm, (uint32_t)ctx->nranks, ids, id, (uint32_t)ctx->rank, &cfg, &sub);
    double took = conf_now() - t0;
    const char *why = HcclGetLastErrorMessage();
    if (rc != HCCL_E_PARA || took > 5)
        conf_fail(ctx, "HcclCreateSubCommConfig with rank %d's hcclDeterministic 7: %d after %.1f s, not "
                  "HCCL_E_PARA at once", bad, (int)rc, took);
    else if (!why || !strstr(why, "hcclDeterministic"))
        conf_fail(ctx, "HcclCreateSubCommConfig with rank %d's hcclDeterministic 7: the reason \"%s\" does not "
                  "name it", bad, why ? why : "");
    if (sub) HcclCommDestroy(sub);
    conf_host_barrier(ctx);
}

/* HcclCreateSubCommConfig of every rank where the last rank passes another hcclCommName
 * than the others: every rank fails with HCCL_E_PARA at once, naming both names. */
static void sub_name_mismatch(conf_ctx *ctx, uint64_t id)
{
    uint32_t ids[64];
    for (int i = 0; i < ctx->nranks; i++) ids[i] = (uint32_t)i;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "conf_sub_%s_%d",
             ctx->rank == ctx->nranks - 1 ? "odd" : "same", (int)getppid());
    HcclComm sub = NULL;
    conf_step(ctx, "HcclCreateSubCommConfig, the last rank's hcclCommName differs");
    double t0 = conf_now();
    HcclResult rc = HcclCreateSubCommConfig(&ctx->comm, (uint32_t)ctx->nranks, ids, id, (uint32_t)ctx->rank, &cfg, &sub);
    double took = conf_now() - t0;
    const char *why = HcclGetLastErrorMessage();
    if (rc != HCCL_E_PARA || took > 5)
        conf_fail(ctx, "HcclCreateSubCommConfig with two hcclCommNames: %d after %.1f s, not HCCL_E_PARA at once",
                  (int)rc, took);
    else if (!why || !strstr(why, "different names") || !strstr(why, "conf_sub_odd") || !strstr(why, "conf_sub_same"))
        conf_fail(ctx, "HcclCreateSubCommConfig with two hcclCommNames: the reason \"%s\" does not name both",
                  why ? why : "");
    if (sub) HcclCommDestroy(sub);
    conf_host_barrier(ctx);
}

/* HcclCreateSubCommConfig of every rank where rank `bad` passes a subCommRankId that is
 * not its place in rankIds (the next one) and comes 300 ms after the others: it fails
 * with HCCL_E_PARA, and so do the others at once with its reason, instead of waiting
 * for it until HCCL_CONNECT_TIMEOUT. */
static void bad_sub_rank(conf_ctx *ctx, int bad, uint64_t id)
{
    uint32_t ids[64];
    for (int i = 0; i < ctx->nranks; i++) ids[i] = (uint32_t)i;
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    uint32_t subrank = (uint32_t)ctx->rank;
    if (ctx->rank == bad) {
        subrank = (uint32_t)((ctx->rank + 1) % ctx->nranks);
        usleep(300 * 1000);
    }
    HcclComm sub = NULL;
    conf_step(ctx, "HcclCreateSubCommConfig, rank %d's subCommRankId wrong", bad);
    double t0 = conf_now();
    HcclResult rc = HcclCreateSubCommConfig(&ctx->comm, (uint32_t)ctx->nranks, ids, id, subrank, &cfg, &sub);
    double took = conf_now() - t0;
    const char *why = HcclGetLastErrorMessage();
    if (rc != HCCL_E_PARA || took > 5)
        conf_fail(ctx, "HcclCreateSubCommConfig with rank %d's subCommRankId wrong: %d after %.1f s, not "
                  "HCCL_E_PARA at once", bad, (int)rc, took);
    else if (!why || !strstr(why, "subCommRankId"))
        conf_fail(ctx, "HcclCreateSubCommConfig with rank %d's subCommRankId wrong: the reason \"%s\" does not "
                  "name it", bad, why ? why : "");
    if (sub) HcclCommDestroy(sub);
    conf_host_barrier(ctx);
}

/* Threads as ranks: a retry of HcclCreateSubCommConfig with the same subCommId and
 * rankIds after a try in which a rank failed in the mesh. The sub-communicator's
 * identity is the same on every try, so the process's record of that failure must not
 * fail the retry at once. Try 1 (sub-communicator of ranks 0, 1, 2): rank 2 waits for
 * the root, and its interrupt check holds its thread 1.5 s once the others come; rank
 * 1, in the mesh waiting for rank 2, is interrupted (HcclSetInterruptCheck) and fails
 * there, and so do the others. Try 2: rank 0 comes 300 ms before the others (it looks
 * at the process's records while it waits) and every rank must succeed. */
static atomic_int sr_armed, sr_hold, sr_held, sr_holding;
static __thread int sr_rank = -1;

static int sub_retry_check(void)
{
    if (!atomic_load(&sr_armed)) return 0;
    if (sr_rank == 2 && atomic_load(&sr_hold) && !atomic_exchange(&sr_held, 1)) {
        atomic_store(&sr_holding, 1);
        usleep(1500 * 1000);
        atomic_store(&sr_holding, 0);
        return 0;
    }
    return sr_rank == 1 && atomic_load(&sr_holding);
}

static void sub_retry(conf_ctx *ctx, uint64_t id)
{
    uint32_t ids[3] = {0, 1, 2};
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    sr_rank = ctx->rank;
    if (ctx->rank == 0) {
        atomic_store(&sr_hold, 0);
        atomic_store(&sr_held, 0);
        atomic_store(&sr_holding, 0);
        atomic_store(&sr_armed, 1);
        HcclSetInterruptCheck(sub_retry_check);
    }
    conf_host_barrier(ctx);
    if (ctx->rank < 3) {
        if (ctx->rank == 0) {
            usleep(200 * 1000);
            atomic_store(&sr_hold, 1);
            usleep(200 * 1000);
        } else if (ctx->rank == 1) {
            usleep(500 * 1000);
        }
        HcclComm sub = NULL;
        conf_step(ctx, "HcclCreateSubCommConfig, try 1: rank 1 interrupted in the mesh");
        HcclResult rc = HcclCreateSubCommConfig(&ctx->comm, 3, ids, id, (uint32_t)ctx->rank, &cfg, &sub);
        if (rc == HCCL_SUCCESS) {
            conf_fail(ctx, "HcclCreateSubCommConfig, try 1: succeeded although rank 1 was interrupted");
            HcclCommDestroy(sub);
        }
    }
    conf_host_barrier(ctx);
    if (ctx->rank == 0) atomic_store(&sr_armed, 0);
    conf_host_barrier(ctx);
    if (ctx->rank < 3) {
        if (ctx->rank != 0) usleep(300 * 1000);
        HcclComm sub = NULL;
        conf_step(ctx, "HcclCreateSubCommConfig, try 2: the retry");
        double t0 = conf_now();
        HcclResult rc = HcclCreateSubCommConfig(&ctx->comm, 3, ids, id, (uint32_t)ctx->rank, &cfg, &sub);
        if (rc != HCCL_SUCCESS)
            conf_fail(ctx, "HcclCreateSubCommConfig, the retry after a try where rank 1 failed in the mesh: %d after "
                      "%.1f s (%s)", (int)rc, conf_now() - t0, HcclGetLastErrorMessage());
        if (sub) conf_ok(ctx, HcclCommDestroy(sub), "HcclCommDestroy(retried sub)");
    }
    conf_host_barrier(ctx);
    if (ctx->rank == 0) HcclSetInterruptCheck(NULL);
    conf_host_barrier(ctx);
}

/* Variant 4: the parent's hcclExecTimeOut is 1 s. A sub-communicator made with
 * hcclExecTimeOut 0 never times out (it took the parent's 1 s); one that leaves it
 * unset takes the parent's 1 s (not HCCL_EXEC_TIMEOUT's 1836). */
static void rank_sub_timeout(conf_ctx *ctx)
{
    double took;
    if (!late_sub_allreduce(ctx, 0x7e0, 0, 2000, &took))
        conf_fail(ctx, "AllReduce on a sub-communicator with hcclExecTimeOut 0 (never) failed after %.1f s", took);
    conf_host_barrier(ctx);
    int ok = late_sub_allreduce(ctx, 0x7e1, -1, 3000, &took);
    if (ctx->rank != ctx->nranks - 1 && (ok || took > 2.5))
        conf_fail(ctx, "AllReduce on a sub-communicator without hcclExecTimeOut, the last rank 3 s late: %s after "
                  "%.1f s, not the parent's 1 s timeout", ok ? "succeeded" : "failed", took);
    conf_host_barrier(ctx);
    if (ctx->nranks > 1) {
        bad_sub_config(ctx, ctx->nranks - 1, 0x7e2);
        bad_sub_config(ctx, 0, 0x7e3);
        sub_name_mismatch(ctx, 0x7e4);
        bad_sub_rank(ctx, ctx->nranks - 1, 0x7e5);
        bad_sub_rank(ctx, 0, 0x7e6);
    }
    if (ctx->mode == MODE_THREADS && ctx->nranks >= 3) sub_retry(ctx, 0x7e7);
}

static void rank_config(conf_ctx *ctx)
{
    if (g_cfg->variant == 4) {
        rank_sub_timeout(ctx);
        return;
    }
    int n = ctx->nranks;
    if (g_cfg->variant == 2) {
        rank_deterministic(ctx);
        return;
    }
    if (g_cfg->variant == 3) {
        rank_algo_mismatch(ctx);
        return;
    }
    if (g_cfg->variant == 0) {
        char name[COMM_NAME_MAX_LENGTH];
        check_name(ctx, ctx->comm, name, "HcclGetCommName(configured)");
        if (strcmp(name, g_cfg->name) != 0)
            conf_fail(ctx, "communicator configured as \"%s\" is named \"%s\"", g_cfg->name, name);
        HcclComm h = NULL;
        if (ctx->mode == MODE_PROCS &&
            conf_ok(ctx, HcclCommGetHandleWithName(g_cfg->name, &h), "HcclCommGetHandleWithName(configured)") &&
            h != ctx->comm)
            conf_fail(ctx, "HcclCommGetHandleWithName(\"%s\") gave another handle", g_cfg->name);
    }
    check_world(ctx, ctx->comm, "configured communicator");
    /* 6 MiB through a 1-2 MB communication buffer */
    uint64_t c = (uint64_t)3 << 19;
    float *h = malloc(4 * c);
    void *s = NULL, *r = NULL;
    if (h == NULL) abort();
    conf_step(ctx, "6 MiB AllReduce on a configured communicator");
    if (conf_acl_ok(ctx, aclrtMalloc(&s, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") &&
        conf_acl_ok(ctx, aclrtMalloc(&r, 4 * c, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) {
        for (uint64_t i = 0; i < c; i++) h[i] = (float)((i % 1000) + (uint64_t)ctx->rank);
        aclrtMemcpy(s, 4 * c, h, 4 * c, ACL_MEMCPY_HOST_TO_DEVICE);
        if (conf_ok(ctx, HcclAllReduce(s, r, c, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, ctx->comm, ctx->stream),
                    "AllReduce 6 MiB") &&
            conf_sync(ctx, ctx->stream, "AllReduce 6 MiB")) {
            aclrtMemcpy(h, 4 * c, r, 4 * c, ACL_MEMCPY_DEVICE_TO_HOST);
            for (uint64_t i = 0; i < c; i++) {
                float want = (float)(n * (int)(i % 1000) + n * (n - 1) / 2);
                if (h[i] != want) {
                    conf_fail(ctx, "AllReduce 6 MiB: element %llu is %g, expected %g", (unsigned long long)i, h[i],
                              want);
                    break;
                }
            }
        }
    }
    if (s) aclrtFree(s);
    if (r) aclrtFree(r);
    free(h);
}

int conf_config_main(const conf_opts *o)
{
    int failed = 0;
    for (int v = 0; v < 5; v++) {
        cfg_arg a;
        memset(&a, 0, sizeof a);
        a.variant = v;
        snprintf(a.name, sizeof a.name, "conf_cfg_%d_%d", (int)getpid(), v);
        if (HcclGetRootInfo(&a.root) != HCCL_SUCCESS) {
            fprintf(stderr, "FAIL: HcclGetRootInfo\n");
            return 1;
        }
        g_cfg = &a;
        int f = conf_run_ranks_custom(o, o->mode, o->nranks, 1, init_config, &a, rank_config);
        if (f)
            fprintf(stderr, "FAIL: HcclCommInitRootInfoConfig %s\n",
                    v == 4   ? "sub-communicators' hcclExecTimeOut"
                    : v == 3 ? "hcclAlgo on one rank"
                    : v == 2 ? "deterministic on one rank"
                    : v      ? "with an older, shorter config"
                             : "named, 1 MB buffer");
        failed += f;
    }
    return failed;
}
