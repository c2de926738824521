/*
 * algo_env.c - HCCL_ALGO: the upstream syntax, honoured with the algorithms we have.
 *
 *   HCCL_ALGO="level0:NA;level1:H-D_R"                      every operation
 *   HCCL_ALGO="allreduce=level0:NA;level1:H-D_R/allgather=level0:NA;level1:NB"
 *
 * Level values (at any level; we do not tell the levels apart):
 *   ring, pairwise         the reference algorithms of the operation
 *   H-D_R (H-D, HD)        recursive halving-doubling (allreduce, reducescatter, allgather)
 *   NB (bruck)             Bruck (allgather, alltoall)
 *   pipeline (chain)       pipelined chain (broadcast, reduce)
 *   NA, fullmesh, mesh, direct, or empty: the cost-based selection chooses.
 * An algorithm that does not implement an operation leaves that operation to the
 * selection (with the global form that is expected: H-D_R applies to the three ops
 * it implements); NHR, star and other upstream values too, with one INFO line. A
 * forced network algorithm (H-D_R, NB, pipeline) replaces the network algorithms'
 * choice only: communicators of one host with direct copies, and hierarchical ones,
 * keep theirs (hccl_algo_select); ring and pairwise force the reference algorithms
 * everywhere, as HCCL_REFERENCE_ALGOS does.
 * HCCL_REFERENCE_ALGOS=1 forces the reference algorithms everywhere (for tests).
 *
 * hccl_algo_env_reference(type) gives ctx->reference: 0 (choose), 1 (reference) or
 * HCCL_ALGO_FORCED(id); hccl_algo_config_parse the same for HcclCommConfig.hcclAlgo,
 * which a communicator created with one uses instead (hccl_comm_algo_force).
 */
#include "core/comm.h"

#include "util/log.h"
#include "util/param.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int force[HCCL_OP_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct {
    const char *name;
    hccl_op_type ops[3];
} op_names[] = {{"allreduce", {HCCL_OP_ALLREDUCE, HCCL_OP_ALLREDUCE, HCCL_OP_ALLREDUCE}},
                {"allgather", {HCCL_OP_ALLGATHER, HCCL_OP_ALLGATHER_V, HCCL_OP_ALLGATHER_V}},
                {"reducescatter", {HCCL_OP_REDUCE_SCATTER, HCCL_OP_REDUCE_SCATTER_V, HCCL_OP_REDUCE_SCATTER_V}},
                {"broadcast", {HCCL_OP_BROADCAST, HCCL_OP_BROADCAST, HCCL_OP_BROADCAST}},
                {"reduce", {HCCL_OP_REDUCE, HCCL_OP_REDUCE, HCCL_OP_REDUCE}},
                {"alltoall", {HCCL_OP_ALLTOALL, HCCL_OP_ALLTOALLV, HCCL_OP_ALLTOALLVC}},
                {"scatter", {HCCL_OP_SCATTER, HCCL_OP_SCATTER, HCCL_OP_SCATTER}}};

static const struct {
    const char *value;
    int algo; /* 1: reference; else HCCL_ALGO_FORCED(id) */
} values[] = {{"ring", 1},
              {"pairwise", 1},
              {"H-D_R", HCCL_ALGO_FORCED(HCCL_ALGO_HD)},
              {"H-D", HCCL_ALGO_FORCED(HCCL_ALGO_HD)},
              {"HD", HCCL_ALGO_FORCED(HCCL_ALGO_HD)},
              {"NB", HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK)},
              {"bruck", HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK)},
              {"pipeline", HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN)},
              {"chain", HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN)}};

/* Upstream values that name no algorithm of ours: the selection chooses, quietly. */
static const char *const upstream_only[] = {"NHR", "NHR_V1", "AHC", "AHC_BROKE", "star", "NHR_V2"};

/* "level0:NA;level1:ring" -> 1 when some level asks for the reference algorithms,
 * else the last algorithm named, else 0. spec is modified. A value that no HCCL
 * knows (a typo) is a WARN: the selection chooses for it, the same on every rank. */
static int parse_levels(const char *what, char *spec)
{
    int ref = 0, algo = 0;
    for (char *save = NULL, *tok = strtok_r(spec, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *v = strchr(tok, ':');
        v = v ? v + 1 : tok;
        size_t i;
        for (i = 0; i < sizeof values / sizeof values[0]; i++)
            if (strcasecmp(v, values[i].value) == 0) break;
        if (i < sizeof values / sizeof values[0]) {
            if (values[i].algo == 1) ref = 1;
            else algo = values[i].algo;
            continue;
        }
        if (!*v || !strcasecmp(v, "NA") || !strcasecmp(v, "fullmesh") || !strcasecmp(v, "mesh") ||
            !strcasecmp(v, "direct"))
            continue;
        for (i = 0; i < sizeof upstream_only / sizeof upstream_only[0]; i++)
            if (strcasecmp(v, upstream_only[i]) == 0) break;
        if (i < sizeof upstream_only / sizeof upstream_only[0])
            HCCL_INFO(COLL, "%s: %s is not implemented here; the selection chooses", what, v);
        else
            HCCL_WARN(COLL, "%s: unknown algorithm \"%s\" in \"%s\" ignored; the selection chooses", what, v, tok);
    }
    return ref ? 1 : algo;
}

/* Force `value` on op where it applies (the reference always does). */
static void apply(int *force, hccl_op_type op, int value)
{
    if (value == 1 || (value && hccl_algo_implements((hccl_algo_id)(value & 0xff), op))) force[op] = value;
}

/* algo (NULL: none) in force[HCCL_OP_COUNT]; all: HCCL_REFERENCE_ALGOS=1. what names
 * the source in the log lines (the variable, or the communicator's config). */
static void parse_into(const char *what, const char *algo, int all, int *force)
{
    /* A copy of any length: a truncated copy would drop the operations at its end. */
    char *buf = algo ? strdup(algo) : NULL;
    if (algo && !buf) HCCL_WARN(COLL, "%s: out of memory; ignored, the selection chooses", what);
    int global = buf && !strchr(buf, '=') ? parse_levels(what, buf) : 0;
    for (int i = 0; i < HCCL_OP_COUNT; i++) {
        force[i] = 0;
        apply(force, (hccl_op_type)i, all ? 1 : global);
    }
    if (!buf || !strchr(algo, '=')) {
        free(buf);
        return;
    }
    for (char *save = NULL, *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            /* The per-operation form names an operation in every part: a global part
             * mixed in ("level1:ring/allreduce=...") is not applied. */
            HCCL_WARN(COLL, "%s: \"%s\" names no operation (expected <op>=level0:...;level1:...) and is ignored",
                      what, tok);
            continue;
        }
        *eq = 0;
        size_t i;
        for (i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
            if (strcasecmp(tok, op_names[i].name) == 0) break;
        if (i == sizeof op_names / sizeof op_names[0]) {
            HCCL_WARN(COLL, "%s: unknown operation \"%s\" ignored", what, tok);
            continue;
        }
        int value = parse_levels(what, eq + 1);
        if (value && value != 1 && !hccl_algo_implements((hccl_algo_id)(value & 0xff), op_names[i].ops[0]))
            HCCL_INFO(COLL, "%s: %s has no such algorithm here; the selection chooses", what, op_names[i].name);
        for (int k = 0; k < 3 && !all; k++)
            if (force[op_names[i].ops[k]] != 1) apply(force, op_names[i].ops[k], value);
    }
    free(buf);
}

static int all_reference;

static void load(void)
{
    all_reference = hccl_param_read_int("HCCL_REFERENCE_ALGOS", 0) != 0;
    parse_into("HCCL_ALGO", hccl_param_read_str("HCCL_ALGO", NULL), all_reference, force);
}

void hccl_algo_config_parse(const char *algo, int *force_out)
{
    pthread_once(&once, load); /* HCCL_REFERENCE_ALGOS=1 still wins */
    parse_into("HcclCommConfig.hcclAlgo", algo, all_reference, force_out);
}

int hccl_algo_env_reference(hccl_op_type type)
{
    pthread_once(&once, load);
    return (unsigned)type < HCCL_OP_COUNT ? force[type] : 1;
}
