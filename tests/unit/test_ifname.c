/*
 * test_ifname.c - boot/socket.c: what HCCL_SOCKET_IFNAME selects, and the WARN when
 * it selects nothing: a name no interface has lists the host's interfaces; a name
 * that matches an interface that is down (or without an address of the family) says
 * so; the search for a non-loopback interface that the library makes on its own
 * (HCCL_SOCKET_IFNAME unset) logs nothing, least of all about HCCL_SOCKET_IFNAME.
 * As root, the cases that need a known set of interfaces run in a new network
 * namespace (only lo, down).
 */
#include "boot/socket.h"
#include "util/log.h"
#include "tinytest.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static HcclResult with_ifname(const char *spec, hccl_addr *a)
{
    setenv("HCCL_SOCKET_IFNAME", spec, 1);
    HcclResult r = hccl_socket_local_addr(NULL, a);
    unsetenv("HCCL_SOCKET_IFNAME");
    return r;
}

int main(void)
{
    hccl_addr a;
    unsetenv("HCCL_IF_IP");
    setenv("HCCL_SOCKET_FAMILY", "AF_INET", 1);
    setenv("HCCL_DEBUG", "ERROR", 1); /* the WARN lines are read back, not printed */

    TT_ASSERT_EQ(with_ifname("hccl_no_such_if", &a), HCCL_E_NOT_FOUND);
    const char *w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "HCCL_SOCKET_IFNAME=hccl_no_such_if matches no interface of this host (it has: ") &&
                      strstr(w, "lo"),
                  "warn: %s", w);
    TT_ASSERT_MSG(!strstr(w, "AF_INET6"), "a name no interface has is not an IPv6 matter: %s", w);

    if (unshare(CLONE_NEWNET) != 0) {
        printf("test_ifname: not root: the cases in a new network namespace are skipped\n");
        return tt_report("test_ifname");
    }
    TT_ASSERT_EQ(with_ifname("=lo", &a), HCCL_E_NOT_FOUND);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(
        strstr(w, "HCCL_SOCKET_IFNAME==lo matches no interface that is up with an AF_INET address: lo (down)"),
        "warn: %s", w);
    TT_ASSERT_EQ(with_ifname("^=lo", &a), HCCL_E_NOT_FOUND);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "HCCL_SOCKET_IFNAME=^=lo matches no interface of this host (it has: lo)"), "warn: %s", w);

    HCCL_WARN(INIT, "marker");
    TT_ASSERT_EQ(hccl_socket_nonloopback_addr(AF_INET, &a), HCCL_E_NOT_FOUND);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strcmp(w, "marker") == 0, "the library's own search logged: %s", w);
    return tt_report("test_ifname");
}
