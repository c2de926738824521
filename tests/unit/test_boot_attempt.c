/*
 * test_boot_attempt.c - boot/boot.c: the record of ranks that failed in this process
 * (hccl_boot_rank_failed, read by hccl_boot_peer_failed) with the ranks' attempts
 * (hccl_boot_attempt_begin/end), in every order of begin, failure and check: a rank
 * table's group has the same identity on every try, so a retry from the same table
 * (threads as ranks) must not find the failures of the try before, while the siblings
 * of the failed try see it at once, those that begin after it failed (threads started
 * later) included. Groups that tell no attempts (root info) see every record, as before.
 */
#include "boot/boot.h"
#include "tinytest.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

static hccl_boot_ident group(uint64_t n)
{
    hccl_boot_ident id = {0xfeedull + n, 0x1000ull + n, 0};
    return id;
}

static void fail(const hccl_boot_ident *g, uint32_t rank)
{
    char why[64];
    snprintf(why, sizeof why, "rank %u's reason", rank);
    hccl_boot_rank_failed(g, rank, HCCL_E_TIMEOUT, why);
}

/* Whether self sees a failure, and then that it is rank's, with its result and reason. */
static int sees(const hccl_boot_ident *g, uint32_t self, uint32_t rank)
{
    uint32_t who = UINT32_MAX;
    HcclResult res = HCCL_SUCCESS;
    char why[64] = {0}, want[64];
    if (!hccl_boot_peer_failed(g, self, &who, &res, why, sizeof why)) return 0;
    snprintf(want, sizeof want, "rank %u's reason", rank);
    TT_ASSERT_MSG(who == rank && res == HCCL_E_TIMEOUT && !strcmp(why, want), "rank %u sees rank %u (%d, %s)", self,
                  who, (int)res, why);
    return 1;
}

int main(void)
{
    /* A rank that failed and returned before its sibling began (a thread started
     * later): the sibling sees it at once, and again in the same attempt. */
    hccl_boot_ident g = group(1);
    hccl_boot_attempt_begin(&g, 0);
    fail(&g, 0);
    hccl_boot_attempt_end(&g, 0);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 0, NULL, NULL, NULL, 0)); /* not its own */
    hccl_boot_attempt_begin(&g, 1);
    TT_ASSERT(sees(&g, 1, 0));
    TT_ASSERT(sees(&g, 1, 0));
    hccl_boot_attempt_end(&g, 1);
    /* The retry: rank 1 begins again first, then rank 0; neither sees the old failure. */
    hccl_boot_attempt_begin(&g, 1);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
    hccl_boot_attempt_begin(&g, 0);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
    TT_ASSERT(!hccl_boot_peer_failed(&g, 0, NULL, NULL, NULL, 0));
    /* ... and a failure in the retry is seen again. */
    fail(&g, 0);
    TT_ASSERT(sees(&g, 1, 0));
    hccl_boot_attempt_end(&g, 0);
    hccl_boot_attempt_end(&g, 1);

    /* One try of three: rank 0 fails while rank 1 waits; rank 1 gives up; rank 2,
     * started later, still sees rank 0's failure at once. Then the retry, in the order
     * 1, 2, 0: nobody sees the old failure. */
    g = group(2);
    hccl_boot_attempt_begin(&g, 0);
    hccl_boot_attempt_begin(&g, 1);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
    fail(&g, 0);
    TT_ASSERT(sees(&g, 1, 0));
    hccl_boot_attempt_end(&g, 1);
    hccl_boot_attempt_end(&g, 0);
    hccl_boot_attempt_begin(&g, 2);
    TT_ASSERT(sees(&g, 2, 0));
    hccl_boot_attempt_end(&g, 2);
    hccl_boot_attempt_begin(&g, 1);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
    hccl_boot_attempt_begin(&g, 2);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 2, NULL, NULL, NULL, 0));
    hccl_boot_attempt_begin(&g, 0);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
    hccl_boot_attempt_end(&g, 0);
    hccl_boot_attempt_end(&g, 1);
    hccl_boot_attempt_end(&g, 2);

    /* The failed rank begins its retry first: its old failure is stale for everyone,
     * a rank that never began included. */
    g = group(3);
    hccl_boot_attempt_begin(&g, 0);
    hccl_boot_attempt_begin(&g, 1);
    fail(&g, 0);
    hccl_boot_attempt_end(&g, 0);
    hccl_boot_attempt_end(&g, 1);
    hccl_boot_attempt_begin(&g, 0);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 2, NULL, NULL, NULL, 0));
    hccl_boot_attempt_begin(&g, 1);
    TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
    hccl_boot_attempt_end(&g, 0);
    hccl_boot_attempt_end(&g, 1);

    /* A try where a call named no rank (a bad rank id), before or after the others
     * began: the ranks waiting for the missing one time out; the retry, whose rank 2
     * (that call's) begins first, does not see their failures. */
    for (int before = 0; before < 2; before++) {
        g = group(4 + (uint64_t)before);
        if (before) hccl_boot_attempt_end(&g, UINT32_MAX);
        hccl_boot_attempt_begin(&g, 0);
        hccl_boot_attempt_begin(&g, 1);
        if (!before) hccl_boot_attempt_end(&g, UINT32_MAX);
        fail(&g, 0);
        fail(&g, 1);
        TT_ASSERT(sees(&g, 1, 0));
        hccl_boot_attempt_end(&g, 0);
        hccl_boot_attempt_end(&g, 1);
        hccl_boot_attempt_begin(&g, 2);
        TT_ASSERT_MSG(!hccl_boot_peer_failed(&g, 2, NULL, NULL, NULL, 0), "bad rank id %s the others began",
                      before ? "before" : "after");
        hccl_boot_attempt_begin(&g, 1);
        TT_ASSERT(!hccl_boot_peer_failed(&g, 1, NULL, NULL, NULL, 0));
        hccl_boot_attempt_begin(&g, 0);
        TT_ASSERT(!hccl_boot_peer_failed(&g, 0, NULL, NULL, NULL, 0));
        hccl_boot_attempt_end(&g, 0);
        hccl_boot_attempt_end(&g, 1);
        hccl_boot_attempt_end(&g, 2);
        /* A later try without such a call: its early failure is seen by a late rank. */
        hccl_boot_attempt_begin(&g, 0);
        fail(&g, 0);
        hccl_boot_attempt_end(&g, 0);
        hccl_boot_attempt_begin(&g, 1);
        TT_ASSERT(sees(&g, 1, 0));
        hccl_boot_attempt_end(&g, 1);
    }

    /* A group that tells no attempts (a root info's): every record holds, as before;
     * a child of fork has none of the ranks. */
    g = group(9);
    fail(&g, 2);
    TT_ASSERT(sees(&g, 0, 2));
    TT_ASSERT(!hccl_boot_peer_failed(&g, 2, NULL, NULL, NULL, 0));
    TT_ASSERT(sees(&g, UINT32_MAX, 2)); /* the root thread's check */
    pid_t pid = fork();
    if (pid == 0) _exit(hccl_boot_peer_failed(&g, 0, NULL, NULL, NULL, 0) ? 1 : 0);
    TT_ASSERT_CHILD_OK(pid);
    return tt_report("test_boot_attempt");
}
