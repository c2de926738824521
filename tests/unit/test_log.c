/*
 * test_log.c - HCCL_DEBUG_FILE names (src/util/log.c): %h, %p, %r, %%.
 *
 * The log reads its configuration once per process, so every case runs in a child
 * that sets the environment first, logs, and exits (exit(), so that the destructor
 * writing a rank-less process's held lines runs); the parent checks the files.
 *   held      %r: lines before hccl_log_set_rank are held, then written first into
 *             the rank's file; a second rank changes nothing.
 *   fallback  %r and no rank ever: at exit the lines go to the name with "pid<PID>".
 *   fork      a child forked after the rank is known resolves %r for itself: its
 *             lines (held ones included) go to its own rank's file, not the parent's.
 *   plain     %h, %p and %%: the file opens at once, with the host name and pid.
 *   overflow  more than the held limit before the rank: the excess is counted in a
 *             WARN line, the rest kept.
 *   unwritable a name that cannot be opened (no such directory), with and without %r:
 *             one line on stderr says so and why, and the lines go to stderr.
 */
#include "util/log.h"

#include "tinytest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count(const char *text, const char *needle)
{
    int k = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++) k++;
    return k;
}

/* Runs fn in a child with HCCL_DEBUG=INFO and HCCL_DEBUG_FILE=dir/pattern; returns
 * the child's pid (after it exited). */
static pid_t in_child(const char *pattern, void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, pattern);
        setenv("HCCL_DEBUG", "INFO", 1);
        setenv("HCCL_DEBUG_FILE", path, 1);
        fn();
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    TT_ASSERT_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child for %s: status %#x", pattern, st);
    return pid;
}

static void held_case(void)
{
    HCCL_INFO(INIT, "held line one");
    HCCL_WARN(INIT, "held line two");
    hccl_log_set_rank(5);
    HCCL_INFO(INIT, "after the rank");
    hccl_log_set_rank(7);
    HCCL_INFO(INIT, "after a second rank");
}

static void fallback_case(void) { HCCL_WARN(INIT, "never had a rank"); }

static void fork_case(void)
{
    hccl_log_set_rank(1);
    HCCL_INFO(INIT, "parent line");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        HCCL_INFO(INIT, "child before its rank");
        hccl_log_set_rank(2);
        HCCL_INFO(INIT, "child after its rank");
        exit(0);
    }
    waitpid(pid, NULL, 0);
    HCCL_INFO(INIT, "parent after the fork");
}

static void plain_case(void) { HCCL_INFO(INIT, "plain line"); }

static void overflow_case(void)
{
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    for (int i = 0; i < 100; i++) HCCL_INFO(INIT, "filler %d %s", i, big);
    hccl_log_set_rank(0);
    HCCL_INFO(INIT, "last line");
}

/* The unwritable cases' stderr: dir/<name>.err. */
static const char *err_name;
static void to_err_file(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.err", dir, err_name);
    if (!freopen(path, "w", stderr)) exit(3);
    setvbuf(stderr, NULL, _IONBF, 0);
}

static void unwritable_case(void)
{
    to_err_file();
    HCCL_INFO(INIT, "first line");
    HCCL_WARN(INIT, "second line");
}

static void unwritable_rank_case(void)
{
    to_err_file();
    HCCL_INFO(INIT, "held line");
    hccl_log_set_rank(3);
    HCCL_INFO(INIT, "after the rank");
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/hccl_test_log_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[512], *text;

    /* held */
    in_child("held.%r.log", held_case);
    snprintf(path, sizeof path, "%s/held.5.log", dir);
    text = slurp(path);
    TT_ASSERT_MSG(text != NULL, "%s missing", path);
    if (text) {
        const char *a = strstr(text, "held line one"), *b = strstr(text, "held line two");
        const char *c = strstr(text, "after the rank"), *d = strstr(text, "after a second rank");
        TT_ASSERT_MSG(a && b && c && d && a < b && b < c && c < d, "lines missing or out of order:\n%s", text);
        TT_ASSERT_EQ(count(text, " HCCL "), 4);
    }
    snprintf(path, sizeof path, "%s/held.7.log", dir);
    TT_ASSERT_MSG(access(path, F_OK) != 0, "%s exists: a second rank opened another file", path);

    /* fallback */
    pid_t pid = in_child("fb.%r.log", fallback_case);
    snprintf(path, sizeof path, "%s/fb.pid%d.log", dir, (int)pid);
    text = slurp(path);
    TT_ASSERT_MSG(text && strstr(text, "never had a rank"), "%s missing or without the held line", path);

    /* fork */
    in_child("fork.%r.log", fork_case);
    snprintf(path, sizeof path, "%s/fork.1.log", dir);
    text = slurp(path);
    TT_ASSERT_MSG(text && strstr(text, "parent line") && strstr(text, "parent after the fork") &&
                      !strstr(text, "child"),
                  "%s: %s", path, text ? text : "(missing)");
    snprintf(path, sizeof path, "%s/fork.2.log", dir);
    text = slurp(path);
    TT_ASSERT_MSG(text && strstr(text, "child before its rank") && strstr(text, "child after its rank") &&
                      !strstr(text, "parent"),
                  "%s: %s", path, text ? text : "(missing)");

    /* plain */
    char host[64] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    pid = in_child("plain.%h.%p.100%%.log", plain_case);
    snprintf(path, sizeof path, "%s/plain.%s.%d.100%%.log", dir, host, (int)pid);
    text = slurp(path);
    TT_ASSERT_MSG(text && strstr(text, "plain line"), "%s missing or without its line", path);

    /* overflow */
    in_child("over.%r.log", overflow_case);
    snprintf(path, sizeof path, "%s/over.0.log", dir);
    text = slurp(path);
    TT_ASSERT_MSG(text != NULL, "%s missing", path);
    if (text) {
        int kept = count(text, "filler ");
        TT_ASSERT_MSG(kept > 30 && kept < 100, "%d filler lines kept of 100", kept);
        char want[64];
        snprintf(want, sizeof want, "%d more lines logged before", 100 - kept);
        TT_ASSERT_MSG(strstr(text, want) != NULL, "no WARN line saying \"%s\"", want);
        TT_ASSERT_MSG(strstr(text, "last line") > strstr(text, want), "the line after the rank is not last");
    }

    /* unwritable */
    err_name = "unwritable";
    in_child("missing/log.%p", unwritable_case);
    snprintf(path, sizeof path, "%s/unwritable.err", dir);
    text = slurp(path);
    TT_ASSERT_MSG(text && count(text, "HCCL_DEBUG_FILE: cannot open ") == 1 && strstr(text, "/missing/log.") &&
                      strstr(text, "No such file or directory") && strstr(text, "logging to stderr") &&
                      strstr(text, "first line") && strstr(text, "second line"),
                  "stderr of a process whose HCCL_DEBUG_FILE cannot be opened:\n%s", text ? text : "(missing)");
    err_name = "unwritable_rank";
    in_child("missing/log.%r", unwritable_rank_case);
    snprintf(path, sizeof path, "%s/unwritable_rank.err", dir);
    text = slurp(path);
    TT_ASSERT_MSG(text && count(text, "HCCL_DEBUG_FILE: cannot open ") == 1 && strstr(text, "/missing/log.3") &&
                      strstr(text, "held line") && strstr(text, "after the rank"),
                  "stderr of a process whose HCCL_DEBUG_FILE (%%r) cannot be opened:\n%s",
                  text ? text : "(missing)");

    if (!getenv("KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return tt_report("test_log");
}
