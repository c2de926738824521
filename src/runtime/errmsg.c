/*
 * errmsg.c - the thread-local text of the calling thread's most recent ACL error
 * (aclGetRecentErrMsg). Each failing entry point records one sentence that names the
 * call and the offending value, e.g. "aclrtMemcpy: count 64 exceeds destMax 32".
 * The text stays until the next error of the same thread; successes do not clear it.
 */
#include "runtime/runtime_int.h"

#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

static __thread char recent_msg[512];

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

const char *aclGetRecentErrMsg(void) { return recent_msg; }
