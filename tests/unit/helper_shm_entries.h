/*
 * helper_shm_entries.h - what the shared-memory code left in /dev/shm.
 */
#ifndef HELPER_SHM_ENTRIES_H
#define HELPER_SHM_ENTRIES_H

#include <sys/types.h>

/* Entries of /dev/shm that process pid's shared-memory code created (named
 * HCCL_SHM_NAME_PREFIX "<pid>-..."): segments, doorbells, slot segments; -1 when
 * /dev/shm cannot be read. */
int shm_entries_of(pid_t pid);

#endif
