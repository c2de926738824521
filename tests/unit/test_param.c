/*
 * test_param.c - util/param.h: integers from the environment, and the range-checked
 * form: unset gives the default (even one outside the range), a value inside is
 * kept, one outside is clamped or replaced by the default, text is the default.
 */
#include "util/param.h"
#include "util/log.h"
#include "tinytest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define V "HCCL_TEST_PARAM_VALUE"

static int64_t in(const char *val, int64_t dflt, int64_t lo, int64_t hi, hccl_param_outside how)
{
    if (val) setenv(V, val, 1);
    else unsetenv(V);
    return hccl_param_read_int_in(V, dflt, lo, hi, how);
}

HCCL_PARAM_INT_IN(cached_test, V, 5, 0, 10, HCCL_PARAM_CLAMP)

int main(void)
{
    setenv("HCCL_DEBUG", "NONE", 1); /* WARNs are still recorded for hccl_log_last_warn */
    TT_ASSERT_EQ(in(NULL, -1, 1, 65535, HCCL_PARAM_DEFAULT), -1);
    TT_ASSERT_EQ(in("", 7, 1, 9, HCCL_PARAM_CLAMP), 7);
    TT_ASSERT_EQ(in("5", 7, 1, 9, HCCL_PARAM_CLAMP), 5);
    TT_ASSERT_EQ(in("1", 7, 1, 9, HCCL_PARAM_CLAMP), 1);
    TT_ASSERT_EQ(in("9", 7, 1, 9, HCCL_PARAM_CLAMP), 9);
    TT_ASSERT_EQ(in("0x10", 7, 1, 99, HCCL_PARAM_CLAMP), 16);
    TT_ASSERT_EQ(in("010", 7, 1, 99, HCCL_PARAM_CLAMP), 10); /* decimal, not octal */
    TT_ASSERT_EQ(in("08", 7, 1, 99, HCCL_PARAM_CLAMP), 8);
    TT_ASSERT_EQ(in("-1", 7, 0, 1000000, HCCL_PARAM_CLAMP), 0);
    TT_ASSERT_EQ(in("99", 7, 1, 8, HCCL_PARAM_CLAMP), 8);
    TT_ASSERT_EQ(in("-5", 1836, 0, INT64_MAX, HCCL_PARAM_DEFAULT), 1836);
    TT_ASSERT_EQ(in("70000", 60000, 1, 65535, HCCL_PARAM_DEFAULT), 60000);
    TT_ASSERT_EQ(in("9223372036854775807", 3, 0, INT64_MAX, HCCL_PARAM_DEFAULT), INT64_MAX);
    TT_ASSERT_EQ(in("99999999999999999999", 3, 0, 10, HCCL_PARAM_CLAMP), 3); /* overflows: not an integer */
    TT_ASSERT_EQ(in("12abc", 3, 0, 100, HCCL_PARAM_CLAMP), 3);
    /* Text where the default means "not set" (outside the range): one WARN naming the
     * text, not a second one about a default the user never wrote. */
    TT_ASSERT_EQ(in("abc", -1, 1, 65535, HCCL_PARAM_DEFAULT), -1);
    const char *w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "\"abc\" is not an integer; ignored") != NULL, "last WARN: %s", w);
    TT_ASSERT_EQ(in("5x", 7, 0, 10, HCCL_PARAM_CLAMP), 7);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "\"5x\" is not an integer; using the default 7") != NULL, "last WARN: %s", w);
    /* The cached form reads once. */
    setenv(V, "42", 1);
    TT_ASSERT_EQ(hccl_param_cached_test(), 10);
    setenv(V, "3", 1);
    TT_ASSERT_EQ(hccl_param_cached_test(), 10);
    return tt_report("test_param");
}
