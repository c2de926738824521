/*
 * test_whitelist_v6.c - boot/socket.c: the whitelist (HCCL_WHITELIST_DISABLE=0) judges
 * an IPv4 peer of a dual-stack listener (bound to "::", as rank 0's bootstrap root is
 * when an IPv6 root address is not on a local interface), which accept() reports as
 * ::ffff:a.b.c.d, by its IPv4 address: 127.0.0.1 is loopback and admitted, as it is
 * on an IPv4 listener (it was refused as "not in HCCL_WHITELIST_FILE").
 */
#include "boot/socket.h"
#include "util/log.h"
#include "util/util.h"
#include "tinytest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
    char path[] = "/tmp/hccl_wl_v6_XXXXXX";
    int tf = mkstemp(path);
    TT_ASSERT(tf >= 0);
    const char *json = "{\"host_ip\": [\"198.18.0.9\"]}";
    TT_ASSERT(write(tf, json, strlen(json)) == (ssize_t)strlen(json));
    close(tf);
    setenv("HCCL_WHITELIST_DISABLE", "0", 1);
    setenv("HCCL_WHITELIST_FILE", path, 1);
    unsetenv("HCCL_IF_BASE_PORT");
    setenv("HCCL_DEBUG", "ERROR", 1);

    hccl_addr any;
    memset(&any, 0, sizeof any);
    any.ss_family = AF_INET6; /* [::]:0, which takes IPv4 connections too */
    int lfd = -1;
    if (hccl_socket_listen(&any, 0, &lfd) != HCCL_SUCCESS) {
        printf("test_whitelist_v6: no IPv6 on this host: skipped\n");
        unlink(path);
        return tt_report("test_whitelist_v6");
    }
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons(hccl_addr_port(&any));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&to, sizeof to) != 0) {
        printf("test_whitelist_v6: the \"::\" listener takes no IPv4 (bindv6only): skipped\n");
        close(c);
        close(lfd);
        unlink(path);
        return tt_report("test_whitelist_v6");
    }
    int fd = -1;
    hccl_addr peer;
    HcclResult r = hccl_socket_accept(lfd, hccl_now_ns() + 500000000ull, &fd, &peer);
    TT_ASSERT_MSG(r == HCCL_SUCCESS, "127.0.0.1 through \"::\" refused (%d): %s", (int)r, hccl_log_last_warn());
    if (fd >= 0) close(fd);
    close(c);
    close(lfd);
    unlink(path);
    return tt_report("test_whitelist_v6");
}
