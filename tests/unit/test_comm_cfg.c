/*
 * test_comm_cfg.c - hccl_comm_cfg_resolve (src/core/comm.c).
 *
 * HCCL_DETERMINISTIC: true, 1 and upstream's "strict" turn it on in any case; false
 * and 0 leave it off quietly; any other text ("yes", "2", " true") is reported with a
 * WARN naming it and means off. HcclCommConfig.hcclDeterministic wins over the variable;
 * its 2 (upstream's strict) is on like 1, above 2 is refused.
 * HcclCommConfig.hcclAlgo: HCCL_ALGO's syntax for this communicator (an empty one
 * leaves HCCL_ALGO in charge); one without its NUL is refused.
 */
#include "core/comm.h"
#include "util/log.h"

#include "tinytest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *warned; /* the WARN the last resolve logged, or NULL */

static int det(const char *value, const HcclCommConfig *config)
{
    if (value) setenv("HCCL_DETERMINISTIC", value, 1);
    else unsetenv("HCCL_DETERMINISTIC");
    hccl_log(HCCL_LOG_WARN, HCCL_SUBSYS_INIT, __FILE__, __LINE__, "mark"); /* reset the last WARN */
    hccl_comm_cfg cfg;
    TT_ASSERT_EQ(hccl_comm_cfg_resolve(config, &cfg), HCCL_SUCCESS);
    const char *w = hccl_log_last_warn();
    warned = strcmp(w, "mark") ? w : NULL;
    return cfg.deterministic;
}

int main(void)
{
    setenv("HCCL_DEBUG", "NONE", 1); /* WARNs are still recorded for hccl_log_last_warn */
    const char *on[] = {"true", "TRUE", "True", "1", "strict", "STRICT"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        TT_ASSERT_MSG(det(on[i], NULL) == 1, "HCCL_DETERMINISTIC=%s is not on", on[i]);
        TT_ASSERT_MSG(!warned, "HCCL_DETERMINISTIC=%s: WARN %s", on[i], warned);
    }
    const char *off[] = {"false", "FALSE", "False", "0", ""};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        TT_ASSERT_MSG(det(off[i], NULL) == 0, "HCCL_DETERMINISTIC=%s is on", off[i]);
        TT_ASSERT_MSG(!warned, "HCCL_DETERMINISTIC=%s: WARN %s", off[i], warned);
    }
    TT_ASSERT(det(NULL, NULL) == 0 && !warned);
    const char *bad[] = {"yes", "2", " true", "true ", "on", "garbage"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TT_ASSERT_MSG(det(bad[i], NULL) == 0, "HCCL_DETERMINISTIC=%s is on", bad[i]);
        TT_ASSERT_MSG(warned && strstr(warned, "HCCL_DETERMINISTIC") && strstr(warned, bad[i]),
                      "HCCL_DETERMINISTIC=%s: no WARN naming it (%s)", bad[i], warned ? warned : "none");
    }
    /* The communicator's config wins over the variable, both ways. */
    HcclCommConfig config;
    HcclCommConfigInit(&config);
    config.hcclDeterministic = 0;
    TT_ASSERT(det("true", &config) == 0);
    config.hcclDeterministic = 1;
    TT_ASSERT(det("false", &config) == 1);
    /* 2, upstream's strict determinism, is on as 1 is (HCCL_DETERMINISTIC=strict too) */
    config.hcclDeterministic = 2;
    TT_ASSERT(det("false", &config) == 1 && !warned);
    config.hcclDeterministic = 3;
    {
        hccl_comm_cfg c3;
        TT_ASSERT_EQ(hccl_comm_cfg_resolve(&config, &c3), HCCL_E_PARA);
        TT_ASSERT(strstr(hccl_log_last_warn(), "hcclDeterministic") && strstr(hccl_log_last_warn(), "not 3"));
    }
    unsetenv("HCCL_DETERMINISTIC");

    hccl_comm_cfg cfg;
    HcclCommConfigInit(&config);
    TT_ASSERT_EQ(hccl_comm_cfg_resolve(&config, &cfg), HCCL_SUCCESS);
    TT_ASSERT(!cfg.algo_set);
    snprintf(config.hcclAlgo, sizeof config.hcclAlgo, "%s",
             "allreduce=level0:NA;level1:H-D_R/broadcast=level1:pipeline/alltoall=level1:ring");
    TT_ASSERT_EQ(hccl_comm_cfg_resolve(&config, &cfg), HCCL_SUCCESS);
    TT_ASSERT(cfg.algo_set);
    TT_ASSERT_EQ(cfg.algo_force[HCCL_OP_ALLREDUCE], HCCL_ALGO_FORCED(HCCL_ALGO_HD));
    TT_ASSERT_EQ(cfg.algo_force[HCCL_OP_BROADCAST], HCCL_ALGO_FORCED(HCCL_ALGO_CHAIN));
    TT_ASSERT_EQ(cfg.algo_force[HCCL_OP_ALLTOALLV], 1);
    TT_ASSERT_EQ(cfg.algo_force[HCCL_OP_ALLGATHER], 0);
    snprintf(config.hcclAlgo, sizeof config.hcclAlgo, "%s", "level0:NA;level1:NB");
    TT_ASSERT_EQ(hccl_comm_cfg_resolve(&config, &cfg), HCCL_SUCCESS);
    TT_ASSERT_EQ(cfg.algo_force[HCCL_OP_ALLGATHER], HCCL_ALGO_FORCED(HCCL_ALGO_BRUCK));
    TT_ASSERT_EQ(cfg.algo_force[HCCL_OP_ALLREDUCE], 0);
    memset(config.hcclAlgo, 'x', sizeof config.hcclAlgo);
    TT_ASSERT_EQ(hccl_comm_cfg_resolve(&config, &cfg), HCCL_E_PARA);
    TT_ASSERT(strstr(hccl_log_last_warn(), "hcclAlgo") != NULL);
    return tt_report("test_comm_cfg");
}
