/*
 * fault_scen.c - failures during operations: a killed rank, a rank that skips a
 * collective, a frozen rank, mismatched collectives. (Scenarios around communicator
 * creation are in fault_boot.c.)
 *
 * kill, skip and stop also run with --case small: AllReduces of 8 bytes, which on
 * one host go through the shared slots (the others: over the rings).
 * kill      4 ranks loop checked AllReduces (256 KiB); the parent SIGKILLs rank 2 once
 *           every rank has done 20. Each survivor: the AllReduce in flight (or the next)
 *           fails within 10 s of the kill, long before HCCL_EXEC_TIMEOUT (60 s);
 *           HcclGetCommAsyncError is not HCCL_SUCCESS; a further AllReduce fails at
 *           once; its stderr has a WARN line naming rank 2; destroy < 5 s.
 * skip      4 ranks, HCCL_EXEC_TIMEOUT=3: after op #1, rank 1 does not call op #2 (it
 *           waits, alive, until the others have failed). Ranks 0, 2, 3 fail op #2
 *           after 3 s (not before 2.5 s, not after 8 s) with a WARN line naming op #2
 *           and saying, from rank 1's own answer to the STATUS question, "rank 1 never
 *           reached AllReduce #2 (idle; last completed: #1 AllReduce)". With --fr,
 *           rank 1 then calls HcclCommDumpFlightRecorder(comm, NULL) (for
 *           tests/fault/fr_check.py, which checks the dumps and the report).
 * p2p_timeout 3 ranks: after op #1, rank 0 (no timeout of its own) posts a Recv from
 *           rank 1 while ranks 1 and 2 (timeout 2 s) call op #2 AllReduce. Rank 0's Recv
 *           fails naming rank 1's timeout; rank 1 names rank 0 as "in a point-to-point
 *           call" (rank 0 answers its question before it fails), not as a rank that
 *           reached op #2. --case stalled: rank 2 times out first (1 s, rank 1 after
 *           4 s), and rank 0, which does not receive from it, answers its question from
 *           the waiting Recv. --case batch: rank 0 (timeout 1 s) posts a BatchSendRecv
 *           of 64 receives from each of ranks 1 and 2, which send nothing: it fails
 *           naming each once with its count ("receive from rank 1 (64 messages)").
 * stop      3 ranks, HCCL_EXEC_TIMEOUT=3: after op #1 rank 2 stops itself (SIGSTOP).
 *           Ranks 0, 1 fail op #2 after about 3 s naming rank 2 as silent ("rank 2: no
 *           answer"). Then the parent sends SIGCONT: rank 2's op #2 must fail within
 *           2 s (its peers gave up), not hang.
 * stop_heard 4 ranks over TCP, pairwise AlltoAll: rank 1 stops itself inside op #2 after
 *           its first block went out; rank 3, which received that block and then waits
 *           for the healthy rank 0, must still name rank 1 as silent (see the scenario).
 * giveup    2 ranks, HCCL_EXEC_TIMEOUT=3, AllReduces of 2 floats (through the shared
 *           slots): rank 0 enters op #2 at once, rank 1 only 4.5 s later, while rank
 *           0, timed out, is still writing its flight recorder dump (a FIFO that the
 *           parent reads only a second after rank 1 arrived: a slow dump directory)
 *           and has not aborted yet. Both slots of op #2 are then there, but rank 0
 *           has given up on it: rank 1's op #2 must fail too, naming rank 0's timeout,
 *           not return success while rank 0 fails it.
 * late      3 ranks, HCCL_DEBUG=TRACE: for AllReduces of 4 KiB, 256 KiB and 4 MiB (two
 *           each), rank 1 sleeps 0.4 s before every call while ranks 0 and 2 call at
 *           once. Whatever they send meanwhile is read ahead by rank 1's STATUS
 *           responder (up to 64 KiB per peer) and must reach the operation intact:
 *           every result is checked. Run also over TCP, where the payloads are read
 *           ahead (rank 1's log must say so), and with the reference algorithms.
 * mismatch  4 ranks, HCCL_EXEC_TIMEOUT=15; op #1 agrees, op #2 differs on rank 3:
 *           AllReduce vs AllGather, count 1024 vs 2048, fp32 vs int32, sum vs max (and
 *           at count 2, through the shared slots: AllReduce vs AllGather, 2 vs 4, sum
 *           vs max).
 *           Every rank's op #2 fails within 5 s, and its stderr has a line naming
 *           both calls; op #3 then fails at once. Broadcast root 1 on rank 3 vs root 0
 *           (the small broadcast's root sends and returns): rank 3's op #2 fails
 *           within 5 s, the others' op #2 may succeed but their op #3 fails at once,
 *           and every rank's stderr names op #2 and both calls. The same for a
 *           Broadcast of 1024 (eager) vs 262144 elements on rank 3 (direct: its first
 *           round waits in the shared slots, where rank 0's message must be found;
 *           the others sleep 5.5 s before op #3, so their next slot cannot show it).
 *           Broadcast root 0 on
 *           rank 3 vs root 3 (no rank acts as root), HCCL_EXEC_TIMEOUT=3: every
 *           rank's op #2 fails by the timeout, naming both calls. Broadcast root 3 on
 *           rank 3 vs root 0 (two roots): op #2 may pass everywhere, op #3 fails at once
 *           on every rank but rank 3 (where it may complete, correct), whose op #4
 *           then fails; every rank's stderr names op #2 and rank 3's call. Reduce root 1
 *           on rank 3 vs root 0, HCCL_EXEC_TIMEOUT=3 (the small Reduce is eager: rank
 *           3's input goes to rank 1): rank 0's op #2 fails by the timeout (at once
 *           when rank 3's op #3 goes over the shared slots: its slot shows it went
 *           past), naming rank 3 as gone past op #2 without sending to it, and every
 *           other rank's op #3 fails by then. count_small_after_slots: op #1 is small
 *           too, and ranks 0 and 3 come to it 50 ms late, so they fail op #2 while ranks
 *           1 and 2 still wake up to finish op #1: that op #1 must succeed everywhere.
 */
#include "fault.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int hccl_failed_fast(fault_ctx *c, fault_bufs *b, const char *after)
{
    double t0 = fault_now();
    int rc = fault_allreduce_check(c, b, 256, 1.0f);
    double dt = fault_now() - t0;
    FCHECK(c, rc != 0, "an AllReduce after %s succeeded", after);
    FCHECK(c, dt < 2.0, "an AllReduce after %s took %.2f s to fail (should be at once)", after, dt);
    /* Operations of 0 elements move nothing, but the communicator's failure is theirs
     * too (as NCCL's on a communicator in error): blocking, queued on a stream, and a
     * point-to-point one. */
    HcclResult z = HcclAllReduce(b->dev_send, b->dev_recv, 0, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c->comm, NULL);
    FCHECK(c, z != HCCL_SUCCESS, "a blocking AllReduce of 0 elements after %s succeeded", after);
    z = HcclAllGather(b->dev_send, b->dev_recv, 0, HCCL_DATA_TYPE_FP32, c->comm, c->stream);
    if (z == HCCL_SUCCESS) z = (HcclResult)aclrtSynchronizeStream(c->stream);
    FCHECK(c, z != HCCL_SUCCESS, "an AllGather of 0 elements on a stream after %s succeeded", after);
    z = HcclSend(b->dev_send, 0, HCCL_DATA_TYPE_FP32, (uint32_t)(c->rank + 1) % (uint32_t)c->nranks, c->comm, NULL);
    FCHECK(c, z != HCCL_SUCCESS, "a Send of 0 elements after %s succeeded", after);
    HcclResult a = HCCL_SUCCESS;
    FCHECK(c, HcclGetCommAsyncError(c->comm, &a) == HCCL_SUCCESS && (z == a || a == HCCL_SUCCESS),
           "a Send of 0 elements after %s returned %d, not the communicator's error %d", after, (int)z, (int)a);
    return rc;
}

/* ---- kill -9 of one rank mid-loop ---------------------------------------------------------- */

#define KILL_N 4
#define KILL_VICTIM 2
#define KILL_COUNT (64 * 1024)
#define KILL_AFTER 20

/* --case small: 2 floats instead (on one host these go through the shared slots). */
static uint64_t g_small;
static void read_small(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--case") && !strcmp(argv[i + 1], "small")) g_small = 2;
}
#define OP_COUNT(n) (g_small ? g_small : (uint64_t)(n))

static void kill_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, KILL_COUNT * 4, KILL_COUNT * 4) != 0) return;
    fault_rank_state *s = &g_sh->r[c->rank];
    double start = fault_now();
    int i, rc = 0;
    for (i = 0;; i++) {
        fault_step(c, "AllReduce iteration %d", i);
        rc = fault_allreduce_check(c, &b, OP_COUNT(KILL_COUNT), (float)(i % 64 + 1));
        if (rc) break;
        atomic_store(&s->iter, i + 1);
        if (fault_now() - start > 30) {
            fault_fail(c, "30 s of AllReduces without an error: the death of rank %d went unnoticed", KILL_VICTIM);
            break;
        }
    }
    if (rc) {
        double t_kill = g_sh->t_event;
        fault_step(c, "after the failure of iteration %d", i);
        if (t_kill <= 0) {
            fault_fail(c, "iteration %d failed (rc %d) before rank %d was killed", i, rc, KILL_VICTIM);
        } else {
            double dt = s->t_fail - t_kill;
            FCHECK(c, dt < 10.0, "the failure was reported %.2f s after the kill (limit 10 s)", dt);
            fprintf(stderr, "FAULT-TEST INFO: iteration %d failed %.3f s after the kill (rc %d, async error %d)\n", i,
                    dt, rc, s->async_rc);
        }
        FCHECK(c, s->async_rc != HCCL_SUCCESS, "HcclGetCommAsyncError gave HCCL_SUCCESS after the failure");
        hccl_failed_fast(c, &b, "the failure");
        HcclResult a = HCCL_SUCCESS;
        FCHECK(c, HcclGetCommAsyncError(c->comm, &a) == HCCL_SUCCESS && a != HCCL_SUCCESS,
               "HcclGetCommAsyncError does not report the failure (%d)", (int)a);
    }
    fault_bufs_free(&b);
}

static void kill_parent(fault_job *job, const pid_t *pids)
{
    double end = fault_now() + 20;
    for (;;) {
        int lo = 1 << 30;
        for (int r = 0; r < job->nranks; r++) {
            int it = atomic_load(&g_sh->r[r].iter);
            if (it < lo) lo = it;
        }
        if (lo >= KILL_AFTER) break;
        if (fault_now() > end) {
            fault_fail(NULL, "the ranks did not reach %d AllReduces within 20 s", KILL_AFTER);
            break;
        }
        usleep(500);
    }
    g_sh->t_event = fault_now();
    kill(pids[KILL_VICTIM], SIGKILL);
}

int scen_kill(int argc, char **argv)
{
    read_small(argc, argv);
    setenv("HCCL_EXEC_TIMEOUT", "60", 1);
    fault_job job = {.name = "kill", .nranks = KILL_N, .init = INIT_ROOTINFO, .body = kill_body,
                     .parent = kill_parent, .watchdog_s = 45, .killed_mask = 1u << KILL_VICTIM};
    fault_run(&job);
    char victim[16];
    snprintf(victim, sizeof victim, "rank %d", KILL_VICTIM);
    for (int r = 0; r < KILL_N; r++) {
        if (r == KILL_VICTIM) continue;
        FCHECK(NULL, fault_output_has(r, "WARN", victim, NULL),
               "rank %d printed no WARN line naming the killed %s", r, victim);
    }
    return 0;
}

/* ---- a rank skips a collective --------------------------------------------------------------- */

#define SKIP_N 4
#define SKIPPER 1
#define EXEC_TIMEOUT_S 3

typedef struct {
    int fr;
} skip_arg;

/* A survivor's op #2 must fail at the exec timeout, not before, not long after. */
static void expect_timeout_failure(fault_ctx *c, fault_bufs *b, float k, const char *what)
{
    int rc = fault_allreduce_check(c, b, OP_COUNT(1024), k);
    fault_rank_state *s = &g_sh->r[c->rank];
    if (!rc) {
        fault_fail(c, "op #2 succeeded although %s", what);
        return;
    }
    double dt = s->t_fail - s->t_op_start;
    FCHECK(c, dt >= EXEC_TIMEOUT_S - 0.5, "op #2 failed after %.2f s, before HCCL_EXEC_TIMEOUT=%d s (rc %d)", dt,
           EXEC_TIMEOUT_S, rc);
    FCHECK(c, dt <= EXEC_TIMEOUT_S + 5.0, "op #2 failed after %.2f s, long after HCCL_EXEC_TIMEOUT=%d s", dt,
           EXEC_TIMEOUT_S);
    FCHECK(c, s->async_rc == HCCL_E_TIMEOUT || s->async_rc == HCCL_E_REMOTE,
           "HcclGetCommAsyncError gave %d after the timeout (HCCL_E_TIMEOUT, or HCCL_E_REMOTE when a peer timed out "
           "first, expected)",
           s->async_rc);
    fprintf(stderr, "FAULT-TEST INFO: op #2 failed after %.3f s (rc %d, async error %d)\n", dt, rc, s->async_rc);
}

static void skip_body(fault_ctx *c)
{
    const skip_arg *a = c->arg;
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    fault_step(c, "op #1 AllReduce");
    if (fault_allreduce_check(c, &b, OP_COUNT(1024), 1.0f) != 0) {
        fault_fail(c, "op #1 (all ranks) failed");
        goto out;
    }
    if (c->rank == SKIPPER) {
        fault_step(c, "skipping op #2: waiting for the others to fail");
        if (!fault_wait_flag(1, SKIP_N - 1, 20))
            fault_fail(c, "the other ranks did not report their op #2 failure within 20 s");
        if (a && a->fr) {
            HcclResult rc = HcclCommDumpFlightRecorder(c->comm, NULL);
            FCHECK(c, rc == HCCL_SUCCESS, "HcclCommDumpFlightRecorder(comm, NULL) returned %d", (int)rc);
        }
    } else {
        fault_step(c, "op #2 AllReduce (rank %d skips it)", SKIPPER);
        expect_timeout_failure(c, &b, 2.0f, "rank 1 never called it");
        atomic_fetch_add(&g_sh->flag[1], 1);
        hccl_failed_fast(c, &b, "the timeout");
    }
out:
    fault_bufs_free(&b);
}

int scen_skip(int argc, char **argv)
{
    skip_arg a = {0};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--fr")) a.fr = 1;
    read_small(argc, argv);
    char t[16];
    snprintf(t, sizeof t, "%d", EXEC_TIMEOUT_S);
    setenv("HCCL_EXEC_TIMEOUT", t, 1);
    fault_job job = {.name = "skip", .nranks = SKIP_N, .init = INIT_ROOTINFO, .body = skip_body, .arg = &a,
                     .watchdog_s = 40};
    fault_run(&job);
    for (int r = 0; r < SKIP_N; r++) {
        if (r == SKIPPER) continue;
        FCHECK(NULL, fault_output_has(r, "WARN", "op #2", "rank 1", NULL),
               "rank %d printed no WARN line naming op #2 and rank %d, the rank that never called it", r, SKIPPER);
        /* Rank 1 was idle: its responder answered with its last completed collective. */
        FCHECK(NULL,
               fault_output_has(r, "WARN", "op #2", "rank 1 never reached AllReduce #2",
                                "idle; last completed: #1 AllReduce", NULL),
               "rank %d printed no WARN line saying that rank %d never reached AllReduce #2 and that its last "
               "completed collective is #1 AllReduce",
               r, SKIPPER);
    }
    return 0;
}

/* The timeout scenarios' start: join the 3-rank communicator with hcclExecTimeOut
 * timeout_s (0: none), allocate 4 KiB buffers and run a checked op #1 AllReduce.
 * 0 when all of it worked; otherwise the failure is recorded and b holds nothing. */
static int join_with_timeout(fault_ctx *c, uint32_t timeout_s, fault_bufs *b)
{
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    cfg.hcclExecTimeOut = timeout_s;
    fault_step(c, "HcclCommInitRootInfoConfig(hcclExecTimeOut %d)", (int)cfg.hcclExecTimeOut);
    HcclResult rc = HcclCommInitRootInfoConfig(3, &g_sh->root, (uint32_t)c->rank, &cfg, &c->comm);
    FCHECK(c, rc == HCCL_SUCCESS, "HcclCommInitRootInfoConfig returned %d", (int)rc);
    if (rc != HCCL_SUCCESS || fault_bufs_alloc(c, b, 4096, 4096) != 0) return -1;
    fault_step(c, "op #1 AllReduce");
    FCHECK(c, fault_allreduce_check(c, b, 1024, 1.0f) == 0, "op #1 (all ranks) failed");
    return 0;
}

/* 3 ranks, rank 2 skips op #2; rank 0 has no execution timeout of its own
 * (hcclExecTimeOut 0), the others 2 s. Rank 0 fails when rank 1's status question
 * reaches it, and must say the timeout was rank 1's, not its own. */
static void peer_timeout_body(fault_ctx *c)
{
    fault_bufs b;
    if (join_with_timeout(c, c->rank == 0 ? 0 : 2, &b) != 0) return;
    HcclResult rc;
    if (c->rank == 2) {
        fault_step(c, "skipping op #2: waiting for the others to fail");
        FCHECK(c, fault_wait_flag(1, 2, 20), "the other ranks did not report their op #2 failure within 20 s");
    } else {
        fault_step(c, "op #2 AllReduce (rank 2 skips it)");
        rc = HcclAllReduce(b.dev_send, b.dev_recv, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c->comm, NULL);
        FCHECK(c, rc == HCCL_E_TIMEOUT || rc == HCCL_E_REMOTE, "op #2 returned %d, not a timeout", (int)rc);
        atomic_fetch_add(&g_sh->flag[1], 1);
    }
    fault_bufs_free(&b);
}

int scen_peer_timeout(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (HcclGetRootInfo(&g_sh->root) != HCCL_SUCCESS) {
        fault_fail(NULL, "HcclGetRootInfo failed");
        return 0;
    }
    fault_job job = {.name = "peer_timeout", .nranks = 3, .init = INIT_NONE, .body = peer_timeout_body,
                     .watchdog_s = 40};
    fault_run(&job);
    FCHECK(NULL, fault_output_has(0, "WARN", "op #2", "rank 1's HCCL_EXEC_TIMEOUT", "rank 2 never reached", NULL),
           "rank 0 (no timeout of its own) printed no WARN line giving the timeout as rank 1's and naming rank 2");
    FCHECK(NULL, !fault_output_has(0, "WARN", "timed out (HCCL_EXEC_TIMEOUT) on rank 0", NULL),
           "rank 0, with no timeout of its own, reported a timeout as its own");
    FCHECK(NULL, fault_output_has(1, "WARN", "op #2", "timed out (HCCL_EXEC_TIMEOUT) on rank 1", NULL),
           "rank 1 printed no WARN line with its own timeout");
    return 0;
}

/* 3 ranks; after op #1, rank 0 posts a Recv from rank 1, ranks 1 and 2 op #2 AllReduce.
 * Rank 0 has no execution timeout of its own (hcclExecTimeOut 0). asked (default):
 * ranks 1 and 2 time out after 2 s; rank 0 fails when rank 1's status question
 * reaches its Recv, says the timeout was rank 1's, and answers the question first, so
 * rank 1 reports rank 0 as in a point-to-point call, not as a rank that reached op
 * #2. --case stalled: rank 2 times out first (1 s; rank 1 after 4 s); rank 0, which
 * does not receive from it, answers its question from inside the stalled Recv.
 * --case stalled_none: the same, but rank 1 has no timeout either: waiting for rank 0,
 * it must learn of rank 2's failure and fail, not wait forever: from the ABORT frame on
 * rank 2's liveness connection (shared memory), or from the question or ABORT frame
 * behind the data rank 2 had already sent it (TCP: one connection). */
static int g_p2p_stalled;

#define P2P_BATCH_ITEMS 64 /* per peer */

/* --case batch: rank 0 (timeout 1 s) posts one BatchSendRecv of 4-byte receives,
 * alternately from ranks 1 and 2, which never send: its failure names each peer once
 * with the count of messages it waits for, not the first items over and over. */
static void p2p_timeout_batch(fault_ctx *c, fault_bufs *b)
{
    if (c->rank != 0) {
        fault_step(c, "idle: waiting for rank 0's BatchSendRecv to fail");
        FCHECK(c, fault_wait_flag(1, 1, 20), "rank 0 did not report its BatchSendRecv failure within 20 s");
        return;
    }
    HcclSendRecvItem it[2 * P2P_BATCH_ITEMS];
    for (int i = 0; i < 2 * P2P_BATCH_ITEMS; i++)
        it[i] = (HcclSendRecvItem){HCCL_RECV, (char *)b->dev_recv + 4 * i, 1, HCCL_DATA_TYPE_FP32, 1 + (uint32_t)i % 2};
    fault_step(c, "BatchSendRecv of %d receives from ranks 1 and 2 (which send nothing)", 2 * P2P_BATCH_ITEMS);
    HcclResult rc = HcclBatchSendRecv(it, 2 * P2P_BATCH_ITEMS, c->comm, NULL);
    FCHECK(c, rc == HCCL_E_TIMEOUT, "the BatchSendRecv returned %d, not a timeout", (int)rc);
    atomic_fetch_add(&g_sh->flag[1], 1);
}

/* --case unreceived (over TCP): rank 0 sends rank 2 a message rank 2 never receives,
 * then every rank calls op #2 Barrier (rank 2 hears from every rank in it): rank 2
 * finds the message first and must say that rank 0 sent it, not that rank 0 called a
 * point-to-point transfer at op #2. */
static void p2p_unreceived(fault_ctx *c, fault_bufs *b)
{
    if (c->rank == 0) {
        fault_step(c, "Send of 16 bytes to rank 2 (which never receives it)");
        FCHECK(c, HcclSend(b->dev_send, 4, HCCL_DATA_TYPE_FP32, 2, c->comm, NULL) == HCCL_SUCCESS,
               "the eager Send failed");
    }
    fault_step(c, "op #2 Barrier");
    HcclResult rc = HcclBarrier(c->comm, NULL);
    FCHECK(c, rc != HCCL_SUCCESS || c->rank != 2, "op #2 succeeded although rank 2 did not receive rank 0's message");
}

static void p2p_timeout_body(fault_ctx *c)
{
    fault_bufs b;
    if (g_p2p_stalled == 4) {
        if (join_with_timeout(c, 10, &b) != 0) return;
        p2p_unreceived(c, &b);
        fault_bufs_free(&b);
        return;
    }
    if (g_p2p_stalled == 3) {
        if (join_with_timeout(c, c->rank == 0 ? 1 : 0, &b) != 0) return;
        p2p_timeout_batch(c, &b);
        fault_bufs_free(&b);
        return;
    }
    if (join_with_timeout(c, c->rank == 0 ? 0 : g_p2p_stalled ? (c->rank == 2 ? 1 : g_p2p_stalled == 2 ? 0 : 4) : 2,
                          &b) != 0)
        return;
    HcclResult rc;
    if (c->rank == 0) {
        fault_step(c, "Recv from rank 1 (which is in op #2)");
        rc = HcclRecv(b.dev_recv, 1024, HCCL_DATA_TYPE_FP32, 1, c->comm, NULL);
        FCHECK(c, g_p2p_stalled ? rc != HCCL_SUCCESS : rc == HCCL_E_TIMEOUT, "the Recv returned %d", (int)rc);
    } else {
        fault_step(c, "op #2 AllReduce (rank 0 is in a Recv)");
        rc = HcclAllReduce(b.dev_send, b.dev_recv, 1024, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c->comm, NULL);
        FCHECK(c, rc == HCCL_E_TIMEOUT || rc == HCCL_E_REMOTE, "op #2 returned %d, not a timeout", (int)rc);
    }
    fault_bufs_free(&b);
}

int scen_p2p_timeout(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--case"))
            g_p2p_stalled = !strcmp(argv[i + 1], "stalled")        ? 1
                            : !strcmp(argv[i + 1], "stalled_none") ? 2
                            : !strcmp(argv[i + 1], "batch")        ? 3
                            : !strcmp(argv[i + 1], "unreceived")   ? 4
                                                                   : 0;
    if (HcclGetRootInfo(&g_sh->root) != HCCL_SUCCESS) {
        fault_fail(NULL, "HcclGetRootInfo failed");
        return 0;
    }
    fault_job job = {.name = "p2p_timeout", .nranks = 3, .init = INIT_NONE, .body = p2p_timeout_body,
                     .watchdog_s = 40};
    fault_run(&job);
    if (g_p2p_stalled == 4) {
        FCHECK(NULL,
               fault_output_has(2, "WARN", "op #2", "rank 0", "sent it a point-to-point message of 16 bytes first",
                                NULL),
               "rank 2 printed no WARN line saying that rank 0 sent it a point-to-point message it never received");
        FCHECK(NULL, !fault_output_has(2, "WARN", "rank 0 called point-to-point", NULL),
               "rank 2 said that rank 0 called a point-to-point transfer at op #2 (it called the Barrier)");
        return 0;
    }
    if (g_p2p_stalled == 3) {
        FCHECK(NULL,
               fault_output_has(0, "WARN", "point-to-point transfer timed out (HCCL_EXEC_TIMEOUT) on rank 0",
                                "waiting for: receive from rank 1 (64 messages), receive from rank 2 (64 messages) "
                                "(the peer did not post",
                                NULL),
               "rank 0 printed no WARN line naming ranks 1 and 2 once each with their 64 messages");
        return 0;
    }
    const int asker = g_p2p_stalled ? 2 : 1;
    if (!g_p2p_stalled)
        FCHECK(NULL, fault_output_has(0, "WARN", "point-to-point transfer", "rank 1's HCCL_EXEC_TIMEOUT", NULL),
               "rank 0 (no timeout of its own) printed no WARN line giving its Recv's timeout as rank 1's");
    FCHECK(NULL,
           fault_output_has(asker, "WARN", "op #2", "rank 0 never reached AllReduce #2 (in a point-to-point call",
                            NULL),
           "rank %d printed no WARN line saying that rank 0 never reached op #2 and is in a point-to-point call",
           asker);
    FCHECK(NULL, !fault_output_has(asker, "WARN", "every rank reached", NULL),
           "rank %d reported that every rank reached op #2 although rank 0 was in a Recv", asker);
    if (g_p2p_stalled == 2) /* rank 1 has no timeout: rank 2's question or ABORT ends its wait */
        FCHECK(NULL,
               fault_output_has(1, "WARN", "op #2", "rank 2 aborted", NULL) ||
                   fault_output_has(1, "WARN", "op #2", "rank 2's HCCL_EXEC_TIMEOUT", NULL),
               "rank 1 (no timeout of its own, waiting for rank 0) printed no WARN line naming rank 2's failure");
    return 0;
}

/* ---- SIGSTOP of a rank ---------------------------------------------------------------------------- */

#define STOP_N 3
#define STOP_VICTIM 2

static void stop_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    fault_step(c, "op #1 AllReduce");
    if (fault_allreduce_check(c, &b, OP_COUNT(1024), 1.0f) != 0) {
        fault_fail(c, "op #1 (all ranks) failed");
        goto out;
    }
    if (c->rank == STOP_VICTIM) {
        fault_step(c, "stopping itself");
        raise(SIGSTOP);
        fault_step(c, "op #2 after SIGCONT");
        double t0 = fault_now();
        int rc = fault_allreduce_check(c, &b, OP_COUNT(1024), 2.0f);
        double dt = fault_now() - t0;
        FCHECK(c, rc != 0, "op #2 succeeded on the resumed rank although its peers gave up on it");
        FCHECK(c, dt < 2.0, "op #2 of the resumed rank took %.2f s to fail (its peers had aborted)", dt);
        HcclResult a = HCCL_SUCCESS;
        HcclGetCommAsyncError(c->comm, &a);
        FCHECK(c, a != HCCL_SUCCESS, "HcclGetCommAsyncError of the resumed rank gave HCCL_SUCCESS after the failure");
    } else {
        fault_step(c, "op #2 AllReduce (rank %d is stopped)", STOP_VICTIM);
        expect_timeout_failure(c, &b, 2.0f, "rank 2 is stopped");
        atomic_fetch_add(&g_sh->flag[1], 1);
    }
out:
    fault_bufs_free(&b);
}

/* Waits until the victim has stopped, then until the others have failed (flag[1]
 * reaches survivors), then resumes it. */
static void stop_resume(const pid_t *pids, int victim, int survivors)
{
    pid_t v = pids[victim];
    double end = fault_now() + 20;
    int st = 0, stopped = 0;
    while (fault_now() < end) {
        pid_t p = waitpid(v, &st, WNOHANG | WUNTRACED);
        if (p == v && WIFSTOPPED(st)) {
            stopped = 1;
            break;
        }
        if (p == v) break; /* exited: the harness reports it */
        usleep(1000);
    }
    if (!stopped) {
        fault_fail(NULL, "rank %d never stopped", victim);
        kill(v, SIGKILL);
        return;
    }
    g_sh->t_event = fault_now();
    if (!fault_wait_flag(1, survivors, 20)) fault_fail(NULL, "the running ranks did not fail within 20 s");
    kill(v, SIGCONT);
}

static void stop_parent(fault_job *job, const pid_t *pids)
{
    (void)job;
    stop_resume(pids, STOP_VICTIM, STOP_N - 1);
}

int scen_stop(int argc, char **argv)
{
    read_small(argc, argv);
    char t[16];
    snprintf(t, sizeof t, "%d", EXEC_TIMEOUT_S);
    setenv("HCCL_EXEC_TIMEOUT", t, 1);
    fault_job job = {.name = "stop", .nranks = STOP_N, .init = INIT_ROOTINFO, .body = stop_body,
                     .parent = stop_parent, .watchdog_s = 40};
    fault_run(&job);
    for (int r = 0; r < STOP_N; r++) {
        if (r == STOP_VICTIM) continue;
        FCHECK(NULL, fault_output_has(r, "WARN", "op #2", "rank 2", NULL),
               "rank %d printed no WARN line naming op #2 and the stopped rank 2", r);
        FCHECK(NULL, fault_output_has(r, "WARN", "op #2", "rank 2: no answer", NULL),
               "rank %d printed no WARN line saying that the stopped rank 2 did not answer", r);
    }
    FCHECK(NULL, fault_output_has(STOP_VICTIM, "WARN", "op #2", NULL),
           "the resumed rank 2 printed no WARN line about its failed op #2");
    return 0;
}

/* ---- a rank that stops inside an operation after its first messages ------------------------------- */

/* 4 ranks, TCP, the reference (pairwise) AlltoAll: round k pairs r with (k - r) mod 4,
 * so rank 1 exchanges with 3 in round 0, with 0 in round 1, with 2 in round 3. Rank 1
 * runs op #2 on its stream and stops itself inside it, its round-0 block sent, its
 * round-1 block not; rank 3 calls op #2 0.6 s late. Rank 3 then receives rank 1's
 * block (it heard rank 1 in op #2) and waits in round 3 for rank 0, which waits for
 * rank 1 in round 1. Every survivor must name rank 1 as silent, rank 3 too (it used to
 * count a rank heard from in the operation as fine and report "every rank reached op
 * #2; those are stuck in it", waiting for the healthy rank 0). */
#define STOPH_N 4
#define STOPH_VICTIM 1
#define STOPH_COUNT 256

static int stoph_alltoall(fault_ctx *c, fault_bufs *b, int sync)
{
    double t0 = fault_now();
    HcclResult hr = HcclAlltoAll(b->dev_send, STOPH_COUNT, HCCL_DATA_TYPE_FP32, b->dev_recv, STOPH_COUNT,
                                 HCCL_DATA_TYPE_FP32, c->comm, c->stream);
    int rc = hr != HCCL_SUCCESS ? (int)hr : sync ? (int)aclrtSynchronizeStream(c->stream) : 0;
    if (rc) fault_note_failure(c, t0, rc);
    return rc;
}

static void stop_heard_body(fault_ctx *c)
{
    fault_bufs b;
    size_t bytes = (size_t)STOPH_N * STOPH_COUNT * sizeof(float);
    if (fault_bufs_alloc(c, &b, bytes, bytes) != 0) return;
    fault_step(c, "op #1 AlltoAll");
    if (stoph_alltoall(c, &b, 1) != 0) {
        fault_fail(c, "op #1 (all ranks) failed");
        goto out;
    }
    if (c->rank == STOPH_VICTIM) {
        fault_step(c, "op #2 AlltoAll on the stream, then stopping itself inside it");
        FCHECK(c, stoph_alltoall(c, &b, 0) == 0, "op #2 could not be launched");
        usleep(300 * 1000); /* the stream's worker sends the round-0 block, then waits for rank 3 */
        raise(SIGSTOP);
        fault_step(c, "op #2 after SIGCONT");
        double t0 = fault_now();
        aclError e = aclrtSynchronizeStream(c->stream);
        FCHECK(c, e != ACL_SUCCESS, "op #2 succeeded on the resumed rank although its peers gave up on it");
        FCHECK(c, fault_now() - t0 < 2.0, "op #2 of the resumed rank took %.2f s to fail", fault_now() - t0);
    } else {
        if (c->rank == 3) usleep(600 * 1000);
        fault_step(c, "op #2 AlltoAll (rank %d is stopped inside it)", STOPH_VICTIM);
        fault_rank_state *s = &g_sh->r[c->rank];
        int rc = stoph_alltoall(c, &b, 1);
        FCHECK(c, rc != 0, "op #2 succeeded although rank %d is stopped", STOPH_VICTIM);
        double dt = s->t_fail - s->t_op_start;
        if (rc) FCHECK(c, dt <= EXEC_TIMEOUT_S + 5.0, "op #2 failed after %.2f s, long after HCCL_EXEC_TIMEOUT", dt);
        atomic_fetch_add(&g_sh->flag[1], 1);
    }
out:
    fault_bufs_free(&b);
}

static void stop_heard_parent(fault_job *job, const pid_t *pids)
{
    (void)job;
    stop_resume(pids, STOPH_VICTIM, STOPH_N - 1);
}

int scen_stop_heard(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char t[16];
    snprintf(t, sizeof t, "%d", EXEC_TIMEOUT_S);
    setenv("HCCL_EXEC_TIMEOUT", t, 1);
    setenv("HCCL_SHM_DISABLE", "1", 1);
    setenv("HCCL_REFERENCE_ALGOS", "1", 1);
    fault_job job = {.name = "stop_heard", .nranks = STOPH_N, .init = INIT_ROOTINFO, .body = stop_heard_body,
                     .parent = stop_heard_parent, .watchdog_s = 40};
    fault_run(&job);
    for (int r = 0; r < STOPH_N; r++) {
        if (r == STOPH_VICTIM) continue;
        FCHECK(NULL, fault_output_has(r, "WARN", "op #2", "rank 1: no answer", NULL),
               "rank %d printed no WARN line saying that the stopped rank %d did not answer", r, STOPH_VICTIM);
    }
    return 0;
}

/* ---- a rank that completes a slot round its timed-out peer is giving up on ---------------------- */

#define GIVEUP_N 2
#define GIVEUP_LATE 1

static char g_giveup_fifo[600];

static void giveup_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    fault_step(c, "op #1 AllReduce");
    if (fault_allreduce_check(c, &b, 2, 1.0f) != 0) {
        fault_fail(c, "op #1 (all ranks) failed");
        goto out;
    }
    if (c->rank == 0) { /* its failure dump (before it aborts) blocks until the parent reads it */
        char name[128] = "";
        HcclGetCommName(c->comm, name);
        snprintf(g_giveup_fifo, sizeof g_giveup_fifo, "%s/hccl_fr_%s_r0_p%d.json", g_sh->dir, name, (int)getpid());
        FCHECK(c, mkfifo(g_giveup_fifo, 0600) == 0, "mkfifo %s failed", g_giveup_fifo);
        memcpy(g_sh->fifo, g_giveup_fifo, sizeof g_sh->fifo);
    } else {
        usleep((EXEC_TIMEOUT_S * 1000 + 1500) * 1000); /* well past rank 0's timeout, even on a loaded machine */
        atomic_store(&g_sh->flag[2], 1);
    }
    fault_step(c, "op #2 AllReduce");
    double t0 = fault_now();
    int rc = fault_allreduce_check(c, &b, 2, 2.0f);
    FCHECK(c, rc != 0, "op #2 succeeded on rank %d, but rank 0 timed out (HCCL_EXEC_TIMEOUT) and fails it", c->rank);
    FCHECK(c, fault_now() - t0 < EXEC_TIMEOUT_S + 8.0, "op #2 took %.2f s to fail", fault_now() - t0);
out:
    fault_bufs_free(&b);
}

static void giveup_parent(fault_job *job, const pid_t *pids)
{
    (void)job;
    (void)pids;
    if (!fault_wait_flag(2, 1, 25)) fault_fail(NULL, "rank 1 did not reach op #2 within 25 s");
    usleep(1000000);
    int fd = g_sh->fifo[0] ? open(g_sh->fifo, O_RDONLY | O_NONBLOCK) : -1;
    if (fd < 0) {
        fault_fail(NULL, "cannot open rank 0's flight recorder FIFO %s", g_sh->fifo);
        return;
    }
    char buf[4096];
    double end = fault_now() + 20;
    int opened = 0;
    while (fault_now() < end) { /* until rank 0 opened it, wrote its dump and closed it */
        ssize_t k = read(fd, buf, sizeof buf);
        if (k > 0) opened = 1;
        else if (k == 0 && opened) break;
        else usleep(1000);
    }
    close(fd);
}

int scen_giveup(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char t[16];
    snprintf(t, sizeof t, "%d", EXEC_TIMEOUT_S);
    setenv("HCCL_EXEC_TIMEOUT", t, 1);
    setenv("HCCL_FLIGHT_RECORDER_DIR", g_sh->dir, 1);
    fault_job job = {.name = "giveup", .nranks = GIVEUP_N, .init = INIT_ROOTINFO, .body = giveup_body,
                     .parent = giveup_parent, .watchdog_s = 40};
    fault_run(&job);
    FCHECK(NULL, fault_output_has(0, "WARN", "op #2", "timed out", NULL),
           "rank 0 printed no WARN line saying that op #2 timed out");
    FCHECK(NULL, fault_output_has(GIVEUP_LATE, "WARN", "op #2", "rank 0", "timed out", NULL),
           "rank 1 printed no WARN line saying that rank 0 timed out in op #2");
    return 0;
}

/* ---- a rank that is always late: read-ahead between operations ----------------------------------- */

#define LATE_N 3
#define LATE_RANK 1
#define LATE_SLEEP_US 400000

static void late_body(fault_ctx *c)
{
    static const uint64_t counts[] = {1024, 64 * 1024, 1024 * 1024};
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4u << 20, 4u << 20) != 0) return;
    int op = 0;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (int rep = 0; rep < 2; rep++) {
            op++;
            if (c->rank == LATE_RANK) usleep(LATE_SLEEP_US);
            fault_step(c, "op #%d AllReduce of %llu floats (rank %d late)", op, (unsigned long long)counts[i],
                       LATE_RANK);
            int rc = fault_allreduce_check(c, &b, counts[i], (float)op);
            if (rc) {
                fault_fail(c, "op #%d (AllReduce of %llu floats) failed (rc %d)", op, (unsigned long long)counts[i],
                           rc);
                goto out;
            }
        }
out:
    fault_bufs_free(&b);
}

int scen_late(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setenv("HCCL_DEBUG", "TRACE", 1);
    fault_job job = {.name = "late", .nranks = LATE_N, .init = INIT_ROOTINFO, .body = late_body, .watchdog_s = 40};
    fault_run(&job);
    const char *shm = getenv("HCCL_SHM_DISABLE");
    if (shm && !strcmp(shm, "1"))
        FCHECK(NULL, fault_output_has(LATE_RANK, "TRACE", "between operations, read", NULL),
               "over TCP, rank %d's responder read nothing ahead while the others waited for it", LATE_RANK);
    return 0;
}

/* ---- mismatched collectives --------------------------------------------------------------------- */

#define MM_N 4
#define MM_ODD 3
#define MM_COUNT 1024

typedef enum {
    MM_ALLGATHER,
    MM_COUNT_DIFF,
    MM_DTYPE,
    MM_REDOP,
    MM_ROOT,
    MM_ROOT_NONE,
    MM_ROOT_EXTRA,
    MM_REDUCE_ROOT,
    MM_BCAST_COUNT,
    MM_A2AV_COUNTS,
    MM_A2AV_ZERO_SENT,
    MM_A2AV_ZERO_EXPECTED,
    MM_AGV_COUNTS,
    MM_AGV_SAME_SUM,
    MM_RSV_COUNTS
} mm_kind;

typedef struct {
    mm_kind kind;
    const char *name;
    const char *normal_call; /* as the library prints it */
    const char *odd_call;
    int timeout_s; /* 0: the mismatch must fail op #2 within 5 s; else HCCL_EXEC_TIMEOUT, op #2 fails then */
    uint64_t count; /* op #2's count (the odd rank's AllReduce: twice it); 0: MM_COUNT */
    /* 1: op #1 is as small (the shared slots) and ranks 0 and 3 come to it 50 ms after
     * ranks 1 and 2, which sleep meanwhile: 0 and 3 finish op #1 at once and fail op #2
     * while 1 and 2 still wake up to finish op #1, which must not fail (the ABORT of a
     * later collective does not fail it). Run MM_AFTER_SLOTS_RUNS times. */
    int after_slots;
} mm_case;

#define MM_AFTER_SLOTS_RUNS 6

static const mm_case mm_cases[] = {
    {MM_ALLGATHER, "allreduce_vs_allgather", "AllReduce(count=1024, fp32, sum)", "AllGather(count=1024, fp32)",
     0, 0, 0},
    {MM_COUNT_DIFF, "count", "AllReduce(count=1024, fp32, sum)", "AllReduce(count=2048, fp32, sum)", 0, 0, 0},
    {MM_DTYPE, "dtype", "AllReduce(count=1024, fp32, sum)", "AllReduce(count=1024, int32, sum)", 0, 0, 0},
    {MM_REDOP, "redop", "AllReduce(count=1024, fp32, sum)", "AllReduce(count=1024, fp32, max)", 0, 0, 0},
    {MM_ROOT, "root", "Broadcast(count=1024, fp32, root=0)", "Broadcast(count=1024, fp32, root=1)", 0, 0, 0},
    {MM_ROOT_NONE, "root_none", "Broadcast(count=1024, fp32, root=3)", "Broadcast(count=1024, fp32, root=0)", 3, 0, 0},
    {MM_ROOT_EXTRA, "root_extra", "Broadcast(count=1024, fp32, root=0)", "Broadcast(count=1024, fp32, root=3)",
     0, 0, 0},
    {MM_REDUCE_ROOT, "reduce_root", "Reduce(count=1024, fp32, sum, root=0)", "Reduce(count=1024, fp32, sum, root=1)",
     3, 0, 0},
    /* Broadcast whose count differs on rank 3 alone: the others' is eager (rank 0
     * sends and returns), rank 3's takes the direct algorithm, whose first round is
     * in the shared slots on one host: rank 3 must find rank 0's message there
     * instead of waiting for a slot rank 0 never posts until HCCL_EXEC_TIMEOUT. */
    {MM_BCAST_COUNT, "bcast_count", "Broadcast(count=1024, fp32, root=0)", "Broadcast(count=262144, fp32, root=0)", 0,
     262144, 0},
    /* Small: on one host every rank goes through the shared slots, where the
     * fingerprints in the slots must find the disagreement. */
    {MM_ALLGATHER, "allreduce_vs_allgather_small", "AllReduce(count=2, fp32, sum)", "AllGather(count=2, fp32)",
     0, 2, 0},
    {MM_COUNT_DIFF, "count_small", "AllReduce(count=2, fp32, sum)", "AllReduce(count=4, fp32, sum)", 0, 2, 0},
    {MM_REDOP, "redop_small", "AllReduce(count=2, fp32, sum)", "AllReduce(count=2, fp32, max)", 0, 2, 0},
    {MM_COUNT_DIFF, "count_small_after_slots", "AllReduce(count=2, fp32, sum)", "AllReduce(count=4, fp32, sum)", 0, 2,
     1},
    /* AlltoAllV whose counts disagree: rank 3 expects twice what rank 0 sends it (the
     * calls look the same; the report names the counts). */
    {MM_A2AV_COUNTS, "alltoallv_counts", "rank 0 sends 256 bytes to rank 3", "which expects 512 from it", 0, 64, 0},
    /* The same where one side's block is empty: rank 0 sends rank 3 nothing where rank
     * 3 expects 256 bytes, or 256 bytes where rank 3 expects none. The direct copies
     * say `rank 0 sends 0 bytes to rank 3, which expects 256 from it`, TCP `rank 3
     * expects 256 bytes from rank 0, which sent 0`; over TCP an empty block used to
     * send nothing, so the surplus surfaced at op #3 as a skipped collective. */
    {MM_A2AV_ZERO_SENT, "alltoallv_zero_sent", "expects 256", "rank 0", 0, 64, 0},
    {MM_A2AV_ZERO_EXPECTED, "alltoallv_zero_expected", "expects 0", "256", 0, 64, 0},
    /* AllGatherV and ReduceScatterV, whose count arrays every rank must share, with
     * rank 3's different, at a size that takes the direct copies on one host and the
     * pipelined ring over TCP: rank 3 expects twice rank 0's block (ReduceScatterV:
     * every rank's block for it); then the same sum, rank 1's block given to rank 0.
     * The digests are FNV-1a of the arrays (net.c). */
    {MM_AGV_COUNTS, "allgatherv_counts", "AllGatherV(recvCounts=262144 in all", "AllGatherV(recvCounts=327680 in all",
     0, 65536, 0},
    {MM_AGV_SAME_SUM, "allgatherv_counts_same_sum", "AllGatherV(recvCounts=262144 in all (digest 905a5005)",
     "AllGatherV(recvCounts=262144 in all (digest 52faaad7)", 0, 65536, 0},
    {MM_RSV_COUNTS, "reducescatterv_counts", "ReduceScatterV(sendCounts=262144 in all",
     "ReduceScatterV(sendCounts=327680 in all", 0, 65536, 0},
};

static void mm_body(fault_ctx *c)
{
    const mm_case *mc = c->arg;
    fault_bufs b;
    const size_t vbytes = (size_t)2 * MM_N * mc->count * 4; /* the V cases: 2 x cnt per rank */
    if (fault_bufs_alloc(c, &b, vbytes > MM_COUNT * 2 * 4 ? vbytes : MM_COUNT * 2 * 4,
                         vbytes > MM_COUNT * MM_N * 4 ? vbytes : MM_COUNT * MM_N * 4) != 0)
        return;
    fault_step(c, "op #1 AllReduce");
    if (mc->after_slots && (c->rank == 0 || c->rank == MM_ODD)) usleep(50000);
    if (fault_allreduce_check(c, &b, mc->after_slots ? mc->count : MM_COUNT, 1.0f) != 0) {
        fault_fail(c, "op #1 (all ranks agree) failed");
        goto out;
    }
    int odd = c->rank == MM_ODD;
    const uint64_t cnt = mc->count ? mc->count : MM_COUNT;
    fault_step(c, "op #2 (%s)", odd ? mc->odd_call : mc->normal_call);
    double t0 = fault_now();
    HcclResult hr;
    switch (mc->kind) {
    case MM_ALLGATHER:
        hr = odd ? HcclAllGather(b.dev_send, b.dev_recv, cnt, HCCL_DATA_TYPE_FP32, c->comm, c->stream)
                 : HcclAllReduce(b.dev_send, b.dev_recv, cnt, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c->comm, c->stream);
        break;
    case MM_COUNT_DIFF:
        hr = HcclAllReduce(b.dev_send, b.dev_recv, odd ? 2 * cnt : cnt, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c->comm,
                           c->stream);
        break;
    case MM_DTYPE:
        hr = HcclAllReduce(b.dev_send, b.dev_recv, MM_COUNT, odd ? HCCL_DATA_TYPE_INT32 : HCCL_DATA_TYPE_FP32,
                           HCCL_REDUCE_SUM, c->comm, c->stream);
        break;
    case MM_REDOP:
        hr = HcclAllReduce(b.dev_send, b.dev_recv, cnt, HCCL_DATA_TYPE_FP32, odd ? HCCL_REDUCE_MAX : HCCL_REDUCE_SUM,
                           c->comm, c->stream);
        break;
    case MM_ROOT:
        hr = HcclBroadcast(b.dev_recv, MM_COUNT, HCCL_DATA_TYPE_FP32, odd ? 1 : 0, c->comm, c->stream);
        break;
    case MM_ROOT_EXTRA:
        hr = HcclBroadcast(b.dev_recv, MM_COUNT, HCCL_DATA_TYPE_FP32, odd ? MM_ODD : 0, c->comm, c->stream);
        break;
    case MM_BCAST_COUNT:
        hr = HcclBroadcast(b.dev_recv, odd ? cnt : MM_COUNT, HCCL_DATA_TYPE_FP32, 0, c->comm, c->stream);
        break;
    case MM_REDUCE_ROOT:
        hr = HcclReduce(b.dev_send, b.dev_recv, MM_COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, odd ? 1 : 0, c->comm,
                        c->stream);
        break;
    case MM_A2AV_COUNTS:
    case MM_A2AV_ZERO_SENT:
    case MM_A2AV_ZERO_EXPECTED: {
        uint64_t sc[MM_N], sd[MM_N], rc[MM_N], rd[MM_N];
        for (int j = 0; j < MM_N; j++) {
            sc[j] = rc[j] = cnt;
            sd[j] = (uint64_t)j * cnt;
            rd[j] = (uint64_t)j * 2 * cnt;
        }
        if (odd && mc->kind == MM_A2AV_COUNTS) rc[0] = 2 * cnt;
        if (c->rank == 0 && mc->kind == MM_A2AV_ZERO_SENT) sc[MM_ODD] = 0;
        if (odd && mc->kind == MM_A2AV_ZERO_EXPECTED) rc[0] = 0;
        hr = HcclAlltoAllV(b.dev_send, sc, sd, HCCL_DATA_TYPE_FP32, b.dev_recv, rc, rd, HCCL_DATA_TYPE_FP32, c->comm,
                           c->stream);
        break;
    }
    case MM_AGV_COUNTS:
    case MM_AGV_SAME_SUM:
    case MM_RSV_COUNTS: {
        uint64_t vc[MM_N], vd[MM_N];
        for (int j = 0; j < MM_N; j++) {
            vc[j] = cnt;
            vd[j] = (uint64_t)j * 2 * cnt;
        }
        if (odd) vc[mc->kind == MM_RSV_COUNTS ? MM_ODD : 0] = 2 * cnt;
        if (odd && mc->kind == MM_AGV_SAME_SUM) vc[1] = 0;
        if (mc->kind != MM_RSV_COUNTS)
            hr = HcclAllGatherV(b.dev_send, cnt, b.dev_recv, vc, vd, HCCL_DATA_TYPE_FP32, c->comm, c->stream);
        else
            hr = HcclReduceScatterV(b.dev_send, vc, vd, b.dev_recv, vc[c->rank], HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                                    c->comm, c->stream);
        break;
    }
    default:
        hr = HcclBroadcast(b.dev_recv, MM_COUNT, HCCL_DATA_TYPE_FP32, odd ? 0 : MM_ODD, c->comm, c->stream);
        break;
    }
    int rc = (int)hr;
    if (hr == HCCL_SUCCESS) rc = (int)aclrtSynchronizeStream(c->stream);
    double dt = fault_now() - t0;
    /* Rank 0 acted as root and ranks 1-2 received its data: they learn at op #3. With
     * an extra root (rank 3 too), every rank may pass op #2. */
    int may_pass = ((mc->kind == MM_ROOT || mc->kind == MM_BCAST_COUNT) && !odd) || mc->kind == MM_ROOT_EXTRA ||
                   (mc->kind == MM_REDUCE_ROOT && c->rank != 0) || /* only rank 0 waits for rank 3 */
                   /* over TCP only rank 3 receives the odd message; the others learn at op #3 */
                   ((mc->kind == MM_A2AV_ZERO_SENT || mc->kind == MM_A2AV_ZERO_EXPECTED) && !odd);
    if (rc == 0) {
        if (!may_pass)
            fault_fail(c, "op #2 succeeded although rank %d called %s and the others %s", MM_ODD, mc->odd_call,
                       mc->normal_call);
    } else {
        fault_note_failure(c, t0, rc);
        if (mc->timeout_s)
            FCHECK(c, dt < mc->timeout_s + 3.0, "op #2 failed after %.2f s, long after HCCL_EXEC_TIMEOUT=%d s", dt,
                   mc->timeout_s);
        else
            FCHECK(c, dt < 5.0, "op #2 took %.2f s to fail (mismatches must fail at once, not at a timeout)", dt);
        FCHECK(c, g_sh->r[c->rank].async_rc != HCCL_SUCCESS, "HcclGetCommAsyncError gave HCCL_SUCCESS");
        fprintf(stderr, "FAULT-TEST INFO: op #2 failed after %.3f s (rc %d, async error %d)\n", dt, rc,
                g_sh->r[c->rank].async_rc);
    }
    /* The eager ranks make no next operation before rank 3's op #2 had to fail at
     * once: rank 3 cannot learn of the mismatch from their op #3. */
    if (mc->kind == MM_BCAST_COUNT && !odd) usleep(5500000);
    fault_step(c, "op #3 after the mismatch");
    if (mc->kind == MM_REDUCE_ROOT && rc == 0) {
        /* Rank 0 may be stuck in op #2 until its timeout: op #3 fails by then. */
        double t3 = fault_now();
        FCHECK(c, fault_allreduce_check(c, &b, 256, 1.0f) != 0, "an AllReduce after the mismatch succeeded");
        FCHECK(c, fault_now() - t3 < mc->timeout_s + 3.0, "op #3 took %.2f s to fail", fault_now() - t3);
    } else if (mc->kind == MM_ROOT_EXTRA && odd) {
        /* The extra root's own op #3 may complete, with the right sum: a peer that finds
         * its stale data fails after sending its own part. Then op #4 fails at once. */
        if (fault_allreduce_check(c, &b, 256, 1.0f) == 0) {
            fault_step(c, "op #4 after the mismatch");
            hccl_failed_fast(c, &b, "the mismatch");
        }
    } else {
        hccl_failed_fast(c, &b, "the mismatch");
    }
out:
    fault_bufs_free(&b);
}

int scen_mismatch(int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--case")) only = argv[i + 1];
    setenv("HCCL_EXEC_TIMEOUT", "15", 1);
    int ran = 0;
    for (size_t k = 0; k < sizeof mm_cases / sizeof mm_cases[0]; k++) {
        const mm_case *mc = &mm_cases[k];
        if (only && strcmp(only, mc->name) != 0) continue;
        ran++;
        char name[64];
        snprintf(name, sizeof name, "mismatch_%s", mc->name);
        char tmo[16];
        snprintf(tmo, sizeof tmo, "%d", mc->timeout_s ? mc->timeout_s : 15);
        setenv("HCCL_EXEC_TIMEOUT", tmo, 1);
        fault_job job = {.name = name, .nranks = MM_N, .init = INIT_ROOTINFO, .body = mm_body,
                         .arg = (void *)mc, .watchdog_s = 25};
        for (int run = 0; run < (mc->after_slots ? MM_AFTER_SLOTS_RUNS : 1); run++) fault_run(&job);
        /* An extra root is found at op #3 by a rank that did not receive its data: the
         * line names op #2 and the extra root's call. The Reduce's root finds at its
         * timeout that rank 3 went past op #2 without sending to it: its line names op
         * #2, its call and rank 3 (the others quote it, or time out in op #3). */
        if (mc->kind == MM_REDUCE_ROOT) {
            /* At once, from rank 3's slot of op #3 (one host with slots), or at the timeout;
             * or quoting rank 1, which may find first, waiting in op #3's slots, the
             * input rank 3 sent it in op #2 (its root there). */
            FCHECK(NULL,
                   fault_output_has(0, "WARN", "op #2", mc->normal_call, "rank 3 is at op #3", NULL) ||
                       fault_output_has(0, "WARN", "op #2", mc->normal_call, "rank(s) 3, which went past op #2", NULL) ||
                       fault_output_has(0, "WARN", "op #2", mc->normal_call, "rank 3's message of op #2", mc->odd_call,
                                        NULL),
                   "%s: rank 0 printed no WARN line naming op #2, its call and rank 3 going past it", name);
            continue;
        }
        /* The rank that finds the disagreement names both counts; the others quote it
         * (bcast_count: or find rank 3's slot still at op #2, its call). */
        for (int r = 0; r < MM_N; r++)
            FCHECK(NULL,
                   fault_output_has(r, "WARN", "op #2", mc->kind == MM_ROOT_EXTRA ? "root=3" : mc->normal_call,
                                    mc->odd_call, NULL) ||
                       (mc->kind == MM_BCAST_COUNT && r != MM_ODD &&
                        fault_output_has(r, "WARN", "rank 3 is at op #2", mc->odd_call, NULL)),
                   "%s: rank %d printed no WARN line naming op #2 and both calls, \"%s\" and \"%s\"", name, r,
                   mc->normal_call, mc->odd_call);
    }
    if (!ran) fault_fail(NULL, "no mismatch case named %s", only ? only : "?");
    return 0;
}

/* ---- eager senders that leave at once ------------------------------------------------------------ */

/* eager_exit: 3 ranks. The small rooted operations are eager: their senders return
 * before anyone received. Here the senders then destroy the
 * communicator and exit at once, while the receivers come late (rank 1 after 0.3 s,
 * rank 2 after 0.6 s); every receiver must still get the right data:
 *   op #1 Broadcast from rank 0 (3 x 1024 int32), op #2 Reduce (sum) to rank 2,
 *   op #3 Gather to rank 2, op #4 Scatter from rank 0 (rank 0 leaves after it).
 * Rank 1 leaves after op #4 too (its part of ops #2-#4 only sends, or receives from
 * rank 0, who left). Also over TCP (eager too: the data wait in the sockets) and with
 * the reference algorithms (which are not eager: there the senders wait for the
 * receivers, and the checks are the same). */
#define EX_N 3
#define EX_COUNT 1024

static int ex_check(fault_ctx *c, const int32_t *got, size_t n, int32_t (*want)(size_t), const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want(i)) {
            fault_fail(c, "%s: element %zu is %d, expected %d", what, i, got[i], want(i));
            return 1;
        }
    return 0;
}

static int32_t ex_bcast(size_t i) { return (int32_t)(7 * i + 3); }
static int32_t ex_sum(size_t i) { return (int32_t)(3 * i + 6); } /* sum over r of (i + r + 1) */
static int32_t ex_gather(size_t i) { return (int32_t)(1000 * (i / EX_COUNT) + i % EX_COUNT); }
static int32_t ex_scatter(size_t i) { return (int32_t)(50000 + 1000 * 1 + i); } /* rank 1's block */

static void eager_exit_body(fault_ctx *c)
{
    const size_t n = EX_COUNT, bytes = n * sizeof(int32_t);
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, EX_N * bytes, EX_N * bytes) != 0) return;
    int32_t *h = calloc(EX_N * n, sizeof *h);
    if (!h) goto out;
    if (c->rank) usleep(300000u * (unsigned)c->rank);
    HcclResult hr;
#define EX_RUN(what, call)                                                                                             \
    do {                                                                                                               \
        fault_step(c, "%s", what);                                                                                     \
        hr = (call);                                                                                                   \
        if (hr == HCCL_SUCCESS) hr = (HcclResult)aclrtSynchronizeStream(c->stream);                                  \
        if (hr != HCCL_SUCCESS) {                                                                                      \
            fault_fail(c, "%s failed: %d", what, (int)hr);                                                            \
            goto out;                                                                                                  \
        }                                                                                                              \
    } while (0)
    /* op #1: Broadcast from rank 0 */
    for (size_t i = 0; i < n; i++) h[i] = c->rank == 0 ? ex_bcast(i) : -1;
    aclrtMemcpy(b.dev_recv, bytes, h, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    EX_RUN("op #1 Broadcast", HcclBroadcast(b.dev_recv, n, HCCL_DATA_TYPE_INT32, 0, c->comm, c->stream));
    aclrtMemcpy(h, bytes, b.dev_recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    if (ex_check(c, h, n, ex_bcast, "Broadcast")) goto out;
    /* op #2: Reduce to rank 2 */
    for (size_t i = 0; i < n; i++) h[i] = (int32_t)(i + (size_t)c->rank + 1);
    aclrtMemcpy(b.dev_send, bytes, h, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    EX_RUN("op #2 Reduce", HcclReduce(b.dev_send, b.dev_recv, n, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 2, c->comm,
                                      c->stream));
    if (c->rank == 2) {
        aclrtMemcpy(h, bytes, b.dev_recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        if (ex_check(c, h, n, ex_sum, "Reduce")) goto out;
    }
    /* op #3: Gather to rank 2 */
    for (size_t i = 0; i < n; i++) h[i] = (int32_t)(1000 * c->rank + (int)i);
    aclrtMemcpy(b.dev_send, bytes, h, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    EX_RUN("op #3 Gather", HcclGather(b.dev_send, b.dev_recv, n, HCCL_DATA_TYPE_INT32, 2, c->comm, c->stream));
    if (c->rank == 2) {
        aclrtMemcpy(h, EX_N * bytes, b.dev_recv, EX_N * bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        if (ex_check(c, h, EX_N * n, ex_gather, "Gather")) goto out;
    }
    /* op #4: Scatter from rank 0 */
    for (size_t i = 0; i < EX_N * n; i++) h[i] = (int32_t)(50000 + 1000 * (i / n) + i % n);
    aclrtMemcpy(b.dev_send, EX_N * bytes, h, EX_N * bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    EX_RUN("op #4 Scatter", HcclScatter(b.dev_send, b.dev_recv, n, HCCL_DATA_TYPE_INT32, 0, c->comm, c->stream));
    if (c->rank == 1) {
        aclrtMemcpy(h, bytes, b.dev_recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        if (ex_check(c, h, n, ex_scatter, "Scatter")) goto out;
    }
#undef EX_RUN
out:
    free(h);
    fault_bufs_free(&b);
}

int scen_eager_exit(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fault_job job = {.name = "eager_exit", .nranks = EX_N, .init = INIT_ROOTINFO, .body = eager_exit_body,
                     .watchdog_s = 30};
    fault_run(&job);
    return 0;
}

/* ---- a rank destroys its communicator while the others are inside a collective ----------- */

/* Rank 1 calls HcclCommDestroy (and stays alive) while ranks 0 and 2 wait for it in an
 * AllReduce it never joins: they fail at once, and their WARN line names rank 1 and says
 * it may have destroyed its communicator (not only that it exited, was killed or
 * aborted). --case small: 2 floats (the shared slots on one host). */
#define LEAVE_N 3
#define LEAVER 1
#define LEAVE_COUNT (64 * 1024)

static void leave_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, LEAVE_COUNT * 4, LEAVE_COUNT * 4) != 0) return;
    fault_step(c, "op #1 AllReduce");
    if (fault_allreduce_check(c, &b, OP_COUNT(LEAVE_COUNT), 1.0f) != 0) {
        fault_fail(c, "op #1 AllReduce failed");
        goto out;
    }
    if (c->rank == LEAVER) {
        fault_step(c, "waiting for the others to enter op #2");
        FCHECK(c, fault_wait_flag(0, LEAVE_N - 1, 20), "the other ranks did not start op #2 within 20 s");
        usleep(300000);
        fault_step(c, "HcclCommDestroy while the others are in op #2");
        HcclResult rc = HcclCommDestroy(c->comm);
        c->comm = NULL;
        FCHECK(c, rc == HCCL_SUCCESS, "HcclCommDestroy returned %d", (int)rc);
        /* Alive until the others failed: they must not have seen this process exit. */
        FCHECK(c, fault_wait_flag(1, LEAVE_N - 1, 20), "the other ranks did not report their op #2 failure in 20 s");
        goto out;
    }
    atomic_fetch_add(&g_sh->flag[0], 1);
    fault_step(c, "op #2 AllReduce without rank %d", LEAVER);
    double t0 = fault_now();
    int rc = fault_allreduce_check(c, &b, OP_COUNT(LEAVE_COUNT), 2.0f);
    double dt = fault_now() - t0;
    atomic_fetch_add(&g_sh->flag[1], 1);
    FCHECK(c, rc != 0, "op #2 succeeded without rank %d", LEAVER);
    FCHECK(c, dt < 5.0, "op #2 took %.2f s to fail after rank %d destroyed its communicator", dt, LEAVER);
out:
    fault_bufs_free(&b);
}

int scen_leave(int argc, char **argv)
{
    read_small(argc, argv);
    setenv("HCCL_EXEC_TIMEOUT", "60", 1);
    fault_job job = {.name = "leave", .nranks = LEAVE_N, .init = INIT_ROOTINFO, .body = leave_body,
                     .watchdog_s = 40};
    fault_run(&job);
    char leaver[16];
    snprintf(leaver, sizeof leaver, "rank %d", LEAVER);
    for (int r = 0; r < LEAVE_N; r++) {
        if (r == LEAVER) continue;
        FCHECK(NULL, fault_output_has(r, "WARN", leaver, "destroyed its communicator", NULL),
               "rank %d printed no WARN line saying that %s may have destroyed its communicator", r, leaver);
    }
    return 0;
}

/* ---- a rank destroys the parent while another of its threads creates a sub-communicator -- */

/* Rank LEAVER's second thread calls HcclCreateSubCommConfig over all three ranks, which
 * the others never call; its main thread destroys the parent meanwhile. The creation
 * must give up (HcclCommDestroy's one-second grace, then at once) instead of holding
 * the destroy until HCCL_CONNECT_TIMEOUT (20 s here). --case member: the leaver is
 * rank 1, which joins at rank 0; otherwise rank 0, which serves the rendezvous. */
#define SPLITD_N 3

typedef struct {
    HcclComm parent;
    HcclResult res;
    double took;
} splitd_arg;

static void *splitd_create(void *p)
{
    splitd_arg *a = p;
    uint32_t ids[SPLITD_N] = {0, 1, 2};
    HcclCommConfig cfg;
    HcclCommConfigInit(&cfg);
    uint32_t me = 0;
    HcclGetRankId(a->parent, &me);
    HcclComm sub = NULL;
    double t0 = fault_now();
    a->res = HcclCreateSubCommConfig(&a->parent, SPLITD_N, ids, 77, me, &cfg, &sub);
    a->took = fault_now() - t0;
    if (a->res == HCCL_SUCCESS) HcclCommDestroy(sub);
    return NULL;
}

static int g_splitd_leaver;

static void split_destroy_body(fault_ctx *c)
{
    if (c->rank != g_splitd_leaver) {
        fault_step(c, "waiting for rank %d to destroy its parent", g_splitd_leaver);
        FCHECK(c, fault_wait_flag(0, 1, 30), "rank %d did not finish within 30 s", g_splitd_leaver);
        return;
    }
    splitd_arg a = {c->comm, HCCL_SUCCESS, 0};
    pthread_t t;
    fault_step(c, "HcclCreateSubCommConfig in a thread");
    if (pthread_create(&t, NULL, splitd_create, &a) != 0) {
        fault_fail(c, "pthread_create failed");
        return;
    }
    usleep(300000);
    fault_step(c, "HcclCommDestroy of the parent during HcclCreateSubCommConfig");
    double t0 = fault_now();
    HcclResult rc = HcclCommDestroy(c->comm);
    double dt = fault_now() - t0;
    c->comm = NULL;
    pthread_join(t, NULL);
    atomic_store(&g_sh->flag[0], 1);
    FCHECK(c, rc == HCCL_SUCCESS, "HcclCommDestroy returned %d", (int)rc);
    FCHECK(c, dt < 5.0, "HcclCommDestroy took %.2f s: it waited for the sub-communicator's rendezvous", dt);
    FCHECK(c, a.res != HCCL_SUCCESS, "HcclCreateSubCommConfig succeeded without the other ranks");
    FCHECK(c, a.took < 5.0, "HcclCreateSubCommConfig took %.2f s to give up", a.took);
}

int scen_split_destroy(int argc, char **argv)
{
    g_splitd_leaver = 0;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--case") && !strcmp(argv[i + 1], "member")) g_splitd_leaver = 1;
    setenv("HCCL_CONNECT_TIMEOUT", "20", 1);
    fault_job job = {.name = "split_destroy", .nranks = SPLITD_N, .init = INIT_ROOTINFO, .body = split_destroy_body,
                     .watchdog_s = 45};
    fault_run(&job);
    char leaver[16];
    snprintf(leaver, sizeof leaver, "rank %d", g_splitd_leaver);
    FCHECK(NULL, fault_output_has(g_splitd_leaver, "WARN", "parent communicator", "destroyed", NULL),
           "%s printed no WARN line saying its parent communicator was destroyed during the creation", leaver);
    return 0;
}
