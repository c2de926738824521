/*
 * param.h - tunables read once from the environment and cached.
 *
 * Declare each integer tunable once with HCCL_PARAM_INT / HCCL_PARAM_INT_IN in the
 * module that owns it (strings: hccl_param_read_str); every one is listed in
 * docs/env.md (the test tools_env_doc, tests/tools/check_env_doc.py, fails on a
 * variable read but not listed there).
 *
 *   HCCL_PARAM_INT(exec_timeout, "HCCL_EXEC_TIMEOUT", 1836)
 *   ... hccl_param_exec_timeout() returns the cached value.
 *   HCCL_PARAM_INT_IN(socket_nconn, "HCCL_SOCKET_NCONN", 1, 1, 8, HCCL_PARAM_CLAMP)
 *   ... the same, with values outside 1..8 reported and clamped.
 */
#ifndef HCCL_UTIL_PARAM_H
#define HCCL_UTIL_PARAM_H

#include <stdint.h>

int64_t hccl_param_read_int(const char *env, int64_t dflt);
/* What a value outside [lo, hi] becomes (with a WARN naming the variable). */
typedef enum { HCCL_PARAM_CLAMP, HCCL_PARAM_DEFAULT } hccl_param_outside;
int64_t hccl_param_read_int_in(const char *env, int64_t dflt, int64_t lo, int64_t hi, hccl_param_outside outside);
/* Returns getenv(env) when set and non-empty, else dflt (never freed). */
const char *hccl_param_read_str(const char *env, const char *dflt);

#define HCCL_PARAM_CACHED_(name, read)                                               \
    int64_t hccl_param_##name(void)                                                  \
    {                                                                                \
        static int64_t cached_;                                                      \
        static int done_;                                                            \
        if (!__atomic_load_n(&done_, __ATOMIC_ACQUIRE)) {                            \
            /* several threads may race here: each stores the same value */         \
            __atomic_store_n(&cached_, read, __ATOMIC_RELAXED);                      \
            __atomic_store_n(&done_, 1, __ATOMIC_RELEASE);                           \
        }                                                                            \
        return __atomic_load_n(&cached_, __ATOMIC_RELAXED);                          \
    }

#define HCCL_PARAM_INT(name, env, dflt) HCCL_PARAM_CACHED_(name, hccl_param_read_int(env, dflt))
/* An integer in [lo, hi]; outside it HCCL_PARAM_CLAMP or HCCL_PARAM_DEFAULT. */
#define HCCL_PARAM_INT_IN(name, env, dflt, lo, hi, outside) \
    HCCL_PARAM_CACHED_(name, hccl_param_read_int_in(env, dflt, lo, hi, outside))

#endif
