/*
 * test_spin.c - util/spin.h: mutual exclusion under contention, with more threads
 * than cores (the waiters' yield path) and with a holder that keeps the lock across
 * a sleep (waiters must still get in afterwards). Run under TSan by
 * scripts/sanitize.sh, which also checks that the lock orders memory.
 */
#include "util/spin.h"
#include "tinytest.h"

#include <pthread.h>
#include <time.h>

#define THREADS 6
#define ROUNDS 100000

static hccl_spin lock = HCCL_SPIN_INITIALIZER;
static long counter;     /* plain: only touched under the lock */
static long shadow[2];   /* two words that must always be equal under the lock */

static pthread_barrier_t start; /* every thread starts at once: real contention */

static void *worker(void *arg)
{
    (void)arg;
    long mine = 0;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ROUNDS; i++) {
        hccl_spin_lock(&lock);
        long v = counter; /* read, dawdle, write: two threads inside would lose updates */
        for (volatile int k = 0; k < 20; k++) {
        }
        counter = v + 1;
        shadow[0]++;
        shadow[1]++;
        if (shadow[0] != shadow[1]) mine++;
        hccl_spin_unlock(&lock);
    }
    return (void *)mine;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        hccl_spin_lock(&lock);
        struct timespec ts = {0, 2000000}; /* 2 ms: every other thread piles up */
        nanosleep(&ts, NULL);
        counter++;
        hccl_spin_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS + 1];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    pthread_create(&t[THREADS], NULL, sleeper, NULL);
    long torn = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        torn += (long)r;
    }
    pthread_join(t[THREADS], NULL);
    TT_ASSERT_EQ(counter, (long)THREADS * ROUNDS + 5);
    TT_ASSERT_EQ(torn, 0L);
    TT_ASSERT_EQ(shadow[0], (long)THREADS * ROUNDS);
    hccl_spin_lock(&lock); /* free again */
    hccl_spin_unlock(&lock);
    TT_ASSERT_EQ(__atomic_load_n(&lock.held, __ATOMIC_RELAXED), 0);
    return tt_report("test_spin");
}
