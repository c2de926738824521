/*
 * errmsg.c - the thread-local text of the calling thread's most recent ACL error
 * (aclGetRecentErrMsg). Each failing entry point records one sentence that names the
 * call and the offending value, e.g. "aclrtMemcpy: count 64 exceeds destMax 32".
 * The text stays until the next error of the same thread; successes do not clear it.
 *
 * A synchronize that reports a stream task's failure (aclrtSynchronizeStream[WithTimeout],
 * aclrtSynchronizeDevice, aclrtSynchronizeEvent) appends the reason the task gave (aclrtInternalSetTaskFailure:
 * an HCCL operation's WARN text, logged on whichever thread ran it) and keeps that
 * reason for libhccl's HcclGetLastErrorMessage (aclrtInternalLastTaskFailure).
 */
#include "runtime/runtime_int.h"

#include "runtime/stream_task.h"

#include "util/log.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static __thread char recent_msg[1536];
static __thread char task_reason[1024]; /* the reason of the last task failure a synchronize reported here */
static __thread uint64_t task_reason_ns;  /* when (hccl_now_ns()), 0: none yet */

static void set_msg(const char *fmt, va_list ap)
{
    vsnprintf(recent_msg, sizeof recent_msg, fmt, ap);
}

aclError hccl_rt_error(aclError rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
    HCCL_INFO(INIT, "%s (error %d)", recent_msg, rc);
    return rc;
}

void hccl_rt_error_quiet(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
}

void hccl_rt_task_failed(const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
    if (reason[0]) {
        size_t l = strlen(recent_msg);
        snprintf(recent_msg + l, sizeof recent_msg - l, ": %s", reason);
    }
    snprintf(task_reason, sizeof task_reason, "%s", reason);
    task_reason_ns = hccl_now_ns();
}

const char *aclrtInternalLastTaskFailure(uint64_t *at_ns)
{
    if (at_ns) *at_ns = task_reason_ns;
    return task_reason_ns ? task_reason : NULL;
}

const char *aclGetRecentErrMsg(void) { return recent_msg; }
