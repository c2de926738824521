/*
 * net.c - the exchange engine behind hccl_net (framing and checks in net.h).
 */
#include "core/net.h"
#include "core/peermem.h"
#include "transport/shm/slots.h"

#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/copy.h"
#include "util/cpus.h"
#include "util/log.h"
#include "util/param.h"
#include "util/spin.h"
#include "util/util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OP_ABORT 255u
#define OP_STATUS 254u   /* seq = the sender's collective; payload: a status_body (see net.h) */
#define STATUS_GRACE_NS 1000000000ull
#define FLAG_P2P 1u
#define FLAG_STATUS_REPLY 2u /* an idle rank's answer to a STATUS (never answered itself) */
#define FLAG_ALGO_SHIFT 4u   /* bits 4-7: the fingerprint's algorithm */
#define ABORT_TEXT_MAX 1024u
#define STATUS_VERSION 2u
#define STATUS_BODY_MAX 64u /* a longer STATUS payload is refused: the stream is not trusted */
#define STATUS_IDLE 1u
#define STATUS_IN_OP 2u
#define STATUS_SUSPENDED 1u /* status_body.idle_flags: HcclCommSuspend refuses its operations */
#define RESP_PERIOD_NS 100000000ull /* the responder looks at idle communicators this often */
#define RESP_IDLE_NS 50000000ull    /* ... once they have been idle this long */

/* Collective numbers are 32 bits and wrap (after 2^32 collectives on a communicator,
 * about 70 minutes of 1 us calls): a is later than b when it is less than 2^31 ahead. */
static inline int seq_after(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }

/* hccl_netimpl.idle: the engine owns the connections (IDLE_NO), leaves them to the
 * responder (IDLE_YES), or a responder pass holds them (IDLE_SERVING, under io_lock).
 * end_op publishes IDLE_YES with release after writing what the responder reads;
 * begin_op takes them back with one compare-and-swap, or under io_lock after a pass. */
enum { IDLE_NO = 0, IDLE_YES = 1, IDLE_SERVING = 2 };
#define PUSHBACK_CAP 65536u         /* bytes the responder may read ahead per peer */

typedef struct msg_hdr {
    uint32_t seq;
    uint8_t op;
    uint8_t flags;
    uint8_t dtype;
    uint8_t redop;
    uint32_t root;
    uint32_t digest;
    uint64_t count;
    uint64_t len;
} msg_hdr;
_Static_assert(sizeof(msg_hdr) == 32, "wire layout");

/* STATUS payload, version 2 (later versions append fields; a reader uses the fields
 * its version knows when the length covers them). */
typedef struct status_body {
    uint8_t version;   /* STATUS_VERSION */
    uint8_t state;     /* STATUS_IDLE (between operations) or STATUS_IN_OP */
    uint8_t cur_op;    /* STATUS_IN_OP: hccl_op_type of the operation it is in */
    uint8_t cur_p2p;   /* STATUS_IN_OP: 1 when that is a point-to-point call */
    uint32_t cur_seq;  /* STATUS_IN_OP: its collective sequence number */
    uint32_t last_seq; /* last completed collective (0 = none yet) */
    uint8_t last_op;   /* its hccl_op_type */
    uint8_t idle_flags; /* STATUS_IDLE: STATUS_SUSPENDED (0 before it was defined) */
    uint8_t pad[2];
    /* version 2 */
    uint32_t cur_root; /* STATUS_IN_OP: the root it was given (UINT32_MAX: none) */
    uint32_t pad2;
} status_body;
_Static_assert(sizeof(status_body) == 24, "wire layout");
#define STATUS_BODY_V1 16u /* the length of a version 1 body */

/* Bytes the idle responder read ahead from a peer: whole messages of operations this
 * rank has not started yet (STATUS questions taken out and answered), handed to the
 * engine before anything more is read from the connection. */
typedef struct pushback {
    unsigned char *buf; /* PUSHBACK_CAP bytes, allocated at first use */
    uint32_t head, len; /* the engine reads buf[head, len) */
    uint32_t scan;      /* the responder has parsed the messages before scan */
    uint8_t stop;       /* the responder reads no more (full, error, or garbled) */
} pushback;

typedef struct xstate {
    msg_hdr hdr; /* sent, or received into */
    msg_hdr want;
    size_t done; /* bytes of header + payload moved */
    int finished;
    int checked;
} xstate;

struct hccl_netimpl {
    hccl_net base;
    uint32_t rank, nranks;
    hccl_conn **conns;
    hccl_fingerprint fp;
    uint64_t timeout_ns;  /* the operation's execution timeout (0: none) */
    uint64_t deadline_ns; /* its end: set at the operation's first clock read (pace_idle) */
    const int *abort_flag;
    const int *suspend_flag;
    uint32_t *p2p_sseq, *p2p_rseq;
    unsigned char *send_partial; /* a message to this peer is half sent */
    xstate *st;
    int st_cap;
    unsigned char *busy;
    struct pollfd *pfds;
    uint32_t *pids; /* direct access: pid per peer, 0 = none */
    uint32_t self_pid;
    hccl_peermem **pmem; /* per peer: its shared device memory, NULL = none */
    hccl_conn **live;     /* liveness connection per peer, or NULL */
    unsigned char *heard; /* a message of the current operation came from this peer */
    unsigned char *dead;  /* the liveness connection hung up */
    char err[1024];
    const char *err_abort; /* in err: a peer's ABORT reason, when err is that (else NULL) */
    /* The first peer whose ABORT frame came on its liveness connection (-1: none) and
     * its reason. It may have finished its part of an operation before it failed a
     * later one, so what it sent is still taken; a transfer that then waits on it, in
     * this operation or a later one, fails with that reason (the frame is read once). */
    int64_t aborted_peer;
    uint32_t aborted_seq; /* the collective aborted_peer failed in (its ABORT frame's seq; 0: not known) */
    char abort_why[1024];
    size_t abort_why_off; /* where in abort_why its peer's reason starts (0: none given) */
    /* STATUS answers between operations (the responder thread, below). */
    pthread_mutex_t io_lock; /* held by a responder pass, by abort and by a begin_op that waits */
    int idle;                /* atomic IDLE_*: between successful operations the responder may read */
    int broken;              /* an operation failed: the connections are not read again */
    uint64_t idle_since; /* hccl_coarse_ns() */
    /* Consecutive sched_yields of this rank's waits that took long (more than
     * yield_switched_ns: another thread ran meanwhile), up to 2; a quick one resets it.
     * At 2 the CPU is contended (more ranks than cores): waits yield on every idle
     * pass rather than once per yield_gap_ns, and poll longer before they sleep. One
     * slow yield is not enough: a rank's own helper threads wake now and then. Kept
     * from operation to operation. */
    int slow_yields;
    uint64_t yield_switched_ns; /* see YIELD_SWITCHED_NS */
    /* Waits that are not contended yield at most once per this many ns: 4 system
     * calls' time, so that where a system call costs a microsecond or more the yields
     * (which find nothing else to run) do not fill the wait and delay noticing the
     * peer's message by a system call each. */
    uint64_t yield_gap_ns;
    /* Agreed at init: some host has more ranks than CPUs. Waits are contended ones from
     * the start, whatever the yields say (one quick yield, found with nothing else to
     * run for a moment, no longer sends a wait back to yielding now and then and
     * sleeping after HCCL_NET_SPIN_US): 8 ranks on 2 cores, AllGather 128 B 20 -> 13
     * us (docs/performance.md). */
    int crowded;
    int placed;           /* crowded has been agreed (not yet during set-up) */
    uint64_t balanced_at; /* the clock at the last look at where the host's ranks run */
    hccl_fingerprint last_fp; /* the last completed collective (seq 0: none yet), whole: its
                                 number and operation for STATUS, the call for a mismatch
                                 found later */
    pushback *pb;            /* nranks */
    int serve;               /* the responder may answer for this communicator */
    int listed;              /* on the responder's list (resp_mu) */
    hccl_slots *slots;       /* one host's shared mailboxes (slot_gather), or NULL */
    uint64_t slot_seq;       /* slot_gather calls so far (the same on every rank) */
    char **where;            /* per peer: " (host NAME IP)" after its rank in failure messages, or
                                NULL (a rank of this host, or not said): hccl_net_set_peer_host */
    struct hccl_netimpl *resp_next;
};

/* What follows "rank N" in a failure message: where the peer runs ("" on this host). */
static const char *at(const hccl_netimpl *n, uint32_t p)
{
    return n->where && p < n->nranks && n->where[p] ? n->where[p] : "";
}

HCCL_PARAM_INT_IN(net_spin_us, "HCCL_NET_SPIN_US", 50, 0, 1000000, HCCL_PARAM_CLAMP)

/* A sched_yield that returns later than this ran another thread meanwhile (a yield
 * with nothing else to run is one system call: well under a microsecond on most
 * hosts), or later than twice a system call and 0.3 us where system calls are slower
 * (n->yield_switched_ns). */
#define YIELD_SWITCHED_NS 600u
/* How long waits keep yielding before they sleep while the CPU is contended. */
#define CONTENDED_SPIN_NS 1000000u
/* Idle passes of a wait that only pause (no clock, no yield): about 0.3 us. */
#define QUICK_PASSES 16u

/* ---- fingerprints ------------------------------------------------------------ */

/* A count array every rank must hold alike: its sum goes in the fingerprint's count
 * (what the report shows) and its FNV-1a hash in the digest (what catches arrays with
 * the same sum). */
static void shared_counts(const uint64_t *v, size_t k, hccl_fingerprint *fp)
{
    uint32_t h = 2166136261u;
    uint64_t sum = 0;
    for (size_t i = 0; v && i < k; i++) {
        sum += v[i];
        for (int b = 0; b < 64; b += 8) h = (h ^ (uint8_t)(v[i] >> b)) * 16777619u;
    }
    fp->count = sum;
    fp->digest = h;
}

void hccl_fingerprint_of(const hccl_op_args *a, uint32_t nranks, hccl_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    fp->op = (uint8_t)a->type;
    fp->dtype = (uint8_t)a->dtype;
    fp->redop = (uint8_t)HCCL_REDUCE_RESERVED;
    fp->root = UINT32_MAX;
    fp->count = a->count;
    switch (a->type) {
    case HCCL_OP_ALLREDUCE:
    case HCCL_OP_REDUCE_SCATTER:
        fp->redop = (uint8_t)a->redop;
        break;
    case HCCL_OP_REDUCE:
        fp->redop = (uint8_t)a->redop;
        fp->root = a->root;
        break;
    case HCCL_OP_REDUCE_SCATTER_V:
        fp->redop = (uint8_t)a->redop;
        shared_counts(a->send_counts, nranks, fp);
        break;
    case HCCL_OP_BROADCAST:
    case HCCL_OP_SCATTER:
    case HCCL_OP_GATHER:
        fp->root = a->root;
        break;
    case HCCL_OP_ALLGATHER_V:
        shared_counts(a->recv_counts, nranks, fp);
        break;
    case HCCL_OP_ALLTOALLVC:
        shared_counts(a->matrix, (size_t)nranks * nranks, fp);
        break;
    case HCCL_OP_ALLTOALLV:
        fp->count = UINT64_MAX;
        break;
    case HCCL_OP_BARRIER:
        fp->count = 0;
        break;
    case HCCL_OP_SEND:
    case HCCL_OP_RECV:
    case HCCL_OP_BATCH_SEND_RECV:
        fp->p2p = 1;
        /* All point-to-point calls match each other, as NCCL's and MPI's do: a Send
         * with a Recv or with a BatchSendRecv item, and whatever the dtypes; only the
         * byte sizes must agree (each message's length). */
        fp->op = HCCL_OP_BATCH_SEND_RECV;
        fp->dtype = (uint8_t)HCCL_DATA_TYPE_RESERVED;
        fp->count = UINT64_MAX;
        break;
    default:
        break;
    }
}

void hccl_fingerprint_str(const hccl_fingerprint *fp, char *buf, size_t len)
{
    if (fp->p2p) {
        snprintf(buf, len, "point-to-point transfer");
        return;
    }
    size_t o = (size_t)snprintf(buf, len, "%s(", hccl_op_name(fp->op));
    if (o < len && fp->op != HCCL_OP_BARRIER) {
        if (fp->digest)
            o += (size_t)snprintf(buf + o, len - o, "%s=%llu in all (digest %08x), ",
                                  fp->op == HCCL_OP_ALLGATHER_V ? "recvCounts"
                                  : fp->op == HCCL_OP_REDUCE_SCATTER_V ? "sendCounts"
                                                                       : "sendCountMatrix",
                                  (unsigned long long)fp->count, fp->digest);
        else if (fp->count != UINT64_MAX)
            o += (size_t)snprintf(buf + o, len - o, "count=%llu, ", (unsigned long long)fp->count);
        if (o < len) o += (size_t)snprintf(buf + o, len - o, "%s", hccl_dtype_name(fp->dtype));
        if (o < len && fp->redop != HCCL_REDUCE_RESERVED)
            o += (size_t)snprintf(buf + o, len - o, ", %s", hccl_redop_name(fp->redop));
        if (o < len && fp->root != UINT32_MAX) o += (size_t)snprintf(buf + o, len - o, ", root=%u", fp->root);
    }
    if (o < len) snprintf(buf + o, len - o, ")");
}

static void fp_to_hdr(const hccl_fingerprint *fp, uint32_t seq, uint64_t len, msg_hdr *h)
{
    memset(h, 0, sizeof *h);
    h->seq = seq;
    h->op = (uint8_t)fp->op;
    h->flags = (uint8_t)((fp->p2p ? FLAG_P2P : 0) | (fp->algo & 0xfu) << FLAG_ALGO_SHIFT);
    h->dtype = (uint8_t)fp->dtype;
    h->redop = (uint8_t)fp->redop;
    h->root = fp->root;
    h->digest = fp->digest;
    h->count = fp->count;
    h->len = len;
}

static void hdr_to_fp(const msg_hdr *h, hccl_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    fp->op = h->op;
    fp->p2p = (h->flags & FLAG_P2P) != 0;
    fp->algo = (uint8_t)(h->flags >> FLAG_ALGO_SHIFT);
    fp->seq = h->seq;
    fp->dtype = h->dtype;
    fp->redop = h->redop;
    fp->root = h->root;
    fp->digest = h->digest;
    fp->count = h->count;
}

/* Settle a connection's deferred wake-up (transport.h: flush). */
static inline void conn_flush(hccl_conn *c)
{
    if (c && c->ops->flush) c->ops->flush(c);
}

/* Receive from peer p's data connection c: first what the responder read ahead. */
static HcclResult net_recv(hccl_netimpl *n, uint32_t p, hccl_conn *c, const struct iovec *iov, int iovcnt,
                           size_t *moved)
{
    pushback *b = n->pb && c == n->conns[p] ? &n->pb[p] : NULL;
    if (!b || b->head == b->len) return c->ops->recv(c, iov, iovcnt, moved);
    size_t got = 0;
    for (int i = 0; i < iovcnt && b->head < b->len; i++) {
        size_t k = HCCL_MIN(iov[i].iov_len, (size_t)(b->len - b->head));
        memcpy(iov[i].iov_base, b->buf + b->head, k);
        b->head += (uint32_t)k;
        got += k;
        if (k < iov[i].iov_len) break;
    }
    if (b->head == b->len) { /* drained: the memory goes back */
        hccl_free(b->buf);
        memset(b, 0, sizeof *b);
    }
    *moved = got;
    return HCCL_SUCCESS;
}

/* Reads from peer's connection c into buf until it holds want bytes (have already
 * there), the connection fails, or a read finds nothing after deadline_ns; settles
 * the connection's deferred wake-ups. Returns the bytes held. For the failure paths:
 * ABORT frames, and what peers sent when an operation is found mismatched. */
static size_t read_until(hccl_netimpl *n, uint32_t peer, hccl_conn *c, void *buf, size_t have, size_t want,
                         uint64_t deadline_ns)
{
    while (have < want) {
        struct iovec iov = {(char *)buf + have, want - have};
        size_t moved = 0;
        if (net_recv(n, peer, c, &iov, 1, &moved) != HCCL_SUCCESS) break;
        have += moved;
        if (moved) continue;
        if (hccl_now_ns() > deadline_ns) break;
        sched_yield();
    }
    conn_flush(c);
    return have;
}

/* Text built in a fixed buffer: a piece that does not fit whole ends it with "...". */
typedef struct tbuf {
    char *s;
    size_t len, o; /* len >= 4; o + 4 <= len always */
    int full;
} tbuf;

static void tb_add(tbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_add(tbuf *t, const char *fmt, ...)
{
    if (t->full) return;
    char piece[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k >= sizeof piece || t->o + (size_t)k + 4 > t->len) {
        t->full = 1;
        memcpy(t->s + t->o, "...", 4);
        t->o += 3;
        return;
    }
    memcpy(t->s + t->o, piece, (size_t)k + 1);
    t->o += (size_t)k;
}

static void tb_run(tbuf *t, uint32_t lo, uint32_t hi)
{
    if (lo == hi) tb_add(t, "%s%u", t->o ? ", " : "", lo);
    else tb_add(t, "%s%u-%u", t->o ? ", " : "", lo, hi);
}

/* ---- errors ---------------------------------------------------------------------- */

static HcclResult fail(hccl_netimpl *n, HcclResult res, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static HcclResult fail(hccl_netimpl *n, HcclResult res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->err, sizeof n->err, fmt, ap);
    va_end(ap);
    n->err_abort = NULL;
    return res;
}

/* Peer p aborted with reason why (may be ""): the failure, its reason kept apart. */
static HcclResult peer_abort(hccl_netimpl *n, uint32_t p, const char *why)
{
    int len = snprintf(n->err, sizeof n->err, "rank %u%s aborted: ", p, at(n, p));
    if (len <= 0 || (size_t)len >= sizeof n->err) len = 0;
    snprintf(n->err + len, sizeof n->err - (size_t)len, "%s", why[0] ? why : "(no reason given)");
    n->err_abort = why[0] && len ? n->err + len : NULL;
    return HCCL_E_REMOTE;
}

static HcclResult net_fail(hccl_net *base, HcclResult code, const char *why)
{
    return fail((hccl_netimpl *)base, code, "%s", why);
}

/* A broadcast's (or scatter's) receiver's root did not act as root: which ranks sent
 * us data of this operation as roots ("; rank 0 called Broadcast(count=1024, fp32,
 * root=0)")? Reads a message header from each other peer, waiting up to 100 ms in all
 * for the ones not there yet; the operation fails and the connections are shut after
 * this, so what is read is not needed again. */
static void root_evidence(hccl_netimpl *n, uint32_t skip, char *out, size_t len)
{
    tbuf t = {out, len, 0, 0};
    out[0] = 0;
    uint64_t dl = hccl_now_ns() + 100000000ull;
    for (uint32_t p = 0; p < n->nranks; p++) {
        if (p == n->rank || p == skip || !n->conns[p]) continue;
        msg_hdr h;
        if (read_until(n, p, n->conns[p], &h, 0, sizeof h, dl) < sizeof h || h.op != (uint8_t)n->fp.op || (h.flags & FLAG_P2P) || h.seq != n->fp.seq ||
            h.root != p)
            continue;
        hccl_fingerprint f;
        char theirs[160];
        hdr_to_fp(&h, &f);
        hccl_fingerprint_str(&f, theirs, sizeof theirs);
        tb_add(&t, "; rank %u%s called %s", p, at(n, p), theirs);
    }
}

/* The received header disagrees with what we posted: say what each side called. */
static HcclResult mismatch(hccl_netimpl *n, hccl_xfer *x, xstate *s)
{
    char mine[160], theirs[160];
    hccl_fingerprint f;
    hccl_fingerprint_str(&n->fp, mine, sizeof mine);
    hdr_to_fp(&s->hdr, &f);
    hccl_fingerprint_str(&f, theirs, sizeof theirs);
    if (n->fp.p2p && f.p2p)
        return fail(n, HCCL_E_PARA,
                    "point-to-point size mismatch: rank %u posts a receive of %llu bytes from rank %u%s, which sent "
                    "%llu bytes (count or dtype differ)",
                    n->rank, (unsigned long long)s->want.len, x->peer, at(n, x->peer), (unsigned long long)s->hdr.len);
    if (!n->fp.p2p && !f.p2p && seq_after(s->hdr.seq, s->want.seq) &&
        (n->fp.op == HCCL_OP_BROADCAST || n->fp.op == HCCL_OP_SCATTER) && n->fp.root == x->peer) {
        /* We wait for this broadcast's (scatter's) data from the root we were given,
         * and that rank has moved on: the small one's root sends and returns, so no
         * message told us earlier (algo/oneshot_broadcast.c). The rank that did act as
         * root, if any, sent us its data: name it. */
        char evidence[400];
        root_evidence(n, x->peer, evidence, sizeof evidence);
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s and waits for the data of its root, rank %u%s, "
                    "which is at op #%u %s: rank %u did not act as the root of op #%u (the ranks disagree about "
                    "the root) or skipped a collective%s",
                    s->want.seq, n->rank, mine, x->peer, at(n, x->peer), s->hdr.seq, theirs, x->peer, s->want.seq,
                    evidence);
    }
    if (!n->fp.p2p && !f.p2p && seq_after(s->hdr.seq, s->want.seq) && (n->fp.op == HCCL_OP_REDUCE || n->fp.op == HCCL_OP_GATHER) &&
        n->fp.root == n->rank)
        /* The eager Reduce or Gather (algo/oneshot_reduce.c): its input went elsewhere,
         * or the rank took itself for the root. */
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s and waits for rank %u's input, but rank %u%s is "
                    "at op #%u %s: it did not send its input of op #%u here (the ranks disagree about the root) or "
                    "skipped a collective",
                    s->want.seq, n->rank, mine, x->peer, x->peer, at(n, x->peer), s->hdr.seq, theirs, s->want.seq);
    if (!n->fp.p2p && !f.p2p && seq_after(s->want.seq, s->hdr.seq) &&
        (((f.op == HCCL_OP_BROADCAST || f.op == HCCL_OP_SCATTER) && f.root == x->peer) ||
         ((f.op == HCCL_OP_REDUCE || f.op == HCCL_OP_GATHER) && f.root == n->rank))) {
        /* An eager root's data, or an eager Reduce's input meant for us as the root,
         * that no operation here took (what this rank called there, if it was the
         * last collective: found after a later one over the slots). */
        char here[200] = "";
        if (n->last_fp.seq == s->hdr.seq && n->last_fp.seq) {
            char last[160];
            hccl_fingerprint_str(&n->last_fp, last, sizeof last);
            snprintf(here, sizeof here, ", where op #%u was %s", s->hdr.seq, last);
        }
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u %s on rank %u: rank %u%s's message of op #%u %s was never "
                    "received here%s (the ranks disagree about that operation's root) or a rank skipped or added a "
                    "collective",
                    s->want.seq, mine, n->rank, x->peer, at(n, x->peer), s->hdr.seq, theirs, here);
    }
    if (!n->fp.p2p && !f.p2p && s->hdr.seq != s->want.seq)
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s, rank %u%s is at op #%u %s (a rank skipped or "
                    "added a collective)",
                    s->want.seq, n->rank, mine, x->peer, at(n, x->peer), s->hdr.seq, theirs);
    if (!n->fp.p2p && !f.p2p && s->hdr.len != s->want.len && memcmp(&s->hdr, &s->want, offsetof(msg_hdr, len)) == 0)
        return fail(n, HCCL_E_PARA,
                    "size mismatch in op #%u %s: rank %u expects %llu bytes from rank %u%s, which sent %llu (counts "
                    "differ between ranks)",
                    s->want.seq, mine, n->rank, (unsigned long long)s->want.len, x->peer, at(n, x->peer),
                    (unsigned long long)s->hdr.len);
    if (!n->fp.p2p && !f.p2p && f.algo != n->fp.algo && f.algo && n->fp.algo) {
        hccl_fingerprint g = f;
        g.algo = n->fp.algo;
        g.seq = n->fp.seq;
        if (memcmp(&g, &n->fp, sizeof g) == 0) /* the same call, another algorithm */
            return fail(n, HCCL_E_PARA,
                        "configuration mismatch at op #%u %s: rank %u runs it with the %s algorithm, rank %u%s with "
                        "%s (HCCL_ALGO, HCCL_REFERENCE_ALGOS or another setting that chooses algorithms differs "
                        "between ranks; it must be the same on every rank)",
                        s->want.seq, mine, n->rank, hccl_algo_id_name((hccl_algo_id)(n->fp.algo - 1), n->fp.op),
                        x->peer, at(n, x->peer), hccl_algo_id_name((hccl_algo_id)(f.algo - 1), f.op));
    }
    if (!n->fp.p2p && f.p2p)
        /* The peer's point-to-point message came first: the peer may well have called
         * this collective too, after a send that nothing here received. */
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s, but rank %u%s sent it a point-to-point message "
                    "of %llu bytes first, which no receive on rank %u took (a Send or BatchSendRecv send item without "
                    "its matching receive, or a collective where rank %u called a point-to-point transfer)",
                    s->want.seq, n->rank, mine, x->peer, at(n, x->peer), (unsigned long long)s->hdr.len, n->rank,
                    x->peer);
    return fail(n, HCCL_E_PARA, "operation mismatch at op #%u: rank %u called %s, rank %u%s called %s", s->want.seq,
                n->rank, n->fp.p2p ? "a point-to-point transfer" : mine, x->peer, at(n, x->peer), theirs);
}

/* The peer sent an ABORT frame: read its text (part may already be in buf). */
static HcclResult peer_aborted_on(hccl_netimpl *n, hccl_conn *c, hccl_xfer *x, xstate *s)
{
    char text[ABORT_TEXT_MAX + 1];
    size_t want = s->hdr.len < ABORT_TEXT_MAX ? (size_t)s->hdr.len : ABORT_TEXT_MAX;
    size_t have = s->done - sizeof(msg_hdr);
    if (have > want) have = want;
    if (have) memcpy(text, x->buf, have);
    have = read_until(n, x->peer, c, text, have, want, hccl_now_ns() + 1000000000ull);
    text[have] = 0;
    return peer_abort(n, x->peer, text);
}

static HcclResult peer_aborted(hccl_netimpl *n, hccl_xfer *x, xstate *s)
{
    return peer_aborted_on(n, n->conns[x->peer], x, s);
}

/* Is a receive from peer part-way through (its bytes are not ours to read)? */
static int receiving_from(hccl_netimpl *n, hccl_xfer *x, int cnt, uint32_t peer)
{
    for (int i = 0; i < cnt; i++)
        if (x[i].peer == peer && x[i].dir == HCCL_XFER_RECV && n->st[i].done > 0 && !n->st[i].finished) return 1;
    return 0;
}

/* Read and drop len bytes from peer's connection c: 1 when they were all there by the
 * deadline. */
static int skip_bytes(hccl_netimpl *n, uint32_t peer, hccl_conn *c, uint64_t len, uint64_t deadline_ns)
{
    unsigned char sink[4096];
    while (len) {
        size_t want = len < sizeof sink ? (size_t)len : sizeof sink;
        if (read_until(n, peer, c, sink, 0, want, deadline_ns) < want) return 0;
        len -= want;
    }
    return 1;
}

/* Messages a failing peer may have sent before its ABORT frame on a data connection
 * (its part of the operation it gave up, which no longer matters). */
#define ABORT_SKIP_MESSAGES 16

/* If the peer left an ABORT frame on c, report its reason (HCCL_E_REMOTE). On a data
 * connection (data = 1) the frame may follow messages the peer sent earlier in the
 * operation: those are skipped (at a message boundary: the caller knows no receive
 * from the peer is part-way through). A control connection carries ABORT frames only.
 * seq (unless NULL): the frame's, the collective the peer failed in (0: not known). */
static HcclResult read_abort_on(hccl_netimpl *n, hccl_conn *c, uint32_t peer, int data, uint32_t *seq)
{
    uint64_t dl = hccl_now_ns() + 50000000ull;
    msg_hdr h;
    for (int k = 0;; k++) {
        if (read_until(n, peer, c, &h, 0, sizeof h, dl) < sizeof h) return HCCL_E_TCP_TRANSFER;
        if (h.op == OP_ABORT) {
            if (seq) *seq = h.seq;
            break;
        }
        if (!data || k == ABORT_SKIP_MESSAGES || !skip_bytes(n, peer, c, h.len, dl)) return HCCL_E_TCP_TRANSFER;
    }
    xstate s;
    memset(&s, 0, sizeof s);
    s.hdr = h;
    s.done = sizeof h;
    hccl_xfer x = {HCCL_XFER_RECV, peer, NULL, 0};
    return peer_aborted_on(n, c, &x, &s);
}

/* After a failed transfer: the peer's ABORT frame, on its control connection (shared
 * memory peers: always at a message boundary) or, when data_ok (no receive from it is
 * part-way through), on the data connection. */
static HcclResult read_abort(hccl_netimpl *n, uint32_t peer, int data_ok)
{
    if (n->live && n->live[peer] && read_abort_on(n, n->live[peer], peer, 0, NULL) == HCCL_E_REMOTE)
        return HCCL_E_REMOTE;
    return data_ok ? read_abort_on(n, n->conns[peer], peer, 1, NULL) : HCCL_E_TCP_TRANSFER;
}

/* A transfer waits on n->aborted_peer: its reason is the error. */
static HcclResult peer_aborted_before(hccl_netimpl *n)
{
    memcpy(n->err, n->abort_why, sizeof n->err);
    n->err_abort = n->abort_why_off ? n->err + n->abort_why_off : NULL;
    return HCCL_E_REMOTE;
}

static HcclResult check_header(hccl_netimpl *n, hccl_xfer *x, xstate *s)
{
    if (s->hdr.op == OP_ABORT) return peer_aborted(n, x, s);
    if (s->hdr.op == OP_STATUS) return HCCL_E_AGAIN; /* the peer timed out: join its status round */
    if (memcmp(&s->hdr, &s->want, sizeof s->hdr) == 0) return HCCL_SUCCESS;
    return mismatch(n, x, s);
}

/* ---- the engine -------------------------------------------------------------------- */

/* Match self-transfers (peer == rank) in posting order with memmove. */
static HcclResult do_self(hccl_netimpl *n, hccl_xfer *x, int cnt)
{
    int si = 0, ri = 0;
    for (;;) {
        while (si < cnt && !(x[si].peer == n->rank && x[si].dir == HCCL_XFER_SEND)) si++;
        while (ri < cnt && !(x[ri].peer == n->rank && x[ri].dir == HCCL_XFER_RECV)) ri++;
        if (si == cnt && ri == cnt) return HCCL_SUCCESS;
        if (si == cnt || ri == cnt)
            return fail(n, HCCL_E_PARA, "rank %u posted a %s to itself without the matching %s", n->rank,
                        si == cnt ? "receive" : "send", si == cnt ? "send" : "receive");
        if (x[si].bytes != x[ri].bytes)
            return fail(n, HCCL_E_PARA, "rank %u sends %zu bytes to itself but receives %zu", n->rank, x[si].bytes,
                        x[ri].bytes);
        if (x[si].bytes) memmove(x[ri].buf, x[si].buf, x[si].bytes);
        n->st[si].finished = n->st[ri].finished = 1;
        si++;
        ri++;
    }
}

/* ---- STATUS: who has reached a collective that timed out -------------------------------- */

static const char *op_str(unsigned op)
{
    return op < HCCL_OP_COUNT ? hccl_op_name((hccl_op_type)op) : "an unknown operation";
}

/* This rank's STATUS frame: in_op (it timed out in n->fp, a question every peer
 * answers; 2: an answer from inside n->fp, never answered itself) or idle (the
 * responder's answer, never answered itself). */
static void status_fill(const hccl_netimpl *n, int in_op, msg_hdr *h, status_body *b)
{
    memset(h, 0, sizeof *h);
    memset(b, 0, sizeof *b);
    h->op = OP_STATUS;
    h->len = sizeof *b;
    b->version = STATUS_VERSION;
    b->last_seq = n->last_fp.seq;
    b->last_op = (uint8_t)n->last_fp.op;
    if (in_op) {
        h->seq = n->fp.seq;
        b->state = STATUS_IN_OP;
        b->cur_op = (uint8_t)n->fp.op;
        b->cur_p2p = (uint8_t)(n->fp.p2p != 0);
        b->cur_seq = n->fp.seq;
        b->cur_root = n->fp.root;
        if (in_op == 2) h->flags = FLAG_STATUS_REPLY;
    } else {
        h->seq = n->last_fp.seq;
        h->flags = FLAG_STATUS_REPLY;
        b->state = STATUS_IDLE;
        if (n->suspend_flag && __atomic_load_n(n->suspend_flag, __ATOMIC_ACQUIRE)) b->idle_flags = STATUS_SUSPENDED;
    }
}

/* Send a STATUS frame to p, best effort: nothing when the stream does not take a
 * byte now; a frame begun is finished within 100 ms, or the stream is marked
 * mid-message (so no ABORT frame is written into it). */
static void status_send(hccl_netimpl *n, uint32_t p, int in_op)
{
    msg_hdr h;
    status_body b;
    status_fill(n, in_op, &h, &b);
    unsigned char frame[sizeof h + sizeof b];
    memcpy(frame, &h, sizeof h);
    memcpy(frame + sizeof h, &b, sizeof b);
    hccl_conn *c = n->conns[p];
    size_t done = 0;
    uint64_t dl = hccl_now_ns() + 100000000ull;
    while (done < sizeof frame) {
        struct iovec iov = {frame + done, sizeof frame - done};
        size_t moved = 0;
        if (c->ops->send(c, &iov, 1, &moved) != HCCL_SUCCESS) break;
        done += moved;
        if (done == 0 || (done < sizeof frame && hccl_now_ns() > dl)) break;
        if (!moved) sched_yield();
    }
    conn_flush(c);
    if (done && done < sizeof frame) n->send_partial[p] = 1;
}

/* What the status round learnt about one peer. */
typedef struct peer_status {
    uint8_t reached;  /* it has reached (or passed) the operation */
    uint8_t answered; /* it told us where it is */
    uint8_t stop;     /* read no more from it */
    uint8_t listed;   /* already named in the report */
    uint8_t adopted;  /* its STATUS frame began in one of the operation's receives */
    uint8_t past;     /* it has completed the operation (is idle after it, or in a later one) */
    uint8_t heard;    /* a message of the operation came from it (it reached the operation) */
    uint8_t state, cur_op, cur_p2p, last_op, has_last, has_root;
    uint8_t suspended; /* idle, with its operations refused (HcclCommSuspend) */
    uint32_t cur_seq, last_seq, cur_root;
    uint32_t have; /* bytes of frame read */
    unsigned char frame[sizeof(msg_hdr) + STATUS_BODY_MAX];
} peer_status;

/* A whole frame from the peer: is it past our operation, and if not, where is it? */
static void status_classify(const hccl_netimpl *n, peer_status *s, const msg_hdr *h, const unsigned char *body)
{
    uint32_t k = n->fp.seq;
    if (h->op == OP_ABORT) { /* it failed by itself: its reason reaches every rank */
        s->reached = 1;
        return;
    }
    if (h->op != OP_STATUS) { /* a data message (its payload follows: read no further) */
        s->stop = 1;
        if (!(h->flags & FLAG_P2P) && !seq_after(k, h->seq)) {
            s->reached = 1; /* of this operation or a later one */
            s->past = seq_after(h->seq, k);
            return;
        }
        s->answered = 1;
        s->state = STATUS_IN_OP;
        s->cur_p2p = (h->flags & FLAG_P2P) != 0;
        s->cur_op = h->op;
        s->cur_seq = h->seq;
        return;
    }
    s->answered = 1;
    status_body b;
    memset(&b, 0, sizeof b);
    if (h->len >= STATUS_BODY_V1) memcpy(&b, body, h->len < sizeof b ? (size_t)h->len : sizeof b);
    if (b.version >= 2 && h->len >= sizeof b && b.state == STATUS_IN_OP) {
        s->has_root = 1;
        s->cur_root = b.cur_root;
    }
    if (b.version >= 1 && (b.state == STATUS_IDLE || b.state == STATUS_IN_OP)) {
        s->state = b.state;
        s->cur_op = b.cur_op;
        s->cur_p2p = b.cur_p2p != 0;
        s->cur_seq = b.cur_seq;
        s->last_seq = b.last_seq;
        s->last_op = b.last_op;
        s->has_last = 1;
        s->suspended = b.state == STATUS_IDLE && (b.idle_flags & STATUS_SUSPENDED);
        /* In the same collective number but another operation: it skipped ours. */
        s->reached = b.state == STATUS_IN_OP
                         ? !s->cur_p2p && (seq_after(b.cur_seq, k) || (b.cur_seq == k && b.cur_op == (uint8_t)n->fp.op))
                         : !seq_after(k, b.last_seq);
        s->past = b.state == STATUS_IN_OP ? !s->cur_p2p && seq_after(b.cur_seq, k) : !seq_after(k, b.last_seq);
    } else {
        s->reached = !seq_after(k, h->seq); /* no details we can read */
    }
}

/* A collective timed out here. Every rank that reached it times out at about the
 * same moment, so: send a STATUS frame to every peer (where our stream is at a
 * message boundary), then listen for a short grace period for theirs. Peers inside
 * an operation answer with their own round; idle ones through the responder (below)
 * with their last completed collective. The peers whose frame says they reached it
 * are fine; the others are named with what they said, or as silent. A peer heard from
 * in this operation is asked too (one frozen after it sent its first messages is named
 * when it stays silent), unless this rank is inside one of its messages: that one is
 * named among the ranks this rank was waiting for. */
static void status_round(hccl_netimpl *n, hccl_xfer *x, int cnt, peer_status *ps)
{
    for (uint32_t p = 0; p < n->nranks; p++) {
        ps[p].heard = p != n->rank && n->heard[p];
        ps[p].reached = p == n->rank || (ps[p].heard && receiving_from(n, x, cnt, p));
        if (p == n->rank || n->send_partial[p] || !n->conns[p]) continue;
        status_send(n, p, 1);
    }
    /* A peer whose STATUS question arrived where we expected its data (it timed out
     * first): take its frame from that receive, so that its answer counts too. */
    for (int i = 0; i < cnt; i++) {
        xstate *s = &n->st[i];
        peer_status *q = &ps[x[i].peer];
        if (x[i].dir != HCCL_XFER_RECV || s->finished || s->done < sizeof(msg_hdr) || s->hdr.op != OP_STATUS ||
            q->adopted)
            continue;
        q->adopted = 1;
        q->reached = 0;
        if (s->hdr.len > STATUS_BODY_MAX) {
            q->stop = 1;
            continue;
        }
        size_t body = HCCL_MIN((size_t)(s->done - sizeof(msg_hdr)), (size_t)s->hdr.len);
        memcpy(q->frame, &s->hdr, sizeof(msg_hdr));
        if (body) memcpy(q->frame + sizeof(msg_hdr), x[i].buf, body);
        q->have = (uint32_t)(sizeof(msg_hdr) + body);
        if (body == s->hdr.len) {
            status_classify(n, q, &s->hdr, q->frame + sizeof(msg_hdr));
            q->have = 0;
        }
    }
    uint64_t end = hccl_now_ns() + STATUS_GRACE_NS;
    for (int pending = 1; pending && hccl_now_ns() < end;) {
        pending = 0;
        for (uint32_t p = 0; p < n->nranks; p++) {
            peer_status *s = &ps[p];
            if (s->reached || s->answered || s->stop || !n->conns[p] || (!s->adopted && receiving_from(n, x, cnt, p)))
                continue;
            pending = 1;
            msg_hdr h;
            size_t need = sizeof h;
            if (s->have >= sizeof h) {
                memcpy(&h, s->frame, sizeof h);
                need += (size_t)h.len; /* a STATUS body, checked below */
            }
            struct iovec iov = {s->frame + s->have, need - s->have};
            size_t moved = 0;
            if (net_recv(n, p, n->conns[p], &iov, 1, &moved) != HCCL_SUCCESS) {
                s->stop = 1;
                continue;
            }
            s->have += (uint32_t)moved;
            if (s->have < need) continue;
            memcpy(&h, s->frame, sizeof h);
            if (s->have == sizeof h && h.op == OP_STATUS && h.len) {
                if (h.len > STATUS_BODY_MAX) s->stop = 1; /* garbled: trust nothing after it */
                continue;                                 /* else read the body */
            }
            status_classify(n, s, &h, s->frame + sizeof h);
            s->have = 0;
        }
        if (pending) usleep(1000);
    }
}

static int same_story(const peer_status *a, const peer_status *b)
{
    return a->answered == b->answered && a->heard == b->heard && a->state == b->state && a->cur_op == b->cur_op &&
           a->cur_p2p == b->cur_p2p && a->cur_seq == b->cur_seq && a->has_last == b->has_last &&
           a->last_seq == b->last_seq && a->last_op == b->last_op && a->suspended == b->suspended;
}

/* Where an answering peer said it is: "idle; last completed: #1 AllReduce". */
static void status_story(const peer_status *s, char *buf, size_t len)
{
    char last[80] = "";
    if (s->has_last && s->last_seq)
        snprintf(last, sizeof last, "; last completed: #%u %s", s->last_seq, op_str(s->last_op));
    else if (s->has_last)
        snprintf(last, sizeof last, "; no collective completed yet");
    if (s->state == STATUS_IDLE && s->suspended)
        snprintf(buf, len, "idle: suspended by HcclCommSuspend, its operations are refused%s", last);
    else if (s->state == STATUS_IDLE) snprintf(buf, len, "idle%s", last);
    else if (s->state == STATUS_IN_OP && s->cur_p2p) snprintf(buf, len, "in a point-to-point call%s", last);
    else if (s->state == STATUS_IN_OP) snprintf(buf, len, "in %s #%u%s", op_str(s->cur_op), s->cur_seq, last);
    else snprintf(buf, len, "it answered without details");
}

/* "rank 1 never reached AllReduce #2 (idle; last completed: #1 AllReduce); rank 3: no
 * answer (...)", ranks with the same story on the same host together ("ranks 1-3, 5
 * (host node-b 10.0.0.2) never ..."). */
static void status_report(const hccl_netimpl *n, peer_status *ps, char *out, size_t len)
{
    tbuf t = {out, len, 0, 0};
    out[0] = 0;
    for (uint32_t p = 0; p < n->nranks; p++) {
        if (ps[p].reached || ps[p].listed) continue;
        char list[160];
        tbuf r = {list, sizeof list, 0, 0};
        list[0] = 0;
        uint32_t count = 0, lo = 0, hi = 0;
        for (uint32_t q = p; q < n->nranks; q++) {
            if (ps[q].reached || ps[q].listed || !same_story(&ps[p], &ps[q]) || strcmp(at(n, p), at(n, q)) != 0)
                continue;
            ps[q].listed = 1;
            if (count++ && q == hi + 1) {
                hi = q;
                continue;
            }
            if (count > 1) tb_run(&r, lo, hi);
            lo = hi = q;
        }
        tb_run(&r, lo, hi);
        tb_add(&t, "%s%s %s%s", t.o ? "; " : "", count > 1 ? "ranks" : "rank", list, at(n, p));
        if (ps[p].answered) {
            char story[200];
            status_story(&ps[p], story, sizeof story);
            tb_add(&t, " never reached %s #%u (%s)", op_str(n->fp.op), n->fp.seq, story);
        } else if (ps[p].heard) {
            tb_add(&t, ": no answer (it reached %s #%u, then stopped: frozen, dead, unreachable, or still waiting in it)",
                   op_str(n->fp.op), n->fp.seq);
        } else {
            tb_add(&t, ": no answer (frozen, dead, unreachable, or stuck elsewhere)");
        }
    }
}

static int peek_from(hccl_netimpl *n, uint32_t p, void *buf, size_t len);

/* The transfers still waiting, each direction and peer once, in the order first met,
 * with how many when several ("receive from rank 1 (200 messages), send to rank 2"):
 * a batch of many items to few peers names every peer, not the first one's items
 * over and over until the text is full. Pairs beyond the first WAITS_MAX are counted
 * ("and 5 more messages"). */
#define WAITS_MAX 32
typedef struct wait_pair {
    hccl_xfer_dir dir;
    uint32_t peer, count;
} wait_pair;

static void waits_str(const hccl_netimpl *n, const hccl_xfer *x, int cnt, tbuf *t)
{
    wait_pair w[WAITS_MAX];
    int nw = 0;
    uint32_t more = 0;
    for (int i = 0; i < cnt; i++) {
        if (n->st[i].finished) continue;
        int k = 0;
        while (k < nw && (w[k].dir != x[i].dir || w[k].peer != x[i].peer)) k++;
        if (k < nw) w[k].count++;
        else if (nw < WAITS_MAX) w[nw++] = (wait_pair){x[i].dir, x[i].peer, 1};
        else more++;
    }
    for (int k = 0; k < nw; k++) {
        char many[40] = "";
        if (w[k].count > 1) snprintf(many, sizeof many, " (%u messages)", w[k].count);
        tb_add(t, "%s%s rank %u%s%s", t->o ? ", " : "", w[k].dir == HCCL_XFER_SEND ? "send to" : "receive from",
               w[k].peer, at(n, w[k].peer), many);
    }
    if (more) tb_add(t, ", and %u more message%s with other peers", more, more > 1 ? "s" : "");
}

/* by: the peer whose STATUS question arrived where this rank expected its data (it
 * timed out first), UINT32_MAX when this rank's own deadline passed. Said as the
 * peer's timeout when this rank's own had not expired (HCCL_EXEC_TIMEOUT 0 here, or
 * longer than the peer's). */
static HcclResult timed_out(hccl_netimpl *n, hccl_xfer *x, int cnt, uint32_t by)
{
    char peers[640], fps[160], tmo[160];
    if (by != UINT32_MAX && (!n->deadline_ns || hccl_now_ns() < n->deadline_ns))
        snprintf(tmo, sizeof tmo,
                 "timed out (rank %u's HCCL_EXEC_TIMEOUT: it asked where this rank is; this rank's own had not "
                 "expired) on rank %u", by, n->rank);
    else
        snprintf(tmo, sizeof tmo, "timed out (HCCL_EXEC_TIMEOUT) on rank %u", n->rank);
    tbuf pt = {peers, sizeof peers, 0, 0};
    peers[0] = 0;
    /* This rank fails the operation, but asks its peers first (up to a second): a slot
     * round of it that a late peer completes meanwhile must fail there too
     * (slot_peer_left). */
    if (n->slots) hccl_slots_leave(n->slots);
    waits_str(n, x, cnt, &pt);
    hccl_fingerprint_str(&n->fp, fps, sizeof fps);
    /* A link that swallows data names the real culprit, even when we wait on a
     * healthy peer that waits on it. */
    char why[160];
    int unreachable = 0;
    for (uint32_t p = 0; p < n->nranks && !pt.full; p++) {
        hccl_conn *c = n->conns[p];
        if (c && c->ops->stalled && c->ops->stalled(c, why, sizeof why)) {
            tb_add(&pt, "; rank %u%s looks unreachable (%s)", p, at(n, p), why);
            unreachable = 1;
        }
    }
    if (n->fp.p2p) {
        /* No status round of our own; but the peers that asked where this rank is
         * (by, and those whose question waits at the head of their stream: their
         * collective timed out) get an answer, that it is in a point-to-point call,
         * so they do not take its ABORT frame for a sign that it reached their
         * collective. */
        for (uint32_t p = 0; p < n->nranks; p++) {
            msg_hdr h;
            if (p == n->rank || n->send_partial[p] || !n->conns[p]) continue;
            if (p == by || (!receiving_from(n, x, cnt, p) && peek_from(n, p, &h, sizeof h) && h.op == OP_STATUS &&
                            !(h.flags & FLAG_STATUS_REPLY)))
                status_send(n, p, 2);
        }
        /* An unreachable link is the story; the missing call is the guess without one. */
        return fail(n, HCCL_E_TIMEOUT, "%s %s waiting for: %s%s", fps, tmo, peers,
                    unreachable ? "" : " (the peer did not post the matching call, or is stuck)");
    }
    peer_status *ps = hccl_calloc(n->nranks, sizeof *ps);
    if (!ps)
        return fail(n, HCCL_E_TIMEOUT,
                    "op #%u %s %s (out of memory to ask the other ranks where they are); this rank was waiting "
                    "for: %s",
                    n->fp.seq, fps, tmo, peers);
    char missing[800];
    status_round(n, x, cnt, ps);
    status_report(n, ps, missing, sizeof missing);
    char roots[400] = "";
    if (!missing[0] && n->fp.root != UINT32_MAX) { /* all here: did they pass one root? */
        tbuf t = {roots, sizeof roots, 0, 0};
        for (uint32_t p = 0; p < n->nranks; p++) {
            if (!ps[p].answered || !ps[p].has_root || ps[p].cur_root == n->fp.root || ps[p].state != STATUS_IN_OP ||
                ps[p].cur_seq != n->fp.seq || ps[p].cur_op != (uint8_t)n->fp.op)
                continue;
            hccl_fingerprint f = n->fp;
            char theirs[160];
            f.root = ps[p].cur_root;
            hccl_fingerprint_str(&f, theirs, sizeof theirs);
            tb_add(&t, "%srank %u%s called %s", t.o ? ", " : "", p, at(n, p), theirs);
        }
    }
    /* An eager rooted operation (algo/oneshot_broadcast.c, oneshot_reduce.c): a peer we
     * wait for that has gone past this operation sent its message elsewhere. */
    char passed[400] = "";
    if (!missing[0] && !roots[0] && n->fp.root != UINT32_MAX) {
        tbuf t = {passed, sizeof passed, 0, 0};
        for (int i = 0; i < cnt; i++) {
            if (!n->st[i].finished && x[i].dir == HCCL_XFER_RECV && ps[x[i].peer].past)
                tb_add(&t, "%s%u%s", t.o ? ", " : "", x[i].peer, at(n, x[i].peer));
        }
    }
    hccl_free(ps);
    if (passed[0])
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s and waited until HCCL_EXEC_TIMEOUT for rank(s) "
                    "%s, which went past op #%u without sending to this rank (the ranks disagree about the root, "
                    "or those ranks skipped the collective); this rank was waiting for: %s",
                    n->fp.seq, n->rank, fps, passed, n->fp.seq, peers);
    if (roots[0])
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s, but %s (found when op #%u reached "
                    "HCCL_EXEC_TIMEOUT)",
                    n->fp.seq, n->rank, fps, roots, n->fp.seq);
    if (missing[0])
        return fail(n, HCCL_E_TIMEOUT, "op #%u %s %s: %s; this rank was waiting for: %s", n->fp.seq, fps, tmo,
                    missing, peers);
    return fail(n, HCCL_E_TIMEOUT,
                "op #%u %s %s waiting for: %s (every rank reached op #%u; those are stuck in it)", n->fp.seq, fps,
                tmo, peers, n->fp.seq);
}

/* ---- waiting: how a wait that sees nothing move spends its passes ---------------- */

/* The clock is read only once nothing moved: last_progress is the first idle pass
 * after the latest progress (a small exchange that completes at once reads no clock
 * at all). */
typedef struct pace {
    uint64_t spin_ns;
    uint64_t last_progress;
    uint64_t checked_at; /* the interrupt check's last call (0: not yet in this wait) */
    int progress_mark;
    unsigned idle_spins, quick_passes;
    uint64_t yielded_at; /* the last yield of a wait that is not contended */
} pace;

enum { PACE_POLL, PACE_SLEEP, PACE_ABORTED, PACE_INTERRUPTED, PACE_LATE };

static void pace_start(pace *w)
{
    memset(w, 0, sizeof *w);
    w->spin_ns = (uint64_t)hccl_param_net_spin_us() * 1000ull;
    w->progress_mark = 1;
}

static inline void pace_moved(pace *w)
{
    w->progress_mark = 1;
    w->quick_passes = 0;
}

/* This thread keeps sharing its CPU although the host has one per rank: yields switch
 * to another thread every time (typically a peer rank that the kernel started or woke
 * here). The kernel's balancer does not separate them (it leaves a task that ran
 * moments ago where it is, and both always just ran), so 2 unbound ranks on 2 cores
 * could stay on one core for the whole run, each operation 3-4x slower. Hop to the
 * other CPUs of the mask. At most once per ms per process, and each time only by a
 * coin flip, so that two ranks that detect the same sharing do not both move, to the
 * same other CPU. Not with a single CPU in the mask (bound ranks), nor on a crowded
 * host (sharing is expected there). */
static void unshare_cpu(hccl_netimpl *n, uint64_t now)
{
    static uint64_t last_ns;
    uint64_t last = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
    if (now - last < 1000000ull || !__atomic_compare_exchange_n(&last_ns, &last, now, 0, __ATOMIC_RELAXED,
                                                                 __ATOMIC_RELAXED))
        return;
    if ((now >> 10) & 1) return; /* the coin: a bit of the clock that no caller controls */
    int cpu = sched_getcpu();
    cpu_set_t was, other;
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof was, &was) != 0 || CPU_COUNT(&was) < 2 ||
        !CPU_ISSET(cpu, &was))
        return;
    other = was;
    CPU_CLR(cpu, &other);
    if (hccl_cpus_hop(&other, &was) != 0) return;
    HCCL_INFO(NET, "rank %u shared CPU %d with another busy thread although the host has a CPU per rank: moved to "
              "CPU %d", n->rank, cpu, sched_getcpu());
}

/* More ranks than CPUs on one host: the waits hand the CPUs around by yielding, so an
 * operation is fastest with the ranks spread evenly over the CPUs (4 ranks on 2
 * cores: 2 and 2). The kernel may start them 3 and 1 and leave them so, since all
 * always just ran. Once per ms a waiting rank says in the slot segment where it runs
 * and counts where the others last said they ran; a rank on a CPU with 2 ranks more
 * than the emptiest CPU of its mask hops there, by a coin flip that one of that
 * CPU's ranks wins on average. */
static void balance_cpus(hccl_netimpl *n, uint64_t now)
{
    if (now - n->balanced_at < 1000000ull) return;
    n->balanced_at = now;
    int cpu = sched_getcpu(), cpu_of[HCCL_SLOTS_MAX_RANKS];
    cpu_set_t was, to;
    if (cpu < 0) return;
    hccl_slots_set_cpu(n->slots, cpu);
    if (sched_getaffinity(0, sizeof was, &was) != 0 || n->nranks > HCCL_SLOTS_MAX_RANKS) return;
    for (uint32_t j = 0; j < n->nranks; j++) cpu_of[j] = hccl_slots_cpu(n->slots, j);
    unsigned here;
    int least = hccl_cpus_emptier(cpu_of, n->nranks, cpu, &was, &here);
    if (least < 0 || (now >> 10) % here != 0) return; /* the coin, as in unshare_cpu */
    CPU_ZERO(&to);
    CPU_SET(least, &to);
    if (hccl_cpus_hop(&to, &was) != 0) return;
    hccl_slots_set_cpu(n->slots, least);
    HCCL_INFO(NET, "rank %u: %u ranks of this host ran on CPU %d: moved to CPU %d, which had fewer", n->rank, here,
              cpu, sched_getcpu());
}

/* The application's interrupt check, once this wait has idled 100 ms, then every 100 ms
 * (a wait that moves never reads it). */
#define INTERRUPT_CHECK_NS HCCL_INTERRUPT_CHECK_NS
static int interrupted(pace *w, uint64_t now)
{
    int (*check)(void) = hccl_interrupt_get();
    if (!check || now - w->last_progress < INTERRUPT_CHECK_NS || now - w->checked_at < INTERRUPT_CHECK_NS) return 0;
    w->checked_at = now;
    return hccl_interrupt_ask(check);
}

/* After a pass that moved nothing: poll again (after a pause or a yield), sleep now,
 * or stop (aborted, interrupted, or past the deadline). */
static int pace_idle(hccl_netimpl *n, pace *w)
{
    /* The first passes of a wait only pause: a rank with a core of its own mostly
     * waits less than they take, and a clock read or a yield there only delays
     * noticing the message. Not while the CPU is contended (yield at once), nor
     * with HCCL_NET_SPIN_US=0 (sleep at once). */
    const int contended = n->crowded || n->slow_yields == 2;
    if (w->spin_ns && !contended && (w->quick_passes < QUICK_PASSES || (++w->idle_spins & 7) != 0)) {
        /* And afterwards, the clock only every 8th pass (a read costs 30 ns or more in
         * a guest): the spin limit and the deadline need no finer time. */
        if (w->quick_passes < QUICK_PASSES) w->quick_passes++;
        hccl_cpu_relax();
        return PACE_POLL;
    }
    uint64_t now = hccl_now_ns();
    if (w->progress_mark) {
        w->last_progress = now;
        w->progress_mark = 0;
    }
    if (n->abort_flag && __atomic_load_n(n->abort_flag, __ATOMIC_ACQUIRE)) return PACE_ABORTED;
    if (interrupted(w, now)) return PACE_INTERRUPTED;
    /* An operation's deadline counts from its first wait that reads the clock: no
     * clock read for an operation that never waits (an eager root's). */
    if (!n->deadline_ns && n->timeout_ns) n->deadline_ns = now + n->timeout_ns;
    if (n->deadline_ns && now > n->deadline_ns) return PACE_LATE;
    /* While the CPU is contended a pass yields it anyway: poll (and its wake-up
     * through the peer's system call) only after a longer wait. */
    uint64_t spin_limit = contended && w->spin_ns && w->spin_ns < CONTENDED_SPIN_NS ? CONTENDED_SPIN_NS : w->spin_ns;
    if (now - w->last_progress >= spin_limit) return PACE_SLEEP;
    /* Busy-poll without system calls; yield now and then (at most once per
     * n->yield_gap_ns), so that with more ranks than cores the peer we wait for gets
     * the CPU, and on every pass while yields show that another thread wants this
     * CPU. The gap counts from the wait's first look at the clock: a wait that ends
     * within it makes no system call (a yield as soon as the quick passes were over
     * cost the 8-byte AllReduce of 2 ranks with a core each a microsecond now and
     * then: docs/performance.md, 2026-12-07). */
    if (!w->yielded_at) w->yielded_at = now;
    if (contended || now - w->yielded_at >= n->yield_gap_ns) {
        w->yielded_at = now;
        sched_yield();
        /* Timed at once: when the peer we yielded to made progress, this wait ends
         * before another pass could look. */
        if (hccl_now_ns() - now <= n->yield_switched_ns) n->slow_yields = 0;
        else if (n->slow_yields < 2) n->slow_yields++;
        else if (n->placed && !n->crowded) unshare_cpu(n, now);
        if (n->crowded && n->slots) balance_cpus(n, now);
    } else {
        hccl_cpu_relax();
    }
    return PACE_POLL;
}

/* pace_idle said PACE_ABORTED or PACE_INTERRUPTED. */
static HcclResult aborted(hccl_netimpl *n, int pace_said)
{
    if (pace_said == PACE_INTERRUPTED)
        return fail(n, HCCL_E_INTERNAL, "operation interrupted by the application (its HcclSetInterruptCheck "
                    "function asked: Ctrl-C in Python)");
    return fail(n, HCCL_E_INTERNAL, "operation aborted: the communicator is being destroyed or failed");
}

/* Sleeping: add peer p's liveness connection to n->pfds[first..np) unless there. */
static int add_live(hccl_netimpl *n, uint32_t p, int first, int np)
{
    hccl_conn *lc = n->live ? n->live[p] : NULL;
    if (!lc || n->dead[p] || np >= (int)(3 * n->nranks)) return np;
    int fd = hccl_tcp_conn_fd(lc);
    if (fd < 0) return np;
    for (int j = first; j < np; j++)
        if (n->pfds[j].fd == fd) return np;
    n->pfds[np].fd = fd;
    n->pfds[np].events = POLLRDHUP | POLLIN;
    n->pfds[np].revents = 0;
    return np + 1;
}

/* After the poll: an ABORT frame on a liveness connection names the aborting peer
 * (n->aborted_peer); a hang-up marks the peer dead. */
static void live_events(hccl_netimpl *n, int first, int np)
{
    for (int j = first; j < np; j++) {
        if (!n->pfds[j].revents) continue;
        for (uint32_t p = 0; p < n->nranks; p++) {
            if (!n->live[p] || hccl_tcp_conn_fd(n->live[p]) != n->pfds[j].fd) continue;
            if ((n->pfds[j].revents & POLLIN) && n->aborted_peer < 0 &&
                read_abort_on(n, n->live[p], p, 0, &n->aborted_seq) == HCCL_E_REMOTE) {
                n->aborted_peer = p;
                memcpy(n->abort_why, n->err, sizeof n->err);
                n->abort_why_off = n->err_abort ? (size_t)(n->err_abort - n->err) : 0;
            }
            if (n->pfds[j].revents & (POLLRDHUP | POLLHUP | POLLERR)) n->dead[p] = 1;
        }
    }
}

/* Room for the state of cnt transfers in n->st; 0 when out of memory. */
static int ensure_st(hccl_netimpl *n, int cnt)
{
    if (cnt <= n->st_cap) return 1;
    xstate *st = hccl_malloc(sizeof *st * (size_t)cnt);
    if (!st) return 0;
    hccl_free(n->st);
    n->st = st;
    n->st_cap = cnt;
    return 1;
}

/* Settle the deferred wake-ups of every connection the exchange x moved bytes on. */
static void flush_xfers(hccl_netimpl *n, const hccl_xfer *x, int cnt)
{
    for (int i = 0; i < cnt; i++)
        if (x[i].peer != n->rank) conn_flush(n->conns[x[i].peer]);
}

static HcclResult net_exchange_run(hccl_netimpl *n, hccl_xfer *x, int cnt);

/* Copy the next len bytes from peer p into buf without receiving them (what the
 * responder read ahead first): 1 when that many are there. */
static int peek_from(hccl_netimpl *n, uint32_t p, void *buf, size_t len)
{
    pushback *b = n->pb ? &n->pb[p] : NULL;
    if (b && b->head < b->len) {
        if (b->len - b->head < len) return 0;
        memcpy(buf, b->buf + b->head, len);
        return 1;
    }
    hccl_conn *c = n->conns[p];
    return c->ops->peek && c->ops->peek(c, buf, len);
}

/* Bytes from peer p wait to be received. */
static int pending_from(hccl_netimpl *n, uint32_t p)
{
    unsigned char b;
    return peek_from(n, p, &b, 1);
}

/* A wait for a message from a peer that has already posted its slot of the next
 * slot_gather call, with nothing from it left to receive: it went past this
 * operation without sending the message (the ranks disagree; a peer in a later
 * operation over the rings would have sent something that says so, one in the slots
 * sends nothing). Everything the peer sent before it posted is visible once its post
 * is (it may have arrived since this pass looked); that slot cannot change before
 * this rank posts its own. */
static HcclResult slot_evidence(hccl_netimpl *n, hccl_xfer *x, int cnt)
{
    if (!n->slots || n->fp.p2p) return HCCL_SUCCESS;
    for (int i = 0; i < cnt; i++) {
        if (n->st[i].finished || x[i].dir != HCCL_XFER_RECV || x[i].peer == n->rank) continue;
        const unsigned char *sl = hccl_slots_peek(n->slots, x[i].peer, n->slot_seq + 1);
        if (!sl || pending_from(n, x[i].peer)) continue;
        hccl_fingerprint f;
        memcpy(&f, sl + HCCL_SLOTS_TAG_OFF, sizeof f);
        xstate s = n->st[i];
        fp_to_hdr(&f, f.seq, 0, &s.hdr);
        return mismatch(n, &x[i], &s);
    }
    return HCCL_SUCCESS;
}

/* Why a connection failed, from the errno of its failed send or receive. */
static const char *lost_why(int err)
{
    switch (err) {
    case ETIMEDOUT:
        return "its host acknowledged nothing for longer than the connection's give-up time, HCCL_EXEC_TIMEOUT + "
               "10 s: the network is down or the host is gone";
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
        return "no route to its host: the network is down";
    default:
        return "the peer exited, destroyed its communicator, was killed, or aborted";
    }
}

static int of_this_op(const hccl_netimpl *n, const msg_hdr *h)
{
    msg_hdr want;
    fp_to_hdr(&n->fp, n->fp.seq, h->len, &want);
    return memcmp(h, &want, sizeof want) == 0;
}

/* A stalled exchange looks at what the peers it is not receiving from have sent:
 * this operation's message from a rank whose settings chose another algorithm (the
 * two algorithms' patterns may never make this rank read it, and every rank would
 * wait until HCCL_EXEC_TIMEOUT), or an ABORT from a rank that failed (its failure
 * would not reach ranks that wait on each other). Once it has waited STALL_LOOK_NS,
 * then every STALL_EVERY_NS. */
#define STALL_LOOK_NS 50000000ull
#define STALL_EVERY_NS 100000000ull

/* A stalled point-to-point call answers, as the responder does for an idle rank, the
 * STATUS questions at the head of the streams of peers it is not receiving from
 * (their collective timed out): this rank is in a point-to-point call. Otherwise they
 * would hear nothing, or take its later ABORT frame for a sign that it reached their
 * collective. */
static void p2p_answer(hccl_netimpl *n, hccl_xfer *x, int cnt)
{
    for (uint32_t p = 0; p < n->nranks; p++) {
        unsigned char frame[sizeof(msg_hdr) + STATUS_BODY_MAX];
        msg_hdr h;
        int reading = 0;
        for (int i = 0; i < cnt && !reading; i++)
            reading = x[i].peer == p && x[i].dir == HCCL_XFER_RECV && !n->st[i].finished;
        if (p == n->rank || !n->conns[p] || reading || n->send_partial[p] || !peek_from(n, p, &h, sizeof h))
            continue;
        if (h.op != OP_STATUS || (h.flags & FLAG_STATUS_REPLY) || h.len > STATUS_BODY_MAX) continue;
        size_t whole = sizeof h + (size_t)h.len; /* taken only once all of it is here */
        if (!peek_from(n, p, frame, whole) ||
            read_until(n, p, n->conns[p], frame, 0, whole, hccl_now_ns() + 100000000ull) < whole)
            continue;
        status_send(n, p, 2);
    }
}

/* Behind this operation's messages at the head of p's stream, which this rank does not
 * read yet (at most BEHIND_MAX bytes of them, BEHIND_MSGS messages): p's ABORT frame
 * from this operation, or its STATUS question from inside it (it timed out). A peer whose stream
 * is its only connection (TCP, no liveness connection) sends both there, behind the
 * data its algorithm had already sent; a rank without a timeout of its own that waits
 * on another peer would otherwise never learn of p's failure. 1 for a question, 2 for
 * an ABORT frame (its text in why), 0 when there is neither. */
#define BEHIND_MAX (256u << 10)
#define BEHIND_MSGS 8
static int failed_behind(hccl_netimpl *n, uint32_t p, const msg_hdr *first, char *why, size_t whylen)
{
    msg_hdr h = *first;
    size_t at = 0; /* where h is in the stream */
    unsigned char *buf = NULL; /* the messages peeked past, h, and an ABORT frame's text */
    int found = 0;
    for (int k = 0; k < BEHIND_MSGS; k++) {
        if (k > 0 && ((h.op == OP_ABORT && h.seq && !seq_after(h.seq, n->fp.seq)) ||
                      (h.op == OP_STATUS && !(h.flags & FLAG_STATUS_REPLY) && h.seq == n->fp.seq))) {
            found = h.op == OP_ABORT ? 2 : 1;
            size_t tl = h.op == OP_ABORT && h.len < whylen ? (size_t)h.len : 0;
            why[0] = 0;
            if (tl && peek_from(n, p, buf, at + sizeof h + tl)) {
                memcpy(why, buf + at + sizeof h, tl);
                why[tl] = 0;
            }
            break;
        }
        if (h.op == OP_ABORT || h.op == OP_STATUS || (h.flags & FLAG_P2P) || !of_this_op(n, &h) ||
            at + sizeof h > BEHIND_MAX || h.len > BEHIND_MAX - at - sizeof h)
            break;
        at += sizeof h + (size_t)h.len;
        if (!buf && !(buf = hccl_malloc(BEHIND_MAX + sizeof h + whylen))) break;
        if (!peek_from(n, p, buf, at + sizeof h)) break;
        memcpy(&h, buf + at, sizeof h);
    }
    hccl_free(buf);
    return found;
}

static HcclResult stall_evidence(hccl_netimpl *n, hccl_xfer *x, int cnt)
{
    if (n->fp.p2p) {
        p2p_answer(n, x, cnt);
        return HCCL_SUCCESS;
    }
    for (uint32_t p = 0; p < n->nranks; p++) {
        msg_hdr h;
        int reading = 0;
        for (int i = 0; i < cnt && !reading; i++) reading = x[i].peer == p && x[i].dir == HCCL_XFER_RECV;
        if (p == n->rank || !n->conns[p] || reading || !peek_from(n, p, &h, sizeof h)) continue;
        char why[ABORT_TEXT_MAX + 1];
        int behind = failed_behind(n, p, &h, why, sizeof why);
        if (behind == 2)
            return peer_abort(n, p, why);
        if (behind == 1) return timed_out(n, x, cnt, p);
        /* A communicator's set-up operations all have seq 0 (setup_op, comm.c): there a
         * message of another kind is a peer's next set-up operation, not a mismatch. */
        if (h.op != OP_ABORT &&
            (h.op == OP_STATUS || (h.flags & FLAG_P2P) || h.seq != n->fp.seq || !n->fp.seq || of_this_op(n, &h)))
            continue;
        xstate s;
        memset(&s, 0, sizeof s);
        if (read_until(n, p, n->conns[p], &s.hdr, 0, sizeof s.hdr, hccl_now_ns()) < sizeof s.hdr)
            return fail(n, HCCL_E_INTERNAL, "rank %u: a message header vanished", p);
        s.done = sizeof s.hdr;
        fp_to_hdr(&n->fp, n->fp.seq, 0, &s.want);
        hccl_xfer px = {HCCL_XFER_RECV, p, NULL, 0};
        return s.hdr.op == OP_ABORT ? peer_aborted(n, &px, &s) : mismatch(n, &px, &s);
    }
    return HCCL_SUCCESS;
}

static HcclResult net_exchange(hccl_net *base, hccl_xfer *x, int cnt)
{
    hccl_netimpl *n = (hccl_netimpl *)base;
    HcclResult r = net_exchange_run(n, x, cnt);
    flush_xfers(n, x, cnt);
    return r;
}

static HcclResult net_exchange_run(hccl_netimpl *n, hccl_xfer *x, int cnt)
{
    if (cnt <= 0) return HCCL_SUCCESS;
    if (!ensure_st(n, cnt)) return fail(n, HCCL_E_MEMORY, "out of memory for %d transfers", cnt);
    int remaining = 0, has_self = 0;
    uint64_t look_at = 0; /* when a stalled wait next looks at the other peers (stall_evidence) */
    for (int i = 0; i < cnt; i++) {
        xstate *s = &n->st[i];
        memset(s, 0, sizeof *s);
        if (x[i].peer >= n->nranks) return fail(n, HCCL_E_INTERNAL, "transfer to invalid rank %u", x[i].peer);
        if (x[i].peer == n->rank) {
            has_self = 1;
            continue;
        }
        uint32_t seq = n->fp.p2p
                           ? (x[i].dir == HCCL_XFER_SEND ? n->p2p_sseq[x[i].peer]++ : n->p2p_rseq[x[i].peer]++)
                           : n->fp.seq;
        fp_to_hdr(&n->fp, seq, x[i].bytes, x[i].dir == HCCL_XFER_SEND ? &s->hdr : &s->want);
        remaining++;
    }
    if (has_self) CHECK(do_self(n, x, cnt));

    pace w;
    pace_start(&w);
    int unflushed = 0; /* moved bytes since the last flush_xfers */
    while (remaining > 0) {
        int progressed = 0;
        memset(n->busy, 0, 2u * n->nranks);
        for (int i = 0; i < cnt; i++) {
            xstate *s = &n->st[i];
            if (s->finished) continue;
            unsigned key = x[i].peer * 2u + (unsigned)x[i].dir;
            if (n->busy[key]) continue;
            n->busy[key] = 1;
            hccl_conn *c = n->conns[x[i].peer];
            size_t total = sizeof(msg_hdr) + x[i].bytes;
            struct iovec iov[2];
            int iovcnt = 0;
            if (s->done < sizeof(msg_hdr)) {
                iov[iovcnt].iov_base = (char *)&s->hdr + s->done;
                iov[iovcnt++].iov_len = sizeof(msg_hdr) - s->done;
                if (x[i].bytes) {
                    iov[iovcnt].iov_base = x[i].buf;
                    iov[iovcnt++].iov_len = x[i].bytes;
                }
            } else {
                size_t off = s->done - sizeof(msg_hdr);
                iov[iovcnt].iov_base = (char *)x[i].buf + off;
                iov[iovcnt++].iov_len = x[i].bytes - off;
            }
            size_t moved = 0;
            int sending = x[i].dir == HCCL_XFER_SEND;
            HcclResult r = sending ? c->ops->send(c, iov, iovcnt, &moved)
                                   : net_recv(n, x[i].peer, c, iov, iovcnt, &moved);
            if (r != HCCL_SUCCESS) {
                if ((int64_t)x[i].peer == n->aborted_peer) return peer_aborted_before(n);
                /* An aborting peer sent its reason before it shut the connection. */
                if (read_abort(n, x[i].peer, sending && !receiving_from(n, x, cnt, x[i].peer)) == HCCL_E_REMOTE)
                    return HCCL_E_REMOTE;
                return fail(n, r, "connection to rank %u%s lost during %s #%u (%s failed: %s)", x[i].peer,
                            at(n, x[i].peer), n->fp.p2p ? "point-to-point transfer" : hccl_op_name(n->fp.op), n->fp.seq,
                            sending ? "send" : "receive", lost_why(c->os_error));
            }
            if (moved == 0) {
                if ((int64_t)x[i].peer == n->aborted_peer) return peer_aborted_before(n);
                if (n->dead[x[i].peer])
                    return fail(n, HCCL_E_TCP_TRANSFER,
                                "rank %u%s exited, or destroyed its communicator, during %s #%u (its connection "
                                "closed)",
                                x[i].peer, at(n, x[i].peer),
                                n->fp.p2p ? "point-to-point transfer" : hccl_op_name(n->fp.op), n->fp.seq);
                continue;
            }
            progressed = 1;
            s->done += moved;
            if (sending) n->send_partial[x[i].peer] = s->done < total;
            if (!sending && !s->checked && s->done >= sizeof(msg_hdr)) {
                s->checked = 1;
                HcclResult hr = check_header(n, &x[i], s);
                n->heard[x[i].peer] = 1;
                if (hr == HCCL_E_AGAIN) return timed_out(n, x, cnt, x[i].peer);
                if (hr != HCCL_SUCCESS) return hr;
            }
            if (s->done == total) {
                s->finished = 1;
                remaining--;
            }
        }
        if (remaining == 0) break;
        if (progressed) {
            pace_moved(&w);
            unflushed = 1;
            continue;
        }
        if (unflushed) { /* waiting now: the peers may be asleep */
            flush_xfers(n, x, cnt);
            unflushed = 0;
        }
        int next = pace_idle(n, &w);
        if (next == PACE_POLL) continue;
        if (next == PACE_ABORTED || next == PACE_INTERRUPTED) return aborted(n, next);
        if (next == PACE_LATE) return timed_out(n, x, cnt, UINT32_MAX);
        HcclResult ev = slot_evidence(n, x, cnt);
        if (ev != HCCL_SUCCESS) return ev;
        uint64_t now = hccl_now_ns();
        if (!look_at) {
            look_at = now + STALL_LOOK_NS;
        } else if (now >= look_at) {
            look_at = now + STALL_EVERY_NS;
            if ((ev = stall_evidence(n, x, cnt)) != HCCL_SUCCESS) return ev;
        }
        /* Sleep until one of the head transfers can move. */
        int np = 0;
        for (int i = 0; i < cnt; i++) {
            if (n->st[i].finished) continue;
            short ev = 0;
            hccl_conn *c = n->conns[x[i].peer];
            int fd = c->ops->wait_fd(c, x[i].dir == HCCL_XFER_SEND, &ev);
            if (fd < 0) continue;
            int j;
            for (j = 0; j < np; j++)
                if (n->pfds[j].fd == fd) break;
            if (j == np) {
                if (np == (int)(2 * n->nranks)) continue;
                n->pfds[np].fd = fd;
                n->pfds[np].events = 0;
                np++;
            }
            n->pfds[j].events |= ev;
        }
        /* Watch the liveness connections of the peers we wait on for hang-up, and in a
         * collective those of every peer for an ABORT frame: a peer that failed in this
         * operation (or an earlier one) dooms it even when this rank waits on another
         * (its STATUS question and ABORT frame on the data stream may sit behind data
         * this rank is not reading yet; without a timeout of its own the rank would wait
         * forever). One that failed in a later operation had done its part of this one,
         * which may still complete. */
        int first_live = np;
        for (int i = 0; i < cnt; i++)
            if (!n->st[i].finished) np = add_live(n, x[i].peer, first_live, np);
        if (!n->fp.p2p)
            for (uint32_t p = 0; p < n->nranks; p++)
                if (p != n->rank) np = add_live(n, p, first_live, np);
        if (np) {
            poll(n->pfds, (nfds_t)np, 100);
            live_events(n, first_live, np);
            if (!n->fp.p2p && n->aborted_peer >= 0 && n->aborted_seq && !seq_after(n->aborted_seq, n->fp.seq))
                return peer_aborted_before(n);
        } else {
            sched_yield(); /* transports without a descriptor: keep polling */
        }
    }
    return HCCL_SUCCESS;
}

/* ---- slot_gather: one round through the host's shared slots (transport/shm/slots.h) ---- */

_Static_assert(sizeof(hccl_fingerprint) == HCCL_SLOTS_TAG_BYTES, "a slot's tag is the operation's fingerprint");
_Static_assert(HCCL_NET_SLOT_BYTES <= HCCL_SLOTS_DATA_MAX, "slot size");

/* Rank p's slot of this call holds another operation than ours: reported as the
 * engine reports a message header that differs from the one it expects. */
static HcclResult slot_mismatch(hccl_netimpl *n, uint32_t p, const unsigned char *slot)
{
    hccl_fingerprint f;
    memcpy(&f, slot + HCCL_SLOTS_TAG_OFF, sizeof f);
    xstate s;
    memset(&s, 0, sizeof s);
    fp_to_hdr(&f, f.seq, 0, &s.hdr);
    fp_to_hdr(&n->fp, n->fp.seq, 0, &s.want);
    hccl_xfer x = {HCCL_XFER_RECV, p, NULL, 0};
    return mismatch(n, &x, &s);
}

/* Past the deadline: the engine's report, as if we waited for a message from every
 * peer whose slot is missing. */
static HcclResult slot_timed_out(hccl_netimpl *n, const unsigned char *got)
{
    hccl_xfer *x = hccl_calloc(n->nranks, sizeof *x);
    if (!x || !ensure_st(n, (int)n->nranks)) {
        hccl_free(x);
        return fail(n, HCCL_E_TIMEOUT, "op #%u timed out (HCCL_EXEC_TIMEOUT) on rank %u", n->fp.seq, n->rank);
    }
    int cnt = 0;
    for (uint32_t p = 0; p < n->nranks; p++) {
        if (p == n->rank || got[p]) continue;
        x[cnt] = (hccl_xfer){HCCL_XFER_RECV, p, NULL, 0};
        memset(&n->st[cnt], 0, sizeof n->st[cnt]);
        cnt++;
    }
    HcclResult r = timed_out(n, x, cnt, UINT32_MAX);
    hccl_free(x);
    return r;
}

/* Sleeping in a slot wait: before it, the liveness connections of the missing peers;
 * an aborted or dead one fails the wait. */
static HcclResult slot_check_live(hccl_netimpl *n, const unsigned char *got)
{
    int np = 0;
    for (uint32_t p = 0; p < n->nranks; p++)
        if (p != n->rank && !got[p]) np = add_live(n, p, 0, np);
    if (np && poll(n->pfds, (nfds_t)np, 0) > 0) live_events(n, 0, np);
    for (uint32_t p = 0; p < n->nranks; p++) {
        if (p == n->rank || got[p]) continue;
        if ((int64_t)p == n->aborted_peer) return peer_aborted_before(n);
        if (n->dead[p])
            return fail(n, HCCL_E_TCP_TRANSFER,
                        "rank %u%s exited, or destroyed its communicator, during %s #%u (its connection closed)", p,
                        at(n, p), hccl_op_name(n->fp.op), n->fp.seq);
    }
    return HCCL_SUCCESS;
}

/* A message of the operation this rank is in (the same call, any length): one that a
 * peer sent after the slot round of an algorithm that has both (the direct AlltoAll's
 * pairwise pieces after its slot round, say), still to be taken. */

/* After a slot_gather, or while it waits for a slot: a message of this or an
 * earlier collective that some peer sent us over its connection and no operation
 * took. Every operation takes all the messages meant for it, so that peer was in
 * another operation when it sent it (two ranks that both acted as a small
 * Broadcast's root, or an eager root whose count differs from this rank's, which
 * never posts the slot waited for): the mismatch is reported as the engine would
 * have on finding that message first. Messages of this operation (of_this_op) and
 * later ones (peers that finished this one first), point-to-point ones and STATUS
 * questions stay where they are; an ABORT frame is the error, unless its rank failed
 * in a later collective (it had done its part of this one, which completes; the next
 * operation finds the frame). */
static HcclResult slot_ring_evidence(hccl_netimpl *n, size_t bytes)
{
    for (uint32_t p = 0; p < n->nranks; p++) {
        msg_hdr h;
        if (p == n->rank || !n->conns[p] || !peek_from(n, p, &h, sizeof h)) continue;
        if (h.op == OP_ABORT ? seq_after(h.seq, n->fp.seq)
                              : (h.op == OP_STATUS || (h.flags & FLAG_P2P) || seq_after(h.seq, n->fp.seq)))
            continue;
        if (h.op != OP_ABORT && of_this_op(n, &h)) continue;
        if (!ensure_st(n, 1)) return fail(n, HCCL_E_MEMORY, "out of memory");
        xstate *s = &n->st[0];
        memset(s, 0, sizeof *s);
        if (read_until(n, p, n->conns[p], &s->hdr, 0, sizeof s->hdr, hccl_now_ns()) < sizeof s->hdr)
            return fail(n, HCCL_E_INTERNAL, "rank %u: a message header vanished", p);
        s->done = sizeof s->hdr;
        fp_to_hdr(&n->fp, n->fp.seq, bytes, &s->want);
        hccl_xfer x = {HCCL_XFER_RECV, p, NULL, 0};
        return s->hdr.op == OP_ABORT ? peer_aborted(n, &x, s) : mismatch(n, &x, s);
    }
    return HCCL_SUCCESS;
}

/* Has a peer's communicator failed (it says so in the slots, in the line every post
 * reads anyway)? Its reason, from the ABORT frame on its liveness connection when
 * there is one. done: every slot of this call is here; then a peer that failed in a
 * later collective had done its part of this one, which completes (the failure is
 * this rank's next operation's). */
static HcclResult slot_peers_failed(hccl_netimpl *n, int done)
{
    uint32_t seq;
    uint32_t failed = hccl_slots_aborted(n->slots, &seq);
    if (!failed || failed - 1 == n->rank) return HCCL_SUCCESS;
    if (done && seq_after(seq, n->fp.seq)) return HCCL_SUCCESS;
    uint32_t p = failed - 1;
    if ((int64_t)p == n->aborted_peer) return peer_aborted_before(n);
    if (read_abort(n, p, 0) == HCCL_E_REMOTE) return HCCL_E_REMOTE;
    return fail(n, HCCL_E_REMOTE, "rank %u%s aborted (its communicator failed) during %s #%u", p, at(n, p),
                hccl_op_name(n->fp.op), n->fp.seq);
}

/* A peer timed out in this operation (or an earlier one) and is failing it
 * (timed_out: it marks the segment before its status round, which takes up to a second,
 * and aborts after it). A slot round it had posted that completes here meanwhile must
 * not return success (or let a direct algorithm read that peer's buffers after the
 * peer returned): wait for its abort and report its reason. */
static HcclResult slot_peer_left(hccl_netimpl *n)
{
    uint32_t l = hccl_slots_leaving(n->slots);
    if (!l || l - 1 == n->rank) return HCCL_SUCCESS;
    uint64_t dl = hccl_now_ns() + 5000000000ull;
    while (!hccl_slots_aborted(n->slots, NULL) && hccl_now_ns() < dl) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    HcclResult r = slot_peers_failed(n, 0);
    if (r != HCCL_SUCCESS) return r;
    return fail(n, HCCL_E_REMOTE,
                "rank %u timed out (HCCL_EXEC_TIMEOUT) and gave up on this communicator's operations before %s #%u "
                "completed here",
                l - 1, hccl_op_name(n->fp.op), n->fp.seq);
}

/* A sleeping slot wait wakes at least this often to look at the liveness connections
 * and the abort flag. */
#define SLOT_NAP_NS 10000000ull

static HcclResult net_slot_gather(hccl_net *base, const void *mine, size_t bytes, const unsigned char **first,
                                  size_t *stride)
{
    hccl_netimpl *n = (hccl_netimpl *)base;
    if (!n->slots || bytes > HCCL_NET_SLOT_BYTES || n->fp.p2p)
        return fail(n, HCCL_E_INTERNAL, "slot gather of %zu bytes on a communicator without slots", bytes);
    uint64_t seq = ++n->slot_seq;
    hccl_slots_post(n->slots, seq, &n->fp, mine, bytes);
    unsigned char *got = n->busy; /* the exchange's scratch: whose slot of this call is here */
    memset(got, 0, n->nranks);
    uint32_t left = n->nranks - 1;
    pace w;
    pace_start(&w);
    while (left) {
        int moved = 0;
        for (uint32_t p = 0; p < n->nranks; p++) {
            if (p == n->rank || got[p]) continue;
            const unsigned char *sl = hccl_slots_peek(n->slots, p, seq);
            if (!sl) continue;
            if (memcmp(sl + HCCL_SLOTS_TAG_OFF, &n->fp, sizeof n->fp) != 0) return slot_mismatch(n, p, sl);
            got[p] = 1;
            n->heard[p] = 1; /* reached this operation (for a timeout's report) */
            left--;
            moved = 1;
        }
        if (!left) break;
        if (moved) {
            pace_moved(&w);
            continue;
        }
        int next = pace_idle(n, &w);
        if (next == PACE_POLL) continue;
        if (next == PACE_ABORTED || next == PACE_INTERRUPTED) return aborted(n, next);
        if (next == PACE_LATE) return slot_timed_out(n, got);
        uint32_t ticket = hccl_slots_arm(n->slots);
        int posted = 0;
        for (uint32_t p = 0; p < n->nranks && !posted; p++)
            posted = p != n->rank && !got[p] && hccl_slots_peek(n->slots, p, seq);
        HcclResult r = posted ? HCCL_SUCCESS : slot_peers_failed(n, 0);
        if (!posted && r == HCCL_SUCCESS) r = slot_check_live(n, got);
        /* A peer that sent this rank a message of another call instead (an eager
         * Broadcast's root whose count differs, say) will not post its slot. */
        if (!posted && r == HCCL_SUCCESS) r = slot_ring_evidence(n, bytes);
        if (posted || r != HCCL_SUCCESS) {
            hccl_slots_disarm(n->slots);
            if (r != HCCL_SUCCESS) return r;
            continue;
        }
        hccl_slots_sleep(n->slots, ticket, SLOT_NAP_NS);
    }
    HcclResult ev = slot_peer_left(n);
    if (ev == HCCL_SUCCESS) ev = slot_peers_failed(n, 1);
    if (ev == HCCL_SUCCESS) ev = slot_ring_evidence(n, bytes);
    if (ev != HCCL_SUCCESS) return ev;
    *first = hccl_slots_peek(n->slots, 0, seq) + HCCL_SLOTS_DATA_OFF;
    *stride = HCCL_SLOTS_STRIDE;
    return HCCL_SUCCESS;
}

void hccl_net_enable_slots(hccl_netimpl *n, hccl_slots *s)
{
    n->slots = s;
    n->base.slot_gather = s ? net_slot_gather : NULL;
}

/* ---- the responder: STATUS answers between operations ---------------------------------
 *
 * A rank that has not called the collective its peers time out in (it skipped it, or
 * is still computing) is not inside the engine, so nothing would read their STATUS
 * questions. One thread per process looks, every RESP_PERIOD_NS, at each communicator
 * that has been between successful operations for RESP_IDLE_NS: it reads what the
 * peers sent ahead into a per-peer pushback (at most PUSHBACK_CAP bytes, whole
 * messages parsed by their headers; the engine takes these bytes before reading the
 * connection again), takes STATUS questions out and answers each with this rank's
 * last completed collective. The engine and the responder never use the connections
 * at the same time: the responder only works under io_lock while `idle` is set, which
 * begin_op clears. A peer whose message does not fit, or whose STATUS frame is longer
 * than STATUS_BODY_MAX, is not read further until the engine has taken the bytes.
 * The thread runs while at least one communicator is listed.
 */
static pthread_mutex_t resp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t resp_cv; /* CLOCK_MONOTONIC, made in resp_init */
static pthread_once_t resp_once = PTHREAD_ONCE_INIT;
static hccl_netimpl *resp_list;
static int resp_running;

static void resp_make_cv(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&resp_cv, &ca);
    pthread_condattr_destroy(&ca);
}

static void resp_prefork(void) { pthread_mutex_lock(&resp_mu); }
static void resp_postfork_parent(void) { pthread_mutex_unlock(&resp_mu); }
static void resp_postfork_child(void)
{
    /* The thread did not survive the fork (nor did its wait on resp_cv), and the
     * listed connections are the parent's. */
    resp_list = NULL;
    resp_running = 0;
    resp_make_cv();
    pthread_mutex_unlock(&resp_mu);
}

static void resp_init(void)
{
    resp_make_cv();
    pthread_atfork(resp_prefork, resp_postfork_parent, resp_postfork_child);
}

/* Read ahead from peer p of an idle communicator; answer its STATUS questions. */
static void resp_serve_peer(hccl_netimpl *n, uint32_t p)
{
    pushback *b = &n->pb[p];
    hccl_conn *c = n->conns[p];
    if (!c || b->stop) return;
    size_t got = 0;
    if (!b->buf && !(b->buf = hccl_malloc(PUSHBACK_CAP))) return;
    if (b->head) { /* the engine took the front: move the rest down */
        memmove(b->buf, b->buf + b->head, b->len - b->head);
        b->len -= b->head;
        b->scan = b->scan > b->head ? b->scan - b->head : 0;
        b->head = 0;
    }
    for (int round = 0; round < 16; round++) {
        size_t moved = 0;
        if (b->len < PUSHBACK_CAP) {
            struct iovec iov = {b->buf + b->len, PUSHBACK_CAP - b->len};
            if (c->ops->recv(c, &iov, 1, &moved) != HCCL_SUCCESS) b->stop = 1; /* the engine will say why */
            b->len += (uint32_t)moved;
            got += moved;
        }
        /* Whole messages from scan on: keep data, take STATUS questions out. Lengths
         * are checked before they are used. */
        while (b->len - b->scan >= sizeof(msg_hdr)) {
            msg_hdr h;
            memcpy(&h, b->buf + b->scan, sizeof h);
            if (h.op == OP_STATUS ? h.len > STATUS_BODY_MAX : h.len > PUSHBACK_CAP - b->scan - sizeof h) {
                b->stop = 1; /* garbled, or too large to hold: the engine reads on */
                break;
            }
            uint32_t whole = (uint32_t)(sizeof h + h.len);
            if (b->len - b->scan < whole) break;
            if (h.op != OP_STATUS) {
                b->scan += whole;
                continue;
            }
            if (!(h.flags & FLAG_STATUS_REPLY) && !n->send_partial[p]) status_send(n, p, 0);
            memmove(b->buf + b->scan, b->buf + b->scan + whole, b->len - b->scan - whole);
            b->len -= whole;
        }
        if (b->stop || !moved) break;
    }
    conn_flush(c);
    if (got)
        HCCL_TRACE(NET, "rank %u: between operations, read %zu bytes from rank %u ahead (%u held)", n->rank, got, p,
                   b->len);
    if (!b->len) { /* memory only while it holds something */
        hccl_free(b->buf);
        b->buf = NULL;
        b->scan = 0;
    }
}

static void *resp_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "hccl-responder");
    pthread_mutex_lock(&resp_mu);
    while (resp_list) {
        for (hccl_netimpl *n = resp_list; n; n = n->resp_next) {
            if (pthread_mutex_trylock(&n->io_lock) != 0) continue; /* aborting, or a begin_op waits */
            int expect = IDLE_YES;
            if (__atomic_compare_exchange_n(&n->idle, &expect, IDLE_SERVING, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
                if (hccl_coarse_ns() >= n->idle_since + RESP_IDLE_NS)
                    for (uint32_t p = 0; p < n->nranks; p++)
                        if (p != n->rank) resp_serve_peer(n, p);
                __atomic_store_n(&n->idle, IDLE_YES, __ATOMIC_RELEASE);
            }
            pthread_mutex_unlock(&n->io_lock);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + RESP_PERIOD_NS;
        ts.tv_sec += (time_t)(ns / 1000000000ull);
        ts.tv_nsec = (long)(ns % 1000000000ull);
        pthread_cond_timedwait(&resp_cv, &resp_mu, &ts);
    }
    resp_running = 0;
    pthread_mutex_unlock(&resp_mu);
    return NULL;
}

void hccl_net_start_responder(hccl_netimpl *n)
{
    pthread_once(&resp_once, resp_init);
    pthread_mutex_lock(&n->io_lock);
    __atomic_store_n(&n->serve, 1, __ATOMIC_RELAXED);
    n->idle_since = hccl_coarse_ns();
    __atomic_store_n(&n->idle, __atomic_load_n(&n->broken, __ATOMIC_RELAXED) ? IDLE_NO : IDLE_YES, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&n->io_lock);
    pthread_mutex_lock(&resp_mu);
    if (!n->listed) {
        n->resp_next = resp_list;
        resp_list = n;
        n->listed = 1;
    }
    if (!resp_running) {
        int err = hccl_thread_start(NULL, resp_main, NULL);
        if (err == 0) resp_running = 1;
        else HCCL_INFO(NET, "no thread to answer STATUS questions between operations (error %d)", err);
    }
    pthread_mutex_unlock(&resp_mu);
}

void hccl_net_stop_responder(hccl_netimpl *n)
{
    if (!n) return;
    pthread_mutex_lock(&resp_mu); /* waits for a pass in progress */
    if (n->listed) {
        for (hccl_netimpl **pp = &resp_list; *pp; pp = &(*pp)->resp_next)
            if (*pp == n) {
                *pp = n->resp_next;
                break;
            }
        n->listed = 0;
        if (!resp_list) pthread_cond_signal(&resp_cv); /* let the thread end */
    }
    pthread_mutex_unlock(&resp_mu);
}

void hccl_net_end_op(hccl_netimpl *n, int ok)
{
    /* Abort and start_responder (which change broken and serve) run on the thread
     * that runs the operations, or before the first: no lock is needed to read them. */
    if (!ok) {
        pthread_mutex_lock(&n->io_lock);
        __atomic_store_n(&n->broken, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&n->io_lock);
        return;
    }
    if (!n->fp.p2p && n->fp.seq) n->last_fp = n->fp;
    n->idle_since = hccl_coarse_ns();
    if (__atomic_load_n(&n->serve, __ATOMIC_RELAXED) && !__atomic_load_n(&n->broken, __ATOMIC_RELAXED))
        __atomic_store_n(&n->idle, IDLE_YES, __ATOMIC_RELEASE); /* publishes the fields above */
}

/* ---- direct access between ranks of one host ------------------------------------ */

static HcclResult net_peer_copy(hccl_net *base, uint32_t peer, int write, void *local, uint64_t remote, size_t bytes)
{
    hccl_netimpl *n = (hccl_netimpl *)base;
    uint32_t pid = peer < n->nranks && n->pids ? n->pids[peer] : 0;
    if (!pid) return fail(n, HCCL_E_INTERNAL, "no direct access to rank %u", peer);
    if (pid == n->self_pid) {
        if (write) memcpy((void *)(uintptr_t)remote, local, bytes);
        else memcpy(local, (const void *)(uintptr_t)remote, bytes);
        return HCCL_SUCCESS;
    }
    size_t done = 0;
    while (done < bytes) {
        struct iovec l = {(char *)local + done, bytes - done};
        struct iovec r = {(void *)(uintptr_t)(remote + done), bytes - done};
        ssize_t k = write ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0) : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (k < 0 && errno == EINTR) continue;
        int err = k < 0 ? errno : 0;
        /* A peer that failed first says why before it frees its buffers or exits: its
         * ABORT frame names the root cause (a third rank's death, say); ours would not. */
        if (k <= 0 && (int64_t)peer == n->aborted_peer) return peer_aborted_before(n);
        if (k <= 0 && read_abort(n, peer, 1) == HCCL_E_REMOTE) return HCCL_E_REMOTE;
        errno = err;
        if (k <= 0)
            return fail(n, errno == ESRCH ? HCCL_E_TCP_TRANSFER : HCCL_E_SYSCALL,
                        "direct %s rank %u (pid %u) failed: %s", write ? "write to" : "read from", peer, pid,
                        k < 0 ? strerror(errno) : "no progress");
        done += (size_t)k;
    }
    return HCCL_SUCCESS;
}

static void *net_peer_ptr(hccl_net *base, uint32_t peer, uint64_t remote, size_t bytes)
{
    hccl_netimpl *n = (hccl_netimpl *)base;
    if (peer >= n->nranks || !n->pids) return NULL;
    if (n->pids[peer] == n->self_pid) return (void *)(uintptr_t)remote;
    return n->pmem && n->pmem[peer] ? hccl_peermem_ptr(n->pmem[peer], remote, bytes) : NULL;
}

void hccl_net_enable_peermem(hccl_netimpl *n, const int32_t *dirfds)
{
    if (!n->pids || n->pmem) return;
    n->pmem = hccl_calloc(n->nranks, sizeof *n->pmem);
    uint32_t mapped = 0;
    for (uint32_t p = 0; n->pmem && p < n->nranks; p++)
        if (n->pids[p] && n->pids[p] != n->self_pid && dirfds[p] >= 0)
            mapped += (n->pmem[p] = hccl_peermem_open(n->pids[p], dirfds[p])) != NULL;
    HCCL_INFO(NET, "%u peer(s) share their device memory with this rank", mapped);
}

HcclResult hccl_net_enable_direct(hccl_netimpl *n, const uint32_t *pids)
{
    if (!n->pids) n->pids = hccl_calloc(n->nranks, sizeof *n->pids);
    if (!n->pids) return HCCL_E_MEMORY;
    memcpy(n->pids, pids, sizeof *n->pids * n->nranks);
    n->self_pid = (uint32_t)getpid();
    n->base.peer_copy = net_peer_copy;
    n->base.peer_ptr = net_peer_ptr;
    return HCCL_SUCCESS;
}

int hccl_net_probe_direct(uint32_t pid, uint64_t addr, uint64_t expect)
{
    uint64_t v = 0;
    if (pid == (uint32_t)getpid()) return 0;
    struct iovec l = {&v, sizeof v}, r = {(void *)(uintptr_t)addr, sizeof v};
    ssize_t k = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
    return k == (ssize_t)sizeof v && v == expect ? 0 : -1;
}

void hccl_net_set_liveness(hccl_netimpl *n, hccl_conn **live) { n->live = live; }

void hccl_net_set_crowded(hccl_netimpl *n, int crowded)
{
    n->crowded = crowded;
    n->placed = 1;
}

HcclResult hccl_net_set_peer_host(hccl_netimpl *n, uint32_t peer, const char *name, const char *ip)
{
    if (peer >= n->nranks || peer == n->rank) return HCCL_E_PARA;
    if (!n->where && !(n->where = hccl_calloc(n->nranks, sizeof *n->where))) return HCCL_E_MEMORY;
    /* Parentheses or control characters in a name (HCCL_HOST_ID is anything) would
     * garble the message and what reads it (python/hccl/_api.py). */
    char host[64], buf[128];
    snprintf(host, sizeof host, "%s", name);
    for (char *c = host; *c; c++)
        if (*c == '(' || *c == ')' || (unsigned char)*c < 0x20) *c = '?';
    snprintf(buf, sizeof buf, " (host %s %s)", host, ip);
    char *w = hccl_malloc(strlen(buf) + 1);
    if (!w) return HCCL_E_MEMORY;
    strcpy(w, buf);
    hccl_free(n->where[peer]);
    n->where[peer] = w;
    return HCCL_SUCCESS;
}

/* Best effort: a full socket or ring just misses it. */
static void send_abort_frame(hccl_conn *c, const char *why, size_t len, uint32_t seq)
{
    msg_hdr h;
    memset(&h, 0, sizeof h);
    h.op = OP_ABORT;
    h.seq = seq; /* the collective this rank failed in (0: not one) */
    h.len = len;
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)why, len}};
    size_t moved = 0;
    c->ops->send(c, iov, 2, &moved);
    conn_flush(c);
}

void hccl_net_abort(hccl_netimpl *n, const char *why)
{
    size_t len = strnlen(why, ABORT_TEXT_MAX);
    const uint32_t seq = n->fp.p2p ? 0 : n->fp.seq;
    if (n->slots) hccl_slots_abort(n->slots, seq);
    pthread_mutex_lock(&n->io_lock); /* the responder reads these connections no more */
    __atomic_store_n(&n->broken, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&n->idle, IDLE_NO, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&n->io_lock);
    for (uint32_t p = 0; p < n->nranks; p++) {
        hccl_conn *c = n->conns[p];
        hccl_conn *live = n->live ? n->live[p] : NULL;
        if (!c) continue;
        /* On the data connection only where the frame lands on a message boundary;
         * the control connection of a shared-memory peer always is at one. */
        if (!n->send_partial[p]) send_abort_frame(c, why, len, seq);
        if (live) send_abort_frame(live, why, len, seq);
        if (c->ops->shutdown) c->ops->shutdown(c);
        if (live && live->ops->shutdown) live->ops->shutdown(live);
    }
}

HcclResult hccl_net_create(uint32_t rank, uint32_t nranks, hccl_conn **conns, hccl_netimpl **out)
{
    (void)hccl_param_net_spin_us(); /* read now, not first on a stream's worker (see comm.c) */
    (void)hccl_param_copy_nt_bytes();
    (void)hccl_cache_bytes();
    hccl_netimpl *n = hccl_calloc(1, sizeof *n);
    if (!n) return HCCL_E_MEMORY;
    pthread_mutex_init(&n->io_lock, NULL);
    uint64_t sc = hccl_syscall_ns();
    n->yield_switched_ns = HCCL_MAX((uint64_t)YIELD_SWITCHED_NS, 2 * sc + 300);
    n->yield_gap_ns = 4 * sc;
    n->base.exchange = net_exchange;
    n->base.fail = net_fail;
    n->rank = rank;
    n->aborted_peer = -1;
    n->nranks = nranks;
    n->conns = conns;
    n->p2p_sseq = hccl_calloc(nranks, sizeof(uint32_t));
    n->p2p_rseq = hccl_calloc(nranks, sizeof(uint32_t));
    n->send_partial = hccl_calloc(nranks, 1);
    n->busy = hccl_calloc(2u * nranks, 1);
    n->pfds = hccl_calloc(3u * nranks, sizeof(struct pollfd));
    n->dead = hccl_calloc(nranks, 1);
    n->heard = hccl_calloc(nranks, 1);
    n->pb = hccl_calloc(nranks, sizeof *n->pb);
    if (!n->p2p_sseq || !n->p2p_rseq || !n->send_partial || !n->busy || !n->pfds || !n->dead || !n->heard ||
        !n->pb) {
        hccl_net_destroy(n);
        return HCCL_E_MEMORY;
    }
    *out = n;
    return HCCL_SUCCESS;
}

void hccl_net_destroy(hccl_netimpl *n)
{
    if (!n) return;
    hccl_net_stop_responder(n);
    for (uint32_t p = 0; n->pb && p < n->nranks; p++) hccl_free(n->pb[p].buf);
    hccl_free(n->pb);
    pthread_mutex_destroy(&n->io_lock);
    hccl_free(n->p2p_sseq);
    hccl_free(n->p2p_rseq);
    hccl_free(n->send_partial);
    hccl_free(n->busy);
    hccl_free(n->pfds);
    hccl_free(n->st);
    for (uint32_t p = 0; n->pmem && p < n->nranks; p++) hccl_peermem_close(n->pmem[p]);
    hccl_free(n->pmem);
    hccl_free(n->pids);
    for (uint32_t p = 0; n->where && p < n->nranks; p++) hccl_free(n->where[p]);
    hccl_free(n->where);
    hccl_free(n->dead);
    hccl_free(n->heard);
    hccl_slots_close(n->slots);
    hccl_free(n);
}

hccl_net *hccl_net_base(hccl_netimpl *n) { return &n->base; }

void hccl_net_begin_op(hccl_netimpl *n, const hccl_fingerprint *fp, uint64_t timeout_ns)
{
    int expect = IDLE_YES;
    if (!__atomic_compare_exchange_n(&n->idle, &expect, IDLE_NO, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE) &&
        expect == IDLE_SERVING) {
        pthread_mutex_lock(&n->io_lock); /* waits for the pass; none starts until end_op */
        __atomic_store_n(&n->idle, IDLE_NO, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&n->io_lock);
    }
    n->fp = *fp;
    n->timeout_ns = timeout_ns;
    n->deadline_ns = 0;
    n->err[0] = 0;
    n->err_abort = NULL;
    memset(n->heard, 0, n->nranks);
}

void hccl_net_set_abort_flag(hccl_netimpl *n, const int *flag) { n->abort_flag = flag; }

void hccl_net_set_suspend_flag(hccl_netimpl *n, const int *flag) { n->suspend_flag = flag; }

const char *hccl_net_error(hccl_netimpl *n) { return n->err; }

const char *hccl_net_peer_abort(hccl_netimpl *n) { return n->err_abort; }
