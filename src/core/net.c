/*
 * net.c - the exchange engine behind hccl_net (framing and checks in net.h).
 */
#include "core/net.h"

#include "algo/algo.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define OP_ABORT 255u
#define OP_STATUS 254u   /* header only: seq = the op the sender timed out in */
#define STATUS_GRACE_NS 1000000000ull
#define FLAG_P2P 1u
#define ABORT_TEXT_MAX 1024u

typedef struct msg_hdr {
    uint32_t seq;
    uint8_t op;
    uint8_t flags;
    uint8_t dtype;
    uint8_t redop;
    uint32_t root;
    uint32_t pad;
    uint64_t count;
    uint64_t len;
} msg_hdr;
_Static_assert(sizeof(msg_hdr) == 32, "wire layout");

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
    uint64_t deadline_ns;
    const int *abort_flag;
    uint32_t *p2p_sseq, *p2p_rseq;
    unsigned char *send_partial; /* a message to this peer is half sent */
    xstate *st;
    int st_cap;
    unsigned char *busy;
    struct pollfd *pfds;
    uint32_t *pids; /* direct access: pid per peer, 0 = none */
    uint32_t self_pid;
    hccl_conn **live;     /* liveness connection per peer, or NULL */
    unsigned char *heard; /* a message of the current operation came from this peer */
    unsigned char *dead;  /* the liveness connection hung up */
    char err[1024];
};

HCCL_PARAM_INT(net_spin_us, "HCCL_NET_SPIN_US", 50)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- fingerprints ------------------------------------------------------------ */

void hccl_fingerprint_of(const hccl_op_args *a, hccl_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    fp->op = a->type;
    fp->dtype = a->dtype;
    fp->redop = HCCL_REDUCE_RESERVED;
    fp->root = UINT32_MAX;
    fp->count = a->count;
    switch (a->type) {
    case HCCL_OP_ALLREDUCE:
    case HCCL_OP_REDUCE_SCATTER:
        fp->redop = a->redop;
        break;
    case HCCL_OP_REDUCE:
        fp->redop = a->redop;
        fp->root = a->root;
        break;
    case HCCL_OP_REDUCE_SCATTER_V:
        fp->redop = a->redop;
        fp->count = UINT64_MAX;
        break;
    case HCCL_OP_BROADCAST:
    case HCCL_OP_SCATTER:
    case HCCL_OP_GATHER:
        fp->root = a->root;
        break;
    case HCCL_OP_ALLGATHER_V:
    case HCCL_OP_ALLTOALLV:
    case HCCL_OP_ALLTOALLVC:
        fp->count = UINT64_MAX;
        break;
    case HCCL_OP_BARRIER:
        fp->count = 0;
        break;
    case HCCL_OP_SEND:
    case HCCL_OP_RECV:
    case HCCL_OP_BATCH_SEND_RECV:
        fp->p2p = 1;
        fp->op = HCCL_OP_BATCH_SEND_RECV; /* all point-to-point calls match each other */
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
        if (fp->count != UINT64_MAX) o += (size_t)snprintf(buf + o, len - o, "count=%llu, ", (unsigned long long)fp->count);
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
    h->flags = fp->p2p ? FLAG_P2P : 0;
    h->dtype = (uint8_t)fp->dtype;
    h->redop = (uint8_t)fp->redop;
    h->root = fp->root;
    h->count = fp->count;
    h->len = len;
}

static void hdr_to_fp(const msg_hdr *h, hccl_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    fp->op = (hccl_op_type)h->op;
    fp->p2p = (h->flags & FLAG_P2P) != 0;
    fp->seq = h->seq;
    fp->dtype = (HcclDataType)h->dtype;
    fp->redop = (HcclReduceOp)(h->redop == 255 ? HCCL_REDUCE_RESERVED : h->redop);
    fp->root = h->root;
    fp->count = h->count;
}

/* ---- errors ---------------------------------------------------------------------- */

static HcclResult fail(hccl_netimpl *n, HcclResult res, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static HcclResult fail(hccl_netimpl *n, HcclResult res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->err, sizeof n->err, fmt, ap);
    va_end(ap);
    return res;
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
                    "point-to-point size mismatch: rank %u posts a receive of %llu bytes from rank %u, which sent "
                    "%llu bytes (count or dtype differ)",
                    n->rank, (unsigned long long)s->want.len, x->peer, (unsigned long long)s->hdr.len);
    if (!n->fp.p2p && !f.p2p && s->hdr.seq != s->want.seq)
        return fail(n, HCCL_E_PARA,
                    "operation mismatch at op #%u: rank %u called %s, rank %u is at op #%u %s (a rank skipped or "
                    "added a collective)",
                    s->want.seq, n->rank, mine, x->peer, s->hdr.seq, theirs);
    if (!n->fp.p2p && !f.p2p && s->hdr.len != s->want.len && memcmp(&s->hdr, &s->want, offsetof(msg_hdr, len)) == 0)
        return fail(n, HCCL_E_PARA,
                    "size mismatch in op #%u %s: rank %u expects %llu bytes from rank %u, which sent %llu (counts "
                    "differ between ranks)",
                    s->want.seq, mine, n->rank, (unsigned long long)s->want.len, x->peer,
                    (unsigned long long)s->hdr.len);
    return fail(n, HCCL_E_PARA, "operation mismatch at op #%u: rank %u called %s, rank %u called %s", s->want.seq,
                n->rank, n->fp.p2p ? "a point-to-point transfer" : mine, x->peer, theirs);
}

/* The peer sent an ABORT frame: read its text (part may already be in buf). */
static HcclResult peer_aborted_on(hccl_netimpl *n, hccl_conn *c, hccl_xfer *x, xstate *s)
{
    char text[ABORT_TEXT_MAX + 1];
    size_t want = s->hdr.len < ABORT_TEXT_MAX ? (size_t)s->hdr.len : ABORT_TEXT_MAX;
    size_t have = s->done - sizeof(msg_hdr);
    if (have > want) have = want;
    if (have) memcpy(text, x->buf, have);
    uint64_t dl = hccl_now_ns() + 1000000000ull;
    while (have < want && hccl_now_ns() < dl) {
        struct iovec iov = {text + have, want - have};
        size_t moved = 0;
        if (c->ops->recv(c, &iov, 1, &moved) != HCCL_SUCCESS) break;
        have += moved;
        if (!moved) sched_yield();
    }
    text[have] = 0;
    return fail(n, HCCL_E_REMOTE, "rank %u aborted: %s", x->peer, have ? text : "(no reason given)");
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

/* If the peer left an ABORT frame on c, report its reason (HCCL_E_REMOTE). */
static HcclResult read_abort_on(hccl_netimpl *n, hccl_conn *c, uint32_t peer)
{
    msg_hdr h;
    size_t have = 0;
    uint64_t dl = hccl_now_ns() + 50000000ull;
    while (have < sizeof h && hccl_now_ns() < dl) {
        struct iovec iov = {(char *)&h + have, sizeof h - have};
        size_t moved = 0;
        if (c->ops->recv(c, &iov, 1, &moved) != HCCL_SUCCESS) break;
        have += moved;
        if (!moved) sched_yield();
    }
    if (have < sizeof h || h.op != OP_ABORT) return HCCL_E_TCP_TRANSFER;
    xstate s;
    memset(&s, 0, sizeof s);
    s.hdr = h;
    s.done = sizeof h;
    hccl_xfer x = {HCCL_XFER_RECV, peer, NULL, 0};
    return peer_aborted_on(n, c, &x, &s);
}

/* After a failed send: the peer's ABORT frame, on its control connection (shared
 * memory peers: always at a message boundary) or on the data connection. */
static HcclResult read_abort(hccl_netimpl *n, uint32_t peer)
{
    if (n->live && n->live[peer] && read_abort_on(n, n->live[peer], peer) == HCCL_E_REMOTE) return HCCL_E_REMOTE;
    return read_abort_on(n, n->conns[peer], peer);
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

/* A collective timed out here. Every rank that reached it times out at about the
 * same moment, so: send a STATUS frame to every peer (where our stream is at a
 * message boundary), then listen for a short grace period for theirs. The peers
 * heard from (data of this operation, a STATUS or an ABORT) have reached it; the
 * others have not, or are stuck before it: those are the ranks to name. */
static void status_round(hccl_netimpl *n, hccl_xfer *x, int cnt, unsigned char *reached)
{
    msg_hdr st;
    memset(&st, 0, sizeof st);
    st.op = OP_STATUS;
    st.seq = n->fp.seq;
    for (uint32_t p = 0; p < n->nranks; p++) {
        reached[p] = p == n->rank || n->heard[p];
        if (p == n->rank || n->send_partial[p] || !n->conns[p]) continue;
        struct iovec iov = {&st, sizeof st};
        size_t moved = 0;
        n->conns[p]->ops->send(n->conns[p], &iov, 1, &moved);
    }
    msg_hdr *h = hccl_calloc(n->nranks, sizeof *h);
    size_t *have = hccl_calloc(n->nranks, sizeof *have);
    if (!h || !have) goto out;
    uint64_t end = hccl_now_ns() + STATUS_GRACE_NS;
    for (int pending = 1; pending && hccl_now_ns() < end;) {
        pending = 0;
        for (uint32_t p = 0; p < n->nranks; p++) {
            if (reached[p] || !n->conns[p] || receiving_from(n, x, cnt, p)) continue;
            pending = 1;
            struct iovec iov = {(char *)&h[p] + have[p], sizeof h[p] - have[p]};
            size_t moved = 0;
            if (n->conns[p]->ops->recv(n->conns[p], &iov, 1, &moved) != HCCL_SUCCESS) {
                have[p] = 0;
                continue;
            }
            have[p] += moved;
            if (have[p] < sizeof h[p]) continue;
            have[p] = 0;
            if (h[p].op == OP_ABORT || (h[p].op == OP_STATUS && h[p].seq >= n->fp.seq) ||
                (h[p].seq == n->fp.seq && !(h[p].flags & FLAG_P2P)))
                reached[p] = 1;
            else if (h[p].len && h[p].op != OP_STATUS)
                reached[p] = 1; /* data of some later operation: it is past this one */
        }
        if (pending) usleep(1000);
    }
out:
    hccl_free(h);
    hccl_free(have);
}

static HcclResult timed_out(hccl_netimpl *n, hccl_xfer *x, int cnt)
{
    char peers[900], fps[160];
    size_t o = 0;
    peers[0] = 0;
    for (int i = 0; i < cnt && o + 32 < sizeof peers; i++)
        if (!n->st[i].finished)
            o += (size_t)snprintf(peers + o, sizeof peers - o, "%s%s rank %u", o ? ", " : "",
                                  x[i].dir == HCCL_XFER_SEND ? "send to" : "receive from", x[i].peer);
    hccl_fingerprint_str(&n->fp, fps, sizeof fps);
    /* A link that swallows data names the real culprit, even when we wait on a
     * healthy peer that waits on it. */
    char why[160];
    for (uint32_t p = 0; p < n->nranks && o + 64 < sizeof peers; p++) {
        hccl_conn *c = n->conns[p];
        if (c && c->ops->stalled && c->ops->stalled(c, why, sizeof why))
            o += (size_t)snprintf(peers + o, sizeof peers - o, "; rank %u looks unreachable (%s)", p, why);
    }
    if (n->fp.p2p)
        return fail(n, HCCL_E_TIMEOUT,
                    "%s timed out (HCCL_EXEC_TIMEOUT) on rank %u waiting for: %s (the peer did not post the "
                    "matching call, or is stuck)",
                    fps, n->rank, peers);
    unsigned char *reached = hccl_calloc(n->nranks, 1);
    char missing[400] = "";
    if (reached) {
        status_round(n, x, cnt, reached);
        size_t m = 0;
        for (uint32_t p = 0; p < n->nranks && m + 16 < sizeof missing; p++)
            if (!reached[p]) m += (size_t)snprintf(missing + m, sizeof missing - m, "%srank %u", m ? ", " : "", p);
        hccl_free(reached);
    }
    if (missing[0])
        return fail(n, HCCL_E_TIMEOUT,
                    "op #%u %s timed out (HCCL_EXEC_TIMEOUT) on rank %u: ranks that have not reached op #%u (or are "
                    "stuck before it): %s; this rank was waiting for: %s",
                    n->fp.seq, fps, n->rank, n->fp.seq, missing, peers);
    return fail(n, HCCL_E_TIMEOUT,
                "op #%u %s timed out (HCCL_EXEC_TIMEOUT) on rank %u waiting for: %s (every rank reached op #%u; "
                "those are stuck in it)",
                n->fp.seq, fps, n->rank, peers, n->fp.seq);
}

static HcclResult net_exchange(hccl_net *base, hccl_xfer *x, int cnt)
{
    hccl_netimpl *n = (hccl_netimpl *)base;
    if (cnt <= 0) return HCCL_SUCCESS;
    if (cnt > n->st_cap) {
        xstate *st = hccl_malloc(sizeof *st * (size_t)cnt);
        if (!st) return fail(n, HCCL_E_MEMORY, "out of memory for %d transfers", cnt);
        hccl_free(n->st);
        n->st = st;
        n->st_cap = cnt;
    }
    int remaining = 0, has_self = 0;
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

    uint64_t spin_ns = (uint64_t)hccl_param_net_spin_us() * 1000ull;
    uint64_t last_progress = hccl_now_ns();
    unsigned idle_spins = 0;
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
            HcclResult r = sending ? c->ops->send(c, iov, iovcnt, &moved) : c->ops->recv(c, iov, iovcnt, &moved);
            if (r != HCCL_SUCCESS) {
                /* An aborting peer sent its reason before it shut the connection. */
                if (sending && !receiving_from(n, x, cnt, x[i].peer) && read_abort(n, x[i].peer) == HCCL_E_REMOTE)
                    return HCCL_E_REMOTE;
                return fail(n, r,
                            "connection to rank %u lost during %s #%u (%s failed: the peer exited, was killed, or "
                            "aborted)",
                            x[i].peer, n->fp.p2p ? "point-to-point transfer" : hccl_op_name(n->fp.op), n->fp.seq,
                            sending ? "send" : "receive");
            }
            if (moved == 0) {
                if (n->dead[x[i].peer])
                    return fail(n, HCCL_E_TCP_TRANSFER,
                                "rank %u exited or closed its connection during %s #%u (its process is gone)",
                                x[i].peer, n->fp.p2p ? "point-to-point transfer" : hccl_op_name(n->fp.op),
                                n->fp.seq);
                continue;
            }
            progressed = 1;
            s->done += moved;
            if (sending) n->send_partial[x[i].peer] = s->done < total;
            if (!sending && !s->checked && s->done >= sizeof(msg_hdr)) {
                s->checked = 1;
                HcclResult hr = check_header(n, &x[i], s);
                n->heard[x[i].peer] = 1;
                if (hr == HCCL_E_AGAIN && !n->fp.p2p) return timed_out(n, x, cnt);
                if (hr != HCCL_SUCCESS) return hr == HCCL_E_AGAIN ? fail(n, HCCL_E_TIMEOUT, "rank %u timed out", x[i].peer) : hr;
            }
            if (s->done == total) {
                s->finished = 1;
                remaining--;
            }
        }
        if (remaining == 0) break;
        uint64_t now = hccl_now_ns();
        if (progressed) {
            last_progress = now;
            continue;
        }
        if (n->abort_flag && __atomic_load_n(n->abort_flag, __ATOMIC_ACQUIRE))
            return fail(n, HCCL_E_INTERNAL, "operation aborted: the communicator is being destroyed or failed");
        if (n->deadline_ns && now > n->deadline_ns) return timed_out(n, x, cnt);
        if (now - last_progress < spin_ns) {
            /* Busy-poll without system calls; yield now and then, so that with more
             * ranks than cores the peer we wait for gets the CPU. */
            if ((++idle_spins & 3) == 0) sched_yield();
            else cpu_relax();
            continue;
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
        /* Watch the liveness connections of the peers we wait on for hang-up. */
        int first_live = np;
        if (n->live)
            for (int i = 0; i < cnt && np < (int)(3 * n->nranks); i++) {
                hccl_conn *lc = n->live[x[i].peer];
                if (n->st[i].finished || !lc || n->dead[x[i].peer]) continue;
                int fd = hccl_tcp_conn_fd(lc);
                int j;
                for (j = first_live; j < np; j++)
                    if (n->pfds[j].fd == fd) break;
                if (j < np || fd < 0) continue;
                n->pfds[np].fd = fd;
                n->pfds[np].events = POLLRDHUP | POLLIN;
                n->pfds[np].revents = 0;
                np++;
            }
        if (np) {
            poll(n->pfds, (nfds_t)np, 100);
            for (int j = first_live; j < np; j++) {
                if (!n->pfds[j].revents) continue;
                for (uint32_t p = 0; p < n->nranks; p++) {
                    if (!n->live[p] || hccl_tcp_conn_fd(n->live[p]) != n->pfds[j].fd) continue;
                    if ((n->pfds[j].revents & POLLIN) && read_abort_on(n, n->live[p], p) == HCCL_E_REMOTE)
                        return HCCL_E_REMOTE;
                    if (n->pfds[j].revents & (POLLRDHUP | POLLHUP | POLLERR)) n->dead[p] = 1;
                }
            }
        } else {
            sched_yield(); /* transports without a descriptor: keep polling */
        }
    }
    return HCCL_SUCCESS;
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
        if (k <= 0)
            return fail(n, errno == ESRCH ? HCCL_E_TCP_TRANSFER : HCCL_E_SYSCALL,
                        "direct %s rank %u (pid %u) failed: %s", write ? "write to" : "read from", peer, pid,
                        k < 0 ? strerror(errno) : "no progress");
        done += (size_t)k;
    }
    return HCCL_SUCCESS;
}

static void *net_peer_ptr(hccl_net *base, uint32_t peer, uint64_t remote)
{
    hccl_netimpl *n = (hccl_netimpl *)base;
    if (peer < n->nranks && n->pids && n->pids[peer] == n->self_pid) return (void *)(uintptr_t)remote;
    return NULL;
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

/* Best effort: a full socket or ring just misses it. */
static void send_abort_frame(hccl_conn *c, const char *why, size_t len)
{
    msg_hdr h;
    memset(&h, 0, sizeof h);
    h.op = OP_ABORT;
    h.len = len;
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)why, len}};
    size_t moved = 0;
    c->ops->send(c, iov, 2, &moved);
}

void hccl_net_abort(hccl_netimpl *n, const char *why)
{
    size_t len = strnlen(why, ABORT_TEXT_MAX);
    for (uint32_t p = 0; p < n->nranks; p++) {
        hccl_conn *c = n->conns[p];
        hccl_conn *live = n->live ? n->live[p] : NULL;
        if (!c) continue;
        /* On the data connection only where the frame lands on a message boundary;
         * the control connection of a shared-memory peer always is at one. */
        if (!n->send_partial[p]) send_abort_frame(c, why, len);
        if (live) send_abort_frame(live, why, len);
        if (c->ops->shutdown) c->ops->shutdown(c);
        if (live && live->ops->shutdown) live->ops->shutdown(live);
    }
}

HcclResult hccl_net_create(uint32_t rank, uint32_t nranks, hccl_conn **conns, hccl_netimpl **out)
{
    hccl_netimpl *n = hccl_calloc(1, sizeof *n);
    if (!n) return HCCL_E_MEMORY;
    n->base.exchange = net_exchange;
    n->rank = rank;
    n->nranks = nranks;
    n->conns = conns;
    n->p2p_sseq = hccl_calloc(nranks, sizeof(uint32_t));
    n->p2p_rseq = hccl_calloc(nranks, sizeof(uint32_t));
    n->send_partial = hccl_calloc(nranks, 1);
    n->busy = hccl_calloc(2u * nranks, 1);
    n->pfds = hccl_calloc(3u * nranks, sizeof(struct pollfd));
    n->dead = hccl_calloc(nranks, 1);
    n->heard = hccl_calloc(nranks, 1);
    if (!n->p2p_sseq || !n->p2p_rseq || !n->send_partial || !n->busy || !n->pfds || !n->dead || !n->heard) {
        hccl_net_destroy(n);
        return HCCL_E_MEMORY;
    }
    *out = n;
    return HCCL_SUCCESS;
}

void hccl_net_destroy(hccl_netimpl *n)
{
    if (!n) return;
    hccl_free(n->p2p_sseq);
    hccl_free(n->p2p_rseq);
    hccl_free(n->send_partial);
    hccl_free(n->busy);
    hccl_free(n->pfds);
    hccl_free(n->st);
    hccl_free(n->pids);
    hccl_free(n->dead);
    hccl_free(n->heard);
    hccl_free(n);
}

hccl_net *hccl_net_base(hccl_netimpl *n) { return &n->base; }

void hccl_net_begin_op(hccl_netimpl *n, const hccl_fingerprint *fp, uint64_t deadline_ns)
{
    n->fp = *fp;
    n->deadline_ns = deadline_ns;
    n->err[0] = 0;
    memset(n->heard, 0, n->nranks);
}

void hccl_net_set_abort_flag(hccl_netimpl *n, const int *flag) { n->abort_flag = flag; }

const char *hccl_net_error(hccl_netimpl *n) { return n->err; }
