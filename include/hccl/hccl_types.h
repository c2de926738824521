/*
 * hccl_types.h - HCCL data types, result codes and the versioned communicator config.
 *
 * Names and numeric values follow CANN's hccl_types.h exactly (the compatibility
 * contract); everything is plain C so the header works from C11 and C++.
 */
#ifndef HCCL_TYPES_H_
#define HCCL_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCCL_COMM_CONFIG_INFO_BYTES 24
#define HCCL_COMM_CONFIG_MAGIC_WORD 0xf0f0f0f0u
#define HCCL_COMM_CONFIG_VERSION 10 /* the fields up to hcclQos and hcclSymWinMaxMemSizePerRank */
#define HCCL_COMM_DEFAULT_BUFFSIZE 200 /* MB */
#define HCCL_COMM_DEFAULT_DETERMINISTIC 0
#define HCCL_COMM_DEFAULT_OP_EXPANSION_MODE 0
#define COMM_NAME_MAX_LENGTH 128
#define UDI_MAX_LENGTH 128
#define HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_WORLD_RANK_ID_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_JOB_ID_CONFIG_NOT_SET 0xffffffffffffffffull
#define HCCL_COMM_EXEC_TIMEOUT_CONFIG_NOT_SET ((int32_t)0xffffffff)
#define HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET HCCL_COMM_EXEC_TIMEOUT_CONFIG_NOT_SET /* upstream's spelling */
#define HCCL_COMM_QOS_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_SYM_WIN_SIZE_CONFIG_NOT_SET 0xffffffffffffffffull
#define HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE 16ull /* upstream's default of hcclSymWinMaxMemSizePerRank (unused here) */
#define HCCL_COMM_ALGO_MAX_LENGTH 1600
#define HCCL_COMM_RETRY_ENABLE_MAX_LENGTH 50
#define HCCL_COMM_RETRY_PARAMS_MAX_LENGTH 128
#define HCCL_COMM_BUFFER_NAME_MAX_LENGTH 128

/** HCCL function return values. */
typedef enum {
    HCCL_SUCCESS = 0,              /**< success */
    HCCL_E_PARA = 1,               /**< parameter error */
    HCCL_E_PTR = 2,                /**< empty pointer */
    HCCL_E_MEMORY = 3,             /**< memory error */
    HCCL_E_INTERNAL = 4,           /**< internal error */
    HCCL_E_NOT_SUPPORT = 5,        /**< not support feature */
    HCCL_E_NOT_FOUND = 6,          /**< not found specific resource */
    HCCL_E_UNAVAIL = 7,            /**< resource unavailable */
    HCCL_E_SYSCALL = 8,            /**< call system interface error */
    HCCL_E_TIMEOUT = 9,            /**< timeout */
    HCCL_E_OPEN_FILE_FAILURE = 10, /**< open file fail */
    HCCL_E_TCP_CONNECT = 11,       /**< tcp connect fail */
    HCCL_E_ROCE_CONNECT = 12,      /**< roce connect fail */
    HCCL_E_TCP_TRANSFER = 13,      /**< tcp transfer fail */
    HCCL_E_ROCE_TRANSFER = 14,     /**< roce transfer fail */
    HCCL_E_RUNTIME = 15,           /**< call runtime api fail */
    HCCL_E_DRV = 16,               /**< call driver api fail */
    HCCL_E_PROFILING = 17,         /**< call profiling api fail */
    HCCL_E_CCE = 18,               /**< call cce api fail */
    HCCL_E_NETWORK = 19,           /**< call network api fail */
    HCCL_E_AGAIN = 20,             /**< try again */
    HCCL_E_REMOTE = 21,            /**< error cqe */
    HCCL_E_SUSPENDING = 22,        /**< error communicator suspending */
    HCCL_E_OPRETRY_FAIL = 23,      /**< retry constraint */
    HCCL_E_OOM = 24,               /**< out of memory */
    HCCL_E_RESERVED                /**< reserved */
} HcclResult;

/** Handle of an HCCL communicator. */
typedef void *HcclComm;

/** Reduction operations. */
typedef enum {
    HCCL_REDUCE_SUM = 0,
    HCCL_REDUCE_PROD = 1,
    HCCL_REDUCE_MAX = 2,
    HCCL_REDUCE_MIN = 3,
    HCCL_REDUCE_RESERVED = 255
} HcclReduceOp;

/** Element types. */
typedef enum {
    HCCL_DATA_TYPE_INT8 = 0,
    HCCL_DATA_TYPE_INT16 = 1,
    HCCL_DATA_TYPE_INT32 = 2,
    HCCL_DATA_TYPE_FP16 = 3,
    HCCL_DATA_TYPE_FP32 = 4,
    HCCL_DATA_TYPE_INT64 = 5,
    HCCL_DATA_TYPE_UINT64 = 6,
    HCCL_DATA_TYPE_UINT8 = 7,
    HCCL_DATA_TYPE_UINT16 = 8,
    HCCL_DATA_TYPE_UINT32 = 9,
    HCCL_DATA_TYPE_FP64 = 10,
    HCCL_DATA_TYPE_BFP16 = 11,
    HCCL_DATA_TYPE_INT128 = 12,
    HCCL_DATA_TYPE_HIF8 = 14,
    HCCL_DATA_TYPE_FP8E4M3 = 15,
    HCCL_DATA_TYPE_FP8E5M2 = 16,
    HCCL_DATA_TYPE_FP8E8M0 = 17,
    HCCL_DATA_TYPE_RESERVED = 255
} HcclDataType;

typedef enum {
    HCCL_DETERMINISTIC = 0,
    HCCL_CONFIG_RESERVED
} HcclConfig;

typedef union HcclConfigValueDef {
    int32_t value;
} HcclConfigValue;

#define HCCL_ROOT_INFO_BYTES 4108

/** Opaque root information, copied by the application between ranks. */
typedef struct HcclRootInfoDef {
    char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

typedef enum {
    HCCL_SEND = 0,
    HCCL_RECV = 1,
    HCCL_SEND_RECV_RESERVED
} HcclSendRecvType;

typedef struct HcclSendRecvItemDef {
    HcclSendRecvType sendRecvType;
    void *buf;
    uint64_t count;
    HcclDataType dataType;
    uint32_t remoteRank;
} HcclSendRecvItem;

/** Versioned communicator configuration; initialise with HcclCommConfigInit(). */
typedef struct HcclCommConfigDef {
    char reserved[HCCL_COMM_CONFIG_INFO_BYTES]; /* size, magic word, version */
    uint32_t hcclBufferSize;                    /* MB */
    uint32_t hcclDeterministic;
    char hcclCommName[COMM_NAME_MAX_LENGTH];
    char hcclUdi[UDI_MAX_LENGTH];
    uint32_t hcclOpExpansionMode;
    uint32_t hcclRdmaTrafficClass;
    uint32_t hcclRdmaServiceLevel;
    uint32_t hcclWorldRankID;
    uint64_t hcclJobID;
    uint8_t aclGraphZeroCopyEnable;
    int32_t hcclExecTimeOut;
    char hcclAlgo[HCCL_COMM_ALGO_MAX_LENGTH];
    char hcclRetryEnable[HCCL_COMM_RETRY_ENABLE_MAX_LENGTH];
    char hcclRetryParams[HCCL_COMM_RETRY_PARAMS_MAX_LENGTH];
    char hcclBufferName[HCCL_COMM_BUFFER_NAME_MAX_LENGTH];
    uint32_t hcclQos;
    uint64_t hcclSymWinMaxMemSizePerRank;
} HcclCommConfig;

/** HcclGetCommConfigCapability() > value: that HcclCommConfig field is accepted. */
typedef enum {
    HCCL_COMM_CONFIG_BUFFER_SIZE = 0,
    HCCL_COMM_CONFIG_DETERMINISTIC = 1,
    HCCL_COMM_CONFIG_COMM_NAME = 2,
    HCCL_COMM_CONFIG_OP_EXPANSION_MODE = 3,
    HCCL_COMM_CONFIG_SUPPORT_INIT_BY_ENV = 4,
    HCCL_COMM_CONFIG_WORLD_RANKID = 5,
    HCCL_COMM_CONFIG_JOBID = 6,
    HCCL_COMM_CONFIG_ACLGRAPH_ZEROCOPY_ENABLE = 7,
    HCCL_COMM_CONFIG_EXEC_TIMEOUT = 8,
    HCCL_COMM_CONFIG_ALGO = 9,
    HCCL_COMM_CONFIG_RETRY = 10,
    HCCL_COMM_CONFIG_BUFFER_NAME = 11,
    HCCL_COMM_CONFIG_RESERVED
} HcclCommConfigCapability;

/** Layout of HcclCommConfig.reserved. */
typedef struct HcclCommConfigInfoDef {
    size_t size;
    uint32_t magicWord;
    uint32_t version;
    uint64_t reserved;
} HcclCommConfigInfo;

static inline void HcclCommConfigInit(HcclCommConfig *config)
{
    HcclCommConfigInfo *info = (HcclCommConfigInfo *)(void *)config;
    size_t i;
    if (config == NULL) {
        return;
    }
    info->size = sizeof(HcclCommConfig);
    info->magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
    info->version = HCCL_COMM_CONFIG_VERSION;
    info->reserved = 0;
    config->hcclBufferSize = HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET;
    config->hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
    for (i = 0; i < COMM_NAME_MAX_LENGTH; i++) config->hcclCommName[i] = '\0';
    for (i = 0; i < UDI_MAX_LENGTH; i++) config->hcclUdi[i] = '\0';
    config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
    config->hcclRdmaTrafficClass = HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET;
    config->hcclRdmaServiceLevel = HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET;
    config->hcclWorldRankID = HCCL_COMM_WORLD_RANK_ID_CONFIG_NOT_SET;
    config->hcclJobID = HCCL_COMM_JOB_ID_CONFIG_NOT_SET;
    config->aclGraphZeroCopyEnable = 0;
    config->hcclExecTimeOut = HCCL_COMM_EXEC_TIMEOUT_CONFIG_NOT_SET;
    for (i = 0; i < HCCL_COMM_ALGO_MAX_LENGTH; i++) config->hcclAlgo[i] = '\0';
    for (i = 0; i < HCCL_COMM_RETRY_ENABLE_MAX_LENGTH; i++) config->hcclRetryEnable[i] = '\0';
    for (i = 0; i < HCCL_COMM_RETRY_PARAMS_MAX_LENGTH; i++) config->hcclRetryParams[i] = '\0';
    for (i = 0; i < HCCL_COMM_BUFFER_NAME_MAX_LENGTH; i++) config->hcclBufferName[i] = '\0';
    config->hcclQos = HCCL_COMM_QOS_CONFIG_NOT_SET;
    config->hcclSymWinMaxMemSizePerRank = HCCL_COMM_SYM_WIN_SIZE_CONFIG_NOT_SET;
}

#ifdef __cplusplus
}
#endif

#endif /* HCCL_TYPES_H_ */
