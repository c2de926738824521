/*
 * hcclrun.c - a small torchrun-style launcher for HCCL programs.
 *
 *   hcclrun -n N [--nnodes M --node-rank K --master-addr A --master-port P]
 *           (--master-addr and --master-port are required when M > 1)
 *           [--tag-output] [--bind-to core|none] [--] program args...
 *
 * Starts N local ranks with fork + execv and gives each the variables
 * RANK (= K*N + local), WORLD_SIZE (= M*N), LOCAL_RANK, LOCAL_WORLD_SIZE,
 * GROUP_RANK (= K), MASTER_ADDR, MASTER_PORT and HCCL_JOB_SECRET, which is what
 * HcclCommInitFromEnv() reads. The library's root listens on MASTER_PORT + 1, so
 * a chosen default port P has P + 1 free as well.
 *
 * Supervision: SIGINT/SIGTERM/SIGHUP/SIGQUIT are forwarded to every rank (except
 * signals the terminal already sent to the whole foreground process group); ranks
 * still running 30 s after the first (torchrun's grace), or at a second such signal,
 * get SIGKILL, so a rank that catches the signal and carries on cannot keep the job
 * alive. SIGUSR1/SIGUSR2 (a batch system's warning before the time limit, Slurm's
 * --signal) are forwarded as they come and change nothing else. When
 * a rank exits non-zero or by a signal, one line naming it goes to stderr, the
 * other ranks get SIGTERM and, 3 s later, SIGKILL. The exit status is the first
 * failing rank's (128 + signal number for a signal); else 128 + the number of the
 * first SIGINT/SIGTERM/SIGHUP/SIGQUIT hcclrun got (ranks that caught it and exited
 * 0 were still interrupted); 0 when all succeed. Ranks
 * also die with SIGKILL when hcclrun itself dies (PR_SET_PDEATHSIG). hcclrun is a
 * child subreaper: when a job fails or is signalled, the processes its ranks started
 * and left running (a shell's command, workers) get SIGKILL once the ranks are gone.
 *
 * --tag-output: each rank's stdout and stderr go through pipes and every line is
 * written out prefixed with "[rank] " (a line over LINE_MAX_BYTES in pieces of that size).
 *
 * --bind-to core: local rank l runs on the l-th CPU of hcclrun's own affinity set (as
 * Open MPI binds by default): no migration, and two ranks' threads never queue on one
 * core while another idles. Refused when there are more ranks than CPUs. The default,
 * none, leaves placement to the scheduler (as torchrun does): a rank that computes
 * with many threads (PyTorch) must not be confined to one core.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOCAL_RANKS 4096
/* The most ranks a communicator may have (the library's HCCL_COMM_MAX_RANKS). */
#define MAX_WORLD_SIZE 65536L
#define KILL_GRACE_MS 3000
/* After a forwarded SIGINT/SIGTERM/SIGHUP/SIGQUIT (time to write a checkpoint). */
#define SIGNAL_GRACE_MS 30000
#define LINE_MAX_BYTES 65536

typedef struct {
    int fd;          /* read end, -1 when closed */
    int out;         /* 1 or 2 */
    size_t len;      /* bytes buffered (an incomplete line) */
    char *buf;       /* LINE_MAX_BYTES */
} out_pipe;

typedef struct {
    pid_t pid;       /* 0 once reaped */
    int rank;        /* global rank */
    out_pipe pipes[2];
} child;

static child *children;
static int nchildren;
static int tag_output;
static int bind_core;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hcclrun -n N [options] [--] program [args...]\n"
            "Starts N local ranks of an HCCL program with torchrun-style variables\n"
            "(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,\n"
            "MASTER_PORT, HCCL_JOB_SECRET), which HcclCommInitFromEnv() reads.\n"
            "\n"
            "options:\n"
            "  -n, --nproc-per-node N  ranks on this node (required, 1..%d)\n"
            "  --nnodes M              number of nodes (default 1; M x N at most 65536)\n"
            "  --node-rank K           this node's index, 0..M-1 (default 0)\n"
            "  --master-addr A         address of the node running rank 0 (default 127.0.0.1;\n"
            "                          required when M > 1)\n"
            "  --master-port P         port; the root uses P+1 (default: a free pair;\n"
            "                          required when M > 1)\n"
            "  --tag-output            prefix every output line with \"[rank] \"\n"
            "  --bind-to core|none     core: local rank l runs on the l-th CPU hcclrun may\n"
            "                          use (at most one rank per CPU); none (default)\n"
            "  -h, --help              this text\n"
            "\n"
            "A program name without '/' is searched in PATH, then next to hcclrun.\n"
            "Exit status: the first failing rank's (128+signal when killed), else\n"
            "128+signal when hcclrun was sent SIGINT/TERM/HUP/QUIT, else 0;\n"
            "2 for usage errors, 127 when the program is not found.\n",
            MAX_LOCAL_RANKS);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "hcclrun: ");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, "\nTry 'hcclrun -h' for more information.\n");
    return 2;
}

/* Parses a decimal integer in [lo, hi]; returns 0 on success. */
static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    if (s == NULL || *s == '\0') return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Binds a TCP socket to port (0 = any) on all addresses; returns the fd or -1. */
static int bind_port(uint16_t port, uint16_t *bound)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons(port);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    if (bound) *bound = ntohs(sa.sin_port);
    return fd;
}

/* Finds a port P such that P and P+1 are both free; returns 0 on failure. */
static uint16_t pick_port_pair(void)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        uint16_t p = 0;
        int a = bind_port(0, &p), b;
        if (a < 0) return 0;
        if (p == 0 || p >= 65535) {
            close(a);
            continue;
        }
        b = bind_port((uint16_t)(p + 1), NULL);
        close(a);
        if (b >= 0) {
            close(b);
            return p;
        }
    }
    return 0;
}

/* 64-bit FNV-1a, used to derive the same job secret on every node. */
static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static int random_u64(uint64_t *out)
{
    size_t got = 0;
    unsigned char *p = (unsigned char *)out;
    while (got < sizeof(*out)) {
        ssize_t r = getrandom(p + got, sizeof(*out) - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static int is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Resolves the program: as given when it contains '/', else PATH, else hcclrun's own
 * directory. Returns a malloc'd path, or NULL when there is no executable file there. */
static char *resolve_program(const char *name)
{
    char buf[PATH_MAX];
    const char *path = getenv("PATH");
    ssize_t n;
    if (strchr(name, '/')) return is_executable_file(name) ? strdup(name) : NULL; /* checked once, here */
    if (*name == '\0') return NULL;
    if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        int w;
        if (len == 0)
            w = snprintf(buf, sizeof(buf), "./%s", name);
        else
            w = snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, name);
        if (w > 0 && (size_t)w < sizeof(buf) && is_executable_file(buf)) return strdup(buf);
        path += len;
        if (*path == ':') path++;
    }
    n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0) {
        char *slash;
        buf[n] = '\0';
        slash = strrchr(buf, '/');
        if (slash && (size_t)(slash - buf) + 1 + strlen(name) + 1 <= sizeof(buf)) {
            strcpy(slash + 1, name);
            if (is_executable_file(buf)) return strdup(buf);
        }
    }
    return NULL;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return; /* EPIPE etc.: drop the output */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Writes one line (without its newline) with the rank prefix. */
static void emit_line(int fd, int rank, const char *p, size_t n)
{
    char pre[32];
    int plen = snprintf(pre, sizeof(pre), "[%d] ", rank);
    char *line = malloc((size_t)plen + n + 1);
    if (line == NULL) return;
    memcpy(line, pre, (size_t)plen);
    memcpy(line + plen, p, n);
    line[(size_t)plen + n] = '\n';
    write_all(fd, line, (size_t)plen + n + 1); /* one write: lines of ranks do not interleave */
    free(line);
}

/* Reads what is available from a pipe and writes out complete lines. */
static void pump(out_pipe *op, int rank)
{
    ssize_t r = read(op->fd, op->buf + op->len, LINE_MAX_BYTES - op->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (r <= 0) { /* EOF or error: flush the partial line */
        if (op->len > 0) emit_line(op->out, rank, op->buf, op->len);
        op->len = 0;
        close(op->fd);
        op->fd = -1;
        return;
    }
    op->len += (size_t)r;
    size_t start = 0;
    for (size_t i = op->len - (size_t)r; i < op->len; i++) {
        if (op->buf[i] == '\n') {
            emit_line(op->out, rank, op->buf + start, i - start);
            start = i + 1;
        }
    }
    if (start == 0 && op->len == LINE_MAX_BYTES) { /* overlong line: split it */
        emit_line(op->out, rank, op->buf, op->len);
        start = op->len;
    }
    memmove(op->buf, op->buf + start, op->len - start);
    op->len -= start;
}

static void signal_children(int sig)
{
    for (int i = 0; i < nchildren; i++)
        if (children[i].pid > 0) kill(children[i].pid, sig);
}

/* As a child subreaper (PR_SET_CHILD_SUBREAPER) hcclrun inherits what a rank started
 * and left behind when the rank ends. Sends sig to each such process; returns how many. */
static int signal_orphans(int sig)
{
    static char buf[65536];
    char path[64];
    size_t len = 0;
    ssize_t r;
    int n = 0, fd;
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    while (len < sizeof(buf) - 1 && (r = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    for (char *p = buf, *end;; p = end) {
        long pid = strtol(p, &end, 10);
        int is_rank = 0;
        if (end == p) break;
        for (int c = 0; c < nchildren; c++) is_rank |= children[c].pid == (pid_t)pid;
        if (pid > 0 && !is_rank && kill((pid_t)pid, sig) == 0) n++;
    }
    return n;
}

static int live_children(void)
{
    int n = 0;
    for (int i = 0; i < nchildren; i++) n += children[i].pid > 0;
    return n;
}

int main(int argc, char **argv)
{
    long nproc = -1, nnodes = 1, node_rank = 0, port = 0;
    const char *master_addr = "127.0.0.1";
    int port_given = 0, addr_given = 0, i;
    char *prog;
    char secret[32], portstr[16];
    sigset_t sigs, oldmask;
    int sfd;

    /* Orphans of the ranks come to us, not to init (signal_orphans). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') break; /* the program */
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--tag-output") == 0) {
            tag_output = 1;
            continue;
        }
        /* Options with a value: "-n 4", "-n4", "-n=4", "--nnodes 2", "--nnodes=2". */
        if (a[1] != '-') {
            if (a[1] != 'n') return usage_error("unknown option '%s'", a);
            snprintf(name, sizeof(name), "-n");
            if (a[2] != '\0') val = a[2] == '=' ? a + 3 : a + 2;
        } else {
            const char *eq = strchr(a, '=');
            size_t len = eq ? (size_t)(eq - a) : strlen(a);
            if (len >= sizeof(name)) return usage_error("unknown option '%s'", a);
            memcpy(name, a, len);
            name[len] = '\0';
            if (eq) val = eq + 1;
            if (strcmp(name, "--nproc-per-node") == 0 || strcmp(name, "--nproc_per_node") == 0) strcpy(name, "-n");
            if (strcmp(name, "--node_rank") == 0) strcpy(name, "--node-rank");
            if (strcmp(name, "--master_addr") == 0) strcpy(name, "--master-addr");
            if (strcmp(name, "--master_port") == 0) strcpy(name, "--master-port");
            if (strcmp(name, "-n") != 0 && strcmp(name, "--nnodes") != 0 && strcmp(name, "--node-rank") != 0 &&
                strcmp(name, "--master-addr") != 0 && strcmp(name, "--master-port") != 0 &&
                strcmp(name, "--bind-to") != 0)
                return usage_error("unknown option '%s'", a);
        }
        if (val == NULL) {
            if (i + 1 >= argc) return usage_error("option '%s' needs a value", a);
            val = argv[++i];
        }
        if (strcmp(name, "-n") == 0) {
            if (parse_int(val, 1, MAX_LOCAL_RANKS, &nproc)) return usage_error("bad rank count '%s' for -n", val);
        } else if (strcmp(name, "--nnodes") == 0) {
            if (parse_int(val, 1, 65536, &nnodes)) return usage_error("bad node count '%s' for --nnodes", val);
        } else if (strcmp(name, "--node-rank") == 0) {
            if (parse_int(val, 0, 65535, &node_rank)) return usage_error("bad node rank '%s'", val);
        } else if (strcmp(name, "--bind-to") == 0) {
            if (strcmp(val, "core") == 0) bind_core = 1;
            else if (strcmp(val, "none") == 0) bind_core = 0;
            else return usage_error("bad --bind-to '%s' (core or none)", val);
        } else if (strcmp(name, "--master-addr") == 0) {
            if (*val == '\0' || strlen(val) > 255) return usage_error("bad master address '%s'", val);
            master_addr = val;
            addr_given = 1;
        } else {
            if (parse_int(val, 1, 65534, &port)) return usage_error("bad master port '%s' (1..65534)", val);
            port_given = 1;
        }
    }
    if (nproc < 0) return usage_error("%s-n N is required", "");
    if (i >= argc) return usage_error("%sno program given", "");
    if (node_rank >= nnodes) return usage_error("--node-rank must be below --nnodes%s", "");
    if (nnodes * nproc > MAX_WORLD_SIZE) {
        char what[96];
        snprintf(what, sizeof what, "%ld nodes x %ld ranks each = %ld", nnodes, nproc, nnodes * nproc);
        return usage_error("%s ranks: a communicator has at most 65536 (--nnodes x -n)", what);
    }
    if (nnodes > 1 && !port_given) return usage_error("--master-port is required with --nnodes > 1%s", "");
    /* 127.0.0.1 is rank 0's node only: every other node would look for the root on itself. */
    if (nnodes > 1 && !addr_given)
        return usage_error("--master-addr is required with --nnodes > 1 (the address of node 0, where rank 0 "
                           "runs)%s", "");

    /* --bind-to core: the CPUs we may use, in order; one per local rank. */
    int *cpus = NULL;
    if (bind_core) {
        cpu_set_t set;
        int ncpu = 0;
        if (sched_getaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, "hcclrun: sched_getaffinity: %s\n", strerror(errno));
            return 1;
        }
        cpus = calloc(CPU_SETSIZE, sizeof *cpus);
        if (cpus == NULL) {
            fprintf(stderr, "hcclrun: out of memory\n");
            return 1;
        }
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) cpus[ncpu++] = c;
        if (nproc > ncpu) {
            fprintf(stderr, "hcclrun: --bind-to core: %ld ranks but only %d CPUs available; use --bind-to none\n",
                    nproc, ncpu);
            return 2;
        }
    }

    prog = resolve_program(argv[i]);
    if (prog == NULL) {
        if (strchr(argv[i], '/'))
            fprintf(stderr, "hcclrun: program '%s' is not an executable file\n", argv[i]);
        else
            fprintf(stderr, "hcclrun: program '%s' not found in PATH or next to hcclrun\n", argv[i]);
        return 127;
    }
    if (!port_given) {
        port = pick_port_pair();
        if (port == 0) {
            fprintf(stderr, "hcclrun: could not find a free pair of TCP ports\n");
            return 1;
        }
    }
    snprintf(portstr, sizeof(portstr), "%ld", port);

    /* The job secret: the user's, else random (one node) or derived (several nodes). */
    if (getenv("HCCL_JOB_SECRET") && *getenv("HCCL_JOB_SECRET")) {
        secret[0] = '\0'; /* inherited as is */
    } else {
        uint64_t s;
        if (nnodes > 1) {
            s = fnv1a(master_addr, fnv1a("hcclrun-job-secret:", 0xcbf29ce484222325ull));
            s = fnv1a(":", s);
            s = fnv1a(portstr, s);
        } else if (random_u64(&s) != 0) {
            fprintf(stderr, "hcclrun: getrandom failed: %s\n", strerror(errno));
            return 1;
        }
        snprintf(secret, sizeof(secret), "%016llx", (unsigned long long)s);
    }

    children = calloc((size_t)nproc, sizeof(*children));
    if (children == NULL) {
        fprintf(stderr, "hcclrun: out of memory\n");
        return 1;
    }
    for (int l = 0; l < nproc; l++) children[l].pipes[0].fd = children[l].pipes[1].fd = -1;

    /* Signals are handled synchronously through a signalfd. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGQUIT);
    sigaddset(&sigs, SIGUSR1);
    sigaddset(&sigs, SIGUSR2);
    if (sigprocmask(SIG_BLOCK, &sigs, &oldmask) != 0 || (sfd = signalfd(-1, &sigs, SFD_CLOEXEC)) < 0) {
        fprintf(stderr, "hcclrun: signal setup failed: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    /* An inherited SIG_IGN for SIGCHLD (a parent that ignores it; exec keeps that) makes
     * the kernel reap the ranks itself and send no SIGCHLD: we would wait forever. */
    signal(SIGCHLD, SIG_DFL);
    fflush(NULL);

    int first_status = 0, failed = 0, spawn_error = 0;
    pid_t self = getpid();
    for (int l = 0; l < nproc; l++) {
        int rank = (int)(node_rank * nproc + l);
        int pfd[2][2] = {{-1, -1}, {-1, -1}};
        pid_t pid;
        if (tag_output) {
            for (int k = 0; k < 2; k++) {
                if (!spawn_error && pipe2(pfd[k], O_CLOEXEC) != 0) {
                    /* Usually the descriptor limit: hcclrun holds two per rank. */
                    fprintf(stderr, "hcclrun: --tag-output: no pipe for rank %d: %s (2 descriptors per rank%s)\n",
                            rank, strerror(errno), errno == EMFILE ? "; raise 'ulimit -n'" : "");
                    spawn_error = 1;
                }
            }
            if (spawn_error) {
                for (int k = 0; k < 2; k++)
                    for (int e = 0; e < 2; e++)
                        if (pfd[k][e] >= 0) close(pfd[k][e]);
                break;
            }
        }
        pid = fork();
        if (pid < 0) {
            fprintf(stderr, "hcclrun: cannot start rank %d: fork: %s\n", rank, strerror(errno));
            spawn_error = 1;
            if (tag_output)
                for (int k = 0; k < 2; k++) close(pfd[k][0]), close(pfd[k][1]);
            break;
        }
        if (pid == 0) {
            char v[32];
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != self) _exit(137); /* hcclrun already gone */
            signal(SIGPIPE, SIG_DFL);
            sigprocmask(SIG_SETMASK, &oldmask, NULL);
            if (tag_output) {
                dup2(pfd[0][1], 1);
                dup2(pfd[1][1], 2);
            }
            if (rank != 0) { /* only rank 0 reads the terminal */
                int nul = open("/dev/null", O_RDONLY);
                if (nul >= 0) {
                    dup2(nul, 0);
                    if (nul != 0) close(nul);
                }
            }
            snprintf(v, sizeof(v), "%d", rank);
            setenv("RANK", v, 1);
            snprintf(v, sizeof(v), "%ld", nnodes * nproc);
            setenv("WORLD_SIZE", v, 1);
            snprintf(v, sizeof(v), "%d", l);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof(v), "%ld", nproc);
            setenv("LOCAL_WORLD_SIZE", v, 1);
            snprintf(v, sizeof(v), "%ld", node_rank);
            setenv("GROUP_RANK", v, 1);
            setenv("MASTER_ADDR", master_addr, 1);
            setenv("MASTER_PORT", portstr, 1);
            if (secret[0]) setenv("HCCL_JOB_SECRET", secret, 1);
            if (cpus) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpus[l], &one);
                if (sched_setaffinity(0, sizeof one, &one) != 0)
                    fprintf(stderr, "hcclrun: rank %d: cannot bind to CPU %d: %s\n", rank, cpus[l], strerror(errno));
            }
            execv(prog, &argv[i]);
            /* The file was found executable: ENOENT means what it needs to run is missing. */
            int e = errno;
            fprintf(stderr, "hcclrun: rank %d: cannot execute %s: %s%s\n", rank, prog, strerror(e),
                    e == ENOENT ? " (the interpreter on its #! line, or its ELF loader, is missing)" : "");
            _exit(127);
        }
        children[l].pid = pid;
        children[l].rank = rank;
        nchildren = l + 1;
        if (tag_output) {
            for (int k = 0; k < 2; k++) {
                close(pfd[k][1]);
                children[l].pipes[k].fd = pfd[k][0];
                children[l].pipes[k].out = k + 1;
                children[l].pipes[k].buf = malloc(LINE_MAX_BYTES);
                if (children[l].pipes[k].buf == NULL) {
                    close(pfd[k][0]);
                    children[l].pipes[k].fd = -1;
                }
            }
        }
    }
    if (spawn_error) {
        failed = 1;
        first_status = 1;
        signal_children(SIGTERM);
    }

    /* Supervise: reap children, forward signals, pump tagged output. */
    int64_t kill_at = spawn_error ? now_ms() + KILL_GRACE_MS : -1;
    int64_t drain_until = -1;
    int signalled = 0; /* the first SIGINT/SIGTERM/SIGHUP/SIGQUIT that came (0: none) */
    struct pollfd *pfds = calloc((size_t)(1 + 2 * nchildren), sizeof(*pfds));
    int *owner = calloc((size_t)(1 + 2 * nchildren), sizeof(*owner));
    if (pfds == NULL || owner == NULL) {
        fprintf(stderr, "hcclrun: out of memory\n");
        signal_children(SIGKILL);
        return 1;
    }
    for (;;) {
        int np = 0, timeout = -1, open_pipes_left = 0;
        int64_t t = now_ms();
        if (live_children() == 0) {
            if (drain_until < 0) drain_until = t + 200; /* grandchildren may hold the pipes */
        }
        pfds[np].fd = sfd;
        pfds[np].events = POLLIN;
        owner[np++] = -1;
        for (int c = 0; c < nchildren; c++)
            for (int k = 0; k < 2; k++)
                if (children[c].pipes[k].fd >= 0) {
                    pfds[np].fd = children[c].pipes[k].fd;
                    pfds[np].events = POLLIN;
                    owner[np++] = c * 2 + k;
                    open_pipes_left++;
                }
        if (live_children() == 0 && (open_pipes_left == 0 || t >= drain_until)) break;
        if (kill_at >= 0) {
            if (t >= kill_at) {
                if (live_children() > 0)
                    fprintf(stderr, "hcclrun: %d rank(s) still running at the end of the grace period: SIGKILL\n",
                            live_children());
                signal_children(SIGKILL);
                kill_at = -1;
            } else {
                timeout = (int)(kill_at - t);
            }
        }
        if (drain_until >= 0) {
            int d = (int)(drain_until - t);
            if (d < 0) d = 0;
            if (timeout < 0 || d < timeout) timeout = d;
        }
        int r = poll(pfds, (nfds_t)np, timeout);
        if (r < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "hcclrun: poll: %s\n", strerror(errno));
            signal_children(SIGKILL);
            break;
        }
        for (int p = 1; p < np; p++)
            if (pfds[p].revents) {
                int c = owner[p] / 2, k = owner[p] % 2;
                pump(&children[c].pipes[k], children[c].rank);
            }
        if (!(pfds[0].revents & POLLIN)) continue;
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si)) continue;
        if (si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGUSR2) { /* a notice for the ranks: just pass it on */
            signal_children((int)si.ssi_signo);
            continue;
        }
        if (si.ssi_signo != SIGCHLD) {
            if (signalled) { /* the second: no more grace */
                fprintf(stderr, "hcclrun: signal %d (%s) again: killing the ranks\n", (int)si.ssi_signo,
                        strsignal((int)si.ssi_signo));
                signal_children(SIGKILL);
                kill_at = -1;
                continue;
            }
            signalled = (int)si.ssi_signo;
            /* A terminal's signal already reached the whole foreground group. */
            if (si.ssi_code != SI_KERNEL) signal_children((int)si.ssi_signo);
            int64_t grace = now_ms() + SIGNAL_GRACE_MS;
            if (kill_at < 0 || grace < kill_at) kill_at = grace;
            continue;
        }
        for (;;) {
            int st;
            pid_t pid = waitpid(-1, &st, WNOHANG);
            if (pid <= 0) break;
            for (int c = 0; c < nchildren; c++) {
                if (children[c].pid != pid) continue;
                children[c].pid = 0;
                int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
                if (code != 0 && !failed) {
                    failed = 1;
                    first_status = code;
                    if (WIFSIGNALED(st))
                        fprintf(stderr, "hcclrun: rank %d (pid %d) killed by signal %d (%s); stopping the others\n",
                                children[c].rank, (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
                    else
                        fprintf(stderr, "hcclrun: rank %d (pid %d) exited with status %d; stopping the others\n",
                                children[c].rank, (int)pid, code);
                    signal_children(SIGTERM);
                    /* After a signal the ranks keep the rest of its grace. */
                    if (!signalled) kill_at = now_ms() + KILL_GRACE_MS;
                }
            }
        }
    }
    if (live_children() > 0) { /* only after a poll failure */
        for (int c = 0; c < nchildren; c++)
            if (children[c].pid > 0) waitpid(children[c].pid, NULL, 0);
    }
    /* A job that failed or was signalled leaves nothing behind: processes the ranks
     * started (a shell's command, a worker) are ours now that the ranks are gone. Kill
     * and reap them until none is left (one killed may hand us its own children). */
    if (failed || signalled) {
        int killed = 0, k;
        while ((k = signal_orphans(SIGKILL)) > 0) {
            killed += k;
            for (int j = 0; j < k; j++) /* reap them, so the next round lists only new ones */
                if (waitpid(-1, NULL, 0) < 0 && errno != EINTR) break;
        }
        if (killed > 0) fprintf(stderr, "hcclrun: killed %d process(es) the ranks left running\n", killed);
    }
    for (int c = 0; c < nchildren; c++)
        for (int k = 0; k < 2; k++) {
            if (children[c].pipes[k].fd >= 0) {
                if (children[c].pipes[k].len > 0)
                    emit_line(children[c].pipes[k].out, children[c].rank, children[c].pipes[k].buf,
                              children[c].pipes[k].len);
                close(children[c].pipes[k].fd);
            }
            free(children[c].pipes[k].buf);
        }
    free(pfds);
    free(owner);
    free(children);
    free(prog);
    /* Stopped by a signal, even if every rank caught it and exited 0: not a success
     * (as torchrun and mpirun; a batch system must not count an interrupted job done). */
    if (!failed && signalled) {
        fprintf(stderr, "hcclrun: stopped by signal %d (%s); exit status %d\n", signalled, strsignal(signalled),
                128 + signalled);
        return 128 + signalled;
    }
    return first_status;
}
