/*
 * log.h - logging and error propagation used by every module of libhccl.
 *
 * HCCL_DEBUG=NONE|WARN|INFO|TRACE (default WARN) and HCCL_DEBUG_SUBSYS=INIT,COLL,NET,BOOT,
 * ALL (comma list, ^ prefix excludes) select what is printed to stderr, or to
 * HCCL_DEBUG_FILE (a %h in it becomes the host name, %p the pid, %r the rank of the
 * process's first communicator: see log.c). Library code never calls printf.
 *
 * CHECK(call) propagates a non-success HcclResult and logs one TRACE-level line per
 * frame, so a failure prints its own backtrace with HCCL_DEBUG=TRACE.
 */
#ifndef HCCL_UTIL_LOG_H
#define HCCL_UTIL_LOG_H

#include <hccl/hccl_types.h>
#include <stdint.h>

typedef enum { HCCL_LOG_NONE = 0, HCCL_LOG_WARN = 1, HCCL_LOG_INFO = 2, HCCL_LOG_TRACE = 3 } hccl_log_level;

enum {
    HCCL_SUBSYS_INIT = 1u << 0,
    HCCL_SUBSYS_COLL = 1u << 1,
    HCCL_SUBSYS_NET = 1u << 2,
    HCCL_SUBSYS_BOOT = 1u << 3,
    HCCL_SUBSYS_SHM = 1u << 4,
    HCCL_SUBSYS_ALL = 0xffffffffu
};

void hccl_log(hccl_log_level level, unsigned subsys, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int hccl_log_enabled(hccl_log_level level, unsigned subsys);
/* The rank for %r in HCCL_DEBUG_FILE: the first call wins (called as each communicator
 * is allocated, so it is the rank of the process's first one). */
void hccl_log_set_rank(uint32_t rank);
/* The calling thread's most recent WARN message (without the line's prefix), whether
 * HCCL_DEBUG printed it or not; "" if none. */
const char *hccl_log_last_warn(void);
/* How many WARN messages the calling thread has logged: whether hccl_log_last_warn is
 * the reason of a call that began when it was another value. */
uint64_t hccl_log_warn_seq(void);
/* The calling thread's last WARN message if it was logged at or after t (hccl_ticks),
 * else NULL: whether an operation that began at t logged one, with nothing to read
 * before it (no cost on the success path). */
const char *hccl_log_warn_since(uint64_t t);
/* When the calling thread logged its last WARN message (hccl_now_ns()), 0: none. */
uint64_t hccl_log_last_warn_ns(void);

#define HCCL_WARN(sub, ...) hccl_log(HCCL_LOG_WARN, HCCL_SUBSYS_##sub, __FILE__, __LINE__, __VA_ARGS__)
/* The most detailed level that may print (HCCL_LOG_TRACE until the settings are
 * read): INFO and TRACE lines cost one load when they are off, their arguments are
 * not evaluated. */
extern int hccl_log_gate;
#define HCCL_LOG_AT(lvl, sub, ...)                                                                      \
    do {                                                                                                \
        if ((int)(lvl) <= __atomic_load_n(&hccl_log_gate, __ATOMIC_RELAXED))                            \
            hccl_log((lvl), HCCL_SUBSYS_##sub, __FILE__, __LINE__, __VA_ARGS__);                         \
    } while (0)
#define HCCL_INFO(sub, ...) HCCL_LOG_AT(HCCL_LOG_INFO, sub, __VA_ARGS__)
#define HCCL_TRACE(sub, ...) HCCL_LOG_AT(HCCL_LOG_TRACE, sub, __VA_ARGS__)

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        HcclResult check_res_ = (call);                                                                \
        if (check_res_ != HCCL_SUCCESS) {                                                              \
            hccl_log(HCCL_LOG_TRACE, HCCL_SUBSYS_ALL, __FILE__, __LINE__, "%s -> %d", #call, (int)check_res_); \
            return check_res_;                                                                         \
        }                                                                                              \
    } while (0)

/* Like CHECK but jumps to a cleanup label with `res` set. */
#define CHECK_GOTO(call, res, label)                                                                   \
    do {                                                                                               \
        (res) = (call);                                                                                \
        if ((res) != HCCL_SUCCESS) {                                                                   \
            hccl_log(HCCL_LOG_TRACE, HCCL_SUBSYS_ALL, __FILE__, __LINE__, "%s -> %d", #call, (int)(res)); \
            goto label;                                                                                \
        }                                                                                              \
    } while (0)

#endif
