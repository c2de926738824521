/*
 * refs.h - reference counts whose owner may be freed as soon as the count reaches 0
 * (communicators, streams), and the wait of whoever frees it.
 *
 * The last put must not touch the owner any more, so it wakes a waiter through
 * state shared by every owner of a kind, an hccl_drain: the waiter counts itself in
 * `waiting` before it checks the count, the putter looks at `waiting` after its
 * decrement, both seq_cst, so one of them sees the other (a put that sees no waiter
 * left a 0 the waiter's check will see). Taking and dropping a reference is one
 * atomic operation when nobody waits.
 */
#ifndef HCCL_UTIL_REFS_H
#define HCCL_UTIL_REFS_H

#include <pthread.h>
#include <time.h>

typedef struct hccl_drain {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a count reached 0 while somebody waited */
    int waiting;       /* atomic */
} hccl_drain;
#define HCCL_DRAIN_INITIALIZER {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

void hccl_ref_get(int *refs);
void hccl_ref_put(hccl_drain *d, int *refs);
/* Until *refs is 0, or until deadline (CLOCK_REALTIME; NULL: none). Returns 0 when it
 * is 0, else ETIMEDOUT. */
int hccl_ref_wait(hccl_drain *d, const int *refs, const struct timespec *deadline);
/* In a child after fork: the parent's waiters do not exist here. */
void hccl_drain_reset(hccl_drain *d);

#endif
