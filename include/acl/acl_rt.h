/*
 * acl_rt.h - the ACL runtime subset: devices, contexts, streams, events, memory, callbacks
 * (docs/acl.md).
 *
 * In this implementation a "device" is host memory and a stream is an in-order work
 * queue run by a worker thread. A NULL stream runs work synchronously in the caller.
 */
#ifndef ACL_RT_H_
#define ACL_RT_H_

#include <acl/acl_base.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
    /* The source is staged by the runtime: the caller may reuse or free it as soon as
     * aclrtMemcpyAsync returns. */
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

typedef enum aclrtRunMode { ACL_DEVICE = 0, ACL_HOST = 1 } aclrtRunMode;

/* aclrtSetDeviceSatMode: recorded per device and reported back; no effect on results
 * here (the host's arithmetic is IEEE 754, i.e. INFNAN, whatever the mode). */
typedef enum aclrtFloatOverflowMode {
    ACL_RT_OVERFLOW_MODE_SATURATION = 0,
    ACL_RT_OVERFLOW_MODE_INFNAN = 1,
    ACL_RT_OVERFLOW_MODE_UNDEF = 2
} aclrtFloatOverflowMode;

typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

/* aclrtQueryEvent's (deprecated upstream): note the values are the reverse of
 * aclrtEventRecordedStatus's. */
typedef enum aclrtEventStatus {
    ACL_EVENT_STATUS_COMPLETE = 0,
    ACL_EVENT_STATUS_NOT_READY = 1,
    ACL_EVENT_STATUS_RESERVED = 2
} aclrtEventStatus;

typedef enum aclrtEventWaitStatus {
    ACL_EVENT_WAIT_STATUS_COMPLETE = 0,
    ACL_EVENT_WAIT_STATUS_NOT_READY = 1,
    ACL_EVENT_WAIT_STATUS_RESERVED = 0xFFFF
} aclrtEventWaitStatus;

typedef enum aclrtStreamStatus {
    ACL_STREAM_STATUS_COMPLETE = 0,
    ACL_STREAM_STATUS_NOT_READY = 1,
    ACL_STREAM_STATUS_RESERVED = 0xFFFF
} aclrtStreamStatus;

/* aclrtGetMemInfo attributes. Every kind of "device" memory is host memory here: the
 * attributes report the host's (docs/acl.md), the 1 GiB huge-page ones 0. */
typedef enum aclrtMemAttr {
    ACL_DDR_MEM = 0,
    ACL_HBM_MEM = 1,
    ACL_DDR_MEM_HUGE = 2,
    ACL_DDR_MEM_NORMAL = 3,
    ACL_HBM_MEM_HUGE = 4,
    ACL_HBM_MEM_NORMAL = 5,
    ACL_DDR_MEM_P2P_HUGE = 6,
    ACL_DDR_MEM_P2P_NORMAL = 7,
    ACL_HBM_MEM_P2P_HUGE = 8,
    ACL_HBM_MEM_P2P_NORMAL = 9,
    ACL_HBM_MEM_HUGE1G = 10,
    ACL_HBM_MEM_P2P_HUGE1G = 11,
    ACL_MEM_NORMAL = 12,
    ACL_MEM_HUGE = 13,
    ACL_MEM_HUGE1G = 14,
    ACL_MEM_P2P_NORMAL = 15,
    ACL_MEM_P2P_HUGE = 16,
    ACL_MEM_P2P_HUGE1G = 17
} aclrtMemAttr;

/* Virtual memory management (aclrtReserveMemAddress ... aclrtMapMem; docs/acl.md). */
typedef void *aclrtDrvMemHandle;
typedef enum aclrtMemHandleType { ACL_MEM_HANDLE_TYPE_NONE = 0 } aclrtMemHandleType;
typedef enum aclrtMemAllocationType { ACL_MEM_ALLOCATION_TYPE_PINNED = 0 } aclrtMemAllocationType;
typedef enum aclrtMemLocationType {
    ACL_MEM_LOCATION_TYPE_HOST = 0,
    ACL_MEM_LOCATION_TYPE_DEVICE = 1
} aclrtMemLocationType;
typedef struct aclrtMemLocation {
    uint32_t id;
    aclrtMemLocationType type;
} aclrtMemLocation;
typedef struct aclrtPhysicalMemProp {
    aclrtMemHandleType handleType;
    aclrtMemAllocationType allocationType;
    aclrtMemAttr memAttr;
    aclrtMemLocation location;
    uint64_t reserve;
} aclrtPhysicalMemProp;
typedef enum aclrtMemGranularityOptions {
    ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
    ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1,
    ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF = 0xFFFF
} aclrtMemGranularityOptions;

/* aclrtCreateEventWithFlag flags (bits, or-ed). An event of aclrtCreateEvent has
 * ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE. */
#define ACL_EVENT_SYNC 0x00000001u                    /* may be waited for (aclrtStreamWaitEvent) and reset */
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002u /* accepted; no effect here */
#define ACL_EVENT_TIME_LINE 0x00000008u               /* records a timestamp (aclrtEventElapsedTime) */

/* aclrtCreateStreamWithConfig flags (bits, or-ed; docs/acl.md). */
#define ACL_STREAM_FAST_LAUNCH 0x00000001u     /* accepted; no effect here (enqueues are fast) */
#define ACL_STREAM_FAST_SYNC 0x00000002u       /* accepted; no effect here (synchronizes spin first) */
#define ACL_STREAM_PERSISTENT 0x00000004u      /* not supported (model capture) */
#define ACL_STREAM_HUGE 0x00000008u            /* accepted; no effect here (queues are unbounded) */
#define ACL_STREAM_CPU_SCHEDULE 0x00000010u    /* not supported */
#define ACL_STREAM_DEVICE_USE_ONLY 0x00000020u /* not supported */

/* aclrtSetStreamFailureMode modes (docs/acl.md). */
#define ACL_CONTINUE_ON_FAILURE 0x00000000u
#define ACL_STOP_ON_FAILURE 0x00000001u

typedef enum aclrtCallbackBlockType {
    ACL_CALLBACK_NO_BLOCK = 0, /* the stream goes on once the callback is handed to its thread */
    ACL_CALLBACK_BLOCK = 1     /* the stream waits until the callback has returned */
} aclrtCallbackBlockType;

typedef void (*aclrtCallback)(void *userData);

extern aclError aclInit(const char *configPath);
extern aclError aclFinalize(void);
extern aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch);

extern aclError aclrtGetDeviceCount(uint32_t *count);
extern aclError aclrtSetDevice(int32_t deviceId);
extern aclError aclrtGetDevice(int32_t *deviceId);
extern aclError aclrtResetDevice(int32_t deviceId);
extern aclError aclrtGetRunMode(aclrtRunMode *runMode);
extern aclError aclrtSynchronizeDevice(void);
/* The SoC name: always "HostCPU" here (no Ascend SoC), never NULL. */
extern const char *aclrtGetSocName(void);
/* The current device's overflow mode (default ACL_RT_OVERFLOW_MODE_INFNAN); see above. */
extern aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode);
extern aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode *mode);

extern aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId);
extern aclError aclrtDestroyContext(aclrtContext context);
extern aclError aclrtSetCurrentContext(aclrtContext context);
extern aclError aclrtGetCurrentContext(aclrtContext *context);

extern aclError aclrtCreateStream(aclrtStream *stream);
extern aclError aclrtDestroyStream(aclrtStream stream);
extern aclError aclrtSynchronizeStream(aclrtStream stream);
/* timeout in ms; -1 waits forever. */
extern aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
/* priority is ignored; flag: ACL_STREAM_* above. */
extern aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag);
/* COMPLETE when every task enqueued before the call has finished (never blocks). */
extern aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);
/* mode: ACL_CONTINUE_ON_FAILURE or ACL_STOP_ON_FAILURE, accepted for a live stream
 * (not the NULL one); either way a failed task is reported by the next synchronize
 * and a failed HCCL operation fails its communicator's later ones (docs/acl.md). */
extern aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode);

extern aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
extern aclError aclrtFree(void *devPtr);
extern aclError aclrtMallocHost(void **hostPtr, size_t size);
extern aclError aclrtFreeHost(void *hostPtr);
extern aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);
extern aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                 aclrtStream stream);
extern aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
extern aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);
/* height rows of width bytes, row i from src + i * spitch to dst + i * dpitch;
 * width <= spitch and width <= dpitch. */
extern aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              aclrtMemcpyKind kind);
extern aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, aclrtMemcpyKind kind, aclrtStream stream);
/*
 * Virtual memory: reserve an address range, create physical memory, map it (or parts
 * of it) into the range, use the range like aclrtMalloc memory, unmap, free, release.
 * Sizes and offsets are multiples of the granularity (2 MiB here); see docs/acl.md.
 */
extern aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option,
                                                 size_t *granularity);
/* alignment: 0 or a power of two; expectPtr: NULL or a hint; flags: 0 or 1. */
extern aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr,
                                       uint64_t flags);
extern aclError aclrtReleaseMemAddress(void *virPtr);
extern aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop,
                                    uint64_t flags);
extern aclError aclrtFreePhysical(aclrtDrvMemHandle handle);
extern aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags);
extern aclError aclrtUnmapMem(void *virPtr);
/* Bytes free and in total of the memory attr names (here: the host's memory). */
extern aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *freeMem, size_t *totalMem);

extern aclError aclrtCreateEvent(aclrtEvent *event);
extern aclError aclrtDestroyEvent(aclrtEvent event);
extern aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
extern aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
extern aclError aclrtSynchronizeEvent(aclrtEvent event);
extern aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);
/* Deprecated upstream for aclrtQueryEventStatus; the same answer in the older enum. */
extern aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status);
/* COMPLETE when every aclrtStreamWaitEvent for the event made before the call has
 * finished waiting (none made counts as complete). */
extern aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status);
extern aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
/* In stream order: forgets the event's records made before the call for timing
 * (aclrtEventElapsedTime fails until it is recorded again). Waits are not affected. */
extern aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);
/* Milliseconds from startEvent's latest record to endEvent's; both must be complete. */
extern aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);

/*
 * Callbacks: a thread calls aclrtSubscribeReport(its id, stream) (the id is its
 * pthread_t, as std::thread::id prints it) and loops on aclrtProcessReport; each
 * aclrtLaunchCallback queues fn(userData) on the stream, and when the stream reaches
 * it, it is run by that thread's next aclrtProcessReport.
 */
extern aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream);
extern aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType,
                                    aclrtStream stream);
/* Runs one callback delivered to the calling thread; timeout in ms, -1 = forever. */
extern aclError aclrtProcessReport(int32_t timeout);
extern aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream);

/* Most recent error text of the calling thread ("" when none). */
extern const char *aclGetRecentErrMsg(void);

/*
 * Extension (this project): run fn(arg) on the stream, in order with its other work.
 * A non-zero return from fn is the stream's error, returned by the next
 * aclrtSynchronizeStream. With a NULL stream fn runs now and its result is returned.
 * fn owns arg. This is how libhccl enqueues its operations.
 */
typedef aclError (*aclrtHostTask)(void *arg);
extern aclError aclrtLaunchHostTask(aclrtStream stream, aclrtHostTask fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* ACL_RT_H_ */
