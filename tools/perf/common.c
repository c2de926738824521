/*
 * common.c - the driver shared by every *_perf benchmark, after nccl-tests.
 *
 * Ranks: under a launcher (RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE, PMI_RANK/PMI_SIZE
 * or SLURM_PROCID/SLURM_NTASKS set, first found) this process is one rank and
 * joins with HcclCommInitFromEnv(); otherwise -g N ranks run as threads of this
 * process on communicators from HcclCommInitAll(). Each rank has one stream and
 * buffers from aclrtMalloc.
 *
 * Per dtype, op and size, out of place then in place:
 *   barrier; n timed iterations (each -m ops, in a group when m > 1; -z syncs after
 *   each) between two stream synchronizations; time = elapsed / (n * m), aggregated
 *   across ranks (-a: 0 rank 0, 1 avg, 2 min, 3 max) with an FP64 HcclAllReduce;
 *   then (after a barrier, so no rank's check runs while another still times) -c
 *   check iterations with fresh integer-valued inputs whose results are
 *   compared exactly with values computed here; wrong elements summed across ranks.
 * Rank 0 prints the nccl-tests table; the exit status is 1 when any #wrong > 0.
 * nccl-tests' other options are accepted where they mean something here (-t threads,
 * -N cycles, -C CPU time, -T timeout, -p) or with their "off" value (-G, -R, -M).
 */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define INFO_BYTES 64
#define SENTINEL 0x7f /* byte pattern of unwritten receive memory: out of every value range */
#define VALUE_CAP 100.0
#define MAX_BYTES (1ull << 40) /* largest -e: far beyond any memory, far below SIZE_MAX */

typedef struct perf_args {
    size_t minbytes, maxbytes, stepbytes;
    double stepfactor;
    int iters, warmup, check, root, average, agg, blocking, null_stream, ngpus;
    int nthreads, cycles, timeout, cputime; /* -t, -N (0: forever), -T seconds (0: none), -C */
    const perf_dtype *types[32];
    int ntypes;
    HcclReduceOp ops[4];
    int nops;
} perf_args;

typedef struct rank_ctx {
    perf_rank pr;
    int device;
    int status;       /* 0 ok, 1 wrong results, -1 error */
    char *send, *recv; /* device buffers of bufbytes */
    char *scratch;    /* small device buffer for aggregates and rank info */
    char *hsend, *hrecv;
    size_t bufbytes, scratchbytes;
    aclrtEvent ev[2]; /* throttle(): the records that bound the queued operations */
    int ev_recorded[2], ev_next;
    long queued;      /* operations enqueued since the last record */
} rank_ctx;

typedef struct block_result {
    double sec;
    double wrong;
    int na; /* not run: unsupported */
} block_result;

static perf_args A;
static const char *progname = "perf";

static const char *op_name(HcclReduceOp op)
{
    switch (op) {
    case HCCL_REDUCE_SUM: return "sum";
    case HCCL_REDUCE_PROD: return "prod";
    case HCCL_REDUCE_MAX: return "max";
    case HCCL_REDUCE_MIN: return "min";
    default: return "none";
    }
}

/* ---- values ---------------------------------------------------------------------- */

static int dtype_signed(const perf_dtype *t)
{
    return !(t->type == HCCL_DATA_TYPE_UINT8 || t->type == HCCL_DATA_TYPE_UINT16 ||
             t->type == HCCL_DATA_TYPE_UINT32 || t->type == HCCL_DATA_TYPE_UINT64);
}

static uint64_t mix(const perf_data *d, int rank, size_t i)
{
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)(rank + 1) * 0xc2b2ae3d27d4eb4full +
                 (uint64_t)(d->iter + 1) * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

/*
 * Inputs keep every partial result an exact integer of the dtype: sums stay within
 * exact_max (|v| <= exact_max / n, or one rank holds a 1 when that is below 1),
 * products are 1s with at most one 2 per element, max/min and data movement use
 * integers within exact_max. Signed types get negative values too.
 */
double perf_value(const perf_data *d, int rank, size_t i)
{
    const perf_dtype *t = d->dtype;
    const int n = d->nranks > 0 ? d->nranks : 1;
    uint64_t h = mix(d, rank, i);
    double vmax;
    if (d->op == HCCL_REDUCE_PROD)
        return ((i + (size_t)rank + (size_t)d->iter) % (size_t)(n + 1)) == 0 ? 2.0 : 1.0;
    if (d->op == HCCL_REDUCE_SUM) {
        vmax = floor(t->exact_max / n);
        if (vmax < 1.0) return ((i + (size_t)d->iter) % (size_t)n) == (size_t)rank ? 1.0 : 0.0;
    } else {
        vmax = t->exact_max;
    }
    if (vmax > VALUE_CAP) vmax = VALUE_CAP;
    if (dtype_signed(t)) return (double)(h % (uint64_t)(2 * vmax + 1)) - vmax;
    return (double)(h % (uint64_t)(vmax + 1));
}

double perf_reduce_all(const perf_data *d, size_t i)
{
    double acc = perf_value(d, 0, i);
    for (int r = 1; r < d->nranks; r++) {
        double v = perf_value(d, r, i);
        switch (d->op) {
        case HCCL_REDUCE_SUM: acc += v; break;
        case HCCL_REDUCE_PROD: acc *= v; break;
        case HCCL_REDUCE_MAX: acc = v > acc ? v : acc; break;
        case HCCL_REDUCE_MIN: acc = v < acc ? v : acc; break;
        default: break;
        }
    }
    return acc;
}

int perf_always(const perf_data *d, int rank)
{
    (void)d, (void)rank;
    return 1;
}

int perf_root_only(const perf_data *d, int rank) { return rank == d->root; }
double perf_factor_one(int nranks)
{
    (void)nranks;
    return 1.0;
}
double perf_factor_ring(int nranks) { return nranks > 0 ? (double)(nranks - 1) / nranks : 0.0; }

/* ---- arguments ------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  -b, --minbytes SIZE      smallest size (default 32M); sizes take K, M, G, T suffixes (x1024)\n"
            "  -e, --maxbytes SIZE      largest size, at most 1T (default 32M)\n"
            "  -f, --stepfactor F       multiply the size by F (> 1) each step\n"
            "  -i, --stepbytes SIZE     else add SIZE each step (default 1M)\n"
            "  -n, --iters N            timed iterations (default 20)\n"
            "  -w, --warmup_iters N     warm-up iterations (default 5)\n"
            "  -c, --check N            check iterations, 0 disables checking (default 1)\n"
            "  -o, --op OP              sum, prod, max, min, avg (unsupported), all (default sum)\n"
            "  -d, --datatype T         int8 uint8 int16 uint16 int32 uint32 int64 uint64 half float\n"
            "                           double bfloat16 int128 fp8e4m3 fp8e5m2, or all (default float)\n"
            "  -r, --root R             root rank of rooted collectives (default 0)\n"
            "  -a, --average A          time across ranks: 0 rank 0, 1 avg, 2 min, 3 max (default 3)\n"
            "  -m, --agg_iters M        operations per group call (default 1)\n"
            "  -z, --blocking 0|1       synchronize after every iteration (default 0)\n"
            "  -S, --null_stream 0|1    issue every operation on the NULL stream: blocking calls\n"
            "                           that run on the calling thread, like MPI's (default 0)\n"
            "  -y, --stream_null 0|1    the same as -S (nccl-tests' name)\n"
            "  -g, --ngpus N            ranks as threads of this process when not launched (default 1)\n"
            "  -t, --nthreads T         threads per process: T * N thread ranks with -g N (default 1)\n"
            "  -N, --run_cycles N       run the whole sweep N times, 0 = until killed (default 1)\n"
            "  -C, --report_cputime 0|1 1: time is the CPU time of the enqueue loop (default 0)\n"
            "  -T, --timeout S          exit with an error when a warm-up or a size runs longer\n"
            "                           than S seconds; 0 = no limit (default 0)\n"
            "  -p, --parallel_init 0|1  accepted for nccl-tests scripts; no effect\n"
            "  -G, --cudagraph 0        -R, --local_register 0   -M, --memory_report 0\n"
            "                           accepted with these values only (not supported here)\n"
            "  -h, --help               this text\n"
            "Under a launcher (hcclrun, torchrun, mpirun, srun) each process is one rank.\n",
            progname);
}

/* Parses "8", "128K", "128M", "1G", "1T" (powers of 1024; an optional trailing B). */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v, mul = 1;
    if (s == NULL || *s == '\0' || *s == '-') return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) return -1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (*end == 'i' && mul > 1) end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end != '\0') return -1;
    if (v > (unsigned long long)SIZE_MAX / mul) return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;
    if (s == NULL || *s == '\0') return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int bad_arg(const char *what, const char *val)
{
    fprintf(stderr, "%s: invalid %s '%s'\nTry '%s -h' for more information.\n", progname, what, val ? val : "",
            progname);
    return 2;
}

/* An nccl-tests option given a value that would need support this benchmark lacks. */
static int unsupported(int opt, const char *val, const char *why)
{
    fprintf(stderr, "%s: -%c %s: %s\n", progname, opt, val ? val : "", why);
    return 2;
}

/* Returns 0, or the exit status for a usage error (2) or -h (-1). */
static int parse_args(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"minbytes", required_argument, 0, 'b'},   {"maxbytes", required_argument, 0, 'e'},
        {"stepfactor", required_argument, 0, 'f'}, {"stepbytes", required_argument, 0, 'i'},
        {"iters", required_argument, 0, 'n'},      {"warmup_iters", required_argument, 0, 'w'},
        {"check", required_argument, 0, 'c'},      {"op", required_argument, 0, 'o'},
        {"datatype", required_argument, 0, 'd'},   {"root", required_argument, 0, 'r'},
        {"average", required_argument, 0, 'a'},    {"agg_iters", required_argument, 0, 'm'},
        {"blocking", required_argument, 0, 'z'},   {"ngpus", required_argument, 0, 'g'},
        {"null_stream", required_argument, 0, 'S'}, {"stream_null", required_argument, 0, 'y'},
        {"nthreads", required_argument, 0, 't'},   {"run_cycles", required_argument, 0, 'N'},
        {"report_cputime", required_argument, 0, 'C'}, {"timeout", required_argument, 0, 'T'},
        {"parallel_init", required_argument, 0, 'p'}, {"cudagraph", required_argument, 0, 'G'},
        {"local_register", required_argument, 0, 'R'}, {"memory_report", required_argument, 0, 'M'},
        {"output_file", required_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    const char *dtype = "float", *op = "sum";
    int c, unused;
    A.minbytes = A.maxbytes = 32u << 20;
    A.stepbytes = 1u << 20;
    A.stepfactor = 1.0;
    A.iters = 20;
    A.warmup = 5;
    A.check = 1;
    A.average = 3;
    A.agg = 1;
    A.ngpus = 1;
    A.nthreads = 1;
    A.cycles = 1;
    opterr = 0;
    for (;;) {
        const int cur = optind;
        char *end;
        c = getopt_long(argc, argv, ":b:e:f:i:n:w:c:o:d:r:a:m:z:S:y:g:t:N:C:T:p:G:R:M:J:h", longopts, NULL);
        if (c == -1) break;
        switch (c) {
        case 'b': if (parse_size(optarg, &A.minbytes)) return bad_arg("size for -b", optarg); break;
        case 'e': /* buffers are maxbytes plus a margin: near SIZE_MAX that would wrap to a few bytes */
            if (parse_size(optarg, &A.maxbytes) || A.maxbytes > MAX_BYTES)
                return bad_arg("size for -e (at most 1T)", optarg);
            break;
        case 'i':
            if (parse_size(optarg, &A.stepbytes) || A.stepbytes == 0) return bad_arg("increment for -i", optarg);
            break;
        case 'f':
            errno = 0;
            A.stepfactor = strtod(optarg, &end);
            if (errno || *end || end == optarg || !(A.stepfactor >= 1.0 && A.stepfactor <= 1e6))
                return bad_arg("factor for -f", optarg);
            break;
        case 'n': if (parse_int(optarg, 0, 100000000, &A.iters)) return bad_arg("iteration count", optarg); break;
        case 'w': if (parse_int(optarg, 0, 100000000, &A.warmup)) return bad_arg("warm-up count", optarg); break;
        case 'c': if (parse_int(optarg, 0, 1000000, &A.check)) return bad_arg("check count", optarg); break;
        case 'o': op = optarg; break;
        case 'd': dtype = optarg; break;
        case 'r': if (parse_int(optarg, 0, 1 << 30, &A.root)) return bad_arg("root", optarg); break;
        case 'a': if (parse_int(optarg, 0, 3, &A.average)) return bad_arg("aggregation (0..3)", optarg); break;
        case 'm': if (parse_int(optarg, 1, 1000000, &A.agg)) return bad_arg("ops per group", optarg); break;
        case 'z': if (parse_int(optarg, 0, 1, &A.blocking)) return bad_arg("blocking flag (0/1)", optarg); break;
        case 'S': case 'y':
            if (parse_int(optarg, 0, 1, &A.null_stream)) return bad_arg("NULL stream flag (0/1)", optarg);
            break;
        case 'g': if (parse_int(optarg, 1, 1024, &A.ngpus)) return bad_arg("thread rank count", optarg); break;
        case 't': if (parse_int(optarg, 1, 1024, &A.nthreads)) return bad_arg("thread count", optarg); break;
        case 'N': if (parse_int(optarg, 0, 1000000, &A.cycles)) return bad_arg("cycle count", optarg); break;
        case 'C': if (parse_int(optarg, 0, 1, &A.cputime)) return bad_arg("CPU time flag (0/1)", optarg); break;
        case 'T': if (parse_int(optarg, 0, 1 << 30, &A.timeout)) return bad_arg("timeout (seconds)", optarg); break;
        case 'p': if (parse_int(optarg, 0, 1, &unused)) return bad_arg("parallel init flag (0/1)", optarg); break;
        /* nccl-tests features with no counterpart here: only their "off" value passes. */
        case 'G':
            if (parse_int(optarg, 0, 0, &unused))
                return unsupported(c, optarg, "CUDA graph capture and replay are not supported here; only -G 0");
            break;
        case 'R':
            if (parse_int(optarg, 0, 0, &unused))
                return unsupported(c, optarg, "buffer registration is not supported here; only -R 0");
            break;
        case 'M':
            if (parse_int(optarg, 0, 0, &unused))
                return unsupported(c, optarg, "the device memory report is not supported here; only -M 0");
            break;
        case 'J': return unsupported(c, optarg, "JSON output files are not supported here; the table goes to stdout");
        case 'h': usage(stdout); return -1;
        case ':': return bad_arg("use of option without its value", argv[optind - 1]);
        default: {
            /* getopt stays on a word while letters follow the bad one ("-t4"): name the
             * option itself, not the word before it. */
            const char *word = optind > cur ? argv[optind - 1] : argv[optind];
            char opt[3] = {'-', (char)optopt, '\0'};
            return bad_arg("option", strncmp(word, "--", 2) != 0 && optopt ? opt : word);
        }
        }
    }
    if (optind < argc) return bad_arg("argument", argv[optind]);
    if (A.nthreads * A.ngpus > 1024) {
        fprintf(stderr, "%s: -t %d x -g %d thread ranks: at most 1024\n", progname, A.nthreads, A.ngpus);
        return 2;
    }
    if (A.minbytes > A.maxbytes) {
        fprintf(stderr, "%s: invalid range: -b %zu is above -e %zu (bytes)\nTry '%s -h' for more information.\n",
                progname, A.minbytes, A.maxbytes, progname);
        return 2;
    }

    if (strcasecmp(dtype, "all") == 0) {
        for (int i = 0; i < perf_ndtypes; i++) A.types[A.ntypes++] = &perf_dtypes[i];
    } else {
        A.types[0] = perf_dtype_find(dtype);
        if (A.types[0] == NULL) return bad_arg("data type", dtype);
        A.ntypes = 1;
    }
    if (strcasecmp(op, "all") == 0) {
        A.ops[A.nops++] = HCCL_REDUCE_SUM;
        A.ops[A.nops++] = HCCL_REDUCE_PROD;
        A.ops[A.nops++] = HCCL_REDUCE_MAX;
        A.ops[A.nops++] = HCCL_REDUCE_MIN;
    } else if (strcasecmp(op, "avg") == 0) {
        A.nops = 0; /* reported as unsupported */
    } else {
        static const HcclReduceOp o[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};
        for (int i = 0; i < 4; i++)
            if (strcasecmp(op, op_name(o[i])) == 0) A.ops[A.nops++] = o[i];
        if (A.nops == 0) return bad_arg("operation", op);
    }
    if (!perf_test.has_op) { /* no reduction here: -o is ignored, but a misspelt one is still refused */
        A.nops = 0;
        A.ops[A.nops++] = HCCL_REDUCE_RESERVED;
    }
    return 0;
}

/* ---- helpers --------------------------------------------------------------------- */

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define ACL_OK(ctx, call)                                                                                   \
    do {                                                                                                    \
        aclError e_ = (call);                                                                               \
        if (e_ != ACL_SUCCESS) {                                                                            \
            fprintf(stderr, "%s: rank %d: %s failed: ACL error %d %s\n", progname, (ctx)->pr.rank, #call,  \
                    (int)e_, aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "");                             \
            return -1;                                                                                      \
        }                                                                                                   \
    } while (0)

#define HCCL_OK(ctx, call)                                                                                  \
    do {                                                                                                    \
        HcclResult h_ = (call);                                                                             \
        if (h_ != HCCL_SUCCESS) {                                                                           \
            fprintf(stderr, "%s: rank %d: %s failed: %s (%d)\n", progname, (ctx)->pr.rank, #call,          \
                    HcclGetErrorString(h_), (int)h_);                                                       \
            return -1;                                                                                      \
        }                                                                                                   \
    } while (0)

/* All-reduces cnt doubles in place through the scratch buffer. */
static int allreduce_doubles(rank_ctx *x, double *v, int cnt, HcclReduceOp op)
{
    size_t bytes = (size_t)cnt * sizeof(double);
    ACL_OK(x, aclrtMemcpy(x->scratch, bytes, v, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    HCCL_OK(x, HcclAllReduce(x->scratch, x->scratch + bytes, (uint64_t)cnt, HCCL_DATA_TYPE_FP64, op, x->pr.comm,
                             x->pr.stream));
    ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
    ACL_OK(x, aclrtMemcpy(v, bytes, x->scratch + bytes, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    return 0;
}

static int barrier(rank_ctx *x)
{
    HcclResult r = HcclBarrier(x->pr.comm, x->pr.stream);
    if (r == HCCL_E_NOT_SUPPORT) { /* fall back to a one-element all-reduce */
        double one = 1.0;
        return allreduce_doubles(x, &one, 1, HCCL_REDUCE_SUM);
    }
    HCCL_OK(x, r);
    ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
    return 0;
}

/*
 * Streams queue without bound (docs/acl.md), and each queued operation holds memory
 * until it has run: -n 100000000 between two synchronizations once took about 10 GB
 * and was OOM-killed. Like a device's launch queue, keep at most about 2 * INFLIGHT_OPS
 * operations queued: after every INFLIGHT_OPS an event is recorded, and the one
 * recorded a window earlier is waited for (the stream keeps a window of work). Loops
 * of fewer operations never wait, so short runs time exactly as before. The NULL
 * stream's calls are blocking and queue nothing.
 */
#define INFLIGHT_OPS 1024

static void throttle_reset(rank_ctx *x) { x->queued = 0; }

static int throttle(rank_ctx *x, int nops)
{
    int prev = x->ev_next ^ 1;
    if (x->pr.stream == NULL) return 0;
    x->queued += nops;
    if (x->queued < INFLIGHT_OPS) return 0;
    x->queued = 0;
    if (x->ev_recorded[prev]) ACL_OK(x, aclrtSynchronizeEvent(x->ev[prev]));
    ACL_OK(x, aclrtRecordEvent(x->ev[x->ev_next], x->pr.stream));
    x->ev_recorded[x->ev_next] = 1;
    x->ev_next = prev;
    return 0;
}

/* Launches one iteration of nops operations (in a group when nops > 1).
 * Returns 0, 1 when unsupported, -1 on error. */
static int launch(rank_ctx *x, const perf_data *d, char *send, char *recv, int nops)
{
    int grouped = nops > 1 && HcclGroupStart() == HCCL_SUCCESS;
    int rc = 0;
    for (int a = 0; a < nops && rc == 0; a++) {
        HcclResult r = perf_test.run(&x->pr, send, recv, d->c.param, d->dtype, d->op, d->root);
        if (r == HCCL_E_NOT_SUPPORT) {
            rc = 1;
        } else if (r != HCCL_SUCCESS) {
            fprintf(stderr, "%s: rank %d: %s(%s, %s, count %zu) failed: %s (%d)\n", progname, x->pr.rank,
                    perf_test.name, d->dtype->name, op_name(d->op), d->c.param, HcclGetErrorString(r), (int)r);
            rc = -1;
        }
    }
    if (grouped && HcclGroupEnd() != HCCL_SUCCESS && rc == 0) {
        fprintf(stderr, "%s: rank %d: HcclGroupEnd failed\n", progname, x->pr.rank);
        rc = -1;
    }
    if (rc == 0 && A.blocking) ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
    return rc;
}

/* Where send and receive buffers lie for this block. */
static void place(rank_ctx *x, const perf_data *d, int inplace, char **send, char **recv)
{
    size_t es = d->dtype->size, r = (size_t)x->pr.rank;
    if (!inplace) {
        *send = x->send;
        *recv = x->recv;
    } else {
        *send = x->recv + r * d->c.send_inplace * es;
        *recv = x->recv + r * d->c.recv_inplace * es;
    }
}

/* One check iteration: fill inputs, run once, compare. Returns wrong count, or -1/-2
 * (error/unsupported). */
static long check_once(rank_ctx *x, const perf_data *d, int inplace)
{
    const perf_dtype *t = d->dtype;
    const size_t es = t->size, r = (size_t)x->pr.rank;
    char *send, *recv;
    long wrong = 0;
    int rc;
    place(x, d, inplace, &send, &recv);
    if (!inplace) {
        memset(x->hsend, SENTINEL, d->c.send * es);
        if (perf_test.has_input(d, x->pr.rank))
            for (size_t i = 0; i < d->c.send; i++) perf_store(t, x->hsend, i, perf_value(d, x->pr.rank, i));
        memset(x->hrecv, SENTINEL, d->c.recv * es);
        if (d->c.send) ACL_OK(x, aclrtMemcpy(send, d->c.send * es, x->hsend, d->c.send * es, ACL_MEMCPY_HOST_TO_DEVICE));
        if (d->c.recv) ACL_OK(x, aclrtMemcpy(recv, d->c.recv * es, x->hrecv, d->c.recv * es, ACL_MEMCPY_HOST_TO_DEVICE));
    } else {
        /* One image of the shared buffer: sentinel, with the input at its place. */
        size_t a = r * d->c.send_inplace + d->c.send, b = r * d->c.recv_inplace + d->c.recv;
        size_t span = a > b ? a : b;
        memset(x->hrecv, SENTINEL, span * es);
        if (perf_test.has_input(d, x->pr.rank)) {
            char *in = x->hrecv + (size_t)(send - x->recv);
            for (size_t i = 0; i < d->c.send; i++) perf_store(t, in, i, perf_value(d, x->pr.rank, i));
        }
        if (span) ACL_OK(x, aclrtMemcpy(x->recv, span * es, x->hrecv, span * es, ACL_MEMCPY_HOST_TO_DEVICE));
    }
    rc = launch(x, d, send, recv, 1); /* exactly one operation */
    if (rc != 0) return rc < 0 ? -1 : -2;
    ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
    if (!perf_test.has_output(d, x->pr.rank) || d->c.recv == 0) return 0;
    ACL_OK(x, aclrtMemcpy(x->hrecv, d->c.recv * es, recv, d->c.recv * es, ACL_MEMCPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < d->c.recv; i++) {
        double got = perf_load(t, x->hrecv, i), want = perf_test.expected(d, x->pr.rank, i);
        if (!(got == want)) {
            if (wrong == 0 && getenv("HCCL_PERF_VERBOSE"))
                fprintf(stderr, "%s: rank %d: %s %s element %zu: got %g, want %g\n", progname, x->pr.rank,
                        t->name, op_name(d->op), i, got, want);
            wrong++;
        }
    }
    return wrong;
}

/* -T: a warm-up pass or a block (out of place or in place, of one size) that runs
 * longer than A.timeout seconds ends the process with an error, as nccl-tests' timeout
 * fails the test; every rank re-arms the (process-wide) alarm as it starts one. */
static char timeout_msg[160];

static void on_timeout(int sig)
{
    ssize_t w = write(STDERR_FILENO, timeout_msg, strlen(timeout_msg));
    (void)sig, (void)w;
    _exit(1);
}

static void arm_timeout(void)
{
    if (A.timeout > 0) alarm((unsigned)A.timeout);
}

/* Times and checks one block; results are aggregated across ranks. */
static int run_block(rank_ctx *x, perf_data *d, int inplace, block_result *out)
{
    char *send, *recv;
    double t0, t1, sec = 0.0, flags[2] = {0.0, 0.0}; /* wrong, unsupported */
    int rc = 0;
    memset(out, 0, sizeof(*out));
    if (inplace && !perf_test.inplace_supported) {
        out->na = 1;
        return 0;
    }
    place(x, d, inplace, &send, &recv);
    arm_timeout();
    if (barrier(x)) return -1;
    throttle_reset(x);
    t0 = now_sec();
    for (int it = 0; it < A.iters && rc == 0; it++)
        if ((rc = launch(x, d, send, recv, A.agg)) == 0 && throttle(x, A.agg)) rc = -1;
    if (rc < 0) return -1;
    t1 = now_sec(); /* -C: the enqueue loop's time, before the stream has finished */
    ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
    if (A.iters > 0) sec = ((A.cputime ? t1 : now_sec()) - t0) / ((double)A.iters * A.agg);
    /* Checks start once every rank has stopped its clock: with more ranks than cores,
     * a rank that finished first (an eager root, a chain's first link) would otherwise
     * fill and copy its check buffers on the CPUs the others still time on. */
    if (A.check && barrier(x)) return -1;
    for (int c = 0; c < A.check && rc == 0; c++) {
        long w;
        d->iter = 2 * c + inplace;
        w = check_once(x, d, inplace);
        if (w == -1) return -1;
        if (w == -2) rc = 1;
        else flags[0] += (double)w;
    }
    if (rc == 1) flags[1] = 1.0;
    /* Aggregate the time: rank 0's (others contribute 0 to a sum), avg, min or max. */
    {
        static const HcclReduceOp agg_op[4] = {HCCL_REDUCE_SUM, HCCL_REDUCE_SUM, HCCL_REDUCE_MIN, HCCL_REDUCE_MAX};
        if (A.average == 0 && x->pr.rank != 0) sec = 0.0;
        if (allreduce_doubles(x, &sec, 1, agg_op[A.average])) return -1;
        if (A.average == 1) sec /= x->pr.nranks;
    }
    if (allreduce_doubles(x, flags, 2, HCCL_REDUCE_SUM)) return -1;
    out->sec = sec;
    out->wrong = flags[0];
    out->na = flags[1] > 0.0;
    return 0;
}

static void format_block(char *buf, size_t len, const block_result *b, size_t bytes, int nranks, double *bw_sum,
                         int *bw_count)
{
    char t[32], w[32];
    double us = b->sec * 1e6, algbw, busbw;
    if (b->na) {
        snprintf(buf, len, "  %7s  %6s  %6s  %6s", "n/a", "n/a", "n/a", "n/a");
        return;
    }
    algbw = b->sec > 0 ? (double)bytes / 1e9 / b->sec : 0.0;
    busbw = algbw * perf_test.bus_factor(nranks);
    if (us < 1e4) snprintf(t, sizeof(t), "%7.2f", us);
    else if (us < 1e5) snprintf(t, sizeof(t), "%7.1f", us);
    else snprintf(t, sizeof(t), "%7.0f", us);
    if (A.check) snprintf(w, sizeof(w), "%6.0f", b->wrong);
    else snprintf(w, sizeof(w), "%6s", "N/A");
    snprintf(buf, len, "  %7s  %6.2f  %6.2f  %6s", t, algbw, busbw, w);
    *bw_sum += busbw;
    (*bw_count)++;
}

/* ---- one rank --------------------------------------------------------------------- */

static int print_header(rank_ctx *x, int nprocs)
{
    struct {
        int32_t pid, device;
        char host[INFO_BYTES - 8];
    } me;
    _Static_assert(sizeof(me) == INFO_BYTES, "rank info layout");
    char *all;
    memset(&me, 0, sizeof(me));
    me.pid = (int32_t)getpid();
    me.device = x->device;
    gethostname(me.host, sizeof(me.host) - 1);
    ACL_OK(x, aclrtMemcpy(x->scratch, INFO_BYTES, &me, INFO_BYTES, ACL_MEMCPY_HOST_TO_DEVICE));
    HCCL_OK(x, HcclAllGather(x->scratch, x->scratch + INFO_BYTES, INFO_BYTES, HCCL_DATA_TYPE_UINT8, x->pr.comm,
                             x->pr.stream));
    ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
    if (x->pr.rank != 0) return 0;
    all = malloc((size_t)x->pr.nranks * INFO_BYTES);
    if (all == NULL) return -1;
    ACL_OK(x, aclrtMemcpy(all, (size_t)x->pr.nranks * INFO_BYTES, x->scratch + INFO_BYTES,
                          (size_t)x->pr.nranks * INFO_BYTES, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("# Collective test starting: %s\n", progname);
    {
        int per = x->pr.nranks / (nprocs > 0 ? nprocs : 1);
        printf("# %s: %d ranks (%d process%s x %d thread%s)\n", perf_test.name, x->pr.nranks, nprocs,
               nprocs == 1 ? "" : "es", per, per == 1 ? "" : "s");
    }
    if (A.stepfactor > 1.0)
        printf("# minBytes %zu maxBytes %zu step: %g(factor)", A.minbytes, A.maxbytes, A.stepfactor);
    else
        printf("# minBytes %zu maxBytes %zu step: %zu(bytes)", A.minbytes, A.maxbytes, A.stepbytes);
    printf(" warmup iters: %d iters: %d agg iters: %d validation: %d blocking: %d null stream: %d\n", A.warmup,
           A.iters, A.agg, A.check, A.blocking, A.null_stream);
    if (A.cycles != 1) printf("# run cycles: %d%s\n", A.cycles, A.cycles == 0 ? " (until killed)" : "");
    if (A.cputime) printf("# time: CPU time of the enqueue loop (-C 1), not the completion time\n");
    printf("# time across ranks: %s\n#\n# Using devices\n",
           (const char *[]){"rank 0", "average", "minimum", "maximum"}[A.average]);
    for (int r = 0; r < x->pr.nranks; r++) {
        int32_t pid, dev;
        char host[INFO_BYTES - 8];
        memcpy(&pid, all + (size_t)r * INFO_BYTES, 4);
        memcpy(&dev, all + (size_t)r * INFO_BYTES + 4, 4);
        memcpy(host, all + (size_t)r * INFO_BYTES + 8, sizeof(host));
        host[sizeof(host) - 1] = '\0';
        printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d\n", r, (int)pid, host, (int)dev);
    }
    free(all);
    printf("#\n");
    printf("#%51s  %-33s  %-33s\n", "", "            out-of-place", "             in-place");
    printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
    return 0;
}

static int rank_main(rank_ctx *x, int nprocs)
{
    const perf_rank *pr = &x->pr;
    double bw_sum = 0.0, wrong_total = 0.0;
    int bw_count = 0, root = A.root;
    perf_data d;

    if (A.root >= pr->nranks) {
        if (pr->rank == 0) fprintf(stderr, "%s: root %d is not a rank (%d ranks)\n", progname, A.root, pr->nranks);
        return 2;
    }
    x->bufbytes = A.maxbytes + 64;
    x->scratchbytes = (size_t)(pr->nranks + 1) * INFO_BYTES + 256;
    ACL_OK(x, aclrtMalloc((void **)&x->send, x->bufbytes, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_OK(x, aclrtMalloc((void **)&x->recv, x->bufbytes, ACL_MEM_MALLOC_HUGE_FIRST));
    ACL_OK(x, aclrtMalloc((void **)&x->scratch, x->scratchbytes, ACL_MEM_MALLOC_HUGE_FIRST));
    if (x->pr.stream) {
        ACL_OK(x, aclrtCreateEvent(&x->ev[0]));
        ACL_OK(x, aclrtCreateEvent(&x->ev[1]));
    }
    ACL_OK(x, aclrtMemset(x->send, x->bufbytes, 0, x->bufbytes));
    ACL_OK(x, aclrtMemset(x->recv, x->bufbytes, 0, x->bufbytes));
    x->hsend = malloc(x->bufbytes);
    x->hrecv = malloc(x->bufbytes);
    if (x->hsend == NULL || x->hrecv == NULL) {
        fprintf(stderr, "%s: rank %d: out of host memory for %zu-byte buffers\n", progname, pr->rank, x->bufbytes);
        return -1;
    }
    if (print_header(x, nprocs)) return -1;

    if (A.nops == 0) { /* -o avg */
        if (pr->rank == 0) printf("# op avg is not an HCCL reduction: unsupported, skipped\n");
    }
    /* -N: the whole sweep N times; 0 repeats it until killed (once when -o avg leaves nothing to run) */
    for (int cycle = 0; (A.cycles == 0 && A.nops > 0) || cycle < (A.cycles ? A.cycles : 1); cycle++)
    for (int ti = 0; ti < A.ntypes; ti++) {
        for (int oi = 0; oi < A.nops; oi++) {
            memset(&d, 0, sizeof(d));
            d.dtype = A.types[ti];
            d.op = A.ops[oi];
            d.nranks = pr->nranks;
            d.root = root;
            /* Warm-up at the largest and the smallest size. */
            for (int pass = 0; pass < 2 && A.warmup > 0; pass++) {
                arm_timeout();
                size_t total = (pass == 0 ? A.maxbytes : A.minbytes) / d.dtype->size;
                int rc = 0;
                perf_test.counts(total, pr->nranks, &d.c);
                throttle_reset(x);
                for (int w = 0; w < A.warmup && rc == 0; w++)
                    if ((rc = launch(x, &d, x->send, x->recv, A.agg)) == 0 && throttle(x, A.agg)) rc = -1;
                if (rc < 0) return -1;
                ACL_OK(x, aclrtSynchronizeStream(x->pr.stream));
            }
            for (size_t size = A.minbytes; size <= A.maxbytes;) {
                block_result b[2];
                char line[256], blk[2][96];
                size_t bytes, next;
                perf_test.counts(size / d.dtype->size, pr->nranks, &d.c);
                for (int ip = 0; ip < 2; ip++)
                    if (run_block(x, &d, ip, &b[ip])) return -1;
                bytes = (d.c.send > d.c.recv ? d.c.send : d.c.recv) * d.dtype->size;
                for (int ip = 0; ip < 2; ip++) {
                    format_block(blk[ip], sizeof(blk[ip]), &b[ip], bytes, pr->nranks, &bw_sum, &bw_count);
                    if (!b[ip].na) wrong_total += b[ip].wrong;
                }
                if (pr->rank == 0) {
                    snprintf(line, sizeof(line), "%12zu  %12zu  %8s  %6s  %6d%s%s", bytes, bytes / d.dtype->size,
                             d.dtype->name, op_name(d.op), perf_test.has_root ? root : -1, blk[0], blk[1]);
                    puts(line);
                    fflush(stdout);
                }
                if (A.stepfactor > 1.0) {
                    double nx = (double)size * A.stepfactor;
                    next = nx >= (double)SIZE_MAX ? SIZE_MAX : (size_t)nx;
                    /* At least one element more: 0 * f, or 8 * 1.01 rounded down, would
                     * otherwise end the sweep at its first size, far below -e. */
                    if (next < size + d.dtype->size)
                        next = size + d.dtype->size < size ? SIZE_MAX : size + d.dtype->size;
                } else {
                    next = size + A.stepbytes < size ? SIZE_MAX : size + A.stepbytes;
                }
                if (next <= size) break;
                size = next;
            }
        }
    }
    if (A.timeout > 0) alarm(0);
    if (pr->rank == 0) {
        printf("# Out of bounds values : %.0f %s\n", wrong_total, wrong_total > 0 ? "FAILED" : "OK");
        printf("# Avg bus bandwidth : %g\n", bw_count ? bw_sum / bw_count : 0.0);
        printf("#\n# Collective test concluded: %s\n", progname);
        fflush(stdout);
    }
    return wrong_total > 0 ? 1 : 0;
}

static void rank_cleanup(rank_ctx *x)
{
    if (x->send) aclrtFree(x->send);
    if (x->recv) aclrtFree(x->recv);
    if (x->scratch) aclrtFree(x->scratch);
    for (int i = 0; i < 2; i++)
        if (x->ev[i]) aclrtDestroyEvent(x->ev[i]);
    free(x->hsend);
    free(x->hrecv);
    if (x->pr.stream) aclrtDestroyStream(x->pr.stream);
    x->send = x->recv = x->scratch = x->hsend = x->hrecv = NULL;
    x->ev[0] = x->ev[1] = NULL;
    x->pr.stream = NULL;
}

/* Sets the device, makes the stream, learns rank and size, runs. */
static int rank_start(rank_ctx *x, int nprocs)
{
    uint32_t r = 0, n = 0;
    ACL_OK(x, aclrtSetDevice(x->device));
    if (!A.null_stream) ACL_OK(x, aclrtCreateStream(&x->pr.stream));
    HCCL_OK(x, HcclGetRankId(x->pr.comm, &r));
    HCCL_OK(x, HcclGetRankSize(x->pr.comm, &n));
    x->pr.rank = (int)r;
    x->pr.nranks = (int)n;
    return rank_main(x, nprocs);
}

static void *thread_main(void *arg)
{
    rank_ctx *x = arg;
    x->status = rank_start(x, 1);
    if (x->status < 0) { /* the other threads may wait on this rank forever */
        fflush(stdout);
        _exit(1);
    }
    return NULL;
}

/* The launchers HcclCommInitFromEnv reads, in its order: the first whose rank and size
 * variables are both set makes each process one rank. */
static const struct {
    const char *rank_var, *size_var;
} launchers[] = {{"RANK", "WORLD_SIZE"},
                 {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                 {"PMI_RANK", "PMI_SIZE"},
                 {"SLURM_PROCID", "SLURM_NTASKS"}};
static const char *const local_rank_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                              "SLURM_LOCALID"};

static const char *env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int main(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    const char *env_rank = NULL, *env_size = NULL, *local_var = NULL;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0] && !env_rank; i++)
        if (env_set(launchers[i].rank_var) && env_set(launchers[i].size_var)) {
            env_rank = env_set(launchers[i].rank_var);
            env_size = env_set(launchers[i].size_var);
            local_var = local_rank_vars[i];
        }
    uint32_t devcount = 0;
    int rc, status = 0;
    aclError ae;

    progname = slash ? slash + 1 : argv[0];
    rc = parse_args(argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (A.timeout > 0) {
        snprintf(timeout_msg, sizeof timeout_msg, "%s: timeout: a warm-up or a size took longer than -T %d s\n",
                 progname, A.timeout);
        signal(SIGALRM, on_timeout);
    }

    ae = aclInit(NULL);
    if (ae != ACL_SUCCESS && ae != ACL_ERROR_REPEAT_INITIALIZE) {
        fprintf(stderr, "%s: aclInit failed: %d\n", progname, (int)ae);
        return 1;
    }
    if (aclrtGetDeviceCount(&devcount) != ACL_SUCCESS || devcount == 0) devcount = 1;

    if (env_rank) {
        rank_ctx x;
        const char *lr = env_set(local_var);
        for (size_t i = 0; i < sizeof local_rank_vars / sizeof local_rank_vars[0] && !lr; i++)
            lr = env_set(local_rank_vars[i]);
        memset(&x, 0, sizeof(x));
        x.pr.rank = atoi(env_rank);
        x.device = (int)((uint32_t)(lr ? atoi(lr) : 0) % devcount);
        if ((A.ngpus != 1 || A.nthreads != 1) && x.pr.rank == 0)
            fprintf(stderr, "%s: -g and -t are ignored under a launcher: one rank per process\n", progname);
        ae = aclrtSetDevice(x.device);
        if (ae != ACL_SUCCESS) {
            fprintf(stderr, "%s: rank %d: aclrtSetDevice(%d) failed: %d\n", progname, x.pr.rank, x.device, (int)ae);
            return 1;
        }
        HcclResult hr = HcclCommInitFromEnv(NULL, &x.pr.comm);
        if (hr != HCCL_SUCCESS) {
            fprintf(stderr, "%s: rank %s: HcclCommInitFromEnv failed: %s (%d)\n", progname, env_rank,
                    HcclGetErrorString(hr), (int)hr);
            return 1;
        }
        int size = atoi(env_size);
        status = rank_start(&x, size > 0 ? size : 1);
        rank_cleanup(&x);
        HcclCommDestroy(x.pr.comm);
    } else {
        int n = A.ngpus * A.nthreads; /* nccl-tests: -t threads of -g devices each */
        rank_ctx *xs = calloc((size_t)n, sizeof(*xs));
        HcclComm *comms = calloc((size_t)n, sizeof(*comms));
        int32_t *devs = calloc((size_t)n, sizeof(*devs));
        pthread_t *th = calloc((size_t)n, sizeof(*th));
        if (!xs || !comms || !devs || !th) {
            fprintf(stderr, "%s: out of memory\n", progname);
            return 1;
        }
        for (int i = 0; i < n; i++) devs[i] = i;
        HcclResult hr = HcclCommInitAll((uint32_t)n, devs, comms);
        if (hr != HCCL_SUCCESS) {
            fprintf(stderr, "%s: HcclCommInitAll(%d) failed: %s (%d)\n", progname, n, HcclGetErrorString(hr), (int)hr);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            xs[i].pr.comm = comms[i];
            xs[i].pr.rank = i;
            xs[i].device = devs[i];
            if (pthread_create(&th[i], NULL, thread_main, &xs[i]) != 0) {
                fprintf(stderr, "%s: cannot start thread %d\n", progname, i);
                _exit(1);
            }
        }
        for (int i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            if (xs[i].status > status) status = xs[i].status;
        }
        for (int i = 0; i < n; i++) {
            rank_cleanup(&xs[i]);
            HcclCommDestroy(comms[i]);
        }
        free(xs);
        free(comms);
        free(devs);
        free(th);
    }
    aclFinalize();
    return status < 0 ? 1 : status;
}
