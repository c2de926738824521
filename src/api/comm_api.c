/*
 * comm_api.c - exported communicator management: creation, queries, destruction,
 * global configuration, groups and suspension.
 */
#include "api_int.h"
#include "boot/boot.h"
#include "core/net.h"
#include "runtime/stream_task.h"

#include "util/errors.h"
#include "util/log.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

const char *HcclGetErrorString(HcclResult code) { return hccl_result_str(code); }

/* Every field of HcclCommConfig (version HCCL_COMM_CONFIG_VERSION) is accepted by the
 * *Config initialisers (hccl_comm_cfg_resolve), so all capabilities are reported. */
uint32_t HcclGetCommConfigCapability(void) { return HCCL_COMM_CONFIG_RESERVED; }

/* A NULL out-pointer: HCCL_E_PTR, with the WARN every rejected call logs. */
static HcclResult null_out(const char *fn, const char *what)
{
    HCCL_WARN(INIT, "%s: %s is NULL", fn, what);
    return HCCL_E_PTR;
}

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo)
{
    if (!rootInfo) {
        HCCL_WARN(INIT, "HcclGetRootInfo: rootInfo is NULL");
        return HCCL_E_PTR;
    }
    return hccl_comm_get_root_info(rootInfo);
}

static HcclResult check_init(const char *fn, uint32_t nranks, uint32_t rank, const void *root, HcclComm *comm)
{
    if (!root || !comm) {
        HCCL_WARN(INIT, "%s: %s is NULL", fn, !root ? "rootInfo" : "comm");
        return HCCL_E_PTR;
    }
    if (nranks == 0 || rank >= nranks) {
        HCCL_WARN(INIT, "%s: rank %u / nRanks %u is invalid (need nRanks >= 1 and rank < nRanks)", fn, rank, nranks);
        return HCCL_E_PARA;
    }
    if (nranks > HCCL_COMM_MAX_RANKS) {
        HCCL_WARN(INIT, "%s: nRanks %u is more than a communicator may have (%u)", fn, nranks, HCCL_COMM_MAX_RANKS);
        return HCCL_E_PARA;
    }
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                      const HcclCommConfig *config, HcclComm *comm)
{
    uint64_t warn_seq = hccl_log_warn_seq();
    HcclResult res = check_init("HcclCommInitRootInfo", nRanks, rank, rootInfo, comm);
    if (res != HCCL_SUCCESS) {
        hccl_comm_root_info_failed(nRanks, rootInfo, rank, "HcclCommInitRootInfo", res, warn_seq);
        return res;
    }
    hccl_comm *c;
    CHECK(hccl_comm_init_root(nRanks, rootInfo, rank, config, &c));
    *comm = c;
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm)
{
    return HcclCommInitRootInfoConfig(nRanks, rootInfo, rank, NULL, comm);
}

HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo, uint32_t rank, HcclCommConfig *config,
                                         HcclComm *comm)
{
    if (!clusterInfo || !comm) {
        HCCL_WARN(INIT, "HcclCommInitClusterInfo: %s is NULL", !clusterInfo ? "clusterInfo" : "comm");
        return HCCL_E_PTR;
    }
    hccl_comm *c;
    CHECK(hccl_comm_init_ranktable(clusterInfo, rank, config, &c));
    *comm = c;
    return HCCL_SUCCESS;
}

HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm)
{
    return HcclCommInitClusterInfoConfig(clusterInfo, rank, NULL, comm);
}

HcclResult HcclCommInitFromEnv(const HcclCommConfig *config, HcclComm *comm)
{
    if (!comm) {
        HCCL_WARN(INIT, "HcclCommInitFromEnv: comm is NULL");
        return HCCL_E_PTR;
    }
    hccl_comm *c;
    CHECK(hccl_comm_init_env(config, &c));
    *comm = c;
    return HCCL_SUCCESS;
}

/* The InitAll threads wait at a gate until every one of them exists: a thread that
 * cannot be created (RLIMIT_NPROC, no memory for a stack) then fails the call at once,
 * instead of leaving the others at the root until HCCL_CONNECT_TIMEOUT. */
typedef struct initall_gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int state; /* 0: wait, 1: go, -1: give up */
} initall_gate;

typedef struct initall_arg {
    initall_gate *gate;
    const HcclRootInfo *root;
    uint32_t n, rank;
    int32_t device;
    HcclComm comm;
    HcclResult res;
    char why[400]; /* the rank's last WARN when it failed */
} initall_arg;

static void *initall_thread(void *p)
{
    initall_arg *a = p;
    pthread_mutex_lock(&a->gate->lock);
    while (a->gate->state == 0) pthread_cond_wait(&a->gate->cond, &a->gate->lock);
    int go = a->gate->state > 0;
    pthread_mutex_unlock(&a->gate->lock);
    if (!go) return NULL;
    aclrtSetDevice(a->device);
    a->res = HcclCommInitRootInfo(a->n, a->root, a->rank, &a->comm);
    if (a->res != HCCL_SUCCESS) snprintf(a->why, sizeof a->why, "%s", HcclGetLastErrorMessage());
    return NULL;
}

static void initall_open(initall_gate *g, int state)
{
    pthread_mutex_lock(&g->lock);
    g->state = state;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms)
{
    if (!devices || !comms) {
        HCCL_WARN(INIT, "HcclCommInitAll: %s is NULL", !devices ? "devices" : "comms");
        return HCCL_E_PTR;
    }
    if (ndev == 0 || ndev > 4096) {
        HCCL_WARN(INIT, "HcclCommInitAll: ndev %u is invalid", ndev);
        return HCCL_E_PARA;
    }
    uint32_t count = 0;
    if (aclrtGetDeviceCount(&count) == ACL_SUCCESS) {
        for (uint32_t i = 0; i < ndev; i++) {
            if (devices[i] < 0 || (uint32_t)devices[i] >= count) {
                HCCL_WARN(INIT, "HcclCommInitAll: devices[%u] = %d is not a device (count %u)", i, devices[i], count);
                return HCCL_E_PARA;
            }
            for (uint32_t j = 0; j < i; j++)
                if (devices[j] == devices[i]) {
                    HCCL_WARN(INIT, "HcclCommInitAll: device %d is listed twice", devices[i]);
                    return HCCL_E_PARA;
                }
        }
    }
    HcclRootInfo root;
    initall_arg *args = hccl_calloc(ndev, sizeof *args);
    pthread_t *th = hccl_calloc(ndev, sizeof *th);
    if (!args || !th) {
        hccl_free(args);
        hccl_free(th);
        return HCCL_E_MEMORY;
    }
    initall_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    HcclResult res = HCCL_SUCCESS;
    uint32_t started = 0;
    for (uint32_t i = 0; i < ndev; i++) {
        args[i] = (initall_arg){&gate, &root, ndev, i, devices[i], NULL, HCCL_E_INTERNAL, {0}};
        int err = pthread_create(&th[i], NULL, initall_thread, &args[i]);
        if (err != 0) {
            HCCL_WARN(INIT, "HcclCommInitAll: cannot start the thread of rank %u of %u: %s%s", i, ndev, strerror(err),
                      err == EAGAIN ? " (RLIMIT_NPROC or the system's thread limit?)" : "");
            res = HCCL_E_SYSCALL;
            break;
        }
        started++;
    }
    /* The root (and its thread) only once every rank has its thread. */
    if (res == HCCL_SUCCESS) res = HcclGetRootInfo(&root);
    initall_open(&gate, res == HCCL_SUCCESS ? 1 : -1);
    for (uint32_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (uint32_t i = 0; i < ndev && res == HCCL_SUCCESS; i++)
        if (args[i].res != HCCL_SUCCESS) {
            /* The caller's HcclGetLastErrorMessage: the ranks logged on their own threads. */
            HCCL_WARN(INIT, "HcclCommInitAll(%u): rank %u failed: %s", ndev, i,
                      args[i].why[0] ? args[i].why : hccl_result_str(args[i].res));
            res = args[i].res;
        }
    for (uint32_t i = 0; i < ndev; i++) {
        if (res == HCCL_SUCCESS) comms[i] = args[i].comm;
        else if (args[i].comm) HcclCommDestroy(args[i].comm);
    }
    pthread_cond_destroy(&gate.cond);
    pthread_mutex_destroy(&gate.lock);
    hccl_free(args);
    hccl_free(th);
    return res;
}

HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds, uint64_t subCommId,
                                   uint32_t subCommRankId, HcclCommConfig *config, HcclComm *subComm)
{
    const char *fn = "HcclCreateSubCommConfig";
    if (!comm || !rankIds || !subComm) {
        HCCL_WARN(INIT, "%s: %s is NULL", fn, !comm ? "comm" : !rankIds ? "rankIds" : "subComm");
        return HCCL_E_PTR;
    }
    hccl_comm *p;
    CHECK(hccl_comm_acquire(fn, *comm, &p));
    uint64_t warn_seq = hccl_log_warn_seq();
    HcclResult res = HCCL_SUCCESS;
    if (rankNum == 0 || rankNum > p->nranks) {
        HCCL_WARN(INIT, "%s: rankNum %u invalid for a parent of %u ranks", fn, rankNum, p->nranks);
        res = HCCL_E_PARA;
    }
    for (uint32_t i = 0; res == HCCL_SUCCESS && i < rankNum; i++) {
        if (rankIds[i] >= p->nranks) {
            HCCL_WARN(INIT, "%s: rankIds[%u] = %u is not a rank of the parent (%u ranks)", fn, i, rankIds[i],
                      p->nranks);
            res = HCCL_E_PARA;
        }
        for (uint32_t j = 0; res == HCCL_SUCCESS && j < i; j++)
            if (rankIds[j] == rankIds[i]) {
                HCCL_WARN(INIT, "%s: rank %u is listed twice in rankIds", fn, rankIds[i]);
                res = HCCL_E_PARA;
            }
    }
    if (res == HCCL_SUCCESS && (subCommRankId >= rankNum || rankIds[subCommRankId] != p->rank)) {
        /* rankIds is valid: if the caller is in it, the others wait for it there. */
        uint32_t me = 0;
        while (me < rankNum && rankIds[me] != p->rank) me++;
        if (subCommRankId >= rankNum)
            HCCL_WARN(INIT, "%s: subCommRankId %u is not below rankNum %u (parent rank %u)", fn, subCommRankId,
                      rankNum, p->rank);
        else
            HCCL_WARN(INIT, "%s: rankIds[subCommRankId=%u] = %u, but the caller is rank %u of the parent", fn,
                      subCommRankId, rankIds[subCommRankId], p->rank);
        res = HCCL_E_PARA;
        if (me < rankNum && rankNum > 1) hccl_comm_split_failed(p, rankNum, rankIds, subCommId, me, res, warn_seq);
    }
    hccl_comm *c = NULL;
    if (res == HCCL_SUCCESS) res = hccl_comm_split(p, rankNum, rankIds, subCommId, subCommRankId, config, &c);
    hccl_comm_release(p);
    if (res == HCCL_SUCCESS) *subComm = c;
    return res;
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize)
{
    if (!rankSize) return null_out("HcclGetRankSize", "rankSize");
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclGetRankSize", comm, &c));
    *rankSize = c->nranks;
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank)
{
    if (!rank) return null_out("HcclGetRankId", "rank");
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclGetRankId", comm, &c));
    *rank = c->rank;
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommName(HcclComm comm, char *commName)
{
    if (!commName) return null_out("HcclGetCommName", "commName");
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclGetCommName", comm, &c));
    snprintf(commName, COMM_NAME_MAX_LENGTH, "%s", c->name);
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm)
{
    if (!commName || !comm) return null_out("HcclCommGetHandleWithName", !commName ? "commName" : "comm");
    hccl_comm *c;
    HcclResult res = hccl_comm_find_by_name(commName, &c);
    if (res != HCCL_SUCCESS) {
        HCCL_WARN(INIT, "HcclCommGetHandleWithName: no communicator named \"%s\" in this process", commName);
        return res;
    }
    *comm = c;
    return HCCL_SUCCESS;
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError)
{
    if (!asyncError) return null_out("HcclGetCommAsyncError", "asyncError");
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclGetCommAsyncError", comm, &c));
    *asyncError = (HcclResult)__atomic_load_n(&c->async_error, __ATOMIC_ACQUIRE);
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) { return hccl_comm_destroy(comm); }

HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue)
{
    if (config != HCCL_DETERMINISTIC) {
        HCCL_WARN(INIT, "HcclSetConfig: unknown config %d", (int)config);
        return HCCL_E_PARA;
    }
    /* 2: upstream's strict determinism, on here as 1 is (HcclGetConfig gives it back) */
    if (configValue.value < 0 || configValue.value > 2) {
        HCCL_WARN(INIT, "HcclSetConfig: HCCL_DETERMINISTIC must be 0, 1 or 2, not %d", configValue.value);
        return HCCL_E_PARA;
    }
    hccl_comm_set_deterministic(configValue.value);
    return HCCL_SUCCESS;
}

HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue)
{
    if (!configValue) return null_out("HcclGetConfig", "configValue");
    if (config != HCCL_DETERMINISTIC) {
        HCCL_WARN(INIT, "HcclGetConfig: unknown config %d", (int)config);
        return HCCL_E_PARA;
    }
    configValue->value = hccl_comm_get_deterministic();
    return HCCL_SUCCESS;
}

HcclResult HcclCommSuspend(HcclComm comm)
{
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclCommSuspend", comm, &c));
    __atomic_store_n(&c->suspended, 1, __ATOMIC_RELEASE);
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclCommResume(HcclComm comm)
{
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclCommResume", comm, &c));
    __atomic_store_n(&c->suspended, 0, __ATOMIC_RELEASE);
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

/*
 * Zero-copy memory (CANN's HcclCommSetMemoryRange ... HcclCommDeactivateCommMemory):
 * operations here read and write any memory of the process in place or through the
 * kernel, so nothing needs registering. The calls check the communicator and their
 * arguments as upstream does and succeed.
 */
static HcclResult mem_call(const char *fn, HcclComm comm, const void *ptr, int size_zero, uint64_t offset,
                           uint64_t flags, int null_handle)
{
    if (!ptr) return null_out(fn, "the address");
    if (null_handle) return null_out(fn, "handle");
    if (size_zero || offset != 0 || flags != 0) {
        HCCL_WARN(INIT, "%s: %s", fn,
                  size_zero ? "size is 0" : offset ? "offset must be 0" : "flags must be 0");
        return HCCL_E_PARA;
    }
    hccl_comm *c;
    CHECK(hccl_comm_acquire(fn, comm, &c));
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclCommSetMemoryRange(HcclComm comm, void *baseVirPtr, size_t size, size_t alignment, uint64_t flags)
{
    if (alignment & (alignment - 1)) {
        HCCL_WARN(INIT, "HcclCommSetMemoryRange: alignment %zu is not 0 or a power of two", alignment);
        return HCCL_E_PARA;
    }
    return mem_call("HcclCommSetMemoryRange", comm, baseVirPtr, size == 0, 0, flags, 0);
}

HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void *baseVirPtr)
{
    return mem_call("HcclCommUnsetMemoryRange", comm, baseVirPtr, 0, 0, 0, 0);
}

HcclResult HcclCommActivateCommMemory(HcclComm comm, void *virPtr, size_t size, size_t offset,
                                      aclrtDrvMemHandle handle, uint64_t flags)
{
    return mem_call("HcclCommActivateCommMemory", comm, virPtr, size == 0, offset, flags, handle == NULL);
}

HcclResult HcclCommDeactivateCommMemory(HcclComm comm, void *virPtr)
{
    return mem_call("HcclCommDeactivateCommMemory", comm, virPtr, 0, 0, 0, 0);
}

/* This thread's last WARN, unless a synchronize on it reported a failed stream task
 * since: then the reason that task gave, logged on the thread that ran it (the
 * stream's worker, as often as not). */
const char *HcclGetLastErrorMessage(void)
{
    uint64_t at;
    const char *task = aclrtInternalLastTaskFailure(&at);
    if (task && task[0] && at >= hccl_log_last_warn_ns()) return task;
    return hccl_log_last_warn();
}

HcclResult HcclCommDumpFlightRecorder(HcclComm comm, const char *path)
{
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclCommDumpFlightRecorder", comm, &c));
    if (path && !path[0]) { /* not a file name: it used to go to a temporary file in the working directory */
        HCCL_WARN(COLL, "HcclCommDumpFlightRecorder: path is empty (NULL writes to HCCL_FLIGHT_RECORDER_DIR)");
        hccl_comm_release(c);
        return HCCL_E_PARA;
    }
    HcclResult res = hccl_comm_dump_flight(c, path, "requested by HcclCommDumpFlightRecorder");
    hccl_comm_release(c);
    return res;
}

HcclResult HcclCommGetExecTimeout(HcclComm comm, uint64_t *seconds)
{
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclCommGetExecTimeout", comm, &c));
    if (!seconds) {
        HCCL_WARN(COLL, "HcclCommGetExecTimeout: seconds is NULL");
        hccl_comm_release(c);
        return HCCL_E_PTR;
    }
    *seconds = (c->cfg.exec_timeout_ns + 999999999ull) / 1000000000ull;
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclGetConnectTimeout(uint64_t *seconds)
{
    if (!seconds) {
        HCCL_WARN(INIT, "HcclGetConnectTimeout: seconds is NULL");
        return HCCL_E_PTR;
    }
    *seconds = hccl_boot_connect_timeout_ns() / 1000000000ull;
    return HCCL_SUCCESS;
}

HcclResult HcclCommGetFlightRecorderSize(HcclComm comm, uint32_t *ops)
{
    hccl_comm *c;
    CHECK(hccl_comm_acquire("HcclCommGetFlightRecorderSize", comm, &c));
    if (!ops) {
        HCCL_WARN(COLL, "HcclCommGetFlightRecorderSize: ops is NULL");
        hccl_comm_release(c);
        return HCCL_E_PTR;
    }
    *ops = c->flight.cap;
    hccl_comm_release(c);
    return HCCL_SUCCESS;
}

HcclResult HcclSetInterruptCheck(int (*check)(void))
{
    hccl_interrupt_set(check);
    return HCCL_SUCCESS;
}
