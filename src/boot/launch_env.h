/*
 * launch_env.h - read rank, size and root address from a launcher's environment.
 *
 * Sources, first found wins: RANK/WORLD_SIZE (torchrun, hcclrun), OMPI_COMM_WORLD_RANK/
 * OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS (last: an sbatch
 * script's own SLURM_PROCID=0 reaches the ranks of an mpirun run inside it).
 * Root: HCCL_ROOT_ADDR/HCCL_ROOT_PORT when set, else MASTER_ADDR and MASTER_PORT + 1
 * (MASTER_PORT itself belongs to torch's store). Local rank from LOCAL_RANK,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID.
 * Job secret: HCCL_JOB_SECRET, else derived from the job id variables
 * (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, OMPI_MCA_ess_base_jobid) and the root address.
 */
#ifndef HCCL_BOOT_LAUNCH_ENV_H
#define HCCL_BOOT_LAUNCH_ENV_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hccl_launch_env {
    uint32_t rank, nranks;
    int32_t local_rank; /* -1 when unknown */
    char root_addr[256];
    const char *root_addr_var; /* "HCCL_ROOT_ADDR" or "MASTER_ADDR": where root_addr came from */
    uint16_t root_port;
    uint64_t secret;
    const char *source; /* "torchrun", "slurm", "openmpi", "pmi" */
} hccl_launch_env;

/* getenv_fn lets tests supply an environment; NULL means getenv. */
HcclResult hccl_launch_env_read(hccl_launch_env *out, const char *(*getenv_fn)(const char *name), char *err,
                                size_t errlen);

#endif
