/*
 * stream_task.h - for libhccl (exported by libascendcl, not part of the public API):
 * whether the calling thread is inside a stream's task, and the reason of a task's
 * failure, which crosses from the thread that ran the task to the one that synchronizes.
 */
#ifndef HCCL_RUNTIME_STREAM_TASK_H
#define HCCL_RUNTIME_STREAM_TASK_H

#include <stdint.h>

/* 1 when this thread is running a task of a stream (as its worker, or as a thread
 * that synchronizes the stream and runs its tasks itself): the tasks queued behind it
 * on that stream cannot run before it returns, so it must not wait for them. */
int aclrtInternalInStreamTask(void);

/* Called by a task that is about to fail (return non-zero), on the thread running it:
 * reason (copied, at most 1023 bytes kept) says why. The synchronize that reports the
 * failure appends it to its aclGetRecentErrMsg text and keeps it for
 * aclrtInternalLastTaskFailure, on the synchronizing thread. The stream keeps the
 * reason of its first failure since the last synchronize, as it keeps its error; a
 * failing task that gives none leaves the reason "". No effect outside a task. */
void aclrtInternalSetTaskFailure(const char *reason);

/* The reason of the last task failure that a synchronize reported on the calling thread
 * (aclrtSynchronizeStream[WithTimeout], aclrtSynchronizeDevice, aclrtSynchronizeEvent), with the time it did
 * in *at_ns (hccl_now_ns(), CLOCK_MONOTONIC): "" when that task gave none; NULL (and
 * 0) when no synchronize on this thread has reported a failure. */
const char *aclrtInternalLastTaskFailure(uint64_t *at_ns);

#endif
