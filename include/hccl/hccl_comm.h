/*
 * hccl_comm.h - communicator management: creation, queries, destruction.
 */
#ifndef HCCL_COMM_H_
#define HCCL_COMM_H_

#include <hccl/hccl_types.h>
#include <acl/acl.h>

#ifdef __cplusplus
extern "C" {
#endif

extern HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
extern HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                       HcclComm *comm);
extern HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                             const HcclCommConfig *config, HcclComm *comm);
/* clusterInfo is the path of a rank table JSON file. */
extern HcclResult HcclCommInitClusterInfo(const char *clusterInfo, uint32_t rank, HcclComm *comm);
extern HcclResult HcclCommInitClusterInfoConfig(const char *clusterInfo, uint32_t rank,
                                                HcclCommConfig *config, HcclComm *comm);
/* One process, ndev ranks (one per device id in devices). */
extern HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms);
extern HcclResult HcclCreateSubCommConfig(HcclComm *comm, uint32_t rankNum, uint32_t *rankIds,
                                          uint64_t subCommId, uint32_t subCommRankId, HcclCommConfig *config,
                                          HcclComm *subComm);
extern HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
extern HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
extern HcclResult HcclGetCommName(HcclComm comm, char *commName);
extern HcclResult HcclCommGetHandleWithName(const char *commName, HcclComm *comm);
extern HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError);
extern HcclResult HcclCommDestroy(HcclComm comm);
extern HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue);
extern HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue *configValue);
extern HcclResult HcclGroupStart(void);
extern HcclResult HcclGroupEnd(void);
extern HcclResult HcclCommSuspend(HcclComm comm);
extern HcclResult HcclCommResume(HcclComm comm);
extern const char *HcclGetErrorString(HcclResult code);
/* HCCL_COMM_CONFIG_RESERVED: every HcclCommConfig field up to HCCL_COMM_CONFIG_VERSION
 * is accepted. Honoured: hcclBufferSize, hcclDeterministic, hcclCommName,
 * hcclExecTimeOut, hcclAlgo (and the environment gives the defaults); the others have
 * no effect on host ranks. */
extern uint32_t HcclGetCommConfigCapability(void);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_COMM_H_ */
