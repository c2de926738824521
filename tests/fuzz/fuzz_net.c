/*
 * fuzz_net.c - libFuzzer target for the message-header check path of src/core/net.c.
 *
 * Rank 0 of 2 posts one operation's transfers (chosen by the first bytes of the input)
 * through hccl_net.exchange(); everything rank 1 "sends" is the rest of the input,
 * delivered in pieces of fuzzer-chosen sizes by a fake transport. The engine must
 * reject every header that does not match (mismatch, ABORT frame, absurd lengths)
 * with an error, never read or write out of bounds, and never hang: when the input
 * runs out the fake peer "closes" its end.
 *
 * Input layout: [op][flags][dtype][redop][root u8][count u16][recv len u16][chunk]
 *               then the byte stream from rank 1.
 */
#include "core/net.h"
#include "util/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake_conn {
    hccl_conn base;
    const uint8_t *data;
    size_t len, pos;
    size_t chunk; /* bytes per recv call (varies delivery) */
    int closed;
} fake_conn;

static HcclResult fake_send(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    fake_conn *f = (fake_conn *)c;
    size_t n = 0;
    for (int i = 0; i < iovcnt; i++) n += iov[i].iov_len;
    if (f->closed) return HCCL_E_TCP_TRANSFER;
    *moved = n;
    return HCCL_SUCCESS;
}

static HcclResult fake_recv(hccl_conn *c, const struct iovec *iov, int iovcnt, size_t *moved)
{
    fake_conn *f = (fake_conn *)c;
    *moved = 0;
    if (f->pos >= f->len) return HCCL_E_TCP_TRANSFER; /* the peer closed */
    size_t budget = f->chunk;
    for (int i = 0; i < iovcnt && budget && f->pos < f->len; i++) {
        size_t k = iov[i].iov_len;
        if (k > budget) k = budget;
        if (k > f->len - f->pos) k = f->len - f->pos;
        memcpy(iov[i].iov_base, f->data + f->pos, k);
        f->pos += k;
        budget -= k;
        *moved += k;
        if (k < iov[i].iov_len) break;
    }
    return HCCL_SUCCESS;
}

static int fake_wait_fd(hccl_conn *c, int sending, short *events)
{
    (void)c;
    (void)sending;
    (void)events;
    return -1;
}

static void fake_close(hccl_conn *c) { (void)c; }
static void fake_shutdown(hccl_conn *c) { ((fake_conn *)c)->closed = 1; }

static const hccl_transport fake_ops = {"fuzz", fake_send, fake_recv, fake_wait_fd, fake_close, fake_shutdown, NULL};

/* net.c watches shared-memory peers' TCP connections; the fuzzer has none. */
int hccl_tcp_conn_fd(hccl_conn *c)
{
    (void)c;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 10) return 0;
    hccl_op_args args;
    memset(&args, 0, sizeof args);
    args.type = (hccl_op_type)(data[0] % HCCL_OP_COUNT);
    args.dtype = (HcclDataType)(data[2] % 20);
    args.redop = (HcclReduceOp)(data[3] % 5);
    args.root = data[4] % 3;
    args.count = (uint64_t)data[5] | (uint64_t)data[6] << 8;
    size_t rlen = ((size_t)data[7] | (size_t)data[8] << 8) % 8192;
    size_t chunk = data[9] ? data[9] : 1;
    int also_send = data[1] & 1;
    int rounds = 1 + ((data[1] >> 1) & 3);

    fake_conn peer = {{&fake_ops, 1}, data + 10, size - 10, 0, chunk, 0};
    hccl_conn *conns[2] = {NULL, &peer.base};
    hccl_netimpl *n = NULL;
    if (hccl_net_create(0, 2, conns, &n) != HCCL_SUCCESS) return 0;
    uint8_t *rbuf = malloc(rlen ? rlen : 1);
    uint8_t sbuf[64] = {0};
    hccl_fingerprint fp;
    hccl_fingerprint_of(&args, 2, &fp);
    char text[256];
    hccl_fingerprint_str(&fp, text, sizeof text);
    for (int r = 0; r < rounds; r++) {
        fp.seq = (uint32_t)r + 1;
        hccl_net_begin_op(n, &fp, hccl_now_ns() + 1000000000ull);
        hccl_xfer x[2];
        int k = 0;
        if (also_send) x[k++] = (hccl_xfer){HCCL_XFER_SEND, 1, sbuf, sizeof sbuf};
        x[k++] = (hccl_xfer){HCCL_XFER_RECV, 1, rbuf, rlen};
        HcclResult res = hccl_net_base(n)->exchange(hccl_net_base(n), x, k);
        const char *err = hccl_net_error(n);
        if (res != HCCL_SUCCESS) {
            if (strlen(err) == 0) __builtin_trap(); /* every failure must say why */
            hccl_net_abort(n, err);
            break;
        }
    }
    free(rbuf);
    hccl_net_destroy(n);
    return 0;
}
