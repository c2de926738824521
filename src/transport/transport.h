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
#include <sys/uio.h>

typedef struct hccl_conn hccl_conn;

typedef struct hccl_transport {
    const char *name;
    /* Move bytes from iov (iovcnt entries) now; *moved = bytes moved (0 if the
     * transport would block). Errors: HCCL_E_TCP_TRANSFER (peer closed/reset). */
    HcclResult (*send)(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved);
    HcclResult (*recv)(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved);
    /* Descriptor to poll for readiness, or -1. */
    int (*wait_fd)(hccl_conn *c);
    void (*close)(hccl_conn *c);
} hccl_transport;

struct hccl_conn {
    const hccl_transport *ops;
    unsigned peer;
};

/* TCP: wraps a connected socket (takes ownership). */
HcclResult hccl_tcp_conn_create(int fd, unsigned peer, hccl_conn **out);
extern const hccl_transport hccl_tcp_transport;

#endif
