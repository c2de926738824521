/*
 * test_acl_util.h - helpers shared by the runtime's unit tests (test_acl_*.c): a clock,
 * a sleep, and small host tasks.
 */
#ifndef TEST_ACL_UTIL_H
#define TEST_ACL_UTIL_H

#include <acl/acl.h>

#include <stdint.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- host tasks */

static inline aclError noop_task(void *arg)
{
    (void)arg;
    return ACL_SUCCESS;
}

/* Returns its argument as the task's result. */
static inline aclError fail_task(void *arg) { return (aclError)(intptr_t)arg; }

static inline aclError set_flag(void *arg)
{
    __atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
    return ACL_SUCCESS;
}

/* Sleeps arg milliseconds. */
static inline aclError sleep_task(void *arg)
{
    sleep_ms((int)(intptr_t)arg);
    return ACL_SUCCESS;
}

/* Copies *flag into seen when it runs. */
typedef struct ev_check {
    int *flag;
    int seen;
} ev_check;

static inline aclError check_flag(void *arg)
{
    ev_check *c = arg;
    c->seen = __atomic_load_n(c->flag, __ATOMIC_ACQUIRE);
    return ACL_SUCCESS;
}

#endif
