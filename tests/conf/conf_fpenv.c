/*
 * conf_fpenv.c - reductions compute in the default floating-point environment, not in
 * the calling thread's: 2 ranks as threads (HcclCommInitAll) that set flush-to-zero and
 * denormals-are-zero (what torch.set_flush_denormal(True) does), rounding upward and an
 * unmasked invalid-operation exception, then run fp32 AllReduces on the NULL stream (on
 * the calling thread) and on a stream (the calling or the worker thread, as timing
 * decides). The results must be those of round to nearest even with subnormals, and
 * inf + -inf must give NaN without a SIGFPE; the threads' environments are left as they
 * set them.
 */
#include <acl/acl.h>
#include <fenv.h>
#include <hccl/hccl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#define N 2
#define COUNT 4
static HcclComm comms[N];
static int bad[N], env_changed[N];

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void *rank_main(void *arg)
{
    int r = (int)(long)arg;
    aclrtSetDevice(r);
    aclrtStream st;
    aclrtCreateStream(&st);
    float *in, *out;
    aclrtMalloc((void **)&in, 64, ACL_MEM_MALLOC_NORMAL_ONLY);
    aclrtMalloc((void **)&out, 64, ACL_MEM_MALLOC_NORMAL_ONLY);
    /* start the stream's worker before the environment changes */
    HcclAllReduce(in, out, COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comms[r], st);
    aclrtSynchronizeStream(st);
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() | 0x8040u); /* FTZ and DAZ */
#endif
    fesetround(FE_UPWARD);
    feenableexcept(FE_INVALID);
    for (int it = 0; it < 20; it++) {
        /* 1e-40 + 1e-40 (subnormal), 1 + 2^-30 (rounds to 1 to nearest, up otherwise),
         * inf + -inf (NaN: an invalid operation), -1e-40 + 1e-40 (+0) */
        in[0] = 1e-40f;
        in[1] = r == 0 ? 1.0f : 0x1p-30f;
        in[2] = r == 0 ? INFINITY : -INFINITY;
        in[3] = r == 0 ? -1e-40f : 1e-40f;
        HcclResult res = HcclAllReduce(in, out, COUNT, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comms[r],
                                       it % 2 ? st : NULL);
        if (it % 2 && res == HCCL_SUCCESS) {
            if (it % 4 == 1) usleep(2000); /* past ACL_STREAM_DEFER_US: the worker runs it */
            res = aclrtSynchronizeStream(st) == ACL_SUCCESS ? HCCL_SUCCESS : HCCL_E_INTERNAL;
        }
        if (res != HCCL_SUCCESS || bits(out[0]) != 2 * bits(1e-40f) /* exact */ || bits(out[1]) != bits(1.0f) ||
            !isnan(out[2]) || bits(out[3]) != 0)
            bad[r]++;
    }
    env_changed[r] = fegetround() != FE_UPWARD || !(fegetexcept() & FE_INVALID);
#if defined(__x86_64__) || defined(__i386__)
    env_changed[r] |= (_mm_getcsr() & 0x8040u) != 0x8040u;
#endif
    fedisableexcept(FE_INVALID);
    fesetround(FE_TONEAREST);
    aclrtFree(in);
    aclrtFree(out);
    aclrtDestroyStream(st);
    return NULL;
}

int main(void)
{
    int32_t devs[N] = {0, 1};
    if (HcclCommInitAll(N, devs, comms) != HCCL_SUCCESS) {
        fprintf(stderr, "FAIL: HcclCommInitAll(%d)\n", N);
        return 1;
    }
    pthread_t th[N];
    for (long r = 0; r < N; r++) pthread_create(&th[r], NULL, rank_main, (void *)r);
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
    int failed = 0;
    for (int r = 0; r < N; r++) {
        if (bad[r]) fprintf(stderr, "FAIL: rank %d: %d of 20 AllReduces not computed in the default environment\n", r, bad[r]);
        if (env_changed[r]) fprintf(stderr, "FAIL: rank %d: the thread's floating-point environment was changed\n", r);
        failed += bad[r] || env_changed[r];
        HcclCommDestroy(comms[r]);
    }
    printf("conf_fpenv: %s\n", failed ? "FAILED" : "ok");
    return failed ? 1 : 0;
}
