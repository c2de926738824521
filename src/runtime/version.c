/*
 * version.c - runtime version query.
 */
#include <acl/acl.h>

aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch);

aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch)
{
    if (!major || !minor || !patch) return ACL_ERROR_INVALID_PARAM;
    *major = 1;
    *minor = 0;
    *patch = 0;
    return ACL_SUCCESS;
}
