/*
 * test_launch_env.c - launcher environment reader: each launcher's variables (torchrun,
 * slurm, openmpi, pmi), precedence between launchers and between root variables, local
 * rank, job secret (given as hex, decimal or text; derived from job ids), and every error
 * case, through a fake environment table passed as getenv_fn; an unresolvable root
 * address through hccl_comm_init_env (HcclCommInitFromEnv).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/launch_env.h"
#include "core/comm.h"
#include "util/log.h"
#include "tinytest.h"

/* ---- the fake environment: "NAME=value" strings, NULL-terminated ---- */

static const char *const *fake;

static const char *fake_getenv(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = fake; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

static HcclResult rd(hccl_launch_env *out, char *err, size_t errlen, const char *const *env)
{
    fake = env;
    memset(out, 0x5a, sizeof *out);
    return hccl_launch_env_read(out, fake_getenv, err, errlen);
}

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static void expect_fail(const char *const *env, const char *want1, const char *want2, int line)
{
    hccl_launch_env e;
    char err[512] = "";
    HcclResult r = rd(&e, err, sizeof err, env);
    TT_ASSERT_MSG(r == HCCL_E_PARA, "line %d: result %d", line, (int)r);
    TT_ASSERT_MSG(strncmp(err, "launch environment: ", 20) == 0, "line %d: '%s'", line, err);
    TT_ASSERT_MSG(!want1 || has(err, want1), "line %d: '%s' lacks '%s'", line, err, want1);
    TT_ASSERT_MSG(!want2 || has(err, want2), "line %d: '%s' lacks '%s'", line, err, want2);
}
#define FAIL(env, w1, w2) expect_fail(env, w1, w2, __LINE__)

static void test_launchers(void)
{
    hccl_launch_env e;
    char err[512] = "";

    TT_ASSERT_MSG(rd(&e, err, sizeof err,
                     ENV("RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", "MASTER_ADDR=10.1.2.3", "MASTER_PORT=29500")) ==
                      HCCL_SUCCESS,
                  "%s", err);
    TT_ASSERT(strcmp(e.source, "torchrun") == 0);
    TT_ASSERT_EQ(e.rank, 3);
    TT_ASSERT_EQ(e.nranks, 8);
    TT_ASSERT_EQ(e.local_rank, 1);
    TT_ASSERT(strcmp(e.root_addr, "10.1.2.3") == 0);
    TT_ASSERT_EQ(e.root_port, 29501);

    TT_ASSERT_MSG(rd(&e, err, sizeof err,
                     ENV("SLURM_PROCID=5", "SLURM_NTASKS=6", "SLURM_LOCALID=2", "MASTER_ADDR=node17",
                         "MASTER_PORT=1000", "SLURM_JOB_ID=4242")) == HCCL_SUCCESS,
                  "%s", err);
    TT_ASSERT(strcmp(e.source, "slurm") == 0);
    TT_ASSERT_EQ(e.rank, 5);
    TT_ASSERT_EQ(e.nranks, 6);
    TT_ASSERT_EQ(e.local_rank, 2);
    TT_ASSERT(strcmp(e.root_addr, "node17") == 0);
    TT_ASSERT_EQ(e.root_port, 1001);

    TT_ASSERT_MSG(rd(&e, err, sizeof err,
                     ENV("OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "OMPI_COMM_WORLD_LOCAL_RANK=0",
                         "HCCL_ROOT_ADDR=::1", "HCCL_ROOT_PORT=65535")) == HCCL_SUCCESS,
                  "%s", err);
    TT_ASSERT(strcmp(e.source, "openmpi") == 0);
    TT_ASSERT_EQ(e.rank, 0);
    TT_ASSERT_EQ(e.nranks, 1);
    TT_ASSERT_EQ(e.local_rank, 0);
    TT_ASSERT(strcmp(e.root_addr, "::1") == 0);
    TT_ASSERT_EQ(e.root_port, 65535);

    TT_ASSERT_MSG(rd(&e, err, sizeof err,
                     ENV("PMI_RANK=7", "PMI_SIZE=16", "MPI_LOCALRANKID=3", "HCCL_ROOT_ADDR=[2001:db8::1]",
                         "HCCL_ROOT_PORT=1")) == HCCL_SUCCESS,
                  "%s", err);
    TT_ASSERT(strcmp(e.source, "pmi") == 0);
    TT_ASSERT_EQ(e.rank, 7);
    TT_ASSERT_EQ(e.nranks, 16);
    TT_ASSERT_EQ(e.local_rank, 3);
    TT_ASSERT(strcmp(e.root_addr, "2001:db8::1") == 0); /* brackets removed */
    TT_ASSERT_EQ(e.root_port, 1);

    /* No local rank variable: -1. MASTER_PORT=65534 is the largest allowed. */
    TT_ASSERT(rd(&e, err, sizeof err, ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=65534")) ==
              HCCL_SUCCESS);
    TT_ASSERT_EQ(e.local_rank, -1);
    TT_ASSERT_EQ(e.root_port, 65535);
    /* err may be NULL. */
    fake = ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1");
    TT_ASSERT_EQ(hccl_launch_env_read(&e, fake_getenv, NULL, 0), HCCL_SUCCESS);
    TT_ASSERT_EQ(hccl_launch_env_read(NULL, fake_getenv, err, sizeof err), HCCL_E_PARA);
}

static void test_precedence(void)
{
    hccl_launch_env e;
    char err[512] = "";
    /* torchrun inside a slurm allocation under mpirun: RANK/WORLD_SIZE win. */
    TT_ASSERT_MSG(rd(&e, err, sizeof err,
                     ENV("PMI_RANK=9", "PMI_SIZE=10", "OMPI_COMM_WORLD_RANK=8", "OMPI_COMM_WORLD_SIZE=10",
                         "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "RANK=4", "WORLD_SIZE=5",
                         "LOCAL_RANK=0", "MASTER_ADDR=a", "MASTER_PORT=100")) == HCCL_SUCCESS,
                  "%s", err);
    TT_ASSERT(strcmp(e.source, "torchrun") == 0);
    TT_ASSERT_EQ(e.rank, 4);
    TT_ASSERT_EQ(e.nranks, 5);
    TT_ASSERT_EQ(e.local_rank, 0);
    /* mpirun inside an sbatch script: every rank inherits the batch step's
     * SLURM_PROCID=0 and SLURM_NTASKS; Open MPI's variables are the ones that differ. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_LOCALID=0", "OMPI_COMM_WORLD_RANK=3",
                     "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1", "MASTER_ADDR=a",
                     "MASTER_PORT=100")) == HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.source, "openmpi") == 0);
    TT_ASSERT_EQ(e.rank, 3);
    TT_ASSERT_EQ(e.nranks, 4);
    TT_ASSERT_EQ(e.local_rank, 1);
    /* MPICH's mpiexec (PMI) inside an sbatch script, likewise. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "PMI_RANK=5", "PMI_SIZE=8",
                     "MPI_LOCALRANKID=5", "MASTER_ADDR=a", "MASTER_PORT=100")) == HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.source, "pmi") == 0);
    TT_ASSERT_EQ(e.rank, 5);
    TT_ASSERT_EQ(e.nranks, 8);
    TT_ASSERT_EQ(e.local_rank, 5);
    /* slurm alone (srun); the launcher's own local rank variable first. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("LOCAL_RANK=", "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=1", "MASTER_ADDR=a",
                     "MASTER_PORT=100")) == HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.source, "slurm") == 0);
    TT_ASSERT_EQ(e.rank, 1);
    TT_ASSERT_EQ(e.local_rank, 1);
    /* openmpi over pmi. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("PMI_RANK=9", "PMI_SIZE=10", "MPI_LOCALRANKID=5", "OMPI_COMM_WORLD_RANK=8",
                     "OMPI_COMM_WORLD_SIZE=10", "OMPI_COMM_WORLD_LOCAL_RANK=2", "MASTER_ADDR=a",
                     "MASTER_PORT=100")) == HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.source, "openmpi") == 0);
    TT_ASSERT_EQ(e.rank, 8);
    TT_ASSERT_EQ(e.local_rank, 2);
    /* Local rank falls back to another launcher's variable, in the documented order. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("PMI_RANK=1", "PMI_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=3", "SLURM_LOCALID=2",
                     "MASTER_ADDR=a", "MASTER_PORT=100")) == HCCL_SUCCESS);
    TT_ASSERT_EQ(e.local_rank, 3);
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("RANK=1", "WORLD_SIZE=4", "MPI_LOCALRANKID=3", "SLURM_LOCALID=2", "MASTER_ADDR=a",
                     "MASTER_PORT=100")) == HCCL_SUCCESS);
    TT_ASSERT_EQ(e.local_rank, 3);
    /* Empty variables count as unset. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("RANK=", "WORLD_SIZE=", "SLURM_PROCID=0", "SLURM_NTASKS=1", "HCCL_ROOT_ADDR=",
                     "MASTER_ADDR=m", "MASTER_PORT=5")) == HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.source, "slurm") == 0);
    TT_ASSERT(strcmp(e.root_addr, "m") == 0);
    /* HCCL_ROOT_* over MASTER_*, each independently. */
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("RANK=0", "WORLD_SIZE=1", "HCCL_ROOT_ADDR=r", "HCCL_ROOT_PORT=7000", "MASTER_ADDR=m",
                     "MASTER_PORT=5000")) == HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.root_addr, "r") == 0);
    TT_ASSERT_EQ(e.root_port, 7000);
    TT_ASSERT(rd(&e, err, sizeof err,
                 ENV("RANK=0", "WORLD_SIZE=1", "HCCL_ROOT_ADDR=r", "MASTER_ADDR=m", "MASTER_PORT=5000")) ==
              HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.root_addr, "r") == 0);
    TT_ASSERT_EQ(e.root_port, 5001);
    TT_ASSERT(rd(&e, err, sizeof err, ENV("RANK=0", "WORLD_SIZE=1", "HCCL_ROOT_PORT=7000", "MASTER_ADDR=m")) ==
              HCCL_SUCCESS);
    TT_ASSERT(strcmp(e.root_addr, "m") == 0);
    TT_ASSERT_EQ(e.root_port, 7000);
    /* The longest address that fits. */
    char addr[300] = "MASTER_ADDR=";
    memset(addr + 12, 'a', 255);
    addr[12 + 255] = '\0';
    TT_ASSERT(rd(&e, err, sizeof err, ENV("RANK=0", "WORLD_SIZE=1", addr, "MASTER_PORT=1")) == HCCL_SUCCESS);
    TT_ASSERT_EQ(strlen(e.root_addr), 255);
}

static uint64_t secret_of(const char *const *env)
{
    hccl_launch_env e;
    char err[512] = "";
    HcclResult r = rd(&e, err, sizeof err, env);
    TT_ASSERT_MSG(r == HCCL_SUCCESS, "%s", err);
    return r == HCCL_SUCCESS ? e.secret : 0;
}

#define BASE "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"

static void test_secret(void)
{
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=0x0123456789abcdef")) == 0x0123456789abcdefull);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=0XFFFFFFFFFFFFFFFF")) == UINT64_MAX);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=18446744073709551615")) == UINT64_MAX);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=12345")) == 12345);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=0000000000000012")) == 0x12); /* hcclrun's %016llx */
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=00000000000000012")) == 12);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=deadbeefcafef00d")) == 0xdeadbeefcafef00dull);
    /* Text, and numbers that do not fit, are hashed (FNV-1a 64 of the text). */
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=foobar")) == 0x85944171f73967e8ull);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=a")) == 0xa); /* bare hex digits are a number */
    uint64_t big = secret_of(ENV(BASE, "HCCL_JOB_SECRET=18446744073709551616"));
    TT_ASSERT(big != 0 && big != UINT64_MAX);
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=correct horse battery staple")) ==
              secret_of(ENV(BASE, "HCCL_JOB_SECRET=correct horse battery staple", "SLURM_JOB_ID=1")));
    TT_ASSERT(secret_of(ENV(BASE, "HCCL_JOB_SECRET=correct horse")) !=
              secret_of(ENV(BASE, "HCCL_JOB_SECRET=correct horsf")));
    /* An explicit secret ignores the root address. */
    TT_ASSERT(secret_of(ENV("RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=x", "MASTER_PORT=1", "HCCL_JOB_SECRET=7")) == 7);

    /* Derived: the same on every rank of a job, different between jobs. */
    uint64_t s0 = secret_of(ENV(BASE, "TORCHELASTIC_RUN_ID=abc"));
    uint64_t s1 = secret_of(ENV("RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=10.0.0.1",
                                "MASTER_PORT=29500", "TORCHELASTIC_RUN_ID=abc"));
    TT_ASSERT(s0 == s1);
    TT_ASSERT(s0 != secret_of(ENV(BASE, "TORCHELASTIC_RUN_ID=abd")));
    TT_ASSERT(s0 != secret_of(ENV(BASE)));
    TT_ASSERT(s0 != secret_of(ENV(BASE, "SLURM_JOB_ID=abc"))); /* the name counts too */
    TT_ASSERT(secret_of(ENV(BASE, "SLURM_JOB_ID=1")) != secret_of(ENV(BASE, "SLURM_JOB_ID=2")));
    TT_ASSERT(secret_of(ENV(BASE, "OMPI_MCA_ess_base_jobid=1")) != secret_of(ENV(BASE, "OMPI_MCA_ess_base_jobid=2")));
    TT_ASSERT(secret_of(ENV(BASE, "SLURM_JOB_ID=1", "OMPI_MCA_ess_base_jobid=2")) !=
              secret_of(ENV(BASE, "SLURM_JOB_ID=1")));
    TT_ASSERT(secret_of(ENV(BASE)) != secret_of(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1",
                                                     "MASTER_PORT=29501")));
    TT_ASSERT(secret_of(ENV(BASE)) != secret_of(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=10.0.0.2",
                                                     "MASTER_PORT=29500")));
    /* Values cannot run together: ("ab","c") differs from ("a","bc"). */
    TT_ASSERT(secret_of(ENV(BASE, "TORCHELASTIC_RUN_ID=ab", "SLURM_JOB_ID=c")) !=
              secret_of(ENV(BASE, "TORCHELASTIC_RUN_ID=a", "SLURM_JOB_ID=bc")));
}

static void test_errors(void)
{
    FAIL(ENV("MASTER_ADDR=a", "MASTER_PORT=1"), "no launcher environment found: set RANK and WORLD_SIZE",
         "srun or mpirun");
    FAIL(ENV(NULL), "no launcher environment found", NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=65537", "MASTER_ADDR=a", "MASTER_PORT=1"), "WORLD_SIZE=\"65537\"", "at most 65536");
    FAIL(ENV("PMI_RANK=0", "PMI_SIZE=4294967295", "MASTER_ADDR=a", "MASTER_PORT=1"), "PMI_SIZE", "at most 65536");
    FAIL(ENV("RANK=0", "MASTER_ADDR=a", "MASTER_PORT=1"), "RANK is set but WORLD_SIZE is not", NULL);
    FAIL(ENV("WORLD_SIZE=2", "SLURM_PROCID=0", "SLURM_NTASKS=2", "MASTER_ADDR=a", "MASTER_PORT=1"),
         "WORLD_SIZE is set but RANK is not", NULL);
    FAIL(ENV("SLURM_NTASKS=2"), "SLURM_NTASKS is set but SLURM_PROCID is not", NULL);
    FAIL(ENV("OMPI_COMM_WORLD_RANK=1"), "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not", NULL);
    FAIL(ENV("PMI_SIZE=1"), "PMI_SIZE is set but PMI_RANK is not", NULL);
    /* Non-integers. */
    static const char *const bad[] = {"x", "-1", "1e3", " 1", "1 ", "+1", "0x1", "1.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rank[32], size[32], lr[32];
        snprintf(rank, sizeof rank, "RANK=%s", bad[i]);
        snprintf(size, sizeof size, "WORLD_SIZE=%s", bad[i]);
        snprintf(lr, sizeof lr, "LOCAL_RANK=%s", bad[i]);
        FAIL(ENV(rank, "WORLD_SIZE=4", "MASTER_ADDR=a", "MASTER_PORT=1"), "RANK=\"", "is not a non-negative integer");
        FAIL(ENV("RANK=0", size, "MASTER_ADDR=a", "MASTER_PORT=1"), "WORLD_SIZE=\"", "is not a non-negative integer");
        FAIL(ENV("RANK=0", "WORLD_SIZE=4", lr, "MASTER_ADDR=a", "MASTER_PORT=1"), "LOCAL_RANK=\"",
             "is not a non-negative integer");
    }
    FAIL(ENV("RANK=99999999999999999999", "WORLD_SIZE=4"), "RANK=\"99999999999999999999\" is out of range", NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=4294967296"), "WORLD_SIZE=\"4294967296\" is out of range", NULL);
    FAIL(ENV("SLURM_PROCID=abc", "SLURM_NTASKS=4"), "SLURM_PROCID=\"abc\"", NULL);
    FAIL(ENV("OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=z"), "OMPI_COMM_WORLD_SIZE=\"z\"", NULL);
    FAIL(ENV("PMI_RANK=\x01\x1b[2J", "PMI_SIZE=1"), "PMI_RANK=\"??[2J\"", NULL);
    /* Rank and size. */
    FAIL(ENV("RANK=4", "WORLD_SIZE=4", "MASTER_ADDR=a", "MASTER_PORT=1"), "RANK=4 is not below WORLD_SIZE=4", NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=0", "MASTER_ADDR=a", "MASTER_PORT=1"), "WORLD_SIZE=0", "at least 1");
    FAIL(ENV("SLURM_PROCID=3", "SLURM_NTASKS=2"), "SLURM_PROCID=3 is not below SLURM_NTASKS=2", NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=2", "MASTER_ADDR=a", "MASTER_PORT=1"),
         "LOCAL_RANK=2 is not below the world size", NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=2147483648", "MASTER_ADDR=a", "MASTER_PORT=1"),
         "LOCAL_RANK=\"2147483648\" is out of range", NULL);
    /* Root address and port. */
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_PORT=1"), "no root address", "HCCL_ROOT_ADDR and MASTER_ADDR");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=", "HCCL_ROOT_ADDR=", "MASTER_PORT=1"), "no root address", NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a"), "no root port", "HCCL_ROOT_PORT and MASTER_PORT");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a b", "MASTER_PORT=1"), "MASTER_ADDR=\"a b\"",
         "not a host name or address");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "HCCL_ROOT_ADDR=[]", "MASTER_PORT=1"), "HCCL_ROOT_ADDR=", NULL);
    char addr[300] = "MASTER_ADDR=";
    memset(addr + 12, 'a', 256);
    addr[12 + 256] = '\0';
    FAIL(ENV("RANK=0", "WORLD_SIZE=1", addr, "MASTER_PORT=1"), "MASTER_ADDR=\"aaaa", "not a host name");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=65535"), "MASTER_PORT=65535",
         "MASTER_PORT + 1");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=0"), "MASTER_PORT=0", "1..65534");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=99999999999999999999999"), "MASTER_PORT=",
         "out of range");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "MASTER_PORT=http"), "MASTER_PORT=\"http\"",
         "not a non-negative integer");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "HCCL_ROOT_PORT=65536"), "HCCL_ROOT_PORT=65536", "1..65535");
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "HCCL_ROOT_PORT=0", "MASTER_PORT=5"), "HCCL_ROOT_PORT=0",
         NULL);
    FAIL(ENV("RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a", "HCCL_ROOT_PORT=-5"), "HCCL_ROOT_PORT=\"-5\"", NULL);
    /* A tiny error buffer truncates safely. */
    hccl_launch_env e;
    char small[8];
    TT_ASSERT_EQ(rd(&e, small, sizeof small, ENV(NULL)), HCCL_E_PARA);
    TT_ASSERT_EQ(strlen(small), 7);
}

static void test_real_getenv(void)
{
    hccl_launch_env e;
    char err[512] = "";
    static const char *const clear[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "HCCL_ROOT_ADDR", "HCCL_ROOT_PORT"};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) unsetenv(clear[i]);
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "3", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "40000", 1);
    setenv("HCCL_JOB_SECRET", "0x10", 1);
    TT_ASSERT_MSG(hccl_launch_env_read(&e, NULL, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT_EQ(e.rank, 1);
    TT_ASSERT_EQ(e.nranks, 3);
    TT_ASSERT_EQ(e.root_port, 40001);
    TT_ASSERT(e.secret == 16);
    TT_ASSERT(e.root_addr_var && strcmp(e.root_addr_var, "MASTER_ADDR") == 0);

    /* A root address that does not resolve: the error names the variable it came from
     * (".invalid" never resolves, RFC 6761). */
    hccl_comm *comm = NULL;
    setenv("MASTER_ADDR", "no-such-host.invalid", 1);
    TT_ASSERT_EQ(hccl_comm_init_env(NULL, &comm), HCCL_E_PARA);
    TT_ASSERT_MSG(has(hccl_log_last_warn(), "MASTER_ADDR=\"no-such-host.invalid\""), "'%s'",
                  hccl_log_last_warn());
    setenv("HCCL_ROOT_ADDR", "no-such-host.invalid", 1);
    TT_ASSERT_EQ(hccl_comm_init_env(NULL, &comm), HCCL_E_PARA);
    TT_ASSERT_MSG(has(hccl_log_last_warn(), "HCCL_ROOT_ADDR=\"no-such-host.invalid\""), "'%s'",
                  hccl_log_last_warn());
    TT_ASSERT(comm == NULL);
    unsetenv("HCCL_ROOT_ADDR");
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
}

int main(void)
{
    test_launchers();
    test_precedence();
    test_secret();
    test_errors();
    test_real_getenv();
    return tt_report("test_launch_env");
}
