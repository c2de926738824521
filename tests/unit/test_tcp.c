/*
 * test_tcp.c - the TCP transport over 1..8 loopback sockets per pair: messages of
 * every size around the striping chunk arrive intact and in order, whether the
 * receiver reads header and payload together or apart, and a peer that goes away
 * is an error, not a hang.
 */
#include "tinytest.h"

#include "transport/transport.h"
#include "boot/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NMSG 64

static const size_t sizes[] = {0,           1,           31,          32,         4095,       (128u << 10) - 1,
                               128u << 10, (128u << 10) + 1, 300000, (1u << 20) + 7, 3u << 20, 5u << 20};

typedef struct hdr {
    uint64_t seq, len, pad[2];
} hdr;

static size_t msg_len(int i) { return sizes[(unsigned)(i * 7 + 3) % (sizeof sizes / sizeof sizes[0])]; }
static unsigned char byte_at(int i, size_t off) { return (unsigned char)(i * 131 + off * 7 + (off >> 9)); }

/* Move all of iov (iovcnt <= 2) over c; 0 on success. */
static int move_all(hccl_conn *c, int sending, struct iovec *iov, int iovcnt)
{
    int idle = 0;
    long spins = 0;
    while (iovcnt > 0) {
        if (++spins > 1000000) return -2; /* woken a million times, moving nothing */
        size_t moved = 0;
        HcclResult r = sending ? c->ops->send(c, iov, iovcnt, &moved) : c->ops->recv(c, iov, iovcnt, &moved);
        if (r != HCCL_SUCCESS) return -1;
        if (moved == 0) {
            short ev = 0;
            struct pollfd p = {c->ops->wait_fd(c, sending, &ev), 0, 0};
            p.events = ev;
            if (poll(&p, 1, 1000) == 0 && ++idle > 10) return -2; /* 10 s asleep without progress */
            continue;
        }
        idle = 0;
        spins = 0;
        while (moved && iovcnt) {
            size_t k = moved < iov[0].iov_len ? moved : iov[0].iov_len;
            iov[0].iov_base = (char *)iov[0].iov_base + k;
            iov[0].iov_len -= k;
            moved -= k;
            if (iov[0].iov_len == 0) {
                if (iovcnt > 1) iov[0] = iov[1]; /* the caller's array may hold just one */
                iovcnt--;
            }
        }
    }
    return 0;
}

typedef struct side {
    hccl_conn *c;
    int result;
    int slow; /* receiver pauses now and then, so the sender's sockets fill */
} side;

static void *sender(void *arg)
{
    side *s = arg;
    unsigned char *buf = malloc(5u << 20);
    for (int i = 0; i < NMSG && s->result == 0; i++) {
        hdr h = {(uint64_t)i, msg_len(i), {0, 0}};
        for (size_t o = 0; o < h.len; o++) buf[o] = byte_at(i, o);
        struct iovec iov[2] = {{&h, sizeof h}, {buf, h.len}};
        s->result = move_all(s->c, 1, iov, h.len ? 2 : 1);
    }
    free(buf);
    return NULL;
}

static void *receiver(void *arg)
{
    side *s = arg;
    unsigned char *buf = malloc(5u << 20);
    for (int i = 0; i < NMSG && s->result == 0; i++) {
        hdr h;
        size_t len = msg_len(i);
        memset(buf, 0xee, len);
        if (s->slow && i % 5 == 0) usleep(20000);
        if (i % 2) { /* header and payload in one call, as the network engine posts them */
            struct iovec iov[2] = {{&h, sizeof h}, {buf, len}};
            s->result = move_all(s->c, 0, iov, len ? 2 : 1);
        } else { /* header first, then the payload */
            struct iovec iov[2] = {{&h, sizeof h}, {buf, len}};
            s->result = move_all(s->c, 0, iov, 1);
            if (s->result == 0 && len) s->result = move_all(s->c, 0, iov + 1, 1);
        }
        if (s->result) break;
        if (h.seq != (uint64_t)i || h.len != len) {
            s->result = -3;
            break;
        }
        for (size_t o = 0; o < len; o++)
            if (buf[o] != byte_at(i, o)) {
                fprintf(stderr, "message %d: byte %zu is %u, not %u\n", i, o, buf[o], byte_at(i, o));
                s->result = -4;
                break;
            }
    }
    free(buf);
    return NULL;
}

/* n connected loopback socket pairs, a[k] <-> b[k]. */
static int make_pairs(unsigned n, int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 8) ||
        getsockname(l, (struct sockaddr *)&sa, &sl))
        return -1;
    for (unsigned k = 0; k < n; k++) {
        a[k] = socket(AF_INET, SOCK_STREAM, 0);
        if (a[k] < 0 || connect(a[k], (struct sockaddr *)&sa, sizeof sa)) return -1;
        b[k] = accept(l, NULL, NULL);
        if (b[k] < 0) return -1;
    }
    close(l);
    return 0;
}

static void stream_test(unsigned n, int slow)
{
    int a[8], b[8];
    TT_ASSERT(make_pairs(n, a, b) == 0);
    side s = {NULL, 0, 0}, r = {NULL, 0, slow};
    TT_ASSERT_EQ(hccl_tcp_conn_create(a, n, 1, 20000, &s.c), HCCL_SUCCESS);
    TT_ASSERT_EQ(hccl_tcp_conn_create(b, n, 0, 0, &r.c), HCCL_SUCCESS);
    /* The give-up time is the sockets' TCP_USER_TIMEOUT, with keepalive; 0 leaves
     * the kernel's defaults. */
    for (unsigned j = 0; j < n; j++) {
        unsigned ut = 1;
        int ka = -1;
        socklen_t l = sizeof ut;
        getsockopt(a[j], IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &l);
        TT_ASSERT_EQ(ut, 20000u);
        l = sizeof ka;
        getsockopt(a[j], SOL_SOCKET, SO_KEEPALIVE, &ka, &l);
        TT_ASSERT_EQ(ka, 1);
        l = sizeof ut;
        getsockopt(b[j], IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &l);
        TT_ASSERT_EQ(ut, 0u);
    }
    pthread_t ts, tr;
    pthread_create(&ts, NULL, sender, &s);
    pthread_create(&tr, NULL, receiver, &r);
    pthread_join(ts, NULL);
    pthread_join(tr, NULL);
    TT_ASSERT_MSG(s.result == 0 && r.result == 0, "%u socket(s), slow=%d: sender %d, receiver %d", n, slow, s.result,
                  r.result);
    TT_ASSERT_EQ(hccl_tcp_conn_fd(s.c), a[0]);
    s.c->ops->close(s.c);
    r.c->ops->close(r.c);
}

/* The peer closes: a receive fails (does not wait forever), on any socket count. */
static void closed_test(unsigned n)
{
    int a[8], b[8];
    TT_ASSERT(make_pairs(n, a, b) == 0);
    hccl_conn *ca = NULL, *cb = NULL;
    TT_ASSERT_EQ(hccl_tcp_conn_create(a, n, 1, 0, &ca), HCCL_SUCCESS);
    TT_ASSERT_EQ(hccl_tcp_conn_create(b, n, 0, 0, &cb), HCCL_SUCCESS);
    ca->ops->close(ca);
    unsigned char buf[1 << 20];
    struct iovec iov = {buf, sizeof buf};
    TT_ASSERT_EQ(move_all(cb, 0, &iov, 1), -1);
    TT_ASSERT_EQ(cb->os_error, ECONNRESET); /* what the failure message is chosen by */
    cb->ops->close(cb);
}

/* No descriptor left for a socket (EMFILE): joining the root fails at once with
 * HCCL_E_SYSCALL, named as such, not as a root that could not be reached in time
 * (HCCL_E_TCP_CONNECT). In a child, whose descriptors it exhausts. */
static void join_without_fds(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {32, 32};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(10);
        while (dup(0) >= 0) {
        }
        hccl_addr root;
        memset(&root, 0, sizeof root);
        struct sockaddr_in *sin = (struct sockaddr_in *)&root;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(1);
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        hccl_boot_ident id = {1, 2, 0};
        hccl_boot_peer self, table[2];
        memset(&self, 0, sizeof self);
        self.rank = 1;
        HcclResult r = hccl_boot_join(&root, &id, 2, &self, 2000000000ull, NULL, NULL, table);
        _exit(r == HCCL_E_SYSCALL ? 0 : 20 + (int)r);
    }
    int st = 0;
    TT_ASSERT(pid > 0 && waitpid(pid, &st, 0) == pid);
    TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d (20 + the HcclResult of the join)",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(void)
{
    join_without_fds();
    int bad[1] = {-1};
    hccl_conn *c = NULL;
    TT_ASSERT_EQ(hccl_tcp_conn_create(bad, 0, 1, 0, &c), HCCL_E_PARA);
    TT_ASSERT_EQ(hccl_tcp_conn_create(bad, 9, 1, 0, &c), HCCL_E_PARA);
    /* Give-up times: the operation timeout + 10 s; never for "never"; at most INT_MAX ms
     * (what the kernel accepts). */
    TT_ASSERT_EQ(hccl_tcp_give_up_ms(0), 0u);
    TT_ASSERT_EQ(hccl_tcp_give_up_ms(5000000000ull), 15000u);
    TT_ASSERT_EQ(hccl_tcp_give_up_ms(1836000000000ull), 1846000u);
    TT_ASSERT_EQ(hccl_tcp_give_up_ms(UINT64_MAX), (unsigned)INT_MAX);
    {
        unsigned ut = hccl_tcp_give_up_ms(UINT64_MAX); /* the kernel takes the largest */
        int s = socket(AF_INET, SOCK_STREAM, 0);
        TT_ASSERT_EQ(setsockopt(s, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut), 0);
        close(s);
    }
    for (unsigned n = 1; n <= 8; n++) {
        if (n > 3 && n != 8) continue;
        stream_test(n, 0);
        stream_test(n, 1);
        closed_test(n);
    }
    return tt_report("test_tcp");
}
