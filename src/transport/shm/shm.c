/*
 * shm.c - the shared-memory transport: two ranks of one host (processes, or threads
 * of one process) exchange byte streams through two single-producer/single-consumer
 * rings in one shared segment, and sleep on FIFO "doorbells" when a ring is empty or
 * full.
 *
 * Segment (one per connection; side 0 is the lower rank, which creates it):
 *
 *   0      hdr    magic, version, ring_bytes, closed[2]          (read-mostly)
 *   128    ring 0 control: side 0 -> side 1
 *            +0    head     bytes produced   (written by the producer only)
 *            +8    inline   a copy of the last small send, in head's line (below)
 *            +128  tail     bytes consumed   (written by the consumer only)
 *            +256  rd_wait  consumer sleeps, wants "data arrived"
 *                  drained  where the consumer last found the ring empty
 *            +384  wr_wait  producer sleeps, wants "space freed"
 *            +512  rewound  where the producer last skipped to the ring's start
 *   768    ring 1 control: side 1 -> side 0 (same layout)
 *   D      ring 0 data, ring_bytes (a power of two), D = 4096 - 32 (below)
 *   D+R    ring 1 data, ring_bytes
 *
 * head and tail count bytes since the start (64-bit, never wrap); the data of byte i
 * lives at i & (R-1). Each counter has its own 128-byte block (the adjacent-line
 * prefetcher pairs 64-byte lines), so producer and consumer never write one line.
 * The producer copies into the ring and then publishes head (release, in fact
 * seq_cst for the doorbell protocol below); the consumer reads head with acquire,
 * copies out and publishes tail the same way.
 * Large transfers publish every CHUNK bytes, so the peer starts copying early.
 * The data start 32 bytes before a page: the engine's messages are a 32-byte header
 * and a payload, so a message at ring offset 0 (most large ones: see "Rewinding") has
 * its payload on a page boundary, as the buffers it comes from and goes to mostly are.
 * With the payload 32 bytes after its page-aligned source, each store of the copy
 * 4 KiB-aliases the loads that follow it: with the rings on a page boundary, the
 * sends of a one-round 512 KiB AlltoAll (4 ranks on 2 cores) took 2.3x as long as the
 * same copies from a source 64 bytes into a page, and the whole call 128-134 us
 * against 78-84 us now (docs/performance.md, 2026-12-07).
 * Each side also keeps the other's counter as it last read it, and reads the shared
 * one again only when that copy does not cover the transfer: a consumer behind its
 * producer (an eager Broadcast's reader, whose root runs ahead) then takes
 * head's line once per many messages instead of pulling it from the producer's core
 * after every one (a transfer between cores took 125 ns on the reference machine).
 *
 * Rewinding. Small messages walk the ring a few bytes at a time, so after a large
 * transfer they land on lines nobody has touched for a long time (out of both
 * caches), and a 1 MiB ring takes thousands of small messages to come round to warm
 * lines again; messages of tens of KiB walk all of it in a few dozen sends, into
 * lines no cache holds. So a consumer that empties the ring at offset REWIND_AT or
 * beyond says so: it stores its tail in drained (release; in rd_wait's line, which
 * the producer reads after every small send anyway, so that the look below costs a
 * transfer between cores only when the consumer has just written it). A producer
 * about to send at most a quarter of the ring at such an offset that finds drained
 * equal to its head knows the ring is empty, and skips the rest of it: it stores the
 * position in rewound, then copies to offset 0 and publishes head as usual (release
 * orders rewound before head). A consumer that sees bytes (head != tail) at a tail
 * that is not at offset 0 and equals rewound moves its tail to the next multiple of
 * the ring size first. rewound only grows and is only written when the ring is
 * empty, so an older value is always below the consumer's tail. Messages that the
 * consumer keeps up with thus stay in the ring's first REWIND_AT bytes and one
 * message, which stay in cache.
 * (Reading tail instead, at most once per 4 KiB sent, cost a crowded host's eager
 * Broadcast, whose root runs ahead of its readers, 13-25% at 4-8 KiB.)
 *
 * Inline copies. A consumer waiting for a small message polls head's line, and then
 * fetches the ring line holding the bytes: two transfers between cores in a row. A
 * send of at most INLINE_MAX bytes published at once also copies them into the rest
 * of head's 128-byte block, tagged with their stream position and length, under a
 * sequence lock:
 *
 *   producer: tag = WRITING; words; tag = pos << 8 | length; head = pos + length
 *   consumer: head (acquire); tag; words; tag again: the copy is good when the tag
 *             is (tail << 8 | head - tail) both times
 *
 * so the consumer's read of head brings the message with it (up to 48 bytes, i.e. a
 * header and 16 bytes of payload, share head's 64-byte line). The bytes are in the
 * ring as well: a copy that is not good (being rewritten, or of another message) is
 * simply not used. Every word is accessed atomically (relaxed, ordered by fences).
 * Only a send that follows a receive on the connection is copied inline: an answer,
 * which its consumer is likely waiting for. A producer that sends again and again
 * without hearing back (an eager Broadcast's root, a Reduce's leaves) runs ahead of
 * its consumer, who then finds several messages and reads the ring; the copies cost
 * such a root 13-15% of its time on a crowded host.
 *
 * Doorbells: each side owns two FIFOs, "data" (its incoming ring got bytes) and
 * "space" (its outgoing ring got room). wait_fd returns the one for the direction
 * asked, with POLLIN, after arming it:
 *
 *   sleeper (wait_fd)                     peer (send or recv that changed the ring)
 *   drain own FIFO (non-blocking read)    store head (or tail), seq_cst
 *   store want = 1, seq_cst               load want, seq_cst; if set and
 *   load head (or tail), seq_cst              exchange(want, 0) == 1:
 *   ready -> ring own FIFO                    write 1 byte to the sleeper's FIFO
 *
 * Sequentially consistent store-then-load on both sides (Dekker) makes it impossible
 * for both to miss each other, so a sleeper is always woken; the exchange makes one
 * arm cost at most one write(2). (seq_cst operations rather than fences: the same
 * instructions on x86, and ThreadSanitizer understands them.)
 * Arming happens only in wait_fd, i.e. only when the caller is about to sleep: while
 * the caller spins, send/recv never make a system call. Callers must call wait_fd
 * before every sleep (core/net.c does); the flag is not re-armed by send/recv.
 *
 * Lazy wake-ups. The seq_cst store of head (or tail) waits until this core owns the
 * lines it has just written, a stall on every small message. Transfers of at most
 * LAZY_MAX bytes therefore store the counter with release only and leave the
 * peer's side of the table above to flush (transport.h), which callers run before
 * they wait for anything else and before they return: a seq_cst fence, then the
 * same look at want. The fence orders the earlier store before that load as the
 * seq_cst store did, so the sleeper is still always woken, only a little later.
 *
 * Handshake over the caller's connected socket (blocking, with the deadline; the
 * messages are in shm.h):
 *   side 1: send {magic, 0}: ready (so nothing is created while side 1 still sets up
 *           its pairs with lower ranks)
 *   side 0: on it, create the segment without a name (an O_TMPFILE in /dev/shm, else
 *           a memfd), reserve its pages, map it, put a random 64-bit token in its
 *           header, and make each of the four FIFOs with mkfifo, open and unlink at
 *           once (a name exists for those three system calls, never across a wait);
 *           send a hello by descriptor {magic, version, ring_bytes, seg_bytes, name
 *           (an identity only), pid, the five descriptor numbers, token}
 *   side 1: open /proc/<pid>/fd/<n> for the five (stat first: a regular file of
 *           seg_bytes, FIFOs), check the segment's token (a pid of another pid
 *           namespace is another process), map, check the header, send {magic, status}
 *   side 0: on the ack close its descriptor of the segment (the mappings keep it).
 *   A crash at any point leaves nothing in /dev/shm.
 * Where side 1 cannot open them (/proc denies it: hidepid, a creator that is not
 * dumpable; the token does not match; HCCL_SHM_BY_NAME=1) it answers HCCL_SHM_ACK_NAMES
 * instead, and the pair runs the handshake by name (version 4's); a side 0 with
 * HCCL_SHM_BY_NAME=1 starts with it:
 *   side 0: drop what it made; create /dev/shm/hccl-shm-<pid>-<64 random bits> and
 *           <name>.d0 .s0 .d1 .s1 (O_EXCL, mode 0600; the segment reserved and mapped
 *           as an O_TMPFILE that gets its name only then, where the kernel can), open
 *           them, send a hello by name (pid 0)
 *   side 1: open them, unlink them all (side 0 may have died since its hello), map
 *           the segment, check the header, send {magic, status}
 *   side 0: on the ack (or any failure) unlink the segment and the FIFOs at once.
 *   A crash then leaves names only between side 0's naming of the segment and side
 *   1's opening of it. A side 0 that cannot create its part sends a hello with no
 *   name, answered like any other, so both fall back to TCP with the stream in step.
 * Both sides open the FIFOs O_RDWR|O_NONBLOCK: opening never blocks, writes never
 * raise SIGPIPE, and a dead peer never makes a FIFO permanently readable.
 *
 * Closing (or shutdown, on abort) sets closed[side] and rings both of the peer's
 * doorbells; the peer's recv then returns the bytes left in the ring and after them
 * HCCL_E_TCP_TRANSFER, its send fails at once. A peer that dies without closing is detected by the caller
 * through the TCP connection; nothing here ever blocks.
 */
#include "transport/shm/shm.h"

#include "boot/socket.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHM_MAGIC HCCL_SHM_MAGIC
#define LINE 128
#define DATA_OFFSET HCCL_SHM_DATA_OFFSET
#define CHUNK ((uint64_t)256 << 10) /* publish head/tail at least this often (and every ring/4) */
#define NAME_LEN 48
#define LAZY_MAX ((uint64_t)16 << 10) /* transfers up to this size publish lazily */
#define REWIND_AT ((uint64_t)64 << 10) /* small sends from this ring offset on may rewind */

HCCL_PARAM_INT_IN(shm_ring_bytes, "HCCL_SHM_RING_BYTES", 1 << 20, HCCL_SHM_RING_MIN, HCCL_SHM_RING_MAX, HCCL_PARAM_CLAMP)
HCCL_PARAM_INT(shm_by_name, "HCCL_SHM_BY_NAME", 0)

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the shared segment needs address-free (lock-free) atomics");

#define INLINE_WORDS 14
#define INLINE_MAX (INLINE_WORDS * 8) /* head's 128 bytes: a message header and 80 bytes */
#define IN_WRITING UINT64_MAX

typedef struct ring_ctl {
    _Alignas(LINE) _Atomic uint64_t head;
    _Atomic uint64_t in_tag; /* (stream position << 8) | length; IN_WRITING while rewritten */
    _Atomic uint64_t in_word[INLINE_WORDS];
    _Alignas(LINE) _Atomic uint64_t tail;
    _Alignas(LINE) _Atomic uint32_t rd_wait;
    _Atomic uint64_t drained; /* the consumer's tail when it last emptied the ring (see "Rewinding") */
    _Alignas(LINE) _Atomic uint32_t wr_wait;
    _Alignas(LINE) _Atomic uint64_t rewound; /* position the producer last skipped from */
} ring_ctl;

typedef struct seg_hdr {
    _Alignas(LINE) uint32_t magic;
    uint32_t version;
    uint64_t ring_bytes;
    _Atomic uint32_t closed[2];
    uint64_t token; /* random; a hello by descriptor names it (see the handshake) */
    ring_ctl ring[2];
} seg_hdr;
_Static_assert(sizeof(ring_ctl) == 5 * LINE, "ring control layout");
_Static_assert(sizeof(seg_hdr) <= DATA_OFFSET, "segment header layout");

/* Handshake messages (host byte order: both ends are on one host): see shm.h. */
typedef hccl_shm_hello shm_hello;
_Static_assert(sizeof(shm_hello) == HCCL_SHM_HELLO_BYTES, "wire layout");
_Static_assert(NAME_LEN == sizeof(((shm_hello *)0)->name), "wire layout");

typedef struct shm_ack {
    uint32_t magic;
    int32_t status; /* HcclResult of the mapping side, or HCCL_SHM_ACK_NAMES */
} shm_ack;
_Static_assert(sizeof(shm_ack) == 8, "wire layout");

enum { BELL_DATA = 0, BELL_SPACE = 1 };

typedef struct shm_conn {
    hccl_conn base;
    seg_hdr *hdr;
    size_t seg_bytes;
    int side; /* 0 = creator (lower rank) */
    uint64_t size, mask;
    uint64_t chunk; /* publication step: min(CHUNK, size / 4) */
    ring_ctl *tx, *rx;
    unsigned char *txdata, *rxdata;
    uint64_t tx_head; /* our copy of tx->head (we are its only writer) */
    uint64_t tx_tail; /* tx->tail when we last read it (it only grows) */
    uint64_t rx_tail; /* our copy of rx->tail */
    uint64_t rx_head; /* rx->head when we last read it (it only grows) */
    uint64_t rx_drained; /* the last value we stored in rx->drained */
    int lazy_head, lazy_tail; /* published lazily, want not looked at yet */
    int rx_since_tx; /* we received since our last send (see "Inline copies") */
    int bell[2][2];   /* [side][BELL_DATA/BELL_SPACE], each opened O_RDWR */
    _Atomic int shut; /* shutdown() was called: our own send/recv fail too */
    void *tok_tx, *tok_rx; /* ThreadSanitizer: one token per ring, shared by both sides */
} shm_conn;

/*
 * ThreadSanitizer tracks memory by virtual address, and the two sides of a
 * connection map the segment at different addresses even inside one process, so it
 * cannot see that publishing head/tail orders the producer's earlier writes before
 * the consumer's later reads (for the direct algorithms: a peer's buffer is read
 * after its address arrived through the ring). Under TSan, publish releases and
 * observe acquires a token that both sides derive from the segment name and the
 * ring (hccl_shm_token); elsewhere these compile to nothing.
 */
#define TSAN_RELEASE(tok) HCCL_SHM_TSAN_RELEASE(tok)
#define TSAN_ACQUIRE(tok) HCCL_SHM_TSAN_ACQUIRE(tok)

#ifdef __SANITIZE_THREAD__
static char tsan_tokens[4096];
void *hccl_shm_token(const char *name, int k)
{
    uint64_t h = 14695981039346656037ull ^ (uint64_t)k;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return &tsan_tokens[h % sizeof tsan_tokens];
}
#else
void *hccl_shm_token(const char *name, int k)
{
    (void)name;
    (void)k;
    return NULL;
}
#endif

/* ---------------------------------------------------------------- doorbells */

static void bell_ring(int fd)
{
    char b = 1;
    /* EAGAIN means the FIFO is full, i.e. already readable: nothing to do. */
    while (write(fd, &b, 1) < 0 && errno == EINTR) {
    }
}

static void bell_drain(int fd)
{
    char buf[64];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n == (ssize_t)sizeof buf || (n < 0 && errno == EINTR)) continue;
        return;
    }
}

/* Wake the peer if it armed `want` (after a seq_cst store or fence of the counter). */
static inline void wake_if_wanted(_Atomic uint32_t *want, int fd)
{
    if (atomic_load_explicit(want, memory_order_seq_cst) && atomic_exchange_explicit(want, 0, memory_order_relaxed))
        bell_ring(fd);
}

/* Publish a new head (or tail), then wake the peer if it armed `want`. */
static inline void publish(_Atomic uint64_t *counter, uint64_t value, _Atomic uint32_t *want, int fd, void *tok)
{
    TSAN_RELEASE(tok);
    atomic_store_explicit(counter, value, memory_order_seq_cst);
    wake_if_wanted(want, fd);
}

/* Publish without looking at `want` yet (see "Lazy wake-ups" above). */
static inline void publish_lazy(_Atomic uint64_t *counter, uint64_t value, void *tok)
{
    TSAN_RELEASE(tok);
    atomic_store_explicit(counter, value, memory_order_release);
}

/* The inline copy's sequence lock (see "Inline copies"). ThreadSanitizer does not
 * model fences: there the words are written with release and read with acquire,
 * which it understands (every access is atomic, so there is no race to report). */
#ifdef __SANITIZE_THREAD__
#define IN_WORD_STORE memory_order_release
#define IN_WORD_LOAD memory_order_acquire
#define IN_FENCE_REL() ((void)0)
#define IN_FENCE_ACQ() ((void)0)
#else
#define IN_WORD_STORE memory_order_relaxed
#define IN_WORD_LOAD memory_order_relaxed
#define IN_FENCE_REL() atomic_thread_fence(memory_order_release)
#define IN_FENCE_ACQ() atomic_thread_fence(memory_order_acquire)
#endif

/* Producer: copy the len (<= INLINE_MAX) bytes of iov at stream position pos. */
static void inline_put(shm_conn *s, uint64_t pos, const struct iovec *iov, int iovcnt, size_t len)
{
    uint64_t w[INLINE_WORDS];
    w[(len - 1) / 8] = 0; /* the last word's bytes past len (the others are all copied) */
    unsigned char *b = (unsigned char *)w;
    for (int k = 0; k < iovcnt; k++) {
        if (iov[k].iov_len) memcpy(b, iov[k].iov_base, iov[k].iov_len);
        b += iov[k].iov_len;
    }
    ring_ctl *r = s->tx;
    atomic_store_explicit(&r->in_tag, IN_WRITING, memory_order_relaxed);
    IN_FENCE_REL();
    for (size_t k = 0; k < (len + 7) / 8; k++) atomic_store_explicit(&r->in_word[k], w[k], IN_WORD_STORE);
    atomic_store_explicit(&r->in_tag, (pos << 8) | len, memory_order_release);
}

/* Consumer: the avail (<= INLINE_MAX) bytes at stream position tail (ours), from the
 * inline copy into w; 0 when the copy is not of exactly them, or was being rewritten. */
static int inline_get(shm_conn *s, uint64_t tail, uint64_t avail, uint64_t w[INLINE_WORDS])
{
    ring_ctl *r = s->rx;
    uint64_t v = atomic_load_explicit(&r->in_tag, memory_order_acquire);
    if (v != ((tail << 8) | avail)) return 0; /* another message's, or IN_WRITING */
    for (size_t k = 0; k < (avail + 7) / 8; k++) w[k] = atomic_load_explicit(&r->in_word[k], IN_WORD_LOAD);
    IN_FENCE_ACQ();
    return atomic_load_explicit(&r->in_tag, memory_order_relaxed) == v;
}

static inline int peer_closed(const shm_conn *s)
{
    return atomic_load_explicit(&s->hdr->closed[1 - s->side], memory_order_acquire) != 0;
}

/* ---------------------------------------------------------------- data path */

static inline void ring_put(shm_conn *s, uint64_t pos, const unsigned char *src, size_t n)
{
    size_t at = (size_t)(pos & s->mask);
    size_t first = HCCL_MIN(n, (size_t)s->size - at);
    hccl_copy_near(s->txdata + at, src, first);
    if (n > first) hccl_copy_near(s->txdata, src + first, n - first);
}

static inline void ring_get(shm_conn *s, uint64_t pos, unsigned char *dst, size_t n)
{
    size_t at = (size_t)(pos & s->mask);
    size_t first = HCCL_MIN(n, (size_t)s->size - at);
    hccl_copy_near(dst, s->rxdata + at, first);
    if (n > first) hccl_copy_near(dst + first, s->rxdata, n - first);
}

/* Where a rewind resumes: the first stream position at ring offset 0 after pos (the
 * producer's skip and the consumer's must agree; see "Rewinding"). */
static inline uint64_t next_lap(const shm_conn *s, uint64_t pos) { return (pos | s->mask) + 1; }

static HcclResult shm_send(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    shm_conn *s = (shm_conn *)c;
    *moved = 0;
    if (peer_closed(s) || atomic_load_explicit(&s->shut, memory_order_relaxed)) {
        HCCL_INFO(SHM, "send to rank %u: peer closed the connection", c->peer);
        return HCCL_E_TCP_TRANSFER;
    }
    uint64_t head = s->tx_head, done = 0, total = hccl_iov_bytes(iov, iovcnt);
    int lazy = total <= LAZY_MAX;
    uint64_t tail = s->tx_tail;
    if (total && total <= s->size / 4 && (head & s->mask) >= REWIND_AT &&
        atomic_load_explicit(&s->tx->drained, memory_order_acquire) == head) { /* empty: "Rewinding" */
        TSAN_ACQUIRE(s->tok_tx);
        atomic_store_explicit(&s->tx->rewound, head, memory_order_relaxed);
        tail = head;
        head = next_lap(s, head);
    }
    /* The cached tail is enough while it leaves room for everything: then the
     * consumer's line is not pulled over at all. */
    if (s->size - (head - tail) < HCCL_MIN(total, s->size)) {
        tail = atomic_load_explicit(&s->tx->tail, memory_order_acquire);
        TSAN_ACQUIRE(s->tok_tx);
    }
    int i = 0;
    size_t off = 0;
    /* One call moves at most one ring's worth, so a caller interleaving several
     * transfers is not held up by one long stream. */
    while (i < iovcnt && done < s->size) {
        uint64_t space = s->size - (head - tail);
        if (space == 0) {
            tail = atomic_load_explicit(&s->tx->tail, memory_order_acquire);
            TSAN_ACQUIRE(s->tok_tx);
            space = s->size - (head - tail);
            if (space == 0) break;
        }
        uint64_t want = HCCL_MIN(HCCL_MIN(space, s->chunk), s->size - done), n = 0;
        while (n < want && i < iovcnt) {
            size_t take = HCCL_MIN(iov[i].iov_len - off, (size_t)(want - n));
            if (take) ring_put(s, head + n, (const unsigned char *)iov[i].iov_base + off, take);
            n += take;
            off += take;
            if (off == iov[i].iov_len) {
                i++;
                off = 0;
            }
        }
        if (n == 0) break;
        if (done == 0 && n == total && total <= INLINE_MAX && s->rx_since_tx)
            inline_put(s, head, iov, iovcnt, (size_t)total);
        head += n;
        done += n;
        if (lazy) {
            publish_lazy(&s->tx->head, head, s->tok_tx);
            s->lazy_head = 1;
        } else {
            publish(&s->tx->head, head, &s->tx->rd_wait, s->bell[1 - s->side][BELL_DATA], s->tok_tx);
        }
    }
    s->tx_head = head;
    s->tx_tail = tail;
    if (done) s->rx_since_tx = 0;
    /* Moving again: a stale arm would only cost the peer a needless write(2). */
    if (done && atomic_load_explicit(&s->tx->wr_wait, memory_order_relaxed))
        atomic_store_explicit(&s->tx->wr_wait, 0, memory_order_relaxed);
    *moved = (size_t)done;
    return HCCL_SUCCESS;
}

/* The consumer's tail once it has seen head: past the producer's skip, if it skipped
 * here (see "Rewinding"; rewound was stored before head, which we read with acquire). */
static inline uint64_t rx_skip(const shm_conn *s, uint64_t head, uint64_t tail)
{
    if (head != tail && (tail & s->mask) && atomic_load_explicit(&s->rx->rewound, memory_order_relaxed) == tail)
        return next_lap(s, tail);
    return tail;
}

static HcclResult shm_recv(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    shm_conn *s = (shm_conn *)c;
    *moved = 0;
    if (atomic_load_explicit(&s->shut, memory_order_relaxed)) return HCCL_E_TCP_TRANSFER;
    uint64_t tail = s->rx_tail, done = 0, total = hccl_iov_bytes(iov, iovcnt);
    int lazy = total <= LAZY_MAX;
    uint64_t head = s->rx_head; /* its bytes were acquired when it was read */
    if (head - tail < total || !total) {
        head = atomic_load_explicit(&s->rx->head, memory_order_acquire);
        TSAN_ACQUIRE(s->tok_rx);
    }
    if (total) tail = rx_skip(s, head, tail);
    int i = 0;
    size_t off = 0;
    while (i < iovcnt && done < s->size) {
        uint64_t avail = head - tail;
        if (avail == 0) {
            head = atomic_load_explicit(&s->rx->head, memory_order_acquire);
            TSAN_ACQUIRE(s->tok_rx);
            tail = rx_skip(s, head, tail);
            avail = head - tail;
            if (avail == 0) break;
        }
        uint64_t want = HCCL_MIN(HCCL_MIN(avail, s->chunk), s->size - done), n = 0;
        uint64_t w[INLINE_WORDS];
        const unsigned char *in =
            done == 0 && avail <= INLINE_MAX && inline_get(s, tail, avail, w) ? (const unsigned char *)w : NULL;
        while (n < want && i < iovcnt) {
            size_t take = HCCL_MIN(iov[i].iov_len - off, (size_t)(want - n));
            if (take && in) memcpy((unsigned char *)iov[i].iov_base + off, in + n, take);
            else if (take) ring_get(s, tail + n, (unsigned char *)iov[i].iov_base + off, take);
            n += take;
            off += take;
            if (off == iov[i].iov_len) {
                i++;
                off = 0;
            }
        }
        if (n == 0) break;
        tail += n;
        done += n;
        if (lazy) {
            publish_lazy(&s->rx->tail, tail, s->tok_rx);
            s->lazy_tail = 1;
        } else {
            publish(&s->rx->tail, tail, &s->rx->wr_wait, s->bell[1 - s->side][BELL_SPACE], s->tok_rx);
        }
    }
    s->rx_tail = tail;
    s->rx_head = head;
    if (done && tail == head && (tail & s->mask) >= REWIND_AT && s->rx_drained != tail) { /* "Rewinding" */
        s->rx_drained = tail;
        TSAN_RELEASE(s->tok_rx);
        atomic_store_explicit(&s->rx->drained, tail, memory_order_release);
    }
    if (done) {
        s->rx_since_tx = 1;
        if (atomic_load_explicit(&s->rx->rd_wait, memory_order_relaxed))
            atomic_store_explicit(&s->rx->rd_wait, 0, memory_order_relaxed);
        *moved = (size_t)done;
        return HCCL_SUCCESS;
    }
    /* Empty. A closed peer published its last head before closed (release), so
     * re-reading head after seeing closed cannot miss data. */
    if (total && peer_closed(s) && atomic_load_explicit(&s->rx->head, memory_order_acquire) == tail) {
        HCCL_INFO(SHM, "receive from rank %u: peer closed the connection", c->peer);
        return HCCL_E_TCP_TRANSFER;
    }
    return HCCL_SUCCESS;
}

/* The second half of a lazy publication: a seq_cst fence orders the earlier store of
 * the counter before the look at `want`, as publish()'s seq_cst store does (the
 * sleeper's side is unchanged: seq_cst store of want, seq_cst load of the counter).
 * ThreadSanitizer does not model fences: there a seq_cst read-modify-write of the
 * counter (which keeps its value) does the same, at the price of owning its line. */
#ifdef __SANITIZE_THREAD__
#define SETTLE(counter) atomic_fetch_add_explicit((counter), 0, memory_order_seq_cst)
#else
#define SETTLE(counter) atomic_thread_fence(memory_order_seq_cst)
#endif
static void shm_flush(hccl_conn *c)
{
    shm_conn *s = (shm_conn *)c;
    if (s->lazy_head) {
        s->lazy_head = 0;
        SETTLE(&s->tx->head);
        wake_if_wanted(&s->tx->rd_wait, s->bell[1 - s->side][BELL_DATA]);
    }
    if (s->lazy_tail) {
        s->lazy_tail = 0;
        SETTLE(&s->rx->tail);
        wake_if_wanted(&s->rx->wr_wait, s->bell[1 - s->side][BELL_SPACE]);
    }
}

static int shm_wait_fd(hccl_conn *c, int sending, short *events)
{
    shm_conn *s = (shm_conn *)c;
    int fd = s->bell[s->side][sending ? BELL_SPACE : BELL_DATA];
    _Atomic uint32_t *want = sending ? &s->tx->wr_wait : &s->rx->rd_wait;
    *events = POLLIN;
    bell_drain(fd);
    atomic_store_explicit(want, 1, memory_order_seq_cst);
    int ready;
    if (sending) ready = s->size - (s->tx_head - atomic_load_explicit(&s->tx->tail, memory_order_seq_cst)) != 0;
    else ready = atomic_load_explicit(&s->rx->head, memory_order_seq_cst) != s->rx_tail;
    if (ready || peer_closed(s) || atomic_load_explicit(&s->shut, memory_order_relaxed))
        bell_ring(fd); /* the peer moved meanwhile: do not sleep */
    return fd;
}

/* Tell the peer we are gone (its send/recv fail, a sleeper wakes up). */
static void mark_closed(shm_conn *s)
{
    atomic_store_explicit(&s->hdr->closed[s->side], 1, memory_order_seq_cst);
    bell_ring(s->bell[1 - s->side][BELL_DATA]);
    bell_ring(s->bell[1 - s->side][BELL_SPACE]);
}

static void conn_free(shm_conn *s)
{
    if (s->hdr) munmap(s->hdr, s->seg_bytes);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            if (s->bell[a][b] >= 0) close(s->bell[a][b]);
    hccl_free(s);
}

/* Abort: the peer's send fails at once and its recv after the bytes already in the
 * ring (an abort notice sent just before arrives); our own calls fail from now on
 * and a sleeper of ours (another thread) wakes up. The connection stays mapped. */
static void shm_shutdown(hccl_conn *c)
{
    shm_conn *s = (shm_conn *)c;
    atomic_store_explicit(&s->shut, 1, memory_order_relaxed);
    mark_closed(s);
    bell_ring(s->bell[s->side][BELL_DATA]);
    bell_ring(s->bell[s->side][BELL_SPACE]);
}

static void shm_close(hccl_conn *c)
{
    shm_conn *s = (shm_conn *)c;
    if (!s) return;
    mark_closed(s);
    conn_free(s);
}

static int shm_peek(hccl_conn *c, void *buf, size_t len)
{
    shm_conn *s = (shm_conn *)c;
    uint64_t head = atomic_load_explicit(&s->rx->head, memory_order_acquire);
    if (head == s->rx_tail) return 0;
    TSAN_ACQUIRE(s->tok_rx);
    uint64_t tail = rx_skip(s, head, s->rx_tail);
    if (head - tail < len) return 0;
    ring_get(s, tail, buf, len);
    return 1;
}

const hccl_transport hccl_shm_transport = {
    .name = "shm",
    .send = shm_send,
    .recv = shm_recv,
    .wait_fd = shm_wait_fd,
    .flush = shm_flush,
    .peek = shm_peek,
    .close = shm_close,
    .shutdown = shm_shutdown,
};

size_t hccl_shm_ring_bytes(const hccl_conn *c) { return (size_t)((const shm_conn *)c)->size; }
uint64_t hccl_shm_tx_pos(const hccl_conn *c) { return ((const shm_conn *)c)->tx_head; }

/* ---------------------------------------------------------------- setup */

static size_t ring_size(size_t req)
{
    if (req == 0) req = (size_t)hccl_param_shm_ring_bytes();
    if (req < HCCL_SHM_RING_MIN) req = HCCL_SHM_RING_MIN;
    if (req > HCCL_SHM_RING_MAX) req = HCCL_SHM_RING_MAX;
    size_t p = HCCL_SHM_RING_MIN;
    while (p < req) p <<= 1;
    return p;
}

static const char bell_suffix[2][2][4] = {{".d0", ".s0"}, {".d1", ".s1"}};

static void bell_path(char *out, size_t len, const char *name, int side, int kind)
{
    snprintf(out, len, "/dev/shm%s%s", name, bell_suffix[side][kind]);
}

/* Remove the segment and the FIFOs (idempotent): the creator once the handshake is
 * over, the mapping side as soon as it has opened them. */
static void unlink_all(const char *name)
{
    char path[96];
    shm_unlink(name);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            bell_path(path, sizeof path, name, a, b);
            unlink(path);
        }
}

static HcclResult open_bells(shm_conn *s, const char *name)
{
    char path[96];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            bell_path(path, sizeof path, name, a, b);
            s->bell[a][b] = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
            if (s->bell[a][b] < 0) {
                HCCL_WARN(SHM, "cannot open doorbell %s: %s", path, strerror(errno));
                return HCCL_E_SYSCALL;
            }
        }
    return HCCL_SUCCESS;
}

static HcclResult map_segment(shm_conn *s, int fd)
{
    void *p = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        HCCL_WARN(SHM, "cannot map %zu bytes of shared memory: %s", s->seg_bytes, strerror(errno));
        return HCCL_E_MEMORY;
    }
    s->hdr = p;
    hccl_prefault(p, s->seg_bytes); /* else the rings' first lap faults on every page */
    return HCCL_SUCCESS;
}

/* Read a byte of every page of both rings once, before the first message. The
 * segment's pages are populated when it is mapped, but a virtual machine that keeps
 * shadow page tables (the reference VM's kernel is a PVM guest) builds its own entry
 * for each page only at its first access from user space, and that access costs
 * about as much as a page fault: without this, the first lap of each ring (1 MiB:
 * 256 pages on each side) ran an eager 4 KiB Reduce at 4 ranks at 9-12 us an
 * operation instead of 2 (docs/performance.md, 2026-12-06). Reads only: the peer may
 * be writing its ring already (hence not under ThreadSanitizer, where thread ranks'
 * reads would race with it). */
static void touch_rings(const shm_conn *s)
{
#ifndef __SANITIZE_THREAD__
    unsigned char acc = 0;
    /* Every 4 KiB, and the last byte: a ring starts 32 bytes before a page, so it ends
     * 32 bytes into one. */
    for (size_t off = 0; off < (size_t)s->size + 4096; off += 4096) {
        size_t at = off < (size_t)s->size ? off : (size_t)s->size - 1;
        acc = (unsigned char)(acc + *(volatile const unsigned char *)(s->rxdata + at) +
                              *(volatile const unsigned char *)(s->txdata + at));
    }
    (void)acc;
#else
    (void)s;
#endif
}

/* name: the segment's; the TSan token of ring k derives from it and k, like ring k. */
static void conn_init(shm_conn *s, int side, size_t ring_bytes, const char *name)
{
    s->side = side;
    s->rx_since_tx = 1; /* the first send is a reply as far as we know */
    s->size = ring_bytes;
    s->mask = ring_bytes - 1;
    s->chunk = HCCL_MIN(CHUNK, (uint64_t)ring_bytes / 4);
    s->tx = &s->hdr->ring[side];
    s->rx = &s->hdr->ring[1 - side];
    s->tok_tx = hccl_shm_token(name, side);
    s->tok_rx = hccl_shm_token(name, 1 - side);
    unsigned char *data = (unsigned char *)s->hdr + DATA_OFFSET;
    s->txdata = data + (size_t)side * ring_bytes;
    s->rxdata = data + (size_t)(1 - side) * ring_bytes;
    touch_rings(s);
}

/* Reserve the pages of a new segment (a full /dev/shm fails here, not with SIGBUS
 * later) and map them. */
static HcclResult size_and_map(shm_conn *s, int fd)
{
    int err = hccl_shm_file_size(fd, s->seg_bytes, 1);
    if (err) {
        HCCL_WARN(SHM, "cannot allocate %zu bytes in /dev/shm: %s%s", s->seg_bytes, strerror(err),
                  hccl_fsize_hint(err));
        return HCCL_E_MEMORY;
    }
    return map_segment(s, fd);
}

/* Creator, by name: the segment of s->seg_bytes, reserved and mapped before its name
 * appears in /dev/shm (an O_TMPFILE, linked in once ready), so a process killed
 * meanwhile leaves nothing. Without O_TMPFILE or /proc/self/fd: under its name from
 * the start. HCCL_E_SYSCALL: the name could not be created. */
static HcclResult create_segment(shm_conn *s, const char *name)
{
    char path[96], self[40];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    for (int named = 0;; named++) {
        int fd = named ? shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)
                       : open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 && !named) continue;
        if (fd < 0) {
            HCCL_WARN(SHM, "cannot create shared memory %s: %s", name, strerror(errno));
            return HCCL_E_SYSCALL;
        }
        HcclResult res = size_and_map(s, fd);
        if (res == HCCL_SUCCESS && !named) {
            snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
            if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) {
                munmap(s->hdr, s->seg_bytes);
                s->hdr = NULL;
                close(fd);
                continue;
            }
        }
        close(fd);
        return res;
    }
}

/* Creator, by descriptor: the segment without a name (an O_TMPFILE in /dev/shm, else a
 * memfd), reserved and mapped, and the four doorbells, each named only from its mkfifo
 * to its unlink right after this process opened it. *segfd stays open until the peer
 * has answered (it opens the segment through /proc). HCCL_E_UNAVAIL: this kernel
 * makes no unnamed files (the handshake by name may still work). On failure the
 * caller releases what was made (release_setup). */
static HcclResult create_unnamed(shm_conn *s, const char *name, int *segfd)
{
    int fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) fd = memfd_create(name + 1, MFD_CLOEXEC);
    if (fd < 0) {
        HCCL_INFO(SHM, "cannot create unnamed shared memory: %s", strerror(errno));
        return HCCL_E_UNAVAIL;
    }
    *segfd = fd;
    CHECK(size_and_map(s, fd));
    char path[96];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            bell_path(path, sizeof path, name, a, b);
            if (mkfifo(path, 0600) != 0) {
                HCCL_WARN(SHM, "cannot create doorbell %s: %s", path, strerror(errno));
                return HCCL_E_SYSCALL;
            }
            s->bell[a][b] = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
            int err = errno;
            unlink(path);
            if (s->bell[a][b] < 0) {
                HCCL_WARN(SHM, "cannot open doorbell %s: %s", path, strerror(err));
                return HCCL_E_SYSCALL;
            }
        }
    return HCCL_SUCCESS;
}

/* Undo create_unnamed (or a part of it). */
static void release_setup(shm_conn *s, int *segfd)
{
    if (s->hdr) munmap(s->hdr, s->seg_bytes);
    s->hdr = NULL;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            if (s->bell[a][b] >= 0) close(s->bell[a][b]);
            s->bell[a][b] = -1;
        }
    if (*segfd >= 0) close(*segfd);
    *segfd = -1;
}

static void init_header(shm_conn *s, size_t ring_bytes, const shm_hello *hello)
{
    s->hdr->magic = SHM_MAGIC;
    s->hdr->version = HCCL_SHM_VERSION;
    s->hdr->ring_bytes = ring_bytes;
    s->hdr->token = hello->token;
    conn_init(s, 0, ring_bytes, hello->name);
}

/* The creator could not set up its side: a hello with no name says so, and the mapping
 * side answers it as any other, so that both fall back to TCP with the stream still in
 * step (without it the mapping side would read the next TCP message as its hello). */
static void refuse_hello(int tcp_fd, uint64_t deadline_ns)
{
    shm_hello no;
    memset(&no, 0, sizeof no);
    no.magic = SHM_MAGIC;
    no.version = HCCL_SHM_VERSION;
    shm_ack ack;
    if (hccl_socket_send_all(tcp_fd, &no, sizeof no, deadline_ns) == HCCL_SUCCESS)
        (void)hccl_socket_recv_all(tcp_fd, &ack, sizeof ack, deadline_ns);
}

/* Send the hello and read the answer: the mapping side's result, or *names = 1 where
 * it asks for the handshake by name (only after a hello by descriptor). */
static HcclResult send_hello(shm_conn *s, int tcp_fd, const shm_hello *hello, uint64_t deadline_ns, int *names)
{
    *names = 0;
    CHECK(hccl_socket_send_all(tcp_fd, hello, sizeof *hello, deadline_ns));
    shm_ack ack;
    CHECK(hccl_socket_recv_all(tcp_fd, &ack, sizeof ack, deadline_ns));
    if (ack.magic == SHM_MAGIC && ack.status == HCCL_SHM_ACK_NAMES && hello->pid) {
        HCCL_INFO(SHM, "rank %u cannot open our descriptors through /proc: naming the shared memory",
                  s->base.peer);
        *names = 1;
        return HCCL_E_UNAVAIL;
    }
    if (ack.magic != SHM_MAGIC || ack.status == HCCL_SHM_ACK_NAMES) {
        HCCL_WARN(SHM, "rank %u answered the shared-memory handshake with garbage", s->base.peer);
        return HCCL_E_INTERNAL;
    }
    if (ack.status != HCCL_SUCCESS) {
        HCCL_INFO(SHM, "rank %u could not map the shared memory (error %d)", s->base.peer, (int)ack.status);
        return (HcclResult)ack.status;
    }
    return HCCL_SUCCESS;
}

/* Creator, by name (version 4's handshake): the segment and the FIFOs under hello's
 * name, from their creation until the peer's answer (it unlinks them once opened). */
static HcclResult create_named(shm_conn *s, int tcp_fd, shm_hello *hello, size_t ring_bytes, uint64_t deadline_ns)
{
    int names;
    hello->pid = 0;
    memset(hello->fd, 0, sizeof hello->fd);
    hello->token = 0;
    HcclResult res = create_segment(s, hello->name);
    if (res == HCCL_E_SYSCALL) { /* the name is not ours to unlink */
        refuse_hello(tcp_fd, deadline_ns);
        return res;
    }
    if (res != HCCL_SUCCESS) goto refuse;
    char path[96];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            bell_path(path, sizeof path, hello->name, a, b);
            if (mkfifo(path, 0600) != 0) {
                HCCL_WARN(SHM, "cannot create doorbell %s: %s", path, strerror(errno));
                res = HCCL_E_SYSCALL;
                goto refuse;
            }
        }
    CHECK_GOTO(open_bells(s, hello->name), res, refuse);
    init_header(s, ring_bytes, hello);
    res = send_hello(s, tcp_fd, hello, deadline_ns, &names);
    goto out;
refuse:
    refuse_hello(tcp_fd, deadline_ns);
out:
    unlink_all(hello->name); /* mapped and opened by both sides (or failed): gone now */
    return res;
}

static HcclResult create_side(shm_conn *s, int tcp_fd, size_t ring_bytes, uint64_t deadline_ns)
{
    /* Nothing is created before the peer has come to this pair (a job killed while it
     * set up its pairs with lower ranks left named entries behind in version 3). */
    shm_ack ready;
    CHECK(hccl_socket_recv_all(tcp_fd, &ready, sizeof ready, deadline_ns));
    if (ready.magic != SHM_MAGIC || ready.status != HCCL_SUCCESS) {
        HCCL_WARN(SHM, "rank %u opened the shared-memory handshake with garbage", s->base.peer);
        return HCCL_E_INTERNAL;
    }
    shm_hello hello;
    memset(&hello, 0, sizeof hello);
    uint64_t rnd[2] = {0, 0};
    if (hccl_random_bytes(rnd, sizeof rnd) != 0) {
        rnd[0] = hccl_now_ns() ^ ((uint64_t)getpid() << 32);
        rnd[1] = rnd[0] * 0x9e3779b97f4a7c15ull + (uint64_t)(uintptr_t)s;
    }
    snprintf(hello.name, sizeof hello.name, "/" HCCL_SHM_NAME_PREFIX "%ld-%016llx", (long)getpid(),
             (unsigned long long)rnd[0]);
    hello.magic = SHM_MAGIC;
    hello.version = HCCL_SHM_VERSION;
    hello.ring_bytes = ring_bytes;
    s->seg_bytes = DATA_OFFSET + 2 * ring_bytes;
    hello.seg_bytes = s->seg_bytes;

    /* By descriptor: nothing has a name while the peer is asked to open it (unless
     * this process asks for names itself: then straight to them). */
    int segfd = -1, names = 1;
    HcclResult res = hccl_param_shm_by_name() ? HCCL_E_UNAVAIL : create_unnamed(s, hello.name, &segfd);
    if (res == HCCL_SUCCESS) {
        hello.pid = (int32_t)getpid();
        hello.fd[0] = segfd;
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) hello.fd[1 + 2 * a + b] = s->bell[a][b];
        hello.token = rnd[1];
        init_header(s, ring_bytes, &hello);
        res = send_hello(s, tcp_fd, &hello, deadline_ns, &names);
    } else if (res != HCCL_E_UNAVAIL) {
        release_setup(s, &segfd);
        refuse_hello(tcp_fd, deadline_ns);
        return res;
    }
    if (!names) {
        if (segfd >= 0) close(segfd); /* the mapping (or the peer's failure) keeps nothing of it */
        return res;
    }
    release_setup(s, &segfd);
    return create_named(s, tcp_fd, &hello, ring_bytes, deadline_ns);
}

/* Mapping side: HCCL_E_UNAVAIL where the creator refused (it could not create), else
 * HCCL_E_INTERNAL where the hello is not a valid one. */
static HcclResult check_hello(shm_conn *s, shm_hello *h)
{
    h->name[NAME_LEN - 1] = 0;
    if (h->magic == SHM_MAGIC && h->version == HCCL_SHM_VERSION && !h->name[0]) {
        HCCL_INFO(SHM, "rank %u could not create the shared memory; using TCP", s->base.peer);
        return HCCL_E_UNAVAIL;
    }
    int fds_bad = h->pid < 0;
    for (int k = 0; k < 5 && h->pid; k++) fds_bad |= h->fd[k] < 0;
    if (h->magic != SHM_MAGIC || h->version != HCCL_SHM_VERSION || fds_bad ||
        strncmp(h->name, "/" HCCL_SHM_NAME_PREFIX, strlen(HCCL_SHM_NAME_PREFIX) + 1) != 0 ||
        strchr(h->name + 1, '/') || h->ring_bytes < HCCL_SHM_RING_MIN || h->ring_bytes > HCCL_SHM_RING_MAX ||
        (h->ring_bytes & (h->ring_bytes - 1)) || h->seg_bytes != DATA_OFFSET + 2 * h->ring_bytes) {
        HCCL_WARN(SHM, "rank %u sent an invalid shared-memory handshake", s->base.peer);
        return HCCL_E_INTERNAL;
    }
    s->seg_bytes = (size_t)h->seg_bytes;
    return HCCL_SUCCESS;
}

/* Mapping side, hello by descriptor: the creator's five descriptors through
 * /proc/<pid>/fd, the segment mapped. *names = 1 where they cannot be had that way
 * (/proc denies it: hidepid, a creator that is not dumpable; the pid is another
 * process's, in another pid namespace, which the token tells; HCCL_SHM_BY_NAME=1):
 * the creator then names them. */
static HcclResult open_by_fd(shm_conn *s, const shm_hello *h, int *names)
{
    *names = 1;
    if (hccl_param_shm_by_name()) return HCCL_E_UNAVAIL;
    int fd[5] = {-1, -1, -1, -1, -1};
    HcclResult res = HCCL_E_UNAVAIL;
    char path[64];
    for (int k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h->pid, (int)h->fd[k]);
        /* stat first: where the pid is another process, its descriptor may be anything
         * (a device, say), which opening could disturb */
        struct stat st;
        int ok = stat(path, &st) == 0 && (k ? S_ISFIFO(st.st_mode)
                                            : S_ISREG(st.st_mode) && (uint64_t)st.st_size == h->seg_bytes);
        if (ok) fd[k] = open(path, O_RDWR | O_CLOEXEC | (k ? O_NONBLOCK : 0));
        if (fd[k] < 0) {
            HCCL_INFO(SHM, "cannot use %s of rank %u (%s): asking for names", path, s->base.peer,
                      ok ? strerror(errno) : "not the creator's file");
            goto out;
        }
    }
    uint64_t token = 0;
    if (pread(fd[0], &token, sizeof token, (off_t)offsetof(seg_hdr, token)) != (ssize_t)sizeof token ||
        token != h->token) {
        HCCL_INFO(SHM, "process %d is not rank %u (another pid namespace?): asking for names", (int)h->pid,
                  s->base.peer);
        goto out;
    }
    *names = 0;
    res = map_segment(s, fd[0]);
    if (res == HCCL_SUCCESS)
        for (int k = 1; k < 5; k++) {
            s->bell[(k - 1) / 2][(k - 1) % 2] = fd[k];
            fd[k] = -1;
        }
out:
    for (int k = 0; k < 5; k++)
        if (fd[k] >= 0) close(fd[k]);
    return res;
}

/* Mapping side, hello by name: open everything, then unlink the names at once (the
 * creator may have died since its hello, and mapping takes a while). */
static HcclResult open_by_name(shm_conn *s, const shm_hello *h)
{
    int fd = shm_open(h->name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        /* Typically: the peer is on another host (or in another IPC namespace). */
        HCCL_INFO(SHM, "cannot open shared memory %s of rank %u: %s", h->name, s->base.peer, strerror(errno));
        return HCCL_E_UNAVAIL;
    }
    HcclResult res = open_bells(s, h->name);
    unlink_all(h->name);
    struct stat st;
    if (res == HCCL_SUCCESS && (fstat(fd, &st) != 0 || (uint64_t)st.st_size != h->seg_bytes)) {
        HCCL_WARN(SHM, "shared memory %s of rank %u has the wrong size", h->name, s->base.peer);
        res = HCCL_E_INTERNAL;
    }
    if (res == HCCL_SUCCESS) res = map_segment(s, fd);
    close(fd);
    return res;
}

static HcclResult map_side(shm_conn *s, int tcp_fd, uint64_t deadline_ns)
{
    shm_ack ready = {SHM_MAGIC, HCCL_SUCCESS};
    CHECK(hccl_socket_send_all(tcp_fd, &ready, sizeof ready, deadline_ns));
    shm_hello hello;
    CHECK(hccl_socket_recv_all(tcp_fd, &hello, sizeof hello, deadline_ns));
    HcclResult res = check_hello(s, &hello);
    if (res == HCCL_SUCCESS && hello.pid) {
        int names;
        res = open_by_fd(s, &hello, &names);
        if (names) { /* the creator answers with a hello by name (or a refusal) */
            shm_ack ask = {SHM_MAGIC, HCCL_SHM_ACK_NAMES};
            CHECK(hccl_socket_send_all(tcp_fd, &ask, sizeof ask, deadline_ns));
            CHECK(hccl_socket_recv_all(tcp_fd, &hello, sizeof hello, deadline_ns));
            res = check_hello(s, &hello);
            if (res == HCCL_SUCCESS && hello.pid) {
                HCCL_WARN(SHM, "rank %u sent an invalid shared-memory handshake", s->base.peer);
                res = HCCL_E_INTERNAL;
            }
            if (res == HCCL_SUCCESS) res = open_by_name(s, &hello);
        }
    } else if (res == HCCL_SUCCESS) {
        res = open_by_name(s, &hello);
    }
    if (res == HCCL_SUCCESS && (s->hdr->magic != SHM_MAGIC || s->hdr->ring_bytes != hello.ring_bytes)) {
        HCCL_WARN(SHM, "shared memory %s of rank %u has a bad header", hello.name, s->base.peer);
        res = HCCL_E_INTERNAL;
    }
    if (res == HCCL_SUCCESS) conn_init(s, 1, (size_t)hello.ring_bytes, hello.name);
    shm_ack ack = {SHM_MAGIC, (int32_t)res};
    HcclResult sres = hccl_socket_send_all(tcp_fd, &ack, sizeof ack, deadline_ns);
    return res != HCCL_SUCCESS ? res : sres;
}

HcclResult hccl_shm_conn_create_sized(int tcp_fd, unsigned rank, unsigned peer, uint64_t deadline_ns,
                                      size_t ring_bytes, hccl_conn **out)
{
    if (!out || tcp_fd < 0 || rank == peer) return HCCL_E_PARA;
    *out = NULL;
    shm_conn *s = hccl_calloc(1, sizeof *s);
    if (!s) return HCCL_E_MEMORY;
    s->base.ops = &hccl_shm_transport;
    s->base.peer = peer;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) s->bell[a][b] = -1;
    if (deadline_ns == 0) deadline_ns = hccl_now_ns() + 60ull * 1000000000ull;
    HcclResult res = rank < peer ? create_side(s, tcp_fd, ring_size(ring_bytes), deadline_ns)
                                 : map_side(s, tcp_fd, deadline_ns);
    if (res != HCCL_SUCCESS) {
        HCCL_INFO(SHM, "shared memory with rank %u not set up (error %d)", peer, (int)res);
        conn_free(s);
        return res;
    }
    /* Measured here (once per process), not in the first operation that copies: the
     * measurement's fresh buffers cost a page fault each (HCCL_INFO would not even
     * evaluate it unless enabled). */
    int loops = hccl_copy_near_loops();
    HCCL_INFO(SHM, "rank %u <-> rank %u: shared memory, %llu-byte rings%s", rank, peer, (unsigned long long)s->size,
              loops ? " (copies 1-63 bytes apart take a vector loop: memcpy is slow there)" : "");
    *out = &s->base;
    return HCCL_SUCCESS;
}

HcclResult hccl_shm_conn_create(int tcp_fd, unsigned rank, unsigned peer, uint64_t deadline_ns, hccl_conn **out)
{
    return hccl_shm_conn_create_sized(tcp_fd, rank, peer, deadline_ns, 0, out);
}
