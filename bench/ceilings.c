/*
 * ceilings.c - the physical ceilings the comparison harness reports next to the
 * collectives, measured in the same run (see ../shared/reference/benchmarks.md):
 *
 *   memcpy      single thread, memcpy of SIZE bytes (default 256 MiB) between two
 *               buffers already touched; GB/s = SIZE / time (best of REPS).
 *   tcp_oneway  one process streams SIZE bytes to another over loopback TCP.
 *   tcp_exchange two processes connected over loopback TCP both send SIZE bytes and
 *               receive SIZE bytes at once (a sender thread and a receiving main
 *               thread in each); GB/s per direction = SIZE / time of the slower one.
 *               This is what a 2-rank TCP allreduce's busbw can reach at most.
 *
 * Sockets keep the kernel's defaults (auto-tuned buffers) apart from TCP_NODELAY.
 * usage: ceilings [-s SIZE_MiB] [-t TCP_SIZE_MiB] [-r REPS]
 * Output: one "name GB/s" line per ceiling ("memcpy_GBps 7.91").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static double bench_memcpy(size_t bytes, int reps)
{
    char *a = aligned_alloc(4096, bytes), *b = aligned_alloc(4096, bytes);
    double best = 1e30;
    if (!a || !b) die("aligned_alloc");
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        memcpy(b, a, bytes);
        double t = now() - t0;
        if (t < best) best = t;
        __asm__ volatile("" ::"r"(b) : "memory");
    }
    free(a);
    free(b);
    return (double)bytes / best / 1e9;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

typedef struct sender {
    int fd;
    size_t bytes;
    char *buf;
} sender;

static void *send_main(void *arg)
{
    sender *s = arg;
    for (size_t done = 0; done < s->bytes;) {
        size_t n = s->bytes - done < CHUNK ? s->bytes - done : CHUNK;
        if (write_all(s->fd, s->buf, n)) die("write");
        done += n;
    }
    return NULL;
}

/* One side: handshake, then (send and receive | send only | receive only); returns seconds. */
static double side(int fd, size_t bytes, int do_send, int do_recv)
{
    char *sbuf = malloc(CHUNK), *rbuf = malloc(CHUNK), tok = 'x';
    pthread_t th;
    sender s = {fd, bytes, sbuf};
    double t0, t;
    memset(sbuf, 3, CHUNK);
    memset(rbuf, 0, CHUNK);
    /* Handshake so both sides start together. */
    if (write_all(fd, &tok, 1) || read_all(fd, &tok, 1)) die("handshake");
    t0 = now();
    if (do_send && pthread_create(&th, NULL, send_main, &s)) die("pthread_create");
    if (do_recv)
        for (size_t done = 0; done < bytes;) {
            size_t n = bytes - done < CHUNK ? bytes - done : CHUNK;
            ssize_t r = read(fd, rbuf, n);
            if (r <= 0) die("read");
            done += (size_t)r;
        }
    if (do_send) pthread_join(th, NULL);
    /* Completion token: the sender's time ends when the receiver has everything. */
    if (write_all(fd, &tok, 1) || read_all(fd, &tok, 1)) die("finish");
    t = now() - t0;
    free(sbuf);
    free(rbuf);
    return t;
}

static double bench_tcp(size_t bytes, int reps, int exchange)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1, pfd[2];
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    double best = 1e30;
    pid_t pid;
    if (ls < 0) die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &al))
        die("bind/listen");
    if (pipe(pfd)) die("pipe");
    pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        close(ls);
        if (connect(fd, (struct sockaddr *)&a, sizeof a)) die("connect");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        for (int r = 0; r < reps; r++) {
            double t = side(fd, bytes, exchange, 1);
            if (write(pfd[1], &t, sizeof t) != sizeof t) _exit(1);
        }
        _exit(0);
    }
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) die("accept");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int r = 0; r < reps; r++) {
        double t = side(fd, bytes, 1, exchange), tc;
        if (read_all(pfd[0], (char *)&tc, sizeof tc)) die("child time");
        if (tc > t) t = tc;
        if (t < best) best = t;
    }
    waitpid(pid, NULL, 0);
    close(fd);
    close(ls);
    close(pfd[0]);
    close(pfd[1]);
    return (double)bytes / best / 1e9;
}

int main(int argc, char **argv)
{
    size_t mem = 256, tcp = 128;
    int reps = 3, c;
    while ((c = getopt(argc, argv, "s:t:r:h")) != -1) {
        switch (c) {
        case 's': mem = strtoul(optarg, NULL, 10); break;
        case 't': tcp = strtoul(optarg, NULL, 10); break;
        case 'r': reps = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-s memcpy_MiB] [-t tcp_MiB] [-r reps]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("memcpy_GBps %.3f\n", bench_memcpy(mem << 20, reps));
    printf("tcp_oneway_GBps %.3f\n", bench_tcp(tcp << 20, reps, 0));
    printf("tcp_exchange_GBps %.3f\n", bench_tcp(tcp << 20, reps, 1));
    return 0;
}
