/*
 * stream_task.h - for libhccl (exported by libascendcl, not part of the public API):
 * whether the calling thread is inside a stream's task.
 */
#ifndef HCCL_RUNTIME_STREAM_TASK_H
#define HCCL_RUNTIME_STREAM_TASK_H

/* 1 when this thread is running a task of a stream (as its worker, or as a thread
 * that synchronizes the stream and runs its tasks itself): the tasks queued behind it
 * on that stream cannot run before it returns, so it must not wait for them. */
int aclrtInternalInStreamTask(void);

#endif
