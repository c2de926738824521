/*
 * conf_suspend_peer.c - a rank whose communicator is suspended (HcclCommSuspend)
 * refuses its operations; a peer that waits for it in a collective times out
 * (HCCL_EXEC_TIMEOUT=2), and its report says that rank is suspended, not merely idle.
 */
#include <acl/acl.h>
#include <hccl/hccl.h>

#include "tinytest.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    setenv("HCCL_EXEC_TIMEOUT", "2", 1);
    TT_ASSERT_EQ(aclInit(NULL), ACL_SUCCESS);
    TT_ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    void *buf;
    TT_ASSERT_EQ(aclrtMalloc(&buf, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    int32_t devs[2] = {0, 1};
    HcclComm c[2];
    aclrtStream s;
    TT_ASSERT_EQ(HcclCommInitAll(2, devs, c), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    TT_ASSERT_EQ(HcclCommSuspend(c[1]), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c[1], NULL), HCCL_E_SUSPENDING);
    TT_ASSERT_EQ(HcclAllReduce(buf, buf, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c[0], s), HCCL_SUCCESS);
    TT_ASSERT(aclrtSynchronizeStream(s) != ACL_SUCCESS);
    const char *msg = aclGetRecentErrMsg();
    TT_ASSERT_MSG(strstr(msg, "HCCL_EXEC_TIMEOUT") && strstr(msg, "rank 1 never reached AllReduce #1 (idle: suspended "
                                                                "by HcclCommSuspend"),
                  "\"%s\"", msg);
    HcclResult err = HCCL_SUCCESS;
    TT_ASSERT_EQ(HcclGetCommAsyncError(c[0], &err), HCCL_SUCCESS);
    TT_ASSERT_EQ(err, HCCL_E_TIMEOUT);
    TT_ASSERT_EQ(HcclCommResume(c[1]), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclCommDestroy(c[0]), HCCL_SUCCESS);
    TT_ASSERT_EQ(HcclCommDestroy(c[1]), HCCL_SUCCESS);
    TT_ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    aclrtFree(buf);
    aclrtResetDevice(0);
    aclFinalize();
    return tt_report("conf_suspend_peer");
}
