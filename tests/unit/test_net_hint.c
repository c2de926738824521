/*
 * test_net_hint.c - core/net.c: a point-to-point call that times out while the link to
 * its peer looks unreachable (the connection's stalled() says so: data sent long ago is
 * still unacknowledged) says that, and not that the peer did not post the matching
 * call: the message used to give both, the second contradicting the first. A peer whose
 * link is healthy keeps the hint about the missing call.
 */
#include "core/net.h"
#include "transport/transport.h"
#include "tinytest.h"

#include <stdio.h>
#include <string.h>

static int link_down;

static HcclResult idle_move(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    (void)c, (void)iov, (void)iovcnt;
    *moved = 0;
    return HCCL_SUCCESS;
}

static int no_fd(hccl_conn *c, int sending, short *events)
{
    (void)c, (void)sending, (void)events;
    return -1;
}

static void no_close(hccl_conn *c) { (void)c; }

static int stalled(hccl_conn *c, char *why, size_t len)
{
    (void)c;
    if (!link_down) return 0;
    snprintf(why, len, "4096 bytes unacknowledged for 7.0 s");
    return 1;
}

static const hccl_transport silent = {
    .name = "silent", .send = idle_move, .recv = idle_move, .wait_fd = no_fd, .close = no_close, .stalled = stalled};

/* Rank 0 of 2 receives 16 bytes from rank 1, which never sends: the timeout's text. */
static void recv_timeout(char *text, size_t len)
{
    hccl_conn peer = {&silent, 1, 0};
    hccl_conn *conns[2] = {NULL, &peer};
    hccl_netimpl *n = NULL;
    TT_ASSERT(hccl_net_create(0, 2, conns, &n) == HCCL_SUCCESS);
    if (!n) return;
    hccl_op_args a = {.type = HCCL_OP_RECV, .count = 4, .dtype = HCCL_DATA_TYPE_INT32, .root = 1};
    hccl_fingerprint fp;
    hccl_fingerprint_of(&a, 2, &fp);
    hccl_net_begin_op(n, &fp, 50000000ull);
    char buf[16];
    hccl_xfer x = {HCCL_XFER_RECV, 1, buf, sizeof buf};
    HcclResult r = ((hccl_net *)n)->exchange((hccl_net *)n, &x, 1);
    TT_ASSERT_MSG(r == HCCL_E_TIMEOUT, "result %d", (int)r);
    snprintf(text, len, "%s", hccl_net_error(n));
    hccl_net_end_op(n, 0);
    hccl_net_destroy(n);
}

static void test_unreachable_peer(void)
{
    char text[1024];
    link_down = 1;
    recv_timeout(text, sizeof text);
    TT_ASSERT_MSG(strstr(text, "rank 1 looks unreachable (4096 bytes unacknowledged") &&
                      !strstr(text, "did not post the matching call"),
                  "unreachable peer: %s", text);
}

static void test_healthy_link(void)
{
    char text[1024];
    link_down = 0;
    recv_timeout(text, sizeof text);
    TT_ASSERT_MSG(strstr(text, "waiting for: receive from rank 1") &&
                      strstr(text, "did not post the matching call, or is stuck") && !strstr(text, "unreachable"),
                  "healthy link: %s", text);
}

int main(void)
{
    test_unreachable_peer();
    test_healthy_link();
    return tt_report("test_net_hint");
}
