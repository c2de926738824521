/*
 * log.c - leveled, per-subsystem logging to stderr or HCCL_DEBUG_FILE.
 *
 * Line format: "host:pid:tid LEVEL SUBSYS file:line message". Configuration is read
 * once, on first use.
 */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = HCCL_LOG_WARN;
static unsigned log_subsys = HCCL_SUBSYS_ALL;
static FILE *log_file;
static char log_host[64];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

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

static void open_log_file(const char *pattern)
{
    char path[4096];
    size_t o = 0;
    for (const char *p = pattern; *p && o + 64 < sizeof path; p++) {
        if (p[0] == '%' && p[1] == 'h') {
            o += (size_t)snprintf(path + o, sizeof path - o, "%s", log_host);
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = 0;
    log_file = fopen(path, "a");
    if (log_file) setvbuf(log_file, NULL, _IOLBF, 0);
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
    const char *sub = getenv("HCCL_DEBUG_SUBSYS");
    if (sub && *sub) log_subsys = parse_subsys(sub);
    if (gethostname(log_host, sizeof log_host) != 0) snprintf(log_host, sizeof log_host, "?");
    log_host[sizeof log_host - 1] = 0;
    const char *file = getenv("HCCL_DEBUG_FILE");
    if (file && *file) open_log_file(file);
}

int hccl_log_enabled(hccl_log_level level, unsigned subsys)
{
    pthread_once(&log_once, log_init);
    return (int)level <= log_level && (subsys & log_subsys) != 0;
}

static const char *subsys_name(unsigned subsys)
{
    for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
        if (subsys == subsys_names[i].bit) return subsys_names[i].name;
    return "ALL";
}

void hccl_log(hccl_log_level level, unsigned subsys, const char *file, int line, const char *fmt, ...)
{
    if (!hccl_log_enabled(level, subsys)) return;
    static const char *names[] = {"NONE", "WARN", "INFO", "TRACE"};
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    pthread_mutex_lock(&log_lock);
    fprintf(log_file ? log_file : stderr, "%s:%d:%ld HCCL %s %s %s:%d %s\n", log_host, (int)getpid(),
            (long)syscall(SYS_gettid), names[level], subsys_name(subsys), base, line, msg);
    pthread_mutex_unlock(&log_lock);
}
