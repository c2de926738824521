/*
 * test_init_interrupt.c - communicator creation consults the application's interrupt
 * check (HcclSetInterruptCheck) while it waits, as operations do: a rank whose peers
 * never come fails within a few hundred ms of the check asking (HCCL_E_INTERNAL, "
 * interrupted by the application"), not after HCCL_CONNECT_TIMEOUT, and leaves no
 * descriptor behind. Both waits of the join: the connect retries to a root that is
 * not there (HcclCommInitFromEnv of rank 1) and the wait for the root's answer
 * (HcclCommInitRootInfo of 2 ranks, the other never comes).
 */
#include <hccl/hccl.h>
#include <hccl/hccl_ext.h>

#include "tinytest.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t hccl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t stop_at; /* the check asks to stop from then on (0: never) */
static unsigned calls;

static int check(void)
{
    calls++;
    return stop_at && hccl_now_ns() >= stop_at;
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* Runs init with the check asking 300 ms in; returns its result, *ms how long it took. */
static HcclResult interrupted(HcclResult (*init)(void *), void *arg, double *ms)
{
    uint64_t t0 = hccl_now_ns();
    stop_at = t0 + 300000000ull;
    calls = 0;
    HcclResult r = init(arg);
    *ms = (double)(hccl_now_ns() - t0) / 1e6;
    stop_at = 0;
    return r;
}

static HcclResult from_env(void *arg)
{
    HcclComm c = NULL;
    (void)arg;
    return HcclCommInitFromEnv(NULL, &c);
}

static HcclResult root_info(void *arg)
{
    HcclComm c = NULL;
    return HcclCommInitRootInfo(2, (HcclRootInfo *)arg, 0, &c);
}

int main(void)
{
    setenv("HCCL_CONNECT_TIMEOUT", "20", 1);
    TT_ASSERT_EQ(HcclSetInterruptCheck(check), HCCL_SUCCESS);
    double ms;

    /* Rank 1 of a launch whose rank 0 never opens the root: connect retries. */
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "1", 1); /* the root at port 2: nothing listens there */
    int fds = open_fds();
    HcclResult r = interrupted(from_env, NULL, &ms);
    TT_ASSERT_EQ(r, HCCL_E_INTERNAL);
    TT_ASSERT_MSG(ms < 2000, "took %.0f ms", ms);
    TT_ASSERT_MSG(strstr(HcclGetLastErrorMessage(), "interrupted by the application") != NULL, "%s",
                  HcclGetLastErrorMessage());
    TT_ASSERT_EQ(open_fds(), fds);
    TT_ASSERT(calls >= 1);

    /* 2 ranks at a root of this process; the other never comes: the wait for the answer. */
    HcclRootInfo info;
    TT_ASSERT_EQ(HcclGetRootInfo(&info), HCCL_SUCCESS);
    fds = open_fds(); /* the root thread's listener stays: it goes on refusing the group */
    r = interrupted(root_info, &info, &ms);
    TT_ASSERT_EQ(r, HCCL_E_INTERNAL);
    TT_ASSERT_MSG(ms < 2000, "took %.0f ms", ms);
    TT_ASSERT_MSG(strstr(HcclGetLastErrorMessage(), "interrupted by the application") != NULL, "%s",
                  HcclGetLastErrorMessage());
    usleep(300000); /* the root thread has read the report by then */
    TT_ASSERT_EQ(open_fds(), fds);
    /* Used again, the root info is refused at once with the reason. */
    HcclComm c = NULL;
    uint64_t t0 = hccl_now_ns();
    TT_ASSERT(HcclCommInitRootInfo(2, &info, 0, &c) != HCCL_SUCCESS);
    TT_ASSERT_MSG(hccl_now_ns() - t0 < 2000000000ull, "took %llu ms", (unsigned long long)((hccl_now_ns() - t0) / 1000000));

    /* Without interruption creation still works (the check is called, says go on). */
    int32_t dev[2] = {0, 1};
    HcclComm cs[2];
    TT_ASSERT_EQ(HcclCommInitAll(2, dev, cs), HCCL_SUCCESS);
    for (int i = 0; i < 2; i++) HcclCommDestroy(cs[i]);
    HcclSetInterruptCheck(NULL);
    return tt_report("test_init_interrupt");
}
