/*
 * test_if_ip.c - boot/socket.c: what HCCL_IF_IP accepts and what the WARN says when a
 * listener cannot be opened. A link-local IPv6 address takes its zone ("fe80::1%lo",
 * as rank tables and MASTER_ADDR do) and is printed with it; without a zone it is
 * refused with HCCL_E_PARA at once, naming the fix; inet_aton's short forms ("1.2.3")
 * and unknown zones are refused. Listening on an address this host lacks says so.
 * As root, the listen cases run in a new network namespace (only lo, brought up),
 * where 192.0.2.1 is surely not an address of this host.
 */
#include "boot/socket.h"
#include "util/log.h"
#include "tinytest.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static HcclResult with_if_ip(const char *ip, hccl_addr *a)
{
    setenv("HCCL_IF_IP", ip, 1);
    HcclResult r = hccl_socket_local_addr(NULL, a);
    unsetenv("HCCL_IF_IP");
    return r;
}

int main(void)
{
    hccl_addr a;
    const char *w;
    unsetenv("HCCL_SOCKET_IFNAME");
    unsetenv("HCCL_IF_BASE_PORT");
    setenv("HCCL_DEBUG", "ERROR", 1); /* the WARN lines are read back, not printed */

    /* Zoned link-local: accepted, the zone kept and printed. */
    TT_ASSERT_EQ(with_if_ip("fe80::1%lo", &a), HCCL_SUCCESS);
    TT_ASSERT_EQ(a.ss_family, AF_INET6);
    TT_ASSERT_EQ(((struct sockaddr_in6 *)&a)->sin6_scope_id, if_nametoindex("lo"));
    TT_ASSERT_MSG(strcmp(hccl_addr_str(&a), "[fe80::1%lo]:0") == 0, "printed as %s", hccl_addr_str(&a));

    /* Link-local without a zone: refused now, not EINVAL from bind later. */
    TT_ASSERT_EQ(with_if_ip("fe80::1", &a), HCCL_E_PARA);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "HCCL_IF_IP=\"fe80::1\" is a link-local IPv6 address without a zone") &&
                      strstr(w, "\"fe80::1%eth0\""),
                  "warn: %s", w);

    TT_ASSERT_EQ(with_if_ip("fe80::1%hccl_no_such_if", &a), HCCL_E_PARA);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "(\"hccl_no_such_if\" is not one)"), "warn: %s", w);

    TT_ASSERT_EQ(with_if_ip("1.2.3", &a), HCCL_E_PARA);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "HCCL_IF_IP=\"1.2.3\" is not an IPv4 or IPv6 address"), "warn: %s", w);
    TT_ASSERT_EQ(with_if_ip("1.2.3.4%lo", &a), HCCL_E_PARA);

    /* Plain literals as before. */
    TT_ASSERT_EQ(with_if_ip("::1", &a), HCCL_SUCCESS);
    TT_ASSERT_EQ(a.ss_family, AF_INET6);
    TT_ASSERT_EQ(((struct sockaddr_in6 *)&a)->sin6_scope_id, 0u);
    TT_ASSERT_EQ(with_if_ip("127.0.0.1", &a), HCCL_SUCCESS);
    TT_ASSERT_EQ(a.ss_family, AF_INET);

    if (unshare(CLONE_NEWNET) != 0) {
        printf("test_if_ip: not root: the listen cases in a new network namespace are skipped\n");
        return tt_report("test_if_ip");
    }
    /* lo up: with no local routes at all the kernel lets any address be bound. */
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    TT_ASSERT(s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
    ifr.ifr_flags |= IFF_UP;
    TT_ASSERT(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
    close(s);
    int fd = -1;
    hccl_addr l;
    memset(&l, 0, sizeof l);
    l.ss_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.1", &((struct sockaddr_in *)&l)->sin_addr);
    TT_ASSERT(hccl_socket_listen(&l, 0, &fd) != HCCL_SUCCESS);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "cannot listen on 192.0.2.1:0: ") && strstr(w, "(not an address of this host)"),
                  "warn: %s", w);

    memset(&l, 0, sizeof l);
    l.ss_family = AF_INET6;
    inet_pton(AF_INET6, "fe80::1", &((struct sockaddr_in6 *)&l)->sin6_addr);
    TT_ASSERT(hccl_socket_listen(&l, 0, &fd) != HCCL_SUCCESS);
    w = hccl_log_last_warn();
    TT_ASSERT_MSG(strstr(w, "cannot listen on [fe80::1]:0: ") && strstr(w, "needs its interface"), "warn: %s", w);
    return tt_report("test_if_ip");
}
