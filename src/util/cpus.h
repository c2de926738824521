/*
 * cpus.h - where the calling thread runs: moving it to other CPUs for a moment, and
 * the choice of crowded waits (core/net.c) of where to move, apart from the waits.
 */
#ifndef HCCL_UTIL_CPUS_H
#define HCCL_UTIL_CPUS_H

#include <sched.h>
#include <stdint.h>

/* Move the calling thread to a CPU of `to` now (the kernel migrates it at once when
 * its CPU is not in the mask), then give it back the mask `was`: it stays where it
 * went until the kernel's balancer decides otherwise. 0 when it moved. */
int hccl_cpus_hop(const cpu_set_t *to, const cpu_set_t *was);

/* Ranks of one host spread over the CPUs of `mask`: cpu_of[j] is where rank j last
 * ran (-1: not known; CPUs outside the mask are not counted). For a rank on CPU
 * `mine` (counted in cpu_of): the emptiest CPU of the mask (the lowest of equals) when
 * it has at least 2 ranks fewer than `mine`, else -1 (also when `mine` is not in the
 * mask). *on_mine: how many ranks `mine` has. */
int hccl_cpus_emptier(const int *cpu_of, uint32_t n, int mine, const cpu_set_t *mask, unsigned *on_mine);

#endif
