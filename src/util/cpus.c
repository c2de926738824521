/*
 * cpus.c - moving the calling thread, and the crowded waits' choice of a CPU (cpus.h).
 */
#include "util/cpus.h"

#include <string.h>

int hccl_cpus_hop(const cpu_set_t *to, const cpu_set_t *was)
{
    if (sched_setaffinity(0, sizeof *to, to) != 0) return -1;
    sched_setaffinity(0, sizeof *was, was);
    return 0;
}

int hccl_cpus_emptier(const int *cpu_of, uint32_t n, int mine, const cpu_set_t *mask, unsigned *on_mine)
{
    *on_mine = 0;
    if (mine < 0 || mine >= CPU_SETSIZE || !CPU_ISSET(mine, mask)) return -1;
    uint16_t count[CPU_SETSIZE];
    memset(count, 0, sizeof count);
    for (uint32_t j = 0; j < n; j++)
        if (cpu_of[j] >= 0 && cpu_of[j] < CPU_SETSIZE && CPU_ISSET(cpu_of[j], mask)) count[cpu_of[j]]++;
    int least = mine;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, mask) && count[c] < count[least]) least = c;
    *on_mine = count[mine];
    return count[mine] >= count[least] + 2 ? least : -1;
}
