/*
 * test_acl_nospin.c - streams and events with spinning disabled (ACL_HOST_SPIN_US=0,
 * read once per process, so this is its own executable): every hand-off goes through
 * the condition variables, which must neither lose a wake-up nor stall.
 */
#include "test_acl_util.h"
#include "tinytest.h"

#include <acl/acl.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static aclError inc_task(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_ACQ_REL);
    return ACL_SUCCESS;
}

enum { THREADS = 8, ITERS = 2000 };

/* Each thread ping-pongs between two streams linked by an event. */
static void *pingpong(void *p)
{
    int *fails = p;
    aclrtStream a, b;
    aclrtEvent ev;
    int n = 0;
    *fails += aclrtCreateStream(&a) != ACL_SUCCESS;
    *fails += aclrtCreateStream(&b) != ACL_SUCCESS;
    *fails += aclrtCreateEvent(&ev) != ACL_SUCCESS;
    for (int i = 0; i < ITERS; i++) {
        *fails += aclrtLaunchHostTask(a, inc_task, &n) != ACL_SUCCESS;
        *fails += aclrtRecordEvent(ev, a) != ACL_SUCCESS;
        *fails += aclrtStreamWaitEvent(b, ev) != ACL_SUCCESS;
        *fails += aclrtLaunchHostTask(b, inc_task, &n) != ACL_SUCCESS;
        if (i % 3 == 0) *fails += aclrtSynchronizeEvent(ev) != ACL_SUCCESS;
        *fails += aclrtSynchronizeStream(b) != ACL_SUCCESS;
        *fails += __atomic_load_n(&n, __ATOMIC_ACQUIRE) != 2 * (i + 1);
    }
    *fails += aclrtDestroyEvent(ev) != ACL_SUCCESS;
    *fails += aclrtDestroyStream(a) != ACL_SUCCESS;
    *fails += aclrtDestroyStream(b) != ACL_SUCCESS;
    return NULL;
}

int main(void)
{
    setenv("ACL_HOST_SPIN_US", "0", 1);
    pthread_t t[THREADS];
    int fails[THREADS] = {0};
    double t0 = now_s();
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, pingpong, &fails[i]);
    int total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        total += fails[i];
    }
    double dt = now_s() - t0;
    TT_ASSERT_EQ(total, 0);
    TT_ASSERT_MSG(dt < 20.0, "took %.2f s", dt);
    printf("no spin: %d event ping-pongs on %d threads in %.3f s\n", THREADS * ITERS, THREADS, dt);
    return tt_report("test_acl_nospin");
}
