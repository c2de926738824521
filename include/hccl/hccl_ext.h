/*
 * hccl_ext.h - this project's extensions to the HCCL interface (not in CANN).
 *
 * Included by hccl.h. Everything here is additive: a program that uses only CANN's
 * interface never needs it.
 */
#ifndef HCCL_EXT_H_
#define HCCL_EXT_H_

#include <hccl/hccl_types.h>
#include <acl/acl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCCL_EXT_GATHER 1
#define HCCL_EXT_INIT_FROM_ENV 1

/*
 * Gather: every rank sends sendCount elements; root receives them in rank order in
 * recvBuf (nranks * sendCount elements). recvBuf is ignored on other ranks.
 */
extern HcclResult HcclGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType,
                             uint32_t root, HcclComm comm, aclrtStream stream);

/*
 * Create a communicator from a launcher's environment (see docs/launchers.md):
 *   rank/size from RANK/WORLD_SIZE (torchrun, hcclrun), OMPI_COMM_WORLD_RANK/
 *   OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, or SLURM_PROCID/SLURM_NTASKS (first found);
 *   the root from HCCL_ROOT_ADDR/HCCL_ROOT_PORT, else MASTER_ADDR and MASTER_PORT + 1.
 * Rank 0 hosts the root. config may be NULL.
 */
extern HcclResult HcclCommInitFromEnv(const HcclCommConfig *config, HcclComm *comm);

#define HCCL_EXT_FLIGHT_RECORDER 1

/*
 * Write this rank's flight recorder (the last HCCL_FLIGHT_RECORDER_SIZE operations of
 * the communicator: call, sequence number, state, times, error) as JSON to path, or,
 * with path NULL, to HCCL_FLIGHT_RECORDER_DIR (default /tmp) under a name made of
 * the communicator name, rank and pid. A failing operation writes one by itself.
 * HCCL_E_OPEN_FILE_FAILURE: it could not be written; HCCL_E_PARA: path is "";
 * HCCL_E_NOT_SUPPORT: the recorder
 * is off (HCCL_FLIGHT_RECORDER_SIZE=0), and no file is written, by this call or by a
 * failing operation. See docs/debugging.md and tools/hccl_fr_report.py.
 */
extern HcclResult HcclCommDumpFlightRecorder(HcclComm comm, const char *path);

#define HCCL_EXT_LAST_ERROR_MESSAGE 1

/*
 * The text of the calling thread's most recent warning from this library (what
 * HCCL_DEBUG=WARN prints, without the line's prefix), whether it was printed or not:
 * after a failed call on this thread, its reason, e.g. which ranks never arrived at a
 * communicator's creation. "" if none; valid until the thread's next warning.
 * An operation on a stream logs its warning on the thread that runs it (the stream's
 * worker, or a thread synchronizing the stream): after a synchronize on this thread
 * (aclrtSynchronizeStream, aclrtSynchronizeStreamWithTimeout, aclrtSynchronizeDevice)
 * reported a failed operation, this returns that operation's warning text instead,
 * until this thread logs a warning of its own (and that synchronize's
 * aclGetRecentErrMsg() ends with the same text). Valid until this thread's next
 * warning or reported failure.
 */
extern const char *HcclGetLastErrorMessage(void);

#define HCCL_EXT_INTERRUPT_CHECK 1

/*
 * For language bindings (the Python package's Ctrl-C): check is called by a thread
 * that waits in an operation once that operation has waited 100 ms without progress,
 * then at most every 100 ms, never while operations move. When it returns nonzero the
 * operation fails with HCCL_E_INTERNAL ("interrupted by the application") and so does
 * the communicator, as after a timeout: its peers fail naming this rank. Communicator
 * creation (HcclCommInitRootInfo(Config), HcclCommInitClusterInfo(Config),
 * HcclCommInitFromEnv, HcclCreateSubCommConfig) calls it the same way while it waits
 * for its root, the root's answer, the other ranks' connections or the setup's
 * exchanges: when it returns nonzero the call fails with HCCL_E_INTERNAL
 * ("communicator creation interrupted by the application"), having freed what it
 * made, and the other ranks fail at once naming this rank where they can be told (a
 * rank that joined its root's group or is connecting the mesh). HcclCommInitAll is not
 * interrupted by the check of its calling thread (its ranks run on library threads,
 * where the check is called too). Process-wide;
 * NULL removes it. check runs on library threads too (a stream's worker): it must be
 * thread-safe and decide for itself which threads it interrupts.
 */
extern HcclResult HcclSetInterruptCheck(int (*check)(void));

#define HCCL_EXT_EXEC_TIMEOUT 1

/*
 * The execution timeout the communicator's operations run with, in whole seconds (0:
 * they wait forever): its HcclCommConfig.hcclExecTimeOut where one was given (a
 * sub-communicator's: its parent's), else HCCL_EXEC_TIMEOUT as the library read it.
 * For error messages that quote it. HCCL_E_PTR: seconds is NULL.
 */
extern HcclResult HcclCommGetExecTimeout(HcclComm comm, uint64_t *seconds);

#define HCCL_EXT_CONNECT_TIMEOUT 1

/*
 * The seconds communicator creation (HcclCommInitRootInfo(Config),
 * HcclCommInitClusterInfo(Config), HcclCommInitFromEnv, HcclCreateSubCommConfig) waits
 * for the other ranks: HCCL_CONNECT_TIMEOUT as the library read it (once per process;
 * 120 where it is unset or not a positive number). For error messages that quote it.
 * HCCL_E_PTR: seconds is NULL.
 */
extern HcclResult HcclGetConnectTimeout(uint64_t *seconds);

#define HCCL_EXT_FLIGHT_RECORDER_SIZE 1

/*
 * How many operations the communicator's flight recorder keeps: HCCL_FLIGHT_RECORDER_SIZE
 * as the library read it, rounded up to a power of two. 0: the recorder is off
 * (HCCL_FLIGHT_RECORDER_SIZE=0, or no memory for it when the communicator was made),
 * and HcclCommDumpFlightRecorder writes nothing and returns HCCL_E_NOT_SUPPORT.
 * HCCL_E_PTR: ops is NULL.
 */
extern HcclResult HcclCommGetFlightRecorderSize(HcclComm comm, uint32_t *ops);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_EXT_H_ */
