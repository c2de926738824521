/*
 * acl_prof.h - the profiling calls CANN programs make (e.g. hccl_test with profiling on),
 * so that they build and run unchanged. Nothing is collected here: the calls check their
 * arguments and order and succeed, and aclprofStart says once (HCCL_DEBUG=WARN) that no
 * profile is written. For what ran and when, see the flight recorder (docs/debugging.md).
 */
#ifndef ACL_PROF_H_
#define ACL_PROF_H_

#include <acl/acl_base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* aclprofCreateConfig dataTypeConfig bits. */
#define ACL_PROF_ACL_API 0x0001ULL
#define ACL_PROF_TASK_TIME 0x0002ULL
#define ACL_PROF_AICORE_METRICS 0x0004ULL
#define ACL_PROF_AICPU 0x0008ULL
#define ACL_PROF_L2CACHE 0x0010ULL
#define ACL_PROF_HCCL_TRACE 0x0020ULL
#define ACL_PROF_TRAINING_TRACE 0x0040ULL
#define ACL_PROF_MSPROFTX 0x0080ULL
#define ACL_PROF_RUNTIME_API 0x0100ULL
#define ACL_PROF_TASK_TIME_L0 0x0800ULL
#define ACL_PROF_TASK_MEMORY 0x1000ULL

typedef enum {
    ACL_AICORE_ARITHMETIC_UTILIZATION = 0,
    ACL_AICORE_PIPE_UTILIZATION = 1,
    ACL_AICORE_MEMORY_BANDWIDTH = 2,
    ACL_AICORE_L0B_AND_WIDTH = 3,
    ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4,
    ACL_AICORE_MEMORY_UB = 5,
    ACL_AICORE_L2_CACHE = 6,
    ACL_AICORE_NONE = 0xFF
} aclprofAicoreMetrics;

typedef struct aclprofConfig aclprofConfig;
typedef struct aclprofAicoreEvents aclprofAicoreEvents;

/* profilerResultPath: length bytes, not empty. A second aclprofInit before
 * aclprofFinalize is ACL_ERROR_REPEAT_INITIALIZE; aclprofStart, aclprofStop and
 * aclprofFinalize need aclprofInit first (ACL_ERROR_UNINITIALIZE), aclprofCreateConfig
 * and aclprofDestroyConfig do not. */
extern aclError aclprofInit(const char *profilerResultPath, size_t length);
extern aclError aclprofFinalize(void);
/* NULL when an argument is bad: deviceIdList NULL or deviceNums 0, a device id out of
 * range, aicoreEvents not NULL (as upstream), or out of memory. */
extern aclprofConfig *aclprofCreateConfig(uint32_t *deviceIdList, uint32_t deviceNums,
                                          aclprofAicoreMetrics aicoreMetrics, aclprofAicoreEvents *aicoreEvents,
                                          uint64_t dataTypeConfig);
extern aclError aclprofDestroyConfig(const aclprofConfig *profilerConfig);
extern aclError aclprofStart(const aclprofConfig *profilerConfig);
extern aclError aclprofStop(const aclprofConfig *profilerConfig);

#ifdef __cplusplus
}
#endif

#endif /* ACL_PROF_H_ */
