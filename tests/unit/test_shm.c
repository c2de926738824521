/*
 * test_shm.c - the shared-memory transport (src/transport/shm), with the TCP transport
 * measured in the same run for comparison.
 *
 * Ranks are two forked processes or two threads joined by a socketpair (a real TCP
 * loopback pair for the TCP numbers). The driver loops like core/net.c: it calls
 * send/recv until nothing moves, spins for a while (sched_yield), then arms wait_fd
 * and sleeps in poll(). A poll that times out while the peer is still working counts
 * as a lost wake-up and fails the test.
 *
 * Covered: handshake (by descriptor nothing in /dev/shm has a name during it; the
 * fallback by name when the descriptors cannot be opened, whose entries exist during
 * it and are gone right after; nothing left after a failed or timed-out handshake;
 * bad/foreign handshakes), a verified
 * bidirectional stream with random message and iovec sizes (processes, spinning;
 * threads, sleeping at every stall with a small ring), ping-pong round trips
 * (spinning and sleeping), wake-ups of a sleeping reader and of a writer on a full
 * ring (and no early wake-up), peer close (data drained, then errors; a sleeper is
 * woken), a peer that died, plain memory ordered by messages between threads (what
 * ThreadSanitizer must see), and throughput for 1 MiB and 64 MiB transfers next to
 * TCP loopback and memcpy.
 *
 *   test_shm          the unit test (about 5 s; sanitized builds move 1/16 of the
 *                     stream data and skip the throughput figures)
 *   test_shm bench    ring-size sweep (not part of ctest)
 */
#include "tinytest.h"

#include "helper_shm_entries.h"

#include "boot/socket.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"
#include "util/util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS 1000000000ull
#define MS 1000000ull
#define PAT_LEN ((size_t)(1 << 20) + 4093)
#define MAXMSG ((size_t)4 << 20)
#define DIR_SHIFT ((size_t)777777) /* the two directions carry different patterns */
/* Sanitized builds run every case with less data (instrumented copies move a few tens
 * of MB/s) and skip the throughput figures, which would measure the instrumentation. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif
#define SCALED(bytes) (SANITIZED ? (bytes) / 16 : (bytes))

static unsigned char *g_pat; /* PAT_LEN random bytes, then MAXMSG more repeating them */

#define FAILF(...)                                                  \
    do {                                                            \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
        fprintf(stderr, __VA_ARGS__);                               \
        fprintf(stderr, "\n");                                      \
        fails++;                                                    \
    } while (0)
#define CHK(cond, ...)                                              \
    do {                                                            \
        if (!(cond)) FAILF(__VA_ARGS__);                            \
    } while (0)

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double secs_since(uint64_t t0) { return (double)(hccl_now_ns() - t0) / 1e9; }

/* ------------------------------------------------------------ rank harness */

typedef int (*rank_fn)(int rank, int fd, void *arg); /* returns its failure count */

typedef struct thr_arg {
    rank_fn fn;
    int rank, fd;
    void *arg;
    int fails;
} thr_arg;

static void *thr_main(void *p)
{
    thr_arg *t = p;
    t->fails = t->fn(t->rank, t->fd, t->arg);
    return NULL;
}

static int run_threads(rank_fn fn, void *arg)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
    pthread_t th[2];
    thr_arg ta[2];
    for (int r = 0; r < 2; r++) {
        ta[r] = (thr_arg){fn, r, sv[r], arg, 0};
        pthread_create(&th[r], NULL, thr_main, &ta[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    close(sv[0]);
    close(sv[1]);
    return ta[0].fails + ta[1].fails;
}

/* Fork one process per rank; each gets fds[rank]. A rank that hangs is killed. */
static int run_procs_on(rank_fn fn, void *arg, int fd0, int fd1, int timeout_s)
{
    int fds[2] = {fd0, fd1};
    pid_t pid[2];
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < 2; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            close(fds[1 - r]);
            alarm((unsigned)timeout_s);
            int f = fn(r, fds[r], arg);
            fflush(stdout);
            fflush(stderr);
            _exit(f ? 1 : 0);
        }
    }
    close(fd0);
    close(fd1);
    int fails = 0;
    for (int r = 0; r < 2; r++) {
        int st = 0;
        waitpid(pid[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "FAIL: rank %d process %s %d\n", r, WIFSIGNALED(st) ? "killed by signal" : "exited with",
                    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            fails++;
        }
    }
    return fails;
}

static int run_procs(rank_fn fn, void *arg)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
    return run_procs_on(fn, arg, sv[0], sv[1], 60);
}

/* A connected TCP loopback pair. */
static int tcp_pair(int fds[2])
{
    hccl_addr a;
    int lfd;
    if (hccl_addr_parse("127.0.0.1", 0, &a) != HCCL_SUCCESS || hccl_socket_listen(&a, 0, &lfd) != HCCL_SUCCESS)
        return -1;
    uint64_t dl = hccl_now_ns() + 5 * NS;
    int ok = hccl_socket_connect(&a, dl, &fds[0]) == HCCL_SUCCESS &&
             hccl_socket_accept(lfd, dl, &fds[1], NULL) == HCCL_SUCCESS;
    close(lfd);
    return ok ? 0 : -1;
}

static hccl_conn *open_conn(int rank, int fd, size_t ring, int tcp, int *fails)
{
    hccl_conn *c = NULL;
    int tfd = tcp ? dup(fd) : -1;
    HcclResult r = tcp ? hccl_tcp_conn_create(&tfd, 1, (unsigned)(1 - rank), 0, &c)
                       : hccl_shm_conn_create_sized(fd, (unsigned)rank, (unsigned)(1 - rank), hccl_now_ns() + 10 * NS,
                                                    ring, &c);
    if (r != HCCL_SUCCESS) {
        fprintf(stderr, "FAIL: rank %d cannot open the %s connection: %d\n", rank, tcp ? "tcp" : "shm", (int)r);
        (*fails)++;
        return NULL;
    }
    /* The creator unlinked everything before returning. */
    if (!tcp && rank == 0 && shm_entries_of(getpid()) != 0) {
        fprintf(stderr, "FAIL: /dev/shm entries left after the handshake\n");
        (*fails)++;
    }
    return c;
}

/* ------------------------------------------------------------ driver */

/* Skip `skip` bytes of iov (cnt entries) into out; returns the entries left. */
static int iov_skip(const struct iovec *iov, int cnt, size_t skip, struct iovec *out)
{
    int n = 0;
    for (int i = 0; i < cnt; i++) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        out[n].iov_base = (char *)iov[i].iov_base + skip;
        out[n++].iov_len = iov[i].iov_len - skip;
        skip = 0;
    }
    return n;
}

typedef struct drive_stats {
    uint64_t sleeps, lost; /* polls, and polls that timed out */
} drive_stats;

/* Settle deferred wake-ups, as transport.h asks of every caller before it waits. */
static void flush(hccl_conn *c)
{
    if (c->ops->flush) c->ops->flush(c);
}

/* Sleep (after spinning spin_ns since last_progress) until c may move in the
 * directions asked. */
static void wait_conn(hccl_conn *c, int want_tx, int want_rx, uint64_t last_progress, int64_t spin_ns,
                      drive_stats *st)
{
    flush(c);
    if (hccl_now_ns() - last_progress < (uint64_t)spin_ns) {
        sched_yield();
        return;
    }
    struct pollfd p[2];
    int np = 0;
    for (int dir = 1; dir >= 0; dir--) {
        if (dir ? !want_tx : !want_rx) continue;
        short ev = 0;
        int fd = c->ops->wait_fd(c, dir, &ev);
        if (np && p[0].fd == fd) p[0].events |= ev;
        else p[np++] = (struct pollfd){fd, ev, 0};
    }
    st->sleeps++;
    if (poll(p, (nfds_t)np, 2000) == 0) st->lost++;
}

/* Move exactly len bytes in one direction, blocking. */
static HcclResult xfer(hccl_conn *c, int sending, void *buf, size_t len, int64_t spin_ns, drive_stats *st)
{
    size_t done = 0;
    uint64_t last = hccl_now_ns(), deadline = last + 30 * NS;
    while (done < len) {
        struct iovec v = {(char *)buf + done, len - done};
        size_t m = 0;
        HcclResult r = sending ? c->ops->send(c, &v, 1, &m) : c->ops->recv(c, &v, 1, &m);
        if (r != HCCL_SUCCESS) return r;
        if (m) {
            done += m;
            last = hccl_now_ns();
            continue;
        }
        if (hccl_now_ns() > deadline) return HCCL_E_TIMEOUT;
        wait_conn(c, sending, !sending, last, spin_ns, st);
    }
    flush(c);
    return HCCL_SUCCESS;
}

static size_t rand_size(uint64_t *s)
{
    uint64_t k = rnd(s) % 100;
    if (k < 40) return 1 + rnd(s) % 64;
    if (k < 70) return 1 + rnd(s) % 4096;
    if (k < 90) return 1 + rnd(s) % (256 << 10);
    return 1 + rnd(s) % MAXMSG;
}

/* Split len bytes at base into 1..4 random pieces. */
static int split(unsigned char *base, size_t len, uint64_t *s, struct iovec *iov)
{
    int k = 1 + (int)(rnd(s) % 4);
    size_t off = 0;
    int n = 0;
    for (int i = 0; i < k && off < len; i++) {
        size_t piece = i == k - 1 ? len - off : rnd(s) % (len - off + 1);
        iov[n].iov_base = base + off;
        iov[n++].iov_len = piece; /* zero-length pieces are allowed */
        off += piece;
    }
    if (off < len) iov[n - 1].iov_len += len - off;
    return n;
}

typedef struct stream_arg {
    uint64_t bytes; /* per direction */
    size_t ring;
    int64_t spin_ns;
    int tcp;
    size_t fixed;   /* message size; 0 = random sizes and iovecs */
    int verify;
    const char *label;
} stream_arg;

/* Both directions at once, like an exchange step of a collective. */
static int stream_rank(int rank, int fd, void *argp)
{
    stream_arg *a = argp;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, a->ring, a->tcp, &fails);
    if (!c) return fails;
    uint64_t rs = 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0x1234567ull, rr = rs ^ 0xabcdefull;
    size_t txshift = (size_t)rank * DIR_SHIFT, rxshift = (size_t)(1 - rank) * DIR_SHIFT;
    unsigned char *rbuf = malloc(MAXMSG + 64);
    memset(rbuf, 0, MAXMSG + 64);
    uint64_t total = a->bytes, txd = 0, rxd = 0;
    size_t tmsg = 0, tdone = 0, rmsg = 0, rdone = 0, rstart = 0;
    struct iovec tiov[4], riov[4], v[4];
    int tcnt = 0, rcnt = 0;
    drive_stats st = {0, 0};
    uint64_t t0 = hccl_now_ns(), last = t0, deadline = t0 + 40 * NS;
    while (txd < total || rxd < total) {
        int prog = 0;
        if (txd < total) {
            if (!tmsg) {
                tmsg = a->fixed ? a->fixed : rand_size(&rs);
                if (tmsg > total - txd) tmsg = (size_t)(total - txd);
                unsigned char *src = g_pat + (txd + txshift) % PAT_LEN;
                if (a->fixed) {
                    tiov[0] = (struct iovec){src, tmsg};
                    tcnt = 1;
                } else {
                    tcnt = split(src, tmsg, &rs, tiov);
                }
                tdone = 0;
            }
            int n = iov_skip(tiov, tcnt, tdone, v);
            size_t m = 0;
            HcclResult r = c->ops->send(c, v, n, &m);
            if (r != HCCL_SUCCESS) {
                FAILF("%s: rank %d send failed: %d", a->label, rank, (int)r);
                break;
            }
            if (m) {
                prog = 1;
                tdone += m;
                if (tdone == tmsg) {
                    txd += tmsg;
                    tmsg = 0;
                }
            }
        }
        if (rxd < total) {
            if (!rmsg) {
                rmsg = a->fixed ? a->fixed : rand_size(&rr);
                if (rmsg > total - rxd) rmsg = (size_t)(total - rxd);
                rstart = a->fixed ? 0 : rnd(&rr) % 64;
                if (a->fixed) {
                    riov[0] = (struct iovec){rbuf, rmsg};
                    rcnt = 1;
                } else {
                    rcnt = split(rbuf + rstart, rmsg, &rr, riov);
                }
                rdone = 0;
            }
            int n = iov_skip(riov, rcnt, rdone, v);
            size_t m = 0;
            HcclResult r = c->ops->recv(c, v, n, &m);
            if (r != HCCL_SUCCESS) {
                FAILF("%s: rank %d recv failed: %d", a->label, rank, (int)r);
                break;
            }
            if (m) {
                prog = 1;
                if (a->verify &&
                    memcmp(rbuf + rstart + rdone, g_pat + (rxd + rdone + rxshift) % PAT_LEN, m) != 0) {
                    FAILF("%s: rank %d: wrong data in stream bytes [%llu, %llu)", a->label, rank,
                          (unsigned long long)(rxd + rdone), (unsigned long long)(rxd + rdone + m));
                    break;
                }
                rdone += m;
                if (rdone == rmsg) {
                    rxd += rmsg;
                    rmsg = 0;
                }
            }
        }
        if (prog) {
            last = hccl_now_ns();
            continue;
        }
        if (hccl_now_ns() > deadline) {
            FAILF("%s: rank %d stalled at tx %llu rx %llu", a->label, rank, (unsigned long long)txd,
                  (unsigned long long)rxd);
            break;
        }
        wait_conn(c, txd < total, rxd < total, last, a->spin_ns, &st);
    }
    flush(c);
    double s = secs_since(t0);
    CHK(st.lost == 0, "%s: rank %d: %llu polls timed out (lost wake-ups)", a->label, rank,
        (unsigned long long)st.lost);
    if (rank == 0)
        printf("  %-34s %7.1f MiB each way in %.2f s: %5.2f GB/s total, %llu sleeps\n", a->label,
               (double)total / (1 << 20), s, 2.0 * (double)total / s / 1e9, (unsigned long long)st.sleeps);
    c->ops->close(c);
    free(rbuf);
    return fails;
}

/* ------------------------------------------------------------ handshake */

typedef struct create_job {
    int fd;
    unsigned rank;
    uint64_t deadline;
    size_t ring;
    hccl_conn *conn;
    HcclResult res;
} create_job;

static void *create_main(void *p)
{
    create_job *j = p;
    j->res = hccl_shm_conn_create_sized(j->fd, j->rank, 1 - j->rank, j->deadline, j->ring, &j->conn);
    return NULL;
}

typedef struct map_job {
    int fd;
    hccl_conn *conn;
    HcclResult res;
} map_job;

static void *map_main(void *p)
{
    map_job *j = p;
    j->res = hccl_shm_conn_create(j->fd, 1, 0, hccl_now_ns() + 10 * NS, &j->conn);
    return NULL;
}

/* 0 when a message goes from a to b and another back (both of one thread). */
static int conn_carries(hccl_conn *a, hccl_conn *b)
{
    hccl_conn *from[2] = {a, b}, *to[2] = {b, a};
    for (int d = 0; d < 2; d++) {
        uint64_t v = 0x1234567890abcdefull + (uint64_t)d, got = 0;
        struct iovec out = {&v, 8}, in = {&got, 8};
        size_t moved = 0;
        if (from[d]->ops->send(from[d], &out, 1, &moved) != HCCL_SUCCESS || moved != 8) return -1;
        if (from[d]->ops->flush) from[d]->ops->flush(from[d]);
        if (to[d]->ops->recv(to[d], &in, 1, &moved) != HCCL_SUCCESS || moved != 8 || got != v) return -1;
    }
    return 0;
}

/* read(2) until n bytes came (the peer may write them in several messages). */
static ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) return r;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* What the mapping side sends first: {magic, 0}. */
static const uint32_t k_ready[2] = {0x4d534843u, 0};

static int peek_hello(int fd)
{
    char buf[128];
    for (int i = 0; i < 500; i++) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
        if (n >= HCCL_SHM_HELLO_BYTES) return 0;
        usleep(2000);
    }
    return -1;
}

static void test_handshake(void)
{
    pid_t me = getpid();
    int before = shm_entries_of(me);
    TT_ASSERT_EQ(before, 0);

    /* Nothing exists before the mapping side says it is ready, and nothing has a name
     * while the handshake runs (by descriptor: the mapping side opens the creator's
     * descriptors through /proc). The test relays the messages between the creator (sv)
     * and the mapping side (sv2) to look in between. */
    int sv[2], sv2[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2);
    create_job j0 = {sv[0], 0, hccl_now_ns() + 10 * NS, 100000, NULL, HCCL_E_INTERNAL};
    pthread_t th;
    pthread_create(&th, NULL, create_main, &j0);
    usleep(50000);
    TT_ASSERT_EQ(shm_entries_of(me), 0); /* the creator waits for the ready message */
    TT_ASSERT_EQ(write(sv[1], k_ready, sizeof k_ready), (ssize_t)sizeof k_ready);
    TT_ASSERT_EQ(peek_hello(sv[1]), 0);
    TT_ASSERT_EQ(shm_entries_of(me), 0); /* segment and doorbells have no names */
    hccl_shm_hello relay;
    TT_ASSERT_EQ(read(sv[1], &relay, sizeof relay), (ssize_t)sizeof relay);
    TT_ASSERT_EQ(relay.pid, (int32_t)me);
    TT_ASSERT(relay.fd[0] > 2 && relay.token != 0);
    TT_ASSERT_EQ(write(sv2[0], &relay, sizeof relay), (ssize_t)sizeof relay);
    hccl_conn *c1 = NULL;
    TT_ASSERT_EQ(hccl_shm_conn_create(sv2[1], 1, 0, hccl_now_ns() + 10 * NS, &c1), HCCL_SUCCESS);
    TT_ASSERT_EQ(shm_entries_of(me), 0);
    uint32_t acks[4];
    TT_ASSERT_EQ(read_full(sv2[0], acks, 16), 16); /* its ready and its ack */
    TT_ASSERT_EQ(write(sv[1], acks + 2, 8), 8);
    pthread_join(th, NULL);
    TT_ASSERT_EQ(j0.res, HCCL_SUCCESS);
    TT_ASSERT_EQ(shm_entries_of(me), 0);
    if (j0.conn && c1) {
        TT_ASSERT_EQ(hccl_shm_ring_bytes(j0.conn), 131072); /* rounded up to a power of two */
        TT_ASSERT_EQ(hccl_shm_ring_bytes(c1), 131072);
        TT_ASSERT(strcmp(j0.conn->ops->name, "shm") == 0);
        TT_ASSERT_EQ(j0.conn->peer, 1);
        TT_ASSERT_EQ(c1->peer, 0);
        TT_ASSERT_EQ(conn_carries(j0.conn, c1), 0);
        j0.conn->ops->close(j0.conn);
        c1->ops->close(c1);
    }

    /* Fallback: a mapping side that cannot open the descriptors (here: the hello's
     * token is not the segment's, as where the pid is another namespace's process)
     * asks for names; the creator then names the segment and the doorbells, and the
     * mapping side unlinks them once it has opened them. */
    j0 = (create_job){sv[0], 0, hccl_now_ns() + 10 * NS, 0, NULL, HCCL_E_INTERNAL};
    pthread_create(&th, NULL, create_main, &j0);
    TT_ASSERT_EQ(write(sv[1], k_ready, sizeof k_ready), (ssize_t)sizeof k_ready);
    TT_ASSERT_EQ(peek_hello(sv[1]), 0);
    TT_ASSERT_EQ(read(sv[1], &relay, sizeof relay), (ssize_t)sizeof relay);
    relay.token ^= 1;
    TT_ASSERT_EQ(write(sv2[0], &relay, sizeof relay), (ssize_t)sizeof relay);
    map_job j1 = {sv2[1], NULL, HCCL_E_INTERNAL};
    pthread_t th1;
    pthread_create(&th1, NULL, map_main, &j1);
    TT_ASSERT_EQ(read_full(sv2[0], acks, 16), 16); /* its ready, then "names needed" */
    TT_ASSERT_EQ((int32_t)acks[3], HCCL_SHM_ACK_NAMES);
    TT_ASSERT_EQ(write(sv[1], acks + 2, 8), 8);
    TT_ASSERT_EQ(peek_hello(sv[1]), 0);
    TT_ASSERT_EQ(shm_entries_of(me), 5); /* named: segment + 4 doorbells */
    TT_ASSERT_EQ(read(sv[1], &relay, sizeof relay), (ssize_t)sizeof relay);
    TT_ASSERT_EQ(relay.pid, 0);
    TT_ASSERT_EQ(write(sv2[0], &relay, sizeof relay), (ssize_t)sizeof relay);
    pthread_join(th1, NULL);
    TT_ASSERT_EQ(j1.res, HCCL_SUCCESS);
    TT_ASSERT_EQ(shm_entries_of(me), 0); /* the mapping side unlinked them */
    TT_ASSERT_EQ(read_full(sv2[0], acks, 8), 8);
    TT_ASSERT_EQ(write(sv[1], acks, 8), 8);
    pthread_join(th, NULL);
    TT_ASSERT_EQ(j0.res, HCCL_SUCCESS);
    TT_ASSERT_EQ(shm_entries_of(me), 0);
    if (j0.conn && j1.conn) {
        TT_ASSERT_EQ(hccl_shm_ring_bytes(j1.conn), hccl_shm_ring_bytes(j0.conn));
        TT_ASSERT_EQ(conn_carries(j0.conn, j1.conn), 0);
        j0.conn->ops->close(j0.conn);
        j1.conn->ops->close(j1.conn);
    }
    close(sv2[0]);
    close(sv2[1]);

    /* The mapping side never answers: timeout at the deadline, nothing left behind. */
    j0 = (create_job){sv[0], 0, hccl_now_ns() + 200 * MS, 0, NULL, HCCL_E_INTERNAL};
    uint64_t t0 = hccl_now_ns();
    pthread_create(&th, NULL, create_main, &j0);
    pthread_join(th, NULL);
    double s = secs_since(t0);
    TT_ASSERT_EQ(j0.res, HCCL_E_TIMEOUT);
    TT_ASSERT_MSG(s > 0.15 && s < 2, "timed out after %.3f s", s);
    TT_ASSERT_EQ(shm_entries_of(me), 0);
    TT_ASSERT(j0.conn == NULL);
    close(sv[0]);
    close(sv[1]);

    /* The mapping side hangs up after the hello: error at once, nothing left. */
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    j0 = (create_job){sv[0], 0, hccl_now_ns() + 10 * NS, 0, NULL, HCCL_E_INTERNAL};
    t0 = hccl_now_ns();
    pthread_create(&th, NULL, create_main, &j0);
    TT_ASSERT_EQ(write(sv[1], k_ready, sizeof k_ready), (ssize_t)sizeof k_ready);
    TT_ASSERT_EQ(peek_hello(sv[1]), 0);
    close(sv[1]);
    pthread_join(th, NULL);
    TT_ASSERT_EQ(j0.res, HCCL_E_TCP_TRANSFER);
    TT_ASSERT(secs_since(t0) < 2);
    TT_ASSERT_EQ(shm_entries_of(me), 0);
    close(sv[0]);

    /* A segment that is not there (peer on another host): HCCL_E_UNAVAIL on the
     * mapping side, and the same status goes back to the creator. */
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    hccl_shm_hello hello = {HCCL_SHM_MAGIC, HCCL_SHM_VERSION, 4096, HCCL_SHM_DATA_OFFSET + 2 * 4096,
                            "/" HCCL_SHM_NAME_PREFIX "0-nonexistent", 0, {0}, 0};
    TT_ASSERT_EQ(write(sv[0], &hello, sizeof hello), (ssize_t)sizeof hello);
    hccl_conn *cx = NULL;
    TT_ASSERT_EQ(hccl_shm_conn_create(sv[1], 1, 0, hccl_now_ns() + 2 * NS, &cx), HCCL_E_UNAVAIL);
    int32_t ack[4] = {0, 0, 0, 0}; /* its ready message, then its answer */
    TT_ASSERT_EQ(read_full(sv[0], ack, sizeof ack), (ssize_t)sizeof ack);
    TT_ASSERT_EQ(ack[1], 0);
    TT_ASSERT_EQ(ack[3], HCCL_E_UNAVAIL);
    /* Descriptors that /proc does not have (a creator in another pid namespace, or
     * dead): the mapping side asks for names, then takes a refusal as ever. */
    hello.pid = (int32_t)me;
    for (int k = 0; k < 5; k++) hello.fd[k] = 900 + k;
    hello.token = 42;
    TT_ASSERT_EQ(write(sv[0], &hello, sizeof hello), (ssize_t)sizeof hello);
    hccl_shm_hello no = {HCCL_SHM_MAGIC, HCCL_SHM_VERSION, 0, 0, "", 0, {0}, 0};
    TT_ASSERT_EQ(write(sv[0], &no, sizeof no), (ssize_t)sizeof no);
    TT_ASSERT_EQ(hccl_shm_conn_create(sv[1], 1, 0, hccl_now_ns() + 2 * NS, &cx), HCCL_E_UNAVAIL);
    int32_t ack3[6] = {0, 0, 0, 0, 0, 0}; /* ready, "names needed", the answer to the refusal */
    TT_ASSERT_EQ(read_full(sv[0], ack3, sizeof ack3), (ssize_t)sizeof ack3);
    TT_ASSERT_EQ(ack3[3], HCCL_SHM_ACK_NAMES);
    TT_ASSERT_EQ(ack3[5], HCCL_E_UNAVAIL);
    /* A descriptor that is not what it should be (a socket for the segment):
     * names too, and a hello by descriptor after "names needed" is refused. */
    hello.fd[0] = sv[1];
    TT_ASSERT_EQ(write(sv[0], &hello, sizeof hello), (ssize_t)sizeof hello);
    TT_ASSERT_EQ(write(sv[0], &hello, sizeof hello), (ssize_t)sizeof hello);
    TT_ASSERT_EQ(hccl_shm_conn_create(sv[1], 1, 0, hccl_now_ns() + 2 * NS, &cx), HCCL_E_INTERNAL);
    TT_ASSERT_EQ(read_full(sv[0], ack3, sizeof ack3), (ssize_t)sizeof ack3);
    TT_ASSERT_EQ(ack3[3], HCCL_SHM_ACK_NAMES);
    TT_ASSERT_EQ(ack3[5], HCCL_E_INTERNAL);
    /* Garbage instead of a hello. */
    memset(&hello, 0x5a, sizeof hello);
    TT_ASSERT_EQ(write(sv[0], &hello, sizeof hello), (ssize_t)sizeof hello);
    TT_ASSERT_EQ(hccl_shm_conn_create(sv[1], 1, 0, hccl_now_ns() + 2 * NS, &cx), HCCL_E_INTERNAL);
    TT_ASSERT(cx == NULL);
    TT_ASSERT_EQ(hccl_shm_conn_create(sv[1], 1, 1, hccl_now_ns() + 2 * NS, &cx), HCCL_E_PARA);
    close(sv[0]);
    close(sv[1]);
    TT_ASSERT_EQ(shm_entries_of(me), 0);
}

/* The creating side cannot set up its segment (here: no file descriptor left): both
 * sides fail, and the TCP stream stays in step, so the next message on it arrives intact
 * (the mapping side used to wait for a hello that never came and then read the pair's
 * next TCP message as one). Runs in a child, whose descriptors it exhausts. */
static void test_creator_fails(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) _exit(10);
        create_job j1 = {sv[1], 1, hccl_now_ns() + 2 * NS, 0, NULL, HCCL_E_INTERNAL};
        pthread_t th;
        if (pthread_create(&th, NULL, create_main, &j1) != 0) _exit(11);
        struct rlimit rl = {64, 64};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(12);
        int last = -1;
        for (int d; (d = dup(0)) >= 0;) last = d;
        hccl_conn *c0 = NULL;
        HcclResult r0 = hccl_shm_conn_create(sv[0], 0, 1, hccl_now_ns() + 2 * NS, &c0);
        const char mark = 'M';
        if (write(sv[0], &mark, 1) != 1) _exit(13);
        pthread_join(th, NULL);
        char got = 0;
        struct pollfd pf = {sv[1], POLLIN, 0};
        int ready = poll(&pf, 1, 100) == 1 && read(sv[1], &got, 1) == 1;
        if (r0 == HCCL_SUCCESS || c0) _exit(14);
        if (j1.res != HCCL_E_UNAVAIL || j1.conn) _exit(15);
        if (!ready || got != mark) _exit(16);
        close(last); /* one for the listing of /dev/shm */
        _exit(shm_entries_of(getpid()) == 0 ? 0 : 17);
    }
    int st = 0;
    TT_ASSERT(pid > 0 && waitpid(pid, &st, 0) == pid);
    TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d (15: mapping side did not get "
                  "HCCL_E_UNAVAIL, 16: the stream lost step)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* RLIMIT_FSIZE (ulimit -f) below the segment's size: the creator fails (the mapping
 * side gets HCCL_E_UNAVAIL, both fall back to TCP) and nothing is left in /dev/shm.
 * Sizing the segment used to raise SIGXFSZ, which killed the process. In a child. */
static void test_fsize_limit(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) _exit(10);
        struct rlimit rl = {65536, 65536};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(11);
        create_job j1 = {sv[1], 1, hccl_now_ns() + 2 * NS, 0, NULL, HCCL_E_INTERNAL};
        pthread_t th;
        if (pthread_create(&th, NULL, create_main, &j1) != 0) _exit(12);
        hccl_conn *c0 = NULL;
        HcclResult r0 = hccl_shm_conn_create(sv[0], 0, 1, hccl_now_ns() + 2 * NS, &c0);
        pthread_join(th, NULL);
        if (r0 != HCCL_E_MEMORY || c0) _exit(13);
        if (j1.res != HCCL_E_UNAVAIL || j1.conn) _exit(14);
        _exit(shm_entries_of(getpid()) == 0 ? 0 : 15);
    }
    TT_ASSERT_CHILD_OK(pid);
}

/* ------------------------------------------------------------ ping-pong */

typedef struct pp_arg {
    int iters;
    int64_t spin_ns;
    int tcp;
    const char *label;
} pp_arg;

static int pingpong_rank(int rank, int fd, void *argp)
{
    pp_arg *a = argp;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 0, a->tcp, &fails);
    if (!c) return fails;
    drive_stats st = {0, 0};
    uint64_t v = 0;
    uint64_t t0 = 0;
    for (int i = -10; i < a->iters && !fails; i++) { /* 10 warm-up rounds */
        if (i == 0) t0 = hccl_now_ns();
        if (rank == 0) {
            v = (uint64_t)i * 3 + 1;
            CHK(xfer(c, 1, &v, 8, a->spin_ns, &st) == HCCL_SUCCESS, "ping send");
            CHK(xfer(c, 0, &v, 8, a->spin_ns, &st) == HCCL_SUCCESS, "pong recv");
            CHK(v == (uint64_t)i * 3 + 2, "round %d: got %llu", i, (unsigned long long)v);
        } else {
            CHK(xfer(c, 0, &v, 8, a->spin_ns, &st) == HCCL_SUCCESS, "ping recv");
            v++;
            CHK(xfer(c, 1, &v, 8, a->spin_ns, &st) == HCCL_SUCCESS, "pong send");
        }
    }
    double us = (double)(hccl_now_ns() - t0) / 1e3 / a->iters;
    CHK(st.lost == 0, "%s: %llu lost wake-ups", a->label, (unsigned long long)st.lost);
    if (rank == 0) printf("  %-34s round trip %8.2f us (%d rounds)\n", a->label, us, a->iters);
    c->ops->close(c);
    return fails;
}

/* ------------------------------------------------------------ wake-ups, close */

static int sync_byte(int fd, int sending)
{
    char b = 0;
    return (int)(sending ? write(fd, &b, 1) : read(fd, &b, 1)) == 1 ? 0 : -1;
}

/* Poll fd for up to ms; returns poll's result and the time it took. */
static int poll_for(int fd, short ev, int ms, double *took)
{
    struct pollfd p = {fd, ev, 0};
    uint64_t t0 = hccl_now_ns();
    int r = poll(&p, 1, ms);
    *took = secs_since(t0);
    return r;
}

static int wake_reader_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 0, 0, &fails);
    if (!c) return fails;
    char buf[16] = {0};
    struct iovec v = {buf, sizeof buf};
    size_t m = 1;
    if (rank == 1) {
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 0, "empty ring gives 0 bytes");
        short ev = 0;
        int wfd = c->ops->wait_fd(c, 0, &ev);
        CHK(wfd >= 0 && ev == POLLIN, "wait_fd %d events %d", wfd, ev);
        double took;
        CHK(poll_for(wfd, ev, 50, &took) == 0, "no data yet, but the doorbell is readable");
        sync_byte(fd, 1); /* "I am asleep" */
        int r = poll_for(wfd, ev, 5000, &took);
        CHK(r == 1 && took > 0.05 && took < 3, "reader woken: poll %d after %.3f s", r, took);
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 5 && memcmp(buf, "hello", 5) == 0,
            "data after wake-up (%zu bytes)", m);
        /* The doorbell is quiet again once re-armed. */
        wfd = c->ops->wait_fd(c, 0, &ev);
        CHK(poll_for(wfd, ev, 50, &took) == 0, "doorbell still readable after the wake-up was consumed");
        sync_byte(fd, 1);
    } else {
        sync_byte(fd, 0);
        usleep(100000);
        struct iovec s = {(void *)"hello", 5};
        CHK(c->ops->send(c, &s, 1, &m) == HCCL_SUCCESS && m == 5, "send 5 bytes");
        flush(c); /* a small send wakes the sleeper here */
        sync_byte(fd, 0);
    }
    c->ops->close(c);
    return fails;
}

static int wake_writer_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 4096, 0, &fails);
    if (!c) return fails;
    char big[8192] = {0};
    size_t m = 0;
    if (rank == 0) {
        struct iovec v = {big, sizeof big};
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 4096, "fill the ring: %zu", m);
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 0, "full ring gives 0 bytes");
        short ev = 0;
        int wfd = c->ops->wait_fd(c, 1, &ev);
        double took;
        CHK(poll_for(wfd, ev, 50, &took) == 0, "ring still full, but the doorbell is readable");
        sync_byte(fd, 1);
        int r = poll_for(wfd, ev, 5000, &took);
        CHK(r == 1 && took > 0.05 && took < 3, "writer woken: poll %d after %.3f s", r, took);
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 100, "space after wake-up: %zu", m);
        sync_byte(fd, 1);
    } else {
        sync_byte(fd, 0);
        usleep(100000);
        struct iovec v = {big, 100};
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 100, "recv 100 bytes");
        flush(c);
        sync_byte(fd, 0);
    }
    c->ops->close(c);
    return fails;
}

static int peer_close_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 0, 0, &fails);
    if (!c) return fails;
    char buf[256];
    size_t m = 0;
    if (rank == 0) {
        struct iovec v = {(void *)"0123456789", 10};
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 10, "send");
        sync_byte(fd, 1); /* sent */
        sync_byte(fd, 0); /* peer is asleep */
        usleep(50000);
        uint64_t t0 = hccl_now_ns();
        c->ops->close(c);
        CHK(secs_since(t0) < 1.0, "close took %.3f s", secs_since(t0));
        sync_byte(fd, 0);
        return fails;
    }
    /* Wait for a 20-byte message: 10 arrive, then the peer closes while we sleep. */
    struct iovec v = {buf, 20};
    sync_byte(fd, 0);
    CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 10, "the data sent before close: %zu", m);
    v.iov_len = 10;
    CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 0, "empty");
    short ev;
    int wfd = c->ops->wait_fd(c, 0, &ev);
    sync_byte(fd, 1);
    double took;
    int r = poll_for(wfd, ev, 5000, &took);
    CHK(r == 1 && took < 3, "a sleeper is woken by close: %d after %.3f s", r, took);
    sync_byte(fd, 1);
    CHK(c->ops->recv(c, &v, 1, &m) == HCCL_E_TCP_TRANSFER && m == 0, "recv after the peer closed");
    CHK(c->ops->send(c, &v, 1, &m) == HCCL_E_TCP_TRANSFER && m == 0, "send after the peer closed");
    c->ops->close(c);
    return fails;
}

static void *delayed_shutdown(void *p)
{
    usleep(100000);
    hccl_conn *c = p;
    c->ops->shutdown(c);
    return NULL;
}

/* Abort: rank 0 sends a last notice, then another thread of it shuts the connection
 * down while rank 0 sleeps in poll. Both sleepers wake; the notice arrives; every
 * later call fails on both sides. */
static int shutdown_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 0, 0, &fails);
    if (!c) return fails;
    char buf[16] = {0};
    struct iovec v = {buf, sizeof buf};
    size_t m = 0;
    short ev = 0;
    double took;
    CHK(c->ops->shutdown != NULL, "shm implements shutdown");
    if (rank == 0) {
        struct iovec n = {(void *)"abort", 5};
        CHK(c->ops->send(c, &n, 1, &m) == HCCL_SUCCESS && m == 5, "notice sent");
        flush(c);
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 0, "nothing to receive");
        int wfd = c->ops->wait_fd(c, 0, &ev);
        pthread_t th;
        pthread_create(&th, NULL, delayed_shutdown, c);
        int r = poll_for(wfd, ev, 5000, &took);
        CHK(r == 1 && took > 0.05 && took < 3, "own sleeper woken by shutdown: %d after %.3f s", r, took);
        pthread_join(th, NULL);
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_E_TCP_TRANSFER, "recv after own shutdown");
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_E_TCP_TRANSFER, "send after own shutdown");
    } else {
        usleep(20000);
        int wfd = c->ops->wait_fd(c, 0, &ev);
        int r = poll_for(wfd, ev, 5000, &took);
        CHK(r == 1, "woken by the notice");
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 5 && memcmp(buf, "abort", 5) == 0,
            "the notice sent before shutdown arrives (%zu bytes)", m);
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS || m == 0, "maybe not shut yet");
        wfd = c->ops->wait_fd(c, 0, &ev);
        r = poll_for(wfd, ev, 5000, &took);
        CHK(r == 1 && took < 3, "peer's sleeper woken by shutdown: %d after %.3f s", r, took);
        CHK(c->ops->recv(c, &v, 1, &m) == HCCL_E_TCP_TRANSFER, "recv after the peer's shutdown");
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_E_TCP_TRANSFER, "send after the peer's shutdown");
    }
    sync_byte(fd, rank == 0 ? 0 : 1);
    c->ops->close(c);
    return fails;
}

/* Rank 1 dies right after the handshake (without closing); rank 0 must not hang. */
static int peer_dies_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 4096, 0, &fails);
    if (!c) return fails;
    if (rank == 1) _exit(0);
    char b = 0;
    CHK(read(fd, &b, 1) == 0, "peer process gone (socket EOF)");
    char buf[8192] = {0};
    struct iovec v = {buf, sizeof buf};
    size_t m = 1;
    CHK(c->ops->recv(c, &v, 1, &m) == HCCL_SUCCESS && m == 0, "nothing to receive");
    CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 4096, "ring accepts one ring's worth");
    CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 0, "then it is full");
    short ev = 0;
    double took;
    int wfd = c->ops->wait_fd(c, 1, &ev);
    CHK(poll_for(wfd, ev, 100, &took) == 0, "no wake-up from a dead peer");
    uint64_t t0 = hccl_now_ns();
    c->ops->close(c);
    CHK(secs_since(t0) < 1.0, "close took %.3f s", secs_since(t0));
    return fails;
}

/* ------------------------------------------------------------ ordering */

/* What the direct algorithms rely on: memory written before a message is sent may be
 * read through a plain pointer by the thread that received the message, and written
 * again only after the reader's answer arrived. Ranks are threads here, so under
 * ThreadSanitizer a ring whose annotations do not pair up (the two sides of a segment
 * map it at different addresses) is reported as a race on g_plain and fails the run;
 * elsewhere this checks the values. Spinning only: a doorbell's write and read would
 * order the threads for TSan by themselves. */
static uint64_t g_plain[2];

/* Receive exactly len bytes into the iovecs of sizes parts[] (0-terminated), each
 * call asking for what is left; gives up after 10 s. */
static int recv_parts(hccl_conn *c, unsigned char *buf, size_t len, const size_t *parts)
{
    size_t got = 0;
    uint64_t dl = hccl_now_ns() + 10 * NS;
    while (got < len && hccl_now_ns() < dl) {
        struct iovec v[4];
        int n = 0;
        size_t at = 0;
        for (int k = 0; parts[k] && n < 4; k++) { /* the parts not yet filled */
            size_t end = at + parts[k];
            if (end > got) {
                size_t from = HCCL_MAX(at, got);
                v[n++] = (struct iovec){buf + from, end - from};
            }
            at = end;
        }
        size_t m = 0;
        if (c->ops->recv(c, v, n, &m) != HCCL_SUCCESS) return -1;
        got += m;
        if (!m) sched_yield();
    }
    flush(c);
    return got == len ? 0 : -1;
}

/* The reader's answer on the connection itself: a producer makes inline copies only
 * of sends that follow a receive (shm.c, "Inline copies"). */
static int reply(hccl_conn *c, int rank)
{
    int fails = 0;
    unsigned char b = 0x5a;
    size_t one[2] = {1, 0};
    if (rank == 1) {
        struct iovec v = {&b, 1};
        size_t m = 0;
        CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == 1, "reply: send");
        flush(c);
    } else {
        CHK(recv_parts(c, &b, 1, one) == 0 && b == 0x5a, "reply: receive");
    }
    return fails;
}

/*
 * Small messages, where the consumer may take them from the inline copy in the head
 * counter's block (up to 112 bytes) rather than from the ring: a message read in
 * pieces, two messages read as one, several iovecs on both sides, the first size
 * that does not fit, and a 4 KiB ring wrapped many times with sizes 1..120. Rank 0
 * sends, then signals over fd; rank 1 reads only after the signal, so every case
 * is the one named, and answers on the connection, so that rank 0's next send
 * follows a receive and is copied inline (in the wrap, after two rounds in three
 * only: the others are not). Every byte is checked.
 */
static int small_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 4096, 0, &fails);
    if (!c) return fails;
    unsigned char buf[256];
    uint64_t pos = 0; /* stream position: the pattern byte of every byte sent */
    static const struct {
        size_t send[4], recv[4]; /* 0-terminated part sizes, one send per element of send */
        int one_send;            /* the send parts are the iovecs of one send */
        const char *what;
    } cases[] = {
        {{100}, {10, 90}, 0, "one inline message read in two calls"},
        {{100}, {7, 33, 60}, 0, "one inline message into three iovecs"},
        {{50, 50}, {100}, 0, "two messages read as one"},
        {{32, 80}, {32, 80}, 1, "112 bytes from two iovecs (header and payload)"},
        {{113}, {113}, 0, "113 bytes (too large for the inline copy)"},
        {{1}, {1}, 0, "one byte"},
    };
    /* After a failure both sides keep the lockstep (a thread rank cannot be killed),
     * skipping the transfers. */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = 0;
        for (int j = 0; cases[k].recv[j]; j++) len += cases[k].recv[j];
        if (rank == 0 && !fails) {
            struct iovec v[4];
            int n = 0;
            size_t off = 0;
            for (int j = 0; cases[k].send[j]; j++) {
                v[n++] = (struct iovec){g_pat + (pos + off) % PAT_LEN, cases[k].send[j]};
                off += cases[k].send[j];
                if (!cases[k].one_send) {
                    size_t m = 0;
                    CHK(c->ops->send(c, &v[n - 1], 1, &m) == HCCL_SUCCESS && m == v[n - 1].iov_len, "%s: send",
                        cases[k].what);
                }
            }
            if (cases[k].one_send) {
                size_t m = 0;
                CHK(c->ops->send(c, v, n, &m) == HCCL_SUCCESS && m == off, "%s: send", cases[k].what);
            }
            flush(c);
        }
        if (rank == 0) {
            sync_byte(fd, 1);
            sync_byte(fd, 0); /* the reader is done */
        } else {
            sync_byte(fd, 0);
            if (!fails) {
                CHK(recv_parts(c, buf, len, cases[k].recv) == 0, "%s: receive", cases[k].what);
                CHK(memcmp(buf, g_pat + pos % PAT_LEN, len) == 0, "%s: wrong bytes", cases[k].what);
            }
            sync_byte(fd, 1);
        }
        if (!fails) fails += reply(c, rank);
        pos += len;
    }
    /* Lockstep through a 4 KiB ring: positions wrap while the inline copies do not. */
    for (int i = 0; i < 600; i++) {
        size_t len = 1 + (size_t)(i * 37) % 120;
        size_t part[2] = {len, 0};
        if (rank == 0) {
            struct iovec v = {g_pat + pos % PAT_LEN, len};
            size_t m = 0;
            if (!fails) CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == len, "wrap %d: send", i);
            flush(c);
            sync_byte(fd, 1);
            sync_byte(fd, 0);
        } else {
            sync_byte(fd, 0);
            if (!fails) {
                CHK(recv_parts(c, buf, len, part) == 0, "wrap %d: receive %zu bytes", i, len);
                CHK(memcmp(buf, g_pat + pos % PAT_LEN, len) == 0, "wrap %d: wrong bytes (%zu)", i, len);
            }
            sync_byte(fd, 1);
        }
        if (!fails && i % 3 != 2) fails += reply(c, rank);
        pos += len;
    }
    c->ops->close(c);
    return fails;
}

/*
 * Rewinding (shm.c): small sends into an empty ring at offset 64 KiB or beyond skip
 * to the ring's start. A 256 KiB ring, lockstep: 100 KiB in one message (non-lazy,
 * leaving offset 100 KiB), then 300 rounds of small messages: read in one call or in
 * separate calls of 1..3 parts, some rounds two messages sent before the reader reads
 * (the second finds the ring not empty: no skip), every 50th round 20 KiB (at most a
 * quarter of the ring: skips when the offset is 64 KiB or more) or 80 KiB (more than
 * a quarter: never skips). Every byte is checked; the producer's position must skip
 * (run ahead of the bytes sent) and, after sends of up to a quarter of the ring, its
 * offset stay in the first half of the ring (without rewinding, 300 rounds of 4 KiB
 * on average go round it).
 */
static int rewind_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    const size_t ring = 256 << 10;
    hccl_conn *c = open_conn(rank, fd, ring, 0, &fails);
    if (!c) return fails;
    unsigned char *buf = malloc(128 << 10);
    uint64_t pos = 0, rs = 12345, rp = 999; /* sizes (both ranks), parts (reader) */
    uint64_t max_off = 0;
    for (int i = -1; i < 300; i++) {
        size_t len[2] = {0, 0};
        if (i < 0) len[0] = 100 << 10;
        else if (i % 50 == 49) len[0] = (i % 100 == 49 ? 20 : 80) << 10;
        else {
            static const size_t sz[] = {1, 8, 64, 104, 105, 1000, 4096, 9000, 16384};
            len[0] = sz[rnd(&rs) % 9];
            if (i % 7 == 3) len[1] = sz[rnd(&rs) % 9];
        }
        size_t tot = len[0] + len[1];
        if (rank == 0) {
            size_t off = 0;
            for (int k = 0; k < 2 && len[k] && !fails; k++) {
                struct iovec v = {g_pat + (pos + off) % PAT_LEN, len[k]};
                size_t m = 0;
                uint64_t from = hccl_shm_tx_pos(c);
                CHK(c->ops->send(c, &v, 1, &m) == HCCL_SUCCESS && m == len[k], "round %d: send %zu", i, len[k]);
                uint64_t moved = hccl_shm_tx_pos(c) - from;
                if (len[k] > ring / 4)
                    CHK(moved == len[k], "round %d: %zu bytes, more than a quarter of the ring, skipped", i, len[k]);
                else if (k == 0 && i >= 0 && (from & (ring - 1)) >= (64 << 10))
                    CHK(moved > len[k], "round %d: %zu bytes into an empty ring at offset %llu did not skip", i,
                        len[k], (unsigned long long)(from & (ring - 1)));
                off += len[k];
                if (i >= 0 && len[k] <= ring / 4) max_off = HCCL_MAX(max_off, hccl_shm_tx_pos(c) & (ring - 1));
            }
            flush(c);
            sync_byte(fd, 1);
            sync_byte(fd, 0);
        } else {
            sync_byte(fd, 0);
            size_t at = 0, left = tot;
            int nparts = 1 + (int)(rnd(&rp) % 3);
            for (int k = 0; k < nparts && left && !fails; k++) {
                size_t part[2] = {k == nparts - 1 ? left : 1 + rnd(&rp) % left, 0};
                CHK(recv_parts(c, buf + at, part[0], part) == 0, "round %d: receive %zu bytes", i, part[0]);
                at += part[0];
                left -= part[0];
            }
            if (!fails) CHK(memcmp(buf, g_pat + pos % PAT_LEN, tot) == 0, "round %d: wrong bytes (%zu)", i, tot);
            sync_byte(fd, 1);
        }
        pos += tot;
    }
    if (rank == 0 && !fails) {
        CHK(hccl_shm_tx_pos(c) > pos, "the producer never skipped (position %llu, %llu bytes sent)",
            (unsigned long long)hccl_shm_tx_pos(c), (unsigned long long)pos);
        CHK(max_off < (128 << 10), "small messages reached ring offset %llu", (unsigned long long)max_off);
    }
    free(buf);
    c->ops->close(c);
    return fails;
}

static int order_rank(int rank, int fd, void *arg)
{
    (void)arg;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, 0, 0, &fails);
    if (!c) return fails;
    drive_stats st = {0, 0};
    const int64_t spin = 20 * (int64_t)NS; /* never sleeps (xfer gives up after 30 s) */
    for (uint64_t i = 1; i <= 50 && !fails; i++)
        for (int dir = 0; dir < 2; dir++) { /* rank dir writes and sends, the other reads */
            char b = 0;
            if (rank == dir) {
                g_plain[dir] = i * 2 + (uint64_t)dir;
                CHK(xfer(c, 1, &b, 1, spin, &st) == HCCL_SUCCESS, "round %llu: send", (unsigned long long)i);
            } else {
                CHK(xfer(c, 0, &b, 1, spin, &st) == HCCL_SUCCESS, "round %llu: receive", (unsigned long long)i);
                CHK(g_plain[dir] == i * 2 + (uint64_t)dir, "round %llu: rank %d's write not visible",
                    (unsigned long long)i, dir);
            }
        }
    c->ops->close(c);
    return fails;
}

/* ------------------------------------------------------------ throughput */

typedef struct tput_arg {
    size_t size;
    int iters;
    size_t ring;
    int tcp;
    const char *label;
} tput_arg;

/* One direction, rank 0 -> rank 1, the same buffers every iteration. */
static int tput_rank(int rank, int fd, void *argp)
{
    tput_arg *a = argp;
    int fails = 0;
    hccl_conn *c = open_conn(rank, fd, a->ring, a->tcp, &fails);
    if (!c) return fails;
    unsigned char *buf = malloc(a->size);
    memset(buf, rank + 1, a->size);
    drive_stats st = {0, 0};
    int64_t spin = 50000;
    char b = 0;
    CHK(xfer(c, rank == 1, &b, 1, spin, &st) == HCCL_SUCCESS, "sync");
    CHK(xfer(c, rank == 0, &b, 1, spin, &st) == HCCL_SUCCESS, "sync");
    uint64_t t0 = hccl_now_ns();
    for (int i = 0; i < a->iters && !fails; i++)
        CHK(xfer(c, rank == 0, buf, a->size, spin, &st) == HCCL_SUCCESS, "transfer %d", i);
    double s = secs_since(t0);
    if (rank == 1) {
        CHK(buf[0] == 1 && buf[a->size - 1] == 1, "data arrived");
        printf("  %-34s %8zu KiB x %4d: %6.2f GB/s (%llu sleeps)\n", a->label, a->size >> 10, a->iters,
               (double)a->size * a->iters / s / 1e9, (unsigned long long)st.sleeps);
    }
    CHK(st.lost == 0, "%s: lost wake-ups", a->label);
    c->ops->close(c);
    free(buf);
    return fails;
}

static int run_tcp(rank_fn fn, void *arg)
{
    int fds[2];
    if (tcp_pair(fds) != 0) {
        fprintf(stderr, "FAIL: no TCP loopback pair\n");
        return 1;
    }
    return run_procs_on(fn, arg, fds[0], fds[1], 60);
}

static void memcpy_rate(void)
{
    size_t n = (size_t)64 << 20;
    unsigned char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n);
    memset(b, 2, n);
    uint64_t t0 = hccl_now_ns();
    for (int i = 0; i < 4; i++) {
        memcpy(i & 1 ? a : b, i & 1 ? b : a, n);
        ((volatile unsigned char *)a)[i] = (unsigned char)i;
    }
    double s = secs_since(t0);
    TT_ASSERT(a[n - 1] == 1 && b[n - 1] == 1);
    printf("  %-34s %6.2f GB/s (64 MiB, one thread)\n", "memcpy", 4.0 * (double)n / s / 1e9);
    free(a);
    free(b);
}

static void bench(void)
{
    static const size_t rings[] = {256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20};
    for (int rep = 0; rep < 2; rep++) {
        memcpy_rate();
        tput_arg tx = {1 << 20, 512, 0, 0, "shm 1 MiB, default ring"};
        run_procs(tput_rank, &tx);

        for (unsigned i = 0; i < sizeof rings / sizeof rings[0]; i++) {
            printf("ring %zu KiB\n", rings[i] >> 10);
            tput_arg t2 = {1 << 20, 1024, rings[i], 0, "shm 1 MiB"};
            tput_arg t3 = {64 << 20, 16, rings[i], 0, "shm 64 MiB"};
            stream_arg s1 = {512 << 20, rings[i], 50000, 0, 1 << 20, 0, "shm bidir 1 MiB msgs"};
            run_procs(tput_rank, &t2);
            run_procs(tput_rank, &t3);
            run_procs(stream_rank, &s1);
        }
    }
    tput_arg t4 = {1 << 20, 512, 0, 1, "tcp 1 MiB"};
    stream_arg s2 = {256 << 20, 0, 50000, 1, 1 << 20, 0, "tcp bidir 1 MiB msgs"};
    run_tcp(tput_rank, &t4);
    run_tcp(stream_rank, &s2);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_pat = malloc(PAT_LEN + MAXMSG);
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < PAT_LEN; i += 8) {
        uint64_t r = rnd(&s);
        memcpy(g_pat + i, &r, HCCL_MIN((size_t)8, PAT_LEN - i));
    }
    for (size_t i = PAT_LEN; i < PAT_LEN + MAXMSG; i++) g_pat[i] = g_pat[i - PAT_LEN];
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        bench();
        return 0;
    }
    uint64_t t0 = hccl_now_ns();

    test_handshake();
    test_creator_fails();
    test_fsize_limit();

    TT_ASSERT_EQ(run_threads(wake_reader_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(wake_reader_rank, NULL), 0);
    TT_ASSERT_EQ(run_threads(wake_writer_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(wake_writer_rank, NULL), 0);
    TT_ASSERT_EQ(run_threads(peer_close_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(peer_close_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(peer_dies_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(shutdown_rank, NULL), 0);
    TT_ASSERT_EQ(run_threads(shutdown_rank, NULL), 0);
    TT_ASSERT_EQ(run_threads(order_rank, NULL), 0);
    TT_ASSERT_EQ(run_threads(small_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(small_rank, NULL), 0);
    TT_ASSERT_EQ(run_threads(rewind_rank, NULL), 0);
    TT_ASSERT_EQ(run_procs(rewind_rank, NULL), 0);
    TT_ASSERT_EQ(shm_entries_of(getpid()), 0);

    printf("verified streams (random message and iovec sizes, both directions at once):\n");
    stream_arg sp = {SCALED(512 << 20), 0, 50000, 0, 0, 1, "shm processes, spin 50 us"};
    TT_ASSERT_EQ(run_procs(stream_rank, &sp), 0);
    stream_arg st = {SCALED(96 << 20), 65536, 0, 0, 0, 1, "shm threads, 64 KiB ring, no spin"};
    TT_ASSERT_EQ(run_threads(stream_rank, &st), 0);
    stream_arg st2 = {8 << 20, 4096, 0, 0, 0, 1, "shm processes, 4 KiB ring, no spin"};
    TT_ASSERT_EQ(run_procs(stream_rank, &st2), 0);

    printf("8-byte ping-pong:\n");
    pp_arg p1 = {20000, 50000, 0, "shm, spin 50 us"};
    pp_arg p2 = {2000, 0, 0, "shm, sleep at once"};
    pp_arg p3 = {2000, 0, 0, "shm threads, sleep at once"};
    pp_arg p4 = {5000, 50000, 1, "tcp loopback, spin 50 us"};
    pp_arg p5 = {2000, 0, 1, "tcp loopback, sleep at once"};
    TT_ASSERT_EQ(run_procs(pingpong_rank, &p1), 0);
    TT_ASSERT_EQ(run_procs(pingpong_rank, &p2), 0);
    TT_ASSERT_EQ(run_threads(pingpong_rank, &p3), 0);
    TT_ASSERT_EQ(run_tcp(pingpong_rank, &p4), 0);
    TT_ASSERT_EQ(run_tcp(pingpong_rank, &p5), 0);

    if (SANITIZED) {
        printf("one-way throughput: skipped (sanitized build)\n");
    } else {
        printf("one-way throughput (processes, same buffers every iteration):\n");
        memcpy_rate();
        tput_arg t1 = {1 << 20, 512, 0, 0, "shm"};
        tput_arg t2 = {64 << 20, 8, 0, 0, "shm"};
        tput_arg t3 = {1 << 20, 256, 0, 1, "tcp loopback"};
        tput_arg t4 = {64 << 20, 4, 0, 1, "tcp loopback"};
        TT_ASSERT_EQ(run_procs(tput_rank, &t1), 0);
        TT_ASSERT_EQ(run_procs(tput_rank, &t2), 0);
        TT_ASSERT_EQ(run_tcp(tput_rank, &t3), 0);
        TT_ASSERT_EQ(run_tcp(tput_rank, &t4), 0);
    }

    TT_ASSERT_EQ(shm_entries_of(getpid()), 0);
    printf("total %.1f s\n", secs_since(t0));
    return tt_report("test_shm");
}
