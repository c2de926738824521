/*
 * log.c - leveled, per-subsystem logging to stderr or HCCL_DEBUG_FILE.
 *
 * Line format: "host:pid:tid LEVEL SUBSYS file:line message". Configuration is read
 * once, on first use.
 *
 * HCCL_DEBUG_FILE: %h becomes the host name, %p the pid, %r the rank of this process,
 * %% a percent sign. The log is one per process, and a process may hold several
 * communicators (or several ranks, as threads), so %r is defined as the rank of the
 * first communicator the process creates (hccl_log_set_rank, called as it is
 * allocated: the rank argument of HcclCommInitRootInfo / HcclCommInitClusterInfo, the
 * launcher's rank for HcclCommInitFromEnv; later calls change nothing). With %r the
 * file opens at that moment; lines logged before it are held in memory (at most
 * LOG_HOLD_MAX bytes, later ones are counted and reported) and written first. A
 * process that ends (exit) without ever creating a communicator writes its held lines
 * to the name with %r replaced by "pid<PID>". A forked child resolves names with %p
 * or %r again for itself (the parent's held lines stay the parent's).
 */
#include "util/log.h"
#include "util/ticks.h"
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOG_HOLD_MAX 65536u

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = HCCL_LOG_WARN;
int hccl_log_gate = HCCL_LOG_TRACE; /* log_level once log_init ran */
static unsigned log_subsys = HCCL_SUBSYS_ALL;
static FILE *log_file;
static char log_host[64];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* HCCL_DEBUG_FILE, fixed at init; the rest under log_lock. */
static char log_pattern[4096];
static int log_wants_rank;   /* the pattern has %r */
static int log_per_process;  /* the pattern has %p or %r */
static long log_rank = -1;   /* hccl_log_set_rank, -1 = not yet */
static int log_forked;       /* a forked child that has not resolved its name yet */
static char *log_held;       /* lines waiting for the rank */
static size_t log_held_len;
static unsigned long log_held_dropped;

static const struct {
    const char *name;
    unsigned bit;
} subsys_names[] = {{"INIT", HCCL_SUBSYS_INIT}, {"COLL", HCCL_SUBSYS_COLL}, {"NET", HCCL_SUBSYS_NET},
                    {"BOOT", HCCL_SUBSYS_BOOT}, {"SHM", HCCL_SUBSYS_SHM},   {"ALL", HCCL_SUBSYS_ALL}};

static unsigned parse_subsys(const char *s)
{
    unsigned mask = 0;
    int exclude = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    if (buf[0] == '^') {
        exclude = 1;
        memmove(buf, buf + 1, strlen(buf));
    }
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
            if (strcasecmp(tok, subsys_names[i].name) == 0) mask |= subsys_names[i].bit;
    }
    return exclude ? ~mask : mask;
}

/* The file name for this process; rank is the text for %r. */
static void expand(const char *rank, char *path, size_t len)
{
    size_t o = 0;
    for (const char *p = log_pattern; *p && o + 64 < len; p++) {
        if (p[0] == '%' && p[1] == 'h') {
            o += (size_t)snprintf(path + o, len - o, "%s", log_host);
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(path + o, len - o, "%d", (int)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == 'r') {
            o += (size_t)snprintf(path + o, len - o, "%s", rank ? rank : "");
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            path[o++] = '%';
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = 0;
}

static void format_line(char *line, size_t len, hccl_log_level level, unsigned subsys, const char *file, int lineno,
                        const char *msg);

static int log_open_failed; /* this process said that its file cannot be opened */

/* log_lock held (or in log_init). A file that cannot be opened is said once per
 * process, on stderr, where the lines go instead. */
static void open_log_file(const char *rank)
{
    char path[4096];
    expand(rank, path, sizeof path);
    log_file = fopen(path, "a");
    if (log_file) {
        setvbuf(log_file, NULL, _IOLBF, 0);
        return;
    }
    int err = errno;
    if (log_open_failed || log_level == HCCL_LOG_NONE) return;
    log_open_failed = 1;
    char msg[4400], line[4600];
    snprintf(msg, sizeof msg, "HCCL_DEBUG_FILE: cannot open %s: %s; logging to stderr", path, strerror(err));
    format_line(line, sizeof line, HCCL_LOG_WARN, HCCL_SUBSYS_ALL, __FILE__, __LINE__, msg);
    fputs(line, stderr);
}

static const char *subsys_name(unsigned subsys)
{
    for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
        if (subsys == subsys_names[i].bit) return subsys_names[i].name;
    return "ALL";
}

static const char *const level_names[] = {"NONE", "WARN", "INFO", "TRACE"};

/* One whole line, newline included. */
static void format_line(char *line, size_t len, hccl_log_level level, unsigned subsys, const char *file, int lineno,
                        const char *msg)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int k = snprintf(line, len, "%s:%d:%ld HCCL %s %s %s:%d %s\n", log_host, (int)getpid(),
                     (long)syscall(SYS_gettid), level_names[level], subsys_name(subsys), base, lineno, msg);
    if (k < 0 || (size_t)k >= len) {
        line[len - 2] = '\n';
        line[len - 1] = 0;
    }
}

/* log_lock held. Lines before the rank is known wait here. */
static void hold(const char *line)
{
    size_t n = strlen(line);
    if (log_held_len + n > LOG_HOLD_MAX) {
        log_held_dropped++;
        return;
    }
    char *p = realloc(log_held, log_held_len + n + 1);
    if (!p) {
        log_held_dropped++;
        return;
    }
    memcpy(p + log_held_len, line, n + 1);
    log_held = p;
    log_held_len += n;
}

/* log_lock held: write the held lines where lines now go, and forget them. */
static void flush_held(void)
{
    FILE *out = log_file ? log_file : stderr;
    if (log_held_len) fputs(log_held, out);
    if (log_held_dropped) {
        char msg[200], line[512];
        snprintf(msg, sizeof msg, "%lu more lines logged before this process's rank was known (HCCL_DEBUG_FILE "
                 "has %%r) were dropped: at most %u bytes are held", log_held_dropped, LOG_HOLD_MAX);
        format_line(line, sizeof line, HCCL_LOG_WARN, HCCL_SUBSYS_ALL, __FILE__, __LINE__, msg);
        fputs(line, out);
    }
    free(log_held);
    log_held = NULL;
    log_held_len = 0;
    log_held_dropped = 0;
}

/* log_lock held, in a forked child: the name is resolved for this process. */
static void after_fork(void)
{
    log_forked = 0;
    log_open_failed = 0; /* a process of its own, with a file name of its own */
    if (log_file) fclose(log_file); /* the parent's (line-buffered: nothing pending) */
    log_file = NULL;
    log_rank = -1;
    free(log_held);
    log_held = NULL;
    log_held_len = 0;
    log_held_dropped = 0;
    if (!log_wants_rank) open_log_file(NULL);
}

static void log_prefork(void) { pthread_mutex_lock(&log_lock); }
static void log_postfork_parent(void) { pthread_mutex_unlock(&log_lock); }
static void log_postfork_child(void)
{
    log_forked = log_per_process;
    pthread_mutex_unlock(&log_lock);
}

static void log_init(void)
{
    const char *lvl = getenv("HCCL_DEBUG");
    if (lvl && *lvl) {
        if (strcasecmp(lvl, "NONE") == 0 || strcasecmp(lvl, "ERROR") == 0) log_level = HCCL_LOG_NONE;
        else if (strcasecmp(lvl, "INFO") == 0) log_level = HCCL_LOG_INFO;
        else if (strcasecmp(lvl, "TRACE") == 0 || strcasecmp(lvl, "DEBUG") == 0) log_level = HCCL_LOG_TRACE;
        else log_level = HCCL_LOG_WARN;
    }
    __atomic_store_n(&hccl_log_gate, log_level, __ATOMIC_RELAXED);
    const char *sub = getenv("HCCL_DEBUG_SUBSYS");
    if (sub && *sub) log_subsys = parse_subsys(sub);
    if (gethostname(log_host, sizeof log_host) != 0) snprintf(log_host, sizeof log_host, "?");
    log_host[sizeof log_host - 1] = 0;
    /* Always: a child forked while another thread wrote a line would otherwise
     * inherit log_lock held, and wait forever at its first line. */
    pthread_atfork(log_prefork, log_postfork_parent, log_postfork_child);
    const char *file = getenv("HCCL_DEBUG_FILE");
    if (!file || !*file) return;
    snprintf(log_pattern, sizeof log_pattern, "%s", file);
    for (const char *p = log_pattern; *p; p++) {
        if (p[0] != '%' || !p[1]) continue;
        if (p[1] == 'r') log_wants_rank = 1;
        if (p[1] == 'r' || p[1] == 'p') log_per_process = 1;
        p++; /* "%%r" is a literal "%r" */
    }
    if (!log_wants_rank) open_log_file(NULL);
}

int hccl_log_enabled(hccl_log_level level, unsigned subsys)
{
    pthread_once(&log_once, log_init);
    return (int)level <= log_level && (subsys & log_subsys) != 0;
}

void hccl_log_set_rank(uint32_t rank)
{
    pthread_once(&log_once, log_init);
    if (!log_wants_rank) return;
    pthread_mutex_lock(&log_lock);
    if (log_forked) after_fork();
    if (log_rank < 0) {
        char text[16];
        snprintf(text, sizeof text, "%u", rank);
        log_rank = (long)rank;
        open_log_file(text);
        flush_held();
    }
    pthread_mutex_unlock(&log_lock);
}

/* The calling thread's last WARN message, printed or not (HcclGetLastErrorMessage). */
static __thread char last_warn[1024];
static __thread uint64_t warn_ticks; /* when it was logged (hccl_ticks), 0: none yet or before any */
static __thread uint64_t warn_ns;    /* when it was logged (hccl_now_ns()), 0: none yet */

uint64_t hccl_log_last_warn_ns(void) { return warn_ns; }

static __thread uint64_t warn_seq; /* WARN messages this thread logged */

const char *hccl_log_last_warn(void) { return last_warn; }

uint64_t hccl_log_warn_seq(void) { return warn_seq; }

const char *hccl_log_warn_since(uint64_t t) { return warn_ticks && warn_ticks >= t ? last_warn : NULL; }

void hccl_log(hccl_log_level level, unsigned subsys, const char *file, int line, const char *fmt, ...)
{
    int on = hccl_log_enabled(level, subsys);
    if (!on && level != HCCL_LOG_WARN) return;
    char msg[2048], text[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (level == HCCL_LOG_WARN) { /* truncated to the buffer */
        size_t l = strnlen(msg, sizeof last_warn - 1);
        memcpy(last_warn, msg, l);
        last_warn[l] = 0;
        warn_seq++;
        warn_ticks = hccl_ticks_if_started(); /* no operation began before a first timestamp */
        warn_ns = hccl_now_ns();
    }
    if (!on) return;
    format_line(text, sizeof text, level, subsys, file, line, msg);
    pthread_mutex_lock(&log_lock);
    if (log_forked) after_fork();
    if (log_file) fputs(text, log_file);
    else if (log_wants_rank && log_rank < 0) hold(text);
    else fputs(text, stderr);
    pthread_mutex_unlock(&log_lock);
}

/* At exit: a process that never learnt its rank writes what it held under its pid. */
__attribute__((destructor)) static void log_fini(void)
{
    if (!log_wants_rank) return;
    pthread_mutex_lock(&log_lock);
    if (log_forked) after_fork();
    if (log_rank < 0 && !log_file && (log_held_len || log_held_dropped)) {
        char text[32];
        snprintf(text, sizeof text, "pid%d", (int)getpid());
        open_log_file(text);
        flush_held();
        if (log_file) {
            fclose(log_file);
            log_file = NULL;
        }
    }
    pthread_mutex_unlock(&log_lock);
}
