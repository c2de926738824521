/*
 * fault_log.c - HCCL_DEBUG_FILE with %r: one log file per rank.
 *
 * logfile   3 ranks (processes), HCCL_DEBUG=INFO, HCCL_DEBUG_FILE=DIR/hccl.%r.log:
 *           each makes its communicator, runs one AllReduce and destroys it. Then, for
 *           every rank r, DIR/hccl.<r>.log exists; every line in it is an HCCL line
 *           written by rank r's process (its pid); it has rank r's own lines ("rank r
 *           of 3 ready", its algorithm line, "rank r destroyed") and no other rank's;
 *           the rank's stderr has no HCCL line (they all went to the file); and no
 *           rank fell back to a pid-named file (hccl.pid<PID>.log). The bootstrap root
 *           runs in the parent, which never has a rank: its lines are not in any
 *           rank's file.
 */
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_N 3

static void logfile_body(fault_ctx *c)
{
    fault_bufs b;
    if (fault_bufs_alloc(c, &b, 4096, 4096) != 0) return;
    fault_step(c, "op #1 AllReduce");
    if (fault_allreduce_check(c, &b, 1024, 1.0f) != 0) fault_fail(c, "op #1 AllReduce failed");
    fault_bufs_free(&b);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += k;
        if (cap - len < 2) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf) buf[len] = 0;
    return buf;
}

/* Checks of one rank's file; returns the number of HCCL lines in it. */
static int check_rank_file(int r, const char *text)
{
    char readytag[32];
    int lines = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *l = strndup(line, len);
        /* "host:pid:tid HCCL LEVEL ..." */
        const char *colon = strchr(l, ':');
        int pid = colon ? atoi(colon + 1) : -1;
        if (!strstr(l, " HCCL ")) fault_fail(NULL, "hccl.%d.log has a line that is not an HCCL line: %s", r, l);
        else if (pid != g_sh->r[r].pid)
            fault_fail(NULL, "hccl.%d.log has a line of pid %d, not of rank %d's process %d: %s", r, pid, r,
                       g_sh->r[r].pid, l);
        for (int q = 0; q < LOG_N; q++) {
            char other[48];
            snprintf(other, sizeof other, "rank %d of %d ready", q, LOG_N);
            if (q != r && strstr(l, other)) fault_fail(NULL, "hccl.%d.log has rank %d's line: %s", r, q, l);
        }
        free(l);
        lines++;
        if (!end) break;
        line = end + 1;
    }
    snprintf(readytag, sizeof readytag, "rank %d of %d ready", r, LOG_N);
    const char *ready[] = {"HCCL INFO", readytag, NULL};
    FCHECK(NULL, fault_text_has_line(text, ready), "hccl.%d.log lacks the line \"... %s\"", r, readytag);
    char rk[32];
    snprintf(rk, sizeof rk, "rank %d", r);
    const char *algo[] = {"HCCL INFO", rk, "AllReduce of 1024 elements uses the", NULL};
    FCHECK(NULL, fault_text_has_line(text, algo), "hccl.%d.log lacks rank %d's algorithm line", r, r);
    char gone[32];
    snprintf(gone, sizeof gone, "rank %d destroyed", r);
    const char *destroyed[] = {"HCCL INFO", gone, NULL};
    FCHECK(NULL, fault_text_has_line(text, destroyed), "hccl.%d.log lacks the line \"... %s\"", r, gone);
    return lines;
}

int scen_logfile(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char pattern[700];
    snprintf(pattern, sizeof pattern, "%s/hccl.%%r.log", g_sh->dir);
    /* Before the first HCCL call of this process (HcclGetRootInfo in fault_run). */
    setenv("HCCL_DEBUG", "INFO", 1);
    setenv("HCCL_DEBUG_FILE", pattern, 1);
    /* The log file opens with the first communicator and stays open (the log is the
     * process's): the descriptor count cannot come back to where it was. */
    fault_job job = {.name = "logfile", .nranks = LOG_N, .init = INIT_ROOTINFO, .body = logfile_body,
                     .watchdog_s = 40, .skip_fd_check = 1};
    fault_run(&job);
    for (int r = 0; r < LOG_N; r++) {
        char path[800];
        snprintf(path, sizeof path, "%s/hccl.%d.log", g_sh->dir, r);
        char *text = read_file(path);
        if (!text) {
            fault_fail(NULL, "%s does not exist: HCCL_DEBUG_FILE=%s gave rank %d no file", path, pattern, r);
            continue;
        }
        int lines = check_rank_file(r, text);
        fprintf(stderr, "FAULT-TEST INFO: %s: %d lines of rank %d (pid %d)\n", path, lines, r, g_sh->r[r].pid);
        free(text);
        FCHECK(NULL, !fault_output_has(r, " HCCL ", NULL),
               "rank %d printed HCCL lines to stderr although HCCL_DEBUG_FILE is set", r);
        snprintf(path, sizeof path, "%s/hccl.pid%d.log", g_sh->dir, g_sh->r[r].pid);
        FCHECK(NULL, access(path, F_OK) != 0, "%s exists: rank %d fell back to its pid", path, r);
    }
    return 0;
}
