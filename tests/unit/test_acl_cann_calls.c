/*
 * test_acl_cann_calls.c - runtime calls CANN programs make unconditionally (CANN's
 * hccl_test: aclrtGetSocName, aclrtSetDeviceSatMode, aclrtSetStreamFailureMode, the
 * aclprof* calls; with -z 1 the virtual memory calls): they exist,
 * accept what upstream accepts and reject bad input with a message naming the call.
 */
#include "tinytest.h"

#include <acl/acl.h>
#include <acl/acl_prof.h>

#include <pthread.h>
#include <string.h>

static int msg_has(const char *s) { return strstr(aclGetRecentErrMsg(), s) != NULL; }

static void *sat_other_thread(void *arg)
{
    aclrtFloatOverflowMode *m = arg;
    *m = ACL_RT_OVERFLOW_MODE_UNDEF;
    if (aclrtSetDevice(1) != ACL_SUCCESS || aclrtGetDeviceSatMode(m) != ACL_SUCCESS) *m = ACL_RT_OVERFLOW_MODE_UNDEF;
    aclrtResetDevice(1);
    return NULL;
}

static void test_soc_and_sat_mode(void)
{
    const char *soc = aclrtGetSocName();
    TT_ASSERT(soc != NULL && *soc != 0);
    TT_ASSERT(strncmp(soc, "Ascend", 6) != 0); /* no SoC-specific branch applies */
    aclrtFloatOverflowMode m = ACL_RT_OVERFLOW_MODE_UNDEF;
    /* no device on this thread yet */
    TT_ASSERT_EQ(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN), ACL_ERROR_RT_CONTEXT_NULL);
    TT_ASSERT(msg_has("aclrtSetDeviceSatMode"));
    TT_ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtGetDeviceSatMode(NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtGetDeviceSatMode(&m), ACL_SUCCESS);
    TT_ASSERT_EQ(m, ACL_RT_OVERFLOW_MODE_INFNAN); /* the default */
    TT_ASSERT_EQ(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_UNDEF), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("mode 2 is invalid"));
    TT_ASSERT_EQ(aclrtSetDeviceSatMode((aclrtFloatOverflowMode)-1), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtGetDeviceSatMode(&m), ACL_SUCCESS);
    TT_ASSERT_EQ(m, ACL_RT_OVERFLOW_MODE_SATURATION);
    /* per device: device 1 keeps the default */
    pthread_t t;
    aclrtFloatOverflowMode other = ACL_RT_OVERFLOW_MODE_UNDEF;
    pthread_create(&t, NULL, sat_other_thread, &other);
    pthread_join(t, NULL);
    TT_ASSERT_EQ(other, ACL_RT_OVERFLOW_MODE_INFNAN);
    TT_ASSERT_EQ(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtGetDeviceSatMode(&m), ACL_SUCCESS);
    TT_ASSERT_EQ(m, ACL_RT_OVERFLOW_MODE_INFNAN);
    TT_ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

static aclError fail_task(void *arg)
{
    (void)arg;
    return ACL_ERROR_RT_INTERNAL_ERROR;
}

static void test_stream_failure_mode(void)
{
    aclrtStream s = NULL;
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetStreamFailureMode(s, ACL_CONTINUE_ON_FAILURE), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetStreamFailureMode(s, 2), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtSetStreamFailureMode: mode 2 is invalid"));
    TT_ASSERT_EQ(aclrtSetStreamFailureMode(NULL, ACL_STOP_ON_FAILURE), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("NULL"));
    /* a failed task is still reported by the next synchronize, once */
    TT_ASSERT_EQ(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtLaunchHostTask(s, fail_task, NULL), ACL_SUCCESS);
    TT_ASSERT(aclrtSynchronizeStream(s) != ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE), ACL_ERROR_RT_INVALID_HANDLE);
    TT_ASSERT(msg_has("not a live stream"));
}

static void test_prof(void)
{
    uint32_t dev = 0, bad_dev = 100000;
    uint64_t types = ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_HCCL_TRACE | ACL_PROF_RUNTIME_API;
    aclprofConfig *cfg = aclprofCreateConfig(&dev, 1, ACL_AICORE_PIPE_UTILIZATION, NULL, types);
    TT_ASSERT(cfg != NULL);
    TT_ASSERT_EQ(aclprofStart(cfg), ACL_ERROR_UNINITIALIZE); /* before aclprofInit */
    TT_ASSERT(msg_has("aclprofStart: aclprofInit was not called"));
    TT_ASSERT_EQ(aclprofFinalize(), ACL_ERROR_UNINITIALIZE);
    TT_ASSERT_EQ(aclprofInit(NULL, 4), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclprofInit("/tmp/x", 0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclprofInit: length is 0")); /* the path is not empty */
    TT_ASSERT_EQ(aclprofInit("", 1), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclprofInit: the result path is empty"));
    TT_ASSERT_EQ(aclprofInit("/tmp/x", 6), ACL_SUCCESS);
    TT_ASSERT_EQ(aclprofInit("/tmp/x", 6), ACL_ERROR_REPEAT_INITIALIZE);
    TT_ASSERT(aclprofCreateConfig(NULL, 1, ACL_AICORE_NONE, NULL, types) == NULL);
    TT_ASSERT(aclprofCreateConfig(&dev, 0, ACL_AICORE_NONE, NULL, types) == NULL);
    TT_ASSERT(aclprofCreateConfig(&bad_dev, 1, ACL_AICORE_NONE, NULL, types) == NULL);
    TT_ASSERT(msg_has("device id 100000 is out of range"));
    TT_ASSERT_EQ(aclprofStop(cfg), ACL_ERROR_INVALID_PARAM); /* not started */
    TT_ASSERT_EQ(aclprofStart(cfg), ACL_SUCCESS);
    TT_ASSERT_EQ(aclprofStart(cfg), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("already started"));
    TT_ASSERT_EQ(aclprofStop(cfg), ACL_SUCCESS);
    TT_ASSERT_EQ(aclprofStart(NULL), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclprofDestroyConfig(cfg), ACL_SUCCESS);
    TT_ASSERT_EQ(aclprofDestroyConfig(cfg), ACL_ERROR_INVALID_PARAM); /* not dereferenced */
    TT_ASSERT_EQ(aclprofStart(cfg), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("not a live one"));
    TT_ASSERT_EQ(aclprofFinalize(), ACL_SUCCESS);
    TT_ASSERT_EQ(aclprofFinalize(), ACL_ERROR_UNINITIALIZE);
}

static void test_vmm(void)
{
    const size_t G = (size_t)2 << 20;
    aclrtPhysicalMemProp prop = {ACL_MEM_HANDLE_TYPE_NONE, ACL_MEM_ALLOCATION_TYPE_PINNED, ACL_HBM_MEM_HUGE,
                                 {0, ACL_MEM_LOCATION_TYPE_DEVICE}, 0};
    size_t g = 0;
    TT_ASSERT_EQ(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g), ACL_SUCCESS);
    TT_ASSERT_EQ(g, G);
    TT_ASSERT_EQ(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &g),
                 ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtMemGetAllocationGranularity(NULL, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
                 ACL_ERROR_INVALID_PARAM);

    void *va = NULL;
    TT_ASSERT_EQ(aclrtReserveMemAddress(&va, 3 * G, 0, NULL, 1), ACL_SUCCESS);
    TT_ASSERT(va != NULL && (uintptr_t)va % G == 0);
    TT_ASSERT_EQ(aclrtReserveMemAddress(&va, G + 1, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("aclrtReserveMemAddress: size"));
    TT_ASSERT_EQ(aclrtReserveMemAddress(&va, G, 3, NULL, 0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtReserveMemAddress(NULL, G, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);

    aclrtDrvMemHandle h = NULL;
    TT_ASSERT_EQ(aclrtMallocPhysical(&h, G, &prop, 1), ACL_ERROR_INVALID_PARAM);
    prop.location.id = 100000;
    TT_ASSERT_EQ(aclrtMallocPhysical(&h, G, &prop, 0), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT(msg_has("location id 100000"));
    prop.location.id = 0;
    TT_ASSERT_EQ(aclrtMallocPhysical(&h, 2 * G, &prop, 0), ACL_SUCCESS);

    char *p = va;
    volatile char *vp = p; /* one memory seen at two addresses: no cached loads */
    TT_ASSERT_EQ(aclrtMapMem(p + G, 2 * G, 0, h, 0), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMapMem(p, 2 * G, 0, h, 0), ACL_ERROR_INVALID_PARAM); /* overlaps */
    TT_ASSERT(msg_has("overlaps"));
    TT_ASSERT_EQ(aclrtMapMem(p, G, 2 * G, h, 0), ACL_ERROR_INVALID_PARAM); /* beyond the handle */
    TT_ASSERT_EQ(aclrtMapMem(p + 3 * G, G, 0, h, 0), ACL_ERROR_INVALID_PARAM); /* outside the reservation */
    TT_ASSERT_EQ(aclrtMapMem(p, G, 0, (aclrtDrvMemHandle)p, 0), ACL_ERROR_INVALID_PARAM); /* not a handle */
    TT_ASSERT_EQ(aclrtMapMem(p, G, G, h, 0), ACL_SUCCESS); /* the handle's second half */
    /* usable as device memory: copies and memset through the mapping */
    TT_ASSERT_EQ(aclrtMemset(p + G, 2 * G, 7, 2 * G), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtMemcpy(p, G, p + G, 16, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    TT_ASSERT_EQ(vp[0], 7);
    vp[2 * G] = 9; /* the handle's second half, mapped at p + 2G and at p */
    TT_ASSERT_EQ(vp[0], 9);
    TT_ASSERT_EQ(aclrtReleaseMemAddress(va), ACL_ERROR_INVALID_PARAM); /* still mapped */
    TT_ASSERT(msg_has("aclrtUnmapMem first"));
    TT_ASSERT_EQ(aclrtUnmapMem(p + 8), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtUnmapMem(p + G), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtUnmapMem(p + G), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtFreePhysical(h), ACL_SUCCESS); /* p's mapping keeps its memory */
    TT_ASSERT_EQ(vp[0], 9);
    TT_ASSERT_EQ(aclrtFreePhysical(h), ACL_ERROR_INVALID_PARAM);
    TT_ASSERT_EQ(aclrtUnmapMem(p), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtReleaseMemAddress(va), ACL_ERROR_INVALID_PARAM);
}

int main(void)
{
    test_soc_and_sat_mode();
    test_stream_failure_mode();
    test_prof();
    test_vmm();
    return tt_report("test_acl_cann_calls");
}
