/*
 * common.h - the contract between the shared benchmark driver (common.c) and one
 * collective's file (all_reduce.c, ...), after nccl-tests.
 *
 * A collective describes its buffer layout for a given size, how to launch it, what
 * rank r contributes (element i of its send buffer holds perf_value(r, i)) and what
 * rank r must find in element i of its receive buffer. The driver owns everything
 * else: flags, communicators (one per process under a launcher, or -g threads),
 * timing, aggregation across ranks, checking and the table.
 */
#ifndef HCCL_PERF_COMMON_H
#define HCCL_PERF_COMMON_H

#include <hccl/hccl.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* Element counts of one run; the driver sizes buffers and checks with them. */
typedef struct perf_counts {
    size_t send;        /* elements in this rank's send buffer */
    size_t recv;        /* elements in this rank's receive buffer */
    size_t param;       /* the count passed to the operation */
    size_t send_inplace; /* in place: send buffer = recv buffer + rank * send_inplace */
    size_t recv_inplace; /* in place: recv buffer = send buffer + rank * recv_inplace */
} perf_counts;

/* Everything the value and expectation functions need. */
typedef struct perf_data {
    const perf_dtype *dtype;
    HcclReduceOp op;    /* HCCL_REDUCE_RESERVED for collectives without one */
    int nranks, root, iter;
    perf_counts c;
} perf_data;

/* One rank's view while launching. */
typedef struct perf_rank {
    HcclComm comm;
    aclrtStream stream;
    int rank, nranks;
} perf_rank;

typedef struct perf_coll {
    const char *name;        /* "AllReduce" */
    int has_op, has_root;
    int inplace_supported;   /* 0: the in-place block prints n/a */
    double (*bus_factor)(int nranks);
    /* total = size / element size; fills the counts for nranks. */
    void (*counts)(size_t total, int nranks, perf_counts *c);
    HcclResult (*run)(const perf_rank *pr, void *send, void *recv, size_t count, const perf_dtype *t,
                      HcclReduceOp op, int root);
    /* Whether rank's send buffer is read (0 for non-roots of broadcast/scatter). */
    int (*has_input)(const perf_data *d, int rank);
    /* Whether rank's receive buffer is defined afterwards (0 for non-roots of reduce/gather). */
    int (*has_output)(const perf_data *d, int rank);
    /* The value element i of rank's receive buffer must hold. */
    double (*expected)(const perf_data *d, int rank, size_t i);
} perf_coll;

/* The collective under test: each benchmark's file defines it. */
extern const perf_coll perf_test;

/* The value rank contributes at send index i (integer-valued, exact in the dtype). */
double perf_value(const perf_data *d, int rank, size_t i);
/* op applied over ranks 0..nranks-1 of perf_value(d, r, i). */
double perf_reduce_all(const perf_data *d, size_t i);

/* Helpers for the collectives' files. */
int perf_always(const perf_data *d, int rank);
int perf_root_only(const perf_data *d, int rank);
double perf_factor_one(int nranks);
double perf_factor_ring(int nranks); /* (n-1)/n */

#endif
