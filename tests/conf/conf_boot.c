/*
 * conf_boot.c - communicator creation from a rank table and from launcher variables.
 *
 * ranktable: writes a v1.0 rank table for 3 ranks on 127.0.0.1 (device_port = free
 *   ports) to a temporary file, runs 3 processes that call HcclCommInitClusterInfo(path,
 *   rank, &comm) and checks an AllReduce and an AllGather; then the same with a v1.2
 *   table of two servers in one super pod (both on 127.0.0.1) through
 *   HcclCommInitClusterInfoConfig with a configured communicator name. Between them, a
 *   rank (the last, then rank 0) with an invalid HcclCommConfig, which must make every
 *   rank fail at once with HCCL_E_PARA and its reason; the same with the ranks as
 *   threads of one process, which must then succeed from the same table; and so must
 *   threads after a try where that rank passed a bad rank id (the others time out
 *   in HCCL_CONNECT_TIMEOUT=3 and record their failure in the process).
 * env: 3 processes with the torchrun variables (RANK, WORLD_SIZE, LOCAL_RANK,
 *   LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT=P with P+1 free) and
 *   HCCL_JOB_SECRET call HcclCommInitFromEnv(NULL, &comm); then the same with
 *   SLURM_PROCID/SLURM_NTASKS, with OMPI_COMM_WORLD_RANK/SIZE and HCCL_ROOT_ADDR/PORT,
 *   and with PMI_RANK/PMI_SIZE; then a job while stray connections (one idle, one
 *   sending garbage) sit on its root port; then a rank with another HCCL_JOB_SECRET,
 *   which must make every rank's init fail within HCCL_CONNECT_TIMEOUT (4 s) + slack;
 *   then a rank (the last, then rank 0) with an invalid HcclCommConfig, which must make
 *   every rank fail at once with HCCL_E_PARA and its reason;
 *   then root-info init with HCCL_SOCKET_IFNAME=lo, HCCL_IF_IP=127.0.0.1 and
 *   HCCL_IF_BASE_PORT.
 * twojobs: two 3-rank jobs at once with the same HCCL_IF_BASE_PORT must not collide.
 */
#include "conf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR 3

/* A port free on 127.0.0.1 now (and, with two, the next one too). */
static int free_port(int two)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        int s = socket(AF_INET, SOCK_STREAM, 0), s2 = -1, port = -1;
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (s < 0) return -1;
        if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &len) == 0) {
            port = ntohs(a.sin_port);
            if (two) {
                if (port >= 65535) {
                    port = -1;
                } else {
                    s2 = socket(AF_INET, SOCK_STREAM, 0);
                    a.sin_port = htons((uint16_t)(port + 1));
                    if (s2 < 0 || bind(s2, (struct sockaddr *)&a, sizeof a) != 0) port = -1;
                }
            }
        }
        close(s);
        if (s2 >= 0) close(s2);
        if (port > 0) return port;
    }
    return -1;
}

/* AllReduce and AllGather of one int32 per rank; rank size and id. */
static void check_rank(conf_ctx *ctx)
{
    int n = ctx->nranks, r = ctx->rank;
    uint32_t v;
    void *s = NULL, *d = NULL, *g = NULL;
    int32_t mine = 7 * r + 3, sum = 0, out = 0, gat[CONF_MAX_RANKS];
    for (int q = 0; q < n; q++) sum += 7 * q + 3;
    conf_step(ctx, "queries and an AllReduce");
    if (conf_ok(ctx, HcclGetRankSize(ctx->comm, &v), "HcclGetRankSize") && v != (uint32_t)n)
        conf_fail(ctx, "rank size %u, expected %d", v, n);
    if (conf_ok(ctx, HcclGetRankId(ctx->comm, &v), "HcclGetRankId") && v != (uint32_t)r)
        conf_fail(ctx, "rank id %u, expected %d", v, r);
    if (!conf_acl_ok(ctx, aclrtMalloc(&s, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&d, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&g, 4 * (size_t)n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc"))
        goto out;
    aclrtMemcpy(s, 4, &mine, 4, ACL_MEMCPY_HOST_TO_DEVICE);
    if (conf_ok(ctx, HcclAllReduce(s, d, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, ctx->comm, ctx->stream),
                "HcclAllReduce") &&
        conf_ok(ctx, HcclAllGather(s, g, 1, HCCL_DATA_TYPE_INT32, ctx->comm, ctx->stream), "HcclAllGather") &&
        conf_sync(ctx, ctx->stream, "AllReduce + AllGather")) {
        aclrtMemcpy(&out, 4, d, 4, ACL_MEMCPY_DEVICE_TO_HOST);
        aclrtMemcpy(gat, 4 * (size_t)n, g, 4 * (size_t)n, ACL_MEMCPY_DEVICE_TO_HOST);
        if (out != sum) conf_fail(ctx, "AllReduce gave %d, expected %d", out, sum);
        for (int q = 0; q < n; q++)
            if (gat[q] != 7 * q + 3) {
                conf_fail(ctx, "AllGather element %d is %d, expected %d", q, gat[q], 7 * q + 3);
                break;
            }
    }
out:
    if (s) aclrtFree(s);
    if (d) aclrtFree(d);
    if (g) aclrtFree(g);
}

/* ---- rank table ------------------------------------------------------------------------ */

typedef struct {
    char path[512];
    int use_config; /* HcclCommInitClusterInfoConfig with a configured name */
} table_arg;

static const table_arg *g_table;

static HcclResult init_cluster(conf_ctx *ctx, HcclComm *comm, void *arg)
{
    const table_arg *t = arg;
    if (!t->use_config) {
        conf_step(ctx, "HcclCommInitClusterInfo(%s, %d)", t->path, ctx->rank);
        return HcclCommInitClusterInfo(t->path, (uint32_t)ctx->rank, comm);
    }
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "conf_ranktable_comm");
    conf_step(ctx, "HcclCommInitClusterInfoConfig(%s, %d)", t->path, ctx->rank);
    return HcclCommInitClusterInfoConfig(t->path, (uint32_t)ctx->rank, &cfg, comm);
}

static void check_table_rank(conf_ctx *ctx)
{
    check_rank(ctx);
    if (g_table->use_config) {
        char name[COMM_NAME_MAX_LENGTH + 16] = "";
        if (conf_ok(ctx, HcclGetCommName(ctx->comm, name), "HcclGetCommName") &&
            strcmp(name, "conf_ranktable_comm") != 0)
            conf_fail(ctx, "rank-table communicator configured as \"conf_ranktable_comm\" is named \"%s\"", name);
    }
}

static int run_table(const conf_opts *o, const char *text, const char *what, int use_config)
{
    table_arg ta = {.use_config = use_config};
    char *path = ta.path;
    g_table = &ta;
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof ta.path, "%s/hccl_conf_ranktable_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        if (fd >= 0) close(fd);
        return 1;
    }
    close(fd);
    int failed = conf_run_ranks_custom(o, MODE_PROCS, NR, 1, init_cluster, &ta, check_table_rank);
    if (failed) fprintf(stderr, "FAIL: rank table %s:\n%s\n", what, text);
    unlink(path);
    return failed;
}

/* The same with the ranks as threads of one process (bad: the rank whose config is
 * invalid); then a retry from the same table with valid configs must succeed (the
 * failure leaves nothing behind in the process). */
typedef struct {
    const char *path;
    int rank, bad, bad_id; /* bad_id: the bad rank passes rank id NR + 2 instead */
    HcclResult rc;
    double took;
    HcclComm comm;
    char why[256];
} table_thread_arg;

static void *table_thread(void *p)
{
    table_thread_arg *a = p;
    aclrtSetDevice(a->rank);
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    if (a->rank == a->bad && !a->bad_id) cfg.hcclDeterministic = 7;
    if (a->bad < 0 && a->rank == 0) usleep(300 * 1000); /* the retry: the others wait for rank 0 */
    double t0 = conf_now();
    uint32_t id = a->rank == a->bad && a->bad_id ? NR + 2 : (uint32_t)a->rank;
    a->rc = HcclCommInitClusterInfoConfig(a->path, id, &cfg, &a->comm);
    a->took = conf_now() - t0;
    snprintf(a->why, sizeof a->why, "%s", a->rc != HCCL_SUCCESS ? HcclGetLastErrorMessage() : "");
    return NULL;
}

static int table_bad_cfg_threads(const char *path, int bad, int bad_id)
{
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        setenv("HCCL_CONNECT_TIMEOUT", bad_id ? "3" : "30", 1);
        int failed = 0;
        for (int round = 0; round < 2; round++) {
            table_thread_arg a[NR];
            pthread_t th[NR];
            for (int r = 0; r < NR; r++) {
                a[r] = (table_thread_arg){.path = path, .rank = r, .bad = round ? -1 : bad, .bad_id = bad_id};
                pthread_create(&th[r], NULL, table_thread, &a[r]);
            }
            for (int r = 0; r < NR; r++) pthread_join(th[r], NULL);
            for (int r = 0; r < NR; r++) {
                if (round == 0 && bad_id && (r == bad ? a[r].rc != HCCL_E_PARA : a[r].rc == HCCL_SUCCESS)) {
                    fprintf(stderr, "FAIL: rank table, threads: rank %d: rank %d's rank id %d gave %d (\"%s\")\n", r,
                            bad, NR + 2, (int)a[r].rc, a[r].why);
                    failed = 1;
                }
                if (round == 0 && !bad_id &&
                    (a[r].rc != HCCL_E_PARA || a[r].took > 10 || !strstr(a[r].why, "hcclDeterministic"))) {
                    fprintf(stderr, "FAIL: rank table, threads: rank %d: rank %d's hcclDeterministic 7 gave %d after "
                            "%.1f s (\"%s\"), not HCCL_E_PARA at once naming it\n", r, bad, (int)a[r].rc, a[r].took,
                            a[r].why);
                    failed = 1;
                }
                if (round == 1 && a[r].rc != HCCL_SUCCESS) {
                    fprintf(stderr, "FAIL: rank table, threads: rank %d: a retry with valid arguments after rank %d's "
                            "invalid %s gave %d (\"%s\")\n", r, bad, bad_id ? "rank id" : "config", (int)a[r].rc,
                            a[r].why);
                    failed = 1;
                }
                if (a[r].comm) HcclCommDestroy(a[r].comm);
            }
        }
        _exit(failed);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    fprintf(stderr, "FAIL: rank table, threads, an invalid %s on rank %d: status %#x\n", bad_id ? "rank id" : "config",
            bad, st);
    return 1;
}

/* A rank (bad) with an invalid HcclCommConfig: every rank fails at once with HCCL_E_PARA
 * and its reason, not at HCCL_CONNECT_TIMEOUT (30 s). */
static int table_bad_cfg(const char *text, int bad)
{
    char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/hccl_conf_ranktable_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path), failed = 0;
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        if (fd >= 0) close(fd);
        return 1;
    }
    close(fd);
    fflush(stderr);
    pid_t pids[NR];
    for (int r = 0; r < NR; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(60);
            setenv("HCCL_CONNECT_TIMEOUT", "30", 1);
            aclrtSetDevice(r);
            HcclCommConfig cfg;
            HcclCommConfigInit(&cfg);
            if (r == bad) cfg.hcclDeterministic = 7;
            HcclComm comm = NULL;
            double t0 = conf_now();
            HcclResult rc = HcclCommInitClusterInfoConfig(path, (uint32_t)r, &cfg, &comm);
            double dt = conf_now() - t0;
            const char *why = HcclGetLastErrorMessage();
            if (rc != HCCL_E_PARA || dt > 10 || !why || !strstr(why, "hcclDeterministic")) {
                fprintf(stderr, "FAIL: rank table: rank %d: rank %d's hcclDeterministic 7 gave %d after %.1f s "
                        "(\"%s\"), not HCCL_E_PARA at once naming it\n", r, bad, (int)rc, dt, why ? why : "");
                _exit(1);
            }
            _exit(0);
        }
    }
    for (int r = 0; r < NR; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "FAIL: rank table with an invalid config on rank %d: rank %d status %#x\n", bad, r, st);
            failed++;
        }
    }
    failed += table_bad_cfg_threads(path, bad, 0);
    /* The ranks that time out for a rank that passed a bad rank id record their failure
     * in the process: a retry from the same table must not find it. */
    failed += table_bad_cfg_threads(path, bad, 1);
    unlink(path);
    return failed;
}

/* NR ports free now and different from each other: the kernel may hand out a port
 * again once its probe socket is closed (two ranks given one port both fail their
 * init: "would both listen on"). */
static void distinct_free_ports(int p[NR])
{
    for (int r = 0; r < NR; r++) {
        p[r] = free_port(0);
        for (int q = 0, tries = 0; q < r && tries < 100; q++)
            if (p[q] == p[r]) {
                p[r] = free_port(0);
                q = -1; /* compare the new port with every earlier one */
                tries++;
            }
    }
}

int conf_ranktable_main(const conf_opts *o)
{
    int p[NR], failed = 0;
    char text[4096], dev[NR][256];
    distinct_free_ports(p);

    for (int r = 0; r < NR; r++)
        snprintf(dev[r], sizeof dev[r],
                 "{\"device_id\":\"%d\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"%d\",\"rank_id\":\"%d\"}", r, p[r],
                 r);
    snprintf(text, sizeof text,
             "{\"status\":\"completed\",\"version\":\"1.0\",\"server_count\":\"1\",\"server_list\":[{\"server_id\":"
             "\"node_0\",\"host_ip\":\"127.0.0.1\",\"device\":[%s,%s,%s]}]}",
             dev[0], dev[1], dev[2]);
    failed += run_table(o, text, "v1.0, one server", 0);
    /* an invalid config on the last rank, then on rank 0 */
    failed += table_bad_cfg(text, NR - 1);
    failed += table_bad_cfg(text, 0);

    distinct_free_ports(p);
    for (int r = 0; r < NR; r++)
        snprintf(dev[r], sizeof dev[r],
                 "{\"device_id\":\"%d\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"%d\",\"super_device_id\":\"%d\","
                 "\"rank_id\":\"%d\"}",
                 r, p[r], r, r);
    snprintf(text, sizeof text,
             "{\"status\":\"completed\",\"version\":\"1.2\",\"server_count\":\"2\",\"server_list\":["
             "{\"server_id\":\"node_0\",\"host_ip\":\"127.0.0.1\",\"device\":[%s,%s]},"
             "{\"server_id\":\"node_1\",\"host_ip\":\"127.0.0.1\",\"device\":[%s]}],"
             "\"super_pod_list\":[{\"super_pod_id\":\"0\",\"server_list\":[{\"server_id\":\"node_0\"},"
             "{\"server_id\":\"node_1\"}]}]}",
             dev[0], dev[1], dev[2]);
    failed += run_table(o, text, "v1.2, two servers in one super pod (HcclCommInitClusterInfoConfig)", 1);
    return failed;
}

/* ---- launcher environment ---------------------------------------------------------------- */

typedef struct {
    int kind; /* 0 torchrun, 1 slurm, 2 ompi + HCCL_ROOT_*, 3 pmi */
    int port;
    char secret[64];
    int late_rank; /* this rank waits 500 ms before init (-1: none) */
    int foreign;   /* rank 2 has another job secret */
    int bad_cfg;   /* 1 + the rank whose HcclCommConfig is invalid (0: none) */
} env_round;

static void setint(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

static HcclResult init_env(conf_ctx *ctx, HcclComm *comm, void *arg)
{
    const env_round *e = arg;
    static const char *vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                 "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "HCCL_ROOT_ADDR", "HCCL_ROOT_PORT"};
    /* each rank is a forked process: its environment is its own */
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    setenv("HCCL_JOB_SECRET", e->secret, 1);
    if (e->foreign && ctx->rank == 2) setenv("HCCL_JOB_SECRET", "1234567890abcdef", 1);
    switch (e->kind) {
    case 0:
        setint("RANK", ctx->rank);
        setint("WORLD_SIZE", ctx->nranks);
        setint("LOCAL_RANK", ctx->rank);
        setint("LOCAL_WORLD_SIZE", ctx->nranks);
        break;
    case 1:
        setint("SLURM_PROCID", ctx->rank);
        setint("SLURM_NTASKS", ctx->nranks);
        break;
    case 2:
        setint("OMPI_COMM_WORLD_RANK", ctx->rank);
        setint("OMPI_COMM_WORLD_SIZE", ctx->nranks);
        break;
    default:
        setint("PMI_RANK", ctx->rank);
        setint("PMI_SIZE", ctx->nranks);
        break;
    }
    if (e->kind == 2) {
        setenv("HCCL_ROOT_ADDR", "127.0.0.1", 1);
        setint("HCCL_ROOT_PORT", e->port);
    } else {
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setint("MASTER_PORT", e->port);
    }
    if (ctx->rank == e->late_rank) usleep(500 * 1000);
    conf_step(ctx, "HcclCommInitFromEnv (launcher kind %d, port %d)", e->kind, e->port);
    if (e->bad_cfg) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        if (ctx->rank == e->bad_cfg - 1) cfg.hcclDeterministic = 7;
        return HcclCommInitFromEnv(&cfg, comm);
    }
    return HcclCommInitFromEnv(NULL, comm);
}

/* A rank with another job secret must not join: every rank's init fails, promptly.
 * A rank with an invalid config (bad_cfg) fails the others at once with HCCL_E_PARA
 * and its reason (HCCL_CONNECT_TIMEOUT 30 s then, which they must not wait for). */
static int foreign_secret(const conf_opts *o, env_round *e)
{
    pid_t pids[NR];
    int failed = 0;
    fflush(stderr);
    for (int r = 0; r < NR; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            conf_ctx c;
            HcclComm comm = NULL;
            memset(&c, 0, sizeof c);
            c.rank = r;
            c.nranks = NR;
            c.opt = o;
            alarm(60);
            setenv("HCCL_CONNECT_TIMEOUT", e->bad_cfg ? "30" : "4", 1);
            aclrtSetDevice(r);
            double t0 = conf_now();
            HcclResult rc = init_env(&c, &comm, e);
            double dt = conf_now() - t0;
            if (e->bad_cfg) {
                const char *why = HcclGetLastErrorMessage();
                if (rc != HCCL_E_PARA || dt > 10 || !why || !strstr(why, "hcclDeterministic")) {
                    fprintf(stderr, "FAIL: rank %d: rank %d's hcclDeterministic 7 gave %d after %.1f s (\"%s\"), not "
                            "HCCL_E_PARA at once naming it\n", r, e->bad_cfg - 1, (int)rc, dt, why ? why : "");
                    _exit(1);
                }
                _exit(0);
            }
            if (rc == HCCL_SUCCESS) {
                fprintf(stderr, "FAIL: rank %d joined a job although rank 2 has another HCCL_JOB_SECRET\n", r);
                _exit(1);
            }
            if (dt > 25) {
                fprintf(stderr, "FAIL: rank %d took %.1f s to fail with HCCL_CONNECT_TIMEOUT=4\n", r, dt);
                _exit(1);
            }
            _exit(0);
        }
    }
    for (int r = 0; r < NR; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "FAIL: foreign-secret round: rank %d status %#x\n", r, st);
            failed++;
        }
    }
    return failed;
}

/* Stray connections to the root port during bootstrap: one idle, one sending garbage. */
typedef struct {
    int port;
    _Atomic int stop;
    int connected;
} stray_arg;

static void *stray_thread(void *p)
{
    stray_arg *a = p;
    int fds[2] = {-1, -1};
    double t0 = conf_now();
    for (int k = 0; k < 2 && conf_now() - t0 < 5 && !atomic_load(&a->stop);) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = htons((uint16_t)a->port);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            if (k == 1) {
                char junk[256];
                for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 37 + 11);
                if (write(fd, junk, sizeof junk) < 0) { /* the peer may have dropped us already */
                }
            }
            fds[k++] = fd;
            a->connected = k;
        } else {
            if (fd >= 0) close(fd);
            usleep(5000);
        }
    }
    while (!atomic_load(&a->stop)) usleep(10000);
    for (int k = 0; k < 2; k++)
        if (fds[k] >= 0) close(fds[k]);
    return NULL;
}

/* Root-info init with the interface variables set. */
static int root_info_with_env(const conf_opts *o, const char *var, const char *val)
{
    setenv(var, val, 1);
    int f = conf_run_ranks(o, MODE_PROCS, 2, 1, check_rank);
    if (f) fprintf(stderr, "FAIL: HcclCommInitRootInfo with %s=%s\n", var, val);
    unsetenv(var);
    return f;
}

int conf_env_main(const conf_opts *o)
{
    static const char *names[] = {"torchrun RANK/WORLD_SIZE + MASTER_ADDR/MASTER_PORT",
                                  "SLURM_PROCID/SLURM_NTASKS + MASTER_ADDR/MASTER_PORT",
                                  "OMPI_COMM_WORLD_RANK/SIZE + HCCL_ROOT_ADDR/HCCL_ROOT_PORT",
                                  "PMI_RANK/PMI_SIZE + MASTER_ADDR/MASTER_PORT"};
    int failed = 0;
    for (int k = 0; k < 4; k++) {
        env_round e = {.kind = k, .port = free_port(k != 2), .late_rank = -1};
        snprintf(e.secret, sizeof e.secret, "%016llx",
                 (unsigned long long)conf_hash((uint64_t)getpid(), (uint64_t)k, 77));
        if (e.port < 0) {
            fprintf(stderr, "FAIL: no free port\n");
            return 1;
        }
        int f = conf_run_ranks_custom(o, MODE_PROCS, NR, 1, init_env, &e, check_rank);
        if (f) fprintf(stderr, "FAIL: init from the environment of %s\n", names[k]);
        failed += f;
    }

    /* stray connections to the root port while the job bootstraps (rank 1 is late) */
    {
        env_round e = {.kind = 0, .port = free_port(1), .late_rank = 1};
        snprintf(e.secret, sizeof e.secret, "%016llx", (unsigned long long)conf_hash((uint64_t)getpid(), 5, 77));
        stray_arg sa = {.port = e.port + 1};
        pthread_t th;
        pthread_create(&th, NULL, stray_thread, &sa);
        int f = conf_run_ranks_custom(o, MODE_PROCS, NR, 1, init_env, &e, check_rank);
        atomic_store(&sa.stop, 1);
        pthread_join(th, NULL);
        if (f) fprintf(stderr, "FAIL: a job with stray connections to its root port (%d connected)\n", sa.connected);
        else if (o->verbose) fprintf(stderr, "stray connections made: %d\n", sa.connected);
        failed += f;
    }
    /* a rank with another secret */
    {
        env_round e = {.kind = 0, .port = free_port(1), .late_rank = -1, .foreign = 1};
        snprintf(e.secret, sizeof e.secret, "%016llx", (unsigned long long)conf_hash((uint64_t)getpid(), 6, 77));
        failed += foreign_secret(o, &e);
    }
    /* a rank with an invalid HcclCommConfig: the last one, then rank 0 (the root's host) */
    for (int bad = NR; bad >= 1; bad -= NR - 1) {
        env_round e = {.kind = 0, .port = free_port(1), .late_rank = -1, .bad_cfg = bad};
        snprintf(e.secret, sizeof e.secret, "%016llx",
                 (unsigned long long)conf_hash((uint64_t)getpid(), 7 + (uint64_t)bad, 77));
        failed += foreign_secret(o, &e);
    }
    /* root info with interface selection */
    char port[16];
    snprintf(port, sizeof port, "%d", free_port(0));
    failed += root_info_with_env(o, "HCCL_SOCKET_IFNAME", "lo");
    failed += root_info_with_env(o, "HCCL_IF_IP", "127.0.0.1");
    failed += root_info_with_env(o, "HCCL_IF_BASE_PORT", port);
    return failed;
}

/* ---- two jobs at once ------------------------------------------------------------------ */

static void twojobs_rank(conf_ctx *ctx)
{
    check_rank(ctx);
    conf_suite_p2p(ctx);
    check_rank(ctx);
}

/* Two independent 3-rank jobs run at the same time with the same HCCL_IF_BASE_PORT. */
int conf_twojobs_main(const conf_opts *o)
{
    char port[16];
    pid_t sup[2];
    int failed = 0;
    snprintf(port, sizeof port, "%d", free_port(0));
    setenv("HCCL_IF_BASE_PORT", port, 1);
    fflush(stderr);
    for (int j = 0; j < 2; j++) {
        sup[j] = fork();
        if (sup[j] == 0) {
            g_shared = mmap(NULL, sizeof *g_shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            if (g_shared == MAP_FAILED) _exit(1);
            alarm((unsigned)o->timeout_s);
            int f = conf_run_ranks(o, MODE_PROCS, NR, 1, twojobs_rank);
            fflush(stderr);
            _exit(f ? 1 : 0);
        }
    }
    for (int j = 0; j < 2; j++) {
        int st = 0;
        waitpid(sup[j], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "FAIL: job %d of two concurrent jobs (HCCL_IF_BASE_PORT=%s), status %#x\n", j, port, st);
            failed++;
        }
    }
    unsetenv("HCCL_IF_BASE_PORT");
    return failed;
}

/* ---- devices ------------------------------------------------------------------------ */

/*
 * Run with ASCEND_RT_VISIBLE_DEVICES=0,1,2 (set by ctest): the runtime reports 3
 * devices, binds 0..2, refuses 3 and -1; then 3 thread ranks run on them.
 */
int conf_devices_main(const conf_opts *o)
{
    conf_ctx c;
    uint32_t count = 0;
    int failed = 0;
    const char *vis = getenv("ASCEND_RT_VISIBLE_DEVICES");
    memset(&c, 0, sizeof c);
    c.opt = o;
    c.nranks = 1;
    if (vis == NULL || strcmp(vis, "0,1,2") != 0) {
        fprintf(stderr, "FAIL: run this suite with ASCEND_RT_VISIBLE_DEVICES=0,1,2\n");
        return 1;
    }
    if (conf_acl_ok(&c, aclrtGetDeviceCount(&count), "aclrtGetDeviceCount") && count != 3)
        conf_fail(&c, "aclrtGetDeviceCount gave %u with ASCEND_RT_VISIBLE_DEVICES=%s", count, vis);
    for (int d = 0; d < 3; d++) {
        int32_t got = -1;
        if (conf_acl_ok(&c, aclrtSetDevice(d), "aclrtSetDevice(visible)") &&
            conf_acl_ok(&c, aclrtGetDevice(&got), "aclrtGetDevice") && got != d)
            conf_fail(&c, "aclrtGetDevice gave %d after aclrtSetDevice(%d)", got, d);
        aclrtResetDevice(d);
    }
    if (aclrtSetDevice(3) == ACL_SUCCESS) conf_fail(&c, "aclrtSetDevice(3) succeeded with 3 visible devices");
    if (aclrtSetDevice(-1) == ACL_SUCCESS) conf_fail(&c, "aclrtSetDevice(-1) succeeded");
    void *p = NULL;
    if (aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS && p != NULL) aclrtFree(p);
    if (aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS) conf_fail(&c, "aclrtMalloc(NULL, 64) succeeded");
    if (c.fails) failed++;
    failed += conf_run_ranks(o, MODE_THREADS, 3, 1, check_rank);
    return failed;
}
