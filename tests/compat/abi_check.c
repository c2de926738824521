/*
 * abi_check.c - compile-time check of the public headers against the reference
 * interface: enum values, struct sizes and field offsets, function signatures.
 * Compiled (never run) as C11 and as C++14 by check_headers.sh; hccl.h alone must
 * bring in hccl_types.h, hccl_comm.h and acl/acl.h as CANN's does.
 */
#include <hccl/hccl.h>
#include <acl/acl_prof.h>
#include <stddef.h>

#ifdef __cplusplus
#define SA(cond) static_assert(cond, #cond)
#else
#define SA(cond) _Static_assert(cond, #cond)
#endif

SA(HCCL_SUCCESS == 0);
SA(HCCL_E_PARA == 1);
SA(HCCL_E_PTR == 2);
SA(HCCL_E_MEMORY == 3);
SA(HCCL_E_INTERNAL == 4);
SA(HCCL_E_NOT_SUPPORT == 5);
SA(HCCL_E_NOT_FOUND == 6);
SA(HCCL_E_UNAVAIL == 7);
SA(HCCL_E_SYSCALL == 8);
SA(HCCL_E_TIMEOUT == 9);
SA(HCCL_E_OPEN_FILE_FAILURE == 10);
SA(HCCL_E_TCP_CONNECT == 11);
SA(HCCL_E_ROCE_CONNECT == 12);
SA(HCCL_E_TCP_TRANSFER == 13);
SA(HCCL_E_ROCE_TRANSFER == 14);
SA(HCCL_E_RUNTIME == 15);
SA(HCCL_E_DRV == 16);
SA(HCCL_E_PROFILING == 17);
SA(HCCL_E_CCE == 18);
SA(HCCL_E_NETWORK == 19);
SA(HCCL_E_AGAIN == 20);
SA(HCCL_E_REMOTE == 21);
SA(HCCL_E_SUSPENDING == 22);
SA(HCCL_E_OPRETRY_FAIL == 23);
SA(HCCL_E_OOM == 24);
SA(HCCL_E_RESERVED == 25);

SA(HCCL_REDUCE_SUM == 0);
SA(HCCL_REDUCE_PROD == 1);
SA(HCCL_REDUCE_MAX == 2);
SA(HCCL_REDUCE_MIN == 3);
SA(HCCL_REDUCE_RESERVED == 255);

SA(HCCL_DATA_TYPE_INT8 == 0);
SA(HCCL_DATA_TYPE_INT16 == 1);
SA(HCCL_DATA_TYPE_INT32 == 2);
SA(HCCL_DATA_TYPE_FP16 == 3);
SA(HCCL_DATA_TYPE_FP32 == 4);
SA(HCCL_DATA_TYPE_INT64 == 5);
SA(HCCL_DATA_TYPE_UINT64 == 6);
SA(HCCL_DATA_TYPE_UINT8 == 7);
SA(HCCL_DATA_TYPE_UINT16 == 8);
SA(HCCL_DATA_TYPE_UINT32 == 9);
SA(HCCL_DATA_TYPE_FP64 == 10);
SA(HCCL_DATA_TYPE_BFP16 == 11);
SA(HCCL_DATA_TYPE_INT128 == 12);
SA(HCCL_DATA_TYPE_HIF8 == 14);
SA(HCCL_DATA_TYPE_FP8E4M3 == 15);
SA(HCCL_DATA_TYPE_FP8E5M2 == 16);
SA(HCCL_DATA_TYPE_FP8E8M0 == 17);
SA(HCCL_DATA_TYPE_RESERVED == 255);

SA(HCCL_SEND == 0);
SA(HCCL_RECV == 1);
SA(HCCL_DETERMINISTIC == 0);
SA(HCCL_ROOT_INFO_BYTES == 4108);
SA(sizeof(HcclRootInfo) == 4108);
SA(sizeof(HcclConfigValue) == 4);

SA(offsetof(HcclSendRecvItem, sendRecvType) == 0);
SA(offsetof(HcclSendRecvItem, buf) == sizeof(void *));
SA(offsetof(HcclSendRecvItem, count) == 2 * sizeof(void *));
SA(offsetof(HcclSendRecvItem, dataType) == 2 * sizeof(void *) + 8);
SA(offsetof(HcclSendRecvItem, remoteRank) == 2 * sizeof(void *) + 12);

/* HcclCommConfig: fields in the reference order, naturally aligned (LP64). */
SA(offsetof(HcclCommConfig, reserved) == 0);
SA(sizeof(((HcclCommConfig *)0)->reserved) == 24);
SA(offsetof(HcclCommConfig, hcclBufferSize) == 24);
SA(offsetof(HcclCommConfig, hcclDeterministic) == 28);
SA(offsetof(HcclCommConfig, hcclCommName) == 32);
SA(offsetof(HcclCommConfig, hcclUdi) == 160);
SA(offsetof(HcclCommConfig, hcclOpExpansionMode) == 288);
SA(offsetof(HcclCommConfig, hcclRdmaTrafficClass) == 292);
SA(offsetof(HcclCommConfig, hcclRdmaServiceLevel) == 296);
SA(offsetof(HcclCommConfig, hcclWorldRankID) == 300);
SA(offsetof(HcclCommConfig, hcclJobID) == 304);
SA(offsetof(HcclCommConfig, aclGraphZeroCopyEnable) == 312);
SA(offsetof(HcclCommConfig, hcclExecTimeOut) == 316);
SA(offsetof(HcclCommConfig, hcclAlgo) == 320);
SA(offsetof(HcclCommConfig, hcclRetryEnable) == 1920);
SA(offsetof(HcclCommConfig, hcclRetryParams) == 1970);
SA(offsetof(HcclCommConfig, hcclBufferName) == 2098);
SA(offsetof(HcclCommConfig, hcclQos) == 2228);
SA(offsetof(HcclCommConfig, hcclSymWinMaxMemSizePerRank) == 2232);
SA(sizeof(HcclCommConfig) == 2240);
/* upstream's version of this layout (hcclQos and hcclSymWinMaxMemSizePerRank came with 10):
 * HcclCommConfigInit writes it, and a CANN library reads the fields by it */
SA(HCCL_COMM_CONFIG_VERSION == 10);
/* upstream's names of these constants compile too */
SA(HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET == HCCL_COMM_EXEC_TIMEOUT_CONFIG_NOT_SET);
SA(HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE == 16);
SA(HCCL_COMM_CONFIG_MAGIC_WORD == 0xf0f0f0f0u);
SA(HCCL_COMM_CONFIG_INFO_BYTES == 24);

SA(HCCL_COMM_CONFIG_BUFFER_SIZE == 0);
SA(HCCL_COMM_CONFIG_COMM_NAME == 2);
SA(HCCL_COMM_CONFIG_OP_EXPANSION_MODE == 3);
SA(HCCL_COMM_CONFIG_EXEC_TIMEOUT == 8);
SA(HCCL_COMM_CONFIG_ALGO == 9);
SA(HCCL_COMM_CONFIG_BUFFER_NAME == 11);
SA(HCCL_COMM_CONFIG_RESERVED == 12);
SA(ACL_SUCCESS == 0);
SA(ACL_ERROR_NONE == 0);
SA(ACL_RT_OVERFLOW_MODE_SATURATION == 0);
SA(ACL_RT_OVERFLOW_MODE_INFNAN == 1);
SA(ACL_RT_OVERFLOW_MODE_UNDEF == 2);
SA(ACL_CONTINUE_ON_FAILURE == 0);
SA(ACL_STOP_ON_FAILURE == 1);
SA(ACL_PROF_ACL_API == 0x0001);
SA(ACL_PROF_TASK_TIME == 0x0002);
SA(ACL_PROF_AICORE_METRICS == 0x0004);
SA(ACL_PROF_AICPU == 0x0008);
SA(ACL_PROF_L2CACHE == 0x0010);
SA(ACL_PROF_HCCL_TRACE == 0x0020);
SA(ACL_PROF_TRAINING_TRACE == 0x0040);
SA(ACL_PROF_MSPROFTX == 0x0080);
SA(ACL_PROF_RUNTIME_API == 0x0100);
SA(ACL_PROF_TASK_TIME_L0 == 0x0800);
SA(ACL_PROF_TASK_MEMORY == 0x1000);
SA(ACL_AICORE_ARITHMETIC_UTILIZATION == 0);
SA(ACL_AICORE_PIPE_UTILIZATION == 1);
SA(ACL_AICORE_L2_CACHE == 6);
SA(ACL_AICORE_NONE == 0xFF);
SA(ACL_MEM_HANDLE_TYPE_NONE == 0);
SA(ACL_MEM_ALLOCATION_TYPE_PINNED == 0);
SA(ACL_MEM_LOCATION_TYPE_HOST == 0);
SA(ACL_MEM_LOCATION_TYPE_DEVICE == 1);
SA(ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM == 0);
SA(ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED == 1);
SA(ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF == 0xFFFF);
SA(sizeof(aclrtMemLocation) == 8);
SA(offsetof(aclrtPhysicalMemProp, memAttr) == 8);
SA(offsetof(aclrtPhysicalMemProp, location) == 12);
SA(offsetof(aclrtPhysicalMemProp, reserve) == 24);
SA(sizeof(aclrtPhysicalMemProp) == 32);
SA(ACL_MEM_MALLOC_HUGE_FIRST == 0);
SA(ACL_MEM_MALLOC_HUGE_ONLY == 1);
SA(ACL_MEM_MALLOC_NORMAL_ONLY == 2);
SA(ACL_MEMCPY_HOST_TO_HOST == 0);
SA(ACL_MEMCPY_HOST_TO_DEVICE == 1);
SA(ACL_MEMCPY_DEVICE_TO_HOST == 2);
SA(ACL_MEMCPY_DEVICE_TO_DEVICE == 3);
SA(ACL_MEMCPY_DEFAULT == 4);
SA(ACL_EVENT_SYNC == 0x1u);
SA(ACL_EVENT_CAPTURE_STREAM_PROGRESS == 0x2u);
SA(ACL_EVENT_TIME_LINE == 0x8u);
SA(ACL_CALLBACK_NO_BLOCK == 0);
SA(ACL_CALLBACK_BLOCK == 1);
SA(ACL_ERROR_RT_STREAM_SUBSCRIBE == 107011);
SA(ACL_ERROR_RT_THREAD_SUBSCRIBE == 107012);
SA(ACL_ERROR_RT_STREAM_NO_CB_REG == 107015);
SA(ACL_ERROR_RT_EVENT_NOT_COMPLETE == 507006);
SA(ACL_ERROR_RT_REPORT_TIMEOUT == 507012);
SA(ACL_STREAM_STATUS_COMPLETE == 0);
SA(ACL_STREAM_STATUS_NOT_READY == 1);
SA(ACL_STREAM_STATUS_RESERVED == 0xFFFF);
SA(ACL_EVENT_WAIT_STATUS_COMPLETE == 0);
SA(ACL_EVENT_WAIT_STATUS_NOT_READY == 1);
SA(ACL_EVENT_WAIT_STATUS_RESERVED == 0xFFFF);
SA(ACL_STREAM_FAST_LAUNCH == 0x1u);
SA(ACL_STREAM_FAST_SYNC == 0x2u);
SA(ACL_STREAM_PERSISTENT == 0x4u);
SA(ACL_STREAM_HUGE == 0x8u);
SA(ACL_STREAM_CPU_SCHEDULE == 0x10u);
SA(ACL_STREAM_DEVICE_USE_ONLY == 0x20u);
SA(ACL_DDR_MEM == 0);
SA(ACL_HBM_MEM == 1);
SA(ACL_DDR_MEM_HUGE == 2);
SA(ACL_DDR_MEM_NORMAL == 3);
SA(ACL_HBM_MEM_HUGE == 4);
SA(ACL_HBM_MEM_NORMAL == 5);
SA(ACL_DDR_MEM_P2P_HUGE == 6);
SA(ACL_DDR_MEM_P2P_NORMAL == 7);
SA(ACL_HBM_MEM_P2P_HUGE == 8);
SA(ACL_HBM_MEM_P2P_NORMAL == 9);
SA(ACL_HBM_MEM_HUGE1G == 10);
SA(ACL_HBM_MEM_P2P_HUGE1G == 11);
SA(ACL_MEM_NORMAL == 12);
SA(ACL_MEM_HUGE == 13);
SA(ACL_MEM_HUGE1G == 14);
SA(ACL_MEM_P2P_NORMAL == 15);
SA(ACL_MEM_P2P_HUGE == 16);
SA(ACL_MEM_P2P_HUGE1G == 17);

/* Signatures: each assignment fails to compile if a prototype differs. */
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
    HcclResult (*get_root_info)(HcclRootInfo *);
    HcclResult (*init_root_info)(uint32_t, const HcclRootInfo *, uint32_t, HcclComm *);
    HcclResult (*init_root_info_config)(uint32_t, const HcclRootInfo *, uint32_t, const HcclCommConfig *, HcclComm *);
    HcclResult (*init_cluster_info)(const char *, uint32_t, HcclComm *);
    HcclResult (*init_cluster_info_config)(const char *, uint32_t, HcclCommConfig *, HcclComm *);
    HcclResult (*init_all)(uint32_t, int32_t *, HcclComm *);
    HcclResult (*create_sub)(HcclComm *, uint32_t, uint32_t *, uint64_t, uint32_t, HcclCommConfig *, HcclComm *);
    HcclResult (*rank_size)(HcclComm, uint32_t *);
    HcclResult (*rank_id)(HcclComm, uint32_t *);
    HcclResult (*comm_name)(HcclComm, char *);
    HcclResult (*by_name)(const char *, HcclComm *);
    HcclResult (*async_error)(HcclComm, HcclResult *);
    HcclResult (*destroy)(HcclComm);
    HcclResult (*set_config)(HcclConfig, HcclConfigValue);
    HcclResult (*get_config)(HcclConfig, HcclConfigValue *);
    HcclResult (*group_start)(void);
    HcclResult (*group_end)(void);
    HcclResult (*suspend)(HcclComm);
    HcclResult (*resume)(HcclComm);
    const char *(*error_string)(HcclResult);
    HcclResult (*all_reduce)(void *, void *, uint64_t, HcclDataType, HcclReduceOp, HcclComm, aclrtStream);
    HcclResult (*broadcast)(void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream);
    HcclResult (*reduce_scatter)(void *, void *, uint64_t, HcclDataType, HcclReduceOp, HcclComm, aclrtStream);
    HcclResult (*reduce_scatter_v)(void *, const void *, const void *, void *, uint64_t, HcclDataType, HcclReduceOp,
                                   HcclComm, aclrtStream);
    HcclResult (*scatter)(void *, void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream);
    HcclResult (*all_gather)(void *, void *, uint64_t, HcclDataType, HcclComm, aclrtStream);
    HcclResult (*all_gather_v)(void *, uint64_t, void *, const void *, const void *, HcclDataType, HcclComm,
                               aclrtStream);
    HcclResult (*send)(void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream);
    HcclResult (*recv)(void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream);
    HcclResult (*batch_send_recv)(HcclSendRecvItem *, uint32_t, HcclComm, aclrtStream);
    HcclResult (*all_to_all)(const void *, uint64_t, HcclDataType, const void *, uint64_t, HcclDataType, HcclComm,
                             aclrtStream);
    HcclResult (*all_to_all_v)(const void *, const void *, const void *, HcclDataType, const void *, const void *,
                               const void *, HcclDataType, HcclComm, aclrtStream);
    HcclResult (*all_to_all_vc)(const void *, const void *, HcclDataType, const void *, HcclDataType, HcclComm,
                                aclrtStream);
    HcclResult (*reduce)(void *, void *, uint64_t, HcclDataType, HcclReduceOp, uint32_t, HcclComm, aclrtStream);
    HcclResult (*barrier)(HcclComm, aclrtStream);
    HcclResult (*gather)(void *, void *, uint64_t, HcclDataType, uint32_t, HcclComm, aclrtStream);
    aclError (*acl_init)(const char *);
    aclError (*acl_finalize)(void);
    aclError (*set_device)(int32_t);
    aclError (*get_device)(int32_t *);
    aclError (*reset_device)(int32_t);
    aclError (*device_count)(uint32_t *);
    aclError (*create_context)(aclrtContext *, int32_t);
    aclError (*destroy_context)(aclrtContext);
    aclError (*set_current_context)(aclrtContext);
    aclError (*create_stream)(aclrtStream *);
    aclError (*destroy_stream)(aclrtStream);
    aclError (*sync_stream)(aclrtStream);
    aclError (*sync_stream_timeout)(aclrtStream, int32_t);
    aclError (*acl_malloc)(void **, size_t, aclrtMemMallocPolicy);
    aclError (*acl_free)(void *);
    aclError (*malloc_host)(void **, size_t);
    aclError (*free_host)(void *);
    aclError (*memcpy_)(void *, size_t, const void *, size_t, aclrtMemcpyKind);
    aclError (*memcpy_async)(void *, size_t, const void *, size_t, aclrtMemcpyKind, aclrtStream);
    aclError (*memset_)(void *, size_t, int32_t, size_t);
    aclError (*create_event)(aclrtEvent *);
    aclError (*destroy_event)(aclrtEvent);
    aclError (*record_event)(aclrtEvent, aclrtStream);
    aclError (*wait_event)(aclrtStream, aclrtEvent);
    aclError (*sync_event)(aclrtEvent);
    aclError (*create_event_flag)(aclrtEvent *, uint32_t);
    aclError (*reset_event)(aclrtEvent, aclrtStream);
    aclError (*elapsed_time)(float *, aclrtEvent, aclrtEvent);
    aclError (*subscribe_report)(uint64_t, aclrtStream);
    aclError (*launch_callback)(aclrtCallback, void *, aclrtCallbackBlockType, aclrtStream);
    aclError (*process_report)(int32_t);
    aclError (*unsubscribe_report)(uint64_t, aclrtStream);
    aclError (*create_stream_config)(aclrtStream *, uint32_t, uint32_t);
    aclError (*stream_query)(aclrtStream, aclrtStreamStatus *);
    aclError (*query_event_wait)(aclrtEvent, aclrtEventWaitStatus *);
    aclError (*get_mem_info)(aclrtMemAttr, size_t *, size_t *);
    aclError (*memcpy_2d)(void *, size_t, const void *, size_t, size_t, size_t, aclrtMemcpyKind);
    aclError (*memcpy_2d_async)(void *, size_t, const void *, size_t, size_t, size_t, aclrtMemcpyKind, aclrtStream);
    const char *(*get_soc_name)(void);
    aclError (*set_sat_mode)(aclrtFloatOverflowMode);
    aclError (*get_sat_mode)(aclrtFloatOverflowMode *);
    aclError (*set_failure_mode)(aclrtStream, uint64_t);
    aclError (*prof_init)(const char *, size_t);
    aclError (*prof_finalize)(void);
    aclprofConfig *(*prof_create_config)(uint32_t *, uint32_t, aclprofAicoreMetrics, aclprofAicoreEvents *, uint64_t);
    aclError (*prof_destroy_config)(const aclprofConfig *);
    aclError (*prof_start)(const aclprofConfig *);
    aclError (*prof_stop)(const aclprofConfig *);
    aclError (*mem_granularity)(aclrtPhysicalMemProp *, aclrtMemGranularityOptions, size_t *);
    aclError (*reserve_mem)(void **, size_t, size_t, void *, uint64_t);
    aclError (*release_mem)(void *);
    aclError (*malloc_physical)(aclrtDrvMemHandle *, size_t, const aclrtPhysicalMemProp *, uint64_t);
    aclError (*free_physical)(aclrtDrvMemHandle);
    aclError (*map_mem)(void *, size_t, size_t, aclrtDrvMemHandle, uint64_t);
    aclError (*unmap_mem)(void *);
    HcclResult (*set_memory_range)(HcclComm, void *, size_t, size_t, uint64_t);
    HcclResult (*unset_memory_range)(HcclComm, void *);
    HcclResult (*activate_comm_memory)(HcclComm, void *, size_t, size_t, aclrtDrvMemHandle, uint64_t);
    HcclResult (*deactivate_comm_memory)(HcclComm, void *);
    uint32_t (*config_capability)(void);
} api_table;

const api_table abi_check_table = {
    HcclGetRootInfo, HcclCommInitRootInfo, HcclCommInitRootInfoConfig, HcclCommInitClusterInfo,
    HcclCommInitClusterInfoConfig, HcclCommInitAll, HcclCreateSubCommConfig, HcclGetRankSize, HcclGetRankId,
    HcclGetCommName, HcclCommGetHandleWithName, HcclGetCommAsyncError, HcclCommDestroy, HcclSetConfig, HcclGetConfig,
    HcclGroupStart, HcclGroupEnd, HcclCommSuspend, HcclCommResume, HcclGetErrorString, HcclAllReduce, HcclBroadcast,
    HcclReduceScatter, HcclReduceScatterV, HcclScatter, HcclAllGather, HcclAllGatherV, HcclSend, HcclRecv,
    HcclBatchSendRecv, HcclAlltoAll, HcclAlltoAllV, HcclAlltoAllVC, HcclReduce, HcclBarrier, HcclGather, aclInit,
    aclFinalize, aclrtSetDevice, aclrtGetDevice, aclrtResetDevice, aclrtGetDeviceCount, aclrtCreateContext,
    aclrtDestroyContext, aclrtSetCurrentContext, aclrtCreateStream, aclrtDestroyStream, aclrtSynchronizeStream,
    aclrtSynchronizeStreamWithTimeout, aclrtMalloc, aclrtFree, aclrtMallocHost, aclrtFreeHost, aclrtMemcpy,
    aclrtMemcpyAsync, aclrtMemset, aclrtCreateEvent, aclrtDestroyEvent, aclrtRecordEvent, aclrtStreamWaitEvent,
    aclrtSynchronizeEvent, aclrtCreateEventWithFlag, aclrtResetEvent, aclrtEventElapsedTime, aclrtSubscribeReport,
    aclrtLaunchCallback, aclrtProcessReport, aclrtUnSubscribeReport, aclrtCreateStreamWithConfig, aclrtStreamQuery,
    aclrtQueryEventWaitStatus, aclrtGetMemInfo, aclrtMemcpy2d, aclrtMemcpy2dAsync, aclrtGetSocName,
    aclrtSetDeviceSatMode, aclrtGetDeviceSatMode, aclrtSetStreamFailureMode, aclprofInit, aclprofFinalize,
    aclprofCreateConfig, aclprofDestroyConfig, aclprofStart, aclprofStop, aclrtMemGetAllocationGranularity,
    aclrtReserveMemAddress, aclrtReleaseMemAddress, aclrtMallocPhysical, aclrtFreePhysical, aclrtMapMem,
    aclrtUnmapMem, HcclCommSetMemoryRange, HcclCommUnsetMemoryRange, HcclCommActivateCommMemory,
    HcclCommDeactivateCommMemory, HcclGetCommConfigCapability,
};
#ifdef __cplusplus
}
#endif

/* HcclCommConfigInit is a static inline function of the header. */
void abi_check_config_init(HcclCommConfig *c);
void abi_check_config_init(HcclCommConfig *c)
{
    HcclCommConfigInit(c);
}
