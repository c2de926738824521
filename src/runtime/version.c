/*
 * version.c - runtime version query.
 */
#include "runtime/runtime_int.h"

aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch)
{
    if (!major || !minor || !patch)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion: %s is NULL",
                             !major ? "major" : !minor ? "minor" : "patch");
    *major = 1;
    *minor = 0;
    *patch = 0;
    return ACL_SUCCESS;
}
