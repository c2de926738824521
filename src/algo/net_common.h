/*
 * net_common.h - shared pieces of the network algorithms (halving-doubling, Bruck,
 * pipelined chain): the argument checks and trivial cases that open them, and the
 * block layouts of the gather / scatter-reduce family: block j of a buffer is
 * [displ_j, displ_j + count_j) elements, from the V arrays, or displ_j = j * count,
 * count_j = count.
 *
 * A run of blocks becomes transfers: one when the layout is uniform (the run is
 * contiguous on both sides), else one per non-empty block, so that sender and
 * receiver, which may have different displacements (V forms), post the same byte
 * counts.
 */
#ifndef HCCL_ALGO_NET_COMMON_H
#define HCCL_ALGO_NET_COMMON_H

#include "algo/algo.h"
#include "reduce/reduce.h"

/* Opening of AllReduce and Reduce (what names the operation in the warning): the
 * element size and reduction of a->dtype / a->redop, or HCCL_E_PARA; *done = 1 when
 * nothing is left to do (count 0; one rank, its input copied to recvbuf). Then
 * checks that the scratch is there. */
HcclResult hccl_net_reduce_open(const hccl_algo_ctx *ctx, const hccl_op_args *a, const char *what, size_t *es,
                                hccl_reduce_fn *fn, int *done);

/* The fold of AllReduce onto p = 2^floor(log2 n) virtual ranks (pattern.h), for w
 * elements: among the first 2 (n - p) ranks the even one sends src to the odd one,
 * which sets dst = received op src (tmp holds what it received). *cur becomes the
 * vector this rank carries on with: dst after it reduced, else src. Other ranks: no-op. */
HcclResult hccl_net_fold(hccl_algo_ctx *ctx, hccl_reduce_fn fn, const char *src, char *dst, char *tmp, uint64_t w,
                         size_t es, const char **cur);
/* The unfold: the odd rank of a folded pair sends dst (the result) to the even one. */
HcclResult hccl_net_unfold(hccl_algo_ctx *ctx, char *dst, size_t bytes);

typedef struct hccl_blocks {
    char *base;                  /* the buffer */
    size_t es;                   /* element size */
    uint32_t n;                  /* blocks */
    uint64_t count;              /* uniform layout: elements per block */
    const uint64_t *cnt, *displ; /* V layout (NULL: uniform) */
} hccl_blocks;

static inline uint64_t hccl_blocks_count(const hccl_blocks *b, uint32_t j) { return b->cnt ? b->cnt[j] : b->count; }

static inline char *hccl_blocks_ptr(const hccl_blocks *b, uint32_t j)
{
    return b->base + (b->cnt ? b->displ[j] : (uint64_t)j * b->count) * b->es;
}

/* Append to x the transfers that move blocks [lo, lo + nb) (lo + nb <= n) to or from
 * peer; returns how many were appended (0 for an empty run). */
static inline int hccl_blocks_xfers(const hccl_blocks *b, uint32_t lo, uint32_t nb, hccl_xfer_dir dir, uint32_t peer,
                                    hccl_xfer *x)
{
    int k = 0;
    if (!b->cnt) {
        uint64_t len = (uint64_t)nb * b->count;
        if (len) x[k++] = (hccl_xfer){dir, peer, hccl_blocks_ptr(b, lo), len * b->es};
        return k;
    }
    for (uint32_t j = lo; j < lo + nb; j++)
        if (b->cnt[j]) x[k++] = (hccl_xfer){dir, peer, hccl_blocks_ptr(b, j), b->cnt[j] * b->es};
    return k;
}

/* Opening of AllGather(V): the receive layout, with this rank's input placed in its
 * block (memmove: the input may already be there, or overlap it); HCCL_E_PARA for a
 * bad dtype, missing V arrays or a count that differs from the layout's count_r. */
HcclResult hccl_net_allgather_open(const hccl_algo_ctx *ctx, const hccl_op_args *a, hccl_blocks *b);
/* The send layout of a REDUCE_SCATTER(_V) (sendbuf). */
void hccl_blocks_of_reduce_scatter(const hccl_op_args *a, uint32_t n, size_t es, hccl_blocks *b);

#endif
