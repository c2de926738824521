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

#include <pthread.h>
#include <stdint.h>

int64_t hccl_param_read_int(const char *env, int64_t dflt);
/* What a value outside [lo, hi] becomes (with a WARN naming the variable). */
typedef enum { HCCL_PARAM_CLAMP, HCCL_PARAM_DEFAULT } hccl_param_outside;
int64_t hccl_param_read_int_in(const char *env, int64_t dflt, int64_t lo, int64_t hi, hccl_param_outside outside);
/* Returns getenv(env) when set and non-empty, else dflt (never freed). */
const char *hccl_param_read_str(const char *env, const char *dflt);

/* The first call reads; threads that call at the same time wait for it (pthread_once),
 * so a bad value's WARN is said once, not by each of them. */
#define HCCL_PARAM_CACHED_(name, read)                                               \
    static int64_t hccl_param_cached_##name;                                         \
    static int hccl_param_done_##name;                                               \
    static pthread_once_t hccl_param_once_##name = PTHREAD_ONCE_INIT;                \
    static void hccl_param_init_##name(void)                                         \
    {                                                                                \
        __atomic_store_n(&hccl_param_cached_##name, read, __ATOMIC_RELAXED);         \
        __atomic_store_n(&hccl_param_done_##name, 1, __ATOMIC_RELEASE);              \
    }                                                                                \
    int64_t hccl_param_##name(void)                                                  \
    {                                                                                \
        if (!__atomic_load_n(&hccl_param_done_##name, __ATOMIC_ACQUIRE))             \
            pthread_once(&hccl_param_once_##name, hccl_param_init_##name);           \
        return __atomic_load_n(&hccl_param_cached_##name, __ATOMIC_RELAXED);         \
    }

#define HCCL_PARAM_INT(name, env, dflt) HCCL_PARAM_CACHED_(name, hccl_param_read_int(env, dflt))
/* An integer in [lo, hi]; outside it HCCL_PARAM_CLAMP or HCCL_PARAM_DEFAULT. */
#define HCCL_PARAM_INT_IN(name, env, dflt, lo, hi, outside) \
    HCCL_PARAM_CACHED_(name, hccl_param_read_int_in(env, dflt, lo, hi, outside))

#endif
