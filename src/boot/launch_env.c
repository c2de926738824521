/*
 * launch_env.c - read rank, world size, local rank, root address and job secret from the
 * environment a launcher leaves behind.
 *
 * Rank and size, first launcher found wins (a launcher is "found" when either of its two
 * variables is set and non-empty; then both must be valid):
 *   torchrun/hcclrun  RANK / WORLD_SIZE
 *   openmpi           OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE
 *   pmi               PMI_RANK / PMI_SIZE            (MPICH, Intel MPI)
 *   slurm             SLURM_PROCID / SLURM_NTASKS
 * Slurm comes last: an sbatch script has SLURM_PROCID=0 and SLURM_NTASKS itself, so the
 * ranks of an mpirun (or mpiexec) run inside it inherit those, the same on every rank.
 * Local rank: the found launcher's own variable first, then LOCAL_RANK,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID; -1 when none is set.
 * Root: address HCCL_ROOT_ADDR else MASTER_ADDR; port HCCL_ROOT_PORT (1..65535) else
 * MASTER_PORT + 1 (MASTER_PORT itself is torch's TCPStore). "[v6addr]" brackets are removed.
 * Secret: HCCL_JOB_SECRET read as a number, first match wins: "0x" + 1..16 hex digits;
 * exactly 16 hex digits (what hcclrun writes); decimal up to 2^64-1; 1..15 hex digits. Any
 * other text is hashed with 64-bit FNV-1a. Without it the secret is the FNV-1a hash of the
 * job id variables that are set (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, OMPI_MCA_ess_base_jobid,
 * each hashed as NAME=VALUE) and the root address and port. That derived value only keeps
 * apart jobs that share a host by accident: anyone who can read the job's environment (or
 * guess a job id) can compute it, so it is NOT a secret on a shared host. hcclrun sets
 * HCCL_JOB_SECRET to random bytes for every job; set it yourself under other launchers when
 * the hosts are shared.
 * Empty variables count as unset. Numbers are strict decimal (no sign, space or exponent).
 */
#include "boot/launch_env.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/util.h"

typedef const char *(*getenv_t)(const char *name);

typedef struct launcher {
    const char *source, *rank_var, *size_var, *local_var;
} launcher;

static const launcher launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};
#define NLAUNCHERS (sizeof launchers / sizeof launchers[0])

static const char *const job_id_vars[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid"};

static HcclResult fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static HcclResult fail(char *err, size_t errlen, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "launch environment: %s", msg);
    HCCL_INFO(BOOT, "launch environment: %s", msg);
    return HCCL_E_PARA;
}

static const char *real_getenv(const char *name) { return getenv(name); }

/* The value of name, or NULL when unset or empty. */
static const char *env(getenv_t fn, const char *name)
{
    const char *v = fn(name);
    return (v && *v) ? v : NULL;
}

/* Quote a value for a message: at most 40 printable characters. */
static const char *quote(const char *s, char *buf, size_t len)
{
    size_t o = 0, i = 0;
    buf[o++] = '"';
    for (; s[i] && i < 40 && o + 6 < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[o++] = (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') ? (char)ch : '?';
    }
    if (s[i]) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

/* Strict decimal; 0 on success, -1 not a number, -2 above max. */
static int parse_dec(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s) return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return -1;
    for (const char *p = s; *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10) return -2;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static HcclResult get_uint(getenv_t fn, const char *name, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
    char q[64];
    const char *v = env(fn, name);
    int r = parse_dec(v, max, out);
    if (r == -1) return fail(err, errlen, "%s=%s is not a non-negative integer", name, quote(v, q, sizeof q));
    if (r == -2)
        return fail(err, errlen, "%s=%s is out of range (at most %llu)", name, quote(v, q, sizeof q),
                    (unsigned long long)max);
    return HCCL_SUCCESS;
}


static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Up to 16 hex digits; 0 on success. */
static int parse_hex(const char *s, uint64_t *out)
{
    size_t n = strlen(s);
    uint64_t v = 0;
    if (n == 0 || n > 16) return -1;
    for (size_t i = 0; i < n; i++) {
        int d = hexval(s[i]);
        if (d < 0) return -1;
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return 0;
}

static uint64_t secret_from_text(const char *s)
{
    uint64_t v;
    if ((s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) && parse_hex(s + 2, &v) == 0) return v;
    if (strlen(s) == 16 && parse_hex(s, &v) == 0) return v; /* hcclrun's "%016llx" */
    if (parse_dec(s, UINT64_MAX, &v) == 0) return v;
    if (parse_hex(s, &v) == 0) return v;
    return hccl_fnv1a(s, strlen(s), HCCL_FNV_SEED);
}

static uint64_t derived_secret(getenv_t fn, const hccl_launch_env *out)
{
    uint64_t h = HCCL_FNV_SEED;
    char port[8];
    for (size_t i = 0; i < sizeof job_id_vars / sizeof job_id_vars[0]; i++) {
        const char *v = env(fn, job_id_vars[i]);
        if (!v) continue;
        h = hccl_fnv1a(job_id_vars[i], strlen(job_id_vars[i]), h);
        h = hccl_fnv1a("=", 1, h);
        h = hccl_fnv1a(v, strlen(v) + 1, h); /* with its NUL, so values cannot run together */
    }
    h = hccl_fnv1a(out->root_addr, strlen(out->root_addr) + 1, h);
    snprintf(port, sizeof port, "%u", (unsigned)out->root_port);
    return hccl_fnv1a(port, strlen(port), h);
}

static HcclResult read_root(getenv_t fn, hccl_launch_env *out, char *err, size_t errlen)
{
    char q[64];
    const char *addr_var = "HCCL_ROOT_ADDR", *addr = env(fn, addr_var);
    if (!addr) addr = env(fn, addr_var = "MASTER_ADDR");
    if (!addr)
        return fail(err, errlen,
                    "no root address: tried HCCL_ROOT_ADDR and MASTER_ADDR, neither is set (set MASTER_ADDR "
                    "and MASTER_PORT, or HCCL_ROOT_ADDR and HCCL_ROOT_PORT)");
    size_t n = strlen(addr);
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
        addr++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof out->root_addr)
        return fail(err, errlen, "%s=%s is not a host name or address", addr_var, quote(addr, q, sizeof q));
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)addr[i];
        if (ch <= 0x20 || ch >= 0x7f || ch == '/' || ch == '[' || ch == ']')
            return fail(err, errlen, "%s=%s is not a host name or address", addr_var, quote(addr, q, sizeof q));
    }
    memcpy(out->root_addr, addr, n);
    out->root_addr[n] = '\0';
    out->root_addr_var = addr_var;

    uint64_t port;
    if (env(fn, "HCCL_ROOT_PORT")) {
        CHECK(get_uint(fn, "HCCL_ROOT_PORT", UINT64_MAX, &port, err, errlen));
        if (port < 1 || port > 65535)
            return fail(err, errlen, "HCCL_ROOT_PORT=%llu is not a port number in 1..65535", (unsigned long long)port);
    } else if (env(fn, "MASTER_PORT")) {
        CHECK(get_uint(fn, "MASTER_PORT", UINT64_MAX, &port, err, errlen));
        if (port < 1 || port > 65534)
            return fail(err, errlen,
                        "MASTER_PORT=%llu is out of range: HCCL listens on MASTER_PORT + 1 (MASTER_PORT belongs "
                        "to torch's store), so MASTER_PORT must be in 1..65534",
                        (unsigned long long)port);
        port++;
    } else {
        return fail(err, errlen,
                    "no root port: tried HCCL_ROOT_PORT and MASTER_PORT, neither is set (the root address "
                    "came from %s)",
                    addr_var);
    }
    out->root_port = (uint16_t)port;
    return HCCL_SUCCESS;
}

HcclResult hccl_launch_env_read(hccl_launch_env *out, const char *(*getenv_fn)(const char *name), char *err,
                                size_t errlen)
{
    getenv_t fn = getenv_fn ? getenv_fn : real_getenv;
    if (err && errlen) err[0] = '\0';
    if (!out) return fail(err, errlen, "no output given");
    memset(out, 0, sizeof *out);
    out->local_rank = -1;

    const launcher *l = NULL;
    for (size_t i = 0; i < NLAUNCHERS && !l; i++)
        if (env(fn, launchers[i].rank_var) || env(fn, launchers[i].size_var)) l = &launchers[i];
    if (!l)
        return fail(err, errlen,
                    "no launcher environment found: set RANK and WORLD_SIZE (torchrun/hcclrun), or run under "
                    "srun or mpirun");
    if (!env(fn, l->rank_var))
        return fail(err, errlen, "%s is set but %s is not (%s launcher)", l->size_var, l->rank_var, l->source);
    if (!env(fn, l->size_var))
        return fail(err, errlen, "%s is set but %s is not (%s launcher)", l->rank_var, l->size_var, l->source);

    uint64_t rank, size;
    CHECK(get_uint(fn, l->rank_var, UINT32_MAX, &rank, err, errlen));
    /* A communicator has at most HCCL_COMM_MAX_RANKS ranks: a larger world is refused
     * here, not after HCCL_CONNECT_TIMEOUT spent waiting for it. */
    CHECK(get_uint(fn, l->size_var, HCCL_COMM_MAX_RANKS, &size, err, errlen));
    if (size == 0) return fail(err, errlen, "%s=0: the world size must be at least 1", l->size_var);
    if (rank >= size)
        return fail(err, errlen, "%s=%llu is not below %s=%llu", l->rank_var, (unsigned long long)rank, l->size_var,
                    (unsigned long long)size);
    out->rank = (uint32_t)rank;
    out->nranks = (uint32_t)size;
    out->source = l->source;

    const char *local_var = env(fn, l->local_var) ? l->local_var : NULL;
    for (size_t i = 0; i < NLAUNCHERS && !local_var; i++)
        if (env(fn, launchers[i].local_var)) local_var = launchers[i].local_var;
    if (local_var) {
        uint64_t lr;
        CHECK(get_uint(fn, local_var, INT32_MAX, &lr, err, errlen));
        if (lr >= size)
            return fail(err, errlen, "%s=%llu is not below the world size %s=%llu", local_var,
                        (unsigned long long)lr, l->size_var, (unsigned long long)size);
        out->local_rank = (int32_t)lr;
    }

    CHECK(read_root(fn, out, err, errlen));

    const char *secret = env(fn, "HCCL_JOB_SECRET");
    out->secret = secret ? secret_from_text(secret) : derived_secret(fn, out);
    HCCL_INFO(BOOT, "launch environment (%s): rank %u of %u, local rank %d, root %s:%u, secret from %s", out->source,
              out->rank, out->nranks, (int)out->local_rank, out->root_addr, (unsigned)out->root_port,
              secret ? "HCCL_JOB_SECRET" : "job id (not secret on a shared host)");
    return HCCL_SUCCESS;
}
