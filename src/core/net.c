/*
 * net.c - the exchange engine behind hccl_net (framing and checks in net.h).
 */
#include "core/net.h"

#include "algo/algo.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

typedef struct msg_hdr {
    uint32_t seq;
    uint32_t kind;
    uint64_t len;
} msg_hdr;
_Static_assert(sizeof(msg_hdr) == 16, "wire layout");

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
    hccl_op_type op;
    int p2p;
    uint32_t coll_seq;
    uint64_t deadline_ns;
    uint32_t *p2p_sseq, *p2p_rseq;
    xstate *st;
    int st_cap;
    unsigned char *busy;
    struct pollfd *pfds;
    int *pfd_peer;
    char err[512];
};

HCCL_PARAM_INT(net_spin_us, "HCCL_NET_SPIN_US", 50)

static const char *kind_str(uint32_t kind, char *buf, size_t len)
{
    if (kind & 1) snprintf(buf, len, "point-to-point transfer");
    else snprintf(buf, len, "%s", hccl_op_name((hccl_op_type)(kind >> 8)));
    return buf;
}

static HcclResult fail(hccl_netimpl *n, HcclResult res, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static HcclResult fail(hccl_netimpl *n, HcclResult res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->err, sizeof n->err, fmt, ap);
    va_end(ap);
    return res;
}

static HcclResult check_header(hccl_netimpl *n, hccl_xfer *x, xstate *s)
{
    if (s->hdr.seq == s->want.seq && s->hdr.kind == s->want.kind && s->hdr.len == s->want.len) return HCCL_SUCCESS;
    char a[64], b[64];
    if (s->hdr.kind != s->want.kind || s->hdr.seq != s->want.seq)
        return fail(n, HCCL_E_PARA,
                    "operation mismatch: this rank (%u) is in %s #%u but rank %u sent data for %s #%u", n->rank,
                    kind_str(s->want.kind, a, sizeof a), s->want.seq, x->peer, kind_str(s->hdr.kind, b, sizeof b),
                    s->hdr.seq);
    return fail(n, HCCL_E_PARA,
                "size mismatch in %s #%u: rank %u expects %llu bytes from rank %u, which sent %llu (count or "
                "dtype differ between ranks)",
                kind_str(s->want.kind, a, sizeof a), s->want.seq, n->rank, (unsigned long long)s->want.len, x->peer,
                (unsigned long long)s->hdr.len);
}

/* Match self-transfers (peer == rank) in posting order with memcpy. */
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
        uint32_t seq = n->p2p ? (x[i].dir == HCCL_XFER_SEND ? n->p2p_sseq[x[i].peer]++ : n->p2p_rseq[x[i].peer]++)
                              : n->coll_seq;
        /* Send, Recv and BatchSendRecv all match each other: one point-to-point kind. */
        uint32_t kind = n->p2p ? ((uint32_t)HCCL_OP_BATCH_SEND_RECV << 8) | 1u : (uint32_t)n->op << 8;
        msg_hdr h = {seq, kind, x[i].bytes};
        if (x[i].dir == HCCL_XFER_SEND) s->hdr = h;
        else s->want = h;
        remaining++;
    }
    if (has_self) CHECK(do_self(n, x, cnt));

    uint64_t spin_ns = (uint64_t)hccl_param_net_spin_us() * 1000ull;
    uint64_t last_progress = hccl_now_ns();
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
            HcclResult r = x[i].dir == HCCL_XFER_SEND ? c->ops->send(c, iov, iovcnt, &moved)
                                                       : c->ops->recv(c, iov, iovcnt, &moved);
            if (r != HCCL_SUCCESS)
                return fail(n, r, "connection to rank %u lost during %s (%s failed: peer closed or reset)",
                            x[i].peer, hccl_op_name(n->op), x[i].dir == HCCL_XFER_SEND ? "send" : "receive");
            if (moved == 0) continue;
            progressed = 1;
            s->done += moved;
            if (x[i].dir == HCCL_XFER_RECV && !s->checked && s->done >= sizeof(msg_hdr)) {
                s->checked = 1;
                CHECK(check_header(n, &x[i], s));
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
        if (n->deadline_ns && now > n->deadline_ns) {
            char peers[256];
            size_t o = 0;
            peers[0] = 0;
            for (int i = 0; i < cnt && o + 24 < sizeof peers; i++)
                if (!n->st[i].finished)
                    o += (size_t)snprintf(peers + o, sizeof peers - o, "%s%s rank %u", o ? ", " : "",
                                          x[i].dir == HCCL_XFER_SEND ? "send to" : "receive from", x[i].peer);
            return fail(n, HCCL_E_TIMEOUT, "%s timed out (HCCL_EXEC_TIMEOUT) on rank %u waiting for: %s",
                        hccl_op_name(n->op), n->rank, peers);
        }
        if (now - last_progress < spin_ns) {
            sched_yield();
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
        if (np) poll(n->pfds, (nfds_t)np, 100);
        else sched_yield(); /* transports without a descriptor: keep polling */
    }
    return HCCL_SUCCESS;
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
    n->busy = hccl_calloc(2u * nranks, 1);
    n->pfds = hccl_calloc(2u * nranks, sizeof(struct pollfd));
    if (!n->p2p_sseq || !n->p2p_rseq || !n->busy || !n->pfds) {
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
    hccl_free(n->busy);
    hccl_free(n->pfds);
    hccl_free(n->st);
    hccl_free(n);
}

hccl_net *hccl_net_base(hccl_netimpl *n) { return &n->base; }

void hccl_net_begin_op(hccl_netimpl *n, hccl_op_type type, int p2p, uint32_t coll_seq, uint64_t deadline_ns)
{
    n->op = type;
    n->p2p = p2p;
    n->coll_seq = coll_seq;
    n->deadline_ns = deadline_ns;
    n->err[0] = 0;
}

const char *hccl_net_error(hccl_netimpl *n) { return n->err; }
