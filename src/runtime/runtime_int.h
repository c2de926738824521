/*
 * runtime_int.h - private interfaces shared by the files of the host runtime (libascendcl).
 *
 * The runtime is split by concern:
 *   map.c     a pointer-keyed hash map (open addressing, linear probing) used as the
 *             registry of live allocations, streams, events and contexts;
 *   errmsg.c  the thread-local "recent error" text behind aclGetRecentErrMsg;
 *   device.c  aclInit/aclFinalize, devices, contexts, run mode, the fork handlers;
 *   memory.c  aclrtMalloc/Free/MallocHost/FreeHost/Memcpy/Memset (+ Async);
 *   stream.c  streams: in-order work queues, each run by one worker thread or by
 *             the thread that synchronizes it;
 *   event.c   events (CUDA semantics) built on stream tasks;
 *   callback.c  aclrtSubscribeReport / aclrtLaunchCallback / aclrtProcessReport;
 *   prof.c    aclprof*: accepted and checked, nothing collected;
 *   vmm.c     virtual memory: reservations, physical memory (memfds), mappings.
 *
 * Nothing here is exported: the version script exports only acl*.
 */
#ifndef HCCL_RUNTIME_INT_H
#define HCCL_RUNTIME_INT_H

#include <acl/acl.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- map.c: uintptr_t (non-zero) -> uint64_t hash map; not locked (callers lock). */
typedef struct hccl_rt_map {
    uintptr_t *keys; /* 0 = empty slot */
    uint64_t *vals;
    size_t cap; /* power of two, or 0 before the first insert */
    size_t len;
} hccl_rt_map;

/* Inserts or replaces; ACL_ERROR_BAD_ALLOC when growing fails. */
aclError hccl_rt_map_put(hccl_rt_map *m, uintptr_t key, uint64_t val);
/* Returns 1 and sets *val (may be NULL) when key is present, else 0. */
int hccl_rt_map_get(const hccl_rt_map *m, uintptr_t key, uint64_t *val);
/* Removes key; returns 1 when it was present (and sets *val if non-NULL). */
int hccl_rt_map_del(hccl_rt_map *m, uintptr_t key, uint64_t *val);
/* Calls fn for each entry (the map must not change meanwhile). */
void hccl_rt_map_each(const hccl_rt_map *m, void (*fn)(uintptr_t key, uint64_t val, void *ctx), void *ctx);
/* Forgets every entry without freeing what they point to, and releases the storage. */
void hccl_rt_map_clear(hccl_rt_map *m);

/* ---- errmsg.c */
/* Records "fmt..." as this thread's recent error text, logs it at INFO, returns rc. */
aclError hccl_rt_error(aclError rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records the text without logging (for task errors reported by a synchronize). */
void hccl_rt_error_quiet(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For a synchronize that reports a task's failure: records "fmt...: reason" (just "fmt..."
 * when reason is "") without logging, and keeps reason as this thread's last task
 * failure (aclrtInternalLastTaskFailure). */
void hccl_rt_task_failed(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- stream.c */
/* Microseconds a waiting thread spins before sleeping (ACL_HOST_SPIN_US, default 30). */
int64_t hccl_rt_spin_us(void);
/* Spins (bounded by hccl_rt_spin_us, yielding) until *word >= target; 1 if reached. */
int hccl_rt_spin_until_ge(const uint64_t *word, uint64_t target);
/*
 * Enqueues fn(arg) on a live stream (NULL stream: runs it now and returns its result).
 * On an error return fn was not queued and arg is still the caller's.
 */
aclError hccl_rt_stream_enqueue(aclrtStream stream, aclrtHostTask fn, void *arg, const char *api);
/* Whether stream is a live stream or NULL (the default stream); a check only, for
 * calls that may have nothing to enqueue. */
int hccl_rt_stream_live(aclrtStream stream);
/* *ts = CLOCK_MONOTONIC now + ms (for pthread_cond_timedwait on a monotonic cond). */
void hccl_rt_deadline_ms(struct timespec *ts, int64_t ms);
/* A user reference on a live stream, which it keeps from being freed (NULL when
 * stream is NULL or not live); give it back with hccl_rt_stream_unref. */
void *hccl_rt_stream_ref(aclrtStream stream);
void hccl_rt_stream_unref(void *ref);
/* Where a task was queued: the stream, its id (never reused) and the task's seq. */
typedef struct hccl_rt_stream_pos {
    aclrtStream stream; /* NULL: nowhere (the NULL stream ran it at once) */
    unsigned id;
    uint64_t seq;
} hccl_rt_stream_pos;
/* hccl_rt_stream_enqueue that also says where the task went (pos may be NULL). */
aclError hccl_rt_stream_enqueue_at(aclrtStream stream, aclrtHostTask fn, void *arg, const char *api,
                                   hccl_rt_stream_pos *pos);
/* Runs the tasks of pos's stream up to pos->seq on the calling thread (waiting while
 * another thread runs one), as aclrtSynchronizeStream does; nothing when that stream is
 * gone or its task is running further down this thread's stack. */
void hccl_rt_stream_help(const hccl_rt_stream_pos *pos);
/* 1 when pos's task is not done and its stream is running a task further down this
 * thread's stack: pos's task is queued behind that one, and waiting for it here would
 * wait forever. */
int hccl_rt_stream_behind_here(const hccl_rt_stream_pos *pos);
/* Called by a task of stream (on the thread running it): the stream's error not yet
 * reported by a synchronize (the first failure of a task queued before this one since
 * the last synchronize), with its reason in reason (len bytes); ACL_SUCCESS when none,
 * or when this thread is not running a task of stream (the NULL stream, or a task run
 * outside its stream). */
aclError hccl_rt_stream_task_error(aclrtStream stream, char *reason, size_t len);
/* Makes pos's stream's worker start its queued tasks now (no deferred wake-up). */
void hccl_rt_stream_kick(const hccl_rt_stream_pos *pos);
/* Waits for the live streams created on device (skipping any whose task is running on
 * this thread), running their tasks here; first error found, not cleared (its text
 * names api). */
aclError hccl_rt_stream_sync_device(int32_t device, const char *api);
void hccl_rt_stream_atfork_prepare(void);
void hccl_rt_stream_atfork_parent(void);
void hccl_rt_stream_atfork_child(void);

/* ---- event.c */
void hccl_rt_event_atfork_prepare(void);
void hccl_rt_event_atfork_parent(void);
void hccl_rt_event_atfork_child(void);

/* ---- callback.c */
/* aclrtDestroyStream, once the stream has drained: drops its callback subscription. */
void hccl_rt_callback_stream_gone(aclrtStream stream);
void hccl_rt_callback_atfork_prepare(void);
void hccl_rt_callback_atfork_parent(void);
void hccl_rt_callback_atfork_child(void);

/* ---- memory.c */
void hccl_rt_memory_atfork_prepare(void);
void hccl_rt_memory_atfork_parent(void);
void hccl_rt_memory_atfork_child(void);

/* ---- device.c */
/* Number of host devices, re-read from the environment at each call. */
uint32_t hccl_rt_device_count(void);
/* The calling thread's device id, or -1 when it never set one. */
int32_t hccl_rt_device_current(void);
/* Binds the calling thread to a device id (used by stream workers: a task sees its
 * stream creator's device through aclrtGetDevice). */
void hccl_rt_device_bind(int32_t device);
/* A synchronizing thread that runs a stream's tasks itself binds the stream's device for
 * the task (enter) and then gets its own binding back (leave). */
typedef struct hccl_rt_binding {
    int32_t device;
    void *ctx;
} hccl_rt_binding;
void hccl_rt_device_enter(int32_t device, hccl_rt_binding *saved);
void hccl_rt_device_leave(const hccl_rt_binding *saved);

#endif
