/*
 * shm.h - internals of the shared-memory transport shared with its unit test.
 *
 * The public entry points (hccl_shm_conn_create, hccl_shm_transport) are declared in
 * transport/transport.h; this header adds the ring-size override used by tests, the
 * name prefix of the /dev/shm entries (which have names only for a few system calls,
 * or during a handshake by name), the handshake's messages, and the ThreadSanitizer
 * tokens that slots.c shares.
 */
#ifndef HCCL_TRANSPORT_SHM_H
#define HCCL_TRANSPORT_SHM_H

#include "transport/transport.h"

#include <stddef.h>
#include <stdint.h>

/* Every /dev/shm entry of this transport starts with this (segment and doorbells). */
#define HCCL_SHM_NAME_PREFIX "hccl-shm-"
/* Handshake and segment layout version: both sides must have the same. */
#define HCCL_SHM_VERSION 6u
/* Where the rings' data start in a segment: 32 bytes before a page (shm.c, "the data
 * start 32 bytes before a page"); a segment is this plus two rings. */
#define HCCL_SHM_DATA_OFFSET (4096u - 32u)

/* The creator's hello (shm.c, "Handshake"). By descriptor: pid > 0, fd[] the creator's
 * descriptors of the segment and the doorbells d0 s0 d1 s1, token the random word in the
 * segment's header, name only an identity (nothing of that name exists). By name
 * (pid 0): the /dev/shm entries are name and name.d0 .s0 .d1 .s1. Refused: name empty. */
typedef struct hccl_shm_hello {
    uint32_t magic;
    uint32_t version;
    uint64_t ring_bytes;
    uint64_t seg_bytes;
    char name[48];
    int32_t pid;
    int32_t fd[5];
    uint64_t token;
} hccl_shm_hello;
#define HCCL_SHM_HELLO_BYTES 104
#define HCCL_SHM_MAGIC 0x4d534843u /* "CHSM" */
/* The mapping side's answer to a hello by descriptor it cannot open (another pid
 * namespace, hidepid, a process that is not dumpable): send the names instead. Not an
 * HcclResult. */
#define HCCL_SHM_ACK_NAMES 0x454d414e /* "NAME" */

/* Smallest and largest ring accepted (HCCL_SHM_RING_BYTES is rounded up to a power
 * of two and clamped into this range). */
#define HCCL_SHM_RING_MIN ((size_t)4096)
#define HCCL_SHM_RING_MAX ((size_t)1 << 30)

/* hccl_shm_conn_create with an explicit ring size (bytes per direction) chosen by the
 * creating (lower) rank; 0 means HCCL_SHM_RING_BYTES. The other side adopts the
 * creator's size whatever it passes. */
HcclResult hccl_shm_conn_create_sized(int tcp_fd, unsigned rank, unsigned peer, uint64_t deadline_ns,
                                      size_t ring_bytes, hccl_conn **out);

/* The ring size (bytes per direction) of an shm connection. */
size_t hccl_shm_ring_bytes(const hccl_conn *c);

/* ThreadSanitizer sees no order between two mappings of one segment (it tracks
 * virtual addresses): a writer that publishes releases a token, a reader that
 * observes the publication acquires it, and both derive the token from the
 * segment's name and k (a ring, a slot). Without TSan: nothing. */
void *hccl_shm_token(const char *name, int k);
#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
#define HCCL_SHM_TSAN_RELEASE(tok) __tsan_release(tok)
#define HCCL_SHM_TSAN_ACQUIRE(tok) __tsan_acquire(tok)
#else
#define HCCL_SHM_TSAN_RELEASE(tok) ((void)(tok))
#define HCCL_SHM_TSAN_ACQUIRE(tok) ((void)(tok))
#endif

/* The producer's stream position (bytes sent, plus the ends of rings it skipped). */
uint64_t hccl_shm_tx_pos(const hccl_conn *c);

#endif
