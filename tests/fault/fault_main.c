/*
 * fault_main.c - driver and harness of the fault-handling tests.
 *
 *   hccl_fault --scenario NAME [--dir DIR] [--keep] [scenario options]
 *
 * A scenario runs one or more jobs. A job forks its ranks; each rank's stdout and
 * stderr go to DIR/<job>_rank<r>.log (the scenario then checks the WARN lines the
 * library printed there), and its results go to shared memory. Around every rank
 * the harness:
 *   - counts /proc/self/fd before the communicator is made and after HcclCommDestroy
 *     (a failure must not leak sockets or files);
 *   - times HcclCommDestroy (it must return within 5 s whatever happened);
 *   - arms a watchdog (alarm) that reports the step the rank was in and exits 3.
 * Around every job the parent snapshots /dev/shm and fails if an entry named after
 * one of the job's processes (hccl-shm-<pid>-...) is left behind.
 *
 * DIR defaults to a fresh directory under $TMPDIR (removed unless --keep);
 * HCCL_FLIGHT_RECORDER_DIR defaults to DIR, so failure dumps do not litter /tmp.
 */
#include "fault.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

fault_shared *g_sh;

static const fault_job *g_job; /* job being run (for output file names) */
static int g_parent_fails;
static int g_my_rank = -1;     /* in a rank process */
static pid_t g_pids[FAULT_MAX_RANKS];
static int g_npids;

double fault_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void fault_step(fault_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_sh->r[c->rank].step, FAULT_STEP_LEN, fmt, ap);
    va_end(ap);
}

void fault_fail(fault_ctx *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (c) {
        c->fails++;
        fprintf(stderr, "FAULT-TEST FAIL [%s rank %d]: %s\n", g_job ? g_job->name : "?", c->rank, buf);
    } else {
        g_parent_fails++;
        fprintf(stderr, "FAULT-TEST FAIL [%s]: %s\n", g_job ? g_job->name : "?", buf);
    }
    fflush(stderr);
}

int fault_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static void list_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char p[300], t[512];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(p, t, sizeof t - 1);
        t[k > 0 ? k : 0] = 0;
        fprintf(stderr, "    fd %s -> %s\n", e->d_name, t);
    }
    closedir(d);
}

int fault_wait_flag(int i, int v, double timeout_s)
{
    double end = fault_now() + timeout_s;
    while (atomic_load(&g_sh->flag[i]) < v) {
        if (fault_now() > end) return 0;
        usleep(1000);
    }
    return 1;
}

void fault_forgive(const fault_job *job)
{
    g_parent_fails -= job->failed_checks;
    fprintf(stderr, "FAULT-TEST INFO [%s]: the %d failed check(s) above are taken back; running again\n", job->name,
            job->failed_checks);
}

int fault_free_ports(int n)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        /* Below the ephemeral range, so the kernel does not hand them out meanwhile. */
        unsigned seed = (unsigned)(getpid() * 7919u + (unsigned)attempt * 104729u + (unsigned)time(NULL));
        int base = 20000 + (int)(seed % 12000u);
        int ok = 1, fds[64];
        int k;
        for (k = 0; k < n && k < 64; k++) {
            fds[k] = fault_occupy_port(base + k, 0);
            if (fds[k] < 0) {
                ok = 0;
                break;
            }
        }
        for (int j = 0; j < k; j++) close(fds[j]);
        if (ok) return base;
    }
    return -1;
}

int fault_occupy_port(int port, int loopback)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(loopback ? INADDR_LOOPBACK : INADDR_ANY);
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0) {
        close(s);
        return -1;
    }
    return s;
}

/* ---- captured output ------------------------------------------------------------------ */

static void output_path(int rank, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s_rank%d.log", g_sh->dir, g_job ? g_job->name : "job", rank);
}

char *fault_rank_output(int rank)
{
    char path[700];
    output_path(rank, path, sizeof path);
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (f) {
        char tmp[4096];
        size_t k;
        while ((k = fread(tmp, 1, sizeof tmp, f)) > 0) {
            if (len + k + 1 > cap) {
                cap = (len + k + 1) * 2;
                buf = realloc(buf, cap);
            }
            memcpy(buf + len, tmp, k);
            len += k;
        }
        fclose(f);
    }
    if (!buf) buf = calloc(1, 1);
    else buf[len] = 0;
    return buf;
}

/* needle found in hay where a needle ending in a digit is not followed by one. */
static int has_word(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) {
        char last = needle[n - 1];
        if (last >= '0' && last <= '9' && p[n] >= '0' && p[n] <= '9') continue;
        return 1;
    }
    return 0;
}

int fault_text_has_line(const char *text, const char *const *needles)
{
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *l = strndup(line, len);
        int all = 1;
        for (int i = 0; needles[i]; i++)
            if (!has_word(l, needles[i])) {
                all = 0;
                break;
            }
        free(l);
        if (all) return 1;
        if (!end) break;
        line = end + 1;
    }
    return 0;
}

int fault_output_has(int rank, ...)
{
    const char *needles[16];
    int n = 0;
    va_list ap;
    va_start(ap, rank);
    for (const char *s; n < 15 && (s = va_arg(ap, const char *)) != NULL;) needles[n++] = s;
    va_end(ap);
    needles[n] = NULL;
    char *out = fault_rank_output(rank);
    int r = fault_text_has_line(out, needles);
    free(out);
    return r;
}

void fault_print_output(int rank)
{
    char *out = fault_rank_output(rank);
    const char *line = out;
    while (*line) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        fprintf(stderr, "  [%s rank %d] %.*s\n", g_job->name, rank, len, line);
        if (!end) break;
        line = end + 1;
    }
    free(out);
}

/* ---- buffers and a checked AllReduce ----------------------------------------------------- */

int fault_bufs_alloc(fault_ctx *c, fault_bufs *b, size_t send_bytes, size_t recv_bytes)
{
    memset(b, 0, sizeof *b);
    if (aclrtMalloc(&b->dev_send, send_bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtMalloc(&b->dev_recv, recv_bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        fault_fail(c, "aclrtMalloc failed");
        return -1;
    }
    b->bytes = send_bytes;
    return 0;
}

void fault_bufs_free(fault_bufs *b)
{
    if (b->dev_send) aclrtFree(b->dev_send);
    if (b->dev_recv) aclrtFree(b->dev_recv);
    memset(b, 0, sizeof *b);
}

void fault_note_failure(fault_ctx *c, double t_start, int rc)
{
    fault_rank_state *s = &g_sh->r[c->rank];
    s->t_fail = fault_now();
    s->t_op_start = t_start;
    s->fail_rc = rc;
    HcclResult a = HCCL_SUCCESS;
    HcclResult q = HcclGetCommAsyncError(c->comm, &a);
    s->async_rc = q == HCCL_SUCCESS ? (int)a : -1000 - (int)q;
}

int fault_allreduce_check(fault_ctx *c, fault_bufs *b, uint64_t count, float k)
{
    size_t bytes = count * sizeof(float);
    float *h = malloc(bytes);
    int rc = 0;
    for (uint64_t i = 0; i < count; i++) h[i] = (float)(c->rank + 1) * k;
    aclrtMemcpy(b->dev_send, bytes, h, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    double t0 = fault_now();
    HcclResult hr = HcclAllReduce(b->dev_send, b->dev_recv, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c->comm,
                                  c->stream);
    if (hr != HCCL_SUCCESS) {
        fault_note_failure(c, t0, (int)hr);
        rc = (int)hr;
        goto out;
    }
    aclError e = aclrtSynchronizeStream(c->stream);
    if (e != ACL_SUCCESS) {
        fault_note_failure(c, t0, (int)e);
        rc = (int)e;
        goto out;
    }
    aclrtMemcpy(h, bytes, b->dev_recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    float want = k * (float)(c->nranks * (c->nranks + 1) / 2);
    for (uint64_t i = 0; i < count; i++)
        if (h[i] != want) {
            fault_fail(c, "AllReduce result[%llu] = %g, expected %g", (unsigned long long)i, h[i], want);
            break;
        }
out:
    free(h);
    return rc;
}

/* ---- running a job ------------------------------------------------------------------------ */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "\nFAULT-TEST FAIL: WATCHDOG fired; step in progress: ";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    if (g_my_rank >= 0) {
        const char *s = g_sh->r[g_my_rank].step;
        if (write(2, s, strnlen(s, FAULT_STEP_LEN)) < 0) _exit(3);
    }
    if (write(2, "\n", 1) < 0) _exit(3);
    for (int i = 0; i < g_npids; i++)
        if (g_pids[i] > 0) kill(g_pids[i], SIGKILL);
    _exit(3);
}

static int rank_main(fault_job *job, int rank)
{
    fault_ctx c;
    memset(&c, 0, sizeof c);
    c.rank = rank;
    c.nranks = job->nranks;
    c.arg = job->arg;
    fault_rank_state *s = &g_sh->r[rank];
    s->pid = (int)getpid();

    fault_step(&c, "aclrtSetDevice / aclrtCreateStream");
    if (aclrtSetDevice(rank) != ACL_SUCCESS || aclrtCreateStream(&c.stream) != ACL_SUCCESS) {
        fault_fail(&c, "aclrtSetDevice/aclrtCreateStream failed");
        return c.fails;
    }
    s->fds_before = fault_count_fds();
    if (job->init == INIT_ROOTINFO) {
        fault_step(&c, "HcclCommInitRootInfo(%d, root, %d)", job->nranks, rank);
        HcclResult rc = HcclCommInitRootInfo((uint32_t)job->nranks, &g_sh->root, (uint32_t)rank, &c.comm);
        if (rc != HCCL_SUCCESS) {
            fault_fail(&c, "HcclCommInitRootInfo returned %d (%s)", (int)rc, HcclGetErrorString(rc));
            c.comm = NULL;
        }
    }
    if (c.comm || job->init == INIT_NONE) job->body(&c);
    if (c.comm) {
        fault_step(&c, "HcclCommDestroy");
        double t0 = fault_now();
        HcclResult rc = HcclCommDestroy(c.comm);
        s->destroy_s = fault_now() - t0;
        FCHECK(&c, rc == HCCL_SUCCESS, "HcclCommDestroy returned %d (%s)", (int)rc, HcclGetErrorString(rc));
        FCHECK(&c, s->destroy_s < 5.0, "HcclCommDestroy took %.2f s (limit 5 s)", s->destroy_s);
    }
    s->fds_after = fault_count_fds();
    if (!job->skip_fd_check && s->fds_after != s->fds_before) {
        fault_fail(&c, "%d file descriptors open before the communicator, %d after HcclCommDestroy; now open:",
                   s->fds_before, s->fds_after);
        list_fds();
    }
    fault_step(&c, "aclrtDestroyStream");
    aclrtDestroyStream(c.stream);
    aclrtResetDevice(rank);
    fault_step(&c, "done (%d failed checks)", c.fails);
    return c.fails;
}

typedef struct {
    char **names;
    int n;
} name_list;

static void shm_snapshot(name_list *l)
{
    l->names = NULL;
    l->n = 0;
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        l->names = realloc(l->names, sizeof(char *) * (size_t)(l->n + 1));
        l->names[l->n++] = strdup(e->d_name);
    }
    closedir(d);
}

static void shm_free(name_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
}

/* Entries that appeared during the job and carry one of its pids. */
static void shm_check(const name_list *before, const pid_t *pids, int npids)
{
    name_list after;
    shm_snapshot(&after);
    for (int i = 0; i < after.n; i++) {
        int old = 0;
        for (int j = 0; j < before->n && !old; j++) old = strcmp(after.names[i], before->names[j]) == 0;
        if (old) continue;
        int ours = 0;
        char tag[32];
        for (int p = -1; p < npids && !ours; p++) {
            snprintf(tag, sizeof tag, "-%d-", p < 0 ? (int)getpid() : (int)pids[p]);
            ours = strstr(after.names[i], tag) != NULL;
        }
        if (ours) fault_fail(NULL, "/dev/shm/%s was left behind by this job", after.names[i]);
    }
    shm_free(&after);
}

int fault_run(fault_job *job)
{
    pid_t pids[FAULT_MAX_RANKS];
    name_list shm_before;
    int fails_at_start = g_parent_fails;
    g_job = job;
    memset(g_sh->r, 0, sizeof g_sh->r);
    for (int i = 0; i < 16; i++) atomic_store(&g_sh->flag[i], 0);
    g_sh->t_event = 0;
    if (job->watchdog_s <= 0) job->watchdog_s = 40;
    shm_snapshot(&shm_before);

    if (job->init == INIT_ROOTINFO) {
        HcclResult rc = HcclGetRootInfo(&g_sh->root);
        if (rc != HCCL_SUCCESS) {
            fault_fail(NULL, "HcclGetRootInfo returned %d", (int)rc);
            shm_free(&shm_before);
            return 1;
        }
    }
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < job->nranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            exit(1);
        }
        if (pid == 0) {
            char path[700];
            output_path(r, path, sizeof path);
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(4);
            close(fd);
            setvbuf(stdout, NULL, _IONBF, 0);
            setvbuf(stderr, NULL, _IONBF, 0);
            g_my_rank = r;
            g_npids = 0;
            alarm((unsigned)job->watchdog_s);
            int f = rank_main(job, r);
            _exit(f ? 1 : 0);
        }
        pids[r] = pid;
    }
    memcpy(g_pids, pids, sizeof(pid_t) * (size_t)job->nranks);
    g_npids = job->nranks;
    alarm((unsigned)job->watchdog_s + 15);
    if (job->parent) job->parent(job, pids);

    int left = job->nranks;
    int done[FAULT_MAX_RANKS] = {0};
    double deadline = fault_now() + job->watchdog_s + 10;
    while (left > 0) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p == 0) {
            if (fault_now() > deadline) {
                fault_fail(NULL, "ranks still running after %d s; killing them", job->watchdog_s + 10);
                for (int r = 0; r < job->nranks; r++)
                    if (!done[r]) {
                        fprintf(stderr, "    rank %d was at: %s\n", r, g_sh->r[r].step);
                        kill(pids[r], SIGKILL);
                    }
                deadline = fault_now() + 1e9;
            }
            usleep(2000);
            continue;
        }
        if (p < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int r = 0; r < job->nranks; r++)
            if (pids[r] == p) {
                job->status[r] = st;
                done[r] = 1;
                left--;
            }
    }
    alarm(0);
    g_npids = 0;

    for (int r = 0; r < job->nranks; r++) {
        int st = job->status[r];
        int killed_on_purpose = (job->killed_mask >> r) & 1;
        if (killed_on_purpose) {
            if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
                fault_fail(NULL, "rank %d should have been killed by the test (status %#x)", r, st);
        } else if (WIFSIGNALED(st)) {
            fault_fail(NULL, "rank %d died of signal %d (%s) at step: %s", r, WTERMSIG(st), strsignal(WTERMSIG(st)),
                       g_sh->r[r].step);
        } else if (WEXITSTATUS(st) == 3) {
            fault_fail(NULL, "rank %d hit its %d s watchdog at step: %s", r, job->watchdog_s, g_sh->r[r].step);
        } else if (WEXITSTATUS(st) != 0) {
            fault_fail(NULL, "rank %d reported failed checks (exit status %d)", r, WEXITSTATUS(st));
        }
    }
    shm_check(&shm_before, pids, job->nranks);
    shm_free(&shm_before);
    /* The ranks' stderr, for the test log. */
    for (int r = 0; r < job->nranks; r++) fault_print_output(r);
    job->failed_checks = g_parent_fails - fails_at_start;
    return job->failed_checks;
}

/* ---- main ------------------------------------------------------------------------------ */

static int rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

static const struct {
    const char *name;
    int (*fn)(int, char **);
} scenarios[] = {
    {"kill", scen_kill},       {"skip", scen_skip}, {"peer_timeout", scen_peer_timeout},   {"stop", scen_stop},
    {"p2p_timeout", scen_p2p_timeout},
    {"stop_heard", scen_stop_heard}, {"giveup", scen_giveup},
    {"mismatch", scen_mismatch}, {"subcomm", scen_subcomm}, {"stray", scen_stray}, {"slow_hello", scen_slow_hello},
    {"port", scen_port},       {"ranktable", scen_ranktable}, {"whitelist", scen_whitelist},
    {"frdump", scen_frdump},   {"late", scen_late},   {"logfile", scen_logfile},
    {"eager_exit", scen_eager_exit}, {"leave", scen_leave}, {"split_destroy", scen_split_destroy}, {"nranks", scen_nranks}, {"reuse", scen_reuse}, {"rank_fails", scen_rank_fails}, {"nofile", scen_nofile}, {"nothread", scen_nothread}, {"setup_death", scen_setup_death}, {"mesh_fail", scen_mesh_fail}, {"algo", scen_algo},
};

static void usage(void)
{
    fprintf(stderr, "usage: hccl_fault --scenario NAME [--dir DIR] [--keep] [scenario options]\nscenarios:");
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) fprintf(stderr, " %s", scenarios[i].name);
    fprintf(stderr, "\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *scen = NULL, *dir = NULL;
    int keep = 0, i;
    char *rest[64];
    int nrest = 0;
    rest[nrest++] = argv[0];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scenario") && i + 1 < argc) scen = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--keep")) keep = 1;
        else if (nrest < 63) rest[nrest++] = argv[i];
    }
    rest[nrest] = NULL;
    if (!scen) usage();
    int (*fn)(int, char **) = NULL;
    for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++)
        if (!strcmp(scenarios[k].name, scen)) fn = scenarios[k].fn;
    if (!fn) usage();

    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(g_sh, 0, sizeof *g_sh);
    if (dir) {
        mkdir(dir, 0755);
        snprintf(g_sh->dir, sizeof g_sh->dir, "%s", dir);
        keep = 1;
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(g_sh->dir, sizeof g_sh->dir, "%s/hccl_fault_%s_XXXXXX", t && *t ? t : "/tmp", scen);
        if (!mkdtemp(g_sh->dir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    setenv("HCCL_FLIGHT_RECORDER_DIR", g_sh->dir, 0);
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    double t0 = fault_now();
    int failed = fn(nrest, rest) + g_parent_fails;
    printf("hccl_fault --scenario %s: %s (%d failed check(s), %.2f s)%s%s\n", scen, failed ? "FAIL" : "PASS", failed,
           fault_now() - t0, keep ? "; files in " : "", keep ? g_sh->dir : "");
    if (!keep) rm_dir(g_sh->dir);
    return failed ? 1 : 0;
}
