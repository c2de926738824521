/*
 * memory.c - host "device" memory: aclrtMalloc/Free, aclrtMallocHost/FreeHost,
 * aclrtMemcpy/Memset and their stream-ordered Async forms.
 *
 * Every allocation is zero-filled and 64-byte aligned (programs written for NPUs
 * rely on zero fill). aclrtMalloc memory is shared memory that same-host peers can
 * map (HCCL_SHARE_DEVICE_MEM=0 turns that off): sizes up to MMAP_THRESHOLD are blocks
 * of shared chunks (devarena.c), larger ones a memfd mapping each (sharemem.c). Where
 * that is off or fails, and for aclrtMallocHost, sizes up to MMAP_THRESHOLD come from
 * posix_memalign + memset and larger ones from an anonymous mmap (page aligned, zeroed
 * by the kernel for free, returned to it at once on free; ACL_MEM_MALLOC_HUGE_*
 * policies ask for transparent huge pages with madvise).
 *
 * A registry (hash map under a mutex) maps each live pointer to its size and kind:
 *   value = size << 3 | HOST_BIT (MallocHost) | MMAP_BIT (came from mmap)
 *                     | ARENA_BIT (a block of devarena.c)
 * so freeing an unknown pointer, one freed already, or one of the other kind
 * (aclrtFree of a MallocHost pointer) is rejected with ACL_ERROR_INVALID_PARAM.
 * After fork the child keeps its copies of the parent's allocations and may free them.
 *
 * Copies accept every upstream aclrtMemcpyKind (all memory is host memory, so the kind
 * only matters for ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: a queued copy of that kind stages
 * the source in its task, so the caller may reuse or free it when the call returns).
 * aclrtMemcpy2d(Async) copies height rows of width bytes between pitched buffers; as
 * upstream, width and height must be positive and width at most either pitch.
 *
 * aclrtGetMemInfo reports the host's memory (MemAvailable and MemTotal of /proc/meminfo,
 * else sysinfo) for every attribute but the 1 GiB huge-page ones, which no allocation
 * here uses (0 and 0, what upstream reports for memory the hardware lacks).
 */
#include "runtime/devarena.h"
#include "runtime/runtime_int.h"
#include "runtime/sharemem.h"

#include "util/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer keeps stale shadow for anonymous mappings that reuse the addresses
 * of freed heap blocks, and then reports races against long-gone writes: under TSan
 * every allocation comes from its allocator. */
#define MMAP_THRESHOLD SIZE_MAX
#else
#define MMAP_THRESHOLD HCCL_DEVARENA_MAX_BYTES
#endif
#define HOST_BIT 1u
#define MMAP_BIT 2u
#define ARENA_BIT 4u
#define MAX_SIZE (SIZE_MAX >> 3)

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static hccl_rt_map reg;

static void release(void *p, uint64_t val)
{
    if (val & MMAP_BIT) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t len = ((size_t)(val >> 3) + page - 1) & ~(page - 1);
        if (!hccl_sharemem_release(p, len)) munmap(p, len);
    } else if (val & ARENA_BIT) {
        hccl_devarena_free(p);
    } else {
        free(p);
    }
}

static aclError alloc_zeroed(void **out, size_t size, int huge, int host, const char *api)
{
    if (size > MAX_SIZE) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: cannot allocate %zu bytes", api, size);
    void *p = NULL;
    unsigned flags = host ? HOST_BIT : 0;
    if (size > MMAP_THRESHOLD) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t len = (size + page - 1) & ~(page - 1);
        /* Device memory is shared with the host's other processes when it can be. */
        p = host ? NULL : hccl_sharemem_alloc(len);
        if (!p) p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: cannot allocate %zu bytes", api, size);
#ifdef MADV_HUGEPAGE
        if (huge) madvise(p, len, MADV_HUGEPAGE);
#endif
        flags |= MMAP_BIT;
    } else if (!host && (p = hccl_devarena_alloc(size)) != NULL) {
        flags |= ARENA_BIT;
    } else {
        (void)huge;
        if (posix_memalign(&p, 64, size) != 0 || !p)
            return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: cannot allocate %zu bytes", api, size);
        memset(p, 0, size);
    }
    uint64_t val = (uint64_t)size << 3 | flags;
    pthread_mutex_lock(&reg_mu);
    aclError rc = hccl_rt_map_put(&reg, (uintptr_t)p, val);
    pthread_mutex_unlock(&reg_mu);
    if (rc != ACL_SUCCESS) {
        release(p, val);
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory for the allocation registry", api);
    }
    *out = p;
    return ACL_SUCCESS;
}

static aclError free_checked(void *p, int host, const char *api)
{
    if (!p) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: pointer is NULL", api);
    uint64_t val = 0;
    pthread_mutex_lock(&reg_mu);
    int found = hccl_rt_map_get(&reg, (uintptr_t)p, &val);
    int kind_ok = found && (((val & HOST_BIT) != 0) == (host != 0));
    if (kind_ok) hccl_rt_map_del(&reg, (uintptr_t)p, NULL);
    pthread_mutex_unlock(&reg_mu);
    if (!found)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %p was not allocated by %s or was already freed", api, p,
                             host ? "aclrtMallocHost" : "aclrtMalloc");
    if (!kind_ok)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %p was allocated by %s; free it with %s", api, p,
                             host ? "aclrtMalloc" : "aclrtMallocHost", host ? "aclrtFree" : "aclrtFreeHost");
    release(p, val);
    return ACL_SUCCESS;
}

/*
 * Accepted policies: the low byte is HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY or their
 * upstream _P2P twins (3, 4, 5); upstream's memory-type flags 0x100 (low bandwidth)
 * and 0x1000 (high bandwidth) may be or-ed in. Anything else is invalid.
 */
static int policy_valid(unsigned policy, int *huge)
{
    unsigned base = policy & 0xffu;
    unsigned rest = policy & ~0xffu;
    if (base > 5 || (rest & ~(0x100u | 0x1000u)) != 0) return 0;
    *huge = (base % 3) != ACL_MEM_MALLOC_NORMAL_ONLY;
    return 1;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    if (!devPtr) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is NULL");
    if (size == 0) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size is 0");
    int huge;
    if (!policy_valid((unsigned)policy, &huge))
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: policy %d is not a valid aclrtMemMallocPolicy",
                             (int)policy);
    return alloc_zeroed(devPtr, size, huge, 0, "aclrtMalloc");
}

aclError aclrtFree(void *devPtr) { return free_checked(devPtr, 0, "aclrtFree"); }

aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    if (!hostPtr) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr is NULL");
    if (size == 0) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: size is 0");
    return alloc_zeroed(hostPtr, size, 0, 1, "aclrtMallocHost");
}

aclError aclrtFreeHost(void *hostPtr) { return free_checked(hostPtr, 1, "aclrtFreeHost"); }

static aclError check_memcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                             const char *api)
{
    if ((unsigned)kind > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: kind %d is not a valid aclrtMemcpyKind", api, (int)kind);
    if (count > destMax)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds destMax %zu", api, count, destMax);
    if (count > 0 && (!dst || !src))
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL with count %zu", api, dst ? "src" : "dst", count);
    return ACL_SUCCESS;
}

static aclError check_memset(void *devPtr, size_t maxCount, size_t count, const char *api)
{
    if (count > maxCount)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds maxCount %zu", api, count, maxCount);
    if (count > 0 && !devPtr)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: devPtr is NULL with count %zu", api, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    aclError rc = check_memcpy(dst, destMax, src, count, kind, "aclrtMemcpy");
    if (rc != ACL_SUCCESS) return rc;
    if (count > 0 && dst != src) memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    aclError rc = check_memset(devPtr, maxCount, count, "aclrtMemset");
    if (rc != ACL_SUCCESS) return rc;
    if (count > 0) memset(devPtr, (unsigned char)value, count);
    return ACL_SUCCESS;
}

/* The argument of a queued copy or fill; the task frees it. */
typedef struct mem_op {
    void *dst;
    const void *src; /* NULL: fill with value */
    size_t count;
    unsigned char value;
    unsigned char staged[]; /* ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the source's copy (src points here) */
} mem_op;

static aclError mem_task(void *arg)
{
    mem_op *op = arg;
    if (op->count == 0) {
        /* nothing to do */
    } else if (op->src) {
        if (op->dst != op->src) memmove(op->dst, op->src, op->count);
    } else {
        memset(op->dst, op->value, op->count);
    }
    hccl_free(op);
    return ACL_SUCCESS;
}

/* stage: copy src into the task now (the caller may free it once the call returns). */
static aclError enqueue_op(void *dst, const void *src, size_t count, unsigned char value, int stage,
                           aclrtStream stream, const char *api)
{
    /* A dead stream is named as such before the source is staged (which could fail for
     * want of memory, or read a large source for nothing). */
    if (stage && !hccl_rt_stream_live(stream))
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: %p is not a live stream", api, stream);
    size_t extra = stage ? count : 0;
    if (extra > SIZE_MAX - sizeof(mem_op))
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: cannot stage %zu bytes", api, count);
    mem_op *op = hccl_malloc(sizeof *op + extra);
    if (!op) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory%s", api, stage ? " to stage the source" : "");
    if (stage) {
        memcpy(op->staged, src, count);
        src = op->staged;
    }
    op->dst = dst;
    op->src = src;
    op->count = count;
    op->value = value;
    aclError rc = hccl_rt_stream_enqueue(stream, mem_task, op, api);
    if (rc != ACL_SUCCESS && stream) hccl_free(op);
    return rc;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream)
{
    aclError rc = check_memcpy(dst, destMax, src, count, kind, "aclrtMemcpyAsync");
    if (rc != ACL_SUCCESS) return rc;
    /* Only a queued copy needs the staging (the NULL stream copies now). */
    int stage = kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE && stream && count > 0;
    return enqueue_op(dst, src, count, 0, stage, stream, "aclrtMemcpyAsync");
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream)
{
    aclError rc = check_memset(devPtr, maxCount, count, "aclrtMemsetAsync");
    if (rc != ACL_SUCCESS) return rc;
    return enqueue_op(devPtr, NULL, count, (unsigned char)value, 0, stream, "aclrtMemsetAsync");
}

/* ---- 2D copies */

/* Valid 2D copy arguments: non-NULL pointers, positive sizes, width <= both pitches,
 * and rows whose span ((height-1) * pitch + width) fits in a size_t. */
static aclError check_memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                               size_t height, aclrtMemcpyKind kind, const char *api)
{
    if ((unsigned)kind > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: kind %d is not a valid aclrtMemcpyKind", api, (int)kind);
    if (!dst || !src) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", api, dst ? "src" : "dst");
    if (width == 0 || height == 0)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: width %zu and height %zu must both be positive", api, width,
                             height);
    if (width > dpitch || width > spitch)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: width %zu exceeds %s %zu", api, width,
                             width > dpitch ? "dpitch" : "spitch", width > dpitch ? dpitch : spitch);
    size_t pitch = dpitch > spitch ? dpitch : spitch;
    if ((height - 1) > (SIZE_MAX - width) / pitch)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %zu rows of pitch %zu do not fit in the address space",
                             api, height, pitch);
    return ACL_SUCCESS;
}

static void copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height)
{
    if (dpitch == width && spitch == width) { /* contiguous: one copy */
        if (dst != src) memmove(dst, src, width * height);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d > s) { /* last row first: rows moved to higher addresses in place are read before they are overwritten */
        d += (height - 1) * dpitch;
        s += (height - 1) * spitch;
        for (size_t i = 0; i < height; i++, d -= dpitch, s -= spitch) memmove(d, s, width);
        return;
    }
    for (size_t i = 0; i < height; i++, d += dpitch, s += spitch)
        if (d != s) memmove(d, s, width);
}

aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                       aclrtMemcpyKind kind)
{
    aclError rc = check_memcpy2d(dst, dpitch, src, spitch, width, height, kind, "aclrtMemcpy2d");
    if (rc != ACL_SUCCESS) return rc;
    copy_rows(dst, dpitch, src, spitch, width, height);
    return ACL_SUCCESS;
}

/* The argument of a queued 2D copy; the task frees it. */
typedef struct mem2d_op {
    void *dst;
    const void *src;
    size_t dpitch, spitch, width, height;
    unsigned char staged[]; /* ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the rows, packed (src points here) */
} mem2d_op;

static aclError mem2d_task(void *arg)
{
    mem2d_op *op = arg;
    copy_rows(op->dst, op->dpitch, op->src, op->spitch, op->width, op->height);
    hccl_free(op);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                            aclrtMemcpyKind kind, aclrtStream stream)
{
    const char *api = "aclrtMemcpy2dAsync";
    aclError rc = check_memcpy2d(dst, dpitch, src, spitch, width, height, kind, api);
    if (rc != ACL_SUCCESS) return rc;
    /* As aclrtMemcpyAsync: only a queued copy stages its source. */
    int stage = kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE && stream;
    if (stage && !hccl_rt_stream_live(stream)) /* as enqueue_op: before staging */
        return hccl_rt_error(ACL_ERROR_RT_INVALID_HANDLE, "%s: %p is not a live stream", api, stream);
    size_t extra = 0;
    if (stage && (height > (SIZE_MAX - sizeof(mem2d_op)) / width))
        return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: cannot stage %zu rows of %zu bytes", api, height, width);
    if (stage) extra = width * height;
    mem2d_op *op = hccl_malloc(sizeof *op + extra);
    if (!op) return hccl_rt_error(ACL_ERROR_BAD_ALLOC, "%s: out of memory%s", api, stage ? " to stage the source" : "");
    if (stage) {
        copy_rows(op->staged, width, src, spitch, width, height);
        src = op->staged;
        spitch = width;
    }
    op->dst = dst;
    op->src = src;
    op->dpitch = dpitch;
    op->spitch = spitch;
    op->width = width;
    op->height = height;
    rc = hccl_rt_stream_enqueue(stream, mem2d_task, op, api);
    if (rc != ACL_SUCCESS && stream) hccl_free(op);
    return rc;
}

/* ---- memory information */

/* MemAvailable and MemTotal of /proc/meminfo in bytes; 0 when unreadable. */
static int read_meminfo(uint64_t *avail, uint64_t *total)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    int got = 0;
    unsigned long long kb;
    while (got != 3 && fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
            *total = (uint64_t)kb * 1024u;
            got |= 1;
        } else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            *avail = (uint64_t)kb * 1024u;
            got |= 2;
        }
    }
    fclose(f);
    return got == 3;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *freeMem, size_t *totalMem)
{
    if (!freeMem || !totalMem)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: %s is NULL", freeMem ? "total" : "free");
    if ((unsigned)attr > ACL_MEM_P2P_HUGE1G)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: attr %d is not a valid aclrtMemAttr",
                             (int)attr);
    if (attr == ACL_HBM_MEM_HUGE1G || attr == ACL_HBM_MEM_P2P_HUGE1G || attr == ACL_MEM_HUGE1G ||
        attr == ACL_MEM_P2P_HUGE1G) {
        *freeMem = 0;
        *totalMem = 0;
        return ACL_SUCCESS;
    }
    uint64_t avail = 0, total = 0;
    if (!read_meminfo(&avail, &total)) {
        struct sysinfo si;
        if (sysinfo(&si) != 0)
            return hccl_rt_error(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtGetMemInfo: cannot read /proc/meminfo or sysinfo");
        uint64_t unit = si.mem_unit ? si.mem_unit : 1;
        total = (uint64_t)si.totalram * unit;
        avail = ((uint64_t)si.freeram + (uint64_t)si.bufferram) * unit;
    }
    if (avail > total) avail = total;
    *freeMem = avail > SIZE_MAX ? SIZE_MAX : (size_t)avail;
    *totalMem = total > SIZE_MAX ? SIZE_MAX : (size_t)total;
    return ACL_SUCCESS;
}

void hccl_rt_memory_atfork_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
    hccl_devarena_atfork_prepare();
}

void hccl_rt_memory_atfork_parent(void)
{
    hccl_devarena_atfork_parent();
    pthread_mutex_unlock(&reg_mu);
}

void hccl_rt_memory_atfork_child(void)
{
    hccl_devarena_atfork_child();
    pthread_mutex_unlock(&reg_mu); /* taken by this thread in prepare */
}
