/*
 * param.c - reading tunables from the environment (see param.h, docs/env.md).
 */
#include "util/param.h"

#include "util/log.h"

#include <errno.h>
#include <stdlib.h>

/* 1 with *out the value of env when it is set and an integer; 0 when it is unset or
 * empty; -1 when it is not an integer (*text: the value). */
static int read_int(const char *env, int64_t *out, const char **text)
{
    const char *s = getenv(env);
    if (!s || !*s) return 0;
    *text = s;
    char *end = NULL;
    errno = 0;
    /* decimal (a leading 0 is not octal), or hexadecimal with 0x */
    const char *digits = s + (*s == '-' || *s == '+');
    int hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    long long v = strtoll(s, &end, hex ? 16 : 10);
    if (errno != 0 || end == s || *end != 0) return -1;
    HCCL_INFO(INIT, "%s set to %lld", env, v);
    *out = v;
    return 1;
}

int64_t hccl_param_read_int(const char *env, int64_t dflt)
{
    int64_t v = dflt;
    const char *s = NULL;
    int got = read_int(env, &v, &s);
    if (got < 0) HCCL_WARN(INIT, "%s=\"%s\" is not an integer; using the default %lld", env, s, (long long)dflt);
    return got > 0 ? v : dflt;
}

int64_t hccl_param_read_int_in(const char *env, int64_t dflt, int64_t lo, int64_t hi, hccl_param_outside outside)
{
    int64_t v = dflt;
    const char *s = NULL;
    int got = read_int(env, &v, &s);
    if (got == 0) return dflt; /* unset: the default, even one outside (a "none" value) */
    if (got < 0) {
        if (dflt < lo || dflt > hi) /* a default that means "not set" */
            HCCL_WARN(INIT, "%s=\"%s\" is not an integer; ignored", env, s);
        else
            HCCL_WARN(INIT, "%s=\"%s\" is not an integer; using the default %lld", env, s, (long long)dflt);
        return dflt;
    }
    if (v >= lo && v <= hi) return v;
    int64_t use = outside == HCCL_PARAM_DEFAULT ? dflt : v < lo ? lo : hi;
    if (use < lo || use > hi) /* a default that means "not set" */
        HCCL_WARN(INIT, "%s=%lld is outside %lld..%lld; ignored", env, (long long)v, (long long)lo, (long long)hi);
    else
        HCCL_WARN(INIT, "%s=%lld is outside %lld..%lld; using %lld", env, (long long)v, (long long)lo, (long long)hi,
                  (long long)use);
    return use;
}

const char *hccl_param_read_str(const char *env, const char *dflt)
{
    const char *s = getenv(env);
    return (s && *s) ? s : dflt;
}
