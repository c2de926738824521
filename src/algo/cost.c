/*
 * cost.c - the alpha-beta cost model behind hccl_algo_select for the network
 * algorithms (ring, halving-doubling, Bruck, binomial tree, pipelined chain,
 * pairwise), and the chain's segment size.
 *
 * A schedule costs  rounds x alpha + bytes x beta + reduced bytes x gamma + copied
 * bytes x kappa,  counted on its critical path: rounds are exchanges in sequence,
 * bytes those the busiest rank sends in them (a rank sends and receives at once), and
 * every scratch window repeats the rounds. Constants, per link kind:
 *
 *                     alpha (us/round)   beta (ns/byte)
 *   TCP (loopback or between hosts)   20       0.8     (2-way exchange ~1.25 GB/s)
 *   shared memory                      3       0.25    (ring copy, ~4 GB/s)
 *   gamma = 0.2 ns/byte (fp32 sum in cache), kappa = 0.1 ns/byte (memcpy)
 *   pipelined chain rounds over TCP within one host: 8 alpha
 *
 * The last one is measured, not derived: over loopback every link of the chain is
 * the same host's CPUs, so the chain's rounds (all n ranks copying at once) do not
 * overlap as they do on separate links; with 4 ranks on 2 cores the chain was 0.79x
 * the binomial tree at 512 KiB and 2 MiB and 1.05-1.18x from 8 MiB (docs/performance.md),
 * so on one host it is chosen from a few MiB only. Between hosts the plain alpha.
 *
 * measured on the 2-core development machine (docs/performance.md): loopback TCP
 * rounds cost 15-25 us under load, the 2-way exchange ceiling was 1.16-1.30 GB/s.
 * Only the ratios matter: alpha / beta (25 KB for TCP) is the message size at which a
 * round costs as much as its bytes, which is where the algorithms that save rounds
 * (halving-doubling, Bruck, tree) stop paying for the bytes they add (folds,
 * repeated broadcasts, Bruck's half-vector per round).
 *
 * Formulas (n ranks, L = ceil(log2 n), p = 2^floor(log2 n), f = 1 when n != p; m =
 * the whole vector, b = one rank's block, W = number of scratch windows):
 *   allreduce     ring   W 2(n-1) a + 2(n-1)/n m B + (n-1)/n m G
 *                 hd     W (2 log2 p + 2f) a + (2(p-1)/p + 2f) m B + ((p-1)/p + f) m G
 *                 rd     W (log2 p + 2f) a + (log2 p + 2f) m B + (log2 p + f) m G  (not a candidate:
 *                        chosen for small sizes on crowded hosts only)
 *   allgather     ring   (n-1) a + (n-1) b B
 *                 hd     (log2 p + 2f) a + ((p-1) b + f (b + m)) B
 *                 bruck  L a + (n-1) b B
 *   reducescatter ring   W (n-1) a + (n-1) b (B + G)
 *                 hd     W (log2 p + 2f) a + ((p-1)/p + f) m (B + G) + f b B
 *   broadcast     tree   L (a + m B)
 *                 chain  (n-2+S) (a + m/S B), S segments (hccl_algo_chain_segment)
 *   reduce        tree   W L a + L m (B + G)
 *                 chain  (n-2+S) (a + m/S (B + G))
 *   alltoall      pair   (n-1) (a + b B)
 *                 bruck  W L a + L ceil(n/2) b (B + 2K) + 2 n b K
 * Ties go to the reference algorithm (with 2 ranks every pair above is the same
 * schedule, so 2-rank communicators keep the reference algorithms).
 */
#include "algo/algo.h"

#include <math.h>

typedef struct link_cost {
    double alpha_us, beta_us; /* per round, per byte */
} link_cost;

/* By hccl_link_kind: TCP, shared memory, TCP within one host. */
static const link_cost links[3] = {{20.0, 0.8e-3}, {3.0, 0.25e-3}, {20.0, 0.8e-3}};
static const double gamma_us = 0.2e-3, kappa_us = 0.1e-3;
static const double chain_round[3] = {1.0, 1.0, 8.0}; /* alpha multiplier of a chain round */

hccl_link_kind hccl_algo_link(const hccl_algo_ctx *ctx)
{
    /* Direct copies between every pair imply one host with shared memory on. */
    if (ctx->direct || (ctx->direct_local && (!ctx->host_of || ctx->nhosts <= 1))) return HCCL_LINK_SHM;
    /* A known topology of one host: loopback (a group network, such as the
     * hierarchical leaders', has none and spans hosts). */
    return ctx->host_of && ctx->nhosts == 1 ? HCCL_LINK_TCP_HOST : HCCL_LINK_TCP;
}

static double windows(double bytes, double per_window) { return bytes <= per_window ? 1.0 : ceil(bytes / per_window); }

/* Segments of the chain: S = sqrt((n-2) m B' / a), as a power-of-two segment size. */
static double chain_bytes(uint32_t n, double m, double per_byte, double alpha)
{
    double s = n > 2 ? sqrt((n - 2) * m * per_byte / alpha) : 1.0;
    double seg = s > 1.0 ? m / s : m;
    double p2 = exp2(round(log2(seg > 1.0 ? seg : 1.0)));
    if (p2 < 16384.0) p2 = 16384.0;
    if (p2 > 1048576.0) p2 = 1048576.0;
    return p2;
}

uint64_t hccl_algo_chain_segment(uint32_t n, uint64_t count, size_t es, int reduce, hccl_link_kind link)
{
    if ((unsigned)link > HCCL_LINK_TCP_HOST) link = HCCL_LINK_TCP;
    const link_cost *c = &links[link];
    double seg = chain_bytes(n, (double)count * (double)es, c->beta_us + (reduce ? gamma_us : 0.0),
                             c->alpha_us * chain_round[link]);
    uint64_t elems = (uint64_t)seg / es;
    return elems ? elems : 1;
}

static double chain_cost(uint32_t n, double m, double per_byte, double alpha)
{
    double seg = chain_bytes(n, m, per_byte, alpha), S = m <= seg ? 1.0 : ceil(m / seg);
    return (n - 2 + S) * (alpha + m / S * per_byte);
}

double hccl_algo_cost(hccl_algo_id id, hccl_op_type type, uint32_t n, uint64_t bytes, hccl_link_kind link)
{
    if (!hccl_algo_implements(id, type) || n == 0) return HUGE_VAL;
    if (n == 1) return 0.0;
    if ((unsigned)link > HCCL_LINK_TCP_HOST) link = HCCL_LINK_TCP;
    const link_cost *c = &links[link];
    const double a = c->alpha_us, ca = a * chain_round[link], B = c->beta_us, G = gamma_us, K = kappa_us;
    uint32_t L = 0, lp = 0;
    while ((1ull << L) < n) L++;
    while ((2ull << lp) <= n) lp++;
    const double p = (double)(1u << lp), f = (1u << lp) != n, N = n, b = (double)bytes;
    const double scratch = HCCL_ALGO_SCRATCH_BYTES;
    switch (type) {
    case HCCL_OP_ALLREDUCE:
        if (id == HCCL_ALGO_RD)
            return windows(b, scratch) * (lp + 2 * f) * a + (lp + 2 * f) * b * B + (lp + f) * b * G;
        if (id == HCCL_ALGO_HD)
            return windows(b, fmin(p * HCCL_ALGO_RING_BLOCK_BYTES, f ? scratch : 2 * scratch)) * (2 * lp + 2 * f) * a +
                   (2 * (p - 1) / p + 2 * f) * b * B +
                   ((p - 1) / p + f) * b * G;
        return windows(b, N * HCCL_ALGO_RING_BLOCK_BYTES) * 2 * (N - 1) * a + 2 * (N - 1) / N * b * B +
               (N - 1) / N * b * G;
    case HCCL_OP_ALLGATHER:
    case HCCL_OP_ALLGATHER_V:
        if (id == HCCL_ALGO_HD) return (lp + 2 * f) * a + ((p - 1) * b + f * (b + N * b)) * B;
        if (id == HCCL_ALGO_BRUCK) return L * a + (N - 1) * b * B;
        return (N - 1) * a + (N - 1) * b * B;
    case HCCL_OP_REDUCE_SCATTER:
    case HCCL_OP_REDUCE_SCATTER_V:
        if (id == HCCL_ALGO_HD)
            return windows(b, scratch / (2 * N)) * (lp + 2 * f) * a + ((p - 1) / p + f) * N * b * (B + G) + f * b * B;
        return windows(b, scratch / 2) * (N - 1) * a + (N - 1) * b * (B + G);
    case HCCL_OP_BROADCAST:
        if (id == HCCL_ALGO_CHAIN) return chain_cost(n, b, B, ca);
        return L * (a + b * B);
    case HCCL_OP_REDUCE:
        if (id == HCCL_ALGO_CHAIN) return chain_cost(n, b, B + G, ca);
        return windows(b, scratch / 2) * L * a + L * b * (B + G);
    case HCCL_OP_ALLTOALL:
        if (id == HCCL_ALGO_BRUCK)
            return windows(b, scratch / (2 * N + 1)) * L * a + L * ceil(N / 2) * b * (B + 2 * K) + 2 * N * b * K;
        return (N - 1) * (a + b * B);
    default: return id == HCCL_ALGO_REFERENCE ? 0.0 : HUGE_VAL;
    }
}
