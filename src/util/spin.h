/*
 * spin.h - a lock for critical sections of a few dozen instructions that every
 * operation passes (the communicator registry, the flight recorder), where a
 * pthread mutex's two atomic read-modify-writes (lock and unlock) are a visible part
 * of an 8-byte operation: taking it is one exchange, releasing it a plain store.
 *
 * Never hold it across anything that blocks or takes long (I/O, a condition wait,
 * another lock that can block): a waiter spins a little and then yields the CPU each
 * round, so with more threads than cores a preempted holder gets a CPU back, but a
 * holder that sleeps would make waiters burn theirs.
 */
#ifndef HCCL_UTIL_SPIN_H
#define HCCL_UTIL_SPIN_H

/* The pause of a busy-wait loop (spin locks, the transports' and streams' polls). */
static inline void hccl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

typedef struct hccl_spin {
    int held; /* atomic: 0 free, 1 held */
} hccl_spin;
#define HCCL_SPIN_INITIALIZER {0}

void hccl_spin_lock_slow(hccl_spin *l);

static inline void hccl_spin_lock(hccl_spin *l)
{
    if (__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE)) hccl_spin_lock_slow(l);
}

static inline void hccl_spin_unlock(hccl_spin *l) { __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE); }

#endif
