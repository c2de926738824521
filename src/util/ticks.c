/*
 * ticks.c - timestamps for records (ticks.h).
 */
#include "util/ticks.h"

#include "util/util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

enum { MODE_UNSET, MODE_TSC, MODE_CLOCK };

static int mode; /* atomic: MODE_*, set once */
static uint64_t base_ticks, base_ns; /* the first reading (TSC only), before mode is published */

#if HAVE_TSC
static int kernel_uses_tsc(void)
{
    char buf[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return 0;
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    return ok && strcmp(buf, "tsc\n") == 0;
}

/* The CPU says its TSC is invariant (CPUID 0x80000007, EDX bit 8: one rate in every
 * power state, the same on every CPU). A virtual machine's kernel may keep time with
 * its hypervisor's clock all the same (kvm-clock on the reference VM, whose vDSO read
 * costs 56 cycles against rdtsc's 24; its two CPUs' TSCs differed by at most 21
 * cycles in a ping-pong), and a timestamp read that way cost the 8-byte blocking
 * AllReduce 0.04-0.06 us of 0.32-0.38 (docs/performance.md, 2026-12-07). */
static int cpu_tsc_invariant(void)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d >> 8 & 1u);
}
#endif

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;

/* A process may fork while another thread decides the mode (holding init_mu): the
 * child, where that thread does not exist, would wait for it at its first timestamp. */
static void ticks_prefork(void) { pthread_mutex_lock(&init_mu); }
static void ticks_postfork(void) { pthread_mutex_unlock(&init_mu); }
__attribute__((constructor)) static void ticks_install_atfork(void)
{
    pthread_atfork(ticks_prefork, ticks_postfork, ticks_postfork);
}

#if HAVE_TSC
/* CLOCK_MONOTONIC and the TSC at (nearly) one instant: the clock read on both sides
 * of the TSC's, the closest of a few tries (a preemption in between would skew every
 * conversion by its length). */
static void read_pair(uint64_t *ns, uint64_t *ticks)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8 && best > 2000; i++) {
        uint64_t a = hccl_now_ns(), t = __rdtsc(), b = hccl_now_ns();
        if (b - a < best) {
            best = b - a;
            *ns = a + (b - a) / 2;
            *ticks = t;
        }
    }
}
#endif

static int set_mode(int want)
{
    pthread_mutex_lock(&init_mu);
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    if (m == MODE_UNSET) {
#if HAVE_TSC
        m = want ? want : (kernel_uses_tsc() || cpu_tsc_invariant() ? MODE_TSC : MODE_CLOCK);
        if (m == MODE_TSC) read_pair(&base_ns, &base_ticks);
#else
        m = want ? want : MODE_CLOCK;
#endif
        __atomic_store_n(&mode, m, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&init_mu);
    return m;
}

static inline int get_mode(void)
{
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    return m != MODE_UNSET ? m : set_mode(0);
}

uint64_t hccl_ticks(void)
{
#if HAVE_TSC
    if (__builtin_expect(get_mode() == MODE_TSC, 1)) return __rdtsc();
#else
    (void)get_mode();
#endif
    return hccl_now_ns();
}

uint64_t hccl_ticks_if_started(void)
{
    return __atomic_load_n(&mode, __ATOMIC_ACQUIRE) != MODE_UNSET ? hccl_ticks() : 0;
}

int hccl_ticks_are_tsc(void) { return get_mode() == MODE_TSC; }

void hccl_ticks_use_clock(void) { (void)set_mode(MODE_CLOCK); }

void hccl_ticks_ref_now(hccl_ticks_ref *r)
{
    r->ns_per_tick = 1.0;
    if (get_mode() != MODE_TSC) {
        r->ns = r->ticks = hccl_now_ns();
        return;
    }
#if HAVE_TSC
    for (;;) {
        read_pair(&r->ns, &r->ticks);
        uint64_t since = r->ns - base_ns;
        if (since >= HCCL_TICKS_CALIBRATE_NS && r->ticks > base_ticks) break;
        uint64_t left = since < HCCL_TICKS_CALIBRATE_NS ? HCCL_TICKS_CALIBRATE_NS - since : 1000000u;
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
    }
    r->ns_per_tick = (double)(r->ns - base_ns) / (double)(r->ticks - base_ticks);
#endif
}

uint64_t hccl_ticks_ns(const hccl_ticks_ref *r, uint64_t t)
{
    if (t <= r->ticks) {
        uint64_t back = (uint64_t)((double)(r->ticks - t) * r->ns_per_tick);
        return back < r->ns ? r->ns - back : 0;
    }
    return r->ns + (uint64_t)((double)(t - r->ticks) * r->ns_per_tick);
}
