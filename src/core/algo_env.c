/*
 * algo_env.c - HCCL_ALGO: the upstream syntax, honoured with the algorithms we have.
 *
 *   HCCL_ALGO="level0:NA;level1:ring"                       every operation
 *   HCCL_ALGO="allreduce=level0:NA;level1:H-D_R/allgather=level0:NA;level1:ring"
 *
 * A level set to "ring" (or "pairwise", for alltoall) selects the reference
 * algorithms for that operation; "NA", "fullmesh", "mesh", "direct" or an empty
 * value leave the choice to the cost-based selection. Values we do not implement yet
 * (H-D_R, NHR, NB, pipeline, star) also leave it to the selection, with one INFO line.
 * HCCL_REFERENCE_ALGOS=1 forces the reference algorithms everywhere (for tests).
 */
#include "core/comm.h"

#include "util/log.h"
#include "util/param.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int force_reference[HCCL_OP_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct {
    const char *name;
    hccl_op_type ops[2];
} op_names[] = {{"allreduce", {HCCL_OP_ALLREDUCE, HCCL_OP_ALLREDUCE}},
                {"allgather", {HCCL_OP_ALLGATHER, HCCL_OP_ALLGATHER_V}},
                {"reducescatter", {HCCL_OP_REDUCE_SCATTER, HCCL_OP_REDUCE_SCATTER_V}},
                {"broadcast", {HCCL_OP_BROADCAST, HCCL_OP_BROADCAST}},
                {"reduce", {HCCL_OP_REDUCE, HCCL_OP_REDUCE}},
                {"alltoall", {HCCL_OP_ALLTOALL, HCCL_OP_ALLTOALLV}}};

/* "level0:NA;level1:ring" -> 1 when some level asks for the reference algorithms. */
static int parse_levels(const char *spec)
{
    int ref = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *v = strchr(tok, ':');
        v = v ? v + 1 : tok;
        if (strcasecmp(v, "ring") == 0 || strcasecmp(v, "pairwise") == 0) ref = 1;
        else if (*v && strcasecmp(v, "NA") && strcasecmp(v, "fullmesh") && strcasecmp(v, "mesh") &&
                 strcasecmp(v, "direct"))
            HCCL_INFO(COLL, "HCCL_ALGO: %s is not implemented here; the selection chooses", v);
    }
    return ref;
}

static void load(void)
{
    int all_ref = hccl_param_read_int("HCCL_REFERENCE_ALGOS", 0) != 0;
    const char *algo = hccl_param_read_str("HCCL_ALGO", NULL);
    if (algo && !strchr(algo, '=')) all_ref |= parse_levels(algo);
    for (int i = 0; i < HCCL_OP_COUNT; i++) force_reference[i] = all_ref;
    if (!algo || !strchr(algo, '=')) return;
    char buf[1600];
    snprintf(buf, sizeof buf, "%s", algo);
    for (char *save = NULL, *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) continue;
        *eq = 0;
        size_t i;
        for (i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
            if (strcasecmp(tok, op_names[i].name) == 0) break;
        if (i == sizeof op_names / sizeof op_names[0]) {
            HCCL_WARN(COLL, "HCCL_ALGO: unknown operation \"%s\" ignored", tok);
            continue;
        }
        int ref = parse_levels(eq + 1);
        force_reference[op_names[i].ops[0]] |= ref;
        force_reference[op_names[i].ops[1]] |= ref;
        if (op_names[i].ops[0] == HCCL_OP_ALLTOALL) force_reference[HCCL_OP_ALLTOALLVC] |= ref;
    }
}

int hccl_algo_env_reference(hccl_op_type type)
{
    pthread_once(&once, load);
    return (unsigned)type < HCCL_OP_COUNT ? force_reference[type] : 1;
}
