/*
 * test_connect_hint.c - boot/boot.c: the WARN of a rank that cannot connect to the
 * bootstrap root or to a lower rank says why as the kernel saw it. A refused
 * connection (the host answered: no listener) keeps the hint about a missing process
 * (or a root info used twice); a peer whose host cannot be reached at all (no route,
 * no answer) is a network matter, and the WARN says so instead of blaming a process
 * that may be running fine. A refused root at a loopback address adds that only ranks
 * of the root's own host can reach it (a root info made without HCCL_IF_IP or
 * HCCL_SOCKET_IFNAME, used on another host). The unreachable cases run as root in a
 * new network namespace (only lo, down: no route anywhere).
 */
#include "boot/boot.h"
#include "util/log.h"
#include "util/util.h"
#include "tinytest.h"

#include <arpa/inet.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TIMEOUT_NS 300000000ull

static hccl_addr v4(const char *ip, uint16_t port)
{
    hccl_addr a;
    memset(&a, 0, sizeof a);
    struct sockaddr_in *s = (struct sockaddr_in *)&a;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    inet_pton(AF_INET, ip, &s->sin_addr);
    return a;
}

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static uint16_t closed_port(void)
{
    hccl_addr a = v4("127.0.0.1", 0);
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(struct sockaddr_in)) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0)
        return 0;
    close(s);
    return hccl_addr_port(&a);
}

static const char *join(const hccl_addr *root)
{
    hccl_boot_ident id = {1, 2, 0};
    hccl_boot_peer self, table[2];
    memset(&self, 0, sizeof self);
    self.rank = 1;
    TT_ASSERT(hccl_boot_join(root, &id, 2, &self, TIMEOUT_NS, NULL, NULL, table) != HCCL_SUCCESS);
    return hccl_log_last_warn();
}

static const char *mesh(const hccl_addr *rank0)
{
    hccl_boot_ident id = {1, 2, 0};
    hccl_boot_peer table[2];
    hccl_boot_stash stash;
    unsigned want[2] = {1, 1}, nsock[2];
    int fds[2 * HCCL_BOOT_MAX_SOCKS];
    memset(table, 0, sizeof table);
    table[0].addr = *rank0;
    table[0].rank = 0;
    table[1].rank = 1;
    hccl_boot_stash_init(&stash);
    TT_ASSERT(hccl_boot_mesh(-1, &stash, &id, 1, 2, table, TIMEOUT_NS, want, fds, nsock) != HCCL_SUCCESS);
    hccl_boot_stash_free(&stash);
    return hccl_log_last_warn();
}

int main(void)
{
    setenv("HCCL_DEBUG", "ERROR", 1); /* the WARN lines are read back, not printed */
    uint16_t port = closed_port();
    TT_ASSERT(port != 0);
    hccl_addr refused = v4("127.0.0.1", port);
    const char *w = join(&refused);
    TT_ASSERT_MSG(strstr(w, "cannot reach the bootstrap root") && strstr(w, "is the rank that serves it running"),
                  "refused root: %s", w);
    /* A loopback root refused: perhaps a rank of another host handed a loopback root. */
    TT_ASSERT_MSG(strstr(w, "its address is loopback, which only ranks on the root's own host can reach") &&
                      strstr(w, "HCCL_IF_IP or HCCL_SOCKET_IFNAME"),
                  "refused loopback root: %s", w);
    w = mesh(&refused);
    TT_ASSERT_MSG(strstr(w, "cannot connect to rank 0") && strstr(w, "(it exited, or never opened its listener)"),
                  "refused rank: %s", w);

    if (unshare(CLONE_NEWNET) != 0) {
        printf("test_connect_hint: not root: the unreachable cases are skipped\n");
        return tt_report("test_connect_hint");
    }
    hccl_addr far = v4("198.18.0.1", 60000);
    w = join(&far);
    TT_ASSERT_MSG(strstr(w, "cannot reach the bootstrap root") && strstr(w, "(no route to its host") &&
                      !strstr(w, "is the rank that serves it running"),
                  "unreachable root: %s", w);
    w = mesh(&far);
    TT_ASSERT_MSG(strstr(w, "cannot connect to rank 0") && strstr(w, "(no route to its host") &&
                      !strstr(w, "never opened its listener"),
                  "unreachable rank: %s", w);
    return tt_report("test_connect_hint");
}
