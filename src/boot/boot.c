/*
 * boot.c - root rendezvous and full-mesh setup (protocol in boot.h).
 *
 * Every connection to a listener opens with a conn_open header; hellos carry a
 * peer record after it. Wire structs are fixed-size and checked with
 * _Static_assert; lengths are never taken from the wire.
 */
#include "boot/boot.h"

#include "util/errors.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OPEN_MAGIC 0x48434f50u /* "HCOP" */
#define REPLY_MAGIC 0x48434252u /* "HCBR" */
#define KIND_HELLO 1u
#define KIND_DATA 2u
/* A rank whose creation failed before it joined (hccl_boot_report_failure): the
 * opening is followed by its peer record and a boot_failed. */
#define KIND_FAILED 3u
/* A rank that failed while its group connected the mesh (after the join), or found that
 * a peer did (its listener refuses, its connection closed), tells every other rank on
 * its listener, which the ranks still in the mesh watch: a is nranks, b the rank that
 * failed, sock_idx its HcclResult; the peer record (that rank's) and a boot_failed follow,
 * as for KIND_FAILED. */
#define KIND_MESH_FAILED 4u
/* A connection must say who it is within 10 s. Not less: on a lossy link a rank's
 * opening may be retransmitted a few times, and after a lost SYN TCP waits 3 s before
 * the first retransmission (2 s dropped ranks' connections at 5% loss). Connections
 * that wait are read together, so a silent one delays no other. */
#define HELLO_READ_NS (10000000000ull)

enum { REPLY_OK = 0, REPLY_TIMEOUT = 1, REPLY_MISMATCH = 2, REPLY_SYSCALL = 3 };

/* The advice a failure with errno err gets: out of descriptors, or nothing. */
static const char *emfile_hint(int err) { return err == EMFILE ? " (raise RLIMIT_NOFILE, ulimit -n)" : ""; }

typedef struct conn_open {
    uint32_t magic;
    uint32_t kind;
    uint64_t secret;
    uint64_t id;
    uint32_t a; /* hello: nranks; data: from rank */
    uint32_t b; /* hello: rank;   data: to rank */
    uint16_t sock_idx; /* data: which of the pair's sockets this is */
    uint16_t sock_cnt; /* data: how many sockets the connecting rank opens to b */
    uint32_t group; /* hello: the ident's group tag (0: none) */
} conn_open;
_Static_assert(sizeof(conn_open) == 40, "wire layout");

typedef struct boot_reply {
    uint32_t magic;
    uint32_t status;
    uint32_t nranks;
    uint32_t pad;
    char msg[512];
} boot_reply;
_Static_assert(sizeof(boot_reply) == 528, "wire layout");

typedef struct boot_failed {
    char fn[32]; /* the call that failed, "HcclCommInitRootInfo" */
    char reason[352]; /* its reason, as the rank logged it */
} boot_failed;
_Static_assert(sizeof(boot_failed) == 384, "wire layout");

/* How long a failing rank tries to tell the root (hccl_boot_report_failure); an
 * interrupted one (quick) tries once, this long at most. */
#define FAILED_SEND_NS 1000000000ull
#define QUICK_SEND_NS 50000000ull

/* The bytes an opening of this kind takes: the header, then what the kind carries. */
static size_t open_len(uint32_t kind)
{
    return sizeof(conn_open) + (kind == KIND_HELLO ? sizeof(hccl_boot_peer)
                                : kind == KIND_FAILED || kind == KIND_MESH_FAILED
                                    ? sizeof(hccl_boot_peer) + sizeof(boot_failed)
                                    : 0);
}

struct stash_entry {
    struct stash_entry *next;
    int fd;
    conn_open open;
    hccl_boot_peer peer;
};

HCCL_PARAM_INT_IN(connect_timeout, "HCCL_CONNECT_TIMEOUT", 120, 1, INT64_MAX, HCCL_PARAM_DEFAULT)

uint64_t hccl_boot_connect_timeout_ns(void)
{
    return hccl_timeout_ns(hccl_param_connect_timeout());
}

void hccl_boot_stash_init(hccl_boot_stash *s)
{
    pthread_mutex_init(&s->lock, NULL);
    s->head = NULL;
}

/* Whether a stashed hello's rank has given up: after its hello it sends nothing until
 * the root's reply, so a readable connection is one its peer closed (or reset). */
static int stash_gone(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return 0;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Drops the hellos whose ranks gave up (a sub-communicator that its first rank never
 * served, or served under another id): kept, each held a descriptor until the parent
 * was destroyed. Caller holds s->lock. */
static void stash_prune_locked(hccl_boot_stash *s)
{
    for (struct stash_entry **pe = &s->head; *pe;) {
        struct stash_entry *e = *pe;
        if (!stash_gone(e->fd)) {
            pe = &e->next;
            continue;
        }
        *pe = e->next;
        close(e->fd);
        hccl_free(e);
    }
}

/* Keep a hello for a later serve on this listener; 0 when it could not be kept. */
static int stash_put(hccl_boot_stash *s, int fd, const conn_open *o, const hccl_boot_peer *p)
{
    struct stash_entry *e = s ? hccl_calloc(1, sizeof *e) : NULL;
    if (!e) return 0;
    e->fd = fd;
    e->open = *o;
    e->peer = *p;
    pthread_mutex_lock(&s->lock);
    e->next = s->head;
    s->head = e;
    stash_prune_locked(s);
    pthread_mutex_unlock(&s->lock);
    return 1;
}

void hccl_boot_stash_free(hccl_boot_stash *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->head) {
        struct stash_entry *e = s->head;
        s->head = e->next;
        close(e->fd);
        hccl_free(e);
    }
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_destroy(&s->lock);
}


void hccl_boot_peer_self(hccl_boot_peer *p, const hccl_addr *addr, uint32_t rank)
{
    memset(p, 0, sizeof *p);
    p->addr = *addr;
    /* The host's identity, as hccl_boot_host_hash has it: HCCL_HOST_ID where set. */
    const char *hid = getenv("HCCL_HOST_ID");
    if (hid && *hid) snprintf(p->host, sizeof p->host, "%s", hid);
    else if (gethostname(p->host, sizeof p->host) != 0) snprintf(p->host, sizeof p->host, "unknown");
    p->host[sizeof p->host - 1] = 0;
    p->pid = (uint32_t)getpid();
    p->rank = rank;
    p->host_hash = hccl_boot_host_hash();
}

uint64_t hccl_boot_host_hash(void)
{
    const char *hid = getenv("HCCL_HOST_ID"); /* override for tests of multi-host logic */
    char host[256] = "unknown";
    if (!hid || !*hid) {
        gethostname(host, sizeof host);
        host[sizeof host - 1] = 0;
        hid = host;
    }
    return hccl_fnv1a(hid, strlen(hid), HCCL_FNV_SEED);
}

/* Connections accepted but not yet identified. They are read together, so a silent
 * or slow connection (a port scanner, a stray client) never delays the others; one
 * that has not presented a complete opening within HELLO_READ_NS is dropped. */
#define MAXPEND 64
typedef struct pend {
    int fd;
    uint64_t t0;
    size_t have;
    unsigned char buf[sizeof(conn_open) + sizeof(hccl_boot_peer) + sizeof(boot_failed)];
} pend;
typedef struct accept_q {
    pend p[MAXPEND];
    int n;
    int err; /* errno of an accept that cannot succeed until descriptors or memory free up */
    uint64_t err_since; /* when such accepts began failing (0: the last one did not) */
} accept_q;

/* Accepts failing for lack of descriptors or memory are retried this long (another
 * thread may be about to close some) before the wait gives up. */
#define ACCEPT_STARVED_NS 1000000000ull

static void q_drop(accept_q *q, int i, const char *why)
{
    if (why) HCCL_WARN(BOOT, "bootstrap: dropped a connection that %s", why);
    close(q->p[i].fd);
    q->p[i] = q->p[--q->n];
}

static void q_free(accept_q *q)
{
    while (q->n) q_drop(q, 0, NULL);
}

/* The next connection that presented a complete opening (header, and the peer
 * record of a hello or a failure report, with the failure in *why when why is not
 * NULL); the caller checks its content. HCCL_E_TIMEOUT at deadline. */
static HcclResult accept_open(int lfd, accept_q *q, uint64_t deadline, int *fd, conn_open *o, hccl_boot_peer *peer,
                              boot_failed *why)
{
    for (;;) {
        uint64_t now = hccl_now_ns();
        for (int i = 0; i < q->n; i++)
            if (now - q->p[i].t0 > HELLO_READ_NS) q_drop(q, i--, "did not identify itself within 10 s");
        struct pollfd pf[1 + MAXPEND];
        pf[0] = (struct pollfd){lfd, POLLIN, 0};
        for (int i = 0; i < q->n; i++) pf[1 + i] = (struct pollfd){q->p[i].fd, POLLIN, 0};
        uint64_t left = deadline > now ? (deadline - now) / 1000000ull : 0;
        int np = q->n;
        int k = poll(pf, (nfds_t)(1 + np), (int)(left < 100 ? left : 100));
        if (k < 0 && errno != EINTR) return HCCL_E_SYSCALL;
        for (int i = np - 1; k > 0 && i >= 0; i--) {
            if (!pf[1 + i].revents) continue;
            pend *e = &q->p[i];
            size_t need = sizeof(conn_open);
            if (e->have >= sizeof(conn_open)) need = open_len(((conn_open *)(void *)e->buf)->kind);
            ssize_t got = recv(e->fd, e->buf + e->have, need - e->have, MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                q_drop(q, i, "closed before identifying itself");
                continue;
            }
            if (got < 0) continue;
            e->have += (size_t)got;
            if (e->have < sizeof(conn_open)) continue;
            conn_open *h = (conn_open *)(void *)e->buf;
            if (h->magic != OPEN_MAGIC || (h->kind != KIND_HELLO && h->kind != KIND_DATA && h->kind != KIND_FAILED &&
                                           h->kind != KIND_MESH_FAILED)) {
                q_drop(q, i, "sent something that is not this library's bootstrap protocol");
                continue;
            }
            need = open_len(h->kind);
            if (e->have < need) continue;
            memcpy(o, e->buf, sizeof *o);
            if (h->kind != KIND_DATA) {
                memcpy(peer, e->buf + sizeof(conn_open), sizeof *peer);
                peer->host[sizeof peer->host - 1] = 0; /* from the wire: messages print it */
            }
            if ((h->kind == KIND_FAILED || h->kind == KIND_MESH_FAILED) && why) memcpy(why, e->buf + sizeof(conn_open) + sizeof *peer, sizeof *why);
            *fd = e->fd;
            q->p[i] = q->p[--q->n];
            return HCCL_SUCCESS;
        }
        if (k > 0 && (pf[0].revents & POLLIN)) {
            int nfd;
            HcclResult a = hccl_socket_accept(lfd, hccl_now_ns(), &nfd, NULL);
            if (a == HCCL_SUCCESS) {
                q->err_since = 0;
                if (q->n == MAXPEND) q_drop(q, 0, "was the oldest of too many unidentified connections");
                q->p[q->n++] = (pend){nfd, hccl_now_ns(), 0, {0}};
            } else if (a == HCCL_E_SYSCALL &&
                       (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
                /* The connection stays queued and the listener readable: retrying until
                 * the deadline would spin and then blame the rank that did arrive. */
                int err = errno;
                uint64_t t = hccl_now_ns();
                if (!q->err_since) q->err_since = t;
                if (t - q->err_since >= ACCEPT_STARVED_NS) {
                    q->err = err;
                    return HCCL_E_SYSCALL;
                }
                usleep(10000);
            }
        }
        if (hccl_now_ns() >= deadline) return HCCL_E_TIMEOUT;
    }
}

/* The caller is done with the listener, but connections it accepted may still be
 * presenting themselves: a sub-communicator's hello that came in just before the
 * last rank this serve waited for. Closing them would fail that rank ("connection
 * lost"), so they get a moment to finish their opening (a rank sends it as soon as
 * it has connected; a silent stray is not waited for longer) and a hello of this job
 * goes to the stash, where the serve it is for finds it; the rest are closed. */
#define SETTLE_NS 200000000ull
static void q_settle(accept_q *q, hccl_boot_stash *stash, uint64_t secret)
{
    uint64_t deadline = hccl_now_ns() + SETTLE_NS;
    while (q->n > 0) {
        int fd;
        conn_open o;
        hccl_boot_peer p;
        if (accept_open(-1, q, deadline, &fd, &o, &p, NULL) != HCCL_SUCCESS) break;
        if (o.kind != KIND_HELLO || o.secret != secret || !stash_put(stash, fd, &o, &p)) close(fd);
    }
    q_free(q);
}

static void send_reply(int fd, uint32_t status, uint32_t nranks, const char *msg, const hccl_boot_peer *table)
{
    boot_reply r;
    memset(&r, 0, sizeof r);
    r.magic = REPLY_MAGIC;
    r.status = status;
    r.nranks = nranks;
    snprintf(r.msg, sizeof r.msg, "%s", msg ? msg : "");
    uint64_t dl = hccl_now_ns() + 5000000000ull;
    if (hccl_socket_send_all(fd, &r, sizeof r, dl) != HCCL_SUCCESS) return;
    if (status == REPLY_OK) hccl_socket_send_all(fd, table, sizeof *table * nranks, dl);
}

/* A descriptor the root threads of this process keep in reserve while any runs: a root
 * out of descriptors frees it to answer the connections it could not accept, which
 * would otherwise only see "connection lost" when it closes its listener. */
static int reserve_fd = -1;
static unsigned reserve_users;
static pthread_mutex_t reserve_lock = PTHREAD_MUTEX_INITIALIZER;

static void reserve_hold(int on)
{
    pthread_mutex_lock(&reserve_lock);
    reserve_users = on ? reserve_users + 1 : reserve_users - 1;
    if (reserve_users && reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!reserve_users && reserve_fd >= 0) {
        close(reserve_fd);
        reserve_fd = -1;
    }
    pthread_mutex_unlock(&reserve_lock);
}

/* The root could not accept (out of descriptors): the connections waiting on its
 * listener, and those accepted but not yet identified (q), get msg as the reply, one
 * at a time on the reserve descriptor, instead of a reset. */
static void refuse_backlog(int lfd, accept_q *q, uint32_t nranks, uint32_t status, const char *msg)
{
    unsigned char junk[sizeof q->p[0].buf];
    while (q->n > 0) {
        (void)!recv(q->p[0].fd, junk, sizeof junk, MSG_DONTWAIT); /* unread data would turn the close into a reset */
        send_reply(q->p[0].fd, status, nranks, msg, NULL);
        q_drop(q, 0, NULL);
    }
    pthread_mutex_lock(&reserve_lock);
    if (reserve_fd >= 0) close(reserve_fd);
    reserve_fd = -1;
    for (int k = 0, fd; lfd >= 0 && k < 4096 && hccl_socket_accept(lfd, hccl_now_ns(), &fd, NULL) == HCCL_SUCCESS;
         k++) {
        (void)!recv(fd, junk, sizeof junk, MSG_DONTWAIT);
        send_reply(fd, status, nranks, msg, NULL);
        close(fd);
    }
    if (reserve_users) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pthread_mutex_unlock(&reserve_lock);
}

/* Format "2, 5, 7" (at most ~40 ranks, then "..."). */
static void list_missing(char *out, size_t len, const int *fds, uint32_t nranks, const hccl_boot_peer *self)
{
    size_t o = 0;
    int shown = 0;
    out[0] = 0;
    for (uint32_t r = 0; r < nranks && o + 16 < len; r++) {
        if (fds[r] >= 0 || (self && self->rank == r)) continue;
        if (shown++ == 40) {
            o += (size_t)snprintf(out + o, len - o, ", ...");
            break;
        }
        o += (size_t)snprintf(out + o, len - o, "%s%u", o ? ", " : "", r);
    }
}

static HcclResult serve_q(int listen_fd, accept_q *q, hccl_boot_stash *stash, const hccl_boot_ident *ident,
                          uint32_t nranks, const hccl_boot_peer *self, uint64_t timeout_ns, const int *abort,
                          hccl_boot_peer *table, const char *refusal, uint32_t nfailed);

HcclResult hccl_boot_serve(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t nranks,
                           const hccl_boot_peer *self, uint64_t timeout_ns, const int *abort,
                           hccl_boot_peer *table)
{
    accept_q *q = hccl_calloc(1, sizeof *q);
    if (!q) return HCCL_E_MEMORY;
    HcclResult res = serve_q(listen_fd, q, stash, ident, nranks, self, timeout_ns, abort, table, NULL, 0);
    q_settle(q, stash, ident->secret);
    hccl_free(q);
    return res;
}

/* A hello for the group that ident serves: one of its members (id), or, for a
 * sub-communicator, a rank that called it (the same subCommId under the same parent:
 * group tag) with other rankIds (another id). */
static int of_group(const hccl_boot_ident *ident, const conn_open *o)
{
    return o->kind == KIND_HELLO && o->secret == ident->secret &&
           (o->id == ident->id || (ident->group && o->group == ident->group));
}

/* A rank serving its sub-communicator stops at the first mismatch; the members (and
 * other-rankIds callers) that are already here, or come within SETTLE_NS, get the same
 * refusal rather than waiting out their connect timeout. Other hellos go to the stash. */
static void refuse_stragglers(int listen_fd, accept_q *q, hccl_boot_stash *stash, const hccl_boot_ident *ident,
                              uint32_t nranks, const char *msg)
{
    if (stash) {
        pthread_mutex_lock(&stash->lock);
        for (struct stash_entry **pe = &stash->head; *pe;) {
            struct stash_entry *e = *pe;
            if (!of_group(ident, &e->open)) {
                pe = &e->next;
                continue;
            }
            *pe = e->next;
            send_reply(e->fd, REPLY_MISMATCH, nranks, msg, NULL);
            close(e->fd);
            hccl_free(e);
        }
        pthread_mutex_unlock(&stash->lock);
    }
    uint64_t deadline = hccl_now_ns() + SETTLE_NS;
    int fd;
    conn_open o;
    hccl_boot_peer p;
    while (accept_open(listen_fd, q, deadline, &fd, &o, &p, NULL) == HCCL_SUCCESS) {
        if (of_group(ident, &o))
            send_reply(fd, REPLY_MISMATCH, nranks, msg, NULL);
        else if (o.kind == KIND_HELLO && o.secret == ident->secret && stash_put(stash, fd, &o, &p))
            continue;
        close(fd);
    }
}

void hccl_boot_refuse(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t nranks,
                      const char *msg)
{
    accept_q *q = hccl_calloc(1, sizeof *q);
    if (!q) return;
    refuse_stragglers(listen_fd, q, stash, ident, nranks, msg);
    q_settle(q, stash, ident->secret);
    hccl_free(q);
}

/* The ids of the root threads of this process that have served their group (or gave
 * up), newest last: recorded before the ranks get their answer, so a rank that uses
 * the root info again after its HcclCommInitRootInfo returned is always refused. */
#define FINISHED_ROOTS 256
static uint64_t finished_roots[FINISHED_ROOTS];
static unsigned finished_next;
static pthread_mutex_t finished_lock = PTHREAD_MUTEX_INITIALIZER;

static void root_finished(uint64_t id)
{
    pthread_mutex_lock(&finished_lock);
    finished_roots[finished_next++ % FINISHED_ROOTS] = id;
    pthread_mutex_unlock(&finished_lock);
}

int hccl_boot_root_finished(uint64_t id)
{
    int found = 0;
    pthread_mutex_lock(&finished_lock);
    for (unsigned i = 0; i < FINISHED_ROOTS && !found; i++) found = finished_roots[i] == id && id != 0;
    pthread_mutex_unlock(&finished_lock);
    return found;
}

/* The root threads of this process that still run (listener open), with the pid that
 * started them: a child of fork has a copy of the list but not the threads. */
static struct {
    uint64_t id;
    pid_t pid;
} running_roots[FINISHED_ROOTS];
static unsigned running_next;

static void root_running(uint64_t id, int on)
{
    pthread_mutex_lock(&finished_lock);
    if (on) {
        running_roots[running_next % FINISHED_ROOTS].id = id;
        running_roots[running_next++ % FINISHED_ROOTS].pid = getpid();
    }
    for (unsigned i = 0; i < FINISHED_ROOTS && !on; i++)
        if (running_roots[i].id == id) running_roots[i].pid = 0;
    pthread_mutex_unlock(&finished_lock);
}

static int root_runs_here(uint64_t id)
{
    int found = 0;
    pid_t me = getpid();
    pthread_mutex_lock(&finished_lock);
    for (unsigned i = 0; i < FINISHED_ROOTS && !found; i++)
        found = running_roots[i].id == id && running_roots[i].pid == me && id != 0;
    pthread_mutex_unlock(&finished_lock);
    return found;
}

void hccl_boot_root_linger(uint64_t id, uint64_t max_ns)
{
    uint64_t deadline = hccl_now_ns() + max_ns;
    while (root_runs_here(id) && hccl_now_ns() < deadline) usleep(10000);
}

/* Ranks of this process that failed while their group connected its mesh: threads as
 * ranks (HcclCommInitAll, or the application's own threads) learn it here at once,
 * where ranks in other processes only see a connection that never comes. The pid: a
 * child of fork has a copy of the list but none of the ranks.
 *
 * A rank table's group has the table's identity on every try (and so has a
 * sub-communicator's), so a retry from the same table in this process (threads as
 * ranks) must not find the failures of the try before. The creation tells when each rank's attempt begins and ends
 * (hccl_boot_attempt_begin/end); a record keeps its rank's attempt (gen) and the
 * number (seq, one counter for all of them, under finished_lock) at which it began
 * (begun). For the sibling self that reads it, a record is stale when:
 *  - its rank has begun a newer attempt since (gen differs): that one may succeed;
 *  - self ended an attempt after the failed one began: self took part in that try
 *    (and failed, or gave up, with it); its present attempt is a retry;
 *  - a call that named no rank of the table (a bad rank id: it has no attempt of a
 *    rank) ended after the failed rank's attempt before it, and both it and the
 *    failed attempt ended before self's present attempt began: self is taken for
 *    that call's retry.
 * Otherwise it holds, whatever the order of begin, failure and check: a rank that
 * failed before a sibling began (a thread started later), or before it looked, is
 * still seen by it at once. A sibling whose previous attempt ended before the failed
 * one began is taken for a late start of that try; and in a try that had a bad rank
 * id, a sibling that begins after the failed rank returned waits for it (until
 * HCCL_CONNECT_TIMEOUT) instead.
 * Sub-communicators (the same parent, subCommId and rankIds on every try) tell their
 * ranks' attempts too. Records of groups that tell no attempts (root info, launches)
 * hold as before: gen and begun 0. */
#define FAILED_RANKS 64
static struct {
    uint64_t id, secret;
    pid_t pid;
    uint32_t rank;
    HcclResult res;
    uint64_t gen, begun, prev_end; /* its rank's attempt, its begin, the end of the one before */
    char reason[400];
} failed_ranks[FAILED_RANKS];
static unsigned failed_next;

/* The attempts of each (group, rank) of this process; rank UINT32_MAX: calls that named
 * no rank of the group. One per rank of each rank table used here: never freed. */
typedef struct boot_attempt {
    uint64_t id, secret;
    pid_t pid;
    uint32_t rank;
    uint64_t gen, begun, ended; /* attempts begun; seq of the last begin, of the last end */
} boot_attempt;
static boot_attempt *attempts;
static uint32_t n_attempts, cap_attempts;
static uint64_t attempt_seq;

/* The entry of (ident, rank) in this process; with make, added where missing (NULL: no
 * memory, or none and !make). Under finished_lock. */
static boot_attempt *attempt_of(const hccl_boot_ident *ident, uint32_t rank, int make)
{
    pid_t me = getpid();
    for (uint32_t i = 0; i < n_attempts; i++) {
        boot_attempt *a = &attempts[i];
        if (a->id != ident->id || a->secret != ident->secret || a->rank != rank) continue;
        if (a->pid != me) *a = (boot_attempt){ident->id, ident->secret, me, rank, 0, 0, 0}; /* the parent's */
        return a;
    }
    if (!make) return NULL;
    boot_attempt *grown = hccl_grow(attempts, &cap_attempts, n_attempts, sizeof *attempts, 16);
    if (!grown) return NULL;
    attempts = grown;
    attempts[n_attempts] = (boot_attempt){ident->id, ident->secret, me, rank, 0, 0, 0};
    return &attempts[n_attempts++];
}

void hccl_boot_attempt_begin(const hccl_boot_ident *ident, uint32_t rank)
{
    pthread_mutex_lock(&finished_lock);
    boot_attempt *a = attempt_of(ident, rank, 1);
    if (a) {
        a->gen++;
        a->begun = ++attempt_seq;
    }
    pthread_mutex_unlock(&finished_lock);
}

void hccl_boot_attempt_end(const hccl_boot_ident *ident, uint32_t rank)
{
    pthread_mutex_lock(&finished_lock);
    boot_attempt *a = attempt_of(ident, rank, 1);
    if (a) a->ended = ++attempt_seq;
    pthread_mutex_unlock(&finished_lock);
}

void hccl_boot_rank_failed(const hccl_boot_ident *ident, uint32_t rank, HcclResult res, const char *reason)
{
    pthread_mutex_lock(&finished_lock);
    unsigned i = failed_next++ % FAILED_RANKS;
    const boot_attempt *a = attempt_of(ident, rank, 0);
    failed_ranks[i].id = ident->id;
    failed_ranks[i].secret = ident->secret;
    failed_ranks[i].pid = getpid();
    failed_ranks[i].rank = rank;
    failed_ranks[i].res = res;
    failed_ranks[i].gen = a ? a->gen : 0;
    failed_ranks[i].begun = a ? a->begun : 0;
    failed_ranks[i].prev_end = a ? a->ended : 0;
    snprintf(failed_ranks[i].reason, sizeof failed_ranks[i].reason, "%s", reason && *reason ? reason : "see its log");
    pthread_mutex_unlock(&finished_lock);
}

/* Whether record i is stale for self (see above). Under finished_lock. */
static int failed_stale(unsigned i, const hccl_boot_ident *ident, uint32_t self)
{
    const boot_attempt *r = attempt_of(ident, failed_ranks[i].rank, 0), *s = attempt_of(ident, self, 0),
                       *none = attempt_of(ident, UINT32_MAX, 0);
    if ((r ? r->gen : 0) != failed_ranks[i].gen) return 1;
    if (!failed_ranks[i].begun) return 0;
    if (s && s->ended > failed_ranks[i].begun) return 1;
    return none && s && r && none->ended > failed_ranks[i].prev_end && none->ended < s->begun &&
           r->ended > failed_ranks[i].begun && r->ended < s->begun;
}

int hccl_boot_peer_failed(const hccl_boot_ident *ident, uint32_t self, uint32_t *rank, HcclResult *res, char *reason,
                          size_t len)
{
    int found = 0;
    pid_t me = getpid();
    pthread_mutex_lock(&finished_lock);
    unsigned n = failed_next < FAILED_RANKS ? failed_next : FAILED_RANKS;
    for (unsigned k = 0; k < n && !found; k++) {
        unsigned i = (failed_next - n + k) % FAILED_RANKS; /* oldest first: the first to fail says why */
        if (failed_ranks[i].id != ident->id || failed_ranks[i].secret != ident->secret || failed_ranks[i].pid != me ||
            failed_ranks[i].rank == self || ident->id == 0 || failed_stale(i, ident, self))
            continue;
        found = 1;
        if (rank) *rank = failed_ranks[i].rank;
        if (res) *res = failed_ranks[i].res;
        if (reason && len) snprintf(reason, len, "%s", failed_ranks[i].reason);
    }
    pthread_mutex_unlock(&finished_lock);
    return found;
}

/* The refusal a failure report (KIND_FAILED) brings to its group: it names the rank
 * (by its pid and host, and what it passed, where its rank id does not fit the group
 * of nranks) and its own reason. */
static void failed_msg(char *msg, size_t len, const conn_open *o, const hccl_boot_peer *p, boot_failed *f,
                       uint32_t nranks)
{
    f->fn[sizeof f->fn - 1] = 0;
    f->reason[sizeof f->reason - 1] = 0;
    for (char *c = f->reason; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?'; /* from the wire: keep the log one line */
    const char *fn = f->fn[0] ? f->fn : "communicator creation";
    int n;
    if (o->b < nranks && o->a == nranks)
        n = snprintf(msg, len, "rank %u (pid %u on %s) failed %s before joining: ", o->b, p->pid, p->host, fn);
    else
        n = snprintf(msg, len, "a rank (pid %u on %s, which passed rank %u and nRanks %u) failed %s before joining: ",
                     p->pid, p->host, o->b, o->a, fn);
    if (n >= 0 && (size_t)n < len) snprintf(msg + n, len - (size_t)n, "%s", f->reason); /* the end may be cut */
}

/* A refused group: the ranks already waiting (fds[r] >= 0) get the refusal now. */
static void refuse_waiting(int *fds, uint32_t nranks, uint32_t status, const char *msg)
{
    for (uint32_t w = 0; w < nranks; w++) {
        if (fds[w] < 0) continue;
        send_reply(fds[w], status, nranks, msg, NULL);
        close(fds[w]);
        fds[w] = -1;
    }
}

/* The root's wait, in steps: between them, whether a rank of this process failed
 * before joining and could not tell the root (no descriptor left for the report). */
#define ROOT_STEP_NS 100000000ull

/* refusal (NULL: none) is the reason for a group refused before serve_q began (a rank's
 * failure report reached the root thread first), nfailed the ranks that reported it. */
static HcclResult serve_q(int listen_fd, accept_q *q, hccl_boot_stash *stash, const hccl_boot_ident *ident,
                          uint32_t nranks, const hccl_boot_peer *self, uint64_t timeout_ns, const int *abort,
                          hccl_boot_peer *table, const char *refusal, uint32_t nfailed)
{
    HcclResult res = HCCL_SUCCESS;
    int *fds = hccl_malloc(sizeof(int) * nranks);
    hccl_boot_peer *peers = hccl_calloc(nranks, sizeof *peers);
    char msg[512] = "";
    if (!fds || !peers) {
        hccl_free(fds);
        hccl_free(peers);
        return HCCL_E_MEMORY;
    }
    for (uint32_t r = 0; r < nranks; r++) fds[r] = -1;
    uint32_t arrived = 0;
    hccl_iwait iw = {0, 0}; /* a rank's own serve (self) may be interrupted; the root thread's not */
    if (self) {
        peers[self->rank] = *self;
        arrived = 1;
    }
    /* Deadline: the full timeout from the first arrival (the application may take a
     * while to hand the root info to its ranks before anyone arrives). */
    uint64_t start = hccl_now_ns();
    uint64_t deadline = start + (self || refusal ? timeout_ns : HCCL_MAX(timeout_ns, 600000000000ull));
    uint32_t status = REPLY_OK;
    /* Once the group is refused, the root thread (not a rank hosting the root) stays
     * until every rank has come or the deadline passed, and refuses each at once with
     * the same reason: the late ones fail with it too, instead of waiting for an answer. */
    uint32_t refused = 0;
    if (refusal) {
        snprintf(msg, sizeof msg, "%s", refusal);
        status = REPLY_MISMATCH;
        res = HCCL_E_PARA;
        refused = nfailed;
    }

again:
    while (arrived + refused < nranks) {
        int fd = -1;
        conn_open o;
        hccl_boot_peer p;
        int from_stash = 0;
        if (stash) {
            pthread_mutex_lock(&stash->lock);
            stash_prune_locked(stash);
            for (struct stash_entry **pe = &stash->head; *pe; pe = &(*pe)->next) {
                if (of_group(ident, &(*pe)->open)) {
                    struct stash_entry *e = *pe;
                    *pe = e->next;
                    fd = e->fd;
                    o = e->open;
                    p = e->peer;
                    hccl_free(e);
                    from_stash = 1;
                    break;
                }
            }
            pthread_mutex_unlock(&stash->lock);
        }
        if (!from_stash) {
            boot_failed why;
            char here[400];
            uint32_t who = 0;
            uint64_t step = hccl_now_ns() + ROOT_STEP_NS;
            HcclResult a = accept_open(listen_fd, q, step < deadline ? step : deadline, &fd, &o, &p, &why);
            int local = 0; /* a rank of this process failed before joining and could not tell */
            HcclResult stop = HCCL_SUCCESS; /* this rank gives up: refuse the group now */
            if (a == HCCL_E_TIMEOUT && status == REPLY_OK && abort && __atomic_load_n(abort, __ATOMIC_ACQUIRE)) {
                /* Its parent communicator is being destroyed (by another thread). */
                snprintf(msg, sizeof msg,
                         "rank %u, which serves this sub-communicator's rendezvous, destroyed its parent "
                         "communicator during HcclCreateSubCommConfig",
                         self ? self->rank : 0);
                stop = HCCL_E_PARA;
            } else if (a == HCCL_E_TIMEOUT && status == REPLY_OK && self && hccl_interrupt_due(&iw)) {
                /* The application interrupts it. */
                snprintf(msg, sizeof msg, "rank %u, which serves this sub-communicator's rendezvous: %s", self->rank,
                         HCCL_INTERRUPTED_INIT);
                stop = HCCL_E_INTERNAL;
            }
            if (stop != HCCL_SUCCESS) {
                status = REPLY_MISMATCH;
                res = stop;
                HCCL_WARN(BOOT, "bootstrap root: %s", msg);
                refuse_waiting(fds, nranks, status, msg);
                refused++;
                break;
            }
            if (a == HCCL_E_TIMEOUT && hccl_now_ns() < deadline) {
                if (status != REPLY_OK ||
                    !hccl_boot_peer_failed(ident, self ? self->rank : UINT32_MAX, &who, NULL, here, sizeof here))
                    continue;
                local = 1;
            }
            if (a == HCCL_E_TIMEOUT && !local && status != REPLY_OK) break; /* refusing: the stragglers never came */
            if (a == HCCL_E_TIMEOUT && !local) {
                char missing[400];
                list_missing(missing, sizeof missing, fds, nranks, self);
                snprintf(msg, sizeof msg,
                         "HCCL_CONNECT_TIMEOUT (%llu s) expired: %u of %u ranks arrived at the root; ranks that "
                         "never arrived: %s",
                         (unsigned long long)(timeout_ns / 1000000000ull), arrived, nranks, missing);
                status = REPLY_TIMEOUT;
                res = HCCL_E_TIMEOUT;
                break;
            }
            if (a != HCCL_SUCCESS && !local) {
                snprintf(msg, sizeof msg, "cannot accept a rank's connection at the bootstrap root: %s%s",
                         strerror(q->err ? q->err : EIO),
                         q->err == EMFILE ? " (raise the root process's RLIMIT_NOFILE, ulimit -n)" : "");
                status = REPLY_SYSCALL;
                res = a;
                refuse_backlog(listen_fd, q, nranks, status, msg);
                break;
            }
            if (local || (o.kind == KIND_FAILED && o.secret == ident->secret && o.id == ident->id)) {
                /* A rank failed before it could join: refuse the group now, as for a
                 * mismatch, with its reason, rather than wait for it until the deadline. */
                if (local)
                    snprintf(msg, sizeof msg, "rank %u (a thread of this process) failed %s", who, here);
                else
                    close(fd);
                /* A rank that reports after its hello (interrupted while it waited for the
                 * answer) is counted once, as refused: the group still waits for the others. */
                if (!local && o.a == nranks && o.b < nranks && fds[o.b] >= 0 && peers[o.b].pid == p.pid &&
                    peers[o.b].host_hash == p.host_hash) {
                    close(fds[o.b]);
                    fds[o.b] = -1;
                    arrived--;
                }
                if (status == REPLY_OK) {
                    if (!local) failed_msg(msg, sizeof msg, &o, &p, &why, nranks);
                    status = REPLY_MISMATCH;
                    res = HCCL_E_PARA;
                    HCCL_WARN(BOOT, "bootstrap root: %s", msg);
                    refuse_waiting(fds, nranks, status, msg);
                    if (!self) deadline = HCCL_MIN(deadline, hccl_now_ns() + timeout_ns);
                }
                refused++;
                if (self) break;
                continue;
            }
            if (o.kind == KIND_MESH_FAILED && o.secret == ident->secret) { /* for a mesh that no longer waits */
                close(fd);
                continue;
            }
            if (o.secret != ident->secret || o.kind != KIND_HELLO) {
                HCCL_WARN(BOOT, "bootstrap: dropped a connection that did not present this job's secret");
                close(fd);
                continue;
            }
            if (!of_group(ident, &o)) {
                if (stash_put(stash, fd, &o, &p)) continue;
                HCCL_WARN(BOOT, "bootstrap: dropped a hello for another group (id %llx)", (unsigned long long)o.id);
                close(fd);
                continue;
            }
        }
        uint32_t r = o.b;
        if (status != REPLY_OK) {
            send_reply(fd, status, nranks, msg, NULL);
            close(fd);
            refused++;
            continue;
        }
        if (o.id != ident->id || o.a != nranks || r >= nranks || fds[r] >= 0 || (self && self->rank == r)) {
            if (o.id != ident->id)
                snprintf(msg, sizeof msg,
                         "a rank (pid %u on %s, rank %u of a %u-rank list) called HcclCreateSubCommConfig with this "
                         "subCommId but with other rankIds than the %u-rank list of the rank that serves it (pid %u "
                         "on %s): every member must pass the same rankIds",
                         p.pid, p.host, r, o.a, nranks, self ? self->pid : 0, self ? self->host : "?");
            else if (o.a != nranks)
                snprintf(msg, sizeof msg, "rank %u was started with nranks=%u but the group has nranks=%u", r, o.a,
                         nranks);
            else if (r >= nranks)
                snprintf(msg, sizeof msg, "a rank presented rank id %u, but nranks is %u", r, nranks);
            else
                snprintf(msg, sizeof msg, "rank %u joined twice (pid %u on %s, and pid %u on %s)", r, p.pid, p.host,
                         self && self->rank == r ? self->pid : peers[r].pid,
                         self && self->rank == r ? self->host : peers[r].host);
            send_reply(fd, REPLY_MISMATCH, nranks, msg, NULL);
            close(fd);
            status = REPLY_MISMATCH;
            res = HCCL_E_PARA;
            HCCL_WARN(BOOT, "bootstrap root: %s", msg);
            refuse_waiting(fds, nranks, status, msg);
            refused++;
            if (self) break;
            continue;
        }
        p.rank = r;
        peers[r] = p;
        fds[r] = fd;
        if (arrived == (self ? 1u : 0u) && !self) deadline = hccl_now_ns() + timeout_ns;
        arrived++;
    }
    /* A rank that gave up after its hello (interrupted while it waited for the answer)
     * closed its connection: the group waits for it again, and its report, which
     * follows, refuses the group with its reason. */
    int gone = 0;
    for (uint32_t r = 0; status == REPLY_OK && r < nranks; r++) {
        if (fds[r] < 0 || !stash_gone(fds[r])) continue;
        close(fds[r]);
        fds[r] = -1;
        arrived--;
        gone = 1;
    }
    if (gone) goto again;
    if (!self) root_finished(ident->id); /* the root thread's group: before any rank hears back */
    for (uint32_t r = 0; r < nranks; r++) {
        if (fds[r] < 0) continue;
        send_reply(fds[r], status, nranks, msg, peers);
        close(fds[r]);
    }
    if (status == REPLY_MISMATCH && self) refuse_stragglers(listen_fd, q, stash, ident, nranks, msg);
    if (status != REPLY_OK && !refused) HCCL_WARN(BOOT, "bootstrap root: %s", msg);
    else if (status == REPLY_OK && table) memcpy(table, peers, sizeof *peers * nranks);
    hccl_free(fds);
    hccl_free(peers);
    return res;
}

typedef struct root_thread_arg {
    int fd;
    hccl_boot_ident ident;
} root_thread_arg;


static void *root_thread(void *p)
{
    pthread_setname_np(pthread_self(), "hccl-boot-root");
    root_thread_arg *a = p;
    /* nranks is learned from the first hello (or from a failure report whose rank id
     * fits the nRanks it passed); then the whole group is served. */
    int fd = -1;
    conn_open o;
    hccl_boot_peer peer;
    boot_failed why;
    char failed[512] = ""; /* the first failure report's refusal */
    uint32_t nfailed = 0;
    accept_q *q = hccl_calloc(1, sizeof *q);
    int served = 0; /* serve_q recorded the id (root_finished) */
    uint64_t deadline = hccl_now_ns() + HCCL_MAX(hccl_boot_connect_timeout_ns(), 600000000000ull);
    if (!q) goto out;
    for (;;) {
        if (accept_open(a->fd, q, deadline, &fd, &o, &peer, &why) != HCCL_SUCCESS) {
            if (q->err) {
                char msg[300];
                snprintf(msg, sizeof msg, "cannot accept a rank's connection at the bootstrap root: %s%s",
                         strerror(q->err), q->err == EMFILE ? " (raise the root process's RLIMIT_NOFILE, ulimit -n)"
                                                            : "");
                HCCL_WARN(BOOT, "bootstrap root: cannot accept a rank's connection: %s%s; root thread exits",
                          strerror(q->err), emfile_hint(q->err));
                refuse_backlog(a->fd, q, 0, REPLY_SYSCALL, msg);
            }
            else
                HCCL_INFO(BOOT, "bootstrap root: no rank arrived; root thread exits");
            goto out;
        }
        if (o.secret == a->ident.secret && o.id == a->ident.id && o.kind == KIND_HELLO && o.a > 0) break;
        if (o.secret == a->ident.secret && o.id == a->ident.id && o.kind == KIND_FAILED) {
            close(fd);
            if (!nfailed++) {
                failed_msg(failed, sizeof failed, &o, &peer, &why, o.a);
                HCCL_WARN(BOOT, "bootstrap root: %s", failed);
            }
            if (o.b < o.a && o.a <= HCCL_COMM_MAX_RANKS) { /* a size its own id fits: the group's, most likely */
                fd = -1;
                break;
            }
            deadline = HCCL_MIN(deadline, hccl_now_ns() + hccl_boot_connect_timeout_ns());
            continue; /* the first hello will say */
        }
        HCCL_WARN(BOOT, "bootstrap root: dropped a connection that did not present this job's secret");
        close(fd);
    }
    {
        /* Put the first hello in a private stash and serve the whole group. */
        hccl_boot_stash st;
        hccl_boot_stash_init(&st);
        struct stash_entry *e = fd >= 0 ? hccl_calloc(1, sizeof *e) : NULL;
        if (e || fd < 0) {
            if (e) {
                e->fd = fd;
                e->open = o;
                e->peer = peer;
                st.head = e;
            }
            serve_q(a->fd, q, &st, &a->ident, o.a, NULL, hccl_boot_connect_timeout_ns(), NULL, NULL,
                    nfailed ? failed : NULL, nfailed);
            served = 1;
        } else {
            close(fd);
        }
        hccl_boot_stash_free(&st);
    }
out:
    if (q) {
        q_free(q);
        hccl_free(q);
    }
    close(a->fd);
    reserve_hold(0);
    if (!served) root_finished(a->ident.id); /* gave up before any rank came */
    root_running(a->ident.id, 0);
    hccl_free(a);
    return NULL;
}
HcclResult hccl_boot_root_start(hccl_addr *addr, const hccl_boot_ident *ident, int use_base_port)
{
    (void)hccl_boot_connect_timeout_ns(); /* read here: the root thread must not call getenv */
    int fd;
    CHECK(hccl_socket_listen(addr, use_base_port, &fd));
    root_thread_arg *a = hccl_malloc(sizeof *a);
    if (!a) {
        close(fd);
        return HCCL_E_MEMORY;
    }
    a->fd = fd;
    a->ident = *ident;
    root_running(ident->id, 1);
    reserve_hold(1);
    int err = hccl_thread_start(NULL, root_thread, a);
    if (err != 0) {
        HCCL_WARN(BOOT, "cannot start the bootstrap root's thread: %s", strerror(err));
        close(fd);
        hccl_free(a);
        reserve_hold(0);
        root_running(ident->id, 0);
        return HCCL_E_SYSCALL;
    }
    HCCL_INFO(BOOT, "bootstrap root listening on %s", hccl_addr_str(addr));
    return HCCL_SUCCESS;
}

/* A join that finds no root, or no answer where the root was: a root info used a
 * second time gets either (its root stopped listening once it had served its
 * communicator, and another listener may have the port since). */
#define ONE_ROOT_HINT                                                                                             \
    ": is the rank that serves it running and creating this communicator? (A root info serves one "             \
    "communicator: its root stops listening once that one is made; call HcclGetRootInfo for each.)"

/* The same, for a root at a loopback address: a rank of another host that was handed
 * it (a root info made without HCCL_IF_IP or HCCL_SOCKET_IFNAME, MASTER_ADDR=127.0.0.1)
 * reaches its own host there, where nothing listens; a missing process is the lesser
 * suspect. */
#define LOOPBACK_ROOT_HINT                                                                                        \
    ": its address is loopback, which only ranks on the root's own host can reach (a root info made without "   \
    "HCCL_IF_IP or HCCL_SOCKET_IFNAME, or a loopback root address such as MASTER_ADDR=127.0.0.1, serves no rank " \
    "of another host: set one of those where the root is made); on the root's host, is the rank that serves it " \
    "running and creating this communicator? (A root info serves one communicator: its root stops listening once " \
    "that one is made; call HcclGetRootInfo for each.)"

/* What a connection to `to` that failed with err (hccl_socket_connect's errno) says
 * about the peer: no answer from its host at all is a network (or host) matter, not a
 * process that is missing. NULL when nothing answered no: a refusal, say. No route
 * to an address of a family this host has no address of (only of the other) is the
 * ranks' settings disagreeing on the family, not a network that is down. */
static const char *unreachable_hint(int err, const hccl_addr *to)
{
    hccl_addr mine;
    int fam = to->ss_family, other = fam == AF_INET6 ? AF_INET : AF_INET6;
    if (err == ENETUNREACH && !hccl_addr_is_loopback(to) && hccl_socket_nonloopback_addr(fam, &mine) != HCCL_SUCCESS &&
        hccl_socket_nonloopback_addr(other, &mine) == HCCL_SUCCESS)
        return fam == AF_INET6
                   ? "no route to its host: it advertises an IPv6 address but this host has none, only IPv4 ones: "
                     "HCCL_SOCKET_FAMILY, HCCL_IF_IP, HCCL_SOCKET_IFNAME or the root address pick IPv6 on its host "
                     "and IPv4 here; every host must use one family"
                   : "no route to its host: it advertises an IPv4 address but this host has none, only IPv6 ones: "
                     "HCCL_SOCKET_FAMILY, HCCL_IF_IP, HCCL_SOCKET_IFNAME or the root address pick IPv4 on its host "
                     "and IPv6 here; every host must use one family";
    if (err == ENETUNREACH || err == EHOSTUNREACH) return "no route to its host: the network is down";
    if (err == ETIMEDOUT) return "its host did not answer: the network or the host is down, or a firewall drops "
                                 "the packets";
    return NULL;
}

/* Sends an opening (buf, len) on a fresh connection to a listener, by deadline; a
 * refusal is tried again when retry_refused. Returns the bytes that went out. */
static size_t send_opening(const hccl_addr *to, const void *buf, size_t len, uint64_t deadline, int retry_refused)
{
    size_t off = 0;
    for (int fd; off < len && hccl_now_ns() < deadline; usleep(20000)) {
        fd = socket(to->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) break;
        int ok = connect(fd, (const struct sockaddr *)to, hccl_addr_len(to)) == 0 || errno == EINPROGRESS;
        int refused = !ok && errno == ECONNREFUSED;
        while (ok && off < len) {
            ssize_t n = send(fd, (const char *)buf + off, len - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += (size_t)n;
                continue;
            }
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN && errno != EINTR) {
                refused = errno == ECONNREFUSED && off == 0;
                break;
            }
            uint64_t now = hccl_now_ns();
            if (now >= deadline) break;
            struct pollfd pf = {fd, POLLOUT, 0};
            if (poll(&pf, 1, (int)((deadline - now + 999999) / 1000000)) < 0 && errno != EINTR) break;
        }
        close(fd);
        if (!refused || !retry_refused) break;
    }
    return off;
}

void hccl_boot_report_failure(const hccl_addr *root, const hccl_boot_ident *ident, uint32_t nranks, uint32_t rank,
                              const char *fn, const char *reason, int quick)
{
    unsigned char buf[sizeof(conn_open) + sizeof(hccl_boot_peer) + sizeof(boot_failed)];
    conn_open o = {OPEN_MAGIC, KIND_FAILED, ident->secret, ident->id, nranks, rank, 0, 0, ident->group};
    hccl_boot_peer p;
    hccl_addr none;
    memset(&none, 0, sizeof none);
    hccl_boot_peer_self(&p, &none, rank);
    boot_failed f;
    memset(&f, 0, sizeof f);
    snprintf(f.fn, sizeof f.fn, "%s", fn ? fn : "");
    snprintf(f.reason, sizeof f.reason, "%s", reason && *reason ? reason : "(no reason given)");
    memcpy(buf, &o, sizeof o);
    memcpy(buf + sizeof o, &p, sizeof p);
    memcpy(buf + sizeof o + sizeof p, &f, sizeof f);
    /* Quietly: a WARN here would replace the caller's own reason as the thread's last
     * error message (HcclGetLastErrorMessage). Bounded: a root that is not there only
     * makes the others wait for their timeout, as before. A refusal is tried again: in
     * a launch (HcclCommInitFromEnv) rank 0 may not have opened the root yet. */
    size_t off = send_opening(root, buf, sizeof buf, hccl_now_ns() + (quick ? QUICK_SEND_NS : FAILED_SEND_NS), !quick);
    if (off != sizeof buf) { /* the root may be a thread of this process (HcclCommInitAll): it looks here */
        char why[400];
        snprintf(why, sizeof why, "%s before joining: %s", f.fn[0] ? f.fn : "communicator creation", f.reason);
        hccl_boot_rank_failed(ident, rank, HCCL_E_INTERNAL, why);
    }
    HCCL_INFO(BOOT, "rank %u: %s the bootstrap root at %s that this rank failed before joining", rank,
              off == sizeof buf ? "told" : "could not tell", hccl_addr_str(root));
}

HcclResult hccl_boot_join(const hccl_addr *root, const hccl_boot_ident *ident, uint32_t nranks,
                          const hccl_boot_peer *self, uint64_t timeout_ns, const char *hint, const int *abort,
                          hccl_boot_peer *table)
{
    int fd;
    if (!hint) hint = hccl_addr_is_loopback(root) ? LOOPBACK_ROOT_HINT : ONE_ROOT_HINT;
    uint64_t deadline = hccl_now_ns() + timeout_ns;
    HcclResult res = hccl_socket_connect(root, deadline, &fd);
    if (res == HCCL_E_INTERNAL) { /* the interrupt check (errno EINTR) */
        HCCL_WARN(BOOT, "rank %u: %s while it connected to the bootstrap root at %s", self->rank,
                  HCCL_INTERRUPTED_INIT, hccl_addr_str(root));
        return res;
    }
    if (res == HCCL_E_SYSCALL) { /* no socket at all (EMFILE...): errno says why */
        int err = errno;
        HCCL_WARN(BOOT, "rank %u: cannot open a connection to the bootstrap root at %s: %s%s", self->rank,
                  hccl_addr_str(root), strerror(err), emfile_hint(err));
        errno = err; /* this rank's failure, not the root's */
        return res;
    }
    if (res != HCCL_SUCCESS) {
        const char *why = unreachable_hint(errno, root);
        HCCL_WARN(BOOT, "rank %u: cannot reach the bootstrap root at %s within HCCL_CONNECT_TIMEOUT (%llu s)%s%s%s",
                  self->rank, hccl_addr_str(root), (unsigned long long)(timeout_ns / 1000000000ull),
                  why ? " (" : hint, why ? why : "", why ? ")" : "");
        return res == HCCL_E_TIMEOUT ? HCCL_E_TIMEOUT : HCCL_E_TCP_CONNECT;
    }
    conn_open o = {OPEN_MAGIC, KIND_HELLO, ident->secret, ident->id, nranks, self->rank, 0, 0, ident->group};
    boot_reply r;
    /* The root answers at its own deadline; wait a little longer than that. */
    uint64_t reply_deadline = hccl_now_ns() + timeout_ns + 2000000000ull;
    if ((res = hccl_socket_send_all(fd, &o, sizeof o, deadline)) == HCCL_SUCCESS)
        res = hccl_socket_send_all(fd, self, sizeof *self, deadline);
    /* In 100 ms steps while the parent communicator may be destroyed (abort), or the
     * application may interrupt the wait (HcclSetInterruptCheck). */
    hccl_iwait iw = {0, 0};
    while (res == HCCL_SUCCESS && (abort || hccl_interrupt_get()) && hccl_now_ns() < reply_deadline) {
        if (abort && __atomic_load_n(abort, __ATOMIC_ACQUIRE)) {
            close(fd);
            HCCL_WARN(BOOT, "rank %u: gave up waiting for the bootstrap root at %s: this rank's parent "
                      "communicator was destroyed during HcclCreateSubCommConfig", self->rank, hccl_addr_str(root));
            return HCCL_E_PARA;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        if (hccl_interrupt_due(&iw) && poll(&pf, 1, 0) == 0) { /* not once the answer is here */
            close(fd);
            HCCL_WARN(BOOT, "rank %u: %s while it waited for the bootstrap root at %s to answer", self->rank,
                      HCCL_INTERRUPTED_INIT, hccl_addr_str(root));
            return HCCL_E_INTERNAL;
        }
        if (poll(&pf, 1, 100) > 0) break;
    }
    if (res != HCCL_SUCCESS || (res = hccl_socket_recv_all(fd, &r, sizeof r, reply_deadline)) != HCCL_SUCCESS) {
        HCCL_WARN(BOOT, "rank %u: bootstrap with the root at %s failed (%s)%s", self->rank, hccl_addr_str(root),
                  res == HCCL_E_TIMEOUT ? "no answer in time" : "connection lost", hint);
        close(fd);
        return res == HCCL_E_TIMEOUT ? HCCL_E_TIMEOUT : HCCL_E_TCP_TRANSFER;
    }
    if (r.magic != REPLY_MAGIC) {
        close(fd);
        HCCL_WARN(BOOT, "rank %u: malformed bootstrap reply from %s", self->rank, hccl_addr_str(root));
        return HCCL_E_INTERNAL;
    }
    /* A refusal first: its nranks is the root's, which differs from ours when that is
     * what the root refuses. */
    r.msg[sizeof r.msg - 1] = 0;
    if (r.status != REPLY_OK) {
        close(fd);
        HCCL_WARN(BOOT, "rank %u: %s", self->rank, r.msg);
        errno = 0; /* a HCCL_E_SYSCALL here is the root's */
        return r.status == REPLY_TIMEOUT ? HCCL_E_TIMEOUT : r.status == REPLY_SYSCALL ? HCCL_E_SYSCALL : HCCL_E_PARA;
    }
    if (r.nranks != nranks) {
        close(fd);
        HCCL_WARN(BOOT, "rank %u: malformed bootstrap reply from %s (a table of %u ranks, not %u)", self->rank,
                  hccl_addr_str(root), r.nranks, nranks);
        return HCCL_E_INTERNAL;
    }
    res = hccl_socket_recv_all(fd, table, sizeof *table * nranks, reply_deadline);
    close(fd);
    for (uint32_t p = 0; res == HCCL_SUCCESS && p < nranks; p++) table[p].host[sizeof table[p].host - 1] = 0;
    return res;
}

/* A rank's connections and its wait in the mesh. */
typedef struct mesh_st {
    int listen_fd;
    accept_q *q;
    hccl_boot_stash *stash;
    const hccl_boot_ident *ident;
    uint32_t rank, nranks;
    const hccl_boot_peer *table;
    int *fds;
    unsigned *nsock, *got;
    uint32_t need; /* higher ranks whose sockets have not all come */
    uint64_t refused_since; /* the connection being made: refused since (0: its last try was not) */
    int heard; /* a report came while connecting (said; its result in heard_res) */
    HcclResult heard_res;
} mesh_st;

/* A listener that refuses a rank of a group that has joined is gone: its rank failed
 * or exited (each rank opened its listener before it joined). Tried this long. */
#define MESH_REFUSED_NS 1000000000ull
/* A rank found failed (its listener refuses, its connection closed) may have sent its
 * own report, which says why: looked for this long on the listener. */
#define MESH_REPORT_WAIT_NS 300000000ull

/* When another rank of this process failed: say so (its rank and reason) and return
 * its result, to stop waiting for it; else HCCL_SUCCESS. */
static HcclResult mesh_give_up(const hccl_boot_ident *ident, uint32_t rank)
{
    uint32_t who;
    HcclResult res;
    char why[400];
    if (!hccl_boot_peer_failed(ident, rank, &who, &res, why, sizeof why)) return HCCL_SUCCESS;
    HCCL_WARN(BOOT, "rank %u: rank %u of this process failed while the ranks connected: %s", rank, who, why);
    return res != HCCL_SUCCESS ? res : HCCL_E_INTERNAL;
}

#define MESH_REPORT_BYTES (sizeof(conn_open) + sizeof(hccl_boot_peer) + sizeof(boot_failed))

static void mesh_report_fill(unsigned char *buf, const hccl_boot_ident *ident, uint32_t nranks,
                             const hccl_boot_peer *table, uint32_t failed, HcclResult res, const char *reason)
{
    conn_open o = {OPEN_MAGIC, KIND_MESH_FAILED, ident->secret, ident->id, nranks, failed, (uint16_t)res, 0, 0};
    boot_failed f;
    memset(&f, 0, sizeof f);
    snprintf(f.reason, sizeof f.reason, "%s", reason && *reason ? reason : "see its log");
    memcpy(buf, &o, sizeof o);
    memcpy(buf + sizeof o, &table[failed], sizeof table[failed]);
    memcpy(buf + sizeof o + sizeof table[failed], &f, sizeof f);
}

void hccl_boot_mesh_report(const hccl_boot_ident *ident, uint32_t nranks, const hccl_boot_peer *table, uint32_t failed,
                        uint32_t skip, HcclResult res, const char *reason)
{
    unsigned char buf[MESH_REPORT_BYTES];
    mesh_report_fill(buf, ident, nranks, table, failed, res, reason);
    uint64_t deadline = hccl_now_ns() + FAILED_SEND_NS;
    for (uint32_t p = 0; p < nranks; p++)
        if (p != failed && p != skip) send_opening(&table[p].addr, buf, sizeof buf, deadline, 0);
}

void hccl_boot_mesh_report_unjoined(const hccl_boot_ident *ident, uint32_t nranks, const hccl_boot_peer *table,
                                    uint32_t rank, HcclResult res, const char *reason, uint64_t linger_ns)
{
    unsigned char buf[MESH_REPORT_BYTES];
    mesh_report_fill(buf, ident, nranks, table, rank, res, reason);
    uint8_t *told = hccl_calloc(nranks, 1);
    if (!told) return;
    uint64_t until = hccl_now_ns() + linger_ns;
    for (;;) {
        uint32_t left = 0;
        for (uint32_t p = 0; p < nranks; p++) {
            if (p == rank || told[p]) continue;
            uint64_t now = hccl_now_ns(), d = now + FAILED_SEND_NS;
            if (now >= until) break;
            if (send_opening(&table[p].addr, buf, sizeof buf, d < until ? d : until, 0) == sizeof buf) told[p] = 1;
            else left++;
        }
        if (!left || hccl_now_ns() >= until) break;
        usleep(50000); /* a listener that refuses: its rank has not started yet */
    }
    hccl_free(told);
}

/* A report (KIND_MESH_FAILED) of the group, about another rank: what it says in msg,
 * and its result. */
static HcclResult mesh_heard(const conn_open *o, const hccl_boot_peer *p, boot_failed *f, char *msg, size_t len)
{
    f->reason[sizeof f->reason - 1] = 0;
    for (char *c = f->reason; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?'; /* from the wire: keep the log one line */
    snprintf(msg, len, "rank %u (pid %u on %.64s) failed while the ranks connected: %s", o->b, p->pid, p->host,
             f->reason);
    HcclResult res = (HcclResult)o->sock_idx;
    return res != HCCL_SUCCESS && res < HCCL_E_RESERVED ? res : HCCL_E_INTERNAL;
}

enum { MESH_NONE, MESH_TOOK, MESH_REPORT };

/* Takes the next connection from the listener, until `until`: a higher rank's socket
 * (kept), a sub-communicator's early hello (stashed), a report that another rank of
 * the group failed (MESH_REPORT, said, its result in *res), or one dropped. MESH_NONE:
 * nothing came (*res: accept_open's result). */
static int mesh_accept(mesh_st *m, uint64_t until, HcclResult *res)
{
    int fd;
    conn_open o;
    hccl_boot_peer peer;
    boot_failed why;
    HcclResult a = accept_open(m->listen_fd, m->q, until, &fd, &o, &peer, &why);
    if (a != HCCL_SUCCESS) {
        *res = a;
        return MESH_NONE;
    }
    if (o.secret != m->ident->secret) {
        HCCL_WARN(BOOT, "rank %u: dropped a connection that did not present this job's secret", m->rank);
        close(fd);
        return MESH_TOOK;
    }
    if (o.kind == KIND_MESH_FAILED) {
        close(fd);
        if (o.id != m->ident->id || o.a != m->nranks || o.b >= m->nranks || o.b == m->rank) return MESH_TOOK;
        char msg[600];
        *res = mesh_heard(&o, &peer, &why, msg, sizeof msg);
        HCCL_WARN(BOOT, "rank %u: %s", m->rank, msg);
        return MESH_REPORT;
    }
    if (o.kind == KIND_HELLO && m->stash) { /* an early sub-communicator hello */
        if (!stash_put(m->stash, fd, &o, &peer)) close(fd);
        return MESH_TOOK;
    }
    if (o.kind != KIND_DATA || o.id != m->ident->id || o.b != m->rank || o.a <= m->rank || o.a >= m->nranks ||
        o.sock_cnt < 1 || o.sock_cnt > HCCL_BOOT_MAX_SOCKS || o.sock_idx >= o.sock_cnt ||
        (m->nsock[o.a] && m->nsock[o.a] != o.sock_cnt) || m->fds[o.a * HCCL_BOOT_MAX_SOCKS + o.sock_idx] >= 0) {
        HCCL_WARN(BOOT, "rank %u: dropped an unexpected connection (from rank %u)", m->rank, o.a);
        close(fd);
        return MESH_TOOK;
    }
    m->nsock[o.a] = o.sock_cnt;
    m->fds[o.a * HCCL_BOOT_MAX_SOCKS + o.sock_idx] = fd;
    if (++m->got[o.a] == o.sock_cnt) m->need--;
    return MESH_TOOK;
}

/* Whether to stop connecting: another rank of the group, in this process, failed
 * (hccl_boot_rank_failed), or the peer's listener refuses (its rank failed: the
 * report of the rank that failed first may be on our listener already) and has done so
 * for MESH_REFUSED_NS. */
static int mesh_stop(void *p)
{
    mesh_st *m = p;
    int err = errno;
    if (hccl_boot_peer_failed(m->ident, m->rank, NULL, NULL, NULL, 0)) return 1;
    if (err != ECONNREFUSED) {
        m->refused_since = 0;
        return 0;
    }
    HcclResult a;
    int k;
    while ((k = mesh_accept(m, hccl_now_ns(), &a)) == MESH_TOOK) {}
    if (k == MESH_REPORT) {
        m->heard = 1;
        m->heard_res = a;
        return 1;
    }
    uint64_t now = hccl_now_ns();
    if (!m->refused_since) m->refused_since = now;
    return now - m->refused_since >= MESH_REFUSED_NS;
}

/* Rank p was found failed (what: how). Its own report, if it comes, says why; else
 * this rank says what it found and tells the others. Returns the result to fail with. */
static HcclResult mesh_blame(mesh_st *m, uint32_t p, const char *what, HcclResult res)
{
    uint64_t until = hccl_now_ns() + MESH_REPORT_WAIT_NS;
    HcclResult heard;
    int k;
    while ((k = mesh_accept(m, until, &heard)) == MESH_TOOK) {}
    if (k == MESH_REPORT) return heard;
    char why[352];
    snprintf(why, sizeof why, "%s (found by rank %u)", what, m->rank);
    HCCL_WARN(BOOT, "rank %u: rank %u failed or exited while the ranks connected: %s", m->rank, p, why);
    hccl_boot_mesh_report(m->ident, m->nranks, m->table, p, m->rank, res, why);
    return res;
}

/* A connection of the mesh that its peer closed (or reset) before the mesh was done:
 * that rank failed or exited. Its index in fds, or -1. Data may come before the close
 * (a higher rank that was done began the setup's first operation). */
static int mesh_closed(const mesh_st *m)
{
    for (uint32_t i = 0; i < m->nranks * HCCL_BOOT_MAX_SOCKS; i++) {
        if (m->fds[i] < 0) continue;
        struct pollfd pf = {m->fds[i], POLLRDHUP, 0};
        if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR))) return (int)i;
    }
    return -1;
}

/* The accept loop's wait, in steps: between them, whether a rank of this process failed,
 * and whether a connection already made was closed. */
#define MESH_STEP_NS 100000000ull

HcclResult hccl_boot_mesh(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t rank,
                          uint32_t nranks, const hccl_boot_peer *table, uint64_t timeout_ns, const unsigned *want,
                          int *fds, unsigned *nsock)
{
    uint64_t deadline = hccl_now_ns() + timeout_ns, warn_seq = hccl_log_warn_seq();
    HcclResult res = HCCL_SUCCESS;
    accept_q *q = hccl_calloc(1, sizeof *q);
    unsigned *got = hccl_calloc(nranks, sizeof *got);
    for (uint32_t i = 0; i < nranks * HCCL_BOOT_MAX_SOCKS; i++) fds[i] = -1;
    for (uint32_t p = 0; p < nranks; p++) nsock[p] = 0;
    if (!q || !got) {
        hccl_free(q);
        hccl_free(got);
        return HCCL_E_MEMORY;
    }
    mesh_st ms = {listen_fd, q, stash, ident, rank, nranks, table, fds, nsock, got, nranks - 1 - rank, 0, 0, 0};
    mesh_st *m = &ms;
    for (uint32_t p = 0; p < rank; p++) {
        unsigned k_max = want[p] < 1 ? 1 : want[p] > HCCL_BOOT_MAX_SOCKS ? HCCL_BOOT_MAX_SOCKS : want[p];
        nsock[p] = k_max;
        for (unsigned k = 0; k < k_max; k++) {
            int *fd = &fds[p * HCCL_BOOT_MAX_SOCKS + k];
            m->refused_since = 0;
            res = hccl_socket_connect_unless(&table[p].addr, deadline, mesh_stop, m, fd);
            if (res == HCCL_E_INTERNAL) { /* the interrupt check: the others learn it (fail) */
                HCCL_WARN(BOOT, "rank %u: %s while it connected to rank %u", rank, HCCL_INTERRUPTED_INIT, p);
                goto fail;
            }
            if (res != HCCL_SUCCESS && res != HCCL_E_SYSCALL &&
                hccl_boot_peer_failed(ident, rank, NULL, NULL, NULL, 0)) {
                res = mesh_give_up(ident, rank);
                goto fail_peer;
            }
            if (res != HCCL_SUCCESS && m->heard) {
                res = m->heard_res;
                goto fail_peer;
            }
            if (res != HCCL_SUCCESS && res != HCCL_E_SYSCALL && m->refused_since &&
                hccl_now_ns() < deadline) { /* its listener is gone */
                char what[200];
                snprintf(what, sizeof what, "its listener at %s refuses connections",
                         hccl_addr_str(&table[p].addr));
                res = mesh_blame(m, p, what, HCCL_E_TCP_CONNECT);
                goto fail_peer;
            }
            if (res == HCCL_E_SYSCALL) {
                int err = errno;
                HCCL_WARN(BOOT, "rank %u: cannot open a connection to rank %u at %s: %s%s", rank, p,
                          hccl_addr_str(&table[p].addr), strerror(err),
                          emfile_hint(err));
                goto fail;
            }
            if (res != HCCL_SUCCESS) {
                const char *why = unreachable_hint(errno, &table[p].addr);
                HCCL_WARN(BOOT, "rank %u: cannot connect to rank %u at %s within HCCL_CONNECT_TIMEOUT (%s)", rank, p,
                          hccl_addr_str(&table[p].addr), why ? why : "it exited, or never opened its listener");
                goto fail;
            }
            conn_open o = {OPEN_MAGIC, KIND_DATA, ident->secret, ident->id, rank, p, (uint16_t)k, (uint16_t)k_max, 0};
            if ((res = hccl_socket_send_all(*fd, &o, sizeof o, deadline)) != HCCL_SUCCESS) { /* it closed */
                res = mesh_blame(m, p, "its listener closed the connection made to it", res);
                goto fail_peer;
            }
        }
    }
    /* Each higher rank announces how many sockets it opens to us in every one. */
    hccl_iwait iw = {0, 0};
    while (m->need > 0) {
        HcclResult a;
        uint64_t step = hccl_now_ns() + MESH_STEP_NS;
        int k = mesh_accept(m, step < deadline ? step : deadline, &a);
        if (k == MESH_TOOK) continue;
        if (k == MESH_REPORT) {
            res = a;
            goto fail_peer;
        }
        if (a == HCCL_E_TIMEOUT && hccl_now_ns() < deadline) {
            if ((res = mesh_give_up(ident, rank)) != HCCL_SUCCESS) goto fail_peer;
            if (hccl_interrupt_due(&iw)) {
                HCCL_WARN(BOOT, "rank %u: %s while it waited for the higher ranks to connect", rank,
                          HCCL_INTERRUPTED_INIT);
                res = HCCL_E_INTERNAL;
                goto fail;
            }
            int i = mesh_closed(m);
            if (i < 0) continue;
            res = mesh_blame(m, (uint32_t)i / HCCL_BOOT_MAX_SOCKS, "its connection closed before the ranks were "
                             "connected", HCCL_E_TCP_TRANSFER);
            goto fail_peer;
        }
        char missing[400];
        size_t off = 0;
        missing[0] = 0;
        for (uint32_t p = rank + 1; p < nranks && off + 16 < sizeof missing; p++)
            if (!nsock[p] || got[p] < nsock[p])
                off += (size_t)snprintf(missing + off, sizeof missing - off, "%s%u", off ? ", " : "", p);
        if (q->err)
            HCCL_WARN(BOOT, "rank %u: cannot accept the connections of ranks %s: %s%s", rank, missing,
                      strerror(q->err), emfile_hint(q->err));
        else
            HCCL_WARN(BOOT, "rank %u: ranks %s did not connect within HCCL_CONNECT_TIMEOUT (each rank connects "
                      "to the lower ranks in order: one of them may be waiting for a lower rank that failed)",
                      rank, missing);
        res = a;
        goto fail;
    }
    hccl_free(got);
    q_settle(q, stash, ident->secret);
    hccl_free(q);
    return HCCL_SUCCESS;
fail:
    /* For the ranks still waiting for this one: those of this process look at the list,
     * those of other processes get the report on their listener. */
    {
        const char *why = hccl_log_warn_seq() != warn_seq ? hccl_log_last_warn() : hccl_result_str(res);
        char reason[400];
        snprintf(reason, sizeof reason, "%s", why);
        hccl_boot_rank_failed(ident, rank, res, reason);
        q_free(q); /* the descriptors first: the report needs one (EMFILE) */
        for (uint32_t i = 0; i < nranks * HCCL_BOOT_MAX_SOCKS; i++)
            if (fds[i] >= 0) {
                close(fds[i]);
                fds[i] = -1;
            }
        if (res != HCCL_E_TIMEOUT) hccl_boot_mesh_report(ident, nranks, table, rank, rank, res, reason); /* else it waited */
    }
fail_peer:
    hccl_free(got);
    q_free(q);
    hccl_free(q);
    for (uint32_t i = 0; i < nranks * HCCL_BOOT_MAX_SOCKS; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
    return res;
}

int hccl_boot_mesh_heard(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t rank,
                                uint32_t nranks, uint64_t wait_ns, HcclResult *res, char *why, size_t len)
{
    accept_q *q = hccl_calloc(1, sizeof *q);
    if (!q) return 0;
    uint64_t until = hccl_now_ns() + wait_ns;
    int found = 0, fd;
    conn_open o;
    hccl_boot_peer p;
    boot_failed f;
    while (!found && accept_open(listen_fd, q, until, &fd, &o, &p, &f) == HCCL_SUCCESS) {
        if (o.kind == KIND_MESH_FAILED && o.secret == ident->secret && o.id == ident->id && o.a == nranks &&
            o.b < nranks && o.b != rank) {
            HcclResult r = mesh_heard(&o, &p, &f, why, len);
            if (res) *res = r;
            found = 1;
        } else if (o.kind == KIND_HELLO && o.secret == ident->secret && stash_put(stash, fd, &o, &p)) {
            continue;
        }
        close(fd);
    }
    q_settle(q, stash, ident->secret);
    hccl_free(q);
    return found;
}
