/*
 * netns_rank.c - one rank of a multi-host test: the conformance suites of tests/conf
 * (coll, p2p, multicomm, queries, subcomm) run by ranks that are separate processes,
 * started one by one inside network namespaces by tests/netns/netns.sh (or by hcclrun /
 * mpirun inside them). Only the public interface (hccl/hccl.h, acl/acl.h) is used.
 *
 *   netns_rank --init ranktable --table T1 [--table2 T2] --rank R --shared F [...]
 *   netns_rank --init rootinfo  --root FILE --rank R --nranks N --shared F [...]
 *   netns_rank --init env       --shared F [...]          (HcclCommInitFromEnv)
 *   common: [--suite ops|coll,p2p,...|loop] [--comms 1|2] [--timeout S] [-v]
 *
 * ranktable: comm = HcclCommInitClusterInfo(T1, R); comm2 (with --comms 2) =
 *   HcclCommInitClusterInfoConfig(T2, R, name "netns_table2").
 * rootinfo: rank 0 calls HcclGetRootInfo once per communicator and writes the blobs to
 *   FILE (written aside, then renamed); the other ranks wait for FILE, then every rank
 *   calls HcclCommInitRootInfo.
 * env: comm = HcclCommInitFromEnv(NULL); rank and size from the communicator. --comms 2
 *   is not available (a second communicator from one environment would reuse the root
 *   port): use --suite coll,p2p,subcomm.
 *
 * Suites share the conformance program's rank functions (tests/conf/conf_*.c); their
 * cross-rank shared memory (conf_shared: barrier counters, names) is the file F, which
 * every rank maps (network namespaces share the file system). Device id = global rank,
 * as in hccl_conf (the queries suite checks it).
 *
 * loop: AllReduce of 64 Ki floats, synchronised, over and over, until an operation
 *   fails (netns.sh takes a link down meanwhile). The rank prints "LOOP_FAILED at
 *   <epoch seconds>" with the error, then destroys the communicator and prints
 *   "DESTROY_RETURNED <rc> after <s> s". Exit 10 for that outcome; 1 when the loop ran
 *   --loop-max seconds (default 60) without a failure. After 20 good iterations it
 *   prints "LOOPING", so the harness knows every rank is in the loop. With --loop-ok
 *   (netns.sh takes a link down and up again) the other way round: a failure exits 1,
 *   and a loop that runs --loop-max seconds prints "LOOP_DONE <iterations>" and exits
 *   0 once HcclCommDestroy succeeds.
 *
 * Exit: 0 pass, 1 failures, 2 usage, 3 watchdog (--timeout, default 150 s), 10 loop
 * failed as expected.
 */
#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

conf_shared *g_shared;

static char g_host[64] = "?";
static int g_rank = -1;

double conf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void write_str(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    write_str("\n*** WATCHDOG: netns_rank timed out; this rank was at: ");
    if (g_shared && g_rank >= 0 && g_rank < CONF_MAX_RANKS) write_str(g_shared->step[g_rank]);
    write_str("\n");
    _exit(3);
}

void conf_step(const conf_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    int r = ctx ? ctx->rank : 0;
    if (r < 0 || r >= CONF_MAX_RANKS) return;
    va_start(ap, fmt);
    vsnprintf(g_shared->step[r], CONF_STEP_LEN, fmt, ap);
    va_end(ap);
    if (ctx && ctx->opt && ctx->opt->verbose) fprintf(stderr, "[rank %d] %s\n", r, g_shared->step[r]);
}

void conf_fail(conf_ctx *ctx, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (ctx) {
        ctx->fails++;
        if (ctx->fails > 40) return;
        fprintf(stderr, "[netns host %s rank %d/%d] FAIL: %s\n", g_host, ctx->rank, ctx->nranks, buf);
    } else {
        fprintf(stderr, "[netns host %s] FAIL: %s\n", g_host, buf);
    }
    fflush(stderr);
}

int conf_ok(conf_ctx *ctx, HcclResult rc, const char *what)
{
    if (rc == HCCL_SUCCESS) return 1;
    conf_fail(ctx, "%s returned %d (%s)", what, (int)rc, HcclGetErrorString(rc));
    return 0;
}

int conf_acl_ok(conf_ctx *ctx, aclError rc, const char *what)
{
    if (rc == ACL_SUCCESS) return 1;
    conf_fail(ctx, "%s returned acl error %d", what, (int)rc);
    return 0;
}

int conf_sync(conf_ctx *ctx, aclrtStream s, const char *what)
{
    conf_step(ctx, "aclrtSynchronizeStream after %s", what);
    aclError rc = aclrtSynchronizeStream(s);
    if (rc != ACL_SUCCESS) {
        conf_fail(ctx, "aclrtSynchronizeStream after %s returned %d", what, (int)rc);
        return 0;
    }
    return 1;
}

void conf_host_barrier(conf_ctx *ctx)
{
    int gen = atomic_load(&g_shared->counter[15]);
    if (atomic_fetch_add(&g_shared->counter[14], 1) == ctx->nranks - 1) {
        atomic_store(&g_shared->counter[14], 0);
        atomic_fetch_add(&g_shared->counter[15], 1);
    } else {
        while (atomic_load(&g_shared->counter[15]) == gen) usleep(200);
    }
}

/* The launchers of conf_main.c are not available here (conf_query.c refers to them
 * for its config suite, which this program does not run). */
int conf_run_ranks(const conf_opts *o, conf_mode mode, int nranks, int ncomms, conf_rank_fn fn)
{
    (void)o, (void)mode, (void)nranks, (void)ncomms, (void)fn;
    fprintf(stderr, "FAIL: conf_run_ranks is not available in netns_rank\n");
    return 1;
}

int conf_run_ranks_custom(const conf_opts *o, conf_mode mode, int nranks, int ncomms, conf_init_fn init,
                          void *init_arg, conf_rank_fn fn)
{
    (void)init, (void)init_arg;
    return conf_run_ranks(o, mode, nranks, ncomms, fn);
}

/* ---- options ------------------------------------------------------------------ */

typedef struct {
    const char *init, *table, *table2, *root, *shared, *suite;
    int rank, nranks, comms, timeout_s, verbose, loop_max, loop_ok;
} opts;

static void usage(void)
{
    fprintf(stderr, "usage: netns_rank --init ranktable|rootinfo|env [--table T] [--table2 T2] [--root FILE]\n"
                    "       [--rank R] [--nranks N] --shared FILE [--suite ops|LIST|loop] [--comms 1|2]\n"
                    "       [--timeout S] [--loop-max S] [--loop-ok] [-v]\n"
                    "suites (comma list): coll, p2p, multicomm, queries, subcomm; ops = coll,p2p,multicomm\n");
    exit(2);
}

static int map_shared(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "FAIL: cannot open the shared file %s: %s\n", path, strerror(errno));
        return -1;
    }
    if ((size_t)st.st_size < sizeof *g_shared && ftruncate(fd, sizeof *g_shared) != 0) {
        fprintf(stderr, "FAIL: ftruncate %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    g_shared = mmap(NULL, sizeof *g_shared, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (g_shared == MAP_FAILED) {
        fprintf(stderr, "FAIL: mmap %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- root info through a file ------------------------------------------------- */

static int write_roots(const char *path, const HcclRootInfo *roots, int n)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(roots, sizeof *roots, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
        fprintf(stderr, "FAIL: cannot write the root info to %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    if (rename(tmp, path) != 0) {
        fprintf(stderr, "FAIL: rename %s -> %s: %s\n", tmp, path, strerror(errno));
        return -1;
    }
    return 0;
}

static int read_roots(const char *path, HcclRootInfo *roots, int n, double wait_s)
{
    double end = conf_now() + wait_s;
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = fread(roots, sizeof *roots, (size_t)n, f);
            fclose(f);
            if (got == (size_t)n) return 0;
            fprintf(stderr, "FAIL: %s holds %zu root info blob(s), expected %d\n", path, got, n);
            return -1;
        }
        if (conf_now() > end) {
            fprintf(stderr, "FAIL: no root info file %s after %.0f s (rank 0 did not start?)\n", path, wait_s);
            return -1;
        }
        usleep(20000);
    }
}

/* ---- the loop for link-failure tests ------------------------------------------ */

static int run_loop(conf_ctx *ctx, int loop_max, int loop_ok)
{
    const uint64_t count = 64 * 1024;
    float *h = malloc(count * sizeof *h);
    void *s = NULL, *d = NULL, *flag = NULL;
    if (!h) abort();
    if (!conf_acl_ok(ctx, aclrtMalloc(&s, count * 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&d, count * 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&flag, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc"))
        return 1;
    for (uint64_t i = 0; i < count; i++) h[i] = (float)(ctx->rank + 1);
    aclrtMemcpy(s, count * 4, h, count * 4, ACL_MEMCPY_HOST_TO_DEVICE);
    const float want = (float)(ctx->nranks * (ctx->nranks + 1) / 2);
    double t0 = conf_now();
    long it = 0;
    int result = 1;
    for (;;) {
        conf_step(ctx, "loop: AllReduce #%ld", it);
        HcclResult rc = HcclAllReduce(s, d, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, ctx->comm, ctx->stream);
        aclError ae = rc == HCCL_SUCCESS ? aclrtSynchronizeStream(ctx->stream) : ACL_SUCCESS;
        if (rc != HCCL_SUCCESS || ae != ACL_SUCCESS) {
            HcclResult async = HCCL_SUCCESS;
            HcclGetCommAsyncError(ctx->comm, &async);
            fprintf(stderr,
                    "[netns host %s rank %d] LOOP_FAILED at %.3f after %ld iterations: HcclAllReduce %d, "
                    "aclrtSynchronizeStream %d, HcclGetCommAsyncError %d (%s)\n",
                    g_host, ctx->rank, wall_now(), it, (int)rc, (int)ae, (int)async, HcclGetErrorString(async));
            fflush(stderr);
            if (loop_ok) conf_fail(ctx, "the AllReduce loop failed (%d) after %ld iterations", (int)rc, it);
            else result = 10;
            break;
        }
        if (it < 3) {
            aclrtMemcpy(h, count * 4, d, count * 4, ACL_MEMCPY_DEVICE_TO_HOST);
            if (h[0] != want || h[count - 1] != want) {
                conf_fail(ctx, "loop AllReduce gave %g, expected %g", h[0], want);
                break;
            }
        }
        if (++it == 20) {
            fprintf(stderr, "[netns host %s rank %d] LOOPING (20 AllReduces done)\n", g_host, ctx->rank);
            fflush(stderr);
        }
        int up = conf_now() - t0 > loop_max;
        if (loop_ok && it % 64 == 0) { /* the ranks stop together: up on any rank */
            int32_t mine = up;
            aclrtMemcpy(flag, 4, &mine, 4, ACL_MEMCPY_HOST_TO_DEVICE);
            rc = HcclAllReduce(flag, flag, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MAX, ctx->comm, ctx->stream);
            if (rc != HCCL_SUCCESS || aclrtSynchronizeStream(ctx->stream) != ACL_SUCCESS) {
                conf_fail(ctx, "the loop's stop AllReduce failed after %ld iterations", it);
                break;
            }
            aclrtMemcpy(&mine, 4, flag, 4, ACL_MEMCPY_DEVICE_TO_HOST);
            up = mine != 0;
        } else if (loop_ok) {
            up = 0;
        }
        if (up) {
            if (loop_ok) {
                fprintf(stderr, "[netns host %s rank %d] LOOP_DONE %ld\n", g_host, ctx->rank, it);
                fflush(stderr);
                result = 0;
            } else {
                conf_fail(ctx, "the AllReduce loop ran %d s (%ld iterations) without a failure", loop_max, it);
            }
            break;
        }
    }
    aclrtFree(s);
    aclrtFree(d);
    aclrtFree(flag);
    free(h);
    double td = conf_now();
    conf_step(ctx, "loop: HcclCommDestroy");
    HcclResult rc = HcclCommDestroy(ctx->comm);
    ctx->comm = NULL;
    fprintf(stderr, "[netns host %s rank %d] DESTROY_RETURNED %d after %.3f s\n", g_host, ctx->rank, (int)rc,
            conf_now() - td);
    fflush(stderr);
    return rc == HCCL_SUCCESS || result == 10 ? result : 1;
}

/* ---- main --------------------------------------------------------------------- */

static int has_suite(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {.suite = "ops", .rank = -1, .nranks = -1, .comms = 0, .timeout_s = 150, .loop_max = 60};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-v") || !strcmp(a, "--loop-ok")) {
            *(a[1] == 'v' ? &o.verbose : &o.loop_ok) = 1;
            continue;
        }
        if (!v) usage();
        if (!strcmp(a, "--init")) o.init = v;
        else if (!strcmp(a, "--table")) o.table = v;
        else if (!strcmp(a, "--table2")) o.table2 = v;
        else if (!strcmp(a, "--root")) o.root = v;
        else if (!strcmp(a, "--shared")) o.shared = v;
        else if (!strcmp(a, "--suite")) o.suite = v;
        else if (!strcmp(a, "--rank")) o.rank = atoi(v);
        else if (!strcmp(a, "--nranks")) o.nranks = atoi(v);
        else if (!strcmp(a, "--comms")) o.comms = atoi(v);
        else if (!strcmp(a, "--timeout")) o.timeout_s = atoi(v);
        else if (!strcmp(a, "--loop-max")) o.loop_max = atoi(v);
        else usage();
        i++;
    }
    if (!o.init || !o.shared) usage();
    if (!strcmp(o.suite, "ops")) o.suite = "coll,p2p,multicomm";
    int loop = !strcmp(o.suite, "loop");
    int want2 = has_suite(o.suite, "multicomm") || has_suite(o.suite, "queries");
    if (o.comms == 0) o.comms = want2 ? 2 : 1;
    if (want2 && o.comms < 2) usage();
    int is_env = !strcmp(o.init, "env");
    if (!is_env && o.rank < 0) usage();
    if (!strcmp(o.init, "rootinfo") && (!o.root || o.nranks < 1)) usage();
    if (!strcmp(o.init, "ranktable") && (!o.table || (o.comms > 1 && !o.table2))) usage();
    if (is_env && o.comms > 1) {
        fprintf(stderr, "netns_rank: --init env makes one communicator only\n");
        return 2;
    }

    const char *hid = getenv("HCCL_HOST_ID");
    snprintf(g_host, sizeof g_host, "%s", hid && *hid ? hid : "-");
    setenv("HCCL_CONNECT_TIMEOUT", "30", 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)o.timeout_s);
    if (map_shared(o.shared) != 0) return 1;

    conf_opts co = {.mode = MODE_PROCS, .nranks = o.nranks, .suite = o.suite, .timeout_s = o.timeout_s,
                    .verbose = o.verbose};
    conf_ctx c;
    memset(&c, 0, sizeof c);
    c.mode = MODE_PROCS;
    c.opt = &co;
    c.rank = o.rank >= 0 ? o.rank : 0;
    c.nranks = o.nranks;
    g_rank = c.rank;
    double t0 = conf_now();

    /* Device = global rank; with env init the rank is only known after the init. */
    int dev = is_env ? -1 : c.rank;
    const char *init_label = o.init;
    static char env_label[64];
    if (is_env) {
        const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}; /* the library's order */
        for (size_t k = 0; k < sizeof vars / sizeof vars[0] && dev < 0; k++)
            if (getenv(vars[k]) && *getenv(vars[k])) {
                dev = atoi(getenv(vars[k]));
                snprintf(env_label, sizeof env_label, "env %s", vars[k]);
                init_label = env_label;
            }
        if (dev < 0) dev = 0;
        c.rank = g_rank = dev;
    }
    if (!conf_acl_ok(&c, aclrtSetDevice(dev), "aclrtSetDevice")) return 1;
    if (!conf_acl_ok(&c, aclrtCreateStream(&c.stream), "aclrtCreateStream")) return 1;
    if (o.comms > 1 && !conf_acl_ok(&c, aclrtCreateStream(&c.stream2), "aclrtCreateStream(2)")) return 1;

    HcclResult rc = HCCL_SUCCESS;
    if (!strcmp(o.init, "ranktable")) {
        conf_step(&c, "HcclCommInitClusterInfo(%s, %d)", o.table, c.rank);
        rc = HcclCommInitClusterInfo(o.table, (uint32_t)c.rank, &c.comm);
        if (conf_ok(&c, rc, "HcclCommInitClusterInfo") && o.comms > 1) {
            HcclCommConfig cfg;
            HcclCommConfigInit(&cfg);
            snprintf(cfg.hcclCommName, sizeof cfg.hcclCommName, "netns_table2");
            conf_step(&c, "HcclCommInitClusterInfoConfig(%s, %d)", o.table2, c.rank);
            rc = HcclCommInitClusterInfoConfig(o.table2, (uint32_t)c.rank, &cfg, &c.comm2);
            conf_ok(&c, rc, "HcclCommInitClusterInfoConfig(table2)");
        }
    } else if (!strcmp(o.init, "rootinfo")) {
        HcclRootInfo roots[2];
        memset(roots, 0, sizeof roots);
        if (c.rank == 0) {
            for (int k = 0; k < o.comms && rc == HCCL_SUCCESS; k++) {
                conf_step(&c, "HcclGetRootInfo #%d", k);
                rc = HcclGetRootInfo(&roots[k]);
                conf_ok(&c, rc, "HcclGetRootInfo");
            }
            if (rc == HCCL_SUCCESS && write_roots(o.root, roots, o.comms) != 0) rc = HCCL_E_INTERNAL;
        } else {
            conf_step(&c, "waiting for the root info file %s", o.root);
            if (read_roots(o.root, roots, o.comms, 60) != 0) rc = HCCL_E_INTERNAL;
        }
        for (int k = 0; k < o.comms && rc == HCCL_SUCCESS; k++) {
            char what[96];
            snprintf(what, sizeof what, "HcclCommInitRootInfo(%d, root #%d, %d)", c.nranks, k, c.rank);
            conf_step(&c, "%s", what);
            rc = HcclCommInitRootInfo((uint32_t)c.nranks, &roots[k], (uint32_t)c.rank, k ? &c.comm2 : &c.comm);
            conf_ok(&c, rc, what);
        }
    } else if (is_env) {
        conf_step(&c, "HcclCommInitFromEnv");
        rc = HcclCommInitFromEnv(NULL, &c.comm);
        if (conf_ok(&c, rc, "HcclCommInitFromEnv")) {
            uint32_t v = 0;
            if (conf_ok(&c, HcclGetRankSize(c.comm, &v), "HcclGetRankSize")) c.nranks = co.nranks = (int)v;
            if (conf_ok(&c, HcclGetRankId(c.comm, &v), "HcclGetRankId") && (int)v != c.rank)
                conf_fail(&c, "HcclCommInitFromEnv gave rank %u, the launcher's variables say %d", v, c.rank);
        }
    } else {
        usage();
    }
    if (c.fails == 0 && o.verbose)
        fprintf(stderr, "[netns host %s rank %d] init took %.3f s\n", g_host, c.rank, conf_now() - t0);

    int result = 0;
    if (c.fails == 0) {
        if (loop) {
            result = run_loop(&c, o.loop_max, o.loop_ok);
        } else {
            if (has_suite(o.suite, "coll")) conf_suite_coll(&c);
            if (has_suite(o.suite, "p2p")) conf_suite_p2p(&c);
            if (has_suite(o.suite, "multicomm")) conf_suite_multicomm(&c);
            if (has_suite(o.suite, "queries")) conf_suite_queries(&c);
            if (has_suite(o.suite, "subcomm")) conf_suite_subcomm(&c);
        }
    }
    if (c.comm2) {
        conf_step(&c, "HcclCommDestroy(comm2)");
        conf_ok(&c, HcclCommDestroy(c.comm2), "HcclCommDestroy(comm2)");
    }
    if (c.comm) {
        conf_step(&c, "HcclCommDestroy(comm)");
        conf_ok(&c, HcclCommDestroy(c.comm), "HcclCommDestroy(comm)");
    }
    if (c.stream2) aclrtDestroyStream(c.stream2);
    aclrtDestroyStream(c.stream);
    aclrtResetDevice(dev);
    if (result == 0 && c.fails) result = 1;
    printf("netns_rank host %s rank %d/%d (%s, %s): %s (%d failure(s), %.2f s)\n", g_host, c.rank, c.nranks,
           init_label, o.suite, result == 0 ? "PASS" : result == 10 ? "LOOP_FAILED_AS_EXPECTED" : "FAIL", c.fails,
           conf_now() - t0);
    return result;
}
