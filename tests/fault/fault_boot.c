/*
 * fault_boot.c - failures around communicator creation, hostile connections, and the
 * flight recorder on request.
 *
 * subcomm   4 ranks, HCCL_CONNECT_TIMEOUT=3. (a) HcclCreateSubCommConfig over parent
 *           ranks {0,1,3}, which rank 3 never calls: ranks 0 and 1 fail after about 3 s
 *           (not before 2.5 s, not after 8 s) with a WARN line naming the missing
 *           rank (as "rank 3", its parent rank, or as sub-communicator rank 2);
 *           (b) over {1,2,3}, which rank 1 (the first listed, who would serve the
 *           rendezvous) never calls: ranks 2 and 3 fail the same way naming rank 1
 *           (or sub rank 0). Afterwards an AllReduce over the parent (all 4) must
 *           still work: a failed sub-communicator leaves its parent usable.
 *           --case stale: 2 ranks, HCCL_CONNECT_TIMEOUT=1, three times over: rank 1
 *           calls HcclCreateSubCommConfig with one subCommId, rank 0 (who serves the
 *           rendezvous on its parent's listener) with another; both fail. Rank 1's
 *           hello, kept for a later serve, must be dropped once rank 1 gave up: rank
 *           0's descriptors after the third round are as many as after the first
 *           (each failed round kept one until the parent was destroyed).
 *           --case rankids: 3 ranks; ranks 0 and 1 call HcclCreateSubCommConfig over
 *           {0,1,2}, rank 2 over {0,2}, one subCommId. All three fail with HCCL_E_PARA
 *           in under 2 s (not at HCCL_CONNECT_TIMEOUT=3), ranks 0 and 2 say the rankIds
 *           differ, and the parent still works.
 * stray     3 ranks with HcclCommInitFromEnv (MASTER_PORT): before ranks 1 and 2 start,
 *           the test opens connections to the bootstrap root port (MASTER_PORT+1): one
 *           sends 4 KiB of garbage, one sends a header-sized block of 0xff, one sends
 *           one byte and stays, one stays silent, one closes at once. The job must
 *           still initialise (ranks 1, 2 within 8 s) and compute a correct AllReduce;
 *           rank 0 logs at least one WARN line about a dropped connection.
 *           --case flood: 5 silent connections instead; ranks 1, 2 must still
 *           initialise within 3 s (idle connections must not stall the root).
 * slow_hello 3 ranks with HcclCommInitFromEnv; rank 1 reaches the root through a relay
 *           in the test that holds its connection's first bytes for 3 s (a lossy link:
 *           a lost SYN leaves TCP a 3 s retransmission timeout for the first segment).
 *           The root must wait for that opening, not drop the connection: every rank
 *           initialises and a checked AllReduce passes.
 * port      (a) HCCL_IF_BASE_PORT=B with B..B+3 occupied by the test: a 3-rank job still
 *           works and its listeners are in [B+4, B+1024); (b) HcclCommInitFromEnv with
 *           MASTER_PORT+1 occupied (HCCL_CONNECT_TIMEOUT=3): rank 0 fails within 2 s
 *           with a WARN naming the port; ranks 1, 2 fail within 8 s, naming the root
 *           address; nobody hangs, nothing leaks. --case foreign: one rank whose
 *           MASTER_ADDR (203.0.113.7, a documentation address) is not on this host: it
 *           fails by HCCL_CONNECT_TIMEOUT + 3 s, and its WARN says that rank 0 serves the
 *           root itself and that MASTER_ADDR does not lead back to it.
 * ranktable HcclCommInitClusterInfo with broken rank tables: each returns HCCL_E_PARA
 *           within 1 s, and the WARN line names the offending field (or, for a table
 *           without device_port and HCCL_IF_BASE_PORT=65535, rank 1's port; for two
 *           ranks with one address and port, both ranks).
 * whitelist HCCL_WHITELIST_DISABLE=0 with a file that lists 198.18.0.1 and an invalid
 *           entry (loopback is always admitted): a 3-rank job works; the invalid entry
 *           is reported.
 * nranks    3 ranks, rank 1 says nRanks = 4: every rank fails at once with HCCL_E_PARA
 *           and the root's reason.
 * nothread  A process that cannot start a thread: HcclGetRootInfo fails and says why.
 *           --case initall: HcclCommInitAll(4) whose third thread cannot start (this
 *           program interposes pthread_create): HCCL_E_SYSCALL within 3 s, not at
 *           HCCL_CONNECT_TIMEOUT=20, naming rank 2; no thread or descriptor left behind.
 * setup_death 4 ranks; rank 2 is killed inside HcclCommInitRootInfo once the ranks are
 *           connected (at the setup's first sched_getaffinity, which this program
 *           interposes): ranks 0, 1 and 3 fail within a few seconds, each with a WARN
 *           line naming rank 2 (its neighbours directly, the others through the
 *           reason the aborting peers pass on). Rank 2 runs on another simulated host
 *           (HCCL_HOST_ID): the line names it as "rank 2 (host fault-b IP)".
 *           --case shm: 2 ranks; rank 1, as it opens (through /proc/<pid>/fd) the shared
 *           memory rank 0 made for their pair and offered in its hello, kills rank 0
 *           (this program interposes open): rank 1 fails, and nothing is left in
 *           /dev/shm. --case shm_byname: the same with HCCL_SHM_BY_NAME=1, as rank 1
 *           opens the segment by its name (this program interposes shm_open): neither
 *           the segment nor its FIFOs are left. --case slots: the same as rank 1 opens
 *           the slot segment rank 0 made for the communicator.
 * mesh_fail 4 ranks; rank 2's first mesh connection gets no descriptor (EMFILE, this
 *           program interposes socket): ranks 0, 1 and 3, in other processes, fail
 *           within 5 s (HCCL_CONNECT_TIMEOUT=60), each with a WARN line naming rank 2
 *           and its reason. --case kill: rank 1 dies there instead: ranks 0, 2 and 3
 *           fail within 5 s naming rank 1 (rank 0 told by the others).
 * algo      4 ranks, rank 3 alone sets HCCL_REFERENCE_ALGOS=1 (before its init), so it
 *           chooses other algorithms: an AllReduce (2 and 300000 elements) fails on
 *           every rank within 5 s, each naming a configuration mismatch.
 * frdump    HcclCommDumpFlightRecorder on request, to a path and to
 *           HCCL_FLIGHT_RECORDER_DIR (path NULL), after three operations; the files hold
 *           this rank, three "done" operations; an unwritable path, an empty one and
 *           a NULL communicator fail cleanly.
 */
#include "fault.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_S 3

/* ---- sub-communicator that not every listed rank joins -------------------------------- */

typedef struct {
    const char *name;
    uint32_t ids[3];
    int absent;              /* parent rank that never calls HcclCreateSubCommConfig */
    const char *names_world; /* how a WARN line may name it: "rank 3" ... */
    const char *names_sub;   /* ... or by its sub-communicator rank */
} sub_case;

static const sub_case sub_cases[] = {
    {"subcomm_member_missing", {0, 1, 3}, 3, "rank 3", "2"},
    {"subcomm_first_missing", {1, 2, 3}, 1, "rank 1", "0"},
};

static void sub_body(fault_ctx *c)
{
    const sub_case *sc = c->arg;
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    int idx = -1;
    for (int i = 0; i < 3; i++)
        if ((int)sc->ids[i] == c->rank) idx = i;
    if (idx >= 0 && c->rank != sc->absent) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        HcclComm sub = NULL;
        uint32_t ids[3] = {sc->ids[0], sc->ids[1], sc->ids[2]};
        fault_step(c, "HcclCreateSubCommConfig({%u,%u,%u}) without rank %d", ids[0], ids[1], ids[2], sc->absent);
        double t0 = fault_now();
        HcclResult rc = HcclCreateSubCommConfig(&c->comm, 3, ids, 7, (uint32_t)idx, &cfg, &sub);
        double dt = fault_now() - t0;
        if (rc == HCCL_SUCCESS) {
            fault_fail(c, "HcclCreateSubCommConfig succeeded although rank %d never joined", sc->absent);
            HcclCommDestroy(sub);
        } else {
            FCHECK(c, dt >= CONNECT_TIMEOUT_S - 0.5, "HcclCreateSubCommConfig failed after %.2f s, before "
                   "HCCL_CONNECT_TIMEOUT=%d s (rc %d)", dt, CONNECT_TIMEOUT_S, (int)rc);
            FCHECK(c, dt <= CONNECT_TIMEOUT_S + 5.0, "HcclCreateSubCommConfig failed after %.2f s, long after "
                   "HCCL_CONNECT_TIMEOUT=%d s", dt, CONNECT_TIMEOUT_S);
            fprintf(stderr, "FAULT-TEST INFO: HcclCreateSubCommConfig failed after %.3f s with %d (%s)\n", dt,
                    (int)rc, HcclGetErrorString(rc));
        }
        atomic_fetch_add(&g_sh->flag[1], 1);
    } else if (c->rank == sc->absent) {
        fault_step(c, "not joining the sub-communicator; waiting for the others to give up");
        if (!fault_wait_flag(1, 2, 20)) fault_fail(c, "the joining ranks did not give up within 20 s");
    }
    fault_step(c, "AllReduce on the parent after the failed sub-communicator");
    int rc = fault_allreduce_check(c, &b, 1024, 3.0f);
    FCHECK(c, rc == 0, "an AllReduce on the parent failed (rc %d) after a failed sub-communicator creation", rc);
    fault_bufs_free(&b);
}

#define STALE_ROUNDS 3

static void stale_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    int fds_first = -1;
    for (int i = 0; i < STALE_ROUNDS; i++) {
        HcclCommConfig cfg;
        HcclCommConfigInit(&cfg);
        HcclComm sub = NULL;
        uint32_t ids[2] = {0, 1};
        uint64_t id = c->rank == 0 ? 200 + i : 100 + i; /* the ranks disagree about the id */
        fault_step(c, "round %d: HcclCreateSubCommConfig({0,1}, subCommId %llu)", i, (unsigned long long)id);
        HcclResult rc = HcclCreateSubCommConfig(&c->comm, 2, ids, id, (uint32_t)c->rank, &cfg, &sub);
        if (rc == HCCL_SUCCESS) {
            fault_fail(c, "HcclCreateSubCommConfig succeeded although the ranks passed different subCommIds");
            HcclCommDestroy(sub);
        }
        atomic_fetch_add(&g_sh->flag[2], 1); /* both gave up: rank 1's connection is closed */
        if (!fault_wait_flag(2, 2 * (i + 1), 20)) fault_fail(c, "round %d: the peer did not give up within 20 s", i);
        if (c->rank != 0) continue;
        int fds = fault_count_fds();
        if (i == 0) fds_first = fds;
        else
            FCHECK(c, fds <= fds_first, "round %d: rank 0 holds %d descriptors, %d after round 0: the hellos of "
                   "sub-communicators that were never served are kept", i, fds, fds_first);
    }
    fault_step(c, "AllReduce on the parent after the failed sub-communicators");
    int rc = fault_allreduce_check(c, &b, 1024, 3.0f);
    FCHECK(c, rc == 0, "an AllReduce on the parent failed (rc %d) after failed sub-communicator creations", rc);
    fault_bufs_free(&b);
}

/* Ranks 0 and 1 list {0,1,2}; rank 2 lists {0,2} for the same subCommId. Ranks 1 and 2
 * call first; rank 0, who serves the rendezvous, calls once both have (their hellos are
 * queued at its listener, whichever it reads first). */
static void rankids_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    uint32_t all[3] = {0, 1, 2}, two[2] = {0, 2};
    uint32_t *ids = c->rank == 2 ? two : all, n = c->rank == 2 ? 2 : 3, idx = c->rank == 2 ? 1 : (uint32_t)c->rank;
    if (c->rank == 0) {
        if (!fault_wait_flag(3, 2, 20)) fault_fail(c, "ranks 1 and 2 did not start within 20 s");
        usleep(300000);
    } else {
        atomic_fetch_add(&g_sh->flag[3], 1);
    }
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    HcclComm sub = NULL;
    fault_step(c, "HcclCreateSubCommConfig(%u ranks, subCommId 11) while another rank lists other rankIds", n);
    double t0 = fault_now();
    HcclResult rc = HcclCreateSubCommConfig(&c->comm, n, ids, 11, idx, &cfg, &sub);
    double dt = fault_now() - t0;
    if (rc == HCCL_SUCCESS) {
        fault_fail(c, "HcclCreateSubCommConfig succeeded although the ranks passed different rankIds");
        HcclCommDestroy(sub);
    } else {
        FCHECK(c, rc == HCCL_E_PARA, "HcclCreateSubCommConfig returned %d (%s), not HCCL_E_PARA", (int)rc,
               HcclGetErrorString(rc));
        FCHECK(c, dt < CONNECT_TIMEOUT_S - 1.0, "HcclCreateSubCommConfig failed after %.2f s: the ranks waited for "
               "HCCL_CONNECT_TIMEOUT=%d s instead of failing at the mismatch", dt, CONNECT_TIMEOUT_S);
    }
    atomic_fetch_add(&g_sh->flag[1], 1);
    if (!fault_wait_flag(1, 3, 20)) fault_fail(c, "the other ranks did not give up within 20 s");
    fault_step(c, "AllReduce on the parent after the failed sub-communicator");
    int r = fault_allreduce_check(c, &b, 1024, 3.0f);
    FCHECK(c, r == 0, "an AllReduce on the parent failed (rc %d) after a failed sub-communicator creation", r);
    fault_bufs_free(&b);
}

static const char *case_arg(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--case")) return argv[i + 1];
    return NULL;
}

int scen_subcomm(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    char t[16];
    snprintf(t, sizeof t, "%d", CONNECT_TIMEOUT_S);
    setenv("HCCL_CONNECT_TIMEOUT", t, 1);
    setenv("HCCL_EXEC_TIMEOUT", "30", 1);
    if (only && !strcmp(only, "rankids")) {
        fault_job job = {.name = "subcomm_rankids", .nranks = 3, .init = INIT_ROOTINFO, .body = rankids_body,
                         .watchdog_s = 40};
        fault_run(&job);
        for (int r = 0; r < 3; r += 2)
            FCHECK(NULL, fault_output_has(r, "WARN", "with other rankIds than the 3-rank list", NULL),
                   "subcomm_rankids: rank %d printed no WARN line saying the rankIds differ", r);
        return 0;
    }
    if (only && !strcmp(only, "stale")) {
        setenv("HCCL_CONNECT_TIMEOUT", "1", 1);
        fault_job job = {.name = "subcomm_stale", .nranks = 2, .init = INIT_ROOTINFO, .body = stale_body,
                         .watchdog_s = 40};
        fault_run(&job);
        return 0;
    }
    for (size_t k = 0; k < sizeof sub_cases / sizeof sub_cases[0]; k++) {
        const sub_case *sc = &sub_cases[k];
        if (only && strcmp(only, sc->name + strlen("subcomm_")) != 0) continue;
        fault_job job = {.name = sc->name, .nranks = 4, .init = INIT_ROOTINFO, .body = sub_body, .arg = (void *)sc,
                         .watchdog_s = 40};
        fault_run(&job);
        for (int i = 0; i < 3; i++) {
            int r = (int)sc->ids[i];
            if (r == sc->absent) continue;
            char sub_name[64];
            snprintf(sub_name, sizeof sub_name, "never arrived: %s", sc->names_sub);
            int named = fault_output_has(r, "WARN", sc->names_world, NULL) ||
                        fault_output_has(r, "WARN", sub_name, NULL);
            FCHECK(NULL, named, "%s: rank %d printed no WARN line naming the rank that never joined (%s, sub rank %s)",
                   sc->name, r, sc->names_world, sc->names_sub);
        }
    }
    return 0;
}

/* ---- stray connections to the bootstrap root port -------------------------------------------- */

#define ENV_N 3
#define STRAY_FLOOD 5

typedef struct {
    int port; /* MASTER_PORT */
    int expect_fail;
    int flood; /* stray: this many silent connections instead of the mix */
} env_arg;

static int connect_port(int port, double timeout_s)
{
    double end = fault_now() + timeout_s;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (fault_now() < end) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) return -1;
        if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) return s;
        close(s);
        usleep(2000);
    }
    return -1;
}

static void env_set_rank(int rank)
{
    char v[16];
    snprintf(v, sizeof v, "%d", rank);
    setenv("RANK", v, 1);
    setenv("LOCAL_RANK", v, 1);
}

static void env_common(int port)
{
    char v[16];
    snprintf(v, sizeof v, "%d", ENV_N);
    setenv("WORLD_SIZE", v, 1);
    setenv("LOCAL_WORLD_SIZE", v, 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    snprintf(v, sizeof v, "%d", port);
    setenv("MASTER_PORT", v, 1);
    setenv("HCCL_JOB_SECRET", "0x5eed1234abcd9876", 1);
}

static void stray_body(fault_ctx *c)
{
    env_set_rank(c->rank);
    if (c->rank != 0) {
        fault_step(c, "waiting for the stray connections");
        if (!fault_wait_flag(0, 1, 15)) fault_fail(c, "the stray connections were not made within 15 s");
    }
    fault_step(c, "HcclCommInitFromEnv with stray connections on the root port");
    double t0 = fault_now();
    HcclResult rc = HcclCommInitFromEnv(NULL, &c->comm);
    double dt = fault_now() - t0;
    if (rc != HCCL_SUCCESS) {
        fault_fail(c, "HcclCommInitFromEnv returned %d (%s) with stray connections on the root port", (int)rc,
                   HcclGetErrorString(rc));
        c->comm = NULL;
        return;
    }
    fprintf(stderr, "FAULT-TEST INFO: HcclCommInitFromEnv took %.3f s\n", dt);
    const env_arg *ea = c->arg;
    double limit = ea->flood ? 3.0 : 8.0;
    if (c->rank != 0)
        FCHECK(c, dt < limit, "HcclCommInitFromEnv took %.2f s (limit %.0f s): stray connections stalled the root", dt,
               limit);
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    FCHECK(c, fault_allreduce_check(c, &b, 1024, 5.0f) == 0, "AllReduce failed after an init with stray connections");
    fault_bufs_free(&b);
}

static int g_strays[16];
static int g_nstrays;

static void stray_parent(fault_job *job, const pid_t *pids)
{
    (void)pids;
    const env_arg *ea = job->arg;
    unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 131u + 17u);
    g_nstrays = 0;
    if (ea->flood) {
        for (int i = 0; i < ea->flood && g_nstrays < (int)(sizeof g_strays / sizeof g_strays[0]); i++) {
            int s = connect_port(ea->port + 1, 10);
            if (s < 0) {
                fault_fail(NULL, "cannot connect to the bootstrap root port %d", ea->port + 1);
                break;
            }
            g_strays[g_nstrays++] = s;
        }
        atomic_store(&g_sh->flag[0], 1);
        return;
    }
    int s = connect_port(ea->port + 1, 10);
    if (s < 0) {
        fault_fail(NULL, "cannot connect to the bootstrap root port %d", ea->port + 1);
        atomic_store(&g_sh->flag[0], 1);
        return;
    }
    /* 1: garbage */
    if (send(s, junk, sizeof junk, MSG_NOSIGNAL) < 0) fault_fail(NULL, "send of garbage failed: %s", strerror(errno));
    g_strays[g_nstrays++] = s;
    /* 2: a header-sized block of 0xff (absurd lengths and ids) */
    s = connect_port(ea->port + 1, 2);
    if (s >= 0) {
        unsigned char ff[256];
        memset(ff, 0xff, sizeof ff);
        if (send(s, ff, sizeof ff, MSG_NOSIGNAL) < 0) fault_fail(NULL, "send of 0xff failed");
        g_strays[g_nstrays++] = s;
    }
    /* 3: one byte, then silence */
    s = connect_port(ea->port + 1, 2);
    if (s >= 0) {
        if (send(s, "H", 1, MSG_NOSIGNAL) < 0) fault_fail(NULL, "send of one byte failed");
        g_strays[g_nstrays++] = s;
    }
    /* 4: silent */
    s = connect_port(ea->port + 1, 2);
    if (s >= 0) g_strays[g_nstrays++] = s;
    /* 5: connect and close */
    s = connect_port(ea->port + 1, 2);
    if (s >= 0) close(s);
    atomic_store(&g_sh->flag[0], 1);
}

int scen_stray(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    env_arg ea = {.flood = only && !strcmp(only, "flood") ? STRAY_FLOOD : 0};
    fault_job job;
    /* The root port is free when picked, but tests running beside this one pick from
     * the same range (HCCL_IF_BASE_PORT jobs scan 1024 ports): when rank 0 finds it
     * taken, that run says nothing about the library, and the scenario runs again on
     * other ports (at most 3 times). */
    for (int attempt = 0; attempt < 3; attempt++) {
        ea.port = fault_free_ports(2);
        if (ea.port < 0) {
            fault_fail(NULL, "no free ports");
            return 0;
        }
        env_common(ea.port);
        setenv("HCCL_CONNECT_TIMEOUT", "15", 1);
        job = (fault_job){.name = ea.flood ? "stray_flood" : "stray", .nranks = ENV_N, .init = INIT_NONE,
                          .body = stray_body, .parent = stray_parent, .arg = &ea, .watchdog_s = 40};
        fault_run(&job);
        for (int i = 0; i < g_nstrays; i++) close(g_strays[i]);
        if (!job.failed_checks || !fault_output_has(0, "cannot listen", "already in use", NULL)) break;
        fault_forgive(&job);
    }
    if (ea.flood) return 0; /* silent connections need not be logged */
    FCHECK(NULL, fault_output_has(0, "WARN", "dropped", NULL),
           "rank 0 (the bootstrap root) logged no WARN line about a dropped stray connection");
    return 0;
}

/* ---- a rank whose opening reaches the root late (a lossy link) ---------------------------------- */

#define SLOW_HELLO_MS 3000
static int g_relay_lfd = -1;

static void slow_hello_body(fault_ctx *c)
{
    const env_arg *ea = c->arg;
    env_set_rank(c->rank);
    if (c->rank == 1) { /* through the relay */
        char v[16];
        snprintf(v, sizeof v, "%d", ea->port + 2);
        setenv("HCCL_ROOT_ADDR", "127.0.0.1", 1);
        setenv("HCCL_ROOT_PORT", v, 1);
    }
    fault_step(c, "HcclCommInitFromEnv%s", c->rank == 1 ? " through a relay that holds the opening" : "");
    HcclResult rc = HcclCommInitFromEnv(NULL, &c->comm);
    if (rc != HCCL_SUCCESS) {
        fault_fail(c, "HcclCommInitFromEnv returned %d (%s): a rank whose opening took %d ms was refused", (int)rc,
                   HcclGetErrorString(rc), SLOW_HELLO_MS);
        c->comm = NULL;
        return;
    }
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    FCHECK(c, fault_allreduce_check(c, &b, 1024, 3.0f) == 0, "AllReduce failed after the slow opening");
    fault_bufs_free(&b);
}

/* Accepts rank 1's connection to the root, connects to the root, waits SLOW_HELLO_MS,
 * then relays both ways until either side closes. */
static void slow_hello_parent(fault_job *job, const pid_t *pids)
{
    (void)pids;
    const env_arg *ea = job->arg;
    struct pollfd pf[2] = {{g_relay_lfd, POLLIN, 0}, {-1, POLLIN, 0}};
    if (poll(pf, 1, 15000) != 1) {
        fault_fail(NULL, "rank 1 did not connect to the relay within 15 s");
        return;
    }
    int a = accept(g_relay_lfd, NULL, NULL);
    int b = connect_port(ea->port + 1, 15);
    if (a < 0 || b < 0) {
        fault_fail(NULL, "relay: accept or connect to the root failed");
        if (a >= 0) close(a);
        if (b >= 0) close(b);
        return;
    }
    usleep(SLOW_HELLO_MS * 1000);
    pf[0] = (struct pollfd){a, POLLIN, 0};
    pf[1] = (struct pollfd){b, POLLIN, 0};
    double end = fault_now() + 30;
    for (int open = 1; open && fault_now() < end;) {
        if (poll(pf, 2, 100) <= 0) continue;
        for (int i = 0; i < 2 && open; i++) {
            if (!pf[i].revents) continue;
            char buf[65536];
            ssize_t got = recv(pf[i].fd, buf, sizeof buf, 0);
            if (got <= 0 || send(pf[1 - i].fd, buf, (size_t)got, MSG_NOSIGNAL) != got) open = 0;
        }
    }
    close(a);
    close(b);
}

int scen_slow_hello(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    env_arg ea = {0};
    fault_job job;
    for (int attempt = 0; attempt < 3; attempt++) { /* as in scen_stray: ports taken by another test */
        ea.port = fault_free_ports(3);
        g_relay_lfd = ea.port < 0 ? -1 : fault_occupy_port(ea.port + 2, 1);
        if (g_relay_lfd < 0) {
            fault_fail(NULL, "no free ports");
            return 0;
        }
        env_common(ea.port);
        setenv("HCCL_CONNECT_TIMEOUT", "15", 1);
        job = (fault_job){.name = "slow_hello", .nranks = ENV_N, .init = INIT_NONE, .body = slow_hello_body,
                          .parent = slow_hello_parent, .arg = &ea, .watchdog_s = 40};
        fault_run(&job);
        close(g_relay_lfd);
        if (!job.failed_checks || !fault_output_has(0, "cannot listen", "already in use", NULL)) break;
        fault_forgive(&job);
    }
    FCHECK(NULL, !fault_output_has(0, "WARN", "dropped", NULL),
           "the root dropped rank 1's connection, whose opening came after %d ms", SLOW_HELLO_MS);
    return 0;
}

/* ---- ports in use -------------------------------------------------------------------------------- */

#define PORT_BLOCKED 4

/* LISTEN sockets in [lo, hi) from /proc/net/tcp and tcp6. */
static int count_listeners(int lo, int hi)
{
    static const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    int n = 0;
    for (int f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        if (!fp) continue;
        char line[512];
        if (!fgets(line, sizeof line, fp)) {
            fclose(fp);
            continue;
        }
        while (fgets(line, sizeof line, fp)) {
            char local[128];
            unsigned st;
            if (sscanf(line, "%*d: %127s %*s %x", local, &st) != 2) continue;
            char *colon = strrchr(local, ':');
            if (!colon) continue;
            int port = (int)strtol(colon + 1, NULL, 16);
            if (st == 0x0A && port >= lo && port < hi) n++;
        }
        fclose(fp);
    }
    return n;
}

typedef struct {
    int base;
} base_arg;

static void base_body(fault_ctx *c)
{
    const base_arg *ba = c->arg;
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    fault_step(c, "AllReduce with HCCL_IF_BASE_PORT partly occupied");
    FCHECK(c, fault_allreduce_check(c, &b, 1024, 1.0f) == 0, "AllReduce failed with HCCL_IF_BASE_PORT partly occupied");
    if (c->rank == 0) {
        int n = count_listeners(ba->base + PORT_BLOCKED, ba->base + 1024);
        FCHECK(c, n >= c->nranks, "%d listening sockets in [%d, %d) while the job runs; expected at least %d (one per "
               "rank): HCCL_IF_BASE_PORT not honoured?", n, ba->base + PORT_BLOCKED, ba->base + 1024, c->nranks);
    }
    /* Everyone checks before anyone destroys. */
    FCHECK(c, fault_allreduce_check(c, &b, 16, 2.0f) == 0, "second AllReduce failed");
    fault_bufs_free(&b);
}

static void master_body(fault_ctx *c)
{
    const env_arg *ea = c->arg;
    env_set_rank(c->rank);
    fault_step(c, "HcclCommInitFromEnv with MASTER_PORT+1 occupied");
    double t0 = fault_now();
    HcclResult rc = HcclCommInitFromEnv(NULL, &c->comm);
    double dt = fault_now() - t0;
    if (rc == HCCL_SUCCESS) {
        fault_fail(c, "HcclCommInitFromEnv succeeded although the root port %d is taken by another program",
                   ea->port + 1);
        return; /* the harness destroys it */
    }
    c->comm = NULL;
    fprintf(stderr, "FAULT-TEST INFO: HcclCommInitFromEnv failed after %.3f s with %d (%s)\n", dt, (int)rc,
            HcclGetErrorString(rc));
    if (c->rank == 0) FCHECK(c, dt < 2.0, "rank 0 took %.2f s to report that it cannot host the root", dt);
    else FCHECK(c, dt < CONNECT_TIMEOUT_S + 5.0, "rank %d took %.2f s to fail (HCCL_CONNECT_TIMEOUT=%d)", c->rank,
                dt, CONNECT_TIMEOUT_S);
}

static void port_base(void);
static void port_master(void);
static void port_foreign(void);

int scen_port(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    /* One value for both jobs: variables are read once per process, and forked ranks
     * inherit what the parent read. */
    char v[16];
    snprintf(v, sizeof v, "%d", CONNECT_TIMEOUT_S);
    setenv("HCCL_CONNECT_TIMEOUT", v, 1);
    if (!only || !strcmp(only, "base")) port_base();
    if (!only || !strcmp(only, "master")) port_master();
    if (only && !strcmp(only, "foreign")) port_foreign();
    return 0;
}

static void foreign_body(fault_ctx *c)
{
    fault_step(c, "HcclCommInitFromEnv with MASTER_ADDR not on this host");
    double t0 = fault_now();
    HcclResult rc = HcclCommInitFromEnv(NULL, &c->comm);
    double dt = fault_now() - t0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
    if (rc == HCCL_SUCCESS) {
        fault_fail(c, "HcclCommInitFromEnv succeeded with MASTER_ADDR=203.0.113.7");
        return; /* the harness destroys it */
    }
    c->comm = NULL;
    FCHECK(c, dt < CONNECT_TIMEOUT_S + 3.0, "rank 0 took %.2f s to fail (HCCL_CONNECT_TIMEOUT=%d)", dt,
           CONNECT_TIMEOUT_S);
    FCHECK(c, strstr(msg, "rank 0 (this process) serves the root") && strstr(msg, "MASTER_ADDR=203.0.113.7"),
           "rank 0's failure does not say that it serves the root and MASTER_ADDR does not lead to it: \"%s\"", msg);
}

static void port_foreign(void)
{
    /* (c) MASTER_ADDR names no address of this host, on the node of rank 0. */
    int port = fault_free_ports(2);
    if (port < 0) {
        fault_fail(NULL, "no free port pair");
        return;
    }
    char v[16];
    snprintf(v, sizeof v, "%d", port);
    setenv("MASTER_PORT", v, 1);
    setenv("MASTER_ADDR", "203.0.113.7", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "1", 1);
    setenv("HCCL_JOB_SECRET", "0x5eed1234abcd9876", 1);
    env_set_rank(0);
    /* skip_fd_check: the root thread rank 0 started keeps its listener until its own
     * deadline (no rank ever arrived), a known limit. */
    fault_job job = {.name = "port_foreign", .nranks = 1, .init = INIT_NONE, .body = foreign_body,
                     .watchdog_s = 30, .skip_fd_check = 1};
    fault_run(&job);
    FCHECK(NULL, fault_output_has(0, "WARN", "MASTER_ADDR=203.0.113.7 is not an address of this host", NULL),
           "rank 0 printed no early WARN line saying MASTER_ADDR is not an address of this host");
}

static void port_base(void)
{
    /* (a) HCCL_IF_BASE_PORT with its first ports taken. */
    base_arg ba = {.base = fault_free_ports(PORT_BLOCKED + 8)};
    if (ba.base < 0) {
        fault_fail(NULL, "no free port range");
        return;
    }
    int held[PORT_BLOCKED];
    for (int i = 0; i < PORT_BLOCKED; i++) {
        held[i] = fault_occupy_port(ba.base + i, 0);
        if (held[i] < 0) fault_fail(NULL, "cannot occupy port %d", ba.base + i);
    }
    char v[16];
    snprintf(v, sizeof v, "%d", ba.base);
    setenv("HCCL_IF_BASE_PORT", v, 1);
    fault_job job = {.name = "port_base", .nranks = 3, .init = INIT_ROOTINFO, .body = base_body, .arg = &ba,
                     .watchdog_s = 30};
    fault_run(&job);
    for (int i = 0; i < PORT_BLOCKED; i++)
        if (held[i] >= 0) close(held[i]);
    unsetenv("HCCL_IF_BASE_PORT");
}

static void port_master(void)
{
    /* (b) MASTER_PORT + 1 taken by another program. */
    env_arg ea = {.port = fault_free_ports(2), .expect_fail = 1};
    int blocker = ea.port > 0 ? fault_occupy_port(ea.port + 1, 1) : -1;
    if (blocker < 0) {
        fault_fail(NULL, "cannot occupy a port for the root");
        return;
    }
    env_common(ea.port);
    fault_job job2 = {.name = "port_master", .nranks = ENV_N, .init = INIT_NONE, .body = master_body, .arg = &ea,
                      .watchdog_s = 30};
    fault_run(&job2);
    close(blocker);
    char port[16];
    snprintf(port, sizeof port, "%d", ea.port + 1);
    FCHECK(NULL, fault_output_has(0, "WARN", port, NULL),
           "rank 0 printed no WARN line naming the occupied root port %s", port);
    for (int r = 1; r < ENV_N; r++)
        FCHECK(NULL, fault_output_has(r, "WARN", port, NULL),
               "rank %d printed no WARN line naming the root address (port %s) it could not bootstrap with", r, port);
}

/* ---- rank tables with errors ------------------------------------------------------------------ */

typedef struct {
    const char *what;
    const char *text;    /* NULL: a file that does not exist */
    const char *needle;  /* the WARN line must contain it */
    const char *needle2; /* and this (or NULL) */
    uint32_t rank;
    HcclResult want;
    const char *base_port; /* HCCL_IF_BASE_PORT for this case, or NULL */
} rt_case;

#define DEV(id, port, rank) "{\"device_id\":\"" id "\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"" port "\",\"rank_id\":\"" rank "\"}"
#define SERVER(devs) "{\"server_id\":\"node_0\",\"host_ip\":\"127.0.0.1\",\"device\":[" devs "]}"
#define TABLE(ver, count, servers) "{\"status\":\"completed\",\"version\":\"" ver "\",\"server_count\":\"" count "\",\"server_list\":[" servers "]}"

static const rt_case rt_cases[] = {
    {"truncated JSON", "{\"status\":\"completed\",\"version\":\"1.0\",\"server_list\":[", "not valid JSON", NULL, 0,
     HCCL_E_PARA, NULL},
    {"JSON syntax error", "{\"status\":\"completed\",,}", "not valid JSON", "line 1", 0, HCCL_E_PARA, NULL},
    {"top level not an object", "[1,2,3]", "top level", NULL, 0, HCCL_E_PARA, NULL},
    {"status not completed", "{\"status\":\"initializing\",\"version\":\"1.0\",\"server_count\":\"1\",\"server_list\":["
     SERVER(DEV("0", "30001", "0")) "]}", "status", NULL, 0, HCCL_E_PARA, NULL},
    {"unsupported version", TABLE("9.9", "1", SERVER(DEV("0", "30001", "0"))), "version", "9.9", 0, HCCL_E_PARA, NULL},
    {"server_list missing", "{\"status\":\"completed\",\"version\":\"1.0\",\"server_count\":\"1\"}", "server_list",
     "missing", 0, HCCL_E_PARA, NULL},
    {"server_count disagrees", TABLE("1.0", "3", SERVER(DEV("0", "30001", "0"))), "server_count", NULL, 0,
     HCCL_E_PARA, NULL},
    {"device_port not a number", TABLE("1.0", "1", SERVER(DEV("0", "http", "0") "," DEV("1", "30002", "1"))),
     "server_list[0].device[0].device_port", NULL, 0, HCCL_E_PARA, NULL},
    {"device_port out of range", TABLE("1.0", "1", SERVER(DEV("0", "30001", "0") "," DEV("1", "70000", "1"))),
     "server_list[0].device[1].device_port", NULL, 0, HCCL_E_PARA, NULL},
    {"device_ip not an address", TABLE("1.0", "1", SERVER("{\"device_id\":\"0\",\"device_ip\":\"300.1.2.3\",\"device_port\":\"30001\",\"rank_id\":\"0\"}")),
     "server_list[0].device[0].device_ip", NULL, 0, HCCL_E_PARA, NULL},
    {"duplicate rank_id", TABLE("1.0", "1", SERVER(DEV("0", "30001", "0") "," DEV("1", "30002", "0"))), "rank_id",
     "duplicate", 0, HCCL_E_PARA, NULL},
    {"duplicate device_id", TABLE("1.0", "1", SERVER(DEV("3", "30001", "0") "," DEV("3", "30002", "1"))),
     "server_list[0].device[1].device_id", "duplicate", 0, HCCL_E_PARA, NULL},
    {"rank_id out of range", TABLE("1.0", "1", SERVER(DEV("0", "30001", "0") "," DEV("1", "30002", "5"))),
     "server_list[0].device[1].rank_id", NULL, 0, HCCL_E_PARA, NULL},
    {"rank_id not a string", TABLE("1.0", "1", SERVER("{\"device_id\":\"0\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"30001\",\"rank_id\":0}")),
     "rank_id", "expected a string", 0, HCCL_E_PARA, NULL},
    {"empty device list", TABLE("1.0", "1", "{\"server_id\":\"node_0\",\"host_ip\":\"127.0.0.1\",\"device\":[]}"),
     "server_list[0].device", "empty", 0, HCCL_E_PARA, NULL},
    {"host_ip not an address", TABLE("1.0", "1", "{\"server_id\":\"node_0\",\"host_ip\":\"localhost:1\",\"device\":[{\"device_id\":\"0\",\"rank_id\":\"0\"}]}"),
     "server_list[0].host_ip", NULL, 0, HCCL_E_PARA, NULL},
    {"v1.2 without super_pod_list", TABLE("1.2", "1", SERVER(DEV("0", "30001", "0"))), "super_pod_list", NULL, 0,
     HCCL_E_PARA, NULL},
    {"rank beyond the table", TABLE("1.0", "1", SERVER(DEV("0", "30001", "0") "," DEV("1", "30002", "1"))),
     "out of range", "2 ranks", 5, HCCL_E_PARA, NULL},
    {"file missing", NULL, "no_such_ranktable.json", NULL, 0, HCCL_E_OPEN_FILE_FAILURE, NULL},
    {"port past 65535", TABLE("1.0", "1", SERVER("{\"device_id\":\"0\",\"device_ip\":\"127.0.0.1\",\"rank_id\":\"0\"},"
                                                   "{\"device_id\":\"1\",\"device_ip\":\"127.0.0.1\",\"rank_id\":\"1\"}")),
     "rank 1 has no device_port", "65535", 1, HCCL_E_PARA, "65535"},
    /* Two ranks with one listening address could never both listen: said at once, not
     * after HCCL_CONNECT_TIMEOUT. Explicit ports, and an explicit one equal to a default. */
    {"two ranks on one address", TABLE("1.0", "1", SERVER(DEV("0", "30001", "0") "," DEV("1", "30001", "1"))),
     "ranks 0 and 1 would both listen on 127.0.0.1:30001", NULL, 0, HCCL_E_PARA, NULL},
    {"device_port equal to a default port", TABLE("1.0", "1", SERVER(DEV("0", "30012", "0") ","
                                                   "{\"device_id\":\"1\",\"device_ip\":\"127.0.0.1\",\"rank_id\":\"1\"}")),
     "ranks 0 and 1 would both listen on 127.0.0.1:30012", NULL, 1, HCCL_E_PARA, "30011"},
};

static void rt_body(fault_ctx *c)
{
    for (size_t k = 0; k < sizeof rt_cases / sizeof rt_cases[0]; k++) {
        const rt_case *rc = &rt_cases[k];
        char path[700];
        if (rc->text) {
            snprintf(path, sizeof path, "%s/ranktable_%zu.json", g_sh->dir, k);
            FILE *f = fopen(path, "w");
            if (!f || fputs(rc->text, f) < 0) {
                fault_fail(c, "cannot write %s", path);
                if (f) fclose(f);
                continue;
            }
            fclose(f);
        } else {
            snprintf(path, sizeof path, "%s/no_such_ranktable.json", g_sh->dir);
        }
        fault_step(c, "rank table case: %s", rc->what);
        if (rc->base_port) setenv("HCCL_IF_BASE_PORT", rc->base_port, 1);
        char *before = fault_rank_output(0);
        size_t at = strlen(before);
        free(before);
        HcclComm comm = NULL;
        double t0 = fault_now();
        HcclResult r = HcclCommInitClusterInfo(path, rc->rank, &comm);
        double dt = fault_now() - t0;
        if (rc->base_port) unsetenv("HCCL_IF_BASE_PORT");
        if (r == HCCL_SUCCESS) {
            fault_fail(c, "%s: HcclCommInitClusterInfo succeeded", rc->what);
            HcclCommDestroy(comm);
            continue;
        }
        FCHECK(c, r == rc->want, "%s: HcclCommInitClusterInfo returned %d (%s), expected %d (%s)", rc->what, (int)r,
               HcclGetErrorString(r), (int)rc->want, HcclGetErrorString(rc->want));
        FCHECK(c, dt < 1.0, "%s: HcclCommInitClusterInfo took %.2f s to fail", rc->what, dt);
        /* What this call printed. */
        char *all = fault_rank_output(0);
        const char *out = strlen(all) >= at ? all + at : "";
        const char *needles[] = {"WARN", rc->needle, rc->needle2, NULL};
        FCHECK(c, fault_text_has_line(out, needles), "%s: no WARN line naming \"%s\"%s%s%s; it printed:\n%s",
               rc->what, rc->needle, rc->needle2 ? " and \"" : "", rc->needle2 ? rc->needle2 : "",
               rc->needle2 ? "\"" : "", out);
        free(all);
    }
}

int scen_ranktable(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fault_job job = {.name = "ranktable", .nranks = 1, .init = INIT_NONE, .body = rt_body, .watchdog_s = 30};
    fault_run(&job);
    return 0;
}

/* ---- ranks that disagree about nRanks ------------------------------------------------------------ */

/* For scenarios whose ranks make their own communicator (INIT_NONE): the root info
 * the parent makes, as fault_run does for INIT_ROOTINFO; 0 on success. */
static int parent_root_info(void)
{
    if (HcclGetRootInfo(&g_sh->root) == HCCL_SUCCESS) return 0;
    fault_fail(NULL, "HcclGetRootInfo failed");
    return -1;
}

/* HcclCommInitRootInfo(n, parent's root, rank) where it is expected to fail: reports
 * the result and the time it took (*dt), and destroys a communicator it made. */
static HcclResult init_expecting_failure(fault_ctx *c, uint32_t n, double *dt)
{
    double t0 = fault_now();
    HcclComm comm = NULL;
    HcclResult rc = HcclCommInitRootInfo(n, &g_sh->root, (uint32_t)c->rank, &comm);
    *dt = fault_now() - t0;
    fprintf(stderr, "FAULT-TEST INFO: init returned %d after %.2f s\n", (int)rc, *dt);
    if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
    return rc;
}

/* 3 ranks of one root info; rank 1 says nRanks = 4. The root refuses the group (whose
 * size the first rank to arrive gave it: either rank 1 or another is named), and
 * every rank, whether it came before rank 1 or after, must fail at once with
 * HCCL_E_PARA and the root's reason (not "malformed reply", not a timeout). */
static void nranks_body(fault_ctx *c)
{
    uint32_t n = c->rank == 1 ? 4u : 3u;
    if (c->rank == 2) usleep(300000); /* after rank 1: the root has refused the group by then */
    fault_step(c, "HcclCommInitRootInfo(%u, root, %d)", n, c->rank);
    double dt;
    HcclResult rc = init_expecting_failure(c, n, &dt);
    FCHECK(c, rc == HCCL_E_PARA, "HcclCommInitRootInfo(%u) returned %d (%s), not HCCL_E_PARA", n, (int)rc,
           HcclGetErrorString(rc));
    FCHECK(c, dt < 3.0, "HcclCommInitRootInfo took %.2f s to fail (HCCL_CONNECT_TIMEOUT=5)", dt);
}

int scen_nranks(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setenv("HCCL_CONNECT_TIMEOUT", "5", 1);
    if (parent_root_info() != 0) return 0;
    fault_job job = {.name = "nranks", .nranks = 3, .init = INIT_NONE, .body = nranks_body, .watchdog_s = 30};
    fault_run(&job);
    for (int r = 0; r < 3; r++)
        FCHECK(NULL,
               fault_output_has(r, "WARN", "rank 1 was started with nranks=4 but the group has nranks=3", NULL) ||
                   fault_output_has(r, "WARN", "was started with nranks=3 but the group has nranks=4", NULL),
               "rank %d printed no WARN line with the root's reason", r);
    return 0;
}

/* 2 ranks make a communicator from a root info, destroy it, and try the same root info
 * again: its root no longer listens, so both fail at HCCL_CONNECT_TIMEOUT, and their
 * WARN line says a root info serves one communicator. */
static void reuse_body(fault_ctx *c)
{
    double dt;
    fault_step(c, "HcclCommInitRootInfo(2, root, %d), the first time", c->rank);
    HcclComm comm = NULL;
    HcclResult rc = HcclCommInitRootInfo(2, &g_sh->root, (uint32_t)c->rank, &comm);
    FCHECK(c, rc == HCCL_SUCCESS, "the first HcclCommInitRootInfo returned %d", (int)rc);
    if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
    fault_step(c, "HcclCommInitRootInfo(2, root, %d) with the same root info", c->rank);
    rc = init_expecting_failure(c, 2, &dt);
    FCHECK(c, rc == HCCL_E_TIMEOUT || rc == HCCL_E_TCP_CONNECT, "the reused root info returned %d (%s)", (int)rc,
           HcclGetErrorString(rc));
}

int scen_reuse(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setenv("HCCL_CONNECT_TIMEOUT", "2", 1);
    if (parent_root_info() != 0) return 0;
    fault_job job = {.name = "reuse", .nranks = 2, .init = INIT_NONE, .body = reuse_body, .watchdog_s = 30};
    fault_run(&job);
    for (int r = 0; r < 2; r++)
        FCHECK(NULL, fault_output_has(r, "WARN", "root at", "A root info serves one", NULL),
               "rank %d printed no WARN line saying that a root info serves one communicator", r);
    return 0;
}

/* ---- a rank whose creation fails before it joins ------------------------------------------------ */

/* 3 ranks of one root info; rank 2's HcclCommInitRootInfo fails in its own checks or
 * set-up, before it reaches the root. It tells the root, which refuses the group: ranks
 * 0 and 1 must fail within seconds (HCCL_CONNECT_TIMEOUT=30) with HCCL_E_PARA, and their
 * error text must name rank 2 (by pid and what it passed, when its rank id is the bad
 * argument) and its reason. Cases:
 *   rank    rank 2 passes rank id 7, at once: its report is the root's first news
 *   comm    rank 2 passes comm = NULL, at once: the report gives the root the group's size
 *   ifname  rank 2 has HCCL_SOCKET_IFNAME=<no such interface> and comes last, when the
 *           others already wait at the root */
static void fails_body(fault_ctx *c)
{
    const char *cs = c->arg;
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d ", (int)getpid());
    if (c->rank == 2) {
        HcclComm comm = NULL;
        HcclResult rc;
        if (!strcmp(cs, "rank")) {
            rc = HcclCommInitRootInfo(3, &g_sh->root, 7, &comm);
        } else if (!strcmp(cs, "comm")) {
            rc = HcclCommInitRootInfo(3, &g_sh->root, 2, NULL);
        } else {
            usleep(500000);
            setenv("HCCL_SOCKET_IFNAME", "hcclnosuchif0", 1);
            rc = HcclCommInitRootInfo(3, &g_sh->root, 2, &comm);
        }
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
        fprintf(stderr, "FAULT-TEST INFO: rank 2 failed with %d: %s\n", (int)rc, msg);
        FCHECK(c, rc != HCCL_SUCCESS, "rank 2's HcclCommInitRootInfo succeeded");
        if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
        /* Its own reason stays its last error: telling the root logs no WARN. */
        FCHECK(c, strstr(msg, !strcmp(cs, "ifname") ? "hcclnosuchif0" : "HcclCommInitRootInfo:"),
               "rank 2's own error text is not its reason: \"%s\"", msg);
        snprintf(g_sh->fifo, sizeof g_sh->fifo, "%s", pid); /* for the others' check */
        atomic_store(&g_sh->flag[0], 1);
        return;
    }
    if (!strcmp(cs, "comm")) usleep(300000); /* after rank 2's report */
    fault_step(c, "HcclCommInitRootInfo(3, root, %d) with rank 2 failing (%s)", c->rank, cs);
    double t0 = fault_now();
    HcclComm comm = NULL;
    HcclResult rc = HcclCommInitRootInfo(3, &g_sh->root, (uint32_t)c->rank, &comm);
    double dt = fault_now() - t0;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
    fprintf(stderr, "FAULT-TEST INFO: init returned %d after %.2f s: %s\n", (int)rc, dt, msg);
    if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
    FCHECK(c, rc == HCCL_E_PARA, "HcclCommInitRootInfo returned %d (%s), not HCCL_E_PARA", (int)rc,
           HcclGetErrorString(rc));
    FCHECK(c, dt < 5.0, "HcclCommInitRootInfo took %.2f s to fail (HCCL_CONNECT_TIMEOUT=30)", dt);
    FCHECK(c, fault_wait_flag(0, 1, 10.0), "rank 2 never finished");
    const char *who = !strcmp(cs, "rank") ? "which passed rank 7 and nRanks 3) failed HcclCommInitRootInfo before joining"
                                          : ") failed HcclCommInitRootInfo before joining";
    const char *why = !strcmp(cs, "rank")   ? "rank 7 / nRanks 3 is invalid"
                      : !strcmp(cs, "comm") ? "comm is NULL"
                                            : "HCCL_SOCKET_IFNAME=hcclnosuchif0 matches no interface";
    FCHECK(c, strstr(msg, who) && strstr(msg, why) && strstr(msg, g_sh->fifo) &&
                  (!strcmp(cs, "rank") || strstr(msg, "rank 2 (pid ")),
           "the error text does not name rank 2 (%s) and its reason: \"%s\"", g_sh->fifo, msg);
}

/* --case env: a launch (HcclCommInitFromEnv) whose rank 0, which hosts the root, fails
 * (HCCL_SOCKET_IFNAME=<no such interface>); ranks 1 and 2 come 300 ms later. Rank 0 must
 * keep its root until they got the reason, not exit with it and leave them to find no
 * root until HCCL_CONNECT_TIMEOUT. */
static void fails_env_body(fault_ctx *c)
{
    env_set_rank(c->rank);
    HcclComm comm = NULL;
    char msg[1024];
    if (c->rank == 0) {
        setenv("HCCL_SOCKET_IFNAME", "hcclnosuchif0", 1);
        HcclResult rc = HcclCommInitFromEnv(NULL, &comm);
        snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
        FCHECK(c, rc != HCCL_SUCCESS, "rank 0's HcclCommInitFromEnv succeeded");
        if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
        FCHECK(c, strstr(msg, "hcclnosuchif0"), "rank 0's own error text is not its reason: \"%s\"", msg);
        snprintf(g_sh->fifo, sizeof g_sh->fifo, "pid %d ", (int)getpid());
        atomic_store(&g_sh->flag[0], 1);
        return; /* and the process exits */
    }
    usleep(300000);
    double t0 = fault_now();
    HcclResult rc = HcclCommInitFromEnv(NULL, &comm);
    double dt = fault_now() - t0;
    snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
    fprintf(stderr, "FAULT-TEST INFO: init returned %d after %.2f s: %s\n", (int)rc, dt, msg);
    if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
    FCHECK(c, rc == HCCL_E_PARA, "HcclCommInitFromEnv returned %d (%s), not HCCL_E_PARA", (int)rc,
           HcclGetErrorString(rc));
    FCHECK(c, dt < 5.0, "HcclCommInitFromEnv took %.2f s to fail (HCCL_CONNECT_TIMEOUT=30)", dt);
    FCHECK(c, fault_wait_flag(0, 1, 10.0), "rank 0 never finished");
    FCHECK(c, strstr(msg, "rank 0 (pid ") && strstr(msg, g_sh->fifo) &&
                  strstr(msg, "failed HcclCommInitFromEnv before joining: HCCL_SOCKET_IFNAME=hcclnosuchif0"),
           "the error text does not name rank 0 (%s) and its reason: \"%s\"", g_sh->fifo, msg);
}

int scen_rank_fails(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    static const char *cases[] = {"rank", "comm", "ifname"};
    setenv("HCCL_CONNECT_TIMEOUT", "30", 1);
    if (!only || !strcmp(only, "env")) {
        for (int attempt = 0; attempt < 3; attempt++) { /* as in scen_stray: ports taken by another test */
            int port = fault_free_ports(2);
            if (port < 0) {
                fault_fail(NULL, "no free ports");
                return 0;
            }
            env_common(port);
            atomic_store(&g_sh->flag[0], 0);
            g_sh->fifo[0] = 0;
            fault_job job = {.name = "rank_fails_env", .nranks = ENV_N, .init = INIT_NONE, .body = fails_env_body,
                             .watchdog_s = 40};
            fault_run(&job);
            if (!job.failed_checks || !fault_output_has(0, "cannot listen", "already in use", NULL)) break;
            fault_forgive(&job);
        }
    }
    for (int k = 0; k < 3; k++) {
        if (only && strcmp(only, cases[k])) continue;
        if (parent_root_info() != 0) return 0;
        atomic_store(&g_sh->flag[0], 0);
        g_sh->fifo[0] = 0;
        fault_job job = {.name = "rank_fails", .nranks = 3, .init = INIT_NONE, .body = fails_body,
                         .arg = (void *)cases[k], .watchdog_s = 40};
        fault_run(&job);
    }
    return 0;
}

/* ---- a root that runs out of file descriptors ---------------------------------------------- */

/* Lowers RLIMIT_NOFILE to 64 and opens /dev/null until no descriptor is left; the
 * descriptors go to held (64 at most); returns how many. */
static int hold_all_fds(int held[64])
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 64;
    setrlimit(RLIMIT_NOFILE, &rl);
    int nheld = 0;
    for (int fd; nheld < 64 && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held[nheld++] = fd;
    return nheld;
}

/* Rank 0's process hosts the root (HcclGetRootInfo), then uses up every descriptor
 * RLIMIT_NOFILE allows, so the root cannot accept rank 1's connection (EMFILE). The
 * root must say so and give up at once (rank 1, whose connection it answers on the
 * descriptor it keeps in reserve, fails at once too, with the root's reason), not spin on the readable listener until HCCL_CONNECT_TIMEOUT and then
 * report the rank that did come as "never arrived". */
static void nofile_body(fault_ctx *c)
{
    if (c->rank == 0) {
        FCHECK(c, HcclGetRootInfo(&g_sh->root) == HCCL_SUCCESS, "HcclGetRootInfo failed");
        int held[64], nheld = hold_all_fds(held);
        atomic_store(&g_sh->flag[0], 1);
        fault_step(c, "holding %d descriptors: no free one left for the root", nheld);
        fault_wait_flag(1, 1, 25.0); /* rank 1 is done */
        while (nheld > 0) close(held[--nheld]);
        return;
    }
    FCHECK(c, fault_wait_flag(0, 1, 10.0), "rank 0 never made the root info");
    fault_step(c, "HcclCommInitRootInfo(2, root, 1) with a root out of descriptors");
    double dt;
    HcclResult rc = init_expecting_failure(c, 2, &dt);
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommInitRootInfo succeeded");
    FCHECK(c, dt < 5.0, "HcclCommInitRootInfo took %.2f s to fail (HCCL_CONNECT_TIMEOUT=15)", dt);
    atomic_store(&g_sh->flag[1], 1);
}

/* --case rank: the joining rank is the one out of descriptors. Rank 1 leaves itself one
 * free descriptor, which its listener takes, so its connection to the root cannot get a
 * socket: it fails at once, and the text of its failure (HcclGetLastErrorMessage, what
 * the Python package raises) says why, not only that it could not connect. */
static void nofile_rank_body(fault_ctx *c)
{
    if (c->rank == 0) {
        FCHECK(c, HcclGetRootInfo(&g_sh->root) == HCCL_SUCCESS, "HcclGetRootInfo failed");
        atomic_store(&g_sh->flag[0], 1);
        fault_wait_flag(1, 1, 25.0); /* rank 1 is done */
        return;
    }
    FCHECK(c, fault_wait_flag(0, 1, 10.0), "rank 0 never made the root info");
    int held[64], nheld = hold_all_fds(held);
    if (nheld > 0) close(held[--nheld]); /* one left: for the listener */
    fault_step(c, "HcclCommInitRootInfo(2, root, 1) with one free descriptor");
    double t0 = fault_now();
    HcclComm comm = NULL;
    HcclResult rc = HcclCommInitRootInfo(2, &g_sh->root, 1, &comm);
    double dt = fault_now() - t0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
    while (nheld > 0) close(held[--nheld]);
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommInitRootInfo succeeded");
    if (rc == HCCL_SUCCESS) HcclCommDestroy(comm);
    FCHECK(c, dt < 5.0, "HcclCommInitRootInfo took %.2f s to fail (HCCL_CONNECT_TIMEOUT=15)", dt);
    FCHECK(c, strstr(msg, "bootstrap root") && strstr(msg, "Too many open files") && strstr(msg, "RLIMIT_NOFILE"),
           "the failure's text does not say that this rank ran out of descriptors: \"%s\"", msg);
    atomic_store(&g_sh->flag[1], 1);
}

/* --case initall: HcclCommInitAll(4) with 1, 2, 3... free descriptors, until it has
 * enough: its ranks (threads) fail at every step of their creation (listener, join,
 * mesh). The first to fail must not leave the others waiting for it until
 * HCCL_CONNECT_TIMEOUT (they are threads of this call: they can know at once), and the
 * caller's HcclGetLastErrorMessage names a rank and why. */
static void nofile_initall_body(fault_ctx *c)
{
    int32_t devs[4] = {0, 1, 2, 3};
    int ok = 0;
    for (int nfree = 1; nfree <= 40 && !ok; nfree++) { /* 0: its own HcclGetRootInfo fails */
        int held[64], nheld = hold_all_fds(held);
        for (int k = 0; k < nfree && nheld > 0; k++) close(held[--nheld]);
        HcclComm comms[4] = {0};
        double t0 = fault_now();
        HcclResult rc = HcclCommInitAll(4, devs, comms);
        double dt = fault_now() - t0;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
        while (nheld > 0) close(held[--nheld]);
        fault_step(c, "HcclCommInitAll(4) with %d free descriptors: %d in %.2f s", nfree, (int)rc, dt);
        FCHECK(c, dt < 6.0, "HcclCommInitAll(4) with %d free descriptors took %.2f s to return %d "
               "(HCCL_CONNECT_TIMEOUT=15): \"%s\"", nfree, dt, (int)rc, msg);
        if (rc == HCCL_SUCCESS) {
            for (int i = 0; i < 4; i++) HcclCommDestroy(comms[i]);
            ok = 1;
            continue;
        }
        FCHECK(c, comms[0] == NULL, "HcclCommInitAll failed but returned communicators");
        FCHECK(c, strstr(msg, "rank ") && (strstr(msg, "Too many open files") || strstr(msg, "connection lost")),
               "with %d free descriptors HcclCommInitAll failed (%d) but its message does not say which rank "
               "ran out of descriptors: \"%s\"", nfree, (int)rc, msg);
    }
    FCHECK(c, ok, "HcclCommInitAll(4) never succeeded, even with 40 free descriptors");
}

int scen_nofile(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    setenv("HCCL_CONNECT_TIMEOUT", "15", 1);
    if (only && !strcmp(only, "initall")) {
        fault_job job = {.name = "nofile_initall", .nranks = 1, .init = INIT_NONE, .body = nofile_initall_body,
                         .watchdog_s = 150, .skip_fd_check = 1};
        fault_run(&job);
        return 0;
    }
    if (only && !strcmp(only, "rank")) {
        fault_job job = {.name = "nofile_rank", .nranks = 2, .init = INIT_NONE, .body = nofile_rank_body,
                         .watchdog_s = 40, .skip_fd_check = 1};
        fault_run(&job);
        return 0;
    }
    fault_job job = {.name = "nofile", .nranks = 2, .init = INIT_NONE, .body = nofile_body, .watchdog_s = 40,
                     .skip_fd_check = 1};
    fault_run(&job);
    FCHECK(NULL, fault_output_has(0, "WARN", "bootstrap root", "cannot accept", "Too many open files", NULL),
           "rank 0 (hosting the root) printed no WARN line saying that the root cannot accept connections");
    /* Rank 1's connection waits unaccepted: the root answers it on its reserve descriptor
     * rather than reset it ("connection lost"). */
    FCHECK(NULL, fault_output_has(1, "WARN", "cannot accept a rank's connection at the bootstrap root",
                                  "Too many open files", NULL),
           "rank 1 printed no WARN line saying that the root cannot accept connections (out of descriptors)");
    return 0;
}

/* A process that cannot start a thread (RLIMIT_AS leaves no room for a stack):
 * HcclGetRootInfo fails, and its WARN line (HcclGetLastErrorMessage) says why. */
static void nothread_body(fault_ctx *c)
{
    long vm_kb = 0;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &vm_kb) == 1) break;
    if (f) fclose(f);
    FCHECK(c, vm_kb > 0, "no VmSize in /proc/self/status");
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = (rlim_t)(vm_kb + 2048) * 1024; /* less than a thread's stack */
    setrlimit(RLIMIT_AS, &rl);
    fault_step(c, "HcclGetRootInfo with no room for a thread");
    HcclRootInfo ri;
    HcclResult rc = HcclGetRootInfo(&ri);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_AS, &rl);
    FCHECK(c, rc != HCCL_SUCCESS, "HcclGetRootInfo succeeded without a thread");
    FCHECK(c, strstr(msg, "cannot start the bootstrap root's thread") != NULL,
           "HcclGetRootInfo failed with %d but HcclGetLastErrorMessage says \"%s\"", (int)rc, msg);
}

/* pthread_create of this program comes first (-rdynamic), so the library's calls land
 * here: the g_fail_create-th call from now fails with EAGAIN, as under RLIMIT_NPROC. */
static _Atomic int g_fail_create;

__attribute__((visibility("default"))) int pthread_create(pthread_t *t, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg)
{
    typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    static create_fn real;
    if (!real) real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (atomic_load(&g_fail_create) > 0 && atomic_fetch_sub(&g_fail_create, 1) == 1) return EAGAIN;
    return real ? real(t, attr, fn, arg) : EAGAIN;
}

static int count_tasks(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

/* HcclCommInitAll(4) whose third thread cannot start: it fails at once (not when the
 * started ranks give up at HCCL_CONNECT_TIMEOUT), says why, leaves no thread behind,
 * and a later HcclCommInitAll works. */
static void initall_body(fault_ctx *c)
{
    int32_t devs[4] = {0, 1, 2, 3};
    HcclComm comms[4] = {0};
    int tasks = count_tasks();
    fault_step(c, "HcclCommInitAll(4) whose third thread cannot start");
    atomic_store(&g_fail_create, 3);
    double t0 = fault_now();
    HcclResult rc = HcclCommInitAll(4, devs, comms);
    double dt = fault_now() - t0;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", HcclGetLastErrorMessage());
    atomic_store(&g_fail_create, 0);
    FCHECK(c, rc == HCCL_E_SYSCALL, "HcclCommInitAll returned %d, not HCCL_E_SYSCALL", (int)rc);
    FCHECK(c, dt < 3.0, "HcclCommInitAll took %.2f s to fail (HCCL_CONNECT_TIMEOUT is 20 s)", dt);
    FCHECK(c, strstr(msg, "cannot start the thread of rank 2") != NULL,
           "HcclCommInitAll's HcclGetLastErrorMessage says \"%s\"", msg);
    FCHECK(c, comms[0] == NULL && comms[1] == NULL, "HcclCommInitAll failed but returned communicators");
    FCHECK(c, count_tasks() == tasks, "%d threads before HcclCommInitAll, %d after its failure", tasks,
           count_tasks());
    fault_step(c, "HcclCommInitAll(2) afterwards");
    rc = HcclCommInitAll(2, devs, comms);
    FCHECK(c, rc == HCCL_SUCCESS, "HcclCommInitAll(2) after the failed one returned %d", (int)rc);
    for (int i = 0; i < 2 && rc == HCCL_SUCCESS; i++) HcclCommDestroy(comms[i]);
}

int scen_nothread(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    if (only && !strcmp(only, "initall")) {
        setenv("HCCL_CONNECT_TIMEOUT", "20", 1);
        fault_job job = {.name = "nothread_initall", .nranks = 1, .init = INIT_NONE, .body = initall_body,
                         .watchdog_s = 40};
        fault_run(&job);
        return 0;
    }
    fault_job job = {.name = "nothread", .nranks = 1, .init = INIT_NONE, .body = nothread_body, .watchdog_s = 20,
                     .skip_fd_check = 1};
    fault_run(&job);
    return 0;
}

/* ---- a rank that dies inside communicator setup ---------------------------------------------- */

/* The library calls sched_getaffinity in its setup, after the ranks have connected;
 * this program's definition comes first, so the chosen rank dies right there. */
static volatile int g_die_in_setup;

__attribute__((visibility("default"))) int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
    if (g_die_in_setup) raise(SIGKILL);
    static int (*real)(pid_t, size_t, cpu_set_t *);
    if (!real) real = (int (*)(pid_t, size_t, cpu_set_t *))dlsym(RTLD_NEXT, "sched_getaffinity");
    return real ? real(pid, size, set) : -1;
}

static void setup_death_body(fault_ctx *c)
{
    if (c->rank == 2) g_die_in_setup = 1;
    /* Rank 2 alone on another (simulated) host: the others' messages say where it ran. */
    setenv("HCCL_HOST_ID", c->rank == 2 ? "fault-b" : "fault-a", 1);
    fault_step(c, "HcclCommInitRootInfo(4, root, %d)%s", c->rank, c->rank == 2 ? " (dies inside)" : "");
    double dt;
    HcclResult rc = init_expecting_failure(c, 4, &dt);
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommInitRootInfo succeeded although rank 2 died inside it");
    FCHECK(c, dt < 5.0, "HcclCommInitRootInfo took %.2f s to fail after rank 2 died", dt);
}

/* --case shm: rank 1, about to open the shared memory rank 0 made for their pair (rank 0
 * sent its hello and waits for the answer), kills rank 0 first: by descriptor, as it
 * opens /proc/<rank 0's pid>/fd/<n> (nothing has a name: nothing may be left);
 * --case shm_byname (HCCL_SHM_BY_NAME=1): as it opens the segment by its name
 * (hccl-shm-<pid>-...), which rank 0 then never unlinks, so rank 1 must once it has
 * opened it. --case slots: as it opens the communicator's slot segment by its name.
 * The harness checks /dev/shm. This program's open and shm_open come first, as
 * sched_getaffinity above. */
static volatile int g_kill_shm_creator; /* 1: pair by name, 2: slots, 3: pair by descriptor */

static void kill_creator(pid_t creator)
{
    g_kill_shm_creator = 0;
    if (creator > 1 && creator != getpid()) {
        kill(creator, SIGKILL);
        usleep(100000);
    }
}

__attribute__((visibility("default"))) int shm_open(const char *name, int oflag, mode_t mode)
{
    static int (*real)(const char *, int, mode_t);
    if (!real) real = (int (*)(const char *, int, mode_t))dlsym(RTLD_NEXT, "shm_open");
    const char *pre = "/hccl-shm-";
    if ((g_kill_shm_creator == 1 || g_kill_shm_creator == 2) && !(oflag & O_CREAT) &&
        !strncmp(name, pre, strlen(pre)) && !strstr(name, "-slots-") == (g_kill_shm_creator == 1))
        kill_creator((pid_t)atol(name + strlen(pre)));
    return real ? real(name, oflag, mode) : -1;
}

__attribute__((visibility("default"))) int open(const char *path, int oflag, ...)
{
    static int (*real)(const char *, int, ...);
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    mode_t mode = 0;
    if ((oflag & O_CREAT) || (oflag & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, oflag);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (g_kill_shm_creator == 3 && !strncmp(path, "/proc/", 6) && strstr(path, "/fd/") && atol(path + 6) > 0)
        kill_creator((pid_t)atol(path + 6));
    return real ? real(path, oflag, mode) : -1;
}

static void shm_creator_death_body(fault_ctx *c)
{
    int how = *(const int *)c->arg;
    if (c->rank == 1) g_kill_shm_creator = how;
    fault_step(c, "HcclCommInitRootInfo(2, root, %d)%s", c->rank,
               c->rank != 1    ? ""
               : how == 2      ? " (kills rank 0 as it opens the slot segment)"
               : how == 1      ? " (kills rank 0 in the shared-memory handshake by name)"
                               : " (kills rank 0 in the shared-memory handshake, after its hello)");
    double dt;
    HcclResult rc = init_expecting_failure(c, 2, &dt);
    if (c->rank == 1) {
        FCHECK(c, g_kill_shm_creator == 0, "rank 1 never opened rank 0's shared memory");
        FCHECK(c, rc != HCCL_SUCCESS, "HcclCommInitRootInfo succeeded although rank 0 died inside it");
        FCHECK(c, dt < 10.0, "HcclCommInitRootInfo took %.2f s to fail after rank 0 died", dt);
    }
}

int scen_setup_death(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    setenv("HCCL_CONNECT_TIMEOUT", "20", 1);
    if (parent_root_info() != 0) return 0;
    if (only && (!strcmp(only, "shm") || !strcmp(only, "shm_byname") || !strcmp(only, "slots"))) {
        static int how;
        how = !strcmp(only, "slots") ? 2 : !strcmp(only, "shm_byname") ? 1 : 3;
        if (how == 1) setenv("HCCL_SHM_BY_NAME", "1", 1);
        fault_job job = {.name = how == 2 ? "setup_death_slots" : how == 1 ? "setup_death_shm_byname" : "setup_death_shm",
                         .nranks = 2, .init = INIT_NONE, .body = shm_creator_death_body, .arg = &how,
                         .killed_mask = 1u << 0, .watchdog_s = 30};
        fault_run(&job);
        return 0;
    }
    fault_job job = {.name = "setup_death", .nranks = 4, .init = INIT_NONE, .body = setup_death_body,
                     .killed_mask = 1u << 2, .watchdog_s = 30}; /* rank 2 kills itself */
    fault_run(&job);
    for (int r = 0; r < 4; r++)
        if (r != 2)
            FCHECK(NULL,
                   fault_output_has(r, "WARN", "comm setup on rank", "connection to rank 2 (host fault-b ", ") lost",
                                    NULL),
                   "rank %d printed no WARN line naming rank 2, and its host fault-b, as the rank whose connection "
                   "was lost", r);
    return 0;
}

/* ---- a rank that fails while the ranks connect their mesh ------------------------------------ */

/* The chosen rank's third stream socket fails with EMFILE (g_fail_mesh_socket 1), or the
 * rank dies there (2): its first is its listener, its second the connection to the root,
 * its third the first of its mesh (to rank 0). This program's socket comes first, as
 * sched_getaffinity above. */
static volatile int g_fail_mesh_socket;

__attribute__((visibility("default"))) int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);
    static int nstream;
    if (!real) real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    if (g_fail_mesh_socket && (type & 0xf) == SOCK_STREAM && ++nstream == 3) {
        if (g_fail_mesh_socket == 2) raise(SIGKILL);
        errno = EMFILE;
        return -1;
    }
    return real ? real(domain, type, protocol) : -1;
}

static void mesh_fail_body(fault_ctx *c)
{
    int kill = *(const int *)c->arg, bad = kill ? 1 : 2;
    if (c->rank == bad) g_fail_mesh_socket = kill ? 2 : 1;
    fault_step(c, "HcclCommInitRootInfo(4, root, %d)%s", c->rank,
               c->rank != bad ? "" : kill ? " (dies at its first mesh connection)"
                                          : " (its first mesh connection gets no descriptor)");
    double dt;
    HcclResult rc = init_expecting_failure(c, 4, &dt);
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommInitRootInfo succeeded although rank %d failed inside it", bad);
    FCHECK(c, dt < 5.0, "HcclCommInitRootInfo took %.2f s to fail after rank %d failed in the mesh "
           "(HCCL_CONNECT_TIMEOUT=60)", dt, bad);
}

/* --case kill: rank 1 dies instead (no chance to tell anyone): the ranks that connect to
 * it find its listener gone or their connection closed, and tell rank 0, which waits
 * for rank 1's connection. */
int scen_mesh_fail(int argc, char **argv)
{
    const char *only = case_arg(argc, argv);
    static int kill;
    kill = only && !strcmp(only, "kill");
    setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
    if (parent_root_info() != 0) return 0;
    fault_job job = {.name = "mesh_fail", .nranks = 4, .init = INIT_NONE, .body = mesh_fail_body, .arg = &kill,
                     .killed_mask = kill ? 1u << 1 : 0, .watchdog_s = 80};
    fault_run(&job);
    for (int r = 0; r < 4; r++)
        if (r != (kill ? 1 : 2))
            FCHECK(NULL, kill ? fault_output_has(r, "WARN", "rank 1", NULL)
                              : fault_output_has(r, "WARN", "rank 2", "Too many open files", NULL),
                   "rank %d printed no WARN line naming rank %d%s", r, kill ? 1 : 2,
                   kill ? "" : " and its reason (out of descriptors)");
    return 0;
}

/* ---- ranks whose settings choose different algorithms --------------------------------------- */

static void algo_body(fault_ctx *c)
{
    if (c->rank == 3) setenv("HCCL_REFERENCE_ALGOS", "1", 1);
    uint64_t count = *(const uint64_t *)c->arg;
    HcclResult rc = HcclCommInitRootInfo(4, &g_sh->root, (uint32_t)c->rank, &c->comm);
    if (rc != HCCL_SUCCESS) {
        fault_fail(c, "HcclCommInitRootInfo returned %d", (int)rc);
        c->comm = NULL;
        return;
    }
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, count * 4, count * 4) != 0) return;
    fault_step(c, "AllReduce of %llu elements%s", (unsigned long long)count,
               c->rank == 3 ? " with HCCL_REFERENCE_ALGOS=1" : "");
    double t0 = fault_now();
    FCHECK(c, fault_allreduce_check(c, &b, count, 1.0f) != 0, "an AllReduce succeeded although rank 3 chose "
           "other algorithms");
    FCHECK(c, fault_now() - t0 < 5.0, "the AllReduce took %.2f s to fail", fault_now() - t0);
    fault_bufs_free(&b);
}

int scen_algo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    static const uint64_t counts[] = {2, 300000};
    setenv("HCCL_EXEC_TIMEOUT", "15", 1);
    for (size_t k = 0; k < 2; k++) {
        if (parent_root_info() != 0) return 0;
        fault_job job = {.name = k ? "algo_large" : "algo_small", .nranks = 4, .init = INIT_NONE,
                         .body = algo_body, .arg = (void *)&counts[k], .watchdog_s = 30};
        fault_run(&job);
        for (int r = 0; r < 4; r++)
            FCHECK(NULL, fault_output_has(r, "WARN", "configuration mismatch at op #1", "HCCL_REFERENCE_ALGOS", NULL),
                   "%s: rank %d printed no WARN line naming the configuration mismatch", job.name, r);
    }
    return 0;
}

/* ---- whitelist -------------------------------------------------------------------------------- */

static void simple_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    FCHECK(c, fault_allreduce_check(c, &b, 1024, 1.0f) == 0, "AllReduce failed");
    fault_bufs_free(&b);
}

static char *slurp(const char *path);

int scen_whitelist(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char path[700];
    snprintf(path, sizeof path, "%s/whitelist.json", g_sh->dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fault_fail(NULL, "cannot write %s", path);
        return 0;
    }
    fputs("{\"host_ip\": [\"198.18.0.1\", \"not-an-ip\"]}\n", f);
    fclose(f);
    setenv("HCCL_WHITELIST_DISABLE", "0", 1);
    setenv("HCCL_WHITELIST_FILE", path, 1);
    setenv("HCCL_CONNECT_TIMEOUT", "10", 1);
    fault_job job = {.name = "whitelist", .nranks = 3, .init = INIT_ROOTINFO, .body = simple_body, .watchdog_s = 30};
    /* The list is read when a process opens its first listener: here the parent's
     * HcclGetRootInfo, before the ranks fork, so the warning is the parent's. */
    char plog[720];
    snprintf(plog, sizeof plog, "%s/parent.log", g_sh->dir);
    fflush(stderr);
    int saved = dup(2), lf = open(plog, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (lf >= 0) {
        dup2(lf, 2);
        close(lf);
    }
    fault_run(&job);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *ptext = slurp(plog);
    if (ptext) fputs(ptext, stderr);
    const char *needles[] = {"WARN", "host_ip[1]", NULL};
    int reported = ptext && fault_text_has_line(ptext, needles);
    free(ptext);
    for (int r = 0; r < 3; r++) reported |= fault_output_has(r, "WARN", "host_ip[1]", NULL);
    FCHECK(NULL, reported, "no rank reported the invalid whitelist entry host_ip[1] (\"not-an-ip\")");
    return 0;
}

/* ---- flight recorder on request ----------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t k = fread(buf, 1, (size_t)n, f);
    buf[k] = 0;
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void check_dump(fault_ctx *c, const char *path)
{
    char *t = slurp(path);
    if (!t) {
        fault_fail(c, "flight recorder dump %s was not written", path);
        return;
    }
    char want[64];
    snprintf(want, sizeof want, "\"rank\":%d,", c->rank);
    FCHECK(c, strstr(t, want) != NULL, "%s does not say %s", path, want);
    FCHECK(c, strstr(t, "\"nranks\":3,") != NULL, "%s does not say \"nranks\":3", path);
    FCHECK(c, count_of(t, "\"state\":\"done\"") == 3, "%s: %d operations \"done\", expected 3", path,
           count_of(t, "\"state\":\"done\""));
    FCHECK(c, strstr(t, "AllGather") && strstr(t, "Broadcast") && strstr(t, "AllReduce"),
           "%s does not list AllReduce, AllGather and Broadcast", path);
    FCHECK(c, strstr(t, "\"last_completed_seq\":3") != NULL, "%s: last_completed_seq is not 3", path);
    free(t);
}

static void frdump_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096 * 3, 4096 * 3) != 0) return;
    FCHECK(c, fault_allreduce_check(c, &b, 1024, 1.0f) == 0, "AllReduce failed");
    FCHECK(c, HcclAllGather(b.dev_send, b.dev_recv, 1024, HCCL_DATA_TYPE_FP32, c->comm, c->stream) == HCCL_SUCCESS &&
                  HcclBroadcast(b.dev_recv, 1024, HCCL_DATA_TYPE_FP32, 0, c->comm, c->stream) == HCCL_SUCCESS &&
                  aclrtSynchronizeStream(c->stream) == ACL_SUCCESS,
           "AllGather + Broadcast failed");
    char path[700];
    snprintf(path, sizeof path, "%s/requested_r%d.json", g_sh->dir, c->rank);
    HcclResult rc = HcclCommDumpFlightRecorder(c->comm, path);
    FCHECK(c, rc == HCCL_SUCCESS, "HcclCommDumpFlightRecorder(comm, %s) returned %d", path, (int)rc);
    check_dump(c, path);
    rc = HcclCommDumpFlightRecorder(c->comm, NULL);
    FCHECK(c, rc == HCCL_SUCCESS, "HcclCommDumpFlightRecorder(comm, NULL) returned %d", (int)rc);
    /* NULL: HCCL_FLIGHT_RECORDER_DIR/hccl_fr_<comm>_r<rank>_p<pid>.json */
    char name[COMM_NAME_MAX_LENGTH + 16] = "";
    HcclGetCommName(c->comm, name);
    snprintf(path, sizeof path, "%s/hccl_fr_%s_r%d_p%d.json", g_sh->dir, name, c->rank, (int)getpid());
    check_dump(c, path);
    rc = HcclCommDumpFlightRecorder(c->comm, "/nonexistent-dir-for-hccl-fault/x.json");
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommDumpFlightRecorder to an unwritable path returned HCCL_SUCCESS");
    /* A full disk: the dump fails with a WARN that says so, and leaves no truncated file
     * (not JSON) behind for hccl_fr_report.py to trip over. */
    rc = HcclCommDumpFlightRecorder(c->comm, "/dev/full");
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommDumpFlightRecorder to /dev/full returned HCCL_SUCCESS");
    FCHECK(c, strstr(HcclGetLastErrorMessage(), "No space left on device") != NULL,
           "a dump to /dev/full failed without a WARN naming the cause (last: \"%s\")", HcclGetLastErrorMessage());
    char small[700];
    snprintf(small, sizeof small, "%s/too_big_r%d.json", g_sh->dir, c->rank);
    struct rlimit fsz, fsz_old;
    getrlimit(RLIMIT_FSIZE, &fsz_old);
    fsz = fsz_old;
    fsz.rlim_cur = 256; /* less than any dump: writes fail with EFBIG */
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &fsz);
    rc = HcclCommDumpFlightRecorder(c->comm, small);
    setrlimit(RLIMIT_FSIZE, &fsz_old);
    signal(SIGXFSZ, old_xfsz);
    FCHECK(c, rc != HCCL_SUCCESS, "a dump larger than RLIMIT_FSIZE returned HCCL_SUCCESS");
    FCHECK(c, access(small, F_OK) != 0, "a failed dump left its truncated file %s", small);
    /* "" is no file name (NULL is the default one): refused, nothing written in the
     * working directory (it went to a temporary file there, then failed to rename it). */
    rc = HcclCommDumpFlightRecorder(c->comm, "");
    FCHECK(c, rc == HCCL_E_PARA && strstr(HcclGetLastErrorMessage(), "path is empty") != NULL,
           "HcclCommDumpFlightRecorder(comm, \"\") returned %d (last: \"%s\"), not HCCL_E_PARA", (int)rc,
           HcclGetLastErrorMessage());
    rc = HcclCommDumpFlightRecorder(NULL, path);
    FCHECK(c, rc != HCCL_SUCCESS, "HcclCommDumpFlightRecorder(NULL, ...) returned HCCL_SUCCESS");
    /* The communicator still works after the dumps. */
    FCHECK(c, fault_allreduce_check(c, &b, 16, 2.0f) == 0, "AllReduce after the dumps failed");
    fault_bufs_free(&b);
}

int scen_frdump(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setenv("HCCL_FLIGHT_RECORDER_DIR", g_sh->dir, 1);
    fault_job job = {.name = "frdump", .nranks = 3, .init = INIT_ROOTINFO, .body = frdump_body, .watchdog_s = 30};
    fault_run(&job);
    return 0;
}
