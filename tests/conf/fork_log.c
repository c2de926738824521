/*
 * fork_log.c - a child forked while another thread writes a log line can log.
 *
 * The log's lock was handed over fork only when HCCL_DEBUG_FILE named a per-process
 * file: a child forked while another thread held it (writing a WARN line to stderr)
 * waited forever at its own first line. Here one thread keeps calling with a stale
 * handle (a WARN each time; stderr goes to /dev/null) while the main thread forks 50
 * times; each child makes a WARN of its own and exits. Public API only.
 */
#include <acl/acl.h>
#include <hccl/hccl.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int g_stop;

static void *warn_loop(void *arg)
{
    (void)arg;
    uint32_t v;
    while (!atomic_load(&g_stop)) HcclGetRankSize((HcclComm)(uintptr_t)0x1000, &v); /* not a communicator */
    return NULL;
}

int main(void)
{
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0 || dup2(devnull, 2) < 0) {
        printf("fork_log: cannot redirect stderr\n");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, warn_loop, NULL) != 0) return 1;
    int failed = 0;
    for (int i = 0; i < 50 && !failed; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(5);
            uint32_t v;
            _exit(HcclGetRankSize((HcclComm)(uintptr_t)0x2000, &v) == HCCL_E_PARA ? 0 : 2);
        }
        int status = -1;
        if (pid > 0) waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("FAIL: fork %d: the child's call that logs a WARN line: status %#x%s\n", i, status,
                   WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (hung for 5 s)" : "");
            failed = 1;
        }
    }
    atomic_store(&g_stop, 1);
    pthread_join(t, NULL);
    printf("fork_log: %s\n", failed ? "FAIL" : "PASS");
    return failed;
}
