/*
 * device.c - initialization, host "devices", contexts and the fork handlers.
 *
 * Devices: the count is re-read from the environment at every call (so tests and
 * launchers may change it at any time):
 *   1. ASCEND_RT_VISIBLE_DEVICES, when set and non-empty: the number of non-empty
 *      comma-separated ids ("0,1,2,3" -> 4);
 *   2. else HCCL_HOST_DEVICE_COUNT, when set to a positive integer;
 *   3. else 8, the device count of one typical Ascend server.
 * aclrtSetDevice binds the calling thread to a device id in [0, count). A thread that
 * never set a device (nor a context) gets ACL_ERROR_RT_CONTEXT_NULL from aclrtGetDevice
 * and aclrtGetCurrentContext, as upstream does when no context exists.
 *
 * aclrtSetDevice also takes a reference on the device (process-wide, one per call) and
 * aclrtResetDevice drops one, as upstream counts them. The reset that drops the last
 * one (or finds none) is upstream's real reset, which waits for the tasks of the
 * device's streams to finish: here it waits for every stream created on that device,
 * as aclrtSynchronizeDevice does, and returns ACL_SUCCESS; the streams stay usable
 * (destroy them before the reset, as upstream asks) and a task's error stays for their
 * next synchronize. Earlier resets return at once: other threads may still use the
 * device (a rank per thread sharing one), and waiting for their streams could wait for
 * this thread's own next operation.
 *
 * Contexts: small registered objects holding a device id. Each device has a default
 * context (made on first use, never destroyed); aclrtSetDevice makes it the thread's
 * current one, aclrtCreateContext makes the new context current, as upstream does.
 * The thread-local state keeps the device id itself, so a context destroyed by
 * another thread is never dereferenced.
 *
 * aclInit is optional (everything works without it); a second aclInit before
 * aclFinalize returns ACL_ERROR_REPEAT_INITIALIZE, and a second aclFinalize before the
 * next aclInit returns ACL_ERROR_REPEAT_FINALIZE, as upstream does (an aclFinalize
 * without any aclInit succeeds). The config file is not interpreted.
 */
#include "runtime/runtime_int.h"

#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_DEVICE_COUNT 8u
#define MAX_DEVICE_COUNT 65536u
#define CTX_MAGIC 0x41434c43u /* "ACLC" */

typedef struct rt_context {
    uint32_t magic;
    int32_t device;
    int is_default;
} rt_context;

static int initialized; /* under init_mu */
static int finalized;   /* under init_mu: aclFinalize ran since the last aclInit */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static hccl_rt_map ctx_reg;      /* context -> 1 */
static hccl_rt_map default_ctxs; /* device id + 1 -> context */
static hccl_rt_map dev_refs;     /* device id + 1 -> aclrtSetDevice calls not yet reset */
static hccl_rt_map dev_sat;      /* device id + 1 -> aclrtFloatOverflowMode set (absent: INFNAN) */

static __thread int32_t tls_device = -1;
static __thread rt_context *tls_ctx; /* NULL: the default context of tls_device */

aclError aclInit(const char *configPath)
{
    pthread_mutex_lock(&init_mu);
    if (initialized) {
        pthread_mutex_unlock(&init_mu);
        return hccl_rt_error(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (call aclFinalize first)");
    }
    initialized = 1;
    finalized = 0;
    pthread_mutex_unlock(&init_mu);
    if (configPath && *configPath && access(configPath, R_OK) != 0)
        HCCL_WARN(INIT, "aclInit: config file %s is not readable (errno %d); continuing without it", configPath,
                  errno);
    return ACL_SUCCESS;
}

aclError aclFinalize(void)
{
    pthread_mutex_lock(&init_mu);
    if (finalized) {
        pthread_mutex_unlock(&init_mu);
        return hccl_rt_error(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: already finalized (call aclInit first)");
    }
    initialized = 0;
    finalized = 1;
    pthread_mutex_unlock(&init_mu);
    return ACL_SUCCESS;
}

uint32_t hccl_rt_device_count(void)
{
    const char *vis = getenv("ASCEND_RT_VISIBLE_DEVICES");
    if (vis && *vis) {
        uint32_t n = 0;
        int in_token = 0;
        for (const char *p = vis; *p; p++) {
            int sep = (*p == ',' || *p == ' ' || *p == '\t');
            if (!sep && !in_token) n++;
            in_token = !sep;
        }
        if (n > 0) return n > MAX_DEVICE_COUNT ? MAX_DEVICE_COUNT : n;
    }
    return (uint32_t)hccl_param_read_int_in("HCCL_HOST_DEVICE_COUNT", DEFAULT_DEVICE_COUNT, 1, MAX_DEVICE_COUNT,
                                            HCCL_PARAM_CLAMP);
}

aclError aclrtGetDeviceCount(uint32_t *count)
{
    if (!count) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
    *count = hccl_rt_device_count();
    return ACL_SUCCESS;
}

static aclError check_device(int32_t id, const char *api)
{
    uint32_t n = hccl_rt_device_count();
    if (id < 0 || (uint32_t)id >= n)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_DEVICEID, "%s: device id %d is out of range [0, %u)", api, (int)id,
                             n);
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId)
{
    aclError rc = check_device(deviceId, "aclrtSetDevice");
    if (rc != ACL_SUCCESS) return rc;
    pthread_mutex_lock(&ctx_mu);
    uint64_t n = 0;
    hccl_rt_map_get(&dev_refs, (uintptr_t)deviceId + 1, &n);
    rc = hccl_rt_map_put(&dev_refs, (uintptr_t)deviceId + 1, n + 1);
    pthread_mutex_unlock(&ctx_mu);
    if (rc != ACL_SUCCESS) return hccl_rt_error(rc, "aclrtSetDevice: out of memory");
    tls_device = deviceId;
    tls_ctx = NULL;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId)
{
    if (!deviceId) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is NULL");
    if (tls_device < 0)
        return hccl_rt_error(ACL_ERROR_RT_CONTEXT_NULL,
                             "aclrtGetDevice: no device is set on this thread (call aclrtSetDevice first)");
    *deviceId = tls_device;
    return ACL_SUCCESS;
}

int32_t hccl_rt_device_current(void) { return tls_device; }

void hccl_rt_device_bind(int32_t device)
{
    tls_device = device;
    tls_ctx = NULL;
}

void hccl_rt_device_enter(int32_t device, hccl_rt_binding *saved)
{
    saved->device = tls_device;
    saved->ctx = tls_ctx;
    tls_device = device;
    tls_ctx = NULL;
}

void hccl_rt_device_leave(const hccl_rt_binding *saved)
{
    tls_device = saved->device;
    tls_ctx = saved->ctx;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    aclError rc = check_device(deviceId, "aclrtResetDevice");
    if (rc != ACL_SUCCESS) return rc;
    pthread_mutex_lock(&ctx_mu);
    uint64_t n = 0;
    if (hccl_rt_map_get(&dev_refs, (uintptr_t)deviceId + 1, &n) && n > 1)
        hccl_rt_map_put(&dev_refs, (uintptr_t)deviceId + 1, n - 1); /* replaces: cannot fail */
    else
        hccl_rt_map_del(&dev_refs, (uintptr_t)deviceId + 1, NULL);
    pthread_mutex_unlock(&ctx_mu);
    if (n <= 1) (void)hccl_rt_stream_sync_device(deviceId, "aclrtResetDevice"); /* the last reference */
    return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode *runMode)
{
    if (!runMode) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is NULL");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

/* No Ascend SoC here: a name no SoC-specific branch of a CANN program matches. */
const char *aclrtGetSocName(void) { return "HostCPU"; }

/* The mode is recorded per device and reported back; results do not depend on it (the
 * host's arithmetic always follows IEEE 754, as ACL_RT_OVERFLOW_MODE_INFNAN does). */
aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode)
{
    if (mode != ACL_RT_OVERFLOW_MODE_SATURATION && mode != ACL_RT_OVERFLOW_MODE_INFNAN)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtSetDeviceSatMode: mode %d is invalid (ACL_RT_OVERFLOW_MODE_SATURATION = 0 or "
                             "ACL_RT_OVERFLOW_MODE_INFNAN = 1)",
                             (int)mode);
    if (tls_device < 0)
        return hccl_rt_error(ACL_ERROR_RT_CONTEXT_NULL,
                             "aclrtSetDeviceSatMode: no device is set on this thread (call aclrtSetDevice first)");
    pthread_mutex_lock(&ctx_mu);
    aclError rc = hccl_rt_map_put(&dev_sat, (uintptr_t)tls_device + 1, (uint64_t)mode);
    pthread_mutex_unlock(&ctx_mu);
    return rc == ACL_SUCCESS ? ACL_SUCCESS : hccl_rt_error(rc, "aclrtSetDeviceSatMode: out of memory");
}

aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode)
{
    if (!mode) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceSatMode: mode is NULL");
    if (tls_device < 0)
        return hccl_rt_error(ACL_ERROR_RT_CONTEXT_NULL,
                             "aclrtGetDeviceSatMode: no device is set on this thread (call aclrtSetDevice first)");
    uint64_t v = ACL_RT_OVERFLOW_MODE_INFNAN;
    pthread_mutex_lock(&ctx_mu);
    hccl_rt_map_get(&dev_sat, (uintptr_t)tls_device + 1, &v);
    pthread_mutex_unlock(&ctx_mu);
    *mode = (aclrtFloatOverflowMode)v;
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void)
{
    return hccl_rt_stream_sync_device(hccl_rt_device_current(), "aclrtSynchronizeDevice");
}

/* ---- contexts */

static aclError new_context(int32_t device, int is_default, rt_context **out)
{
    rt_context *c = hccl_calloc(1, sizeof *c);
    if (!c) return ACL_ERROR_BAD_ALLOC;
    c->magic = CTX_MAGIC;
    c->device = device;
    c->is_default = is_default;
    aclError rc = hccl_rt_map_put(&ctx_reg, (uintptr_t)c, 1);
    if (rc == ACL_SUCCESS && is_default) {
        rc = hccl_rt_map_put(&default_ctxs, (uintptr_t)device + 1, (uint64_t)(uintptr_t)c);
        if (rc != ACL_SUCCESS) hccl_rt_map_del(&ctx_reg, (uintptr_t)c, NULL);
    }
    if (rc != ACL_SUCCESS) {
        hccl_free(c);
        return rc;
    }
    *out = c;
    return ACL_SUCCESS;
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
    if (!context) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is NULL");
    aclError rc = check_device(deviceId, "aclrtCreateContext");
    if (rc != ACL_SUCCESS) return rc;
    rt_context *c = NULL;
    pthread_mutex_lock(&ctx_mu);
    rc = new_context(deviceId, 0, &c);
    pthread_mutex_unlock(&ctx_mu);
    if (rc != ACL_SUCCESS) return hccl_rt_error(rc, "aclrtCreateContext: out of memory");
    tls_ctx = c;
    tls_device = deviceId;
    *context = c;
    return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context)
{
    pthread_mutex_lock(&ctx_mu);
    int found = hccl_rt_map_get(&ctx_reg, (uintptr_t)context, NULL);
    rt_context *c = context;
    if (found && c->is_default) {
        pthread_mutex_unlock(&ctx_mu);
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: %p is a device's default context", context);
    }
    if (found) hccl_rt_map_del(&ctx_reg, (uintptr_t)context, NULL);
    pthread_mutex_unlock(&ctx_mu);
    if (!found)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtDestroyContext: %p is not a live context", context);
    if (tls_ctx == c) tls_ctx = NULL; /* this thread falls back to its device's default */
    c->magic = 0;
    hccl_free(c);
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context)
{
    pthread_mutex_lock(&ctx_mu);
    int found = hccl_rt_map_get(&ctx_reg, (uintptr_t)context, NULL);
    int32_t device = found ? ((rt_context *)context)->device : -1;
    pthread_mutex_unlock(&ctx_mu);
    if (!found)
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "aclrtSetCurrentContext: %p is not a live context", context);
    tls_ctx = context;
    tls_device = device;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context)
{
    if (!context) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is NULL");
    if (tls_device < 0)
        return hccl_rt_error(ACL_ERROR_RT_CONTEXT_NULL,
                             "aclrtGetCurrentContext: no context on this thread (call aclrtSetDevice first)");
    pthread_mutex_lock(&ctx_mu);
    if (tls_ctx && !hccl_rt_map_get(&ctx_reg, (uintptr_t)tls_ctx, NULL)) tls_ctx = NULL; /* destroyed elsewhere */
    rt_context *c = tls_ctx;
    aclError rc = ACL_SUCCESS;
    if (!c) {
        uint64_t v;
        if (hccl_rt_map_get(&default_ctxs, (uintptr_t)tls_device + 1, &v)) c = (rt_context *)(uintptr_t)v;
        else rc = new_context(tls_device, 1, &c);
    }
    pthread_mutex_unlock(&ctx_mu);
    if (rc != ACL_SUCCESS) return hccl_rt_error(rc, "aclrtGetCurrentContext: out of memory");
    *context = c;
    return ACL_SUCCESS;
}

/* ---- fork: hold every registry lock across fork so the child sees consistent tables. */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&init_mu);
    pthread_mutex_lock(&ctx_mu);
    hccl_rt_stream_atfork_prepare();
    hccl_rt_event_atfork_prepare();
    hccl_rt_callback_atfork_prepare();
    hccl_rt_memory_atfork_prepare();
}

static void atfork_parent(void)
{
    hccl_rt_memory_atfork_parent();
    hccl_rt_callback_atfork_parent();
    hccl_rt_event_atfork_parent();
    hccl_rt_stream_atfork_parent();
    pthread_mutex_unlock(&ctx_mu);
    pthread_mutex_unlock(&init_mu);
}

static void atfork_child(void)
{
    hccl_rt_memory_atfork_child();
    hccl_rt_callback_atfork_child();
    hccl_rt_event_atfork_child();
    hccl_rt_stream_atfork_child();
    /* Unlocked, not re-initialised: the forking thread took them in prepare and is
     * this process's only thread (and ThreadSanitizer sees them released). */
    pthread_mutex_unlock(&ctx_mu);
    pthread_mutex_unlock(&init_mu);
}

__attribute__((constructor)) static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
