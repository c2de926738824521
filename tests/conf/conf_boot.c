/*
 * conf_boot.c - communicator creation from a rank table and from launcher variables.
 *
 * ranktable: writes a v1.0 rank table for 3 ranks on 127.0.0.1 (device_port = free
 *   ports) to a temporary file, runs 3 processes that call HcclCommInitClusterInfo(path,
 *   rank, &comm) and checks an AllReduce and an AllGather; then the same with a v1.2
 *   table of two servers in one super pod (both on 127.0.0.1).
 * env: 3 processes with the torchrun variables (RANK, WORLD_SIZE, LOCAL_RANK,
 *   LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT=P with P+1 free) and
 *   HCCL_JOB_SECRET call HcclCommInitFromEnv(NULL, &comm); then the same with
 *   SLURM_PROCID/SLURM_NTASKS, with OMPI_COMM_WORLD_RANK/SIZE and HCCL_ROOT_ADDR/PORT,
 *   and with PMI_RANK/PMI_SIZE.
 */
#include "conf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

static HcclResult init_cluster(conf_ctx *ctx, HcclComm *comm, void *arg)
{
    conf_step(ctx, "HcclCommInitClusterInfo(%s, %d)", (const char *)arg, ctx->rank);
    return HcclCommInitClusterInfo((const char *)arg, (uint32_t)ctx->rank, comm);
}

static int run_table(const conf_opts *o, const char *text, const char *what)
{
    char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/hccl_conf_ranktable_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        if (fd >= 0) close(fd);
        return 1;
    }
    close(fd);
    int failed = conf_run_ranks_custom(o, MODE_PROCS, NR, 1, init_cluster, path, check_rank);
    if (failed) fprintf(stderr, "FAIL: rank table %s:\n%s\n", what, text);
    unlink(path);
    return failed;
}

int conf_ranktable_main(const conf_opts *o)
{
    int p[NR], failed = 0;
    char text[4096], dev[NR][256];
    for (int r = 0; r < NR; r++) {
        p[r] = free_port(0);
        for (int q = 0; q < r; q++)
            if (p[q] == p[r]) p[r] = free_port(0);
    }

    for (int r = 0; r < NR; r++)
        snprintf(dev[r], sizeof dev[r],
                 "{\"device_id\":\"%d\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"%d\",\"rank_id\":\"%d\"}", r, p[r],
                 r);
    snprintf(text, sizeof text,
             "{\"status\":\"completed\",\"version\":\"1.0\",\"server_count\":\"1\",\"server_list\":[{\"server_id\":"
             "\"node_0\",\"host_ip\":\"127.0.0.1\",\"device\":[%s,%s,%s]}]}",
             dev[0], dev[1], dev[2]);
    failed += run_table(o, text, "v1.0, one server");

    for (int r = 0; r < NR; r++) p[r] = free_port(0);
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
    failed += run_table(o, text, "v1.2, two servers in one super pod");
    return failed;
}

/* ---- launcher environment ---------------------------------------------------------------- */

typedef struct {
    int kind; /* 0 torchrun, 1 slurm, 2 ompi + HCCL_ROOT_*, 3 pmi */
    int port;
    char secret[64];
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
    conf_step(ctx, "HcclCommInitFromEnv (launcher kind %d, port %d)", e->kind, e->port);
    return HcclCommInitFromEnv(NULL, comm);
}

int conf_env_main(const conf_opts *o)
{
    static const char *names[] = {"torchrun RANK/WORLD_SIZE + MASTER_ADDR/MASTER_PORT",
                                  "SLURM_PROCID/SLURM_NTASKS + MASTER_ADDR/MASTER_PORT",
                                  "OMPI_COMM_WORLD_RANK/SIZE + HCCL_ROOT_ADDR/HCCL_ROOT_PORT",
                                  "PMI_RANK/PMI_SIZE + MASTER_ADDR/MASTER_PORT"};
    int failed = 0;
    for (int k = 0; k < 4; k++) {
        env_round e = {.kind = k, .port = free_port(k != 2)};
        snprintf(e.secret, sizeof e.secret, "conf-secret-%d-%d", (int)getpid(), k);
        if (e.port < 0) {
            fprintf(stderr, "FAIL: no free port\n");
            return 1;
        }
        int f = conf_run_ranks_custom(o, MODE_PROCS, NR, 1, init_env, &e, check_rank);
        if (f) fprintf(stderr, "FAIL: init from the environment of %s\n", names[k]);
        failed += f;
    }
    return failed;
}
