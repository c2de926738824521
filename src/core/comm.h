/*
 * comm.h - the communicator: creation (root info, rank table, split), the registry
 * of live handles, configuration, and running operations.
 *
 * Every HcclComm handed to the application is registered; API calls look handles up
 * (hccl_comm_acquire) so a NULL, foreign or destroyed handle is an error, never a
 * crash. Each queued operation holds a reference; HcclCommDestroy unregisters the
 * handle, waits for the references to drain, then frees sockets, threads and memory.
 */
#ifndef HCCL_CORE_COMM_H
#define HCCL_CORE_COMM_H

#include "algo/algo.h"
#include "boot/boot.h"
#include "boot/ranktable.h"
#include "core/flight.h"
#include "core/net.h"

#include <acl/acl.h>
#include <hccl/hccl_types.h>
#include <pthread.h>
#include <stdint.h>

/* 0, or in a process made by fork() after a communicator existed, that process's pid
 * (comm.c): a communicator whose owner_pid differs was inherited through fork(). */
extern int hccl_comm_fork_pid;

typedef struct hccl_comm_cfg {
    uint64_t exec_timeout_ns; /* 0 = wait forever */
    int exec_timeout_set;     /* HcclCommConfig.hcclExecTimeOut given (else the environment's) */
    uint32_t buffsize_mb;
    int deterministic;
    char name[COMM_NAME_MAX_LENGTH]; /* "" = generate */
    int algo_set;                    /* HcclCommConfig.hcclAlgo given: algo_force, not HCCL_ALGO */
    int algo_force[HCCL_OP_COUNT];   /* as hccl_algo_env_reference */
} hccl_comm_cfg;

typedef struct hccl_comm {
    uint64_t magic;
    uint32_t rank, nranks;
    hccl_boot_ident ident;
    char name[COMM_NAME_MAX_LENGTH];
    int32_t device;
    hccl_comm_cfg cfg;

    int listen_fd;
    int share_dir; /* holds a reference on the runtime's shared-memory directory */
    int mesh_heard; /* its setup failed on another rank's report of a failure in the mesh */
    hccl_boot_stash stash;
    pthread_mutex_t split_lock; /* one sub-communicator rendezvous served on listen_fd at a time */
    hccl_boot_peer *peers; /* nranks */

    hccl_conn **conns; /* nranks, NULL for self: the data connection per peer */
    hccl_conn **live;  /* nranks: the TCP connection kept to watch a shm peer's liveness */
    uint32_t *pids;     /* nranks: each rank's pid (from the setup exchange) */
    uint64_t *hosts;    /* nranks: each rank's host identity */
    int direct;         /* every peer reachable by direct copy (agreed by all ranks) */
    int direct_local;   /* every same-host peer reachable by direct copy (agreed) */
    int crowded;        /* some host has more ranks than CPUs to run them (agreed) */
    uint32_t *host_of;  /* nranks: host index of each rank (first-appearance order) */
    uint32_t *host_leader; /* first rank of each host */
    uint8_t *no_shm;       /* [p]: this rank or rank p set HCCL_SHM_DISABLE: the pair stays on TCP */
    uint32_t nhosts;
    hccl_netimpl *net;
    void *scratch;
    pthread_mutex_t exec_lock;
    uint32_t coll_seq;

    int refs; /* atomic: API calls and queued operations using the communicator (destroy waits for 0) */
    int queued; /* atomic: operations queued on a stream that have not started (each holds one of refs) */
    int async_error; /* HcclResult, atomic */
    int suspended;   /* atomic */
    int aborting;    /* atomic: destroy is waiting; running operations give up */
    int owner_pid;   /* the process that created it (a fork child's copy has no stream workers) */
    hccl_flight flight;
    uint32_t algo_logged[HCCL_OP_COUNT]; /* bit per algorithm already named at INFO */
} hccl_comm;

/* 1 for a fork child's copy of a parent's communicator (no system call: the child's
 * pid is recorded at fork). */
static inline int hccl_comm_inherited(const hccl_comm *c)
{
    int pid = __atomic_load_n(&hccl_comm_fork_pid, __ATOMIC_RELAXED);
    return pid && pid != c->owner_pid;
}

HcclResult hccl_comm_cfg_resolve(const HcclCommConfig *config, hccl_comm_cfg *out);
/* HcclSetConfig(HCCL_DETERMINISTIC): process-wide default for new communicators. */
void hccl_comm_set_deterministic(int on);
int hccl_comm_get_deterministic(void);

/* Creation paths. */
HcclResult hccl_comm_init_root(uint32_t nranks, const HcclRootInfo *root, uint32_t rank, const HcclCommConfig *config,
                               hccl_comm **out);
HcclResult hccl_comm_init_ranktable(const char *path, uint32_t rank, const HcclCommConfig *config, hccl_comm **out);
HcclResult hccl_comm_init_env(const HcclCommConfig *config, hccl_comm **out);
HcclResult hccl_comm_split(hccl_comm *parent, uint32_t nranks, const uint32_t *rank_ids, uint64_t sub_id,
                           uint32_t sub_rank, const HcclCommConfig *config, hccl_comm **out);
HcclResult hccl_comm_get_root_info(HcclRootInfo *root);
/* HcclCreateSubCommConfig failed (res) in checks the caller made, on the parent's rank
 * that is sub_rank of a valid rank_ids (a wrong subCommRankId): tell the others as a
 * failed config does (split_tell), so they fail now with this rank's reason (its WARN
 * since warn_seq) instead of at HCCL_CONNECT_TIMEOUT. */
void hccl_comm_split_failed(hccl_comm *parent, uint32_t nranks, const uint32_t *rank_ids, uint64_t sub_id,
                            uint32_t sub_rank, HcclResult res, uint64_t warn_seq);
/* fn(nranks, root, rank) failed (res) before this rank could join the root, in checks
 * the caller made: tell the root, if the root info is usable and its root may still
 * serve (best effort, about a second at most), so the other ranks fail now with this
 * rank's reason (its WARN since warn_seq, hccl_log_warn_seq) instead of at
 * HCCL_CONNECT_TIMEOUT. */
void hccl_comm_root_info_failed(uint32_t nranks, const HcclRootInfo *root, uint32_t rank, const char *fn,
                                HcclResult res, uint64_t warn_seq);

/* Registry. acquire takes a reference on a live handle (E_PTR for NULL, E_PARA for
 * an unknown or destroyed one, with a warning that names fn, the API call); release
 * drops it. */
HcclResult hccl_comm_acquire(const char *fn, HcclComm handle, hccl_comm **out);
/* The size, rank and async error (HCCL_SUCCESS: none) of a live handle, without a
 * reference or a lock (the same errors as acquire): for calls that only check their
 * arguments against them. */
HcclResult hccl_comm_peek(const char *fn, HcclComm handle, uint32_t *nranks, uint32_t *rank, HcclResult *failed);
/* The communicator failed with res (the first failure stays): its async error, and the
 * registry's copy that hccl_comm_peek reads. */
void hccl_comm_set_async_error(hccl_comm *c, HcclResult res);
/* One more user of a communicator the caller already holds (e.g. a queued task). */
void hccl_comm_retain(hccl_comm *c);
void hccl_comm_release(hccl_comm *c);
HcclResult hccl_comm_find_by_name(const char *name, hccl_comm **out);
HcclResult hccl_comm_destroy(HcclComm handle);

/* Run an operation (args owned by the caller) now, in the calling thread;
 * fr_id is its flight-recorder entry (0: record it now). */
HcclResult hccl_comm_run(hccl_comm *c, const hccl_op_args *args, uint64_t fr_id);
/* Dump the flight recorder (path NULL: the default location). */
HcclResult hccl_comm_dump_flight(hccl_comm *c, const char *path, const char *reason);
/* Enqueue on stream (NULL stream: run now). Takes ownership of args (freed with
 * hccl_op_args_free) and of one reference to c the caller holds (released when the
 * operation has run, or before returning when it was not enqueued). */
HcclResult hccl_comm_enqueue(hccl_comm *c, hccl_op_args *args, aclrtStream stream);
void hccl_op_args_free(hccl_op_args *a);
/* Free the arrays a owns, not a itself. */
void hccl_op_args_clear(hccl_op_args *a);
/* HCCL_ALGO / HCCL_REFERENCE_ALGOS for this operation, as ctx->reference: 0 (the cost
 * model chooses), 1 (the reference algorithm) or HCCL_ALGO_FORCED(id) (algo_env.c). */
int hccl_algo_env_reference(hccl_op_type type);
/* HcclCommConfig.hcclAlgo (HCCL_ALGO's syntax) in force[HCCL_OP_COUNT], the same
 * values; HCCL_REFERENCE_ALGOS=1 still forces the reference algorithms. */
void hccl_algo_config_parse(const char *algo, int *force);
/* What ctx->reference is for an operation of type on c. */
#define hccl_comm_algo_force(c, type) \
    ((c)->cfg.algo_set ? (c)->cfg.algo_force[(type)] : hccl_algo_env_reference(type))

#endif
