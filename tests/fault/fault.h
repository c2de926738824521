/*
 * fault.h - shared declarations of the fault-handling tests (hccl_fault).
 *
 * Black box, like tests/conf: only hccl/hccl.h and acl/acl.h, linked against
 * libhccl.so and libascendcl.so. Every scenario runs its ranks as forked processes
 * whose stderr goes to one file per rank, so the test can check what the library
 * printed (WARN lines naming ranks, operations and causes). See fault_main.c.
 */
#ifndef FAULT_H_
#define FAULT_H_

#include <hccl/hccl.h>
#include <acl/acl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FAULT_MAX_RANKS 8
#define FAULT_STEP_LEN 160

/* Per-rank results, written by the rank, read by the parent after the rank exits. */
typedef struct {
    _Atomic int phase;   /* scenario-defined progress marker */
    _Atomic int iter;    /* iterations completed (loops) */
    double t_fail;       /* when the failing call returned (CLOCK_MONOTONIC s) */
    double t_op_start;   /* when the failing operation was issued */
    int fail_rc;         /* aclError / HcclResult of the failing call */
    int async_rc;        /* HcclGetCommAsyncError after the failure */
    double destroy_s;    /* how long HcclCommDestroy took */
    int fds_before, fds_after;
    int pid;             /* the rank's process */
    char step[FAULT_STEP_LEN];
} fault_rank_state;

/* MAP_SHARED anonymous memory, inherited by every rank. */
typedef struct {
    fault_rank_state r[FAULT_MAX_RANKS];
    _Atomic int flag[16];      /* scenario-defined */
    double t_event;            /* parent: when it killed / stopped a rank */
    char dir[512];             /* scenario's scratch directory (stderr files, dumps) */
    HcclRootInfo root;         /* made by the parent when the scenario uses root info */
    char fifo[600];            /* giveup: rank 0's flight recorder dump path (a FIFO) */
} fault_shared;

extern fault_shared *g_sh;

typedef struct fault_ctx {
    int rank, nranks;
    HcclComm comm;
    aclrtStream stream;
    int fails;
    void *arg; /* scenario argument */
} fault_ctx;

/* How a scenario's ranks make their communicator. */
typedef enum { INIT_ROOTINFO = 0, INIT_NONE = 1 } fault_init;

typedef struct fault_job {
    const char *name;
    int nranks;
    fault_init init;
    /* Rank body, run after init (comm valid with INIT_ROOTINFO; NULL with INIT_NONE:
     * the body makes its own and stores it in ctx->comm). The harness destroys
     * ctx->comm afterwards (timed) and checks the fd count against the count taken
     * before init. */
    void (*body)(fault_ctx *ctx);
    /* Optional: runs in the parent while the ranks run (kill/stop/stray logic). */
    void (*parent)(struct fault_job *job, const pid_t *pids);
    void *arg;
    int watchdog_s;    /* per rank */
    int skip_fd_check; /* ranks that keep descriptors on purpose */
    unsigned killed_mask; /* ranks the parent kills with SIGKILL on purpose (bit r) */
    /* Outputs (filled by the harness). */
    int status[FAULT_MAX_RANKS]; /* waitpid status */
    int failed_checks;
} fault_job;

/* ---- harness (fault_main.c) -------------------------------------------------------- */
double fault_now(void);
void fault_step(fault_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a failed check of rank c (NULL: the parent) with a message. */
void fault_fail(fault_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define FCHECK(c, cond, ...)                                                                                           \
    do {                                                                                                               \
        if (!(cond)) fault_fail((c), __VA_ARGS__);                                                                     \
    } while (0)
int fault_count_fds(void);
/* Runs one job: forks job->nranks ranks with stderr captured, runs job->parent, waits,
 * checks /dev/shm. Returns the number of failed checks (ranks' and parent's). */
int fault_run(fault_job *job);
/* Takes back the failed checks of job's run, for a scenario that found their cause
 * outside the library (another test took the port it had picked) and runs again. */
void fault_forgive(const fault_job *job);
/* Text the rank printed to stderr (NUL-terminated, malloc'd; "" when none). */
char *fault_rank_output(int rank);
/* Whether rank's stderr has a line containing every one of the NULL-terminated
 * needles ("rank 2" matches "rank 2" but not "rank 21"). */
int fault_output_has(int rank, ...) __attribute__((sentinel));
/* Same over a text buffer. */
int fault_text_has_line(const char *text, const char *const *needles);
/* Prints a rank's captured stderr to the real stderr, prefixed. */
void fault_print_output(int rank);
/* Waits until flag[i] >= v or timeout; returns whether it got there. */
int fault_wait_flag(int i, int v, double timeout_s);
/* A TCP port free on 127.0.0.1 now, with n free ports from it. */
int fault_free_ports(int n);
/* Listening socket on 0.0.0.0:port (or 127.0.0.1 when loopback); -1 on failure. */
int fault_occupy_port(int port, int loopback);

/* Buffers and collectives used by the scenarios. */
typedef struct {
    void *dev_send, *dev_recv;
    size_t bytes;
} fault_bufs;
int fault_bufs_alloc(fault_ctx *c, fault_bufs *b, size_t send_bytes, size_t recv_bytes);
void fault_bufs_free(fault_bufs *b);
/* AllReduce(sum, fp32) of `count` elements where rank r contributes (r+1)*k; checks
 * the result (sum (r+1)*k); returns 0 on success, else the failing rc (sync or enqueue);
 * on failure fills the rank's t_fail/t_op_start/fail_rc/async_rc. */
int fault_allreduce_check(fault_ctx *c, fault_bufs *b, uint64_t count, float k);
/* Records the failure bookkeeping of a failed call. */
void fault_note_failure(fault_ctx *c, double t_start, int rc);

/* ---- scenarios (fault_scen.c) ------------------------------------------------------- */
int scen_kill(int argc, char **argv);
int scen_skip(int argc, char **argv);
int scen_peer_timeout(int argc, char **argv);
int scen_p2p_timeout(int argc, char **argv);
int scen_stop(int argc, char **argv);
int scen_stop_heard(int argc, char **argv);
int scen_giveup(int argc, char **argv);
int scen_mismatch(int argc, char **argv);
int scen_subcomm(int argc, char **argv);
int scen_stray(int argc, char **argv);
int scen_slow_hello(int argc, char **argv);
int scen_port(int argc, char **argv);
int scen_nofile(int argc, char **argv);
int scen_nothread(int argc, char **argv);
int scen_ranktable(int argc, char **argv);
int scen_nranks(int argc, char **argv);
int scen_reuse(int argc, char **argv);
int scen_rank_fails(int argc, char **argv);
int scen_setup_death(int argc, char **argv);
int scen_mesh_fail(int argc, char **argv);
int scen_algo(int argc, char **argv);
int scen_whitelist(int argc, char **argv);
int scen_frdump(int argc, char **argv);
int scen_late(int argc, char **argv);
int scen_eager_exit(int argc, char **argv);
int scen_leave(int argc, char **argv);
int scen_split_destroy(int argc, char **argv);
/* fault_log.c */
int scen_logfile(int argc, char **argv);

#endif /* FAULT_H_ */
