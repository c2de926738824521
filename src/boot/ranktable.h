/*
 * ranktable.h - parse a rank table JSON file (versions "1.0" and "1.2") with cJSON.
 *
 * Every malformed field is rejected with a message naming the field (and the server /
 * device index), written into err. All values in the file are strings.
 */
#ifndef HCCL_BOOT_RANKTABLE_H
#define HCCL_BOOT_RANKTABLE_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hccl_rt_rank {
    uint32_t rank_id;
    uint32_t device_id;
    char server_id[65];
    char host_ip[64];   /* server's host_ip ("" if absent) */
    char device_ip[64]; /* where this rank listens; falls back to host_ip */
    uint16_t device_port; /* 0 = not given */
    uint32_t server_index;    /* index of the server in server_list order */
    uint32_t super_pod_index; /* 0 for v1.0 */
    char super_pod_id[65];
    uint32_t super_device_id; /* UINT32_MAX when absent */
} hccl_rt_rank;

typedef struct hccl_ranktable {
    char version[8];
    uint32_t nranks;
    uint32_t nservers;
    uint32_t nsuperpods;
    hccl_rt_rank *ranks; /* indexed by rank_id, 0..nranks-1 */
} hccl_ranktable;

/* Parse text; on failure returns HCCL_E_PARA and a message in err. */
HcclResult hccl_ranktable_parse(const char *json, hccl_ranktable *rt, char *err, size_t errlen);
/* Read and parse a file (HCCL_E_OPEN_FILE_FAILURE when it cannot be read). */
HcclResult hccl_ranktable_load(const char *path, hccl_ranktable *rt, char *err, size_t errlen);
void hccl_ranktable_free(hccl_ranktable *rt);

#endif
