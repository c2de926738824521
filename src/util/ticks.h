/*
 * ticks.h - timestamps for records (the flight recorder): cheap to take on every
 * operation, converted to CLOCK_MONOTONIC nanoseconds only when read out.
 *
 * On x86-64, where the kernel itself keeps time with the TSC (its clocksource is
 * "tsc": invariant, and synchronized between CPUs) or the CPU says its TSC is
 * invariant (a virtual machine whose kernel keeps time with the hypervisor's clock),
 * a timestamp is the TSC, read with rdtsc (24 cycles on the reference VM, against 56
 * for clock_gettime through kvm-clock); elsewhere it is hccl_now_ns(). Deadlines and
 * waits keep using hccl_now_ns().
 *
 * The TSC's rate is measured, not assumed: a hccl_ticks_ref pairs a TSC reading with
 * CLOCK_MONOTONIC now and takes the rate over the time since the first timestamp of
 * the process (at least HCCL_TICKS_CALIBRATE_NS: a reference taken sooner waits until
 * then, once per process). Conversions are anchored at the reference, so recent
 * timestamps are the most exact; older ones are off by the clock's slewing since
 * (parts per million).
 */
#ifndef HCCL_UTIL_TICKS_H
#define HCCL_UTIL_TICKS_H

#include <stdint.h>

#define HCCL_TICKS_CALIBRATE_NS 10000000ull

/* A timestamp (never 0: 0 is free for "none"). */
uint64_t hccl_ticks(void);
/* hccl_ticks(), or 0 while the process has taken none (the first one decides the
 * source, reading sysfs: not for paths that must stay cheap and lock-free, such as a
 * log line; anything later than 0 compares as later than such a line). */
uint64_t hccl_ticks_if_started(void);

typedef struct hccl_ticks_ref {
    uint64_t ticks, ns;
    double ns_per_tick;
} hccl_ticks_ref;

/* A reference for conversions, taken now. */
void hccl_ticks_ref_now(hccl_ticks_ref *r);
/* The CLOCK_MONOTONIC time (hccl_now_ns()) of timestamp t. */
uint64_t hccl_ticks_ns(const hccl_ticks_ref *r, uint64_t t);

/* 1 when timestamps are the TSC. Tests: hccl_ticks_use_clock() before the first
 * timestamp makes them hccl_now_ns() for the rest of the process. */
int hccl_ticks_are_tsc(void);
void hccl_ticks_use_clock(void);

#endif
