/*
 * transport.h - the one interface every transport implements.
 *
 * A connection moves an ordered byte stream in each direction between two ranks.
 * Calls are non-blocking: send/recv move what they can now and report how many
 * bytes went; wait_fd gives a descriptor to sleep on when nothing moves (or -1 when
 * the transport can only be polled). The network layer (core/net.c) frames
 * messages and schedules progress; algorithms never see a transport.
 */
#ifndef HCCL_TRANSPORT_H
#define HCCL_TRANSPORT_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct hccl_conn hccl_conn;

/* Bytes in iov (what a send or recv asks to move). */
static inline size_t hccl_iov_bytes(const struct iovec *iov, int iovcnt)
{
    size_t total = 0;
    for (int k = 0; k < iovcnt; k++) total += iov[k].iov_len;
    return total;
}

typedef struct hccl_transport {
    const char *name;
    /* Move bytes from iov (iovcnt entries) now; *moved = bytes moved (0 if the
     * transport would block). Errors: HCCL_E_TCP_TRANSFER (peer closed/reset). */
    HcclResult (*send)(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved);
    HcclResult (*recv)(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved);
    /* Descriptor to poll (with *events) when a send (sending = 1) or a receive
     * (sending = 0) on c cannot move, or -1 when the transport can only be polled. */
    int (*wait_fd)(hccl_conn *c, int sending, short *events);
    void (*close)(hccl_conn *c);
    /* Optional (may be NULL): make the peer's send/recv fail promptly, as after our
     * death, without freeing the connection (used when a communicator aborts). */
    void (*shutdown)(hccl_conn *c);
    /* Optional: 1 when the peer looks unreachable (data sent long ago is still not
     * acknowledged), with a reason in why; used to name the culprit of a timeout. */
    int (*stalled)(hccl_conn *c, char *why, size_t len);
    /* Optional: a transport may defer waking a sleeping peer after a small send or
     * receive until flush (the caller is then busy anyway). Callers flush every
     * connection they moved bytes on before they wait for anything else, before
     * they sleep, and before they return to the application. */
    void (*flush)(hccl_conn *c);
    /* Optional: copy the next len bytes the peer sent into buf without receiving
     * them (1), or 0 while fewer are there; used to look at the header of a message
     * an operation over the shared slots left unread. */
    int (*peek)(hccl_conn *c, void *buf, size_t len);
} hccl_transport;

struct hccl_conn {
    const hccl_transport *ops;
    unsigned peer;
    int os_error; /* errno of the send or receive that failed, 0 if none (TCP) */
};

/* TCP: wraps nfds (1..HCCL_TCP_MAX_SOCKS) connected sockets to one peer, in the
 * same order on both sides (takes ownership); the stream is striped over them in
 * fixed chunks. give_up_ms: how long the kernel keeps a connection whose peer's
 * host answers nothing (unacknowledged data, unanswered keepalive probes) before it
 * fails it with ETIMEDOUT; 0 = the kernel's defaults (no keepalive, about 15
 * minutes of retransmissions). */
#define HCCL_TCP_MAX_SOCKS 8u
HcclResult hccl_tcp_conn_create(const int *fds, unsigned nfds, unsigned peer, unsigned give_up_ms,
                                hccl_conn **out);
/* The give-up time of a communicator's TCP connections for an operation timeout
 * (HCCL_EXEC_TIMEOUT; 0 = never): the timeout plus 10 s, so that a silent peer is
 * reported by the operation's timeout, which names it, before the kernel drops the
 * connection; a network outage shorter than the timeout is ridden out. */
unsigned hccl_tcp_give_up_ms(uint64_t exec_timeout_ns);
/* The (first) socket of a TCP connection (e.g. to negotiate a shared-memory
 * connection, or to watch for the peer's exit). */
int hccl_tcp_conn_fd(hccl_conn *c);
extern const hccl_transport hccl_tcp_transport;

/* Shared memory between ranks of one host (processes or threads): negotiated over
 * the already connected socket tcp_fd (which the caller keeps). Both sides call it;
 * the lower rank creates the segment. */
HcclResult hccl_shm_conn_create(int tcp_fd, unsigned rank, unsigned peer, uint64_t deadline_ns, hccl_conn **out);
extern const hccl_transport hccl_shm_transport;

#endif
