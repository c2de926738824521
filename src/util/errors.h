/*
 * errors.h - the text of each HcclResult, as HcclGetErrorString returns it.
 */
#ifndef HCCL_UTIL_ERRORS_H
#define HCCL_UTIL_ERRORS_H

#include <hccl/hccl_types.h>

const char *hccl_result_str(HcclResult code);

#endif
