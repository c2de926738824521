/*
 * comm.c - communicator creation, the handle registry and destruction (comm.h).
 *
 * All creation paths end in setup(): connect the full mesh on this rank's listener,
 * wrap each socket in a transport connection, build the network engine and register
 * the handle. The listener stays open for the communicator's life: sub-communicator
 * bootstrap messages arrive on it.
 */
#include "core/comm.h"

#include "boot/launch_env.h"
#include "reduce/reduce.h"
#include "runtime/sharemem.h"
#include "runtime/stream_task.h"
#include "transport/shm/slots.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/param.h"
#include "util/refs.h"
#include "util/spin.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define COMM_MAGIC 0x48434f4d4d5f4f4bull /* "HCOMM_OK" */
/* The scratch's first bytes, written at set-up: what the one-round algorithms, the
 * direct ones' address lists and chunks and recursive doubling's window use at the
 * sizes where a call takes tens of microseconds. Otherwise the first call of each
 * larger size faulted in the pages it reached first, at 11-12 us a page on a guest
 * with shadow page tables (4 ranks on 2 cores: an in-place AlltoAll of 128 KiB 43
 * against 85-90 us a call over a 20-call sweep; docs/performance.md). With 4 KiB pages
 * (the scratch is device memory, on huge pages where the kernel gives them) that costs
 * 256 page faults per rank and communicator at set-up (3 ms on that guest). */
#define SCRATCH_WARM_BYTES (1u << 20)
_Static_assert(SCRATCH_WARM_BYTES <= HCCL_ALGO_SCRATCH_BYTES, "inside the scratch");

HCCL_PARAM_INT_IN(exec_timeout, "HCCL_EXEC_TIMEOUT", 1836, 0, INT64_MAX, HCCL_PARAM_DEFAULT)
HCCL_PARAM_INT_IN(buffsize, "HCCL_BUFFSIZE", HCCL_COMM_DEFAULT_BUFFSIZE, 1, UINT32_MAX, HCCL_PARAM_DEFAULT)

/* The live communicators, every operation looks its handle up: a dense array of
 * entries (the communicator and copies of its size, rank and async error) in chunks that are never
 * freed, so that hccl_comm_peek reads it without the lock and never touches freed
 * memory (it reads the copies, never the communicator). Writers hold registry_lock
 * and keep registry_seq odd while they change it (a sequence lock); every field is
 * read and written atomically. */
#define REG_CHUNK 64u
#define REG_CHUNKS 1024u /* at most 65,536 live communicators per process */
typedef struct reg_entry {
    hccl_comm *c;
    uint32_t nranks, rank;
    int failed; /* a copy of c->async_error (hccl_comm_set_async_error) */
} reg_entry;
static hccl_spin registry_lock = HCCL_SPIN_INITIALIZER;
static unsigned registry_seq;
static uint32_t registry_n;                 /* entries 0 .. n-1 are live */
static reg_entry registry_first[REG_CHUNK];
static reg_entry *registry_chunk[REG_CHUNKS] = {registry_first};

static reg_entry *reg_at(uint32_t i)
{
    return __atomic_load_n(&registry_chunk[i / REG_CHUNK], __ATOMIC_ACQUIRE) + i % REG_CHUNK;
}

/* The entry of handle, or NULL: under registry_lock, or inside hccl_comm_peek's
 * sequence check (the count read with acquire: every chunk below it is there). */
static reg_entry *reg_find(HcclComm handle)
{
    const uint32_t n = __atomic_load_n(&registry_n, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        reg_entry *e = reg_at(i);
        if (__atomic_load_n(&e->c, __ATOMIC_RELAXED) == (hccl_comm *)handle) return e;
    }
    return NULL;
}

static void reg_set(reg_entry *e, const reg_entry *v)
{
    __atomic_store_n(&e->nranks, v->nranks, __ATOMIC_RELAXED);
    __atomic_store_n(&e->rank, v->rank, __ATOMIC_RELAXED);
    __atomic_store_n(&e->failed, v->failed, __ATOMIC_RELAXED);
    __atomic_store_n(&e->c, v->c, __ATOMIC_RELAXED);
}

/* Under registry_lock: around a change. */
static void reg_write_begin(void)
{
    __atomic_store_n(&registry_seq, registry_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void reg_write_end(void) { __atomic_store_n(&registry_seq, registry_seq + 1, __ATOMIC_RELEASE); }

/* The name a communicator will have (set up in `setup`): the configured one, else one
 * from its identity. */
static void name_of(const hccl_comm *c, char *out, size_t len)
{
    if (c->cfg.name[0]) snprintf(out, len, "%s", c->cfg.name);
    else snprintf(out, len, "hccl_%016llx", (unsigned long long)c->ident.id);
}

/* Under registry_lock: a live communicator has this name and rank. */
static int name_taken_locked(const char *name, uint32_t rank)
{
    for (uint32_t i = 0; i < registry_n; i++) {
        hccl_comm *o = __atomic_load_n(&reg_at(i)->c, __ATOMIC_RELAXED);
        if (o->rank == rank && strcmp(o->name, name) == 0) return 1;
    }
    return 0;
}

/* Names are unique per rank in a process (HcclCommGetHandleWithName finds a
 * communicator by its name; CANN asks that a configured name be unique): a live
 * communicator with c's name and rank refuses c before its rendezvous, on every rank
 * that repeats the name, so they all fail at once. Thread-ranks of one communicator
 * share its name with different ranks. reg_add checks again (two threads creating the
 * same name at once both pass this check). */
static HcclResult name_is_free(const hccl_comm *c, const char *fn, const char *hint)
{
    char name[sizeof c->name];
    name_of(c, name, sizeof name);
    hccl_spin_lock(&registry_lock);
    int taken = name_taken_locked(name, c->rank);
    hccl_spin_unlock(&registry_lock);
    if (!taken) return HCCL_SUCCESS;
    HCCL_WARN(INIT, "%s: a live communicator of this process is already named \"%s\" with rank %u%s", fn, name,
              c->rank, hint);
    return HCCL_E_PARA;
}

static HcclResult reg_add(hccl_comm *c)
{
    HcclResult res = HCCL_SUCCESS;
    hccl_spin_lock(&registry_lock);
    uint32_t i = registry_n;
    if (name_taken_locked(c->name, c->rank)) {
        res = HCCL_E_PARA;
    } else if (i / REG_CHUNK >= REG_CHUNKS) {
        res = HCCL_E_UNAVAIL;
    } else if (!registry_chunk[i / REG_CHUNK]) {
        reg_entry *chunk = hccl_calloc(REG_CHUNK, sizeof *chunk);
        if (!chunk) res = HCCL_E_MEMORY;
        else __atomic_store_n(&registry_chunk[i / REG_CHUNK], chunk, __ATOMIC_RELEASE);
    }
    if (res == HCCL_SUCCESS) {
        reg_write_begin();
        reg_set(reg_at(i), &(reg_entry){c, c->nranks, c->rank, __atomic_load_n(&c->async_error, __ATOMIC_ACQUIRE)});
        __atomic_store_n(&registry_n, i + 1, __ATOMIC_RELEASE); /* after its chunk: peek reads n first */
        reg_write_end();
    }
    hccl_spin_unlock(&registry_lock);
    return res;
}

/* The last entry takes the place of the one removed. Returns 0 when handle is not live. */
static int reg_remove(HcclComm handle)
{
    hccl_spin_lock(&registry_lock);
    reg_entry *e = reg_find(handle);
    if (e) {
        reg_entry *last = reg_at(registry_n - 1);
        reg_entry v = {__atomic_load_n(&last->c, __ATOMIC_RELAXED), __atomic_load_n(&last->nranks, __ATOMIC_RELAXED),
                       __atomic_load_n(&last->rank, __ATOMIC_RELAXED), __atomic_load_n(&last->failed, __ATOMIC_RELAXED)};
        reg_write_begin();
        reg_set(e, &v);
        reg_set(last, &(reg_entry){NULL, 0, 0, 0});
        __atomic_store_n(&registry_n, registry_n - 1, __ATOMIC_RELEASE);
        reg_write_end();
    }
    hccl_spin_unlock(&registry_lock);
    return e != NULL;
}


/* ---- configuration ---------------------------------------------------------- */

static int deterministic_global; /* HcclSetConfig(HCCL_DETERMINISTIC) */

/* HCCL_DETERMINISTIC: true/1 (any case), or upstream's stricter "strict", turn it on;
 * false/0 leave it off; anything else is reported and means off, so a "True" or a
 * "yes" that silently changed nothing cannot pass for a deterministic run. */
static int deterministic_env(void)
{
    const char *det = hccl_param_read_str("HCCL_DETERMINISTIC", NULL);
    if (!det) return 0;
    if (!strcasecmp(det, "true") || !strcmp(det, "1") || !strcasecmp(det, "strict")) return 1;
    if (!strcasecmp(det, "false") || !strcmp(det, "0")) return 0;
    HCCL_WARN(INIT, "HCCL_DETERMINISTIC=\"%s\" is neither true nor false (nor 1, 0, strict); using false", det);
    return 0;
}

HcclResult hccl_comm_cfg_resolve(const HcclCommConfig *config, hccl_comm_cfg *out)
{
    memset(out, 0, sizeof *out);
    int64_t t = hccl_param_exec_timeout();
    out->exec_timeout_ns = hccl_timeout_ns(t);
    out->buffsize_mb = (uint32_t)hccl_param_buffsize();
    out->deterministic = deterministic_env() || __atomic_load_n(&deterministic_global, __ATOMIC_RELAXED);
    if (!config) return HCCL_SUCCESS;

    const HcclCommConfigInfo *info = (const HcclCommConfigInfo *)(const void *)config;
    if (info->magicWord != HCCL_COMM_CONFIG_MAGIC_WORD) {
        HCCL_WARN(INIT, "HcclCommConfig was not initialised with HcclCommConfigInit (magic word %#x)",
                  info->magicWord);
        return HCCL_E_PARA;
    }
    size_t size = info->size;
    if (size < HCCL_COMM_CONFIG_INFO_BYTES) {
        HCCL_WARN(INIT, "HcclCommConfig size %zu is too small", size);
        return HCCL_E_PARA;
    }
#define COVERS(field) (offsetof(HcclCommConfig, field) + sizeof(config->field) <= size)
    if (COVERS(hcclBufferSize) && config->hcclBufferSize != HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET) {
        if (config->hcclBufferSize == 0) {
            HCCL_WARN(INIT, "HcclCommConfig.hcclBufferSize must be at least 1 (MB)");
            return HCCL_E_PARA;
        }
        out->buffsize_mb = config->hcclBufferSize;
    }
    if (COVERS(hcclDeterministic) && config->hcclDeterministic != HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET) {
        /* 2 is upstream's strict determinism (HCCL_DETERMINISTIC=strict): on, as 1 is here */
        if (config->hcclDeterministic > 2) {
            HCCL_WARN(INIT, "HcclCommConfig.hcclDeterministic must be 0, 1 or 2, not %u", config->hcclDeterministic);
            return HCCL_E_PARA;
        }
        out->deterministic = config->hcclDeterministic != 0;
    }
    if (COVERS(hcclCommName) && config->hcclCommName[0]) {
        if (memchr(config->hcclCommName, 0, sizeof config->hcclCommName) == NULL) {
            HCCL_WARN(INIT, "HcclCommConfig.hcclCommName is not NUL-terminated");
            return HCCL_E_PARA;
        }
        snprintf(out->name, sizeof out->name, "%s", config->hcclCommName);
    }
    if (COVERS(hcclExecTimeOut) && config->hcclExecTimeOut != HCCL_COMM_EXEC_TIMEOUT_CONFIG_NOT_SET) {
        if (config->hcclExecTimeOut < 0) {
            HCCL_WARN(INIT, "HcclCommConfig.hcclExecTimeOut must be >= 0 seconds, not %d", config->hcclExecTimeOut);
            return HCCL_E_PARA;
        }
        out->exec_timeout_ns = hccl_timeout_ns(config->hcclExecTimeOut);
        out->exec_timeout_set = 1;
    }
    if (COVERS(hcclAlgo) && config->hcclAlgo[0]) {
        if (memchr(config->hcclAlgo, 0, sizeof config->hcclAlgo) == NULL) {
            HCCL_WARN(INIT, "HcclCommConfig.hcclAlgo is not NUL-terminated");
            return HCCL_E_PARA;
        }
        hccl_algo_config_parse(config->hcclAlgo, out->algo_force);
        out->algo_set = 1;
    }
#undef COVERS
    return HCCL_SUCCESS;
}

void hccl_comm_set_deterministic(int on) { __atomic_store_n(&deterministic_global, on, __ATOMIC_RELAXED); }
int hccl_comm_get_deterministic(void) { return __atomic_load_n(&deterministic_global, __ATOMIC_RELAXED); }

/* ---- registry ---------------------------------------------------------------- */

static HcclResult not_live(const char *fn, HcclComm handle)
{
    HCCL_WARN(INIT, "%s: communicator handle %p is not a live communicator (destroyed or never created)", fn, handle);
    return HCCL_E_PARA;
}

HcclResult hccl_comm_acquire(const char *fn, HcclComm handle, hccl_comm **out)
{
    if (!handle) {
        HCCL_WARN(INIT, "%s: communicator handle is NULL", fn);
        return HCCL_E_PTR;
    }
    hccl_spin_lock(&registry_lock);
    reg_entry *e = reg_find(handle);
    if (e) hccl_comm_retain((hccl_comm *)handle);
    hccl_spin_unlock(&registry_lock);
    if (!e) return not_live(fn, handle);
    *out = (hccl_comm *)handle;
    return HCCL_SUCCESS;
}

void hccl_comm_set_async_error(hccl_comm *c, HcclResult res)
{
    int expected = HCCL_SUCCESS;
    if (!__atomic_compare_exchange_n(&c->async_error, &expected, (int)res, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* the first error stays */
    hccl_spin_lock(&registry_lock); /* one field: peek reads the old or the new value */
    reg_entry *e = reg_find((HcclComm)c);
    if (e) __atomic_store_n(&e->failed, (int)res, __ATOMIC_RELAXED);
    hccl_spin_unlock(&registry_lock);
}

HcclResult hccl_comm_peek(const char *fn, HcclComm handle, uint32_t *nranks, uint32_t *rank, HcclResult *failed)
{
    if (!handle) {
        HCCL_WARN(INIT, "%s: communicator handle is NULL", fn);
        return HCCL_E_PTR;
    }
    int found = 0;
    for (int tries = 0;; tries++) {
        unsigned seq = __atomic_load_n(&registry_seq, __ATOMIC_ACQUIRE);
        /* A writer is at it (perhaps preempted): wait for its lock. */
        const int locked = (seq & 1) || tries == 8;
        if (locked) hccl_spin_lock(&registry_lock);
        const reg_entry *e = reg_find(handle);
        if ((found = e != NULL)) {
            *nranks = __atomic_load_n(&e->nranks, __ATOMIC_RELAXED);
            *rank = __atomic_load_n(&e->rank, __ATOMIC_RELAXED);
            *failed = (HcclResult)__atomic_load_n(&e->failed, __ATOMIC_RELAXED);
        }
        if (locked) {
            hccl_spin_unlock(&registry_lock);
            break;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&registry_seq, __ATOMIC_RELAXED) == seq) break;
    }
    return found ? HCCL_SUCCESS : not_live(fn, handle);
}

/* Destroys waiting for their communicator's refs to reach 0 (util/refs.h). */
static hccl_drain comm_drain = HCCL_DRAIN_INITIALIZER;

void hccl_comm_retain(hccl_comm *c) { hccl_ref_get(&c->refs); }

void hccl_comm_release(hccl_comm *c) { hccl_ref_put(&comm_drain, &c->refs); }

HcclResult hccl_comm_find_by_name(const char *name, hccl_comm **out)
{
    int32_t dev = -1;
    if (aclrtGetDevice(&dev) != ACL_SUCCESS) dev = -1;
    hccl_spin_lock(&registry_lock);
    hccl_comm *found = NULL;
    for (uint32_t i = 0; i < registry_n; i++) {
        hccl_comm *c = __atomic_load_n(&reg_at(i)->c, __ATOMIC_RELAXED);
        if (strcmp(c->name, name) != 0) continue;
        if (!found || c->device == dev) found = c; /* several thread-ranks share a name: prefer ours */
        if (c->device == dev) break;
    }
    hccl_spin_unlock(&registry_lock);
    if (!found) return HCCL_E_NOT_FOUND;
    *out = found;
    return HCCL_SUCCESS;
}

/* Handles are the communicators' addresses. A freed one is not given back to malloc
 * at once but after QUARANTINE later frees, so that a stale handle (used after its
 * HcclCommDestroy) finds no live communicator and fails, rather than reaching the
 * next communicator malloc placed at the same address. */
#define QUARANTINE 64
static hccl_comm *quarantine[QUARANTINE];
static unsigned quarantine_next;
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;

static void comm_release_memory(hccl_comm *c)
{
    pthread_mutex_lock(&quarantine_lock);
    hccl_comm *old = quarantine[quarantine_next];
    quarantine[quarantine_next] = c;
    quarantine_next = (quarantine_next + 1) % QUARANTINE;
    pthread_mutex_unlock(&quarantine_lock);
    hccl_free(old);
}

static void comm_free(hccl_comm *c)
{
    hccl_net_stop_responder(c->net); /* before its connections close */
    if (c->conns) {
        for (uint32_t p = 0; p < c->nranks; p++)
            if (c->conns[p]) c->conns[p]->ops->close(c->conns[p]);
        hccl_free(c->conns);
    }
    if (c->live) {
        for (uint32_t p = 0; p < c->nranks; p++)
            if (c->live[p]) c->live[p]->ops->close(c->live[p]);
        hccl_free(c->live);
    }
    hccl_net_destroy(c->net);
    if (c->share_dir) aclrtInternalShareDirRelease();
    if (c->listen_fd >= 0) close(c->listen_fd);
    hccl_boot_stash_free(&c->stash);
    hccl_free(c->peers);
    hccl_free(c->pids);
    hccl_free(c->hosts);
    hccl_free(c->host_of);
    hccl_free(c->host_leader);
    hccl_free(c->no_shm);
    if (c->scratch) (void)aclrtFree(c->scratch);
    hccl_flight_free(&c->flight);
    pthread_mutex_destroy(&c->exec_lock);
    pthread_mutex_destroy(&c->split_lock);
    c->magic = 0;
    comm_release_memory(c);
}

/* Set in a fork child to its own pid (getpid() is async-signal-safe): its copies of
 * the parent's communicators must not run operations (see hccl_comm_run). Kept here
 * so that the check costs no system call per operation, not even in a fork child
 * (a multiprocessing worker) that runs communicators of its own. */
int hccl_comm_fork_pid;
/* The process-wide locks are taken around fork: another thread of the parent may hold
 * one (registry_lock: every call that looks up a handle), and the child, where that
 * thread does not exist, would then wait forever in its first HcclCommInit* or
 * HcclCommDestroy. The drain's waiters are the parent's threads: not the child's. */
static void comm_prefork(void)
{
    pthread_mutex_lock(&quarantine_lock);
    hccl_spin_lock(&registry_lock);
}
static void comm_postfork_parent(void)
{
    hccl_spin_unlock(&registry_lock);
    pthread_mutex_unlock(&quarantine_lock);
}
static void comm_postfork_child(void)
{
    __atomic_store_n(&hccl_comm_fork_pid, (int)getpid(), __ATOMIC_RELAXED);
    hccl_spin_unlock(&registry_lock);
    pthread_mutex_unlock(&quarantine_lock);
    hccl_drain_reset(&comm_drain);
}
/* At load: handle lookups take registry_lock before any communicator exists. */
__attribute__((constructor)) static void comm_install_atfork(void)
{
    pthread_atfork(comm_prefork, comm_postfork_parent, comm_postfork_child);
}

static hccl_comm *comm_alloc(uint32_t rank, uint32_t nranks, const hccl_comm_cfg *cfg)
{
    hccl_comm *c = hccl_calloc(1, sizeof *c);
    if (!c) {
        HCCL_WARN(INIT, "rank %u: out of memory for a communicator", rank);
        return NULL;
    }
    hccl_log_set_rank(rank); /* HCCL_DEBUG_FILE's %r: this process's first communicator */
    c->magic = COMM_MAGIC;
    c->owner_pid = (int)getpid();
    c->rank = rank;
    c->nranks = nranks;
    c->cfg = *cfg;
    c->listen_fd = -1;
    if (aclrtGetDevice(&c->device) != ACL_SUCCESS) c->device = -1;
    hccl_boot_stash_init(&c->stash);
    hccl_flight_init(&c->flight, c->nranks);
    pthread_mutex_init(&c->exec_lock, NULL);
    pthread_mutex_init(&c->split_lock, NULL);
    c->peers = hccl_calloc(nranks, sizeof *c->peers);
    if (!c->peers) {
        HCCL_WARN(INIT, "rank %u: out of memory for a communicator of %u ranks", rank, nranks);
        comm_free(c);
        return NULL;
    }
    return c;
}

/* ---- setup exchange: who shares this host, and may we copy directly? ---------------- */

#define SETUP_CPU_WORDS 16 /* CPUs 0..1023, as cpu_set_t holds */
typedef struct setup_rec {
    uint32_t pid;
    int32_t dirfd; /* its shared device memory's directory (runtime/sharemem.h), -1 = none */
    uint64_t host;
    uint64_t probe_addr;
    uint64_t cpus[SETUP_CPU_WORDS]; /* the CPUs it may run on (bit i: CPU i) */
    uint32_t shm_disabled; /* its HCCL_SHM_DISABLE: its pairs stay on TCP, on both sides */
    uint32_t pad;
    uint64_t name_hash; /* of its hcclCommName ("" when not set): every rank's must match */
} setup_rec;
static const uint64_t probe_word = 0x424f52504c434348ull; /* "HCCLPROB" */

HCCL_PARAM_INT(shm_disable, "HCCL_SHM_DISABLE", 0)

/* The CPUs this rank (its calling thread) may run on, as a bitmap. */
static void usable_cpus(uint64_t *words)
{
    cpu_set_t set;
    memset(words, 0, SETUP_CPU_WORDS * sizeof *words);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
        for (int i = 0; i < SETUP_CPU_WORDS * 64 && i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &set)) words[i / 64] |= 1ull << (i % 64);
        return;
    }
    long k = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < (k > 0 ? k : 1) && i < SETUP_CPU_WORDS * 64; i++) words[i / 64] |= 1ull << (i % 64);
}

/* How a setup failure's reason starts, in the ABORT a failing rank sends its peers. */
#define SETUP_FAILED "communicator setup failed"

/* The last failure was a peer's abort of the setup: its reason (else NULL). */
static const char *peer_setup_abort(hccl_comm *c)
{
    const char *why = hccl_net_peer_abort(c->net);
    return why && !strncmp(why, SETUP_FAILED, strlen(SETUP_FAILED)) ? why : NULL;
}

/* A setup step failed here: abort the peers' connections with the reason. */
static void abort_setup(hccl_comm *c)
{
    char why[1200];
    const char *e = hccl_net_error(c->net), *inner = peer_setup_abort(c);
    if (inner) /* a peer's abort: pass its reason on as it came */
        snprintf(why, sizeof why, "%s", inner);
    else
        snprintf(why, sizeof why, SETUP_FAILED " on rank %u: %s", c->rank, e && e[0] ? e : "see that rank's log");
    hccl_net_abort(c->net, why);
}

/* How long a setup operation that failed looks for a report that a rank failed in the
 * mesh (hccl_boot_mesh_heard): one sent before that rank closed its connections. */
#define MESH_HEARD_NS 200000000ull

/* Run one reference operation of the setup (sequence number 0, not recorded). */
static HcclResult setup_op(hccl_comm *c, const hccl_op_args *a)
{
    hccl_fingerprint fp;
    hccl_fingerprint_of(a, c->nranks, &fp);
    fp.seq = 0;
    hccl_net_begin_op(c->net, &fp, hccl_boot_connect_timeout_ns());
    hccl_algo_ctx ctx = {c->rank, c->nranks, hccl_net_base(c->net), c->scratch, HCCL_ALGO_SCRATCH_BYTES,
                         0, 1, NULL, 0, 0, 0, 0};
    HcclResult res = hccl_algo_run_reference(&ctx, a);
    uint32_t who;
    HcclResult who_res;
    char why[800];
    if (res != HCCL_SUCCESS && hccl_boot_peer_failed(&c->ident, c->rank, &who, &who_res, why, sizeof why)) {
        /* A rank of this process (threads as ranks) failed in the mesh: its reason, not
         * the connection it closed. */
        HCCL_WARN(INIT, "comm setup on rank %u failed: rank %u of this process failed while the ranks connected: %s",
                  c->rank, who, why);
        return who_res != HCCL_SUCCESS ? who_res : res;
    }
    if (res != HCCL_SUCCESS && !peer_setup_abort(c) &&
        hccl_boot_mesh_heard(c->listen_fd, &c->stash, &c->ident, c->rank, c->nranks, MESH_HEARD_NS, &who_res, why,
                             sizeof why)) {
        /* A rank failed in the mesh after this one was done with it: the connection
         * that broke is a consequence; its report (on our listener) says who and why. */
        HCCL_WARN(INIT, "comm setup on rank %u failed: %s", c->rank, why);
        c->mesh_heard = 1;
        return who_res;
    }
    if (res != HCCL_SUCCESS)
        HCCL_WARN(INIT, "comm setup on rank %u failed: %s", c->rank, hccl_net_error(c->net));
    return res;
}

/* Every rank of a communicator must give it one name (HcclGetCommName,
 * HcclCommGetHandleWithName): the records say whether they did. When not, every rank
 * sees it alike, gathers the names and fails naming the first rank that differs from
 * rank 0, and both names. */
static HcclResult setup_same_name(hccl_comm *c, const setup_rec *recs)
{
    uint32_t p = 1;
    while (p < c->nranks && recs[p].name_hash == recs[0].name_hash) p++;
    if (p == c->nranks) return HCCL_SUCCESS;
    char(*names)[COMM_NAME_MAX_LENGTH] = hccl_calloc(c->nranks, COMM_NAME_MAX_LENGTH);
    char mine[COMM_NAME_MAX_LENGTH] = {0};
    snprintf(mine, sizeof mine, "%s", c->cfg.name);
    hccl_op_args ag = {.type = HCCL_OP_ALLGATHER, .sendbuf = mine, .recvbuf = names, .count = sizeof mine,
                       .dtype = HCCL_DATA_TYPE_UINT8};
    if (!names) return HCCL_E_MEMORY;
    HcclResult res = setup_op(c, &ag);
    if (res == HCCL_SUCCESS) {
        names[0][COMM_NAME_MAX_LENGTH - 1] = names[p][COMM_NAME_MAX_LENGTH - 1] = 0;
        HCCL_WARN(INIT, "comm setup on rank %u failed: ranks 0 and %u gave the communicator different names "
                  "(HcclCommConfig.hcclCommName): %s%s%s and %s%s%s; every rank must give it the same name, "
                  "or none", c->rank, p, names[0][0] ? "\"" : "", names[0][0] ? names[0] : "none",
                  names[0][0] ? "\"" : "", names[p][0] ? "\"" : "", names[p][0] ? names[p] : "none",
                  names[p][0] ? "\"" : "");
        res = HCCL_E_PARA;
    }
    hccl_free(names);
    return res;
}

static HcclResult setup_direct(hccl_comm *c)
{
    uint32_t n = c->nranks;
    setup_rec *recs = hccl_calloc(n, sizeof *recs);
    int32_t *dirfds = hccl_calloc(n, sizeof *dirfds);
    c->pids = hccl_calloc(n, sizeof *c->pids);
    c->hosts = hccl_calloc(n, sizeof *c->hosts);
    c->host_leader = hccl_calloc(n, sizeof *c->host_leader);
    c->no_shm = hccl_calloc(n, sizeof *c->no_shm);
    if (!recs || !dirfds || !c->pids || !c->hosts || !c->host_leader || !c->no_shm) {
        hccl_free(recs);
        hccl_free(dirfds);
        return HCCL_E_MEMORY;
    }
    int dirfd = aclrtInternalShareDirAcquire();
    c->share_dir = dirfd >= 0;
    recs[c->rank] = (setup_rec){(uint32_t)getpid(), dirfd, hccl_boot_host_hash(), (uint64_t)(uintptr_t)&probe_word, {0},
                                hccl_param_shm_disable() != 0, 0,
                                hccl_fnv1a(c->cfg.name, strlen(c->cfg.name), HCCL_FNV_SEED)};
    usable_cpus(recs[c->rank].cpus);
    hccl_op_args ag = {.type = HCCL_OP_ALLGATHER, .sendbuf = &recs[c->rank], .recvbuf = recs,
                       .count = sizeof(setup_rec), .dtype = HCCL_DATA_TYPE_UINT8};
    HcclResult res = setup_op(c, &ag);
    if (res == HCCL_SUCCESS) res = setup_same_name(c, recs);
    /* flags[0]: every peer shares our host and answers a direct copy;
     * flags[1]: every peer on our host answers a direct copy;
     * flags[2]: our host has a CPU for each of its ranks: its ranks together may run
     * on at least as many CPUs as there are ranks (else the selection picks algorithms
     * for ranks that take turns on a CPU: algo.c). Ranks bound one per core are not
     * crowded; ranks that all share one CPU set smaller than their number are.
     * flags[3]: this rank does not ask for HCCL_DETERMINISTIC (any rank that does turns
     * it on for all: it takes part in the selection, which every rank must make alike). */
    int32_t flags[4] = {1, 1, 1, !c->cfg.deterministic}, agreed[4] = {0, 0, 0, 0};
    uint32_t on_host = 0, host_cpus = 0;
    uint64_t cpus[SETUP_CPU_WORDS] = {0};
    if (hccl_param_shm_disable()) flags[0] = flags[1] = 0;
    c->host_of = hccl_calloc(n, sizeof *c->host_of);
    if (!c->host_of) res = HCCL_E_MEMORY;
    for (uint32_t p = 0; res == HCCL_SUCCESS && p < n; p++) {
        c->pids[p] = recs[p].pid;
        c->no_shm[p] = (uint8_t)(recs[p].shm_disabled || recs[c->rank].shm_disabled);
        dirfds[p] = recs[p].dirfd;
        c->hosts[p] = recs[p].host;
        uint32_t h = 0;
        while (h < c->nhosts && c->hosts[c->host_leader[h]] != recs[p].host) h++;
        if (h == c->nhosts) c->host_leader[c->nhosts++] = p;
        c->host_of[p] = h;
        if (recs[p].host == recs[c->rank].host) {
            on_host++;
            for (int w = 0; w < SETUP_CPU_WORDS; w++) cpus[w] |= recs[p].cpus[w];
        }
        if (p == c->rank) continue;
        int same = recs[p].host == recs[c->rank].host;
        int probe_ok = same && hccl_net_probe_direct(recs[p].pid, recs[p].probe_addr, probe_word) == 0;
        if (!same || !probe_ok) flags[0] = 0;
        if (same && !probe_ok) flags[1] = 0;
    }
    hccl_free(recs);
    for (int w = 0; w < SETUP_CPU_WORDS; w++) host_cpus += (uint32_t)__builtin_popcountll(cpus[w]);
    if (on_host > host_cpus) flags[2] = 0;
    hccl_op_args ar = {.type = HCCL_OP_ALLREDUCE, .sendbuf = flags, .recvbuf = agreed, .count = 4,
                       .dtype = HCCL_DATA_TYPE_INT32, .redop = HCCL_REDUCE_MIN};
    if (res == HCCL_SUCCESS) res = setup_op(c, &ar);
    c->direct = agreed[0];
    c->direct_local = agreed[1];
    c->crowded = !agreed[2];
    c->cfg.deterministic = !agreed[3];
    hccl_net_set_crowded(c->net, c->crowded);
    if (res == HCCL_SUCCESS && c->direct_local) {
        /* Direct copies only between ranks of one host; pointers into the shared
         * device memory of those that publish it. */
        uint32_t *pids = hccl_calloc(n, sizeof *pids);
        if (!pids) res = HCCL_E_MEMORY;
        for (uint32_t p = 0; pids && p < n; p++) pids[p] = c->hosts[p] == c->hosts[c->rank] ? c->pids[p] : 0;
        if (res == HCCL_SUCCESS) res = hccl_net_enable_direct(c->net, pids);
        if (res == HCCL_SUCCESS) hccl_net_enable_peermem(c->net, dirfds);
        hccl_free(pids);
    }
    hccl_free(dirfds);
    if (res != HCCL_SUCCESS) return res;
    HCCL_INFO(INIT, "comm rank %u: %u host(s); direct copies %s; %s", c->rank, c->nhosts,
              c->direct ? "between all ranks" : c->direct_local ? "within each host" : "off",
              c->crowded ? "more ranks than CPUs on a host" : "a CPU per rank");
    return HCCL_SUCCESS;
}

/* Move the peers on this host to shared memory (unless HCCL_SHM_DISABLE=1). The
 * handshakes run over the TCP connections, pair by pair in increasing rank order on
 * every rank, which cannot deadlock; the TCP connection stays open to notice the
 * peer's death. A handshake that fails falls back to TCP on both sides. */
static HcclResult setup_shm(hccl_comm *c)
{
    if (hccl_param_shm_disable()) return HCCL_SUCCESS;
    c->live = hccl_calloc(c->nranks, sizeof *c->live);
    if (!c->live) return HCCL_E_MEMORY;
    uint64_t deadline = hccl_now_ns() + hccl_boot_connect_timeout_ns();
    uint32_t nshm = 0, nfail = 0;
    char failed[256] = "";
    HcclResult why = HCCL_SUCCESS;
    for (uint32_t p = 0; p < c->nranks; p++) {
        /* A pair moves to shared memory only if neither rank disabled it (agreed in
         * setup_direct): a handshake with a peer that never answers would read its
         * operations' messages as the handshake's. */
        if (p == c->rank || c->hosts[p] != c->hosts[c->rank] || c->no_shm[p]) continue;
        hccl_conn *shm = NULL;
        HcclResult r = hccl_shm_conn_create(hccl_tcp_conn_fd(c->conns[p]), c->rank, p, deadline, &shm);
        if (r != HCCL_SUCCESS) {
            size_t o = strlen(failed);
            if (o + 16 < sizeof failed) snprintf(failed + o, sizeof failed - o, "%s%u", nfail ? ", " : "", p);
            else if (o + 4 < sizeof failed && !strstr(failed, "...")) snprintf(failed + o, sizeof failed - o, ", ...");
            if (!nfail++) why = r;
            continue;
        }
        c->live[p] = c->conns[p];
        c->conns[p] = shm;
        nshm++;
    }
    /* One WARN per rank: the lines before it (shm.c) say why but not for which pairs, and
     * TCP on one host is several times slower. */
    if (nfail) {
        char name[sizeof c->name];
        name_of(c, name, sizeof name);
        HCCL_WARN(SHM, "comm %s rank %u: shared memory with %u rank(s) of this host could not be set up (ranks %s; "
                  "first error %s, see above); those pairs use TCP", name, c->rank, nfail, failed,
                  hccl_result_str(why));
    }
    hccl_net_set_liveness(c->net, c->live);
    HCCL_INFO(SHM, "comm rank %u: %u peer(s) over shared memory", c->rank, nshm);
    return HCCL_SUCCESS;
}

/* One shared segment of mailboxes for a communicator of one host whose ranks all
 * reach each other over shared memory (the small-message path, hccl_net.slot_gather;
 * HCCL_SHM_SLOTS=0 on any rank: none). Once all ranks agreed to try, rank 0 creates
 * it and broadcasts its name, the others map it, every rank says whether it could,
 * and every rank that got the name unlinks it (after that vote, which every rank
 * enters after its attempt to map it): a crash of rank 0 after its broadcast leaves
 * nothing in /dev/shm. Used only if every rank mapped it. */
HCCL_PARAM_INT(shm_slots, "HCCL_SHM_SLOTS", 1)

static HcclResult setup_slots(hccl_comm *c)
{
    if (c->nhosts != 1 || c->nranks < 2 || c->nranks > HCCL_SLOTS_MAX_RANKS) return HCCL_SUCCESS;
    int32_t ok = hccl_param_shm_slots() != 0 && c->live, agreed = 0; /* no live: no shared memory */
    for (uint32_t p = 0; ok && p < c->nranks; p++)
        if (p != c->rank && !c->live[p]) ok = 0; /* this pair fell back to TCP */
    char name[HCCL_SLOTS_NAME_LEN];
    memset(name, 0, sizeof name);
    hccl_slots *s = NULL;
    /* First all ranks agree to try: rank 0 creates the name only once every rank is
     * here, not while the last one still makes its way (a killed job left it then). */
    hccl_op_args ar = {.type = HCCL_OP_ALLREDUCE, .sendbuf = &ok, .recvbuf = &agreed, .count = 1,
                       .dtype = HCCL_DATA_TYPE_INT32, .redop = HCCL_REDUCE_MIN};
    HcclResult res = setup_op(c, &ar);
    if (res != HCCL_SUCCESS || !agreed) return res;
    if (c->rank == 0 && hccl_slots_create(c->nranks, c->rank, name, &s) != HCCL_SUCCESS) ok = 0;
    hccl_op_args bc = {.type = HCCL_OP_BROADCAST, .recvbuf = name, .count = sizeof name,
                       .dtype = HCCL_DATA_TYPE_UINT8, .root = 0};
    res = setup_op(c, &bc);
    name[sizeof name - 1] = 0;
    if (res == HCCL_SUCCESS && c->rank != 0 && ok &&
        (!name[0] || hccl_slots_open(name, c->nranks, c->rank, &s) != HCCL_SUCCESS))
        ok = 0;
    if (res == HCCL_SUCCESS) res = setup_op(c, &ar);
    hccl_slots_unlink(name); /* every rank: rank 0 may have died since its broadcast */
    if (res != HCCL_SUCCESS || !agreed) {
        hccl_slots_close(s);
        return res;
    }
    hccl_net_enable_slots(c->net, s);
    HCCL_INFO(SHM, "comm rank %u: small operations through a shared slot segment", c->rank);
    return HCCL_SUCCESS;
}

/* Sockets per pair of ranks whose data crosses TCP (several can carry more than one
 * when a single stream is limited by its window or by one flow's path). */
HCCL_PARAM_INT_IN(socket_nconn, "HCCL_SOCKET_NCONN", 1, 1, HCCL_BOOT_MAX_SOCKS, HCCL_PARAM_CLAMP)
_Static_assert(HCCL_BOOT_MAX_SOCKS == HCCL_TCP_MAX_SOCKS, "one limit");

/* Failure messages name the host of each peer on another host ("rank 5 (host node-b
 * 10.0.0.2) exited ..."): its host name (HCCL_HOST_ID where set, the rank table's
 * server id) and the address of its listener, without the port. Ranks of this rank's
 * own host stay bare: a single-host job's messages are unchanged. Best effort. */
static void name_peer_hosts(hccl_comm *c)
{
    for (uint32_t p = 0; p < c->nranks; p++) {
        if (p == c->rank || c->peers[p].host_hash == c->peers[c->rank].host_hash) continue;
        char ip[80];
        snprintf(ip, sizeof ip, "%s", hccl_addr_str(&c->peers[p].addr));
        char *colon = strrchr(ip, ':');
        if (colon && colon != ip) *colon = 0; /* "10.0.0.2:41234" -> "10.0.0.2", "[::1]:5" -> "[::1]" */
        if (hccl_net_set_peer_host(c->net, p, c->peers[p].host[0] ? c->peers[p].host : "?", ip) != HCCL_SUCCESS)
            return;
    }
}

/* Connect the mesh, build the network and register. c->listen_fd, ident and peers set. */
static HcclResult setup(hccl_comm *c)
{
    HcclResult res;
    int *fds = hccl_malloc(sizeof(int) * c->nranks * HCCL_BOOT_MAX_SOCKS);
    unsigned *want = hccl_malloc(sizeof(unsigned) * c->nranks * 2), *nsock = want ? want + c->nranks : NULL;
    if (!fds || !want) {
        hccl_free(fds);
        hccl_free(want);
        return HCCL_E_MEMORY;
    }
    /* Pairs on one host move data over shared memory and keep one socket. */
    unsigned many = (unsigned)hccl_param_socket_nconn();
    for (uint32_t p = 0; p < c->nranks; p++)
        want[p] = hccl_param_shm_disable() || c->peers[p].host_hash != c->peers[c->rank].host_hash ? many : 1;
    res = hccl_boot_mesh(c->listen_fd, &c->stash, &c->ident, c->rank, c->nranks, c->peers,
                         hccl_boot_connect_timeout_ns(), want, fds, nsock);
    if (res != HCCL_SUCCESS) {
        hccl_free(fds);
        hccl_free(want);
        return res;
    }
    c->conns = hccl_calloc(c->nranks, sizeof *c->conns);
    if (!c->conns) res = HCCL_E_MEMORY;
    for (uint32_t p = 0; p < c->nranks; p++) {
        int *pf = fds + p * HCCL_BOOT_MAX_SOCKS;
        if (!nsock[p]) continue;
        if (nsock[p] > 1) HCCL_INFO(INIT, "comm rank %u: %u sockets to rank %u", c->rank, nsock[p], p);
        if (res == HCCL_SUCCESS) res = hccl_tcp_conn_create(pf, nsock[p], p, hccl_tcp_give_up_ms(c->cfg.exec_timeout_ns),
                                                             &c->conns[p]);
        if (res != HCCL_SUCCESS || !c->conns[p])
            for (unsigned k = 0; k < nsock[p]; k++) close(pf[k]);
    }
    hccl_free(fds);
    hccl_free(want);
    if (res != HCCL_SUCCESS) return res;
    CHECK(hccl_net_create(c->rank, c->nranks, c->conns, &c->net));
    hccl_net_set_abort_flag(c->net, &c->aborting);
    hccl_net_set_suspend_flag(c->net, &c->suspended);
    name_peer_hosts(c);
    /* Everything an operation reads from the environment is read by now, on the
     * caller's thread (HCCL_ALGO here, the engine's spin in hccl_net_create, the flight
     * recorder's directory in hccl_flight_init): an operation queued on a stream runs
     * on its worker, where getenv could race with the application's setenv. */
    (void)hccl_algo_env_reference(HCCL_OP_ALLREDUCE);
    /* Device memory: shared with the host's other ranks where it can be, which read an
     * in-place AlltoAll's copy of the send blocks from it through a pointer
     * (algo/direct_alltoall.c), and on huge pages where the kernel gives them
     * (runtime/sharemem.c). */
    if (aclrtMalloc(&c->scratch, HCCL_ALGO_SCRATCH_BYTES, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        c->scratch = NULL;
        return HCCL_E_MEMORY;
    }
    /* Faulted in now rather than by the first operations of each larger size. */
    memset(c->scratch, 0, SCRATCH_WARM_BYTES);
    HcclResult res_setup = setup_direct(c);
    if (res_setup == HCCL_SUCCESS) res_setup = setup_shm(c);
    if (res_setup == HCCL_SUCCESS) res_setup = setup_slots(c);
    if (res_setup != HCCL_SUCCESS) {
        /* Tell the peers, with the reason (which names the rank that failed first), so
         * they fail now rather than at their own timeout; and, unless a peer's abort or
         * report told us, the ranks that may still wait in the mesh (for a rank that
         * died: its connection to us was lost), on their listeners. */
        if (!peer_setup_abort(c) && hccl_log_last_warn()[0] &&
            !hccl_boot_peer_failed(&c->ident, c->rank, NULL, NULL, NULL, 0) && !c->mesh_heard)
            hccl_boot_mesh_report(&c->ident, c->nranks, c->peers, c->rank, c->rank, res_setup, hccl_log_last_warn());
        abort_setup(c);
        return res_setup;
    }
    if (!c->name[0]) name_of(c, c->name, sizeof c->name);
    hccl_net_start_responder(c->net); /* answers peers' STATUS questions between operations */
    HcclResult res_reg = reg_add(c);
    if (res_reg != HCCL_SUCCESS) {
        HCCL_WARN(INIT, "comm %s rank %u: cannot register the communicator (%s)", c->name, c->rank,
                  res_reg == HCCL_E_MEMORY ? "out of memory"
                  : res_reg == HCCL_E_PARA ? "another one with this name and rank was made meanwhile"
                                           : "65,536 communicators are live in this process");
        abort_setup(c);
        return res_reg;
    }
    HCCL_INFO(INIT, "comm %s: rank %u of %u ready (device %d)", c->name, c->rank, c->nranks, c->device);
    return HCCL_SUCCESS;
}

/* Open this rank's listener on the address that reaches `toward`; with
 * avoid_loopback, a loopback answer is replaced by the first real interface (the
 * root's name resolved to loopback on its own host, as Debian's 127.0.1.1 entry
 * for the host name does, but ranks on other hosts must reach us). */
static HcclResult open_listener(hccl_comm *c, const hccl_addr *toward, int avoid_loopback)
{
    hccl_addr a;
    CHECK(hccl_socket_local_addr(toward, &a));
    if (avoid_loopback && hccl_addr_is_loopback(&a) && !getenv("HCCL_IF_IP") && !getenv("HCCL_SOCKET_IFNAME")) {
        hccl_addr real;
        if (hccl_socket_nonloopback_addr(a.ss_family, &real) == HCCL_SUCCESS) a = real;
    }
    hccl_addr_set_port(&a, 0);
    CHECK(hccl_socket_listen(&a, 1, &c->listen_fd));
    hccl_boot_peer_self(&c->peers[c->rank], &a, c->rank);
    return HCCL_SUCCESS;
}

/* ---- root info ------------------------------------------------------------------ */

HcclResult hccl_comm_get_root_info(HcclRootInfo *root)
{
    hccl_root_blob b;
    memset(&b, 0, sizeof b);
    b.magic = HCCL_ROOT_MAGIC;
    b.version = HCCL_ROOT_VERSION;
    if (hccl_random_bytes(&b.secret, sizeof b.secret) != 0 || hccl_random_bytes(&b.id, sizeof b.id) != 0)
        return HCCL_E_SYSCALL;
    CHECK(hccl_socket_local_addr(NULL, &b.root));
    hccl_addr_set_port(&b.root, 0);
    hccl_boot_ident ident = {b.secret, b.id, 0};
    CHECK(hccl_boot_root_start(&b.root, &ident, 1));
    memset(root, 0, sizeof *root);
    memcpy(root->internal, &b, sizeof b);
    return HCCL_SUCCESS;
}

/* A rank that failed creation and hosts the group's root (its process made the root
 * info, or is rank 0 of a launch) keeps it this long at most for the ranks still to
 * come, so that they get the reason too. */
#define ROOT_LINGER_NS 3000000000ull

/* A rank whose creation (fn) failed before it joined its root tells the root, which
 * refuses the group at once: the other ranks fail now, with this rank's reason, instead
 * of waiting for it until HCCL_CONNECT_TIMEOUT. The reason is the WARN the failure
 * logged (since warn_seq), else the result's text. */
static void tell_root(const hccl_addr *root, const hccl_boot_ident *ident, uint32_t nranks, uint32_t rank,
                      const char *fn, HcclResult res, uint64_t warn_seq)
{
    const char *why = hccl_log_warn_seq() != warn_seq ? hccl_log_last_warn() : hccl_result_str(res);
    hccl_boot_report_failure(root, ident, nranks, rank, fn, why, 0);
    hccl_boot_root_linger(ident->id, ROOT_LINGER_NS);
}

/* The same for a rank that the application interrupted (HcclSetInterruptCheck): it
 * returns at once, so one quick try and no lingering (a root thread of this process
 * goes on refusing the others with this reason until they came or its timeout). */
static void tell_root_interrupted(const hccl_addr *root, const hccl_boot_ident *ident, uint32_t nranks, uint32_t rank,
                                  const char *fn)
{
    hccl_boot_report_failure(root, ident, nranks, rank, fn, HCCL_INTERRUPTED_INIT, 1);
}

static HcclResult init_with_root(uint32_t nranks, const hccl_addr *root_addr, const hccl_boot_ident *ident,
                                 uint32_t rank, const hccl_comm_cfg *cfg, int avoid_loopback, const char *hint,
                                 const char *fn, hccl_comm **out)
{
    HcclResult res;
    uint64_t warn_seq = hccl_log_warn_seq();
    hccl_comm *c = comm_alloc(rank, nranks, cfg);
    if (!c) {
        tell_root(root_addr, ident, nranks, rank, fn, HCCL_E_MEMORY, warn_seq);
        return HCCL_E_MEMORY;
    }
    c->ident = *ident;
    CHECK_GOTO(name_is_free(c, "communicator init", " (HcclCommConfig.hcclCommName must be unique)"), res,
               fail_unjoined);
    CHECK_GOTO(open_listener(c, root_addr, avoid_loopback), res, fail_unjoined);
    hccl_boot_peer self = c->peers[rank];
    /* A failed join needs no report (the root refused us, or cannot be reached), except
     * when this rank could not even open its connection (EMFILE): the root waits for it. */
    unsigned iseq = hccl_interrupt_seq();
    res = hccl_boot_join(root_addr, ident, nranks, &self, hccl_boot_connect_timeout_ns(), hint, NULL, c->peers);
    if (res != HCCL_SUCCESS && hccl_interrupt_seq() != iseq) {
        comm_free(c);
        tell_root_interrupted(root_addr, ident, nranks, rank, fn);
        return res;
    }
    if (res == HCCL_E_SYSCALL && errno != 0) goto fail_unjoined;
    if (res == HCCL_E_PARA || res == HCCL_E_SYSCALL) /* refused, or the root is out of descriptors */
        hccl_boot_root_linger(ident->id, ROOT_LINGER_NS);
    if (res != HCCL_SUCCESS) goto fail;
    CHECK_GOTO(setup(c), res, fail);
    *out = c;
    return HCCL_SUCCESS;
fail_unjoined:
    comm_free(c); /* first: its descriptors may be what the report needs */
    tell_root(root_addr, ident, nranks, rank, fn, res, warn_seq);
    return res;
fail:
    comm_free(c);
    return res;
}

/* Whether a root info's blob is one of ours with a usable root address. */
static int root_blob_ok(const hccl_root_blob *b)
{
    return b->magic == HCCL_ROOT_MAGIC && b->version == HCCL_ROOT_VERSION &&
           (b->root.ss_family == AF_INET || b->root.ss_family == AF_INET6) && hccl_addr_port(&b->root) != 0;
}

void hccl_comm_root_info_failed(uint32_t nranks, const HcclRootInfo *root, uint32_t rank, const char *fn,
                                HcclResult res, uint64_t warn_seq)
{
    hccl_root_blob b;
    if (!root) return;
    memcpy(&b, root->internal, sizeof b);
    if (!root_blob_ok(&b) || hccl_boot_root_finished(b.id)) return;
    hccl_boot_ident ident = {b.secret, b.id, 0};
    tell_root(&b.root, &ident, nranks, rank, fn, res, warn_seq);
}

HcclResult hccl_comm_init_root(uint32_t nranks, const HcclRootInfo *root, uint32_t rank, const HcclCommConfig *config,
                               hccl_comm **out)
{
    hccl_root_blob b;
    memcpy(&b, root->internal, sizeof b);
    if (b.magic != HCCL_ROOT_MAGIC || b.version != HCCL_ROOT_VERSION) {
        HCCL_WARN(INIT, "root info is not valid (not made by HcclGetRootInfo of this library, or corrupted)");
        return HCCL_E_PARA;
    }
    if ((b.root.ss_family != AF_INET && b.root.ss_family != AF_INET6) || hccl_addr_port(&b.root) == 0) {
        HCCL_WARN(INIT, "root info is not valid: its root address (family %u, port %u) is corrupted",
                  (unsigned)b.root.ss_family,
                  b.root.ss_family == AF_INET || b.root.ss_family == AF_INET6 ? hccl_addr_port(&b.root) : 0u);
        return HCCL_E_PARA;
    }
    if (hccl_boot_root_finished(b.id)) {
        HCCL_WARN(INIT, "rank %u: this root info was made by HcclGetRootInfo in this process and its root has "
                  "already served a communicator (or given up waiting) and stopped: a root info serves one "
                  "communicator; call HcclGetRootInfo for each", rank);
        return HCCL_E_PARA;
    }
    hccl_boot_ident ident = {b.secret, b.id, 0};
    hccl_comm_cfg cfg;
    uint64_t warn_seq = hccl_log_warn_seq();
    HcclResult res = hccl_comm_cfg_resolve(config, &cfg);
    if (res != HCCL_SUCCESS) {
        tell_root(&b.root, &ident, nranks, rank, "HcclCommInitRootInfo", res, warn_seq);
        return res;
    }
    return init_with_root(nranks, &b.root, &ident, rank, &cfg, 0, NULL, "HcclCommInitRootInfo", out);
}

/* ---- launcher environment ------------------------------------------------------- */

HcclResult hccl_comm_init_env(const HcclCommConfig *config, hccl_comm **out)
{
    hccl_launch_env env;
    char err[512];
    if (hccl_launch_env_read(&env, NULL, err, sizeof err) != HCCL_SUCCESS) {
        HCCL_WARN(INIT, "%s", err);
        return HCCL_E_PARA;
    }
    /* An invalid config fails this rank, but only once the others can be told (below). */
    hccl_comm_cfg cfg;
    uint64_t warn_seq = hccl_log_warn_seq();
    HcclResult cfg_res = hccl_comm_cfg_resolve(config, &cfg);
    char cfg_why[256];
    snprintf(cfg_why, sizeof cfg_why, "%s",
             hccl_log_warn_seq() != warn_seq ? hccl_log_last_warn() : hccl_result_str(cfg_res));
    hccl_addr root;
    if (hccl_addr_parse(env.root_addr, env.root_port, &root) != HCCL_SUCCESS) {
        HCCL_WARN(INIT, "launch environment: %s=\"%s\" (the bootstrap root's address) cannot be resolved on this host",
                  env.root_addr_var, env.root_addr);
        return HCCL_E_PARA;
    }
    hccl_boot_ident ident = {env.secret, hccl_fnv1a("world", 5, env.secret ^ HCCL_FNV_SEED), 0};
    /* A host name that resolves to loopback here (Debian maps the own host name to
     * 127.0.1.1) may name a real interface for the other hosts. */
    unsigned char lit[sizeof(struct in6_addr)];
    int named_loopback = hccl_addr_is_loopback(&root) && strcmp(env.root_addr, "localhost") != 0 &&
                         inet_pton(AF_INET, env.root_addr, lit) != 1 && inet_pton(AF_INET6, env.root_addr, lit) != 1;
    char hint[768] = "";
    if (env.rank == 0) {
        hccl_addr bind_addr = root;
        HcclResult r = HCCL_E_UNAVAIL;
        if (!named_loopback) r = hccl_boot_root_start(&bind_addr, &ident, 0);
        if (r != HCCL_SUCCESS) {
            /* The root address may name this host by an address we cannot bind (NAT:
             * an external address of this host on no local interface): listen on
             * every address at that port instead. */
            memset(&bind_addr, 0, sizeof bind_addr);
            bind_addr.ss_family = root.ss_family;
            hccl_addr_set_port(&bind_addr, env.root_port);
            r = hccl_boot_root_start(&bind_addr, &ident, 0);
            if (r == HCCL_SUCCESS && !named_loopback) {
                HCCL_WARN(INIT,
                          "rank 0: %s=%s is not an address of this host, so the bootstrap root listens on every "
                          "address at port %u; that only works if %s leads to this host (NAT)",
                          env.root_addr_var, env.root_addr, env.root_port, env.root_addr);
                /* Rank 0 serves the root itself: if it cannot reach it there, the
                 * address names another host, not a root that is late. */
                snprintf(hint, sizeof hint,
                         ": rank 0 (this process) serves the root, on every address of this host, but %s=%s does "
                         "not lead back to it: %s must name rank 0's host (an address of it, or its NAT address)",
                         env.root_addr_var, env.root_addr, env.root_addr_var);
            }
        }
        if (r != HCCL_SUCCESS) {
            HCCL_WARN(INIT, "rank 0 cannot host the bootstrap root at %s:%u (from %s variables): port in use?",
                      env.root_addr, env.root_port, env.source);
            return r;
        }
    }
    if (cfg_res != HCCL_SUCCESS) {
        hccl_boot_report_failure(&root, &ident, env.nranks, env.rank, "HcclCommInitFromEnv", cfg_why, 0);
        hccl_boot_root_linger(ident.id, ROOT_LINGER_NS);
        return cfg_res;
    }
    HCCL_INFO(INIT, "rank %u of %u from the %s environment; root %s", env.rank, env.nranks, env.source,
              hccl_addr_str(&root));
    return init_with_root(env.nranks, &root, &ident, env.rank, &cfg, named_loopback, hint[0] ? hint : NULL,
                          "HcclCommInitFromEnv", out);
}

/* ---- rank table ------------------------------------------------------------------ */

/* Two ranks of a rank table with one listening address (the same device_ip and
 * device_port) could never all listen; say which, instead of a bootstrap timeout. */
typedef struct addr_key {
    unsigned char k[20]; /* family, port (big endian), address */
    uint32_t rank;
} addr_key;

static int addr_key_cmp(const void *a, const void *b)
{
    const addr_key *x = a, *y = b;
    int r = memcmp(x->k, y->k, sizeof x->k);
    return r ? r : (x->rank > y->rank) - (x->rank < y->rank);
}

static HcclResult ranktable_unique_addrs(const hccl_comm *c, const char *path)
{
    addr_key *v = hccl_calloc(c->nranks, sizeof *v);
    if (!v) return HCCL_E_MEMORY;
    for (uint32_t r = 0; r < c->nranks; r++) {
        const hccl_addr *a = &c->peers[r].addr;
        uint16_t port = hccl_addr_port(a);
        v[r].k[0] = (unsigned char)a->ss_family;
        v[r].k[1] = (unsigned char)(port >> 8);
        v[r].k[2] = (unsigned char)port;
        if (a->ss_family == AF_INET)
            memcpy(v[r].k + 3, &((const struct sockaddr_in *)a)->sin_addr, 4);
        else if (a->ss_family == AF_INET6)
            memcpy(v[r].k + 3, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
        v[r].rank = r;
    }
    qsort(v, c->nranks, sizeof *v, addr_key_cmp);
    HcclResult res = HCCL_SUCCESS;
    for (uint32_t i = 1; i < c->nranks; i++) {
        if (memcmp(v[i].k, v[i - 1].k, sizeof v[i].k) != 0) continue;
        HCCL_WARN(INIT,
                  "rank table %s: ranks %u and %u would both listen on %s (device_ip, or host_ip, and device_port, "
                  "or HCCL_IF_BASE_PORT + the index on the server): every rank needs its own address and port",
                  path, v[i - 1].rank, v[i].rank, hccl_addr_str(&c->peers[v[i].rank].addr));
        res = HCCL_E_PARA;
        break;
    }
    hccl_free(v);
    return res;
}

/* Where rank r of a table listens: its address (device_ip, else host_ip) and its port
 * (device_port, else HCCL_IF_BASE_PORT base + its index on its server, whose first
 * rank is first_of_server); 0 where that is past 65535. */
static uint16_t ranktable_port(const hccl_ranktable *rt, uint32_t r, uint32_t first_of_server, int64_t base,
                               const char **ip)
{
    const hccl_rt_rank *e = &rt->ranks[r];
    *ip = e->device_ip[0] ? e->device_ip : e->host_ip;
    if (e->device_port) return e->device_port;
    return base + (r - first_of_server) > 65535 ? 0 : (uint16_t)(base + (r - first_of_server));
}

/* Everyone knows everyone's address from the file: no root needed. The job identity
 * is a hash of the table (plus HCCL_JOB_SECRET when set): the same on every try. */
static void ranktable_ident(const hccl_ranktable *rt, int64_t base, hccl_boot_ident *ident)
{
    uint64_t h = HCCL_FNV_SEED;
    const char *js = getenv("HCCL_JOB_SECRET");
    if (js) h = hccl_fnv1a(js, strlen(js), h);
    uint32_t first_of_server = 0;
    for (uint32_t r = 0; r < rt->nranks; r++) {
        const hccl_rt_rank *e = &rt->ranks[r];
        if (r == 0 || rt->ranks[r - 1].server_index != e->server_index) first_of_server = r;
        const char *ip;
        uint16_t port = ranktable_port(rt, r, first_of_server, base, &ip);
        h = hccl_fnv1a(ip, strlen(ip), h);
        h = hccl_fnv1a(&port, sizeof port, h);
        h = hccl_fnv1a(&e->rank_id, sizeof e->rank_id, h);
    }
    memset(ident, 0, sizeof *ident);
    ident->secret = h;
    ident->id = hccl_fnv1a("ranktable", 9, h);
}

HcclResult hccl_comm_init_ranktable(const char *path, uint32_t rank, const HcclCommConfig *config, hccl_comm **out)
{
    hccl_ranktable rt;
    char err[512];
    HcclResult res = hccl_ranktable_load(path, &rt, err, sizeof err);
    if (res != HCCL_SUCCESS) {
        HCCL_WARN(INIT, "%s", err);
        return res;
    }
    /* An invalid config fails this rank, but only once the others can be told (below). */
    hccl_comm_cfg cfg;
    hccl_comm *c = NULL;
    int attempt = 0;
    uint64_t warn_seq = hccl_log_warn_seq();
    HcclResult cfg_res = hccl_comm_cfg_resolve(config, &cfg);
    char cfg_why[256];
    snprintf(cfg_why, sizeof cfg_why, "%s",
             hccl_log_warn_seq() != warn_seq ? hccl_log_last_warn() : hccl_result_str(cfg_res));
    if (cfg_res != HCCL_SUCCESS) (void)hccl_comm_cfg_resolve(NULL, &cfg);
    int64_t base = hccl_param_read_int_in("HCCL_IF_BASE_PORT", 60000, 1, 65535, HCCL_PARAM_DEFAULT);
    hccl_boot_ident ident;
    ranktable_ident(&rt, base, &ident);
    if (rank >= rt.nranks) {
        HCCL_WARN(INIT, "rank %u is out of range: the rank table %s lists %u ranks", rank, path, rt.nranks);
        /* It took part in a try of the group as no rank: its retry is a rank's later
         * attempt (hccl_boot_attempt_end). */
        hccl_boot_attempt_end(&ident, UINT32_MAX);
        res = HCCL_E_PARA;
        goto done;
    }
    c = comm_alloc(rank, rt.nranks, &cfg);
    if (!c) {
        res = HCCL_E_MEMORY;
        goto done;
    }
    uint32_t first_of_server = 0;
    for (uint32_t r = 0; r < rt.nranks; r++) {
        hccl_rt_rank *e = &rt.ranks[r];
        if (r == 0 || rt.ranks[r - 1].server_index != e->server_index) first_of_server = r;
        const char *ip;
        uint16_t port = ranktable_port(&rt, r, first_of_server, base, &ip);
        if (!port) {
            HCCL_WARN(INIT, "rank table %s: rank %u has no device_port and HCCL_IF_BASE_PORT %lld + %u is past port "
                      "65535", path, r, (long long)base, r - first_of_server);
            res = HCCL_E_PARA;
            goto done;
        }
        CHECK_GOTO(hccl_addr_parse(ip, port, &c->peers[r].addr), res, done);
        snprintf(c->peers[r].host, sizeof c->peers[r].host, "%.63s", e->server_id);
        c->peers[r].rank = r;
        c->peers[r].host_hash = hccl_fnv1a(e->server_id, strlen(e->server_id), HCCL_FNV_SEED);
    }
    CHECK_GOTO(ranktable_unique_addrs(c, path), res, done);
    c->ident = ident;
    c->peers[rank].pid = (uint32_t)getpid();
    /* This rank's attempt, until it returns: a failure recorded in another try of the
     * same table (threads as ranks retrying) is not this one's. */
    hccl_boot_attempt_begin(&c->ident, rank);
    attempt = 1;
    /* From here every rank's listener is known: a failure before this rank opens its own
     * is told to the others (not_joined), which would otherwise wait for it until
     * HCCL_CONNECT_TIMEOUT. */
    if (cfg_res != HCCL_SUCCESS) {
        res = cfg_res;
        goto not_joined;
    }
    warn_seq = hccl_log_warn_seq();
    CHECK_GOTO(name_is_free(c, "HcclCommInitClusterInfo",
                            c->cfg.name[0] ? " (HcclCommConfig.hcclCommName must be unique)"
                                           : ": this rank of this rank table is live already"),
               res, not_joined);
    {
        hccl_addr a = c->peers[rank].addr;
        res = hccl_socket_listen(&a, 0, &c->listen_fd);
        if (res != HCCL_SUCCESS) {
            HCCL_WARN(INIT, "rank %u cannot listen on %s given by the rank table %s (not an address of this host, "
                      "or the port is in use)", rank, hccl_addr_str(&c->peers[rank].addr), path);
            goto not_joined;
        }
    }
    CHECK_GOTO(setup(c), res, done);
    *out = c;
    c = NULL;
    goto done;
not_joined: {
    char why[400];
    snprintf(why, sizeof why, "HcclCommInitClusterInfo failed before it connected: %s",
             cfg_res != HCCL_SUCCESS              ? cfg_why
             : hccl_log_warn_seq() != warn_seq ? hccl_log_last_warn()
                                               : hccl_result_str(res));
    hccl_boot_mesh_report_unjoined(&c->ident, c->nranks, c->peers, rank, res, why, ROOT_LINGER_NS);
}
done:
    if (c) comm_free(c);
    if (attempt) hccl_boot_attempt_end(&ident, rank);
    hccl_ranktable_free(&rt);
    return res;
}

/* ---- sub-communicators -------------------------------------------------------------- */

/* A rank that failed HcclCreateSubCommConfig before it joined (its config, its name)
 * tells the others, as tell_root does for HcclCommInitRootInfo: they fail now with its
 * reason instead of at HCCL_CONNECT_TIMEOUT. Rank 0, which would have served them,
 * refuses those that are waiting or come within 200 ms. */
static void split_tell(hccl_comm *parent, const hccl_boot_ident *ident, uint32_t nranks, const uint32_t *rank_ids,
                       uint32_t sub_rank, HcclResult res, uint64_t warn_seq)
{
    const char *why = hccl_log_warn_seq() != warn_seq ? hccl_log_last_warn() : hccl_result_str(res);
    if (sub_rank != 0) {
        hccl_boot_report_failure(&parent->peers[rank_ids[0]].addr, ident, nranks, sub_rank,
                                 "HcclCreateSubCommConfig", why, 0);
        return;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "rank 0 (parent rank %u) failed HcclCreateSubCommConfig before joining: %s",
             parent->rank, why);
    pthread_mutex_lock(&parent->split_lock);
    hccl_boot_refuse(parent->listen_fd, &parent->stash, ident, nranks, msg);
    pthread_mutex_unlock(&parent->split_lock);
}

/* The identity of the parent's sub-communicator sub_id of rank_ids. */
static hccl_boot_ident split_ident(const hccl_comm *parent, uint32_t nranks, const uint32_t *rank_ids, uint64_t sub_id)
{
    hccl_boot_ident ident = {parent->ident.secret, 0, 0};
    uint64_t g = hccl_fnv1a(&sub_id, sizeof sub_id, parent->ident.id ^ HCCL_FNV_SEED);
    ident.id = hccl_fnv1a(rank_ids, sizeof *rank_ids * nranks, g);
    ident.group = (uint32_t)(g ^ (g >> 32)) | 1u;
    return ident;
}

/* The identity of a sub-communicator is the same on every try (the parent's, subCommId,
 * rankIds): each call is an attempt of its rank (hccl_boot_attempt_begin/end), so that
 * with threads as ranks a retry is not failed by the records of an earlier try's
 * failures (hccl_boot_rank_failed), as for a rank table. */
void hccl_comm_split_failed(hccl_comm *parent, uint32_t nranks, const uint32_t *rank_ids, uint64_t sub_id,
                            uint32_t sub_rank, HcclResult res, uint64_t warn_seq)
{
    hccl_boot_ident ident = split_ident(parent, nranks, rank_ids, sub_id);
    hccl_boot_attempt_begin(&ident, sub_rank);
    split_tell(parent, &ident, nranks, rank_ids, sub_rank, res, warn_seq);
    hccl_boot_attempt_end(&ident, sub_rank);
}

static HcclResult split_attempt(hccl_comm *parent, const hccl_boot_ident *idp, uint32_t nranks,
                                const uint32_t *rank_ids, uint64_t sub_id, uint32_t sub_rank,
                                const HcclCommConfig *config, hccl_comm **out);

HcclResult hccl_comm_split(hccl_comm *parent, uint32_t nranks, const uint32_t *rank_ids, uint64_t sub_id,
                           uint32_t sub_rank, const HcclCommConfig *config, hccl_comm **out)
{
    hccl_boot_ident ident = split_ident(parent, nranks, rank_ids, sub_id);
    hccl_boot_attempt_begin(&ident, sub_rank);
    HcclResult res = split_attempt(parent, &ident, nranks, rank_ids, sub_id, sub_rank, config, out);
    hccl_boot_attempt_end(&ident, sub_rank);
    return res;
}

static HcclResult split_attempt(hccl_comm *parent, const hccl_boot_ident *idp, uint32_t nranks,
                                const uint32_t *rank_ids, uint64_t sub_id, uint32_t sub_rank,
                                const HcclCommConfig *config, hccl_comm **out)
{
    HcclResult res;
    hccl_boot_ident ident = *idp;
    uint64_t warn_seq = hccl_log_warn_seq();
    hccl_comm_cfg cfg;
    res = hccl_comm_cfg_resolve(config, &cfg);
    if (res != HCCL_SUCCESS) {
        split_tell(parent, &ident, nranks, rank_ids, sub_rank, res, warn_seq);
        return res;
    }
    /* A config that leaves hcclExecTimeOut unset takes the parent's; one that sets it,
     * 0 (never) included, is used as given. */
    if (!cfg.exec_timeout_set) cfg.exec_timeout_ns = parent->cfg.exec_timeout_ns;
    hccl_comm *c = comm_alloc(sub_rank, nranks, &cfg);
    if (!c) return HCCL_E_MEMORY;
    c->ident = ident;
    res = name_is_free(c, "HcclCreateSubCommConfig",
                       c->cfg.name[0] ? " (HcclCommConfig.hcclCommName must be unique)"
                                      : ": the parent's sub-communicator with this subCommId and rankIds; "
                                        "destroy it first or use another subCommId");
    if (res != HCCL_SUCCESS) {
        comm_free(c);
        split_tell(parent, &ident, nranks, rank_ids, sub_rank, res, warn_seq);
        return res;
    }
    CHECK_GOTO(open_listener(c, &parent->peers[parent->rank].addr, 0), res, fail);
    hccl_boot_peer self = c->peers[sub_rank];
    uint64_t timeout = hccl_boot_connect_timeout_ns();
    if (sub_rank == 0) {
        /* One serve at a time on the parent's listener, and per parent: with ranks as
         * threads, a process-wide lock let one rank serve a sub-communicator that waited
         * for a rank blocked on that lock to serve another one (until the timeout). */
        pthread_mutex_lock(&parent->split_lock);
        res = hccl_boot_serve(parent->listen_fd, &parent->stash, &c->ident, nranks, &self, timeout,
                              &parent->aborting, c->peers);
        pthread_mutex_unlock(&parent->split_lock);
        if (res != HCCL_SUCCESS) goto fail;
    } else {
        unsigned iseq = hccl_interrupt_seq();
        res = hccl_boot_join(&parent->peers[rank_ids[0]].addr, &c->ident, nranks, &self, timeout, NULL,
                             &parent->aborting, c->peers);
        if (res != HCCL_SUCCESS && hccl_interrupt_seq() != iseq) { /* the others fail now, naming this rank */
            tell_root_interrupted(&parent->peers[rank_ids[0]].addr, &c->ident, nranks, sub_rank,
                                  "HcclCreateSubCommConfig");
            goto fail;
        }
        /* Out of descriptors (here or at rank 0), or refused (other rankIds or nranks):
         * the join said why. */
        if (res == HCCL_E_SYSCALL || res == HCCL_E_PARA) goto fail;
        if (res != HCCL_SUCCESS) {
            HCCL_WARN(INIT,
                      "sub-communicator %llu: parent rank %u (its rank 0, which serves the rendezvous) did not "
                      "answer parent rank %u: did it call HcclCreateSubCommConfig with the same rankIds and subCommId?",
                      (unsigned long long)sub_id, rank_ids[0], parent->rank);
            goto fail;
        }
    }
    CHECK_GOTO(setup(c), res, fail);
    *out = c;
    return HCCL_SUCCESS;
fail:
    comm_free(c);
    return res;
}

/* ---- destruction ------------------------------------------------------------------- */

/* Frees a communicator destroyed from a stream task once the operations it still had
 * queued have been dropped (hccl_comm_destroy). */
static void *reap(void *p)
{
    hccl_comm *c = p;
    pthread_setname_np(pthread_self(), "hccl-reaper");
    hccl_ref_wait(&comm_drain, &c->refs, NULL);
    HCCL_INFO(INIT, "comm %s: rank %u destroyed", c->name, c->rank);
    comm_free(c);
    return NULL;
}

/* Hands c to a reaper thread, which frees it once its last reference goes; 0 when
 * started. The thread may free c at once: what the caller's log line names is copied
 * into name (sizeof c->name bytes) and *rank first. */
static int reap_later(hccl_comm *c, char *name, uint32_t *rank)
{
    memcpy(name, c->name, sizeof c->name);
    *rank = c->rank;
    return hccl_thread_start(NULL, reap, c);
}

HcclResult hccl_comm_destroy(HcclComm handle)
{
    if (!handle) {
        HCCL_WARN(INIT, "HcclCommDestroy: communicator handle is NULL");
        return HCCL_E_PTR;
    }
    hccl_comm *c = reg_remove(handle) ? (hccl_comm *)handle : NULL;
    if (!c) {
        HCCL_WARN(INIT, "HcclCommDestroy: %p is not a live communicator", handle);
        return HCCL_E_PARA;
    }
    if (hccl_comm_inherited(c)) {
        /* A fork child's copy: the operations its parent had queued hold references
         * that nothing here will ever drop (the child has no stream workers), and
         * closing would reach into state the parent shares (a shared-memory ring
         * marked closed fails the parent's peer). Forgotten only: the child's copies
         * of its descriptors and mappings go when the child exits. */
        HCCL_INFO(INIT, "comm %s: rank %u's copy forgotten in a forked child", c->name, c->rank);
        return HCCL_SUCCESS;
    }
    /* Let queued operations finish for a moment; then make any that still wait on
     * peers give up, so destroy never hangs on a dead or frozen peer. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    if (hccl_ref_wait(&comm_drain, &c->refs, &ts) != 0) {
        int left = __atomic_load_n(&c->refs, __ATOMIC_SEQ_CST);
        __atomic_store_n(&c->aborting, 1, __ATOMIC_RELEASE);
        if (aclrtInternalInStreamTask()) {
            /* A host task (or a synchronizer running the stream's tasks): operations
             * queued behind it on its stream cannot be reached before it returns, so
             * waiting for them here would never end. A thread of ours waits instead. */
            char name[sizeof c->name];
            uint32_t rank;
            if (reap_later(c, name, &rank) == 0) {
                HCCL_WARN(INIT, "comm %s rank %u: destroyed from a stream task with %d operation(s) still queued or "
                          "waiting for peers; they are dropped when reached, and the communicator is freed then",
                          name, rank, left);
                return HCCL_SUCCESS;
            }
        }
        HCCL_WARN(INIT, "comm %s rank %u: destroyed with %d operation(s) still queued or waiting for peers; aborting them",
                  c->name, c->rank, left);
        /* The running ones give up at once. Ones still queued on a stream may wait behind
         * other work there (a host task, another communicator's operation waiting for
         * its peers) for as long as that takes: once only those are left, they are
         * dropped when reached and a thread of ours frees the communicator then. */
        for (;;) {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            if (hccl_ref_wait(&comm_drain, &c->refs, &ts) == 0) break;
            int queued = __atomic_load_n(&c->queued, __ATOMIC_SEQ_CST);
            if (queued <= 0 || queued != __atomic_load_n(&c->refs, __ATOMIC_SEQ_CST)) continue;
            char name[sizeof c->name];
            uint32_t rank;
            if (reap_later(c, name, &rank) != 0) {
                hccl_ref_wait(&comm_drain, &c->refs, NULL);
                break;
            }
            HCCL_INFO(INIT, "comm %s rank %u: %d operation(s) still queued on streams behind other work; they are "
                      "dropped when reached, and the communicator is freed then", name, rank, queued);
            return HCCL_SUCCESS;
        }
    }
    HCCL_INFO(INIT, "comm %s: rank %u destroyed", c->name, c->rank);
    comm_free(c);
    return HCCL_SUCCESS;
}
