/*
 * mpi_perf.c - the Open MPI counterpart of our *_perf benchmarks (tools/perf), for the
 * comparison harness (bench/compare.py). Same method, flags and output columns, so the
 * harness parses both the same way:
 *
 *   mpirun -np 2 mpi_perf -C allreduce -b 8 -e 128M -f 4 [-n 20 -w 5 -c 1 -o sum -d float]
 *
 * -C/--coll: allreduce, allgather, reducescatter, broadcast, reduce, alltoall.
 * Per size, out of place then in place: MPI_Barrier; -n timed iterations; time =
 * elapsed / (n * m), aggregated across ranks by -a (0 rank 0, 1 avg, 2 min, 3 max,
 * default max); then (after a barrier) -c check iterations with fresh integer-valued
 * inputs (exact in the data type, so float sums are exact) compared exactly; #wrong
 * summed over ranks.
 * Warm-up: -w iterations at the largest and at the smallest size. The same buffers
 * are used by every iteration.
 *
 * Sizes and counts as in tools/perf: allreduce, broadcast, reduce: count * size;
 * allgather, reducescatter, alltoall: count per rank * n * size. busbw factors:
 * allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast, reduce 1.
 *
 * In place uses MPI_IN_PLACE (MPI's own semantics): allreduce, alltoall one buffer;
 * allgather sends from the rank's slot of the output; reduce_scatter_block reads the
 * whole input from the receive buffer and leaves its block at the start of it;
 * reduce: MPI_IN_PLACE at the root. Broadcast is in place by nature: the out-of-place
 * block first copies the root's input into its output (timed), as broadcast_perf does.
 * Exit status 1 when any #wrong > 0, 2 for usage errors.
 */
#include <mpi.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum { C_ALLREDUCE, C_ALLGATHER, C_REDUCESCATTER, C_BROADCAST, C_REDUCE, C_ALLTOALL };
static const char *coll_names[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall"};
static const char *coll_titles[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "AllToAll"};

typedef struct dtype {
    const char *name;
    MPI_Datatype mpi;
    size_t size;
    double exact_max; /* largest integer every value and partial sum must stay within */
    int kind;         /* 0 float, 1 double, 2 int32, 3 int64 */
} dtype;

static const dtype dtypes[] = {
    {"float", MPI_FLOAT, 4, 16777216.0, 0},
    {"double", MPI_DOUBLE, 8, 9007199254740992.0, 1},
    {"int32", MPI_INT32_T, 4, 2147483647.0, 2},
    {"int64", MPI_INT64_T, 8, 9007199254740992.0, 3},
};

typedef struct redop {
    const char *name;
    MPI_Op mpi;
} redop;

static struct {
    size_t minbytes, maxbytes, stepbytes;
    double stepfactor;
    int iters, warmup, check, root, average, agg, coll;
    const dtype *types[4];
    int ntypes;
    redop ops[4];
    int nops;
} A;

static int rank, nranks;
static const char *progname = "mpi_perf";

typedef struct counts {
    size_t send, recv, param; /* elements */
} counts;

typedef struct data {
    const dtype *t;
    int op; /* index into {sum, prod, max, min} */
    int iter;
    counts c;
} data;

/* ---- values (integer-valued, exact in the type; as tools/perf/common.c) ----------- */

static uint64_t mix(const data *d, int r, size_t i)
{
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)(r + 1) * 0xc2b2ae3d27d4eb4full +
                 (uint64_t)(d->iter + 1) * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static double value(const data *d, int r, size_t i)
{
    double vmax = d->t->exact_max;
    if (d->op == 1) return ((i + (size_t)r + (size_t)d->iter) % (size_t)(nranks + 1)) == 0 ? 2.0 : 1.0;
    if (d->op == 0) vmax = floor(vmax / nranks);
    if (vmax > 100.0) vmax = 100.0;
    return (double)(mix(d, r, i) % (uint64_t)(2 * vmax + 1)) - vmax;
}

static double reduce_all(const data *d, size_t i)
{
    double acc = value(d, 0, i);
    for (int r = 1; r < nranks; r++) {
        double v = value(d, r, i);
        switch (d->op) {
        case 0: acc += v; break;
        case 1: acc *= v; break;
        case 2: acc = v > acc ? v : acc; break;
        default: acc = v < acc ? v : acc; break;
        }
    }
    return acc;
}

static void store(const dtype *t, void *buf, size_t i, double v)
{
    switch (t->kind) {
    case 0: ((float *)buf)[i] = (float)v; break;
    case 1: ((double *)buf)[i] = v; break;
    case 2: ((int32_t *)buf)[i] = (int32_t)v; break;
    default: ((int64_t *)buf)[i] = (int64_t)v; break;
    }
}

static double load(const dtype *t, const void *buf, size_t i)
{
    switch (t->kind) {
    case 0: return ((const float *)buf)[i];
    case 1: return ((const double *)buf)[i];
    case 2: return ((const int32_t *)buf)[i];
    default: return (double)((const int64_t *)buf)[i];
    }
}

/* ---- arguments ---------------------------------------------------------------------- */

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
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N %s -C COLL [options]\n"
            "  -C, --coll COLL          allreduce allgather reducescatter broadcast reduce alltoall\n"
            "  -b/-e SIZE, -f F, -i SIZE, -n N, -w N, -c N, -r R, -a A, -m M: as in all_reduce_perf\n"
            "  -o, --op OP              sum prod max min all (default sum)\n"
            "  -d, --datatype T         float double int32 int64 all (default float)\n"
            "  -z, --blocking           accepted and ignored: MPI calls are blocking\n",
            progname);
}

static int bad_arg(const char *what, const char *val)
{
    if (rank == 0) fprintf(stderr, "%s: invalid %s '%s'\n", progname, what, val ? val : "");
    return 2;
}

static int parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"coll", required_argument, 0, 'C'},       {"minbytes", required_argument, 0, 'b'},
        {"maxbytes", required_argument, 0, 'e'},   {"stepfactor", required_argument, 0, 'f'},
        {"stepbytes", required_argument, 0, 'i'},  {"iters", required_argument, 0, 'n'},
        {"warmup_iters", required_argument, 0, 'w'}, {"check", required_argument, 0, 'c'},
        {"op", required_argument, 0, 'o'},         {"datatype", required_argument, 0, 'd'},
        {"root", required_argument, 0, 'r'},       {"average", required_argument, 0, 'a'},
        {"agg_iters", required_argument, 0, 'm'},  {"blocking", required_argument, 0, 'z'},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    static const redop allops[] = {{"sum", 0}, {"prod", 0}, {"max", 0}, {"min", 0}};
    const char *op = "sum", *dt = "float", *coll = NULL;
    int c, dummy;
    A.minbytes = A.maxbytes = 32u << 20;
    A.stepbytes = 1u << 20;
    A.stepfactor = 1.0;
    A.iters = 20;
    A.warmup = 5;
    A.check = 1;
    A.average = 3;
    A.agg = 1;
    A.coll = -1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":C:b:e:f:i:n:w:c:o:d:r:a:m:z:h", lo, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'C': coll = optarg; break;
        case 'b': if (parse_size(optarg, &A.minbytes)) return bad_arg("size", optarg); break;
        case 'e': /* buffers are maxbytes plus a margin: near SIZE_MAX that would wrap to a few bytes */
            if (parse_size(optarg, &A.maxbytes) || A.maxbytes > (1ull << 40)) return bad_arg("size (at most 1T)", optarg);
            break;
        case 'i': if (parse_size(optarg, &A.stepbytes) || !A.stepbytes) return bad_arg("increment", optarg); break;
        case 'f':
            A.stepfactor = strtod(optarg, &end);
            if (*end || !(A.stepfactor >= 1.0)) return bad_arg("factor", optarg);
            break;
        case 'n': if (parse_int(optarg, 0, 100000000, &A.iters)) return bad_arg("iterations", optarg); break;
        case 'w': if (parse_int(optarg, 0, 100000000, &A.warmup)) return bad_arg("warm-up", optarg); break;
        case 'c': if (parse_int(optarg, 0, 1000000, &A.check)) return bad_arg("check count", optarg); break;
        case 'o': op = optarg; break;
        case 'd': dt = optarg; break;
        case 'r': if (parse_int(optarg, 0, 1 << 30, &A.root)) return bad_arg("root", optarg); break;
        case 'a': if (parse_int(optarg, 0, 3, &A.average)) return bad_arg("aggregation", optarg); break;
        case 'm': if (parse_int(optarg, 1, 1000000, &A.agg)) return bad_arg("ops per iteration", optarg); break;
        case 'z': if (parse_int(optarg, 0, 1, &dummy)) return bad_arg("blocking flag", optarg); break;
        case 'h': if (rank == 0) usage(stdout); return -1;
        default: return bad_arg("option", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad_arg("argument", argv[optind]);
    for (int i = 0; coll && i < 6; i++)
        if (strcasecmp(coll, coll_names[i]) == 0) A.coll = i;
    if (A.coll < 0) return bad_arg("collective (-C)", coll);
    if (A.minbytes > A.maxbytes) return bad_arg("range", "-b above -e");
    if (A.root >= nranks) return bad_arg("root", "not a rank");
    for (int i = 0; i < 4; i++)
        if (strcasecmp(dt, "all") == 0 || strcasecmp(dt, dtypes[i].name) == 0 ||
            (strcasecmp(dt, "fp32") == 0 && i == 0) || (strcasecmp(dt, "fp64") == 0 && i == 1))
            A.types[A.ntypes++] = &dtypes[i];
    if (A.ntypes == 0) return bad_arg("data type", dt);
    {
        MPI_Op mo[4] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
        int has_op = A.coll == C_ALLREDUCE || A.coll == C_REDUCESCATTER || A.coll == C_REDUCE;
        for (int i = 0; i < 4; i++)
            if (strcasecmp(op, "all") == 0 || strcasecmp(op, allops[i].name) == 0)
                A.ops[A.nops++] = (redop){allops[i].name, mo[i]};
        if (A.nops == 0) return bad_arg("operation", op);
        if (!has_op) { /* checked, then ignored: no reduction here */
            A.nops = 0;
            A.ops[A.nops++] = (redop){"none", MPI_OP_NULL};
        }
    }
    return 0;
}

/* ---- one collective ----------------------------------------------------------------- */

static void get_counts(size_t total, counts *c)
{
    size_t n = (size_t)nranks, per = total / n;
    switch (A.coll) {
    case C_ALLGATHER: c->send = c->param = per; c->recv = per * n; break;
    case C_REDUCESCATTER: c->send = per * n; c->recv = c->param = per; break;
    case C_ALLTOALL: c->send = c->recv = per * n; c->param = per; break;
    default: c->send = c->recv = c->param = total; break;
    }
}

static double bus_factor(void)
{
    double n = nranks;
    switch (A.coll) {
    case C_ALLREDUCE: return 2.0 * (n - 1) / n;
    case C_ALLGATHER: case C_REDUCESCATTER: case C_ALLTOALL: return (n - 1) / n;
    default: return 1.0;
    }
}

static char *sendbuf, *recvbuf;

/* In place: where this rank's input lies inside recvbuf. */
static char *inplace_input(const data *d)
{
    if (A.coll == C_ALLGATHER) return recvbuf + (size_t)rank * d->c.param * d->t->size;
    return recvbuf;
}

static void run_once(const data *d, MPI_Op op, int inplace)
{
    MPI_Datatype t = d->t->mpi;
    int cnt = (int)d->c.param;
    void *s = inplace ? MPI_IN_PLACE : sendbuf;
    switch (A.coll) {
    case C_ALLREDUCE: MPI_Allreduce(s, recvbuf, cnt, t, op, MPI_COMM_WORLD); break;
    case C_ALLGATHER: MPI_Allgather(s, cnt, t, recvbuf, cnt, t, MPI_COMM_WORLD); break;
    case C_REDUCESCATTER: MPI_Reduce_scatter_block(s, recvbuf, cnt, t, op, MPI_COMM_WORLD); break;
    case C_ALLTOALL:
        if (inplace) MPI_Alltoall(MPI_IN_PLACE, 0, t, recvbuf, cnt, t, MPI_COMM_WORLD);
        else MPI_Alltoall(sendbuf, cnt, t, recvbuf, cnt, t, MPI_COMM_WORLD);
        break;
    case C_BROADCAST:
        if (!inplace && rank == A.root && cnt > 0) memcpy(recvbuf, sendbuf, (size_t)cnt * d->t->size);
        MPI_Bcast(recvbuf, cnt, t, A.root, MPI_COMM_WORLD);
        break;
    case C_REDUCE:
        if (!inplace) MPI_Reduce(sendbuf, recvbuf, cnt, t, op, A.root, MPI_COMM_WORLD);
        else if (rank == A.root) MPI_Reduce(MPI_IN_PLACE, recvbuf, cnt, t, op, A.root, MPI_COMM_WORLD);
        else MPI_Reduce(recvbuf, NULL, cnt, t, op, A.root, MPI_COMM_WORLD);
        break;
    }
}

static double expected(const data *d, size_t i)
{
    size_t per = d->c.param;
    switch (A.coll) {
    case C_ALLREDUCE: case C_REDUCE: return reduce_all(d, i);
    case C_ALLGATHER: return value(d, (int)(i / per), i % per);
    case C_REDUCESCATTER: return reduce_all(d, (size_t)rank * per + i);
    case C_ALLTOALL: return value(d, (int)(i / per), (size_t)rank * per + i % per);
    default: return value(d, A.root, i); /* broadcast */
    }
}

static long check_once(const data *d, MPI_Op op, int inplace)
{
    const dtype *t = d->t;
    int has_input = A.coll != C_BROADCAST || rank == A.root;
    int has_output = A.coll != C_REDUCE || rank == A.root;
    long wrong = 0;
    /* Sentinel over the bytes this size uses only, as tools/perf does: a memset of the
     * whole buffers would leave up to 2 x maxbytes of dirty lines for the next size's
     * timed loop to write back (2-rank AllGather: up to a third slower). */
    size_t rb = d->c.recv * t->size;
    if (inplace && (size_t)(inplace_input(d) - recvbuf) + d->c.send * t->size > rb)
        rb = (size_t)(inplace_input(d) - recvbuf) + d->c.send * t->size;
    memset(recvbuf, 0x7f, rb);
    if (!inplace) memset(sendbuf, 0x7f, d->c.send * t->size);
    if (has_input) {
        char *in = inplace ? inplace_input(d) : sendbuf;
        for (size_t i = 0; i < d->c.send; i++) store(t, in, i, value(d, rank, i));
    }
    run_once(d, op, inplace);
    if (!has_output) return 0;
    for (size_t i = 0; i < d->c.recv; i++) {
        double got = load(t, recvbuf, i), want = expected(d, i);
        if (!(got == want)) {
            if (wrong == 0 && getenv("HCCL_PERF_VERBOSE"))
                fprintf(stderr, "%s: rank %d: %s element %zu: got %g want %g\n", progname, rank, t->name, i, got,
                        want);
            wrong++;
        }
    }
    return wrong;
}

typedef struct block {
    double sec, wrong;
} block;

static void run_block(data *d, MPI_Op op, int inplace, block *b)
{
    double t0, sec = 0.0, wrong = 0.0;
    static const MPI_Op agg[4] = {MPI_SUM, MPI_SUM, MPI_MIN, MPI_MAX};
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; it < A.iters; it++)
        for (int m = 0; m < A.agg; m++) run_once(d, op, inplace);
    if (A.iters > 0) sec = (MPI_Wtime() - t0) / ((double)A.iters * A.agg);
    if (A.check) MPI_Barrier(MPI_COMM_WORLD); /* no check while another rank still times */
    for (int c = 0; c < A.check; c++) {
        d->iter = 2 * c + inplace;
        wrong += (double)check_once(d, op, inplace);
    }
    if (A.average == 0 && rank != 0) sec = 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &sec, 1, MPI_DOUBLE, agg[A.average], MPI_COMM_WORLD);
    if (A.average == 1) sec /= nranks;
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    b->sec = sec;
    b->wrong = wrong;
}

static void format_block(char *buf, size_t len, const block *b, size_t bytes, double *bw_sum, int *bw_n)
{
    char t[32], w[32];
    double us = b->sec * 1e6, algbw = b->sec > 0 ? (double)bytes / 1e9 / b->sec : 0.0, busbw = algbw * bus_factor();
    if (us < 1e4) snprintf(t, sizeof t, "%7.2f", us);
    else if (us < 1e5) snprintf(t, sizeof t, "%7.1f", us);
    else snprintf(t, sizeof t, "%7.0f", us);
    if (A.check) snprintf(w, sizeof w, "%6.0f", b->wrong);
    else snprintf(w, sizeof w, "%6s", "N/A");
    snprintf(buf, len, "  %7s  %6.2f  %6.2f  %6s", t, algbw, busbw, w);
    *bw_sum += busbw;
    (*bw_n)++;
}

int main(int argc, char **argv)
{
    double bw_sum = 0.0, wrong_total = 0.0;
    int bw_n = 0, rc;
    char host[64] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    rc = parse_args(argc, argv);
    if (rc) {
        MPI_Finalize();
        return rc < 0 ? 0 : rc;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (posix_memalign((void **)&sendbuf, 4096, A.maxbytes + 64) || posix_memalign((void **)&recvbuf, 4096, A.maxbytes + 64)) {
        fprintf(stderr, "%s: rank %d: out of memory\n", progname, rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sendbuf, 0, A.maxbytes + 64);
    memset(recvbuf, 0, A.maxbytes + 64);

    gethostname(host, sizeof host - 1);
    {
        int pids[1024] = {0}, me = (int)getpid();
        MPI_Gather(&me, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            int vmaj, vmin;
            char lib[MPI_MAX_LIBRARY_VERSION_STRING];
            int len;
            MPI_Get_version(&vmaj, &vmin);
            MPI_Get_library_version(lib, &len);
            char *nl = strchr(lib, '\n');
            if (nl) *nl = '\0';
            printf("# Collective test starting: %s (MPI %d.%d, %s)\n", progname, vmaj, vmin, lib);
            printf("# %s: %d ranks (%d processes x 1 thread)\n", coll_titles[A.coll], nranks, nranks);
            if (A.stepfactor > 1.0)
                printf("# minBytes %zu maxBytes %zu step: %g(factor)", A.minbytes, A.maxbytes, A.stepfactor);
            else
                printf("# minBytes %zu maxBytes %zu step: %zu(bytes)", A.minbytes, A.maxbytes, A.stepbytes);
            printf(" warmup iters: %d iters: %d agg iters: %d validation: %d blocking: 1\n", A.warmup, A.iters, A.agg,
                   A.check);
            printf("# time across ranks: %s\n#\n# Using devices\n",
                   (const char *[]){"rank 0", "average", "minimum", "maximum"}[A.average]);
            for (int r = 0; r < nranks && r < 1024; r++)
                printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d\n", r, pids[r], host, 0);
            printf("#\n");
            printf("#%51s  %-33s  %-33s\n", "", "            out-of-place", "             in-place");
            printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                   "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
            printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "",
                   "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
        }
    }
    for (int ti = 0; ti < A.ntypes; ti++) {
        for (int oi = 0; oi < A.nops; oi++) {
            data d;
            MPI_Op op = A.ops[oi].mpi == MPI_OP_NULL ? MPI_SUM : A.ops[oi].mpi;
            memset(&d, 0, sizeof d);
            d.t = A.types[ti];
            d.op = oi;
            for (int k = 0; k < 4; k++)
                if (strcmp(A.ops[oi].name, (const char *[]){"sum", "prod", "max", "min"}[k]) == 0) d.op = k;
            for (int pass = 0; pass < 2; pass++) {
                get_counts((pass == 0 ? A.maxbytes : A.minbytes) / d.t->size, &d.c);
                for (int w = 0; w < A.warmup; w++) run_once(&d, op, 0);
            }
            for (size_t size = A.minbytes; size <= A.maxbytes;) {
                block b[2];
                char blk[2][96];
                size_t bytes, next;
                get_counts(size / d.t->size, &d.c);
                for (int ip = 0; ip < 2; ip++) run_block(&d, op, ip, &b[ip]);
                bytes = (d.c.send > d.c.recv ? d.c.send : d.c.recv) * d.t->size;
                for (int ip = 0; ip < 2; ip++) {
                    format_block(blk[ip], sizeof blk[ip], &b[ip], bytes, &bw_sum, &bw_n);
                    wrong_total += b[ip].wrong;
                }
                if (rank == 0)
                    printf("%12zu  %12zu  %8s  %6s  %6d%s%s\n", bytes, bytes / d.t->size, d.t->name, A.ops[oi].name,
                           (A.coll == C_BROADCAST || A.coll == C_REDUCE) ? A.root : -1, blk[0], blk[1]);
                if (A.stepfactor > 1.0) {
                    next = (size_t)((double)size * A.stepfactor);
                    /* At least one element more, as tools/perf: 8 * 1.01 rounded down
                     * would end the sweep at -b. */
                    if (next < size + d.t->size) next = size + d.t->size;
                } else {
                    next = size + A.stepbytes;
                }
                if (next <= size) break;
                size = next;
            }
        }
    }
    if (rank == 0) {
        printf("# Out of bounds values : %.0f %s\n", wrong_total, wrong_total > 0 ? "FAILED" : "OK");
        printf("# Avg bus bandwidth : %g\n", bw_n ? bw_sum / bw_n : 0.0);
        printf("#\n# Collective test concluded: %s\n", progname);
    }
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return wrong_total > 0 ? 1 : 0;
}
