/*
 * conf_main.c - driver of the black-box conformance tests: options, watchdog, and the
 * three ways of running ranks.
 *
 *   hccl_conf --mode procs|threads|initall --nranks N --suite NAME [--timeout S]
 *             [--signal-us US] [-v]
 *
 * procs:   the parent calls HcclGetRootInfo (its root listener lives in the parent),
 *          then forks N children; each calls HcclCommInitRootInfo with the inherited blob.
 * threads: N threads of this process call HcclCommInitRootInfo concurrently.
 * initall: HcclCommInitAll makes the N communicators; N threads use one each.
 * Every rank binds its device (aclrtSetDevice(rank)), creates its streams, runs the
 * suite's rank function, then destroys its communicators and streams.
 *
 * Watchdog: every process arms alarm(); on expiry it prints what each rank was doing
 * (g_shared->step) and exits with status 3, so a hang fails with a useful message.
 * HCCL_CONNECT_TIMEOUT defaults to 30 s here so a broken bootstrap fails, not hangs.
 *
 * --signal-us US: an application that takes signals (a profiler's timer, Python's
 * signal.setitimer): each rank's thread gets a SIGPROF every US microseconds, from its
 * creating the stream to its last destroy, and the handler is installed without
 * SA_RESTART, so the library's blocking system calls on that thread fail with EINTR.
 * They must be retried (not reported as a lost connection or a timeout).
 */
#include "conf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

conf_shared *g_shared;

static int g_watch_rank = -1; /* -1: this process watches every rank */
static int g_watch_nranks = CONF_MAX_RANKS;
static pid_t g_children[CONF_MAX_RANKS];
static int g_nchildren;
static const char *g_prog_label = "hccl_conf";

double conf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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
    char num[16];
    (void)sig;
    write_str("\n*** WATCHDOG: ");
    write_str(g_prog_label);
    write_str(" timed out; steps in progress:\n");
    for (int r = 0; r < g_watch_nranks && r < CONF_MAX_RANKS; r++) {
        if (g_watch_rank >= 0 && r != g_watch_rank) continue;
        if (g_shared == NULL || g_shared->step[r][0] == '\0') continue;
        int v = r, k = 0;
        char tmp[16];
        do {
            tmp[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v > 0);
        for (int j = 0; j < k; j++) num[j] = tmp[k - 1 - j];
        num[k] = '\0';
        write_str("    rank ");
        write_str(num);
        write_str(": ");
        write_str(g_shared->step[r]);
        write_str("\n");
    }
    for (int i = 0; i < g_nchildren; i++) {
        if (g_children[i] > 0) kill(g_children[i], SIGKILL);
    }
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
        if (ctx->fails > 40) return; /* enough to diagnose */
        fprintf(stderr, "[%s rank %d/%d] FAIL: %s\n",
                ctx->mode == MODE_PROCS ? "procs" : ctx->mode == MODE_THREADS ? "threads" : "initall", ctx->rank,
                ctx->nranks, buf);
    } else {
        fprintf(stderr, "FAIL: %s\n", buf);
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
    /* Sense-reversing barrier in shared memory: counter[14] arrivals, [15] generation. */
    int gen = atomic_load(&g_shared->counter[15]);
    if (atomic_fetch_add(&g_shared->counter[14], 1) == ctx->nranks - 1) {
        atomic_store(&g_shared->counter[14], 0);
        atomic_fetch_add(&g_shared->counter[15], 1);
    } else {
        while (atomic_load(&g_shared->counter[15]) == gen) usleep(200);
    }
}

/* ---- one rank ---------------------------------------------------------------- */

typedef struct {
    const conf_opts *o;
    conf_mode mode;
    int rank, nranks, ncomms;
    const HcclRootInfo *roots; /* procs/threads */
    HcclComm pre[2];           /* initall */
    conf_rank_fn fn;
    conf_init_fn init; /* custom communicator creation (procs/threads), or NULL */
    void *init_arg;
    int fails;
} rank_args;

static _Atomic long g_signals;
static void on_sigprof(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&g_signals, 1, memory_order_relaxed);
}

/* --signal-us: a timer that signals this thread (SIGEV_THREAD_ID); 0 when not asked. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
static int signal_timer_start(const conf_opts *o, timer_t *t)
{
    if (o->signal_us <= 0) return 0;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    long ns = (long)o->signal_us * 1000;
    struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L}, {ns / 1000000000L, ns % 1000000000L}};
    if (timer_create(CLOCK_MONOTONIC, &ev, t) != 0 || timer_settime(*t, 0, &its, NULL) != 0) {
        fprintf(stderr, "FAIL: timer_create/timer_settime: %s\n", strerror(errno));
        exit(1);
    }
    return 1;
}

static int rank_body(rank_args *a);

static int rank_main(rank_args *a)
{
    timer_t t;
    int timed = signal_timer_start(a->o, &t);
    int fails = rank_body(a);
    if (timed) {
        timer_delete(t);
        if (atomic_load(&g_signals) == 0) {
            fprintf(stderr, "FAIL: rank %d: --signal-us %d, but no signal arrived\n", a->rank, a->o->signal_us);
            fails++;
        }
        if (a->o->verbose) fprintf(stderr, "[rank %d] %ld signal(s) so far\n", a->rank, atomic_load(&g_signals));
    }
    return fails;
}

static int rank_body(rank_args *a)
{
    conf_ctx c;
    char what[96];
    memset(&c, 0, sizeof c);
    c.rank = a->rank;
    c.nranks = a->nranks;
    c.mode = a->mode;
    c.opt = a->o;

    conf_step(&c, "aclrtSetDevice(%d)", a->rank);
    if (!conf_acl_ok(&c, aclrtSetDevice(a->rank), "aclrtSetDevice")) return c.fails;
    conf_step(&c, "aclrtCreateStream");
    if (!conf_acl_ok(&c, aclrtCreateStream(&c.stream), "aclrtCreateStream")) goto out_dev;
    if (a->ncomms > 1 && !conf_acl_ok(&c, aclrtCreateStream(&c.stream2), "aclrtCreateStream(2)")) goto out_stream;

    if (a->init) {
        conf_step(&c, "custom init");
        if (!conf_ok(&c, a->init(&c, &c.comm, a->init_arg), "communicator init")) goto out_comm;
        if (c.comm == NULL) {
            conf_fail(&c, "communicator init succeeded but gave a NULL communicator");
            goto out_comm;
        }
    } else if (a->mode == MODE_INITALL) {
        c.comm = a->pre[0];
        c.comm2 = a->ncomms > 1 ? a->pre[1] : NULL;
    } else {
        for (int k = 0; k < a->ncomms; k++) {
            HcclComm *dst = k == 0 ? &c.comm : &c.comm2;
            conf_step(&c, "HcclCommInitRootInfo(nRanks=%d, rank=%d) comm #%d", a->nranks, a->rank, k);
            double t0 = conf_now();
            snprintf(what, sizeof what, "HcclCommInitRootInfo(%d, root, %d) comm #%d", a->nranks, a->rank, k);
            if (!conf_ok(&c, HcclCommInitRootInfo((uint32_t)a->nranks, &a->roots[k], (uint32_t)a->rank, dst), what))
                goto out_comm;
            if (*dst == NULL) {
                conf_fail(&c, "%s succeeded but gave a NULL communicator", what);
                goto out_comm;
            }
            if (a->o->verbose) fprintf(stderr, "[rank %d] init #%d took %.3fs\n", a->rank, k, conf_now() - t0);
        }
    }

    a->fn(&c);

out_comm:
    if (c.comm2) {
        conf_step(&c, "HcclCommDestroy(comm2)");
        conf_ok(&c, HcclCommDestroy(c.comm2), "HcclCommDestroy(comm2)");
    }
    if (c.comm) {
        conf_step(&c, "HcclCommDestroy(comm)");
        conf_ok(&c, HcclCommDestroy(c.comm), "HcclCommDestroy(comm)");
    }
    if (c.stream2) conf_acl_ok(&c, aclrtDestroyStream(c.stream2), "aclrtDestroyStream(2)");
out_stream:
    conf_acl_ok(&c, aclrtDestroyStream(c.stream), "aclrtDestroyStream");
out_dev:
    conf_acl_ok(&c, aclrtResetDevice(a->rank), "aclrtResetDevice");
    conf_step(&c, "done (%d failures)", c.fails);
    return c.fails;
}

static void *rank_thread(void *p)
{
    rank_args *a = p;
    a->fails = rank_main(a);
    return NULL;
}

static int run_threads(rank_args *args, int nranks)
{
    pthread_t th[CONF_MAX_RANKS];
    int failed = 0;
    for (int r = 0; r < nranks; r++) {
        if (pthread_create(&th[r], NULL, rank_thread, &args[r]) != 0) {
            fprintf(stderr, "FAIL: pthread_create: %s\n", strerror(errno));
            exit(1);
        }
    }
    for (int r = 0; r < nranks; r++) {
        pthread_join(th[r], NULL);
        if (args[r].fails) {
            fprintf(stderr, "rank %d: %d failure(s)\n", r, args[r].fails);
            failed++;
        }
    }
    return failed;
}

static int run_procs(rank_args *args, int nranks)
{
    int failed = 0, left = nranks;
    double deadline = 0;
    g_nchildren = 0;
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < nranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "FAIL: fork: %s\n", strerror(errno));
            exit(1);
        }
        if (pid == 0) {
            g_watch_rank = r;
            g_nchildren = 0;
            alarm((unsigned)args[r].o->timeout_s);
            int f = rank_main(&args[r]);
            fflush(stdout);
            fflush(stderr);
            _exit(f ? 1 : 0);
        }
        g_children[g_nchildren++] = pid;
    }
    while (left > 0) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid == 0) {
            if (deadline > 0 && conf_now() > deadline) {
                fprintf(stderr, "FAIL: ranks still running 40 s after a rank failed; killing them\n");
                for (int i = 0; i < g_nchildren; i++)
                    if (g_children[i] > 0) {
                        fprintf(stderr, "    rank %d was at: %s\n", i, g_shared->step[i]);
                        kill(g_children[i], SIGKILL);
                    }
                deadline = 0;
            }
            usleep(2000);
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        int r = -1;
        for (int i = 0; i < g_nchildren; i++)
            if (g_children[i] == pid) r = i;
        if (r < 0) continue;
        g_children[r] = 0;
        left--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
        failed++;
        if (WIFSIGNALED(st))
            fprintf(stderr, "FAIL: rank %d killed by signal %d (%s) at step: %s\n", r, WTERMSIG(st),
                    strsignal(WTERMSIG(st)), g_shared->step[r]);
        else if (WEXITSTATUS(st) == 3)
            fprintf(stderr, "FAIL: rank %d hit its watchdog\n", r);
        else
            fprintf(stderr, "FAIL: rank %d exited with status %d\n", r, WEXITSTATUS(st));
        if (deadline == 0) deadline = conf_now() + 40;
    }
    g_nchildren = 0;
    return failed;
}

int conf_run_ranks(const conf_opts *o, conf_mode mode, int nranks, int ncomms, conf_rank_fn fn)
{
    return conf_run_ranks_custom(o, mode, nranks, ncomms, NULL, NULL, fn);
}

int conf_run_ranks_custom(const conf_opts *o, conf_mode mode, int nranks, int ncomms, conf_init_fn init,
                          void *init_arg, conf_rank_fn fn)
{
    rank_args args[CONF_MAX_RANKS];
    HcclRootInfo *roots = NULL;
    HcclComm pre[2][CONF_MAX_RANKS];
    int failed;

    if (nranks < 1 || nranks > CONF_MAX_RANKS) {
        fprintf(stderr, "FAIL: bad nranks %d\n", nranks);
        return 1;
    }
    memset(g_shared, 0, sizeof *g_shared);
    g_watch_nranks = nranks;
    memset(pre, 0, sizeof pre);
    if (init) {
        ncomms = 1;
    } else if (mode == MODE_INITALL) {
        int32_t devs[CONF_MAX_RANKS];
        for (int r = 0; r < nranks; r++) devs[r] = r;
        for (int k = 0; k < ncomms; k++) {
            snprintf(g_shared->step[0], CONF_STEP_LEN, "HcclCommInitAll(%d) #%d (main thread)", nranks, k);
            HcclResult rc = HcclCommInitAll((uint32_t)nranks, devs, pre[k]);
            if (rc != HCCL_SUCCESS) {
                fprintf(stderr, "FAIL: HcclCommInitAll(%d) returned %d (%s)\n", nranks, (int)rc,
                        HcclGetErrorString(rc));
                return nranks;
            }
            for (int r = 0; r < nranks; r++)
                if (pre[k][r] == NULL) {
                    fprintf(stderr, "FAIL: HcclCommInitAll gave a NULL communicator for rank %d\n", r);
                    return nranks;
                }
        }
    } else {
        roots = calloc((size_t)ncomms, sizeof *roots);
        for (int k = 0; k < ncomms; k++) {
            snprintf(g_shared->step[0], CONF_STEP_LEN, "HcclGetRootInfo #%d (parent)", k);
            HcclResult rc = HcclGetRootInfo(&roots[k]);
            if (rc != HCCL_SUCCESS) {
                fprintf(stderr, "FAIL: HcclGetRootInfo returned %d (%s)\n", (int)rc, HcclGetErrorString(rc));
                free(roots);
                return nranks;
            }
        }
    }
    for (int r = 0; r < nranks; r++) {
        args[r] = (rank_args){.o = o, .mode = mode, .rank = r, .nranks = nranks, .ncomms = ncomms,
                              .roots = roots, .fn = fn, .init = init, .init_arg = init_arg};
        args[r].pre[0] = pre[0][r];
        args[r].pre[1] = pre[1][r];
    }
    failed = mode == MODE_PROCS ? run_procs(args, nranks) : run_threads(args, nranks);
    free(roots);
    return failed;
}

/* ---- suites ------------------------------------------------------------------ */

static void rank_ops(conf_ctx *ctx)
{
    conf_suite_coll(ctx);
    conf_suite_p2p(ctx);
    conf_suite_multicomm(ctx);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: hccl_conf [--mode procs|threads|initall] [--nranks N] [--suite NAME] [--timeout S]\n"
            "                 [--signal-us US] [-v]\n"
            "suites: ops (coll + p2p + multicomm), coll, p2p, multicomm, queries, subcomm,\n"
            "        badinput, ranktable, env, config, twojobs, devices\n");
    exit(2);
}

int main(int argc, char **argv)
{
    conf_opts o = {.mode = MODE_PROCS, .nranks = 2, .suite = "ops", .timeout_s = 150, .verbose = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-v")) {
            o.verbose = 1;
            continue;
        }
        if (v == NULL) usage();
        if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "procs")) o.mode = MODE_PROCS;
            else if (!strcmp(v, "threads")) o.mode = MODE_THREADS;
            else if (!strcmp(v, "initall")) o.mode = MODE_INITALL;
            else usage();
        } else if (!strcmp(a, "--nranks")) {
            o.nranks = atoi(v);
        } else if (!strcmp(a, "--suite")) {
            o.suite = v;
        } else if (!strcmp(a, "--timeout")) {
            o.timeout_s = atoi(v);
        } else if (!strcmp(a, "--signal-us")) {
            o.signal_us = atoi(v);
        } else {
            usage();
        }
        i++;
    }
    if (o.nranks < 1 || o.nranks > CONF_MAX_RANKS || o.timeout_s < 1) usage();

    setenv("HCCL_CONNECT_TIMEOUT", "30", 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_shared = mmap(NULL, sizeof *g_shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(g_shared, 0, sizeof *g_shared);
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    if (o.signal_us > 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigprof; /* no SA_RESTART: blocking calls fail with EINTR */
        sigaction(SIGPROF, &sa, NULL);
    }
    alarm((unsigned)o.timeout_s + 5); /* the parent reports after the children */

    static char label[128];
    snprintf(label, sizeof label, "hccl_conf --suite %s --mode %s --nranks %d", o.suite,
             o.mode == MODE_PROCS ? "procs" : o.mode == MODE_THREADS ? "threads" : "initall", o.nranks);
    g_prog_label = label;

    double t0 = conf_now();
    int failed;
    const char *s = o.suite;
    if (!strcmp(s, "ops")) failed = conf_run_ranks(&o, o.mode, o.nranks, 2, rank_ops);
    else if (!strcmp(s, "coll")) failed = conf_run_ranks(&o, o.mode, o.nranks, 1, conf_suite_coll);
    else if (!strcmp(s, "p2p")) failed = conf_run_ranks(&o, o.mode, o.nranks, 1, conf_suite_p2p);
    else if (!strcmp(s, "multicomm")) failed = conf_run_ranks(&o, o.mode, o.nranks, 2, conf_suite_multicomm);
    else if (!strcmp(s, "queries")) failed = conf_run_ranks(&o, o.mode, o.nranks, 2, conf_suite_queries);
    else if (!strcmp(s, "subcomm")) failed = conf_run_ranks(&o, o.mode, o.nranks, 1, conf_suite_subcomm);
    else if (!strcmp(s, "badinput")) failed = conf_badinput_main(&o);
    else if (!strcmp(s, "ranktable")) failed = conf_ranktable_main(&o);
    else if (!strcmp(s, "env")) failed = conf_env_main(&o);
    else if (!strcmp(s, "config")) failed = conf_config_main(&o);
    else if (!strcmp(s, "twojobs")) failed = conf_twojobs_main(&o);
    else if (!strcmp(s, "devices")) failed = conf_devices_main(&o);
    else usage();

    printf("%s: %s (%d failed rank(s)/case(s), %.2f s)\n", label, failed ? "FAIL" : "PASS", failed,
           conf_now() - t0);
    return failed ? 1 : 0;
}
