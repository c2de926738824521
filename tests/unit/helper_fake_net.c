/*
 * helper_fake_net.c - threads-as-ranks rendezvous network for algorithm tests.
 *
 * Matching: every ordered pair (src, dst) has a FIFO of posted sends and a FIFO of
 * posted receives. Posting a send matches the head of the receive FIFO if there is
 * one (and a receive the head of the send FIFO); otherwise it is queued. A match
 * copies the bytes from the sender's buffer straight into the receiver's buffer,
 * under the world lock, and completes both sides; nothing is buffered, so a send
 * is complete only when its receive has been posted (strict rendezvous).
 *
 * exchange() posts all of its transfers, then waits until all of them completed.
 * A waiting rank declares a deadlock when no rank is running and every unfinished
 * rank waits on incomplete transfers, or when its wait passes the timeout; the world
 * is then aborted, every rank's exchange fails (HCCL_E_TIMEOUT) and withdraws its
 * unmatched descriptors, so a broken schedule fails a test instead of hanging it.
 *
 * Not reentrant: one fake_net_run at a time (the scratch buffers are a static pool).
 */
#include "helper_fake_net.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ST_RUNNING = 0, ST_WAITING, ST_FINISHED };

typedef struct fake_node {
    struct fake_node *next;
    void *buf;
    size_t bytes;
    uint32_t owner;
    int done;
    HcclResult res;
} fake_node;

typedef struct fake_queue {
    fake_node *head, *tail;
} fake_queue;

typedef struct fake_world {
    pthread_mutex_t mu;
    pthread_cond_t *cv; /* one per rank: a completion wakes only its owner */
    uint32_t n;
    fake_queue *sendq, *recvq; /* index src * n + dst */
    int *state;
    uint32_t *pending;
    int aborted;
    fake_net_stats stats;
    /* slot_gather: [parity][rank] slots, the call each holds and its size; slot_wait[r]:
     * rank r waits in slot_gather (counted in pending[r] until the last post of its call) */
    unsigned char *slots;
    uint64_t *slot_seq;
    size_t *slot_bytes;
    unsigned char *slot_wait;
} fake_world;

typedef struct fake_rank {
    hccl_net net; /* first member: exchange() casts back */
    fake_world *w;
    uint32_t rank;
    fake_rank_fn fn;
    void *arg;
    hccl_algo_ctx ctx;
    HcclResult result;
    uint64_t slot_calls;
} fake_rank;

static double timeout_s = 10.0;

void fake_net_set_timeout(double seconds) { timeout_s = seconds; }

static void q_push(fake_queue *q, fake_node *x)
{
    x->next = NULL;
    if (q->tail) q->tail->next = x;
    else q->head = x;
    q->tail = x;
}

static fake_node *q_pop(fake_queue *q)
{
    fake_node *x = q->head;
    if (x) {
        q->head = x->next;
        if (!q->head) q->tail = NULL;
    }
    return x;
}

static void q_remove(fake_queue *q, fake_node *x)
{
    fake_node *prev = NULL;
    for (fake_node *c = q->head; c; prev = c, c = c->next) {
        if (c != x) continue;
        if (prev) prev->next = c->next;
        else q->head = c->next;
        if (q->tail == c) q->tail = prev;
        return;
    }
}

static void complete(fake_world *w, fake_node *x, HcclResult res)
{
    x->done = 1;
    x->res = res;
    if (--w->pending[x->owner] == 0) pthread_cond_signal(&w->cv[x->owner]);
}

static void wake_all(fake_world *w)
{
    for (uint32_t i = 0; i < w->n; i++) pthread_cond_broadcast(&w->cv[i]);
}

static void match(fake_world *w, fake_node *s, fake_node *r)
{
    HcclResult res = HCCL_SUCCESS;
    if (s->bytes != r->bytes) {
        res = HCCL_E_PARA;
    } else {
        if (s->bytes) memcpy(r->buf, s->buf, s->bytes);
        w->stats.msgs++;
        w->stats.bytes += s->bytes;
    }
    complete(w, s, res);
    complete(w, r, res);
}

/* Every unfinished rank waits on transfers and none is running. */
static int deadlocked(const fake_world *w)
{
    int waiting = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        if (w->state[i] == ST_RUNNING) return 0;
        if (w->state[i] == ST_WAITING) {
            if (w->pending[i] == 0) return 0;
            waiting = 1;
        }
    }
    return waiting;
}

static HcclResult fake_exchange(hccl_net *net, hccl_xfer *xfers, int n)
{
    fake_rank *me = (fake_rank *)net;
    fake_world *w = me->w;
    if (n < 0 || (n > 0 && !xfers)) return HCCL_E_PARA;
    for (int i = 0; i < n; i++) {
        if (xfers[i].peer >= w->n || (xfers[i].bytes && !xfers[i].buf) ||
            (xfers[i].dir != HCCL_XFER_SEND && xfers[i].dir != HCCL_XFER_RECV))
            return HCCL_E_PARA;
    }
    fake_node *nodes = calloc((size_t)n + 1, sizeof(*nodes));
    if (!nodes) return HCCL_E_MEMORY;

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)timeout_s;
    deadline.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }

    pthread_mutex_lock(&w->mu);
    w->stats.exchanges++;
    if (w->aborted) {
        pthread_mutex_unlock(&w->mu);
        free(nodes);
        return HCCL_E_TIMEOUT;
    }
    for (int i = 0; i < n; i++) {
        fake_node *x = &nodes[i];
        x->buf = xfers[i].buf;
        x->bytes = xfers[i].bytes;
        x->owner = me->rank;
        w->pending[me->rank]++;
        uint32_t p = xfers[i].peer;
        if (xfers[i].dir == HCCL_XFER_SEND) {
            fake_queue *rq = &w->recvq[(size_t)me->rank * w->n + p];
            if (rq->head) match(w, x, q_pop(rq));
            else q_push(&w->sendq[(size_t)me->rank * w->n + p], x);
        } else {
            fake_queue *sq = &w->sendq[(size_t)p * w->n + me->rank];
            if (sq->head) match(w, q_pop(sq), x);
            else q_push(&w->recvq[(size_t)p * w->n + me->rank], x);
        }
    }
    w->state[me->rank] = ST_WAITING;
    while (w->pending[me->rank] > 0 && !w->aborted) {
        if (deadlocked(w)) {
            w->aborted = 1;
            w->stats.deadlock = 1;
            wake_all(w);
            break;
        }
        if (pthread_cond_timedwait(&w->cv[me->rank], &w->mu, &deadline) == ETIMEDOUT &&
            w->pending[me->rank] > 0) {
            w->aborted = 1;
            w->stats.deadlock = 1;
            wake_all(w);
            break;
        }
    }
    HcclResult res = HCCL_SUCCESS;
    for (int i = 0; i < n; i++) {
        fake_node *x = &nodes[i];
        if (!x->done) {
            uint32_t p = xfers[i].peer;
            if (xfers[i].dir == HCCL_XFER_SEND) q_remove(&w->sendq[(size_t)me->rank * w->n + p], x);
            else q_remove(&w->recvq[(size_t)p * w->n + me->rank], x);
            complete(w, x, HCCL_E_TIMEOUT);
        }
        if (res == HCCL_SUCCESS) res = x->res;
    }
    w->state[me->rank] = ST_RUNNING;
    pthread_mutex_unlock(&w->mu);
    free(nodes);
    return res;
}

#define FAKE_SLOT_STRIDE ((size_t)HCCL_NET_SLOT_BYTES + 64)

/* hccl_net.slot_gather: post into the world's slots, wait (counted as a pending
 * transfer, for the deadlock check) until every rank posted the same call. */
static HcclResult fake_slot_gather(hccl_net *net, const void *mine, size_t bytes, const unsigned char **first,
                                   size_t *stride)
{
    fake_rank *me = (fake_rank *)net;
    fake_world *w = me->w;
    if (bytes > HCCL_NET_SLOT_BYTES || (bytes && !mine)) return HCCL_E_PARA;
    uint64_t seq = ++me->slot_calls;
    size_t row = (size_t)(seq & 1) * w->n;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)timeout_s + 1;
    pthread_mutex_lock(&w->mu);
    w->stats.exchanges++;
    if (bytes) memcpy(w->slots + (row + me->rank) * FAKE_SLOT_STRIDE, mine, bytes);
    w->slot_seq[row + me->rank] = seq;
    w->slot_bytes[row + me->rank] = bytes;
    uint32_t posted = 0;
    for (uint32_t j = 0; j < w->n; j++) posted += w->slot_seq[row + j] == seq;
    if (posted == w->n) { /* the last post of this call completes every waiter */
        for (uint32_t j = 0; j < w->n; j++)
            if (w->slot_wait[j]) {
                w->slot_wait[j] = 0;
                if (--w->pending[j] == 0) pthread_cond_signal(&w->cv[j]);
            }
    } else {
        w->slot_wait[me->rank] = 1;
        w->pending[me->rank]++;
        w->state[me->rank] = ST_WAITING;
        while (w->slot_wait[me->rank] && !w->aborted) {
            if (deadlocked(w) ||
                pthread_cond_timedwait(&w->cv[me->rank], &w->mu, &deadline) == ETIMEDOUT) {
                w->aborted = 1;
                w->stats.deadlock = 1;
                wake_all(w);
            }
        }
        if (w->slot_wait[me->rank]) {
            w->slot_wait[me->rank] = 0;
            w->pending[me->rank]--;
        }
        w->state[me->rank] = ST_RUNNING;
    }
    HcclResult res = w->aborted ? HCCL_E_TIMEOUT : HCCL_SUCCESS;
    for (uint32_t j = 0; j < w->n && res == HCCL_SUCCESS; j++)
        if (w->slot_bytes[row + j] != bytes) res = HCCL_E_PARA;
    pthread_mutex_unlock(&w->mu);
    *first = w->slots + row * FAKE_SLOT_STRIDE;
    *stride = FAKE_SLOT_STRIDE;
    return res;
}

static int slots_mode;

void fake_net_set_slots(int on) { slots_mode = on; }

/* Scratch pool, kept across runs so that tests do not pay for 4 MiB per rank each time. */
static void **scratch_pool;
static uint32_t scratch_pool_n;

static void *scratch_for(uint32_t rank)
{
    if (rank >= scratch_pool_n) {
        uint32_t n = rank + 1;
        void **p = realloc(scratch_pool, n * sizeof(*p));
        if (!p) return NULL;
        for (uint32_t i = scratch_pool_n; i < n; i++) p[i] = NULL;
        scratch_pool = p;
        scratch_pool_n = n;
    }
    if (!scratch_pool[rank]) {
        scratch_pool[rank] = aligned_alloc(64, HCCL_ALGO_SCRATCH_BYTES);
        if (scratch_pool[rank]) memset(scratch_pool[rank], 0xa5, HCCL_ALGO_SCRATCH_BYTES);
    }
    return scratch_pool[rank];
}

static int direct_mode;

void fake_net_set_direct(int mode) { direct_mode = mode; }

static const uint32_t *fake_host_of;
static uint32_t fake_nhosts;

void fake_net_set_hosts(const uint32_t *host_of, uint32_t nhosts)
{
    fake_host_of = host_of;
    fake_nhosts = host_of ? nhosts : 0;
}

static HcclResult fake_peer_copy(hccl_net *net, uint32_t peer, int write, void *local, uint64_t remote, size_t bytes)
{
    (void)net;
    (void)peer;
    if (write) memcpy((void *)(uintptr_t)remote, local, bytes);
    else memcpy(local, (const void *)(uintptr_t)remote, bytes);
    return HCCL_SUCCESS;
}

static void *fake_peer_ptr(hccl_net *net, uint32_t peer, uint64_t remote, size_t bytes)
{
    (void)net;
    (void)peer;
    (void)bytes;
    return (void *)(uintptr_t)remote;
}

static void *rank_main(void *p)
{
    fake_rank *me = p;
    fake_world *w = me->w;
    me->result = me->fn(&me->ctx, me->arg);
    pthread_mutex_lock(&w->mu);
    w->state[me->rank] = ST_FINISHED;
    wake_all(w);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

HcclResult fake_net_run(uint32_t nranks, fake_rank_fn fn, void *arg, fake_net_stats *stats)
{
    if (nranks == 0 || !fn) return HCCL_E_PARA;
    HcclResult res = HCCL_E_MEMORY;
    fake_world w;
    memset(&w, 0, sizeof(w));
    w.n = nranks;
    w.sendq = calloc((size_t)nranks * nranks, sizeof(fake_queue));
    w.recvq = calloc((size_t)nranks * nranks, sizeof(fake_queue));
    w.state = calloc(nranks, sizeof(int));
    w.pending = calloc(nranks, sizeof(uint32_t));
    w.cv = calloc(nranks, sizeof(pthread_cond_t));
    w.slots = calloc(2 * (size_t)nranks, FAKE_SLOT_STRIDE);
    w.slot_seq = calloc(2 * (size_t)nranks, sizeof(uint64_t));
    w.slot_bytes = calloc(2 * (size_t)nranks, sizeof(size_t));
    w.slot_wait = calloc(nranks, 1);
    fake_rank *ranks = calloc(nranks, sizeof(fake_rank));
    pthread_t *th = calloc(nranks, sizeof(pthread_t));
    if (!w.sendq || !w.recvq || !w.state || !w.pending || !w.cv || !w.slots || !w.slot_seq || !w.slot_bytes ||
        !w.slot_wait || !ranks || !th)
        goto out;
    for (uint32_t r = 0; r < nranks; r++)
        if (!scratch_for(r)) goto out;

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (uint32_t r = 0; r < nranks; r++) pthread_cond_init(&w.cv[r], &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w.mu, NULL);

    uint32_t started = 0;
    for (uint32_t r = 0; r < nranks; r++) {
        fake_rank *k = &ranks[r];
        k->net.exchange = fake_exchange;
        if (direct_mode) k->net.peer_copy = fake_peer_copy;
        if (direct_mode == 1) k->net.peer_ptr = fake_peer_ptr;
        if (slots_mode) k->net.slot_gather = fake_slot_gather;
        k->ctx.direct = direct_mode != 0 && !fake_host_of;
        k->ctx.direct_local = direct_mode != 0;
        k->ctx.host_of = fake_host_of;
        k->ctx.nhosts = fake_nhosts;
        k->w = &w;
        k->rank = r;
        k->fn = fn;
        k->arg = arg;
        k->ctx.rank = r;
        k->ctx.nranks = nranks;
        k->ctx.net = &k->net;
        k->ctx.scratch = scratch_pool[r];
        k->ctx.scratch_bytes = HCCL_ALGO_SCRATCH_BYTES;
        k->result = HCCL_E_INTERNAL;
    }
    for (; started < nranks; started++) {
        if (pthread_create(&th[started], NULL, rank_main, &ranks[started]) != 0) break;
    }
    if (started < nranks) {
        /* Ranks that never started count as finished, so the others fail fast. */
        pthread_mutex_lock(&w.mu);
        for (uint32_t r = started; r < nranks; r++) w.state[r] = ST_FINISHED;
        wake_all(&w);
        pthread_mutex_unlock(&w.mu);
    }
    for (uint32_t r = 0; r < started; r++) pthread_join(th[r], NULL);
    res = started < nranks ? HCCL_E_INTERNAL : HCCL_SUCCESS;
    for (uint32_t r = 0; r < started && res == HCCL_SUCCESS; r++) res = ranks[r].result;
    if (res == HCCL_SUCCESS && w.stats.deadlock) res = HCCL_E_TIMEOUT;
    for (uint32_t r = 0; r < nranks; r++) pthread_cond_destroy(&w.cv[r]);
    pthread_mutex_destroy(&w.mu);
    if (stats) *stats = w.stats;
out:
    free(w.sendq);
    free(w.recvq);
    free(w.state);
    free(w.pending);
    free(w.cv);
    free(w.slots);
    free(w.slot_seq);
    free(w.slot_bytes);
    free(w.slot_wait);
    free(ranks);
    free(th);
    return res;
}
