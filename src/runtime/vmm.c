/*
 * vmm.c - virtual memory management: aclrtReserveMemAddress, aclrtMallocPhysical,
 * aclrtMapMem and their inverses (what CANN's zero-copy programs, e.g. hccl_test -z 1,
 * use).
 *
 * A reservation is a PROT_NONE anonymous mapping; physical memory is a memfd of the
 * handle's size; aclrtMapMem maps a piece of the memfd over part of a reservation
 * (MAP_FIXED, shared), aclrtUnmapMem puts PROT_NONE back. Every handle, reservation
 * and mapping is registered, so a bad or stale pointer is rejected, never unmapped
 * blindly. Mapped memory is ordinary memory of this process: HCCL operations and
 * aclrtMemcpy accept it as they accept aclrtMalloc memory.
 */
#include "runtime/runtime_int.h"

#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define VMM_GRANULARITY ((size_t)2 << 20)
#define PHYS_MAGIC 0x50485953u /* "PHYS" */

typedef struct phys_mem {
    uint32_t magic;
    int fd;
    size_t size;
} phys_mem;

typedef struct vmm_map {
    uintptr_t va;
    size_t size;
} vmm_map;

static pthread_mutex_t vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static hccl_rt_map reservations; /* base -> size */
static hccl_rt_map handles;      /* phys_mem * -> 1 */
static hccl_rt_map mappings;     /* va -> size */

static int aligned(size_t v) { return v % VMM_GRANULARITY == 0; }

static aclError check_prop(const aclrtPhysicalMemProp *prop, const char *api)
{
    if (!prop) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: prop is NULL", api);
    if (prop->handleType != ACL_MEM_HANDLE_TYPE_NONE || prop->allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "%s: prop handleType %d / allocationType %d are not supported (ACL_MEM_HANDLE_TYPE_NONE, "
                             "ACL_MEM_ALLOCATION_TYPE_PINNED)",
                             api, (int)prop->handleType, (int)prop->allocationType);
    if (prop->location.type == ACL_MEM_LOCATION_TYPE_DEVICE) {
        uint32_t n = hccl_rt_device_count();
        if (prop->location.id >= n)
            return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: prop location id %u is not a device (%u devices)", api,
                                 prop->location.id, n);
    } else if (prop->location.type != ACL_MEM_LOCATION_TYPE_HOST) {
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: prop location type %d is invalid", api,
                             (int)prop->location.type);
    }
    return ACL_SUCCESS;
}

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop, aclrtMemGranularityOptions option,
                                          size_t *granularity)
{
    const char *api = "aclrtMemGetAllocationGranularity";
    if (!granularity) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: granularity is NULL", api);
    aclError rc = check_prop(prop, api);
    if (rc != ACL_SUCCESS) return rc;
    if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM && option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: option %d is invalid", api, (int)option);
    *granularity = VMM_GRANULARITY;
    return ACL_SUCCESS;
}

aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr, uint64_t flags)
{
    const char *api = "aclrtReserveMemAddress";
    if (!virPtr) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: virPtr is NULL", api);
    if (size == 0 || !aligned(size))
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: size %zu is not a positive multiple of %zu", api, size,
                             VMM_GRANULARITY);
    if (alignment & (alignment - 1))
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: alignment %zu is not 0 or a power of two", api, alignment);
    if (flags > 1) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: flags %llu is invalid (0 or 1)", api,
                                        (unsigned long long)flags);
    size_t align = alignment > VMM_GRANULARITY ? alignment : VMM_GRANULARITY;
    if (size > SIZE_MAX - align)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: size %zu is too large", api, size);
    size_t span = size + align;
    char *raw = mmap(expectPtr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return hccl_rt_error(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot reserve %zu bytes (errno %d)", api, size,
                             errno);
    uintptr_t base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    if (base > (uintptr_t)raw) munmap(raw, base - (uintptr_t)raw);
    size_t tail = (uintptr_t)raw + span - (base + size);
    if (tail) munmap((char *)(base + size), tail);
    pthread_mutex_lock(&vmm_mu);
    aclError rc = hccl_rt_map_put(&reservations, base, size);
    pthread_mutex_unlock(&vmm_mu);
    if (rc != ACL_SUCCESS) {
        munmap((void *)base, size);
        return hccl_rt_error(rc, "%s: out of memory", api);
    }
    *virPtr = (void *)base;
    return ACL_SUCCESS;
}

typedef struct range_query {
    uintptr_t lo, hi; /* [lo, hi) */
    int found;
} range_query;

static void overlaps(uintptr_t key, uint64_t val, void *ctx)
{
    range_query *q = ctx;
    if (key < q->hi && q->lo < key + (uintptr_t)val) q->found = 1;
}

aclError aclrtReleaseMemAddress(void *virPtr)
{
    const char *api = "aclrtReleaseMemAddress";
    uint64_t size = 0;
    pthread_mutex_lock(&vmm_mu);
    int live = virPtr && hccl_rt_map_get(&reservations, (uintptr_t)virPtr, &size);
    range_query q = {(uintptr_t)virPtr, (uintptr_t)virPtr + (uintptr_t)size, 0};
    if (live) hccl_rt_map_each(&mappings, overlaps, &q);
    if (live && !q.found) hccl_rt_map_del(&reservations, (uintptr_t)virPtr, NULL);
    pthread_mutex_unlock(&vmm_mu);
    if (!live)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %p is not an address from aclrtReserveMemAddress", api,
                             virPtr);
    if (q.found)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: %p still has memory mapped in it (aclrtUnmapMem first)",
                             api, virPtr);
    munmap(virPtr, (size_t)size);
    return ACL_SUCCESS;
}

aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size, const aclrtPhysicalMemProp *prop,
                             uint64_t flags)
{
    const char *api = "aclrtMallocPhysical";
    if (!handle) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: handle is NULL", api);
    aclError rc = check_prop(prop, api);
    if (rc != ACL_SUCCESS) return rc;
    if (size == 0 || !aligned(size))
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: size %zu is not a positive multiple of %zu", api, size,
                             VMM_GRANULARITY);
    if (flags != 0)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: flags %llu is invalid (0)", api, (unsigned long long)flags);
    phys_mem *m = hccl_calloc(1, sizeof *m);
    if (!m) return hccl_rt_error(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of memory", api);
    m->fd = memfd_create("hccl-phys", MFD_CLOEXEC);
    if (m->fd < 0 || ftruncate(m->fd, (off_t)size) != 0) {
        int err = errno;
        if (m->fd >= 0) close(m->fd);
        hccl_free(m);
        return hccl_rt_error(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot create %zu bytes (errno %d)", api, size,
                             err);
    }
    m->magic = PHYS_MAGIC;
    m->size = size;
    pthread_mutex_lock(&vmm_mu);
    rc = hccl_rt_map_put(&handles, (uintptr_t)m, 1);
    pthread_mutex_unlock(&vmm_mu);
    if (rc != ACL_SUCCESS) {
        close(m->fd);
        hccl_free(m);
        return hccl_rt_error(rc, "%s: out of memory", api);
    }
    *handle = m;
    return ACL_SUCCESS;
}

/* Memory mapped from the handle stays mapped until aclrtUnmapMem (the mapping holds it). */
aclError aclrtFreePhysical(aclrtDrvMemHandle handle)
{
    pthread_mutex_lock(&vmm_mu);
    int live = handle && hccl_rt_map_del(&handles, (uintptr_t)handle, NULL);
    pthread_mutex_unlock(&vmm_mu);
    if (!live)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "aclrtFreePhysical: %p is not a live handle from aclrtMallocPhysical", handle);
    phys_mem *m = handle;
    close(m->fd);
    m->magic = 0;
    hccl_free(m);
    return ACL_SUCCESS;
}

typedef struct resv_query {
    uintptr_t lo, hi;
    int inside;
} resv_query;

static void contains(uintptr_t key, uint64_t val, void *ctx)
{
    resv_query *q = ctx;
    if (key <= q->lo && q->hi <= key + (uintptr_t)val) q->inside = 1;
}

aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle, uint64_t flags)
{
    const char *api = "aclrtMapMem";
    if (!virPtr) return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: virPtr is NULL", api);
    if (size == 0 || !aligned(size) || !aligned(offset) || !aligned((uintptr_t)virPtr))
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM,
                             "%s: virPtr %p, size %zu and offset %zu must be multiples of %zu (size not 0)", api, virPtr,
                             size, offset, VMM_GRANULARITY);
    if (flags != 0)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "%s: flags %llu is invalid (0)", api, (unsigned long long)flags);
    const char *why = NULL;
    uintptr_t lo = (uintptr_t)virPtr;
    pthread_mutex_lock(&vmm_mu);
    phys_mem *m = handle;
    resv_query r = {lo, lo + size, 0};
    range_query q = {lo, lo + size, 0};
    if (!handle || !hccl_rt_map_get(&handles, (uintptr_t)handle, NULL))
        why = "the handle is not a live one from aclrtMallocPhysical";
    else if (offset > m->size || size > m->size - offset)
        why = "offset + size exceed the physical memory's size";
    else if (lo + size < lo || (hccl_rt_map_each(&reservations, contains, &r), !r.inside))
        why = "the range is not inside one reservation of aclrtReserveMemAddress";
    else if (hccl_rt_map_each(&mappings, overlaps, &q), q.found)
        why = "the range overlaps memory already mapped (aclrtUnmapMem first)";
    aclError rc = ACL_SUCCESS;
    if (!why) {
        void *p = mmap(virPtr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd, (off_t)offset);
        if (p == MAP_FAILED) {
            rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
            why = "mmap failed";
        } else if ((rc = hccl_rt_map_put(&mappings, lo, size)) != ACL_SUCCESS) {
            mmap(virPtr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
            why = "out of memory";
        }
    }
    pthread_mutex_unlock(&vmm_mu);
    if (why)
        return hccl_rt_error(rc != ACL_SUCCESS ? rc : ACL_ERROR_INVALID_PARAM, "%s: %p (%zu bytes): %s", api, virPtr,
                             size, why);
    return ACL_SUCCESS;
}

aclError aclrtUnmapMem(void *virPtr)
{
    uint64_t size = 0;
    pthread_mutex_lock(&vmm_mu);
    int live = virPtr && hccl_rt_map_del(&mappings, (uintptr_t)virPtr, &size);
    /* back to reserved: no access, the physical pages released by this mapping */
    if (live) mmap(virPtr, (size_t)size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    pthread_mutex_unlock(&vmm_mu);
    if (!live)
        return hccl_rt_error(ACL_ERROR_INVALID_PARAM, "aclrtUnmapMem: %p is not the start of a mapping of aclrtMapMem",
                             virPtr);
    return ACL_SUCCESS;
}
