/*
 * ranktable.c - parse and validate a rank table JSON file (versions "1.0" and "1.2").
 *
 * Layout (every value is a JSON string):
 *
 *   {"status":"completed", "version":"1.0"|"1.2", "server_count":"S",
 *    "server_list":[ {"server_id":"node_0", "host_ip":"IP"?,
 *                     "device":[ {"device_id":"D", "rank_id":"R", "device_ip":"IP"?,
 *                                 "device_port":"P"?, "super_device_id":"X"?}, ...]}, ...],
 *    "super_pod_list":[ {"super_pod_id":"0",                         (1.2 only)
 *                        "server_list":[{"server_id":"node_0"}, ...]}, ...]}
 *
 * Rules enforced, each failure naming the field by its path (server_list[1].device[0].rank_id):
 *   - status is "completed"; version is "1.0" or "1.2"; server_count equals the list length;
 *   - server_id is non-empty, at most 64 characters and unique; lists are non-empty;
 *   - rank ids are integers covering 0..n-1 exactly once, n <= 65536; server s owns exactly
 *     the ranks [base_s, base_s + ndev_s) where base_s is the device count of the servers
 *     before it (so each server is one contiguous range, servers in increasing rank order);
 *   - device_ip (falling back to host_ip) is an IPv4 or IPv6 literal; device_port 1..65535
 *     (absent = 0); device_id an integer, unique within its server; super_device_id an integer,
 *     unique within its super pod (absent = UINT32_MAX);
 *   - 1.2: every server is in exactly one super pod, super pods name only known servers and
 *     the servers of one super pod are contiguous in server_list.
 * Keys are looked up case-sensitively and a key repeated in one object is rejected, so a
 * table cannot mean two things. Hostile strings are quoted shortened and sanitized.
 * For v1.0 there is one implicit super pod: nsuperpods = 1, super_pod_index 0, id "".
 */
#include "boot/ranktable.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/util.h"

#define MAX_RANKS HCCL_COMM_MAX_RANKS
#define MAX_FILE_BYTES ((size_t)64 << 20)
#define MAX_ID_LEN 64

typedef struct ctx {
    char *err;
    size_t errlen;
    const char *prefix; /* "rank table" or "rank table PATH" */
} ctx;

static HcclResult fail(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static HcclResult fail(const ctx *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->err && c->errlen) snprintf(c->err, c->errlen, "%s: %s", c->prefix, msg);
    HCCL_INFO(BOOT, "%s: %s", c->prefix, msg);
    return HCCL_E_PARA;
}

/* The parse ran out of memory: said in c->err. */
static HcclResult out_of_memory(const ctx *c)
{
    if (c->err && c->errlen) snprintf(c->err, c->errlen, "%s: out of memory", c->prefix);
    return HCCL_E_MEMORY;
}

/* Quote a (possibly hostile) string for a message: at most 40 characters, printable only
 * (other bytes become '?'), with " and \ escaped. */
static const char *quote(const char *s, char *buf, size_t len)
{
    size_t o = 0, i = 0;
    buf[o++] = '"';
    for (; s[i] && i < 40 && o + 7 < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') buf[o++] = '\\';
        buf[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (s[i]) {
        buf[o++] = '.';
        buf[o++] = '.';
        buf[o++] = '.';
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

static const char *json_type(const cJSON *it)
{
    if (cJSON_IsString(it)) return "a string";
    if (cJSON_IsNumber(it)) return "a number";
    if (cJSON_IsBool(it)) return "a boolean";
    if (cJSON_IsNull(it)) return "null";
    if (cJSON_IsArray(it)) return "an array";
    if (cJSON_IsObject(it)) return "an object";
    return "an invalid value";
}

/* Find key in obj, rejecting a repeated key. *out = NULL when absent. */
static HcclResult get_item(const ctx *c, const cJSON *obj, const char *path, const char *key, cJSON **out)
{
    cJSON *found = NULL;
    for (cJSON *it = obj->child; it; it = it->next) {
        if (!it->string || strcmp(it->string, key) != 0) continue;
        if (found) return fail(c, "%s%s%s: the key appears twice", path, *path ? "." : "", key);
        found = it;
    }
    *out = found;
    return HCCL_SUCCESS;
}

/* A string field: *out = NULL when absent and optional. */
static HcclResult get_str(const ctx *c, const cJSON *obj, const char *path, const char *key, int required,
                          const char **out)
{
    cJSON *it;
    CHECK(get_item(c, obj, path, key, &it));
    const char *dot = *path ? "." : "";
    *out = NULL;
    if (!it) return required ? fail(c, "%s%s%s: missing", path, dot, key) : HCCL_SUCCESS;
    if (!cJSON_IsString(it) || !it->valuestring)
        return fail(c, "%s%s%s: expected a string (all rank table values are strings, e.g. \"0\"), found %s", path,
                    dot, key, json_type(it));
    *out = it->valuestring;
    return HCCL_SUCCESS;
}

/* Strict unsigned decimal: digits only, no sign, space or exponent; value <= max. */
static HcclResult parse_uint(const ctx *c, const char *path, const char *key, const char *s, uint64_t max,
                             uint64_t *out)
{
    char q[64];
    const char *dot = *path ? "." : "";
    uint64_t v = 0;
    if (!*s) return fail(c, "%s%s%s: \"\" is not a non-negative integer", path, dot, key);
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return fail(c, "%s%s%s: %s is not a non-negative integer", path, dot, key, quote(s, q, sizeof q));
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10) {
            return fail(c, "%s%s%s: %s is out of range (at most %llu)", path, dot, key, quote(s, q, sizeof q),
                        (unsigned long long)max);
        }
        v = v * 10 + d;
    }
    *out = v;
    return HCCL_SUCCESS;
}

static HcclResult get_uint(const ctx *c, const cJSON *obj, const char *path, const char *key, int required,
                           uint64_t max, uint64_t *out, int *present)
{
    const char *s;
    CHECK(get_str(c, obj, path, key, required, &s));
    if (present) *present = s != NULL;
    if (!s) return HCCL_SUCCESS;
    return parse_uint(c, path, key, s, max, out);
}

/* IPv4 or IPv6 literal; IPv6 may carry a zone ("fe80::1%eth0"). */
static int valid_ip(const char *s, size_t cap)
{
    unsigned char buf[16];
    char tmp[64];
    size_t n = strlen(s);
    if (n == 0 || n >= cap || n >= sizeof tmp) return 0;
    if (inet_pton(AF_INET, s, buf) == 1) return 1;
    memcpy(tmp, s, n + 1);
    char *zone = strchr(tmp, '%');
    if (zone) {
        *zone++ = '\0';
        if (!*zone || strlen(zone) > 15) return 0;
        for (const char *p = zone; *p; p++)
            if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '/') return 0;
    }
    return inet_pton(AF_INET6, tmp, buf) == 1;
}

static HcclResult check_id(const ctx *c, const char *path, const char *key, const char *s)
{
    char q[64];
    size_t n = strlen(s);
    if (n == 0) return fail(c, "%s.%s: empty", path, key);
    if (n > MAX_ID_LEN)
        return fail(c, "%s.%s: %s is %zu characters long (at most %d)", path, key, quote(s, q, sizeof q), n,
                    MAX_ID_LEN);
    return HCCL_SUCCESS;
}

/* Server ids sorted for duplicate detection and lookup by super pods. */
typedef struct sid {
    const char *id;
    uint32_t index;
} sid;

static int sid_cmp(const void *a, const void *b)
{
    const sid *x = a, *y = b;
    int r = strcmp(x->id, y->id);
    return r ? r : (x->index > y->index) - (x->index < y->index);
}

static const sid *sid_find(const sid *v, uint32_t n, const char *id)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int r = strcmp(v[mid].id, id);
        if (r == 0) return &v[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

typedef struct parse_state {
    const ctx *c;
    hccl_ranktable *rt;
    cJSON *servers;
    uint32_t nservers;
    sid *sids;          /* nservers, sorted by id */
    uint32_t *owner;    /* per rank: 1 + position of the device that claimed it (0 = none) */
    uint32_t *pod_of;   /* per server: 1 + super pod index (0 = none) */
    const char **srv_id; /* per server id, in list order */
} parse_state;

/* One device of server s; base/ndev are the rank range this server must own. */
static HcclResult parse_device(parse_state *ps, const cJSON *dev, uint32_t s, uint32_t d, uint32_t base,
                               uint32_t ndev, const char *host_ip, uint32_t flat)
{
    const ctx *c = ps->c;
    char path[96], q[64];
    uint64_t rank_id = 0, device_id = 0, port = 0, sdid = 0;
    int has_port = 0, has_sdid = 0;
    const char *dip;
    snprintf(path, sizeof path, "server_list[%u].device[%u]", s, d);
    if (!cJSON_IsObject(dev)) return fail(c, "%s: expected an object, found %s", path, json_type(dev));
    CHECK(get_uint(c, dev, path, "device_id", 1, UINT32_MAX, &device_id, NULL));
    CHECK(get_uint(c, dev, path, "rank_id", 1, UINT32_MAX, &rank_id, NULL));
    CHECK(get_str(c, dev, path, "device_ip", 0, &dip));
    CHECK(get_uint(c, dev, path, "device_port", 0, UINT64_MAX, &port, &has_port));
    CHECK(get_uint(c, dev, path, "super_device_id", 0, UINT32_MAX - 1, &sdid, &has_sdid));
    if (has_port && (port < 1 || port > 65535))
        return fail(c, "%s.device_port: %llu is not a port number in 1..65535", path, (unsigned long long)port);
    if (dip && !valid_ip(dip, sizeof ps->rt->ranks[0].device_ip))
        return fail(c, "%s.device_ip: %s is not an IPv4 or IPv6 address", path, quote(dip, q, sizeof q));
    if (!dip && !host_ip)
        return fail(c, "%s.device_ip: missing, and server_list[%u] has no host_ip to fall back to", path, s);

    uint32_t n = ps->rt->nranks;
    if (rank_id >= n)
        return fail(c, "%s.rank_id: %llu is out of range: the table has %u ranks, so rank ids are 0..%u", path,
                    (unsigned long long)rank_id, n, n - 1);
    if (ps->owner[rank_id]) {
        /* Recover the position of the first claimant for the message. */
        uint32_t first = ps->owner[rank_id] - 1, fs = 0, acc = 0;
        for (;; fs++) {
            uint32_t cnt = (uint32_t)cJSON_GetArraySize(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ps->servers, (int)fs), "device"));
            if (first < acc + cnt) break;
            acc += cnt;
        }
        return fail(c, "%s.rank_id: %llu is a duplicate of server_list[%u].device[%u].rank_id", path,
                    (unsigned long long)rank_id, fs, first - acc);
    }
    if (rank_id < base || rank_id >= (uint64_t)base + ndev)
        return fail(c,
                    "%s.rank_id: %llu is not in %u..%u: each server's ranks must form one contiguous range and "
                    "servers must be listed in increasing rank order",
                    path, (unsigned long long)rank_id, base, base + ndev - 1);
    ps->owner[rank_id] = flat + 1;

    hccl_rt_rank *r = &ps->rt->ranks[rank_id];
    r->rank_id = (uint32_t)rank_id;
    r->device_id = (uint32_t)device_id;
    snprintf(r->server_id, sizeof r->server_id, "%s", ps->srv_id[s]);
    snprintf(r->host_ip, sizeof r->host_ip, "%s", host_ip ? host_ip : "");
    snprintf(r->device_ip, sizeof r->device_ip, "%s", dip ? dip : host_ip);
    r->device_port = (uint16_t)port;
    r->server_index = s;
    r->super_pod_index = 0;
    r->super_device_id = has_sdid ? (uint32_t)sdid : UINT32_MAX;
    return HCCL_SUCCESS;
}

/* First pass over server_list: shape, ids, device counts; allocates the rank array. */
static HcclResult scan_servers(parse_state *ps)
{
    const ctx *c = ps->c;
    uint64_t total = 0;
    uint32_t s = 0;
    char path[64], q1[64];
    const char *ip;
    for (cJSON *srv = ps->servers->child; srv; srv = srv->next, s++) {
        snprintf(path, sizeof path, "server_list[%u]", s);
        if (!cJSON_IsObject(srv)) return fail(c, "%s: expected an object, found %s", path, json_type(srv));
        CHECK(get_str(c, srv, path, "server_id", 1, &ps->srv_id[s]));
        CHECK(check_id(c, path, "server_id", ps->srv_id[s]));
        CHECK(get_str(c, srv, path, "host_ip", 0, &ip));
        if (ip && !valid_ip(ip, sizeof ps->rt->ranks[0].host_ip))
            return fail(c, "%s.host_ip: %s is not an IPv4 or IPv6 address", path, quote(ip, q1, sizeof q1));
        cJSON *devs;
        CHECK(get_item(c, srv, path, "device", &devs));
        if (!devs) return fail(c, "%s.device: missing", path);
        if (!cJSON_IsArray(devs)) return fail(c, "%s.device: expected an array, found %s", path, json_type(devs));
        int nd = cJSON_GetArraySize(devs);
        if (nd <= 0) return fail(c, "%s.device: empty (every server needs at least one device)", path);
        total += (uint64_t)nd;
        if (total > MAX_RANKS) return fail(c, "server_list: more than %u ranks in total", MAX_RANKS);
        ps->sids[s].id = ps->srv_id[s];
        ps->sids[s].index = s;
    }
    qsort(ps->sids, ps->nservers, sizeof(sid), sid_cmp);
    for (uint32_t i = 1; i < ps->nservers; i++) {
        if (strcmp(ps->sids[i].id, ps->sids[i - 1].id) == 0)
            return fail(c, "server_list[%u].server_id: %s is a duplicate of server_list[%u].server_id",
                        ps->sids[i].index, quote(ps->sids[i].id, q1, sizeof q1), ps->sids[i - 1].index);
    }
    ps->rt->nranks = (uint32_t)total;
    ps->rt->ranks = hccl_calloc(total, sizeof(hccl_rt_rank));
    ps->owner = hccl_calloc(total, sizeof(uint32_t));
    if (!ps->rt->ranks || !ps->owner) {
        return out_of_memory(c);
    }
    return HCCL_SUCCESS;
}

/* Device of a server for duplicate detection: its device_id and position. */
typedef struct did {
    uint32_t id, pos;
} did;

static int did_cmp(const void *a, const void *b)
{
    const did *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* device_id names a physical device of its server: two ranks on one device is a broken
 * table (as HCCL says too). Server s owns ranks [base, base + ndev). */
static HcclResult check_device_ids(parse_state *ps, uint32_t s, uint32_t base, uint32_t ndev, did *tmp)
{
    for (uint32_t i = 0; i < ndev; i++)
        tmp[i] = (did){ps->rt->ranks[base + i].device_id, ps->owner[base + i] - 1 - base};
    qsort(tmp, ndev, sizeof *tmp, did_cmp);
    for (uint32_t i = 1; i < ndev; i++) {
        if (tmp[i].id == tmp[i - 1].id)
            return fail(ps->c, "server_list[%u].device[%u].device_id: %u is a duplicate of server_list[%u].device[%u]."
                        "device_id (one rank per device of a server)",
                        s, tmp[i].pos, tmp[i].id, s, tmp[i - 1].pos);
    }
    return HCCL_SUCCESS;
}

static HcclResult parse_servers(parse_state *ps)
{
    uint32_t base = 0, s = 0;
    did *tmp = hccl_calloc(ps->rt->nranks, sizeof *tmp);
    if (!tmp) {
        return out_of_memory(ps->c);
    }
    HcclResult res = HCCL_SUCCESS;
    for (cJSON *srv = ps->servers->child; srv && res == HCCL_SUCCESS; srv = srv->next, s++) {
        const char *host_ip;
        cJSON *devs = cJSON_GetObjectItemCaseSensitive(srv, "device");
        uint32_t ndev = (uint32_t)cJSON_GetArraySize(devs), d = 0;
        res = get_str(ps->c, srv, "", "host_ip", 0, &host_ip);
        for (cJSON *dev = devs->child; dev && res == HCCL_SUCCESS; dev = dev->next, d++)
            res = parse_device(ps, dev, s, d, base, ndev, host_ip, base + d);
        if (res == HCCL_SUCCESS) res = check_device_ids(ps, s, base, ndev, tmp);
        base += ndev;
    }
    hccl_free(tmp);
    return res;
}

/* Position of rank r's device in the table: server_list[*s].device[*d]. */
static void device_pos(const parse_state *ps, uint32_t r, uint32_t *s, uint32_t *d)
{
    uint32_t base = r;
    *s = ps->rt->ranks[r].server_index;
    while (base > 0 && ps->rt->ranks[base - 1].server_index == *s) base--;
    *d = ps->owner[r] - 1 - base;
}

/* super_device_id names a device within its super pod: two devices of one super pod
 * with the same one are a broken table. Absent ids (UINT32_MAX) are not compared. The
 * ranks of a super pod are contiguous (its servers are). */
static HcclResult check_super_device_ids(parse_state *ps)
{
    uint32_t n = ps->rt->nranks;
    did *v = hccl_calloc(n, sizeof *v);
    if (!v) {
        return out_of_memory(ps->c);
    }
    HcclResult res = HCCL_SUCCESS;
    for (uint32_t lo = 0; lo < n && res == HCCL_SUCCESS;) {
        uint32_t hi = lo, k = 0;
        while (hi < n && ps->rt->ranks[hi].super_pod_index == ps->rt->ranks[lo].super_pod_index) {
            if (ps->rt->ranks[hi].super_device_id != UINT32_MAX) v[k++] = (did){ps->rt->ranks[hi].super_device_id, hi};
            hi++;
        }
        qsort(v, k, sizeof *v, did_cmp);
        for (uint32_t i = 1; i < k; i++) {
            if (v[i].id != v[i - 1].id) continue;
            uint32_t s1, d1, s0, d0;
            char q[64];
            device_pos(ps, v[i].pos, &s1, &d1);
            device_pos(ps, v[i - 1].pos, &s0, &d0);
            res = fail(ps->c,
                       "server_list[%u].device[%u].super_device_id: %u is a duplicate of "
                       "server_list[%u].device[%u].super_device_id in super pod %s",
                       s1, d1, v[i].id, s0, d0, quote(ps->rt->ranks[lo].super_pod_id, q, sizeof q));
            break;
        }
        lo = hi;
    }
    hccl_free(v);
    return res;
}

/* Version 1.2: super_pod_list assigns every server to exactly one contiguous super pod. */
static HcclResult parse_super_pods(parse_state *ps, const cJSON *root)
{
    const ctx *c = ps->c;
    char path[96], q1[64];
    cJSON *pods;
    CHECK(get_item(c, root, "", "super_pod_list", &pods));
    if (!pods) return fail(c, "super_pod_list: missing (required by version \"1.2\")");
    if (!cJSON_IsArray(pods)) return fail(c, "super_pod_list: expected an array, found %s", json_type(pods));
    int np = cJSON_GetArraySize(pods);
    if (np <= 0) return fail(c, "super_pod_list: empty");
    if ((uint32_t)np > ps->nservers)
        return fail(c, "super_pod_list: %d super pods for %u servers (each super pod needs a server)", np,
                    ps->nservers);
    const char **pod_ids = hccl_calloc((size_t)np, sizeof(char *));
    if (!pod_ids) {
        return out_of_memory(c);
    }
    HcclResult res = HCCL_SUCCESS;
    uint32_t p = 0;
    for (cJSON *pod = pods->child; pod; pod = pod->next, p++) {
        snprintf(path, sizeof path, "super_pod_list[%u]", p);
        if (!cJSON_IsObject(pod)) {
            res = fail(c, "%s: expected an object, found %s", path, json_type(pod));
            goto out;
        }
        CHECK_GOTO(get_str(c, pod, path, "super_pod_id", 1, &pod_ids[p]), res, out);
        CHECK_GOTO(check_id(c, path, "super_pod_id", pod_ids[p]), res, out);
        for (uint32_t k = 0; k < p; k++) {
            if (strcmp(pod_ids[k], pod_ids[p]) == 0) {
                res = fail(c, "%s.super_pod_id: %s is a duplicate of super_pod_list[%u].super_pod_id", path,
                           quote(pod_ids[p], q1, sizeof q1), k);
                goto out;
            }
        }
        cJSON *list;
        CHECK_GOTO(get_item(c, pod, path, "server_list", &list), res, out);
        if (!list || !cJSON_IsArray(list)) {
            res = list ? fail(c, "%s.server_list: expected an array, found %s", path, json_type(list))
                       : fail(c, "%s.server_list: missing", path);
            goto out;
        }
        if (cJSON_GetArraySize(list) <= 0) {
            res = fail(c, "%s.server_list: empty", path);
            goto out;
        }
        uint32_t lo = UINT32_MAX, hi = 0, cnt = 0, e = 0;
        for (cJSON *it = list->child; it; it = it->next, e++) {
            char epath[128];
            const char *id;
            snprintf(epath, sizeof epath, "%s.server_list[%u]", path, e);
            if (!cJSON_IsObject(it)) {
                res = fail(c, "%s: expected an object, found %s", epath, json_type(it));
                goto out;
            }
            CHECK_GOTO(get_str(c, it, epath, "server_id", 1, &id), res, out);
            const sid *f = sid_find(ps->sids, ps->nservers, id);
            if (!f) {
                res = fail(c, "%s.server_id: %s is not a server of server_list", epath, quote(id, q1, sizeof q1));
                goto out;
            }
            if (ps->pod_of[f->index]) {
                res = fail(c, "%s.server_id: %s is already in super_pod_list[%u]", epath, quote(id, q1, sizeof q1),
                           ps->pod_of[f->index] - 1);
                goto out;
            }
            ps->pod_of[f->index] = p + 1;
            lo = HCCL_MIN(lo, f->index);
            hi = HCCL_MAX(hi, f->index);
            cnt++;
        }
        if (hi - lo + 1 != cnt) {
            res = fail(c,
                       "%s.server_list: the servers of a super pod must be contiguous in server_list, but they "
                       "span server_list[%u..%u] with %u servers",
                       path, lo, hi, cnt);
            goto out;
        }
    }
    for (uint32_t s = 0; s < ps->nservers; s++) {
        if (!ps->pod_of[s]) {
            res = fail(c, "server_list[%u].server_id: %s is in no super pod of super_pod_list", s,
                       quote(ps->srv_id[s], q1, sizeof q1));
            goto out;
        }
    }
    for (uint32_t r = 0; r < ps->rt->nranks; r++) {
        hccl_rt_rank *rk = &ps->rt->ranks[r];
        rk->super_pod_index = ps->pod_of[rk->server_index] - 1;
        snprintf(rk->super_pod_id, sizeof rk->super_pod_id, "%s", pod_ids[rk->super_pod_index]);
    }
    CHECK_GOTO(check_super_device_ids(ps), res, out);
    ps->rt->nsuperpods = (uint32_t)np;
out:
    hccl_free(pod_ids);
    return res;
}

static HcclResult parse_root(parse_state *ps, const cJSON *root)
{
    const ctx *c = ps->c;
    const char *status, *version;
    char q1[64];
    uint64_t count;
    if (!cJSON_IsObject(root)) return fail(c, "the top level must be an object, found %s", json_type(root));
    CHECK(get_str(c, root, "", "status", 1, &status));
    if (strcmp(status, "completed") != 0)
        return fail(c, "status: %s, expected \"completed\"", quote(status, q1, sizeof q1));
    CHECK(get_str(c, root, "", "version", 1, &version));
    if (strcmp(version, "1.0") != 0 && strcmp(version, "1.2") != 0)
        return fail(c, "version: %s is not a supported version (\"1.0\" or \"1.2\")", quote(version, q1, sizeof q1));
    snprintf(ps->rt->version, sizeof ps->rt->version, "%s", version);
    CHECK(get_uint(c, root, "", "server_count", 1, UINT32_MAX, &count, NULL));
    CHECK(get_item(c, root, "", "server_list", &ps->servers));
    if (!ps->servers) return fail(c, "server_list: missing");
    if (!cJSON_IsArray(ps->servers))
        return fail(c, "server_list: expected an array, found %s", json_type(ps->servers));
    int ns = cJSON_GetArraySize(ps->servers);
    if (ns <= 0) return fail(c, "server_list: empty");
    if ((uint64_t)ns != count)
        return fail(c, "server_count: \"%llu\" does not match server_list, which has %d servers",
                    (unsigned long long)count, ns);
    if ((uint32_t)ns > MAX_RANKS) return fail(c, "server_list: more than %u servers", MAX_RANKS);
    ps->nservers = (uint32_t)ns;
    ps->rt->nservers = ps->nservers;
    ps->sids = hccl_calloc(ps->nservers, sizeof(sid));
    ps->srv_id = hccl_calloc(ps->nservers, sizeof(char *));
    ps->pod_of = hccl_calloc(ps->nservers, sizeof(uint32_t));
    if (!ps->sids || !ps->srv_id || !ps->pod_of) {
        return out_of_memory(c);
    }
    CHECK(scan_servers(ps));
    CHECK(parse_servers(ps));
    if (strcmp(version, "1.2") == 0) {
        CHECK(parse_super_pods(ps, root));
    } else {
        ps->rt->nsuperpods = 1;
    }
    return HCCL_SUCCESS;
}

/* Line and column (1-based) of offset off in text. */
static void locate(const char *text, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static HcclResult parse_text(const ctx *c, const char *json, size_t len, hccl_ranktable *rt)
{
    char q1[64];
    if (len > MAX_FILE_BYTES) return fail(c, "larger than %zu MiB", MAX_FILE_BYTES >> 20);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        size_t off = (end && end >= json && end <= json + len) ? (size_t)(end - json) : 0, line, col;
        locate(json, off, &line, &col);
        if (off >= len)
            return fail(c, "not valid JSON: the text ends early (line %zu, column %zu)", line, col);
        char near[41];
        size_t k = 0;
        for (; k < sizeof near - 1 && json[off + k] && json[off + k] != '\n'; k++) near[k] = json[off + k];
        near[k] = '\0';
        return fail(c, "not valid JSON: parsing stopped at line %zu, column %zu (byte %zu), near %s", line, col, off,
                    quote(near, q1, sizeof q1));
    }
    parse_state ps = {.c = c, .rt = rt};
    HcclResult res = parse_root(&ps, root);
    hccl_free(ps.sids);
    hccl_free(ps.srv_id);
    hccl_free(ps.pod_of);
    hccl_free(ps.owner);
    cJSON_Delete(root);
    if (res != HCCL_SUCCESS) {
        hccl_ranktable_free(rt);
        return res;
    }
    HCCL_INFO(BOOT, "%s: version %s, %u ranks on %u servers in %u super pods", c->prefix, rt->version, rt->nranks,
              rt->nservers, rt->nsuperpods);
    return HCCL_SUCCESS;
}

HcclResult hccl_ranktable_parse(const char *json, hccl_ranktable *rt, char *err, size_t errlen)
{
    ctx c = {err, errlen, "rank table"};
    if (err && errlen) err[0] = '\0';
    if (!rt) return fail(&c, "no output table given");
    memset(rt, 0, sizeof *rt);
    if (!json) return fail(&c, "no text given");
    return parse_text(&c, json, strnlen(json, MAX_FILE_BYTES + 1), rt);
}

HcclResult hccl_ranktable_load(const char *path, hccl_ranktable *rt, char *err, size_t errlen)
{
    char prefix[300], ebuf[128];
    ctx c = {err, errlen, "rank table"};
    if (err && errlen) err[0] = '\0';
    if (!rt) return fail(&c, "no output table given");
    memset(rt, 0, sizeof *rt);
    if (!path || !*path) return fail(&c, "no file name given");
    snprintf(prefix, sizeof prefix, "rank table %s", path);
    c.prefix = prefix;

    /* Non-blocking open, then only regular files: opening a FIFO blocks until a writer
     * comes, and a device or socket is no table either. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    const char *not_file = NULL;
    if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) errno = EISDIR;
        else not_file = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket"
                        : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file";
        if (!not_file) {
            close(fd);
            fd = -1;
        }
    }
    if (not_file) {
        close(fd);
        if (err && errlen) snprintf(err, errlen, "%s: cannot read: it is %s, not a regular file", prefix, not_file);
        HCCL_INFO(BOOT, "%s: cannot read: it is %s, not a regular file", prefix, not_file);
        return HCCL_E_OPEN_FILE_FAILURE;
    }
    FILE *f = NULL;
    if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        f = fdopen(fd, "rb");
        if (!f) {
            int e = errno;
            close(fd);
            errno = e;
        }
    }
    if (!f) {
        int e = errno;
        const char *why = strerror_r(e, ebuf, sizeof ebuf), *what = e == EISDIR ? "read" : "open";
        if (err && errlen) snprintf(err, errlen, "%s: cannot %s: %s", prefix, what, why);
        HCCL_INFO(BOOT, "%s: cannot %s: %s", prefix, what, why);
        return HCCL_E_OPEN_FILE_FAILURE;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = hccl_malloc(cap + 1);
    HcclResult res = HCCL_SUCCESS;
    if (!buf) {
        res = HCCL_E_MEMORY;
        if (err && errlen) snprintf(err, errlen, "%s: out of memory", prefix);
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > MAX_FILE_BYTES) {
                res = fail(&c, "larger than %zu MiB", MAX_FILE_BYTES >> 20);
                goto out;
            }
            size_t ncap = HCCL_MIN(cap * 2, MAX_FILE_BYTES + 1);
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                res = HCCL_E_MEMORY;
                if (err && errlen) snprintf(err, errlen, "%s: out of memory", prefix);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        const char *why = strerror_r(errno, ebuf, sizeof ebuf);
        if (err && errlen) snprintf(err, errlen, "%s: cannot read: %s", prefix, why);
        HCCL_INFO(BOOT, "%s: cannot read: %s", prefix, why);
        res = HCCL_E_OPEN_FILE_FAILURE;
        goto out;
    }
    buf[len] = '\0';
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        res = fail(&c, "contains a NUL byte at byte %zu", (size_t)(nul - buf));
        goto out;
    }
    res = parse_text(&c, buf, len, rt);
out:
    hccl_free(buf);
    fclose(f);
    return res;
}

void hccl_ranktable_free(hccl_ranktable *rt)
{
    if (!rt) return;
    hccl_free(rt->ranks);
    memset(rt, 0, sizeof *rt);
}
