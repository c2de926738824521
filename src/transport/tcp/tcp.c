/*
 * tcp.c - the TCP transport: one or several (HCCL_SOCKET_NCONN) non-blocking,
 * authenticated (at bootstrap) sockets per peer pair, carrying both directions. Large messages stream through the
 * socket in whatever pieces the kernel accepts; the network layer keeps many
 * transfers in flight and polls before it sleeps.
 */
#include "transport/transport.h"

#include "boot/socket.h"
#include "util/log.h"
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <poll.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

/* The pair's byte stream is cut in chunks of CHUNK bytes dealt round-robin to the
 * sockets: chunk k travels on socket k % nfds, so both sides know where every byte
 * goes without any framing of their own, and each socket keeps order. A call may
 * move bytes ahead of the stream position on other sockets (never beyond the
 * caller's iov); they are remembered, skipped when the caller offers them again, and
 * reported once everything before them has moved. With one socket this is plain
 * sendmsg / readv. */
#define CHUNK (128u << 10)

typedef struct tcp_dir {
    uint64_t pos;                    /* stream offset reported to the caller */
    uint64_t end[HCCL_TCP_MAX_SOCKS]; /* per socket: stream offset it has moved up to */
} tcp_dir;

typedef struct tcp_conn {
    hccl_conn base;
    unsigned nfds;
    int fds[HCCL_TCP_MAX_SOCKS];
    tcp_dir dir[2]; /* 0 receive, 1 send */
} tcp_conn;

/* The part [from, to) of the stream offered by iov (which starts at stream offset
 * base) as an iovec array of at most max entries. */
static int iov_slice(const struct iovec *iov, int iovcnt, uint64_t base, uint64_t from, uint64_t to,
                     struct iovec *out, int max)
{
    int n = 0;
    uint64_t at = base;
    for (int i = 0; i < iovcnt && at < to && n < max; i++) {
        uint64_t s = at, e = at + iov[i].iov_len;
        at = e;
        if (e <= from) continue;
        uint64_t a = s < from ? from : s, b = e < to ? e : to;
        if (a >= b) continue;
        out[n].iov_base = (char *)iov[i].iov_base + (a - s);
        out[n++].iov_len = (size_t)(b - a);
    }
    return n;
}

static ssize_t sock_io(int fd, int sending, struct iovec *iov, int n)
{
    if (sending) {
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        return sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ssize_t r = readv(fd, iov, n);
    if (r == 0) errno = ECONNRESET; /* orderly close: the peer is gone */
    return r == 0 ? -1 : r;
}

static HcclResult tcp_io(hccl_conn *c, int sending, const struct iovec *iov, int iovcnt, size_t *moved)
{
    tcp_conn *t = (tcp_conn *)c;
    *moved = 0;
    if (t->nfds == 1) {
        ssize_t n = sock_io(t->fds[0], sending, (struct iovec *)iov, iovcnt);
        if (n > 0) *moved = (size_t)n;
        if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return HCCL_SUCCESS;
        c->os_error = errno;
        HCCL_INFO(NET, "%s rank %u: %s", sending ? "send to" : "receive from", c->peer,
                  errno == ECONNRESET && !sending ? "connection closed" : strerror(errno));
        return HCCL_E_TCP_TRANSFER;
    }
    tcp_dir *d = &t->dir[sending];
    uint64_t p0 = d->pos, limit = p0 + hccl_iov_bytes(iov, iovcnt);
    /* Every socket moves what it can of its chunk inside [pos, limit). */
    for (uint64_t k = p0 / CHUNK; k < p0 / CHUNK + t->nfds && k * CHUNK < limit; k++) {
        unsigned j = (unsigned)(k % t->nfds);
        uint64_t cs = k * CHUNK, ce = cs + CHUNK;
        if (d->end[j] < cs) d->end[j] = cs; /* its earlier chunks are all done */
        for (;;) {
            uint64_t from = d->end[j] < p0 ? p0 : d->end[j], to = ce < limit ? ce : limit;
            if (from >= to) break;
            struct iovec part[16];
            int np = iov_slice(iov, iovcnt, p0, from, to, part, 16);
            ssize_t n = sock_io(t->fds[j], sending, part, np);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                c->os_error = errno;
                HCCL_INFO(NET, "%s rank %u (socket %u): %s", sending ? "send to" : "receive from", c->peer, j,
                          errno == ECONNRESET && !sending ? "connection closed" : strerror(errno));
                return HCCL_E_TCP_TRANSFER;
            }
            d->end[j] = from + (uint64_t)n;
        }
    }
    /* Report the prefix that is now complete. */
    uint64_t p = p0;
    while (p < limit) {
        uint64_t k = p / CHUNK;
        uint64_t e = d->end[k % t->nfds];
        if (e <= p) break;
        p = e < limit ? e : limit;
        if (p < (k + 1) * CHUNK) break;
    }
    d->pos = p;
    *moved = (size_t)(p - p0);
    return HCCL_SUCCESS;
}

static HcclResult tcp_send(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    return tcp_io(c, 1, iov, iovcnt, moved);
}

static HcclResult tcp_recv(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    return tcp_io(c, 0, iov, iovcnt, moved);
}

/* The socket that holds up the stream: the one carrying the chunk at its position. */
static int tcp_wait_fd(hccl_conn *c, int sending, short *events)
{
    tcp_conn *t = (tcp_conn *)c;
    *events = sending ? POLLOUT : POLLIN;
    return t->fds[(t->dir[sending].pos / CHUNK) % t->nfds];
}

/* The next len bytes of the stream, if they are all in the kernel's buffer. Striped:
 * only when they lie in one chunk whose socket has nothing of it read yet beyond the
 * stream's position (at a message boundary it has not). */
static int tcp_peek(hccl_conn *c, void *buf, size_t len)
{
    tcp_conn *t = (tcp_conn *)c;
    unsigned j = 0;
    if (t->nfds > 1) {
        const tcp_dir *d = &t->dir[0];
        uint64_t p = d->pos, k = p / CHUNK, cs = k * CHUNK;
        j = (unsigned)(k % t->nfds);
        uint64_t next = d->end[j] > cs ? d->end[j] : cs;
        if (next != p || p + len > cs + CHUNK) return 0;
    }
    return recv(t->fds[j], buf, len, MSG_PEEK | MSG_DONTWAIT) == (ssize_t)len;
}

static void tcp_close(hccl_conn *c)
{
    tcp_conn *t = (tcp_conn *)c;
    for (unsigned j = 0; j < t->nfds; j++)
        if (t->fds[j] >= 0) close(t->fds[j]);
    hccl_free(t);
}

static void tcp_shutdown(hccl_conn *c)
{
    tcp_conn *t = (tcp_conn *)c;
    for (unsigned j = 0; j < t->nfds; j++) shutdown(t->fds[j], SHUT_RDWR);
}

static int tcp_stalled(hccl_conn *c, char *why, size_t len)
{
    tcp_conn *t = (tcp_conn *)c;
    for (unsigned j = 0; j < t->nfds; j++) {
        struct tcp_info ti;
        socklen_t sl = sizeof ti;
        memset(&ti, 0, sizeof ti);
        if (getsockopt(t->fds[j], IPPROTO_TCP, TCP_INFO, &ti, &sl) != 0) continue;
        if (ti.tcpi_unacked == 0 || (ti.tcpi_retransmits == 0 && ti.tcpi_backoff == 0 && ti.tcpi_probes == 0))
            continue;
        snprintf(why, len, "%u segment(s) unacknowledged, %u retransmission(s), last acknowledgement %u ms ago",
                 ti.tcpi_unacked, ti.tcpi_total_retrans, ti.tcpi_last_ack_recv);
        return 1;
    }
    return 0;
}

const hccl_transport hccl_tcp_transport = {
    .name = "tcp",
    .send = tcp_send,
    .recv = tcp_recv,
    .wait_fd = tcp_wait_fd,
    .close = tcp_close,
    .shutdown = tcp_shutdown,
    .stalled = tcp_stalled,
    .peek = tcp_peek,
};

unsigned hccl_tcp_give_up_ms(uint64_t exec_timeout_ns)
{
    if (!exec_timeout_ns) return 0;
    uint64_t ms = exec_timeout_ns / 1000000u + 10000u;
    return ms > INT_MAX ? INT_MAX : (unsigned)ms; /* Linux refuses a TCP_USER_TIMEOUT above INT_MAX */
}

HcclResult hccl_tcp_conn_create(const int *fds, unsigned nfds, unsigned peer, unsigned give_up_ms,
                                hccl_conn **out)
{
    if (nfds < 1 || nfds > HCCL_TCP_MAX_SOCKS) return HCCL_E_PARA;
    tcp_conn *t = hccl_calloc(1, sizeof *t);
    if (!t) return HCCL_E_MEMORY;
    t->base.ops = &hccl_tcp_transport;
    t->base.peer = peer;
    t->nfds = nfds;
    for (unsigned j = 0; j < nfds; j++) {
        int fd = t->fds[j] = fds[j];
        hccl_socket_set_nonblock(fd, 1);
        if (give_up_ms) {
            /* A peer whose host vanished (no FIN, no RST) is given up after give_up_ms,
             * idle or not: keepalive probes every second after 2 s of silence, and
             * TCP_USER_TIMEOUT (which then also bounds the probes) for the rest. */
            int one = 1, idle = 2, intvl = 1, cnt = 127;
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
            setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
            setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
            setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
            setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &give_up_ms, sizeof give_up_ms);
        }
        int sz = 4 << 20;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    }
    *out = &t->base;
    return HCCL_SUCCESS;
}

int hccl_tcp_conn_fd(hccl_conn *c) { return c && c->ops == &hccl_tcp_transport ? ((tcp_conn *)c)->fds[0] : -1; }
