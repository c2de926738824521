/*
 * boot.h - bootstrap: the root rendezvous and the full-mesh connection setup.
 *
 * Root rendezvous (one TCP connection per rank to the root's listener):
 *
 *   rank r -> root   hello  {magic HCBH, version, secret, id, nranks, r, peer info}
 *   root  -> rank r  reply  {magic HCBR, status, nranks, message[512]}
 *                    then nranks peer infos when status is OK
 *   rank r -> root   failed {the hello's header, peer info, call, reason}: r failed
 *                    before it could join; the root refuses the group with the reason
 *
 * The root checks the job secret and the group id of every hello: a stray or
 * foreign connection is logged and dropped without disturbing the job. When not
 * every rank arrives before the deadline, every rank that did gets a reply naming
 * the ranks that never arrived. The root is either a thread started by
 * HcclGetRootInfo (serving one group, then exiting) or, for sub-communicators, the
 * sub-communicator's first rank serving on its parent's listener; hellos for another
 * group that arrive meanwhile wait in a stash (dropped once their rank gives up).
 *
 * Mesh: rank r connects to every lower rank's listener and accepts from every higher
 * rank (one or several sockets per pair); each data connection opens with {magic HCDC,
 * secret, id, from, to, socket index, socket count}.
 */
#ifndef HCCL_BOOT_BOOT_H
#define HCCL_BOOT_BOOT_H

#include "boot/socket.h"

#include <hccl/hccl_types.h>
#include <pthread.h>
#include <stdint.h>

typedef struct hccl_boot_ident {
    uint64_t secret;
    uint64_t id;
    /* A sub-communicator's subCommId under its parent, hashed (0: none). A hello with
     * this tag but another id is the same subCommId called with other rankIds: the
     * serving rank refuses it and its own group at once, not at the connect timeout. */
    uint32_t group;
} hccl_boot_ident;

/* What every rank publishes about itself. */
typedef struct hccl_boot_peer {
    hccl_addr addr; /* data / bootstrap listener */
    char host[64];
    uint32_t pid;
    uint32_t rank;
    uint64_t host_hash;
} hccl_boot_peer;

/* The opaque HcclRootInfo, as we lay it out. */
typedef struct hccl_root_blob {
    uint32_t magic; /* HCCL_ROOT_MAGIC */
    uint32_t version;
    uint64_t secret;
    uint64_t id;
    hccl_addr root;
} hccl_root_blob;
#define HCCL_ROOT_MAGIC 0x48435249u /* "HCRI" */
#define HCCL_ROOT_VERSION 1u
_Static_assert(sizeof(hccl_root_blob) <= HCCL_ROOT_INFO_BYTES, "root blob must fit HcclRootInfo");

/* Hellos that arrived for another group on a shared listener. */
typedef struct hccl_boot_stash {
    pthread_mutex_t lock;
    struct stash_entry *head;
} hccl_boot_stash;
void hccl_boot_stash_init(hccl_boot_stash *s);
void hccl_boot_stash_free(hccl_boot_stash *s);

/* This host's identity: a hash of HCCL_HOST_ID when set, else of the host name. */
uint64_t hccl_boot_host_hash(void);

/* Fill a peer record for this process (host name, pid, host hash). */
void hccl_boot_peer_self(hccl_boot_peer *p, const hccl_addr *addr, uint32_t rank);

/* Start a root thread listening on *addr (port chosen and written back) that serves
 * one group of ranks identified by ident, then exits. */
HcclResult hccl_boot_root_start(hccl_addr *addr, const hccl_boot_ident *ident, int use_base_port);

/* Whether a root thread of this process has served id's group or given up (it stops
 * listening: a rank that joins it now can only time out). Recorded before the ranks
 * get their answer; remembers the last 256. */
int hccl_boot_root_finished(uint64_t id);

/* When this process started id's root thread and it still runs: wait until it is done
 * (its listener closed), max_ns at most. A rank whose creation failed calls it before it returns: its
 * process may exit then, and its root with it, before the group's later ranks got the
 * root's answer (they would see a root that vanished, or none, instead of the reason). */
void hccl_boot_root_linger(uint64_t id, uint64_t max_ns);

/* Serve one group on an existing listener in the calling thread. self (may be NULL)
 * is this rank's own record (rank self->rank). On success, table (nranks entries)
 * holds every rank's record, when table is not NULL. abort (may be NULL): once it
 * reads non-zero (the parent communicator is being destroyed), the group is refused
 * within 100 ms with HCCL_E_PARA instead of waiting for the missing ranks. The
 * application's interrupt check (HcclSetInterruptCheck) refuses it the same way, naming
 * this rank, with HCCL_E_INTERNAL. */
HcclResult hccl_boot_serve(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t nranks,
                           const hccl_boot_peer *self, uint64_t timeout_ns, const int *abort,
                           hccl_boot_peer *table);

/* A rank that would serve its sub-communicator (hccl_boot_serve) but failed before:
 * the members already waiting on listen_fd (or its stash), or arriving within 200 ms,
 * are refused with msg (HCCL_E_PARA) instead of waiting out their connect timeout. */
void hccl_boot_refuse(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t nranks,
                      const char *msg);

/* Join a group at the root: send our record, receive everyone's (nranks entries).
 * hint (NULL: ask whether the rank that serves the root runs) ends the WARN line when
 * the root cannot be reached. HCCL_E_SYSCALL with errno set: this rank could not open
 * its connection (EMFILE...) and has not joined; with errno 0: the root's failure.
 * abort (may be NULL): as for hccl_boot_serve, the wait for the root's answer ends
 * within 100 ms of it reading non-zero (HCCL_E_PARA). The application's interrupt check
 * (HcclSetInterruptCheck) stops the connect and the wait: HCCL_E_INTERNAL, said; the
 * caller tells the root (hccl_boot_report_failure). */
HcclResult hccl_boot_join(const hccl_addr *root, const hccl_boot_ident *ident, uint32_t nranks,
                          const hccl_boot_peer *self, uint64_t timeout_ns, const char *hint, const int *abort,
                          hccl_boot_peer *table);

/* Tell the root of ident's group that this rank (rank of nranks, as the caller passed
 * them) failed fn before joining, for reason: best effort, quietly (no WARN) and within
 * about a second. The root refuses the whole group at once with that reason (naming
 * the rank, or its pid and host where rank does not fit), as for ranks that disagree:
 * the others fail now instead of at HCCL_CONNECT_TIMEOUT. quick (an interrupted rank,
 * which must return at once): one try, no retry of a refused connection. */
void hccl_boot_report_failure(const hccl_addr *root, const hccl_boot_ident *ident, uint32_t nranks, uint32_t rank,
                              const char *fn, const char *reason, int quick);

/* Most sockets one pair of ranks opens between them. */
#define HCCL_BOOT_MAX_SOCKS 8u

/* Connect the full mesh. The higher rank of each pair connects want[lower] sockets
 * (1..HCCL_BOOT_MAX_SOCKS; want[] is read for peers below rank only) and announces
 * the count in each, so the pair agrees whatever the lower rank would have chosen.
 * On success nsock[peer] is the pair's socket count and fds[peer *
 * HCCL_BOOT_MAX_SOCKS + k] (k < nsock[peer]) its sockets in order; the rest is -1
 * (nsock[rank] = 0). fds holds nranks * HCCL_BOOT_MAX_SOCKS entries. The application's
 * interrupt check (HcclSetInterruptCheck) stops it with HCCL_E_INTERNAL, and the other
 * ranks are told, as for any failure here. */
HcclResult hccl_boot_mesh(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t rank,
                          uint32_t nranks, const hccl_boot_peer *table, uint64_t timeout_ns, const unsigned *want,
                          int *fds, unsigned *nsock);

/* A rank that fails in hccl_boot_mesh (not for waiting: a timeout) tells the group's
 * other ranks on their listeners, and a rank that finds a peer gone (its listener
 * refuses, its connection closed) tells them for it: ranks still in the mesh fail at
 * once, naming it and its reason. A rank that was done with the mesh and then failed
 * (a connection lost) looks here for such a report, up to wait_ns: 1 when one came
 * (its result in *res; in why, "rank N (pid P on H) failed while the ranks connected:
 * <its reason>"), else 0. Hellos of
 * sub-communicators that come meanwhile go to the stash. */
/* Tells every rank of the table but `failed` and `skip`, on its listener, that rank
 * `failed` failed while the ranks connected (KIND_MESH_FAILED; reason: its WARN),
 * within 1 s in all: the ranks in other processes still in the mesh fail now, with the
 * reason, rather than wait for it until HCCL_CONNECT_TIMEOUT. hccl_boot_mesh sends it
 * itself; the creation calls it for a failure of its setup after the mesh. */
void hccl_boot_mesh_report(const hccl_boot_ident *ident, uint32_t nranks, const hccl_boot_peer *table,
                           uint32_t failed, uint32_t skip, HcclResult res, const char *reason);
int hccl_boot_mesh_heard(int listen_fd, hccl_boot_stash *stash, const hccl_boot_ident *ident, uint32_t rank,
                         uint32_t nranks, uint64_t wait_ns, HcclResult *res, char *why, size_t len);

/* A rank of a rank table (whose every listener address is known) that failed before it
 * opened its listener (reason: its WARN) tells the group as hccl_boot_mesh_report does,
 * ranks of its own process (threads) included, on their listeners: ranks waiting in the
 * mesh fail now, naming it and its reason, instead of at HCCL_CONNECT_TIMEOUT. A
 * listener that refuses (its rank has not opened it yet) is tried again until linger_ns
 * has passed; returns once every other rank was told. Nothing is recorded in the
 * process (hccl_boot_rank_failed): the report reaches the ranks of this process too. */
void hccl_boot_mesh_report_unjoined(const hccl_boot_ident *ident, uint32_t nranks, const hccl_boot_peer *table,
                                    uint32_t rank, HcclResult res, const char *reason, uint64_t linger_ns);

/* A creation whose group's identity does not change between tries (a rank table's: a
 * retry from the same table has it too; a sub-communicator's: the same parent,
 * subCommId and rankIds) tells when each of its ranks' attempts begins
 * and ends (rank UINT32_MAX: a call that named no rank of the group, a bad rank id):
 * a failure recorded in an attempt (hccl_boot_rank_failed) is then not seen by the
 * ranks' later attempts (hccl_boot_peer_failed), while the siblings of its own try
 * see it at once whenever they begin or look. */
void hccl_boot_attempt_begin(const hccl_boot_ident *ident, uint32_t rank);
void hccl_boot_attempt_end(const hccl_boot_ident *ident, uint32_t rank);

/* Record that rank of ident's group failed in this process after joining (reason: its
 * WARN): the group's other ranks in this process (threads as ranks: HcclCommInitAll)
 * stop waiting for it in hccl_boot_mesh at once and fail with its result and reason.
 * hccl_boot_mesh records its own failures. Remembers the last 64. */
void hccl_boot_rank_failed(const hccl_boot_ident *ident, uint32_t rank, HcclResult res, const char *reason);

/* Whether a rank of ident's group other than self failed in this process (in self's
 * try, where the group tells its attempts): the first that did, with its result and
 * reason (each out-pointer may be NULL). */
int hccl_boot_peer_failed(const hccl_boot_ident *ident, uint32_t self, uint32_t *rank, HcclResult *res, char *reason,
                          size_t len);

/* Connect timeout from HCCL_CONNECT_TIMEOUT (seconds, default 120), in ns. */
uint64_t hccl_boot_connect_timeout_ns(void);

#endif
