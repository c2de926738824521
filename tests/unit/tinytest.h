/*
 * tinytest.h - the unit tests' assertion macros.
 *
 *   TT_ASSERT(cond) / TT_ASSERT_EQ(a, b) / TT_ASSERT_MSG(cond, fmt, ...)
 *   TT_ASSERT_CHILD_OK(pid): waits for a forked child, which must exit with status 0
 *   int main(void) { ...; return tt_report("test_name"); }
 *
 * A failed assertion prints file:line and the expression and counts as a failure;
 * tt_report prints "N passed, N failed" and returns the exit status.
 */
#ifndef TINYTEST_H
#define TINYTEST_H

#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>

static int tt_passed, tt_failed;

#define TT_ASSERT_MSG(cond, ...)                                              \
    do {                                                                      \
        if (cond) {                                                           \
            tt_passed++;                                                      \
        } else {                                                              \
            tt_failed++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

#define TT_ASSERT(cond) TT_ASSERT_MSG(cond, "%s", "")
#define TT_ASSERT_EQ(a, b) \
    TT_ASSERT_MSG((a) == (b), "%s = %lld, %s = %lld", #a, (long long)(a), #b, (long long)(b))

#define TT_ASSERT_CHILD_OK(pid)                                                                             \
    do {                                                                                                    \
        int st_ = 0;                                                                                        \
        TT_ASSERT((pid) > 0 && waitpid((pid), &st_, 0) == (pid));                                           \
        TT_ASSERT_MSG(WIFEXITED(st_) && WEXITSTATUS(st_) == 0, "child %s %d",                               \
                      WIFEXITED(st_) ? "exit status" : "signal", WIFEXITED(st_) ? WEXITSTATUS(st_) : WTERMSIG(st_)); \
    } while (0)

static inline int tt_report(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, tt_passed, tt_failed);
    return tt_failed ? 1 : 0;
}

#endif
