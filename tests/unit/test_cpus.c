/*
 * test_cpus.c - util/cpus.h: the crowded waits' choice of a CPU to move to (counts
 * of known ranks inside the mask, at least 2 more on this rank's CPU than on the
 * emptiest, the lowest of equals) and the move itself (the thread runs on the
 * target at once, and gets the mask it is given back), where the process may use 2
 * CPUs or more.
 */
#include "util/cpus.h"
#include "tinytest.h"

#include <stdio.h>

static cpu_set_t mask_of(int lo, int hi)
{
    cpu_set_t m;
    CPU_ZERO(&m);
    for (int c = lo; c <= hi; c++) CPU_SET(c, &m);
    return m;
}

static void choice(void)
{
    cpu_set_t two = mask_of(0, 1), four = mask_of(0, 3);
    unsigned here = 99;
    const int three_one[] = {0, 0, 0, 1};
    TT_ASSERT_EQ(hccl_cpus_emptier(three_one, 4, 0, &two, &here), 1);
    TT_ASSERT_EQ(here, 3u);
    TT_ASSERT_EQ(hccl_cpus_emptier(three_one, 4, 1, &two, &here), -1); /* the emptier one stays */
    TT_ASSERT_EQ(here, 1u);
    const int two_two[] = {0, 1, 0, 1};
    TT_ASSERT_EQ(hccl_cpus_emptier(two_two, 4, 0, &two, &here), -1);
    TT_ASSERT_EQ(here, 2u);
    const int unknown[] = {0, 0, -1, 1}; /* 2 against 1: not worth a move */
    TT_ASSERT_EQ(hccl_cpus_emptier(unknown, 4, 0, &two, &here), -1);
    const int eight[] = {0, 0, 0, 0, 0, 1, 1, 1}; /* 5 against 3 */
    TT_ASSERT_EQ(hccl_cpus_emptier(eight, 8, 0, &two, &here), 1);
    TT_ASSERT_EQ(here, 5u);
    const int seven[] = {0, 0, 0, 0, 1, 1, 1}; /* 4 against 3 */
    TT_ASSERT_EQ(hccl_cpus_emptier(seven, 7, 0, &two, &here), -1);
    TT_ASSERT_EQ(hccl_cpus_emptier(two_two, 4, 0, &four, &here), 2); /* lowest empty CPU */
    const int outside[] = {0, 0, 5, 5, 5}; /* CPU 5 is not in the mask: not counted */
    TT_ASSERT_EQ(hccl_cpus_emptier(outside, 5, 0, &two, &here), 1);
    TT_ASSERT_EQ(hccl_cpus_emptier(outside, 5, 5, &two, &here), -1); /* not in the mask */
    TT_ASSERT_EQ(here, 0u);
    TT_ASSERT_EQ(hccl_cpus_emptier(three_one, 4, -1, &two, &here), -1);
}

static void hop(void)
{
    cpu_set_t was;
    TT_ASSERT_EQ(sched_getaffinity(0, sizeof was, &was), 0);
    if (CPU_COUNT(&was) < 2) {
        printf("  hop: skipped, this process may use one CPU\n");
        return;
    }
    int from = sched_getcpu(), target = -1;
    for (int c = 0; c < CPU_SETSIZE && target < 0; c++)
        if (CPU_ISSET(c, &was) && c != from) target = c;
    cpu_set_t to, now;
    CPU_ZERO(&to);
    CPU_SET(target, &to);
    /* Given back a mask of the target alone, so that nothing moves it on before the
     * look: it must be there. */
    TT_ASSERT_EQ(hccl_cpus_hop(&to, &to), 0);
    TT_ASSERT_EQ(sched_getcpu(), target);
    /* Back (where it goes next is the kernel's), with the mask it had. */
    CPU_ZERO(&to);
    CPU_SET(from, &to);
    TT_ASSERT_EQ(hccl_cpus_hop(&to, &was), 0);
    TT_ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
    TT_ASSERT(CPU_EQUAL(&now, &was));
}

int main(void)
{
    choice();
    hop();
    return tt_report("test_cpus");
}
