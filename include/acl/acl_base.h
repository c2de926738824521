/*
 * acl_base.h - basic ACL types and error codes (the subset HCCL programs use).
 */
#ifndef ACL_BASE_H_
#define ACL_BASE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtContext;
typedef void *aclrtEvent;

#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0 /* the older name of ACL_SUCCESS */

/* Common errors. */
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_API_NOT_SUPPORT 200001
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_FAILURE 500002

/* Runtime errors. */
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_SUBSCRIBE 107011 /* the stream already has a callback thread */
#define ACL_ERROR_RT_THREAD_SUBSCRIBE 107012 /* the thread is not subscribed (to that stream) */
#define ACL_ERROR_RT_STREAM_NO_CB_REG 107015 /* no callback thread is subscribed to the stream */
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_WAIT_TIMEOUT 107019
#define ACL_ERROR_RT_TASK_TIMEOUT 107020
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#define ACL_ERROR_RT_EVENT_NOT_COMPLETE 507006
#define ACL_ERROR_RT_REPORT_TIMEOUT 507012 /* aclrtProcessReport: no callback within the timeout */
#define ACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046
#define ACL_ERROR_RT_COMM_OP_RETRY_FAIL 507904
/* A task queued on a stream failed (e.g. an HCCL operation); see its log line. */
#define ACL_ERROR_RT_STREAM_TASK_EXCEPTION 507901

#ifdef __cplusplus
}
#endif

#endif /* ACL_BASE_H_ */
