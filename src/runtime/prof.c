/*
 * prof.c - aclprof*: CANN's profiling calls, accepted so that programs which profile
 * (e.g. hccl_test with HCCL_TEST_PROFILING=1) build and run unchanged. Nothing is
 * collected: the calls check their arguments, handles and order as upstream does and
 * succeed; aclprofStart warns once that no profile is written.
 */
#include "runtime/runtime_int.h"

#include <acl/acl_prof.h>

#include "util/log.h"
#include "util/util.h"

#include <pthread.h>

struct aclprofConfig {
    uint32_t devices;
    uint64_t data_types;
};

static pthread_mutex_t prof_mu = PTHREAD_MUTEX_INITIALIZER;
static int prof_initialized;  /* under prof_mu */
static hccl_rt_map prof_cfgs; /* live config -> 1 while started, else 0; under prof_mu */

aclError aclprofInit(const char *profilerResultPath, size_t length)
{
    if (!profilerResultPath || length == 0 || !*profilerResultPath)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclprofInit: %s",
                             !profilerResultPath    ? "the result path is NULL"
                             : !*profilerResultPath ? "the result path is empty"
                                                    : "length is 0 (the result path's length in bytes)");
    pthread_mutex_lock(&prof_mu);
    int again = prof_initialized;
    prof_initialized = 1;
    pthread_mutex_unlock(&prof_mu);
    if (again)
        return hccl_rt_error(ACL_ERROR_REPEAT_INITIALIZE, "aclprofInit: already initialized (call aclprofFinalize first)");
    return ACL_SUCCESS;
}

aclError aclprofFinalize(void)
{
    pthread_mutex_lock(&prof_mu);
    int was = prof_initialized;
    prof_initialized = 0;
    pthread_mutex_unlock(&prof_mu);
    if (!was) return hccl_rt_error(ACL_ERROR_UNINITIALIZE, "aclprofFinalize: aclprofInit was not called");
    return ACL_SUCCESS;
}

aclprofConfig *aclprofCreateConfig(uint32_t *deviceIdList, uint32_t deviceNums, aclprofAicoreMetrics aicoreMetrics,
                                   aclprofAicoreEvents *aicoreEvents, uint64_t dataTypeConfig)
{
    (void)aicoreMetrics;
    if (!deviceIdList || deviceNums == 0) {
        hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig: %s", !deviceIdList ? "deviceIdList is NULL"
                                                                                         : "deviceNums is 0");
        return NULL;
    }
    if (aicoreEvents) {
        hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig: aicoreEvents must be NULL");
        return NULL;
    }
    uint32_t count = hccl_rt_device_count();
    for (uint32_t i = 0; i < deviceNums; i++) {
        if (deviceIdList[i] >= count) {
            hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclprofCreateConfig: device id %u is out of range (%u devices)",
                          deviceIdList[i], count);
            return NULL;
        }
    }
    aclprofConfig *c = hccl_calloc(1, sizeof *c);
    if (!c) {
        hccl_rt_error(ACL_ERROR_BAD_ALLOC, "aclprofCreateConfig: out of memory");
        return NULL;
    }
    c->devices = deviceNums;
    c->data_types = dataTypeConfig;
    pthread_mutex_lock(&prof_mu);
    aclError rc = hccl_rt_map_put(&prof_cfgs, (uintptr_t)c, 0);
    pthread_mutex_unlock(&prof_mu);
    if (rc != ACL_SUCCESS) {
        hccl_free(c);
        hccl_rt_error(rc, "aclprofCreateConfig: out of memory");
        return NULL;
    }
    return c;
}

aclError aclprofDestroyConfig(const aclprofConfig *profilerConfig)
{
    if (!profilerConfig) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclprofDestroyConfig: the config is NULL");
    pthread_mutex_lock(&prof_mu);
    int found = hccl_rt_map_del(&prof_cfgs, (uintptr_t)profilerConfig, NULL);
    pthread_mutex_unlock(&prof_mu);
    if (!found)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclprofDestroyConfig: %p is not a live config",
                             (const void *)profilerConfig);
    hccl_free((void *)(uintptr_t)profilerConfig);
    return ACL_SUCCESS;
}

/* start: 1 for aclprofStart, 0 for aclprofStop. */
static aclError start_stop(const aclprofConfig *cfg, int start, const char *api)
{
    if (!cfg) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: the config is NULL", api);
    const char *why = NULL;
    aclError rc = ACL_ERROR_INVALID_PARAM;
    uint64_t started = 0;
    pthread_mutex_lock(&prof_mu);
    if (!prof_initialized) {
        why = "aclprofInit was not called";
        rc = ACL_ERROR_UNINITIALIZE;
    } else if (!hccl_rt_map_get(&prof_cfgs, (uintptr_t)cfg, &started)) {
        why = "the config is not a live one (from aclprofCreateConfig, not destroyed)";
    } else if ((int)started == start) {
        why = start ? "the config is already started" : "the config is not started";
    } else {
        hccl_rt_map_put(&prof_cfgs, (uintptr_t)cfg, (uint64_t)start); /* replaces: cannot fail */
    }
    pthread_mutex_unlock(&prof_mu);
    if (why) return hccl_rt_error(rc, "%s: %s", api, why);
    return ACL_SUCCESS;
}

aclError aclprofStart(const aclprofConfig *profilerConfig)
{
    aclError rc = start_stop(profilerConfig, 1, "aclprofStart");
    static int warned;
    if (rc == ACL_SUCCESS && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        HCCL_WARN(INIT, "aclprofStart: this runtime collects no profile (nothing is written); the flight recorder "
                        "shows what each HCCL operation did and when (docs/debugging.md)");
    return rc;
}

aclError aclprofStop(const aclprofConfig *profilerConfig)
{
    return start_stop(profilerConfig, 0, "aclprofStop");
}
