/*
 * socket.h - socket helpers for bootstrap and the TCP transport.
 *
 * Addresses are struct sockaddr_storage (IPv4 or IPv6). Interface selection follows
 * HCCL_IF_IP, HCCL_SOCKET_IFNAME (prefix list "eth,enp", "^eth" excludes, "=eth0"
 * exact, "^=eth0" excludes exact) and HCCL_SOCKET_FAMILY (AF_INET or AF_INET6).
 * Listening ports: ephemeral unless HCCL_IF_BASE_PORT is set, then the first free
 * port of [base, base + 1024), so several jobs on one host never collide.
 */
#ifndef HCCL_BOOT_SOCKET_H
#define HCCL_BOOT_SOCKET_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct sockaddr_storage hccl_addr;

/* "ip:port" text of an address (static per-thread buffer rotation of 4). */
const char *hccl_addr_str(const hccl_addr *a);
uint16_t hccl_addr_port(const hccl_addr *a);
void hccl_addr_set_port(hccl_addr *a, uint16_t port);
socklen_t hccl_addr_len(const hccl_addr *a);
/* Parse a numeric IP or a host name (resolved) plus port. */
HcclResult hccl_addr_parse(const char *host, uint16_t port, hccl_addr *out);

/* The address this process advertises: HCCL_IF_IP, else the interface chosen by
 * HCCL_SOCKET_IFNAME, else the loopback address of HCCL_SOCKET_FAMILY. When `toward`
 * is given (and no variable chooses), the local address that routes to it. */
HcclResult hccl_socket_local_addr(const hccl_addr *toward, hccl_addr *out);

/* 1 when a is a loopback address. */
int hccl_addr_is_loopback(const hccl_addr *a);
/* The first address of an interface that is up and not loopback (docker and virbr
 * bridges skipped), of the family of `like`. HCCL_E_NOT_FOUND when there is none. */
HcclResult hccl_socket_nonloopback_addr(int family, hccl_addr *out);

/* Listen on addr (port 0 = ephemeral, or the HCCL_IF_BASE_PORT range when
 * use_base_port); the bound address is written back into addr. */
HcclResult hccl_socket_listen(hccl_addr *addr, int use_base_port, int *fd_out);

/* Connect, retrying refused connections until deadline_ns (monotonic). On failure
 * errno is the last attempt's error (ECONNREFUSED, ETIMEDOUT, ENETUNREACH...). The
 * application's interrupt check (HcclSetInterruptCheck) stops it quietly: HCCL_E_INTERNAL
 * with errno EINTR, and the caller says why. */
HcclResult hccl_socket_connect(const hccl_addr *addr, uint64_t deadline_ns, int *fd_out);
/* The same, but stop(arg) is asked before each retry: when it says so, the connect
 * gives up quietly (no WARN) with HCCL_E_TIMEOUT, and the caller says why. errno is
 * the failed attempt's error while stop runs. */
HcclResult hccl_socket_connect_unless(const hccl_addr *addr, uint64_t deadline_ns, int (*stop)(void *), void *arg,
                                      int *fd_out);

/* Accept one connection, waiting at most until deadline_ns. HCCL_E_TIMEOUT on expiry. */
HcclResult hccl_socket_accept(int listen_fd, uint64_t deadline_ns, int *fd_out, hccl_addr *peer);

/* Blocking full send / receive with a deadline (fd may be blocking or not). A peer
 * that closes the connection gives HCCL_E_TCP_TRANSFER. */
HcclResult hccl_socket_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns);
HcclResult hccl_socket_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns);

void hccl_socket_set_nonblock(int fd, int on);
void hccl_socket_tune(int fd); /* TCP_NODELAY, buffers */

#endif
