/*
 * conf.h - shared declarations of the black-box conformance tests (hccl_conf).
 *
 * The conformance program uses only the public headers (hccl/hccl.h, acl/acl.h) and
 * the shared libraries libhccl.so and libascendcl.so. It runs one "rank function" per
 * rank, with ranks as forked processes (procs), as threads of one process (threads) or
 * as threads over communicators made by HcclCommInitAll (initall); see conf_main.c.
 *
 * Modules:
 *   conf_main.c   options, watchdog, the three rank launchers, suite dispatch
 *   conf_dtype.c  element sizes, fp16/bf16/fp8 codecs, exact test values
 *   conf_batch.c  queue several operations, synchronise once, verify every result
 *   conf_coll.c   reducing collectives and data-movement collectives
 *   conf_p2p.c    Send/Recv, BatchSendRecv, Barrier, two communicators at once
 *   conf_query.c  queries, sub-communicators, destroyed handles, configs
 *   conf_bad.c    bad input: every call must fail fast with HCCL_E_PARA / HCCL_E_PTR
 *   conf_boot.c   rank-table init and launcher-environment init
 */
#ifndef CONF_H_
#define CONF_H_

#include <hccl/hccl.h>
#include <acl/acl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CONF_MAX_RANKS 32
#define CONF_STEP_LEN 160

typedef enum { MODE_PROCS = 0, MODE_THREADS = 1, MODE_INITALL = 2 } conf_mode;

typedef struct {
    conf_mode mode;
    int nranks;
    const char *suite;
    int timeout_s; /* watchdog per process */
    int verbose;
    int signal_us; /* > 0: SIGPROF every that many us on each rank's thread (no SA_RESTART) */
} conf_opts;

/* Shared between all ranks (MAP_SHARED anonymous memory, inherited through fork). */
typedef struct {
    char step[CONF_MAX_RANKS][CONF_STEP_LEN]; /* what each rank is doing, for the watchdog */
    _Atomic int counter[16];                  /* scratch counters for barrier checks */
    char names[CONF_MAX_RANKS][COMM_NAME_MAX_LENGTH];
    char names2[CONF_MAX_RANKS][COMM_NAME_MAX_LENGTH];
    uintptr_t handles[CONF_MAX_RANKS];
} conf_shared;

typedef struct conf_ctx {
    int rank;
    int nranks;
    conf_mode mode;
    HcclComm comm;  /* world communicator */
    HcclComm comm2; /* second communicator over the same ranks (NULL when not asked) */
    aclrtStream stream;
    aclrtStream stream2;
    int fails;
    const conf_opts *opt;
} conf_ctx;

typedef void (*conf_rank_fn)(conf_ctx *ctx);

extern conf_shared *g_shared;

/* conf_main.c */
void conf_step(const conf_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void conf_fail(conf_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a failure unless rc == HCCL_SUCCESS; returns rc == HCCL_SUCCESS. */
int conf_ok(conf_ctx *ctx, HcclResult rc, const char *what);
int conf_acl_ok(conf_ctx *ctx, aclError rc, const char *what);
/* Runs fn on nranks ranks in mode; ncomms = 1 or 2 world communicators. Returns the
 * number of failed ranks (a rank fails when it records a failure, crashes or hangs). */
int conf_run_ranks(const conf_opts *o, conf_mode mode, int nranks, int ncomms, conf_rank_fn fn);
/* Same with a custom communicator creation run by each rank (one communicator). */
typedef HcclResult (*conf_init_fn)(conf_ctx *ctx, HcclComm *comm, void *arg);
int conf_run_ranks_custom(const conf_opts *o, conf_mode mode, int nranks, int ncomms, conf_init_fn init,
                          void *init_arg, conf_rank_fn fn);
double conf_now(void);
/* Synchronises a stream and records a failure when it reports an error. */
int conf_sync(conf_ctx *ctx, aclrtStream s, const char *what);
/* Shared-memory rendezvous of all ranks of a run (HcclBarrier-free); slot 15. */
void conf_host_barrier(conf_ctx *ctx);

/* conf_dtype.c */
#define CONF_NDTYPES 17
extern const HcclDataType conf_all_dtypes[CONF_NDTYPES];
extern const HcclReduceOp conf_all_ops[4];
size_t conf_dt_size(HcclDataType dt);
const char *conf_dt_name(HcclDataType dt);
const char *conf_op_name(HcclReduceOp op);
int conf_dt_reducible(HcclDataType dt);
/* Encodes the exactly representable value v as one element of dt at p. */
void conf_put(HcclDataType dt, void *p, double v);
/* Decodes one element of dt at p (NaN for a NaN encoding). */
double conf_get(HcclDataType dt, const void *p);
uint16_t conf_f32_to_f16(float f);
float conf_f16_to_f32(uint16_t h);
uint64_t conf_hash(uint64_t a, uint64_t b, uint64_t c);
/* Test input of rank `rank` at element i for a reduction: chosen so every partial
 * result of `nranks` inputs is exact in dt. */
double conf_value(HcclDataType dt, HcclReduceOp op, int nranks, int rank, uint64_t i, uint64_t seed);
/* Whether (dt, op) is checked at this rank count (fp8 e8m0 SUM is only exact for n <= 2). */
int conf_reduce_checked(HcclDataType dt, HcclReduceOp op, int nranks);
double conf_apply(HcclReduceOp op, double a, double b);
/* v rounded to dt, to nearest, ties to even (fp16, bf16, fp8 e4m3/e5m2, fp32). */
double conf_round(HcclDataType dt, double v);
/* Fills n bytes with a deterministic pattern for (seed, rank). */
void conf_pattern(void *p, size_t n, uint64_t seed, uint64_t rank);

/* conf_batch.c */
typedef struct conf_batch conf_batch;
conf_batch *conf_batch_new(conf_ctx *ctx);
/* aclrtMalloc'd device buffer of at least `bytes` (freed by conf_batch_run). */
void *conf_dev(conf_batch *b, size_t bytes);
/* Copies host data to a device buffer. */
void conf_upload(conf_batch *b, void *dev, const void *host, size_t bytes);
/* After synchronisation, dev[0..bytes) must equal expect (copied now). With
 * byvalue, elements of dt that differ bitwise are compared by value (so -0 == +0). */
void conf_expect(conf_batch *b, const char *label, const void *dev, const void *expect, size_t bytes,
                 HcclDataType dt, int byvalue);
/* Records that an enqueue returned rc (failure when not HCCL_SUCCESS). */
int conf_enq(conf_batch *b, HcclResult rc, const char *label);
/* Synchronises ctx->stream (and stream2 when used), verifies, frees. Returns failures. */
int conf_batch_run(conf_batch *b);
void conf_batch_use_stream2(conf_batch *b);

/* Suites (rank functions and whole-suite drivers). */
void conf_suite_coll(conf_ctx *ctx);
void conf_suite_p2p(conf_ctx *ctx);
void conf_suite_multicomm(conf_ctx *ctx);
void conf_p2p_two_comms_group(conf_ctx *ctx); /* conf_p2p.c, run by the multicomm suite */
void conf_suite_queries(conf_ctx *ctx);
void conf_suite_subcomm(conf_ctx *ctx);
int conf_badinput_main(const conf_opts *o);
int conf_ranktable_main(const conf_opts *o);
int conf_env_main(const conf_opts *o);
int conf_config_main(const conf_opts *o);
int conf_twojobs_main(const conf_opts *o);
int conf_devices_main(const conf_opts *o);

#endif /* CONF_H_ */
