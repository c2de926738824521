/*
 * refs.c - reference counts with a drain (see refs.h).
 */
#include "util/refs.h"

#include <errno.h>

void hccl_ref_get(int *refs) { __atomic_add_fetch(refs, 1, __ATOMIC_SEQ_CST); }

void hccl_ref_put(hccl_drain *d, int *refs)
{
    if (__atomic_sub_fetch(refs, 1, __ATOMIC_SEQ_CST) != 0) return;
    if (!__atomic_load_n(&d->waiting, __ATOMIC_SEQ_CST)) return;
    pthread_mutex_lock(&d->mu);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

int hccl_ref_wait(hccl_drain *d, const int *refs, const struct timespec *deadline)
{
    int rc = 0;
    pthread_mutex_lock(&d->mu);
    __atomic_add_fetch(&d->waiting, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(refs, __ATOMIC_SEQ_CST) > 0) {
        if (!deadline) {
            pthread_cond_wait(&d->cv, &d->mu);
        } else if (pthread_cond_timedwait(&d->cv, &d->mu, deadline) == ETIMEDOUT) {
            if (__atomic_load_n(refs, __ATOMIC_SEQ_CST) > 0) rc = ETIMEDOUT;
            break;
        }
    }
    __atomic_sub_fetch(&d->waiting, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

void hccl_drain_reset(hccl_drain *d)
{
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->waiting = 0;
}
