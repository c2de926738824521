/*
 * helper_shm_entries.c - what the shared-memory code left in /dev/shm.
 */
#include "helper_shm_entries.h"

#include "transport/shm/shm.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

int shm_entries_of(pid_t pid)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, HCCL_SHM_NAME_PREFIX "%ld-", (long)pid);
    DIR *d = opendir("/dev/shm");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}
