/*
 * conf_bad.c - bad input: every call below must fail at once with HCCL_E_PARA or
 * HCCL_E_PTR (as listed per call), never crash, hang or succeed.
 *
 *   process level: HcclGetRootInfo(NULL); HcclCommInitRootInfo with nRanks 0 or above
 *     65536, rank >= nRanks, NULL root info, NULL comm, a zeroed root info; HcclCommInitClusterInfo
 *     with a missing file, NULL path, malformed rank tables, rank beyond the table;
 *     HcclCommInitAll with 0 devices or NULL arrays; NULL/destroyed handles; a root
 *     info of this process used a second time.
 *   per rank (1 and 2 ranks as threads): NULL buffers with non-zero counts, unknown
 *     dtypes (13, 99, 255) and reduce ops (7, 255), roots and peers out of range,
 *     counts whose byte size overflows (an AlltoAllVC matrix refused by every rank,
 *     not only those whose row or column holds the bad entry; a V form's block that
 *     ends beyond the addressable size, named in the warning), NULL count arrays, bad
 *     BatchSendRecv items (self sends and receives without a partner of their size,
 *     also from a group; a receive whose buffer overlaps another item's, unless both
 *     are to the rank itself, also from a group; a Send that fails its checks inside a
 *     group fails HcclGroupEnd, with its message, and nothing of the group is issued),
 *     NULL communicator, NULL out-pointers; afterwards the
 *     communicator and stream must still work (a rejected call queues nothing); an
 *     operation on a suspended communicator (HCCL_E_SUSPENDING, with its reason). Also
 *     per rank: count 0 is not
 *     bad input but nothing to do: on rank 0 alone, each fixed-count operation with
 *     count 0 returns success at once and queues nothing (as HCCL's and NCCL's do),
 *     Send and Recv of 0 elements to the rank itself included.
 * "At once" is checked as: each call returns within 2 s (5 s for init calls).
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PARA (1u << HCCL_E_PARA)
#define PTR ((1u << HCCL_E_PTR) | (1u << HCCL_E_PARA))
#define ANYERR 0xfffffffeu

static void expect_rc(conf_ctx *ctx, HcclResult rc, unsigned allowed, double t0, double limit, const char *what)
{
    double dt = conf_now() - t0;
    if (rc == HCCL_SUCCESS || (unsigned)rc >= 32 || !(allowed & (1u << rc)))
        conf_fail(ctx, "%s returned %d (%s), expected %s", what, (int)rc, HcclGetErrorString(rc),
                  allowed == PARA ? "HCCL_E_PARA" : allowed == PTR ? "HCCL_E_PTR or HCCL_E_PARA" : "an error");
    if (dt > limit) conf_fail(ctx, "%s took %.2f s (must fail at once)", what, dt);
}

#define BAD(ctx, allowed, call)                                                                                      \
    do {                                                                                                             \
        conf_step(ctx, "bad input: %s", #call);                                                                      \
        double t0_ = conf_now();                                                                                     \
        expect_rc(ctx, call, allowed, t0_, 2.0, #call);                                                              \
    } while (0)

/* The warning that call logs (stderr, captured around it) contains needle: a bad
 * handle's warning names the API call. Skipped when the log goes elsewhere or is
 * quieter than WARN (HCCL_DEBUG_FILE, HCCL_DEBUG=ERROR). */
static void names_call(conf_ctx *ctx, const char *needle, HcclResult (*call)(void *), void *arg, const char *what)
{
    const char *file = getenv("HCCL_DEBUG_FILE"), *level = getenv("HCCL_DEBUG");
    if ((file && *file) || (level && (!strcasecmp(level, "ERROR") || !strcasecmp(level, "NONE")))) return;
    char path[] = "/tmp/conf_bad_log_XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    if (fd < 0 || saved < 0) {
        conf_fail(ctx, "%s: cannot capture stderr", what);
        return;
    }
    fflush(stderr);
    dup2(fd, 2);
    (void)call(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    buf[n > 0 ? n : 0] = 0;
    if (!strstr(buf, needle)) conf_fail(ctx, "%s: its warning does not say \"%s\": %s", what, needle, buf);
}

static HcclResult allreduce_on(void *comm)
{
    static int32_t b[4];
    return HcclAllReduce(b, b, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, (HcclComm)comm, NULL);
}

static HcclResult rank_size_of(void *comm)
{
    uint32_t v;
    return HcclGetRankSize((HcclComm)comm, &v);
}

#define ZERO(ctx, call)                                                                                              \
    do {                                                                                                             \
        conf_step(ctx, "count 0: %s", #call);                                                                        \
        double t0_ = conf_now();                                                                                     \
        HcclResult rc_ = call;                                                                                       \
        if (rc_ != HCCL_SUCCESS) conf_fail(ctx, "%s returned %d (%s), expected success", #call, (int)rc_,           \
                                           HcclGetErrorString(rc_));                                                 \
        if (conf_now() - t0_ > 2.0) conf_fail(ctx, "%s took %.2f s (nothing to move)", #call, conf_now() - t0_);     \
    } while (0)

#define BAD_INIT(ctx, allowed, call)                                                                                 \
    do {                                                                                                             \
        conf_step(ctx, "bad input: %s", #call);                                                                      \
        double t0_ = conf_now();                                                                                     \
        expect_rc(ctx, call, allowed, t0_, 5.0, #call);                                                              \
    } while (0)

/* ---- per rank ------------------------------------------------------------------------- */

static void rank_bad(conf_ctx *ctx)
{
    HcclComm comm = ctx->comm;
    aclrtStream st = ctx->stream;
    uint32_t n = (uint32_t)ctx->nranks;
    void *s = NULL, *r = NULL;
    uint64_t counts[CONF_MAX_RANKS], displs[CONF_MAX_RANKS], matrix[4 * 4];
    uint32_t v;
    const HcclDataType I32 = HCCL_DATA_TYPE_INT32;
    const HcclReduceOp SUM = HCCL_REDUCE_SUM;

    for (uint32_t i = 0; i < CONF_MAX_RANKS; i++) {
        counts[i] = 1;
        displs[i] = i;
    }
    for (int i = 0; i < 16; i++) matrix[i] = 1;
    if (!conf_acl_ok(ctx, aclrtMalloc(&s, 4096, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc") ||
        !conf_acl_ok(ctx, aclrtMalloc(&r, 4096, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc"))
        return;

    /* NULL buffers with a non-zero count */
    BAD(ctx, PTR, HcclAllReduce(NULL, r, 4, I32, SUM, comm, st));
    BAD(ctx, PTR, HcclAllReduce(s, NULL, 4, I32, SUM, comm, st));
    BAD(ctx, PTR, HcclBroadcast(NULL, 4, I32, 0, comm, st));
    BAD(ctx, PTR, HcclReduceScatter(NULL, r, 4, I32, SUM, comm, st));
    BAD(ctx, PTR, HcclAllGather(s, NULL, 4, I32, comm, st));
    BAD(ctx, PTR, HcclSend(NULL, 4, I32, 0, comm, st));
    BAD(ctx, PTR, HcclRecv(NULL, 4, I32, 0, comm, st));
    BAD(ctx, PTR, HcclAlltoAll(NULL, 1, I32, r, 1, I32, comm, st));
    /* NULL count arrays */
    BAD(ctx, PTR, HcclAllGatherV(s, 1, r, NULL, displs, I32, comm, st));
    BAD(ctx, PTR, HcclAllGatherV(s, 1, r, counts, NULL, I32, comm, st));
    BAD(ctx, PTR, HcclReduceScatterV(s, NULL, displs, r, 1, I32, SUM, comm, st));
    BAD(ctx, PTR, HcclAlltoAllV(s, NULL, displs, I32, r, counts, displs, I32, comm, st));
    BAD(ctx, PTR, HcclAlltoAllV(s, counts, displs, I32, r, counts, NULL, I32, comm, st));
    BAD(ctx, PTR, HcclAlltoAllVC(s, NULL, I32, r, I32, comm, st));
    /* the extensions that report settings */
    BAD(ctx, PTR, HcclCommGetExecTimeout(comm, NULL));
    BAD(ctx, PTR, HcclGetConnectTimeout(NULL));
    BAD(ctx, PTR, HcclCommGetFlightRecorderSize(comm, NULL));
    BAD(ctx, PTR, HcclCommGetFlightRecorderSize(NULL, &(uint32_t){0}));
    {
        uint32_t ops = 1u << 31;
        uint64_t secs = 0;
        if (HcclCommGetFlightRecorderSize(comm, &ops) != HCCL_SUCCESS || (ops & (ops - 1)) || ops > 65536)
            conf_fail(ctx, "HcclCommGetFlightRecorderSize: %u operations (not 0 or a power of two up to 65536)", ops);
        if (HcclGetConnectTimeout(&secs) != HCCL_SUCCESS || secs < 1 || secs > 1000000000ull)
            conf_fail(ctx, "HcclGetConnectTimeout: %llu s (not 1..10^9)", (unsigned long long)secs);
    }
    /* receive blocks that overlap (two peers' data on the same elements) */
    if (n >= 2) {
        uint64_t odispls[CONF_MAX_RANKS], ocounts[CONF_MAX_RANKS];
        for (uint32_t i = 0; i < n; i++) {
            ocounts[i] = 2;
            odispls[i] = 2 * i;
        }
        odispls[n - 1] = 2 * (n - 2) + 1; /* the last block starts inside the one before */
        BAD(ctx, PARA, HcclAllGatherV(s, 2, r, ocounts, odispls, I32, comm, st));
        BAD(ctx, PARA, HcclAlltoAllV(s, counts, displs, I32, r, ocounts, odispls, I32, comm, st));
        if (!strstr(HcclGetLastErrorMessage(), "overlap"))
            conf_fail(ctx, "HcclGetLastErrorMessage() after overlapping blocks: \"%s\"", HcclGetLastErrorMessage());
        /* the same with the blocks in reverse rank order (the sorted check, not the
         * in-order pass): rank 0's block starts inside rank 1's */
        for (uint32_t i = 0; i < n; i++) odispls[i] = 2 * (n - 1 - i);
        odispls[0] = 2 * (n - 1) - 1;
        BAD(ctx, PARA, HcclAllGatherV(s, 2, r, ocounts, odispls, I32, comm, st));
        BAD(ctx, PARA, HcclAlltoAllV(s, counts, displs, I32, r, ocounts, odispls, I32, comm, st));
    }
    /* unknown dtype / op */
    BAD(ctx, PARA, HcclAllReduce(s, r, 4, (HcclDataType)13, SUM, comm, st));
    BAD(ctx, PARA, HcclAllReduce(s, r, 4, (HcclDataType)99, SUM, comm, st));
    /* the reason of the last failure on this thread */
    if (!strstr(HcclGetLastErrorMessage(), "HcclAllReduce") || !strstr(HcclGetLastErrorMessage(), "99"))
        conf_fail(ctx, "HcclGetLastErrorMessage() after a bad dtype: \"%s\"", HcclGetLastErrorMessage());
    BAD(ctx, PARA, HcclAllReduce(s, r, 4, HCCL_DATA_TYPE_RESERVED, SUM, comm, st));
    BAD(ctx, PARA, HcclAllReduce(s, r, 4, I32, (HcclReduceOp)7, comm, st));
    BAD(ctx, PARA, HcclAllReduce(s, r, 4, I32, HCCL_REDUCE_RESERVED, comm, st));
    BAD(ctx, PARA, HcclReduce(s, r, 4, I32, (HcclReduceOp)7, 0, comm, st));
    BAD(ctx, PARA, HcclReduceScatter(s, r, 1, (HcclDataType)99, SUM, comm, st));
    BAD(ctx, PARA, HcclAllGather(s, r, 1, (HcclDataType)13, comm, st));
    BAD(ctx, PARA, HcclBroadcast(s, 4, (HcclDataType)99, 0, comm, st));
    BAD(ctx, PARA, HcclAlltoAll(s, 1, (HcclDataType)99, r, 1, (HcclDataType)99, comm, st));
    /* send and receive blocks that differ: the reason names both types */
    BAD(ctx, PARA, HcclAlltoAll(s, 1, I32, r, 1, HCCL_DATA_TYPE_FP32, comm, st));
    if (!strstr(HcclGetLastErrorMessage(), "1 x int32") || !strstr(HcclGetLastErrorMessage(), "1 x fp32"))
        conf_fail(ctx, "HcclGetLastErrorMessage() after AlltoAll blocks of two types: \"%s\"",
                  HcclGetLastErrorMessage());
    BAD(ctx, PARA, HcclSend(s, 4, (HcclDataType)99, 0, comm, st));
    /* roots and peers out of range */
    BAD(ctx, PARA, HcclBroadcast(s, 4, I32, n, comm, st));
    BAD(ctx, PARA, HcclBroadcast(s, 4, I32, 1000, comm, st));
    BAD(ctx, PARA, HcclReduce(s, r, 4, I32, SUM, n, comm, st));
    BAD(ctx, PARA, HcclScatter(s, r, 1, I32, n, comm, st));
    BAD(ctx, PARA, HcclGather(s, r, 1, I32, n, comm, st));
    BAD(ctx, PARA, HcclSend(s, 4, I32, n, comm, st));
    BAD(ctx, PARA, HcclRecv(r, 4, I32, n, comm, st));
    BAD(ctx, PARA, HcclSend(s, 4, I32, UINT32_MAX, comm, st));
    /* the messages name the parameters of the call, not the fields of an item */
    BAD(ctx, PARA, HcclRecv(r, 4, I32, n, comm, st));
    if (!strstr(HcclGetLastErrorMessage(), "HcclRecv: srcRank"))
        conf_fail(ctx, "HcclGetLastErrorMessage() after a Recv from a rank out of range: \"%s\"",
                  HcclGetLastErrorMessage());
    BAD(ctx, PTR, HcclSend(NULL, 4, I32, 0, comm, st));
    if (!strstr(HcclGetLastErrorMessage(), "HcclSend: sendBuf is NULL"))
        conf_fail(ctx, "HcclGetLastErrorMessage() after a Send of NULL: \"%s\"", HcclGetLastErrorMessage());
    /* byte sizes that overflow */
    BAD(ctx, PARA, HcclAllReduce(s, r, UINT64_MAX / 2, HCCL_DATA_TYPE_FP32, SUM, comm, st));
    BAD(ctx, PARA, HcclAllReduce(s, r, UINT64_MAX, HCCL_DATA_TYPE_INT8, SUM, comm, st));
    BAD(ctx, PARA, HcclAllGather(s, r, UINT64_MAX / 4, I32, comm, st));
    BAD(ctx, PARA, HcclBroadcast(s, UINT64_MAX / 8, HCCL_DATA_TYPE_INT128, 0, comm, st));
    BAD(ctx, PARA, HcclReduceScatter(s, r, UINT64_MAX / 2, HCCL_DATA_TYPE_FP16, SUM, comm, st));
    /* a block of a V form that ends beyond the addressable size (its displacement
     * alone, or count + displacement overflowing 64 bits): the warning names the block */
    {
        uint64_t bd[CONF_MAX_RANKS];
        for (uint32_t i = 0; i < n; i++) bd[i] = i;
        bd[n - 1] = UINT64_MAX / 8;
        BAD(ctx, PARA, HcclAllGatherV(s, 1, r, counts, bd, I32, comm, st));
        char want[96];
        snprintf(want, sizeof want, "block of rank %u (count 1 at displacement %llu", n - 1,
                 (unsigned long long)(UINT64_MAX / 8));
        if (!strstr(HcclGetLastErrorMessage(), want))
            conf_fail(ctx, "HcclGetLastErrorMessage() after a displacement beyond the addressable size: \"%s\" "
                      "(expected it to say \"%s\")", HcclGetLastErrorMessage(), want);
        bd[n - 1] = UINT64_MAX;
        BAD(ctx, PARA, HcclReduceScatterV(s, counts, bd, r, 1, I32, SUM, comm, st));
        BAD(ctx, PARA, HcclAlltoAllV(s, counts, bd, I32, r, counts, displs, I32, comm, st));
    }
    /* an AlltoAllVC matrix whose entry (0, 0) overflows: rank 0 sends and receives it,
     * but every rank must refuse the matrix (all ranks pass it alike), or those that
     * took it would wait in the operation for rank 0 */
    matrix[0] = UINT64_MAX / 8;
    BAD(ctx, PARA, HcclAlltoAllVC(s, matrix, I32, r, I32, comm, st));
    if (!strstr(HcclGetLastErrorMessage(), "rank 0"))
        conf_fail(ctx, "HcclGetLastErrorMessage() after an overflowing matrix: \"%s\"", HcclGetLastErrorMessage());
    matrix[0] = 1;
    /* BatchSendRecv */
    {
        HcclSendRecvItem it = {HCCL_SEND, s, 4, I32, 0};
        BAD(ctx, PTR, HcclBatchSendRecv(NULL, 1, comm, st));
        it.remoteRank = n;
        BAD(ctx, PARA, HcclBatchSendRecv(&it, 1, comm, st));
        it.remoteRank = 0;
        it.sendRecvType = (HcclSendRecvType)7;
        BAD(ctx, PARA, HcclBatchSendRecv(&it, 1, comm, st));
        it.sendRecvType = HCCL_RECV;
        it.dataType = (HcclDataType)99;
        BAD(ctx, PARA, HcclBatchSendRecv(&it, 1, comm, st));
        it.dataType = I32;
        it.buf = NULL;
        BAD(ctx, PTR, HcclBatchSendRecv(&it, 1, comm, st));
        /* a bad item among good ones: the message says which */
        {
            HcclSendRecvItem two[2] = {{HCCL_SEND, s, 4, I32, 0}, {HCCL_RECV, r, 4, (HcclDataType)99, 0}};
            BAD(ctx, PARA, HcclBatchSendRecv(two, 2, comm, st));
            if (!strstr(HcclGetLastErrorMessage(), "item 1") || !strstr(HcclGetLastErrorMessage(), "99"))
                conf_fail(ctx, "HcclGetLastErrorMessage() after a bad dtype in item 1: \"%s\"",
                          HcclGetLastErrorMessage());
            two[1] = (HcclSendRecvItem){HCCL_RECV, NULL, 4, I32, 0};
            BAD(ctx, PTR, HcclBatchSendRecv(two, 2, comm, st));
            if (!strstr(HcclGetLastErrorMessage(), "item 1"))
                conf_fail(ctx, "HcclGetLastErrorMessage() after a NULL buf in item 1: \"%s\"",
                          HcclGetLastErrorMessage());
            two[1] = (HcclSendRecvItem){HCCL_RECV, r, 4, I32, n};
            BAD(ctx, PARA, HcclBatchSendRecv(two, 2, comm, st));
            if (!strstr(HcclGetLastErrorMessage(), "item 1"))
                conf_fail(ctx, "HcclGetLastErrorMessage() after a peer out of range in item 1: \"%s\"",
                          HcclGetLastErrorMessage());
        }
        /* items to this rank itself: a send with no receive, a receive with no send,
         * a pair of different sizes (refused at the call: nothing queued) */
        uint32_t me = (uint32_t)ctx->rank;
        HcclSendRecvItem self[2] = {{HCCL_SEND, s, 4, I32, me}, {HCCL_RECV, r, 2, I32, me}};
        BAD(ctx, PARA, HcclBatchSendRecv(&self[0], 1, comm, st));
        BAD(ctx, PARA, HcclBatchSendRecv(&self[1], 1, comm, st));
        BAD(ctx, PARA, HcclBatchSendRecv(self, 2, comm, st));
        conf_step(ctx, "bad input: an unmatched self send inside a group");
        if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
            conf_ok(ctx, HcclSend(s, 4, I32, me, comm, st), "HcclSend to itself inside a group");
            BAD(ctx, PARA, HcclGroupEnd());
        }
        /* a call that fails its checks inside a group fails the group: HcclGroupEnd
         * returns its error, with its message, and issues none of the group's
         * point-to-point calls (the copy to itself below would otherwise land in r;
         * a peer's would pair with what is left); the next group works */
        conf_step(ctx, "bad input: HcclSend(NULL, 10) inside a group");
        int32_t sv[4] = {1, 2, 3, 4}, rv[4] = {7, 7, 7, 7}, got[4];
        if (conf_sync(ctx, st, "before the failed group") &&
            conf_acl_ok(ctx, aclrtMemcpy(s, 16, sv, 16, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy") &&
            conf_acl_ok(ctx, aclrtMemcpy(r, 16, rv, 16, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy") &&
            conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
            BAD(ctx, PTR, HcclSend(NULL, 10, I32, me, comm, st));
            conf_ok(ctx, HcclSend(s, 4, I32, me, comm, st), "HcclSend to itself inside a failed group");
            conf_ok(ctx, HcclRecv(r, 4, I32, me, comm, st), "HcclRecv from itself inside a failed group");
            HcclResult rc = HcclGroupEnd();
            if (rc != HCCL_E_PTR || !strstr(HcclGetLastErrorMessage(), "sendBuf"))
                conf_fail(ctx, "HcclGroupEnd after HcclSend(NULL, 10) in the group returned %d (%s), expected "
                          "HCCL_E_PTR; last error message \"%s\"", (int)rc, HcclGetErrorString(rc),
                          HcclGetLastErrorMessage());
            if (conf_sync(ctx, st, "after the failed group") &&
                conf_acl_ok(ctx, aclrtMemcpy(got, 16, r, 16, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy") &&
                memcmp(got, rv, 16))
                conf_fail(ctx, "the failed group's copy to itself was issued (r[0] is %d, expected 7)", got[0]);
            conf_step(ctx, "the group after a failed group");
            if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
                conf_ok(ctx, HcclSend(s, 4, I32, me, comm, st), "HcclSend to itself inside a group");
                conf_ok(ctx, HcclRecv(r, 4, I32, me, comm, st), "HcclRecv from itself inside a group");
                if (conf_ok(ctx, HcclGroupEnd(), "HcclGroupEnd after a failed group") &&
                    conf_sync(ctx, st, "the group after a failed group") &&
                    conf_acl_ok(ctx, aclrtMemcpy(got, 16, r, 16, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy") &&
                    memcmp(got, sv, 16))
                    conf_fail(ctx, "the group after a failed group: r[0] is %d, expected 1", got[0]);
            }
        }
        /* a receive from a peer into a buffer that another transfer with a peer sends
         * from or receives into: the result would depend on timing (a 4-rank ring that
         * sends and receives the same buffer got part of the wrong rank's data) */
        if (n >= 2) {
            uint32_t peer = (me + 1) % n;
            int32_t *si = s;
            HcclSendRecvItem ov[3] = {{HCCL_SEND, si, 4, I32, peer},
                                      {HCCL_RECV, si + 2, 4, I32, peer},
                                      {HCCL_RECV, r, 4, I32, peer}};
            BAD(ctx, PARA, HcclBatchSendRecv(ov, 2, comm, st));
            if (!strstr(HcclGetLastErrorMessage(), "item 0") || !strstr(HcclGetLastErrorMessage(), "overlap"))
                conf_fail(ctx, "HcclGetLastErrorMessage() after overlapping items: \"%s\"", HcclGetLastErrorMessage());
            ov[1].buf = r;
            ov[2].buf = (int32_t *)r + 3; /* two receives that overlap */
            BAD(ctx, PARA, HcclBatchSendRecv(ov, 3, comm, st));
            /* a copy to the rank itself into the buffer a peer is sent (the copy runs
             * first: the peer would get the copied data) */
            HcclSendRecvItem ovs[3] = {{HCCL_SEND, si, 4, I32, peer},
                                       {HCCL_SEND, r, 4, I32, me},
                                       {HCCL_RECV, si + 1, 4, I32, me}};
            BAD(ctx, PARA, HcclBatchSendRecv(ovs, 3, comm, st));
            conf_step(ctx, "bad input: a send and a receive of the same buffer inside a group");
            if (conf_ok(ctx, HcclGroupStart(), "HcclGroupStart")) {
                conf_ok(ctx, HcclSend(s, 4, I32, peer, comm, st), "HcclSend inside a group");
                conf_ok(ctx, HcclRecv(s, 4, I32, peer, comm, st), "HcclRecv inside a group");
                BAD(ctx, PARA, HcclGroupEnd());
            }
        }
    }
    /* NULL communicator and NULL out-pointers */
    BAD(ctx, PTR, HcclAllReduce(s, r, 4, I32, SUM, NULL, st));
    BAD(ctx, PTR, HcclBroadcast(s, 4, I32, 0, NULL, st));
    BAD(ctx, PTR, HcclBarrier(NULL, st));
    BAD(ctx, PTR, HcclSend(s, 4, I32, 0, NULL, st));
    BAD(ctx, PTR, HcclGetRankSize(NULL, &v));
    BAD(ctx, PTR, HcclGetRankSize(comm, NULL));
    BAD(ctx, PTR, HcclGetRankId(comm, NULL));
    BAD(ctx, PTR, HcclGetCommName(comm, NULL));
    BAD(ctx, PTR, HcclGetCommAsyncError(comm, NULL));
    /* each of those says why in the thread's last error message */
    {
        HcclConfigValue cv;
        static const char *const names[] = {"HcclGetRankSize", "HcclGetRankId", "HcclGetCommName",
                                            "HcclGetCommAsyncError", "HcclGetConfig", "HcclGetConfig",
                                            "HcclCommGetHandleWithName", "HcclCommDestroy"};
        for (int i = 0; i < 8; i++) {
            HcclAllReduce(s, r, 4, (HcclDataType)99, SUM, comm, st); /* another message first */
            HcclResult rc = i == 0 ? HcclGetRankSize(comm, NULL)
                            : i == 1 ? HcclGetRankId(comm, NULL)
                            : i == 2 ? HcclGetCommName(comm, NULL)
                            : i == 3 ? HcclGetCommAsyncError(comm, NULL)
                            : i == 4 ? HcclGetConfig(HCCL_DETERMINISTIC, NULL)
                            : i == 5 ? HcclGetConfig((HcclConfig)77, &cv)
                            : i == 6 ? HcclCommGetHandleWithName(NULL, &comm)
                                     : HcclCommDestroy(NULL);
            conf_step(ctx, "bad input: %s's message", names[i]);
            if (rc == HCCL_SUCCESS || !strstr(HcclGetLastErrorMessage(), names[i]))
                conf_fail(ctx, "%s with a NULL/unknown argument returned %d; last error message \"%s\"", names[i],
                          (int)rc, HcclGetLastErrorMessage());
        }
    }

    /* count 0 moves nothing: success at once, on rank 0 alone (its peers never make
     * these calls; an operation that waited for them would hang here) */
    if (ctx->rank == 0) {
        ZERO(ctx, HcclAllReduce(s, r, 0, I32, SUM, comm, st));
        ZERO(ctx, HcclAllReduce(NULL, NULL, 0, I32, SUM, comm, NULL));
        ZERO(ctx, HcclReduce(s, r, 0, I32, SUM, 0, comm, st));
        ZERO(ctx, HcclReduceScatter(s, r, 0, I32, SUM, comm, st));
        ZERO(ctx, HcclAllGather(s, r, 0, I32, comm, st));
        ZERO(ctx, HcclAllGather(s, r, 0, I32, comm, NULL));
        ZERO(ctx, HcclBroadcast(s, 0, I32, 0, comm, st));
        ZERO(ctx, HcclScatter(s, r, 0, I32, 0, comm, st));
        ZERO(ctx, HcclGather(s, r, 0, I32, 0, comm, st));
        ZERO(ctx, HcclAlltoAll(s, 0, I32, r, 0, I32, comm, st));
        if (n > 1) ZERO(ctx, HcclSend(s, 0, I32, n - 1, comm, st));
        /* to or from the rank itself: nothing to wait for either */
        ZERO(ctx, HcclSend(s, 0, I32, 0, comm, st));
        ZERO(ctx, HcclRecv(r, 0, I32, 0, comm, NULL));
        ZERO(ctx, HcclRecv(NULL, 0, I32, 0, comm, st));
        BAD(ctx, PARA, HcclSend(s, 4, I32, 0, comm, st)); /* with data, outside a group: never received */
        /* still checked: a bad argument is an error whatever the count */
        BAD(ctx, PARA, HcclAllReduce(s, r, 0, (HcclDataType)99, SUM, comm, st));
        BAD(ctx, PARA, HcclBroadcast(s, 0, I32, n, comm, st));
        BAD(ctx, PTR, HcclAllGather(s, r, 0, I32, NULL, st));
    }

    /* a suspended communicator refuses operations, and says so (not the reason of
     * an earlier failure), until it is resumed */
    conf_step(ctx, "suspended communicator");
    if (conf_ok(ctx, HcclCommSuspend(comm), "HcclCommSuspend")) {
        HcclAllReduce(s, r, 4, (HcclDataType)99, SUM, comm, NULL); /* another message first */
        HcclResult rc = HcclAllReduce(s, r, 4, I32, SUM, comm, NULL);
        if (rc != HCCL_E_SUSPENDING || !strstr(HcclGetLastErrorMessage(), "suspended"))
            conf_fail(ctx, "AllReduce on a suspended communicator returned %d (%s); last error message \"%s\"",
                      (int)rc, HcclGetErrorString(rc), HcclGetLastErrorMessage());
        conf_ok(ctx, HcclCommResume(comm), "HcclCommResume");
    }

    /* nothing was queued: the stream is clean and the communicator works */
    conf_sync(ctx, st, "rejected calls");
    HcclResult ae = HCCL_E_RESERVED;
    if (conf_ok(ctx, HcclGetCommAsyncError(comm, &ae), "HcclGetCommAsyncError") && ae != HCCL_SUCCESS)
        conf_fail(ctx, "HcclGetCommAsyncError reports %d after rejected calls", (int)ae);
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
    aclrtMemcpy(s, 16, in, 16, ACL_MEMCPY_HOST_TO_DEVICE);
    if (conf_ok(ctx, HcclAllReduce(s, r, 4, I32, SUM, comm, st), "AllReduce after rejected calls") &&
        conf_sync(ctx, st, "AllReduce after rejected calls")) {
        aclrtMemcpy(out, 16, r, 16, ACL_MEMCPY_DEVICE_TO_HOST);
        for (int i = 0; i < 4; i++)
            if (out[i] != in[i] * (int)n) {
                conf_fail(ctx, "AllReduce after rejected calls: element %d is %d, expected %d", i, out[i],
                          in[i] * (int)n);
                break;
            }
    }
    aclrtFree(s);
    aclrtFree(r);
}

/* ---- process level --------------------------------------------------------------------- */

static int write_file(char *path, size_t plen, const char *text)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, plen, "%s/hccl_conf_rt_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

#define RT_DEV(r, port) "{\"device_id\":\"" #r "\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"" #port "\",\"rank_id\":\"" #r "\"}"
#define RT_HEAD "{\"status\":\"completed\",\"version\":\"1.0\",\"server_count\":\"1\",\"server_list\":[{\"server_id\":\"node_0\",\"host_ip\":\"127.0.0.1\",\"device\":["
#define RT_TAIL "]}]}"

static const struct {
    const char *what, *text;
    uint32_t rank;
} bad_tables[] = {
    {"not JSON", "{\"status\":\"completed\", \"version\": ", 0},
    {"empty object", "{}", 0},
    {"status not completed",
     "{\"status\":\"initializing\",\"version\":\"1.0\",\"server_count\":\"1\",\"server_list\":[{\"server_id\":\"node_0\","
     "\"host_ip\":\"127.0.0.1\",\"device\":[" RT_DEV(0, 40001) "," RT_DEV(1, 40002) RT_TAIL,
     0},
    {"unknown version",
     "{\"status\":\"completed\",\"version\":\"7.5\",\"server_count\":\"1\",\"server_list\":[{\"server_id\":\"node_0\","
     "\"host_ip\":\"127.0.0.1\",\"device\":[" RT_DEV(0, 40001) "," RT_DEV(1, 40002) RT_TAIL,
     0},
    {"no server_list", "{\"status\":\"completed\",\"version\":\"1.0\",\"server_count\":\"1\"}", 0},
    {"duplicate rank_id", RT_HEAD RT_DEV(0, 40001) "," RT_DEV(0, 40002) RT_TAIL, 0},
    {"rank_id not a number",
     RT_HEAD "{\"device_id\":\"0\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"40001\",\"rank_id\":\"zero\"}" RT_TAIL,
     0},
    {"bad device_ip",
     RT_HEAD "{\"device_id\":\"0\",\"device_ip\":\"300.1.2.3\",\"device_port\":\"40001\",\"rank_id\":\"0\"}" RT_TAIL, 0},
    {"device_port out of range",
     RT_HEAD "{\"device_id\":\"0\",\"device_ip\":\"127.0.0.1\",\"device_port\":\"70000\",\"rank_id\":\"0\"}" RT_TAIL, 0},
    {"rank_id numbers not starting at 0", RT_HEAD RT_DEV(1, 40001) "," RT_DEV(2, 40002) RT_TAIL, 0},
    {"rank beyond the table", RT_HEAD RT_DEV(0, 40001) "," RT_DEV(1, 40002) RT_TAIL, 2},
};

static void process_level(conf_ctx *ctx)
{
    HcclRootInfo root, zero;
    HcclComm c = NULL, comms[4] = {NULL};
    int32_t devs[4] = {0, 1, 2, 3};
    char path[512];

    BAD(ctx, PTR, HcclGetRootInfo(NULL));
    conf_step(ctx, "HcclGetRootInfo");
    if (!conf_ok(ctx, HcclGetRootInfo(&root), "HcclGetRootInfo")) return;
    memset(&zero, 0, sizeof zero);
    BAD_INIT(ctx, PARA, HcclCommInitRootInfo(0, &root, 0, &c));
    BAD_INIT(ctx, PARA, HcclCommInitRootInfo(2, &root, 2, &c));
    BAD_INIT(ctx, PARA, HcclCommInitRootInfo(2, &root, 7, &c));
    /* more ranks than a communicator may have: refused before anything is allocated */
    BAD_INIT(ctx, PARA, HcclCommInitRootInfo(UINT32_MAX, &root, 0, &c));
    BAD_INIT(ctx, PARA, HcclCommInitRootInfo(65537, &root, 65536, &c));
    if (!strstr(HcclGetLastErrorMessage(), "nRanks 65537"))
        conf_fail(ctx, "HcclCommInitRootInfo(65537 ranks): last error message \"%s\"", HcclGetLastErrorMessage());
    BAD_INIT(ctx, PTR, HcclCommInitRootInfo(2, NULL, 0, &c));
    BAD_INIT(ctx, PTR, HcclCommInitRootInfo(1, &root, 0, NULL));
    BAD_INIT(ctx, ANYERR, HcclCommInitRootInfo(2, &zero, 1, &c));
    {
        /* The header intact (magic, version, secret, id: 24 bytes), the root address
         * after it scribbled over: refused as invalid, not a connection failure. */
        HcclRootInfo scrib = root;
        memset(scrib.internal + 24, 0x7f, sizeof scrib.internal - 24);
        BAD_INIT(ctx, PARA, HcclCommInitRootInfo(1, &scrib, 0, &c));
    }
    BAD_INIT(ctx, ANYERR, HcclCommInitClusterInfo("/nonexistent/hccl_conf/rank_table.json", 0, &c));
    BAD_INIT(ctx, PTR, HcclCommInitClusterInfo(NULL, 0, &c));
    for (size_t i = 0; i < sizeof bad_tables / sizeof bad_tables[0]; i++) {
        if (write_file(path, sizeof path, bad_tables[i].text) != 0) {
            conf_fail(ctx, "cannot write a temporary rank table");
            break;
        }
        char what[160];
        snprintf(what, sizeof what, "HcclCommInitClusterInfo(rank table: %s, rank %u)", bad_tables[i].what,
                 bad_tables[i].rank);
        conf_step(ctx, "bad input: %s", what);
        double t0 = conf_now();
        expect_rc(ctx, HcclCommInitClusterInfo(path, bad_tables[i].rank, &c), PARA, t0, 5.0, what);
        unlink(path);
    }
    BAD_INIT(ctx, PARA, HcclCommInitAll(0, devs, comms));
    BAD_INIT(ctx, PTR, HcclCommInitAll(2, NULL, comms));
    BAD_INIT(ctx, PTR, HcclCommInitAll(2, devs, NULL));
    BAD(ctx, PTR, HcclCommDestroy(NULL));
    BAD(ctx, PTR, HcclCommGetHandleWithName(NULL, &c));
    BAD(ctx, PTR, HcclCreateSubCommConfig(NULL, 1, (uint32_t *)devs, 1, 0, NULL, &c));

    /* a destroyed single-rank communicator */
    conf_step(ctx, "single-rank communicator to destroy");
    if (!conf_acl_ok(ctx, aclrtSetDevice(0), "aclrtSetDevice(0)")) return;
    HcclRootInfo r1;
    if (conf_ok(ctx, HcclGetRootInfo(&r1), "HcclGetRootInfo") &&
        conf_ok(ctx, HcclCommInitRootInfo(1, &r1, 0, &c), "HcclCommInitRootInfo(1, root, 0)") &&
        conf_ok(ctx, HcclCommDestroy(c), "HcclCommDestroy")) {
        void *b = NULL;
        uint32_t v;
        aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST);
        BAD(ctx, ANYERR, HcclAllReduce(b, b, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c, NULL));
        BAD(ctx, ANYERR, HcclGetRankSize(c, &v));
        BAD(ctx, ANYERR, HcclBarrier(c, NULL));
        BAD(ctx, PARA, HcclAllGather(b, b, 0, HCCL_DATA_TYPE_INT32, c, NULL)); /* count 0: looked up all the same */
        BAD(ctx, ANYERR, HcclCommDestroy(c));
        names_call(ctx, "HcclAllReduce: communicator handle", allreduce_on, c, "HcclAllReduce on a destroyed handle");
        names_call(ctx, "HcclGetRankSize: communicator handle is NULL", rank_size_of, NULL, "HcclGetRankSize(NULL)");
        aclrtFree(b);
        /* its root info again: made in this process, whose root has served the first
         * communicator and stopped: refused at once, not after HCCL_CONNECT_TIMEOUT
         * (the root records that before it answers: no pause needed) */
        BAD_INIT(ctx, PARA, HcclCommInitRootInfo(1, &r1, 0, &c));
        if (!strstr(HcclGetLastErrorMessage(), "a root info serves one communicator"))
            conf_fail(ctx, "HcclCommInitRootInfo with a used root info: last error message \"%s\"",
                      HcclGetLastErrorMessage());
    }
    /* destroyed handles among live ones: 70 single-rank communicators (the registry's
     * entries come in chunks of 64), every third destroyed; the others must still be
     * found (with count 0 too), the destroyed ones never */
    conf_step(ctx, "70 single-rank communicators, every third destroyed");
    enum { MANY = 70 };
    HcclComm many[MANY];
    int made = 0;
    for (; made < MANY; made++) {
        HcclRootInfo ri;
        if (!conf_ok(ctx, HcclGetRootInfo(&ri), "HcclGetRootInfo") ||
            !conf_ok(ctx, HcclCommInitRootInfo(1, &ri, 0, &many[made]), "HcclCommInitRootInfo(1, root, 0)"))
            break;
    }
    for (int i = 0; i < made; i += 3) conf_ok(ctx, HcclCommDestroy(many[i]), "HcclCommDestroy");
    for (int i = 0; i < made; i++) {
        uint32_t v = 99;
        char what[64];
        snprintf(what, sizeof what, "communicator %d of %d", i, made);
        conf_step(ctx, "%s", what);
        if (i % 3 == 0) {
            BAD(ctx, PARA, HcclGetRankSize(many[i], &v));
            BAD(ctx, PARA, HcclAllReduce(NULL, NULL, 0, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, many[i], NULL));
        } else {
            conf_ok(ctx, HcclGetRankSize(many[i], &v), "HcclGetRankSize");
            if (v != 1) conf_fail(ctx, "HcclGetRankSize gave %u, not 1", v);
            conf_ok(ctx, HcclAllReduce(NULL, NULL, 0, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, many[i], NULL),
                    "HcclAllReduce of 0 elements");
        }
    }
    for (int i = 0; i < made; i++)
        if (i % 3) conf_ok(ctx, HcclCommDestroy(many[i]), "HcclCommDestroy");
    aclrtResetDevice(0);
}

int conf_badinput_main(const conf_opts *o)
{
    conf_ctx ctx;
    int failed = 0;
    memset(&ctx, 0, sizeof ctx);
    ctx.nranks = 1;
    ctx.opt = o;
    ctx.mode = MODE_THREADS;
    process_level(&ctx);
    if (ctx.fails) {
        fprintf(stderr, "process-level bad input: %d failure(s)\n", ctx.fails);
        failed++;
    }
    failed += conf_run_ranks(o, MODE_THREADS, 1, 1, rank_bad);
    failed += conf_run_ranks(o, MODE_THREADS, 2, 1, rank_bad);
    return failed;
}
