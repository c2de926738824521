/*
 * map.c - the runtime's registry container: a hash map from non-zero pointer-sized
 * keys to 64-bit values.
 *
 * Layout: two parallel arrays of cap (a power of two) slots; key 0 marks an empty
 * slot. Lookup hashes the key (a 64-bit mix, so aligned pointers spread) and probes
 * linearly. The table doubles when it would pass half full. Deletion uses backward
 * shifting (no tombstones): following entries of the same probe run are moved into
 * the hole, so lookups never scan dead slots. Callers provide the locking.
 */
#include "runtime/runtime_int.h"

#include "util/util.h"

static size_t slot_of(uintptr_t key, size_t cap)
{
    uint64_t h = (uint64_t)key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static void insert_raw(uintptr_t *keys, uint64_t *vals, size_t cap, uintptr_t key, uint64_t val)
{
    size_t i = slot_of(key, cap);
    while (keys[i] != 0 && keys[i] != key) i = (i + 1) & (cap - 1);
    keys[i] = key;
    vals[i] = val;
}

static aclError grow(hccl_rt_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uintptr_t *nkeys = hccl_calloc(ncap, sizeof *nkeys);
    uint64_t *nvals = hccl_calloc(ncap, sizeof *nvals);
    if (!nkeys || !nvals) {
        hccl_free(nkeys);
        hccl_free(nvals);
        return ACL_ERROR_BAD_ALLOC;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) insert_raw(nkeys, nvals, ncap, m->keys[i], m->vals[i]);
    hccl_free(m->keys);
    hccl_free(m->vals);
    m->keys = nkeys;
    m->vals = nvals;
    m->cap = ncap;
    return ACL_SUCCESS;
}

static size_t find(const hccl_rt_map *m, uintptr_t key, int *found)
{
    *found = 0;
    if (m->cap == 0 || key == 0) return 0;
    size_t i = slot_of(key, m->cap);
    while (m->keys[i] != 0) {
        if (m->keys[i] == key) {
            *found = 1;
            return i;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return i;
}

aclError hccl_rt_map_put(hccl_rt_map *m, uintptr_t key, uint64_t val)
{
    if (key == 0) return ACL_ERROR_INVALID_PARAM;
    int found;
    size_t i = find(m, key, &found);
    if (found) {
        m->vals[i] = val;
        return ACL_SUCCESS;
    }
    if ((m->len + 1) * 2 > m->cap) {
        aclError rc = grow(m);
        if (rc != ACL_SUCCESS) return rc;
    }
    insert_raw(m->keys, m->vals, m->cap, key, val);
    m->len++;
    return ACL_SUCCESS;
}

int hccl_rt_map_get(const hccl_rt_map *m, uintptr_t key, uint64_t *val)
{
    int found;
    size_t i = find(m, key, &found);
    if (found && val) *val = m->vals[i];
    return found;
}

int hccl_rt_map_del(hccl_rt_map *m, uintptr_t key, uint64_t *val)
{
    int found;
    size_t i = find(m, key, &found);
    if (!found) return 0;
    if (val) *val = m->vals[i];
    size_t mask = m->cap - 1;
    size_t hole = i;
    size_t j = (i + 1) & mask;
    /* Backward shift: move each following entry whose home slot does not lie
     * cyclically in (hole, j] into the hole. */
    while (m->keys[j] != 0) {
        size_t home = slot_of(m->keys[j], m->cap);
        int stays = (hole <= j) ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
        j = (j + 1) & mask;
    }
    m->keys[hole] = 0;
    m->vals[hole] = 0;
    m->len--;
    return 1;
}

void hccl_rt_map_each(const hccl_rt_map *m, void (*fn)(uintptr_t key, uint64_t val, void *ctx), void *ctx)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) fn(m->keys[i], m->vals[i], ctx);
}

void hccl_rt_map_clear(hccl_rt_map *m)
{
    hccl_free(m->keys);
    hccl_free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = 0;
    m->len = 0;
}
