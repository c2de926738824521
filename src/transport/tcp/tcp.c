/*
 * tcp.c - the TCP transport: one non-blocking, authenticated (at bootstrap) socket
 * per peer pair, carrying both directions. Large messages stream through the
 * socket in whatever pieces the kernel accepts; the network layer keeps many
 * transfers in flight and polls before it sleeps.
 */
#include "transport/transport.h"

#include "boot/socket.h"
#include "util/log.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct tcp_conn {
    hccl_conn base;
    int fd;
} tcp_conn;

static HcclResult tcp_send(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    tcp_conn *t = (tcp_conn *)c;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = (struct iovec *)iov;
    m.msg_iovlen = (size_t)iovcnt;
    ssize_t n = sendmsg(t->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
        *moved = (size_t)n;
        return HCCL_SUCCESS;
    }
    *moved = 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return HCCL_SUCCESS;
    HCCL_INFO(NET, "send to rank %u: %s", c->peer, strerror(errno));
    return HCCL_E_TCP_TRANSFER;
}

static HcclResult tcp_recv(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    tcp_conn *t = (tcp_conn *)c;
    ssize_t n = readv(t->fd, iov, iovcnt);
    if (n > 0) {
        *moved = (size_t)n;
        return HCCL_SUCCESS;
    }
    *moved = 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return HCCL_SUCCESS;
    HCCL_INFO(NET, "receive from rank %u: %s", c->peer, n == 0 ? "connection closed" : strerror(errno));
    return HCCL_E_TCP_TRANSFER;
}

static int tcp_wait_fd(hccl_conn *c, int sending, short *events)
{
    *events = sending ? POLLOUT : POLLIN;
    return ((tcp_conn *)c)->fd;
}

static void tcp_close(hccl_conn *c)
{
    tcp_conn *t = (tcp_conn *)c;
    if (t->fd >= 0) close(t->fd);
    hccl_free(t);
}

static void tcp_shutdown(hccl_conn *c) { shutdown(((tcp_conn *)c)->fd, SHUT_RDWR); }

static int tcp_stalled(hccl_conn *c, char *why, size_t len)
{
    struct tcp_info ti;
    socklen_t sl = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(((tcp_conn *)c)->fd, IPPROTO_TCP, TCP_INFO, &ti, &sl) != 0) return 0;
    if (ti.tcpi_unacked == 0 || (ti.tcpi_retransmits == 0 && ti.tcpi_backoff == 0 && ti.tcpi_probes == 0)) return 0;
    snprintf(why, len, "%u segment(s) unacknowledged, %u retransmission(s), last acknowledgement %u ms ago",
             ti.tcpi_unacked, ti.tcpi_total_retrans, ti.tcpi_last_ack_recv);
    return 1;
}

const hccl_transport hccl_tcp_transport = {"tcp",        tcp_send,     tcp_recv,   tcp_wait_fd,
                                           tcp_close,    tcp_shutdown, tcp_stalled};

HcclResult hccl_tcp_conn_create(int fd, unsigned peer, hccl_conn **out)
{
    tcp_conn *t = hccl_calloc(1, sizeof *t);
    if (!t) return HCCL_E_MEMORY;
    t->base.ops = &hccl_tcp_transport;
    t->base.peer = peer;
    t->fd = fd;
    hccl_socket_set_nonblock(fd, 1);
    /* A peer whose host vanished (no FIN, no RST) is noticed within seconds. */
    int one = 1, idle = 2, intvl = 1, cnt = 3;
    unsigned user_timeout_ms = 10000;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
    int sz = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    *out = &t->base;
    return HCCL_SUCCESS;
}

int hccl_tcp_conn_fd(hccl_conn *c) { return c && c->ops == &hccl_tcp_transport ? ((tcp_conn *)c)->fd : -1; }
