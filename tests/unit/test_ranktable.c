/*
 * test_ranktable.c - rank table parser: good tables of versions 1.0 and 1.2 (one server of 8
 * ranks, several servers, super pods, limits), files, and one malformed case per rule, each
 * asserting HCCL_E_PARA and that the message names the field by its path.
 *
 * Malformed cases are mutations of a generated good table: replace one unique substring
 * (written with ' for ") and check the error text.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot/ranktable.h"
#include "tinytest.h"
#include "util/util.h"

/* ---- building tables ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *s)
{
    size_t l = strlen(s);
    if (b->n + l + 1 > b->cap) {
        b->cap = (b->n + l + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, l + 1);
    b->n += l;
}

/* ' -> " so tables can be written readably in C strings. */
static char *dq(const char *s)
{
    char *r = strdup(s);
    for (char *p = r; *p; p++)
        if (*p == '\'') *p = '"';
    return r;
}

/*
 * A good table: nservers servers "node_<s>" with host_ip 192.0.2.<10+s>, ndev devices each
 * (rank r = s*ndev+d, device_ip 10.x.y.z holding r, device_port 16667+d); version "1.2" adds npods super pods "pod<p>" of
 * consecutive servers and super_device_id 1000+rank.
 */
static char *gen(const char *version, unsigned nservers, unsigned ndev, unsigned npods)
{
    sbuf b = {0};
    char t[256];
    int v12 = strcmp(version, "1.2") == 0;
    snprintf(t, sizeof t, "{'status':'completed','version':'%s','server_count':'%u','server_list':[", version,
             nservers);
    put(&b, t);
    for (unsigned s = 0; s < nservers; s++) {
        snprintf(t, sizeof t, "%s{'server_id':'node_%u','host_ip':'192.0.%u.%u','device':[", s ? "," : "", s,
                 2 + s / 200, 10 + s % 200);
        put(&b, t);
        for (unsigned d = 0; d < ndev; d++) {
            unsigned r = s * ndev + d;
            snprintf(t, sizeof t, "%s{'device_id':'%u','device_ip':'10.%u.%u.%u','device_port':'%u','rank_id':'%u'",
                     d ? "," : "", d, r / 65536, r / 256 % 256, r % 256, 16667 + d, r);
            put(&b, t);
            if (v12) {
                snprintf(t, sizeof t, ",'super_device_id':'%u'", 1000 + r);
                put(&b, t);
            }
            put(&b, "}");
        }
        put(&b, "]}");
    }
    put(&b, "]");
    if (v12) {
        put(&b, ",'super_pod_list':[");
        unsigned per = nservers / npods;
        for (unsigned p = 0; p < npods; p++) {
            snprintf(t, sizeof t, "%s{'super_pod_id':'pod%u','server_list':[", p ? "," : "", p);
            put(&b, t);
            unsigned end = p == npods - 1 ? nservers : (p + 1) * per;
            for (unsigned s = p * per; s < end; s++) {
                snprintf(t, sizeof t, "%s{'server_id':'node_%u'}", s == p * per ? "" : ",", s);
                put(&b, t);
            }
            put(&b, "]}");
        }
        put(&b, "]");
    }
    put(&b, "}");
    for (char *p = b.p; *p; p++)
        if (*p == '\'') *p = '"';
    return b.p;
}

/* text with the first occurrence of from (' meaning ") replaced by to; NULL if absent. */
static char *mutate(const char *text, const char *from_q, const char *to_q)
{
    char *from = dq(from_q), *to = dq(to_q);
    const char *at = strstr(text, from);
    char *r = NULL;
    if (at && !strstr(at + 1, from)) {
        size_t a = (size_t)(at - text), fl = strlen(from), tl = strlen(to), n = strlen(text);
        r = malloc(n - fl + tl + 1);
        memcpy(r, text, a);
        memcpy(r + a, to, tl);
        memcpy(r + a + tl, at + fl, n - a - fl + 1);
    }
    free(from);
    free(to);
    return r;
}

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

/* Expect failure whose message contains want1 and want2 (either may be NULL). */
static void expect_fail(const char *json, const char *want1, const char *want2, int line)
{
    hccl_ranktable rt;
    char err[512];
    memset(&rt, 0x5a, sizeof rt);
    HcclResult r = hccl_ranktable_parse(json, &rt, err, sizeof err);
    TT_ASSERT_MSG(r == HCCL_E_PARA, "line %d: result %d, err '%s'", line, (int)r, err);
    TT_ASSERT_MSG(strncmp(err, "rank table: ", 12) == 0, "line %d: '%s'", line, err);
    TT_ASSERT_MSG(!want1 || has(err, want1), "line %d: '%s' lacks '%s'", line, err, want1);
    TT_ASSERT_MSG(!want2 || has(err, want2), "line %d: '%s' lacks '%s'", line, err, want2);
    TT_ASSERT_MSG(rt.ranks == NULL && rt.nranks == 0, "line %d: table not cleared", line);
    for (const char *p = err; *p; p++)
        TT_ASSERT_MSG((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "line %d: raw byte in '%s'", line, err);
}

/* Mutate the base and expect a failure. */
static void mut_fail(const char *base, const char *from, const char *to, const char *want1, const char *want2,
                     int line)
{
    char *j = mutate(base, from, to);
    TT_ASSERT_MSG(j != NULL, "line %d: '%s' is not unique in the base table", line, from);
    if (!j) return;
    expect_fail(j, want1, want2, line);
    free(j);
}
#define MUT(base, from, to, w1, w2) mut_fail(base, from, to, w1, w2, __LINE__)
#define BAD(json, w1, w2)                                                                              \
    do {                                                                                               \
        char *j_ = dq(json);                                                                           \
        expect_fail(j_, w1, w2, __LINE__);                                                             \
        free(j_);                                                                                      \
    } while (0)

/* ---- good tables ---- */

static void test_v10_single_server(void)
{
    char *j = gen("1.0", 1, 8, 0), err[256];
    hccl_ranktable rt;
    TT_ASSERT_EQ(hccl_ranktable_parse(j, &rt, err, sizeof err), HCCL_SUCCESS);
    TT_ASSERT(strcmp(rt.version, "1.0") == 0);
    TT_ASSERT_EQ(rt.nranks, 8);
    TT_ASSERT_EQ(rt.nservers, 1);
    TT_ASSERT_EQ(rt.nsuperpods, 1);
    for (uint32_t r = 0; r < 8; r++) {
        hccl_rt_rank *k = &rt.ranks[r];
        char ip[32];
        snprintf(ip, sizeof ip, "10.0.0.%u", r);
        TT_ASSERT_EQ(k->rank_id, r);
        TT_ASSERT_EQ(k->device_id, r);
        TT_ASSERT(strcmp(k->server_id, "node_0") == 0);
        TT_ASSERT(strcmp(k->host_ip, "192.0.2.10") == 0);
        TT_ASSERT_MSG(strcmp(k->device_ip, ip) == 0, "%s", k->device_ip);
        TT_ASSERT_EQ(k->device_port, 16667 + r);
        TT_ASSERT_EQ(k->server_index, 0);
        TT_ASSERT_EQ(k->super_pod_index, 0);
        TT_ASSERT(k->super_pod_id[0] == '\0');
        TT_ASSERT_EQ(k->super_device_id, UINT32_MAX);
    }
    hccl_ranktable_free(&rt);
    TT_ASSERT(rt.ranks == NULL && rt.nranks == 0);
    hccl_ranktable_free(&rt); /* twice is harmless */
    free(j);
}

static void test_v10_two_servers(void)
{
    /* Ranks listed out of order inside a server, device_ip and device_port absent on some. */
    char *j = dq("{'status':'completed','version':'1.0','server_count':'2','server_list':["
                 "{'server_id':'node_a','host_ip':'192.0.2.10','device':["
                 "{'device_id':'1','rank_id':'1'},{'device_id':'0','rank_id':'0','device_port':'60000'}]},"
                 "{'server_id':'node_b','device':["
                 "{'device_id':'7','device_ip':'2001:db8::7','device_port':'65535','rank_id':'3'},"
                 "{'device_id':'6','device_ip':'fe80::1%eth0','rank_id':'2'}]}]}");
    hccl_ranktable rt;
    char err[256] = "";
    TT_ASSERT_MSG(hccl_ranktable_parse(j, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT_EQ(rt.nranks, 4);
    TT_ASSERT_EQ(rt.nservers, 2);
    TT_ASSERT_EQ(rt.ranks[0].device_port, 60000);
    TT_ASSERT_EQ(rt.ranks[1].device_port, 0);
    TT_ASSERT(strcmp(rt.ranks[1].device_ip, "192.0.2.10") == 0); /* host_ip fallback */
    TT_ASSERT_EQ(rt.ranks[1].device_id, 1);
    TT_ASSERT(strcmp(rt.ranks[2].server_id, "node_b") == 0);
    TT_ASSERT(rt.ranks[2].host_ip[0] == '\0');
    TT_ASSERT(strcmp(rt.ranks[2].device_ip, "fe80::1%eth0") == 0);
    TT_ASSERT(strcmp(rt.ranks[3].device_ip, "2001:db8::7") == 0);
    TT_ASSERT_EQ(rt.ranks[3].device_port, 65535);
    TT_ASSERT_EQ(rt.ranks[3].device_id, 7);
    TT_ASSERT_EQ(rt.ranks[0].server_index, 0);
    TT_ASSERT_EQ(rt.ranks[3].server_index, 1);
    hccl_ranktable_free(&rt);
    free(j);

    /* Generated, with more servers; err may be NULL. */
    j = gen("1.0", 16, 3, 0);
    TT_ASSERT_EQ(hccl_ranktable_parse(j, &rt, NULL, 0), HCCL_SUCCESS);
    TT_ASSERT_EQ(rt.nranks, 48);
    TT_ASSERT_EQ(rt.nservers, 16);
    for (uint32_t r = 0; r < 48; r++) TT_ASSERT_EQ(rt.ranks[r].server_index, r / 3);
    TT_ASSERT(strcmp(rt.ranks[47].server_id, "node_15") == 0);
    hccl_ranktable_free(&rt);
    free(j);
}

static void test_v12_super_pods(void)
{
    char *j = gen("1.2", 4, 2, 2), err[256] = "";
    hccl_ranktable rt;
    TT_ASSERT_MSG(hccl_ranktable_parse(j, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT(strcmp(rt.version, "1.2") == 0);
    TT_ASSERT_EQ(rt.nranks, 8);
    TT_ASSERT_EQ(rt.nservers, 4);
    TT_ASSERT_EQ(rt.nsuperpods, 2);
    for (uint32_t r = 0; r < 8; r++) {
        TT_ASSERT_EQ(rt.ranks[r].server_index, r / 2);
        TT_ASSERT_EQ(rt.ranks[r].super_pod_index, r / 4);
        TT_ASSERT(strcmp(rt.ranks[r].super_pod_id, r < 4 ? "pod0" : "pod1") == 0);
        TT_ASSERT_EQ(rt.ranks[r].super_device_id, 1000 + r);
    }
    hccl_ranktable_free(&rt);
    free(j);

    /* Super pods listed in the other order, servers inside a pod in any order; no super_device_id. */
    j = dq("{'status':'completed','version':'1.2','server_count':'3','server_list':["
           "{'server_id':'a','host_ip':'10.0.0.1','device':[{'device_id':'0','rank_id':'0'}]},"
           "{'server_id':'b','host_ip':'10.0.0.2','device':[{'device_id':'0','rank_id':'1'}]},"
           "{'server_id':'c','host_ip':'10.0.0.3','device':[{'device_id':'0','rank_id':'2'}]}],"
           "'super_pod_list':[{'super_pod_id':'late','server_list':[{'server_id':'c'},{'server_id':'b'}]},"
           "{'super_pod_id':'early','server_list':[{'server_id':'a'}]}]}");
    TT_ASSERT_MSG(hccl_ranktable_parse(j, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT_EQ(rt.nsuperpods, 2);
    TT_ASSERT_EQ(rt.ranks[0].super_pod_index, 1);
    TT_ASSERT_EQ(rt.ranks[1].super_pod_index, 0);
    TT_ASSERT_EQ(rt.ranks[2].super_pod_index, 0);
    TT_ASSERT(strcmp(rt.ranks[0].super_pod_id, "early") == 0);
    TT_ASSERT(strcmp(rt.ranks[2].super_pod_id, "late") == 0);
    TT_ASSERT_EQ(rt.ranks[2].super_device_id, UINT32_MAX);
    hccl_ranktable_free(&rt);
    free(j);
}

static void test_limits(void)
{
    hccl_ranktable rt;
    char err[256] = "";
    /* 8192 servers x 8 = 65536 ranks: the maximum. */
    char *j = gen("1.0", 8192, 8, 0);
    TT_ASSERT_MSG(hccl_ranktable_parse(j, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT_EQ(rt.nranks, 65536);
    if (rt.ranks) TT_ASSERT_EQ(rt.ranks[65535].server_index, 8191);
    hccl_ranktable_free(&rt);
    free(j);
    /* One more rank is too many. */
    j = gen("1.0", 8192, 8, 0);
    char *k = mutate(j, "'rank_id':'65535'}", "'rank_id':'65535'},{'device_id':'9','rank_id':'65536'}");
    free(j);
    expect_fail(k, "more than 65536 ranks", NULL, __LINE__);
    free(k);

    /* Allocation failures are reported, never crash. */
    j = gen("1.2", 4, 2, 2);
    int ok = 0;
    for (long n = 1; n < 20 && !ok; n++) {
        hccl_alloc_fail_after(n);
        HcclResult r = hccl_ranktable_parse(j, &rt, err, sizeof err);
        hccl_alloc_fail_after(0);
        TT_ASSERT_MSG(r == HCCL_SUCCESS || r == HCCL_E_MEMORY, "n=%ld r=%d %s", n, (int)r, err);
        if (r == HCCL_SUCCESS) {
            ok = 1;
            TT_ASSERT_EQ(rt.nranks, 8);
            hccl_ranktable_free(&rt);
        } else {
            TT_ASSERT(rt.ranks == NULL);
            TT_ASSERT(has(err, "out of memory"));
        }
    }
    TT_ASSERT(ok);
    free(j);
}

/* ---- malformed ---- */

static void test_not_json(void)
{
    expect_fail("", "not valid JSON", NULL, __LINE__);
    expect_fail("not json", "not valid JSON", "line 1, column 1", __LINE__);
    BAD("{'status':'completed',\n 'version':'1.0',\n 'server_count' '2'}", "not valid JSON", "line 3, column 17");
    BAD("{'status':'completed'", "not valid JSON", "ends early");
    BAD("{'status':'completed'} trailing", "not valid JSON", "trailing");
    BAD("[]", "top level must be an object", "an array");
    BAD("'x'", "top level must be an object", NULL);
    /* Deep nesting: beyond cJSON's limit, and within it but in the wrong place. */
    size_t depth = 200000;
    char *deep = malloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    expect_fail(deep, "not valid JSON", NULL, __LINE__);
    free(deep);
    char *base = gen("1.0", 2, 2, 0);
    sbuf b = {0};
    put(&b, "'rank_id':");
    for (int i = 0; i < 900; i++) put(&b, "[");
    for (int i = 0; i < 900; i++) put(&b, "]");
    char *to = b.p;
    MUT(base, "'rank_id':'3'", to, "server_list[1].device[1].rank_id: expected a string", "an array");
    free(to);
    free(base);
    hccl_ranktable rt;
    char err[64];
    TT_ASSERT_EQ(hccl_ranktable_parse(NULL, &rt, err, sizeof err), HCCL_E_PARA);
    TT_ASSERT_EQ(hccl_ranktable_parse("{}", NULL, err, sizeof err), HCCL_E_PARA);
    /* Tiny and absent error buffers. */
    TT_ASSERT_EQ(hccl_ranktable_parse("{}", &rt, err, 5), HCCL_E_PARA);
    TT_ASSERT_EQ(strlen(err), 4);
    TT_ASSERT_EQ(hccl_ranktable_parse("{}", &rt, NULL, 0), HCCL_E_PARA);
}

static void test_top_level_fields(void)
{
    char *b = gen("1.0", 2, 2, 0);
    MUT(b, "'status':'completed',", "", "status: missing", NULL);
    MUT(b, "'status':'completed'", "'status':'initializing'", "status: \"initializing\"", "completed");
    MUT(b, "'status':'completed'", "'status':1", "status: expected a string", "a number");
    MUT(b, "'status':'completed'", "'status':'completed','status':'completed'", "status: the key appears twice",
        NULL);
    MUT(b, "'version':'1.0',", "", "version: missing", NULL);
    MUT(b, "'version':'1.0'", "'version':'2.0'", "version: \"2.0\" is not a supported version", NULL);
    MUT(b, "'version':'1.0'", "'version':null", "version: expected a string", "null");
    MUT(b, "'server_count':'2',", "", "server_count: missing", NULL);
    MUT(b, "'server_count':'2'", "'server_count':'3'", "server_count", "2 servers");
    MUT(b, "'server_count':'2'", "'server_count':'two'", "server_count: \"two\" is not a non-negative integer",
        NULL);
    MUT(b, "'server_count':'2'", "'server_count':2", "server_count: expected a string", "a number");
    free(b);
    BAD("{'status':'completed','version':'1.0','server_count':'0','server_list':[]}", "server_list: empty", NULL);
    BAD("{'status':'completed','version':'1.0','server_count':'1'}", "server_list: missing", NULL);
    BAD("{'status':'completed','version':'1.0','server_count':'1','server_list':{}}", "server_list: expected an array",
        "an object");
}

static void test_server_fields(void)
{
    char *b = gen("1.0", 2, 2, 0);
    char id65[100] = "{'server_id':'", long_id[80];
    memset(long_id, 'x', 65);
    long_id[65] = '\0';
    strcat(id65, long_id);
    strcat(id65, "'");
    BAD("{'status':'completed','version':'1.0','server_count':'2','server_list':["
        "{'server_id':'a','host_ip':'10.0.0.1','device':[{'device_id':'0','rank_id':'0'}]},7]}",
        "server_list[1]: expected an object", "a number");
    MUT(b, "'server_id':'node_1',", "", "server_list[1].server_id: missing", NULL);
    MUT(b, "'server_id':'node_1'", "'server_id':''", "server_list[1].server_id: empty", NULL);
    MUT(b, "{'server_id':'node_1'", id65, "server_list[1].server_id", "65 characters long (at most 64)");
    MUT(b, "'server_id':'node_1'", "'server_id':'node_0'", "server_list[1].server_id: \"node_0\" is a duplicate",
        "server_list[0].server_id");
    MUT(b, "'host_ip':'192.0.2.11'", "'host_ip':'host-1'", "server_list[1].host_ip: \"host-1\" is not an IPv4", NULL);
    MUT(b, "'host_ip':'192.0.2.11','device':[{'device_id':'0','device_ip':'10.0.0.2','device_port':'16667','rank_id':'2'},"
           "{'device_id':'1','device_ip':'10.0.0.3','device_port':'16668','rank_id':'3'}]",
        "'host_ip':'192.0.2.11'", "server_list[1].device: missing", NULL);
    MUT(b, "'host_ip':'192.0.2.11','device':[{'device_id':'0','device_ip':'10.0.0.2','device_port':'16667','rank_id':'2'},"
           "{'device_id':'1','device_ip':'10.0.0.3','device_port':'16668','rank_id':'3'}]",
        "'host_ip':'192.0.2.11','device':[]", "server_list[1].device: empty", NULL);
    MUT(b, "'host_ip':'192.0.2.11','device':[{'device_id':'0','device_ip':'10.0.0.2','device_port':'16667','rank_id':'2'},"
           "{'device_id':'1','device_ip':'10.0.0.3','device_port':'16668','rank_id':'3'}]",
        "'host_ip':'192.0.2.11','device':'0'", "server_list[1].device: expected an array", NULL);
    MUT(b, "{'device_id':'1','device_ip':'10.0.0.3','device_port':'16668','rank_id':'3'}", "[]",
        "server_list[1].device[1]: expected an object", "an array");
    free(b);
}

static void test_rank_ids(void)
{
    char *b = gen("1.0", 2, 2, 0);
    static const char *const bad_ints[] = {"x", "-1", "1e3", " 1", "1 ", "+1", "0x1", "1.0", ""};
    for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++) {
        char to[64];
        snprintf(to, sizeof to, "'rank_id':'%s'", bad_ints[i]);
        MUT(b, "'rank_id':'1'", to, "server_list[0].device[1].rank_id:", "is not a non-negative integer");
    }
    MUT(b, "'rank_id':'1'", "'rank_id':'99999999999999999999'", "server_list[0].device[1].rank_id:",
        "out of range");
    MUT(b, "'rank_id':'1'", "'rank_id':'4294967296'", "server_list[0].device[1].rank_id:", "out of range");
    MUT(b, "'rank_id':'1'", "'rank_id':1", "server_list[0].device[1].rank_id: expected a string", "a number");
    MUT(b, "'rank_id':'1'", "'rank_id':'\\u0001\\u001b[31m'", "server_list[0].device[1].rank_id: \"??[31m\"", NULL);
    MUT(b, ",'rank_id':'1'", "", "server_list[0].device[1].rank_id: missing", NULL);
    MUT(b, "'rank_id':'1'", "'rank_id':'1','rank_id':'1'", "server_list[0].device[1].rank_id: the key appears twice",
        NULL);
    /* Duplicate, gap, interleaving, decreasing order. */
    MUT(b, "'rank_id':'1'", "'rank_id':'0'", "server_list[0].device[1].rank_id: 0 is a duplicate",
        "server_list[0].device[0].rank_id");
    MUT(b, "'rank_id':'3'", "'rank_id':'4'", "server_list[1].device[1].rank_id: 4 is out of range", "0..3");
    char *y;
    y = dq("{'status':'completed','version':'1.0','server_count':'2','server_list':["
           "{'server_id':'a','host_ip':'10.0.0.1','device':[{'device_id':'0','rank_id':'0'},{'device_id':'1','rank_id':'2'}]},"
           "{'server_id':'b','host_ip':'10.0.0.2','device':[{'device_id':'0','rank_id':'1'},{'device_id':'1','rank_id':'3'}]}]}");
    expect_fail(y, "server_list[0].device[1].rank_id: 2 is not in 0..1", "contiguous", __LINE__);
    free(y);
    BAD("{'status':'completed','version':'1.0','server_count':'2','server_list':["
        "{'server_id':'a','host_ip':'10.0.0.1','device':[{'device_id':'0','rank_id':'2'},{'device_id':'1','rank_id':'3'}]},"
        "{'server_id':'b','host_ip':'10.0.0.2','device':[{'device_id':'0','rank_id':'0'},{'device_id':'1','rank_id':'1'}]}]}",
        "server_list[0].device[0].rank_id: 2 is not in 0..1", "increasing rank order");
    /* Duplicate across servers, the second one reported with the first's position. */
    BAD("{'status':'completed','version':'1.0','server_count':'2','server_list':["
        "{'server_id':'a','host_ip':'10.0.0.1','device':[{'device_id':'0','rank_id':'0'},{'device_id':'1','rank_id':'1'}]},"
        "{'server_id':'b','host_ip':'10.0.0.2','device':[{'device_id':'0','rank_id':'1'}]}]}",
        "server_list[1].device[0].rank_id: 1 is a duplicate of server_list[0].device[1].rank_id", NULL);
    free(b);
}

static void test_device_fields(void)
{
    char *b = gen("1.0", 2, 2, 0);
    const char *dip = "'device_ip':'10.0.0.3'";
    MUT(b, dip, "'device_ip':'300.1.1.1'", "server_list[1].device[1].device_ip: \"300.1.1.1\" is not an IPv4", NULL);
    MUT(b, dip, "'device_ip':'1.2.3'", "server_list[1].device[1].device_ip", "not an IPv4 or IPv6");
    MUT(b, dip, "'device_ip':'node-1'", "server_list[1].device[1].device_ip", NULL);
    MUT(b, dip, "'device_ip':''", "server_list[1].device[1].device_ip", NULL);
    MUT(b, dip, "'device_ip':'fe80::1%'", "server_list[1].device[1].device_ip", NULL);
    MUT(b, dip, "'device_ip':' 1.2.3.4'", "server_list[1].device[1].device_ip", NULL);
    MUT(b, dip, "'device_ip':4", "server_list[1].device[1].device_ip: expected a string", NULL);
    /* device_ip absent and the server has no host_ip. */
    char *x = mutate(b, "'host_ip':'192.0.2.11',", "");
    MUT(x, "'device_ip':'10.0.0.3',", "", "server_list[1].device[1].device_ip: missing", "no host_ip");
    free(x);
    const char *port = "'device_port':'16668','rank_id':'3'";
    MUT(b, port, "'device_port':'0','rank_id':'3'", "server_list[1].device[1].device_port: 0 is not a port", NULL);
    MUT(b, port, "'device_port':'65536','rank_id':'3'", "server_list[1].device[1].device_port: 65536", "1..65535");
    MUT(b, port, "'device_port':'-1','rank_id':'3'", "server_list[1].device[1].device_port: \"-1\"", NULL);
    MUT(b, port, "'device_port':'99999999999999999999999','rank_id':'3'", "server_list[1].device[1].device_port",
        "out of range");
    MUT(b, port, "'device_port':'http','rank_id':'3'", "server_list[1].device[1].device_port", NULL);
    MUT(b, "{'device_id':'1','device_ip':'10.0.0.3'", "{'device_id':'one','device_ip':'10.0.0.3'",
        "server_list[1].device[1].device_id: \"one\" is not a non-negative integer", NULL);
    MUT(b, "{'device_id':'1','device_ip':'10.0.0.3'", "{'device_ip':'10.0.0.3'",
        "server_list[1].device[1].device_id: missing", NULL);
    MUT(b, "'rank_id':'3'", "'rank_id':'3','super_device_id':'x'", "server_list[1].device[1].super_device_id", NULL);
    /* Two ranks on one device of a server (the same device_id on two servers is fine:
     * every base table has it). */
    MUT(b, "{'device_id':'1','device_ip':'10.0.0.3'", "{'device_id':'0','device_ip':'10.0.0.3'",
        "server_list[1].device[1].device_id: 0 is a duplicate of server_list[1].device[0].device_id", NULL);
    BAD("{'status':'completed','version':'1.0','server_count':'1','server_list':[{'server_id':'a','host_ip':'10.0.0.1',"
        "'device':[{'device_id':'5','rank_id':'1'},{'device_id':'7','rank_id':'2'},{'device_id':'5','rank_id':'0'}]}]}",
        "server_list[0].device[2].device_id: 5 is a duplicate of server_list[0].device[0].device_id", NULL);
    free(b);
}

static void test_super_pods_malformed(void)
{
    char *b = gen("1.2", 4, 2, 2);
    const char *pods = ",'super_pod_list':[{'super_pod_id':'pod0','server_list':[{'server_id':'node_0'},"
                       "{'server_id':'node_1'}]},{'super_pod_id':'pod1','server_list':[{'server_id':'node_2'},"
                       "{'server_id':'node_3'}]}]";
    MUT(b, pods, "", "super_pod_list: missing", "1.2");
    MUT(b, pods, ",'super_pod_list':{}", "super_pod_list: expected an array", NULL);
    MUT(b, pods, ",'super_pod_list':[]", "super_pod_list: empty", NULL);
    MUT(b, "{'super_pod_id':'pod1','server_list'", "'x',{'super_pod_id':'pod1','server_list'",
        "super_pod_list[1]: expected an object", NULL);
    MUT(b, "'super_pod_id':'pod1',", "", "super_pod_list[1].super_pod_id: missing", NULL);
    MUT(b, "'super_pod_id':'pod1'", "'super_pod_id':''", "super_pod_list[1].super_pod_id: empty", NULL);
    MUT(b, "'super_pod_id':'pod1'", "'super_pod_id':'pod0'", "super_pod_list[1].super_pod_id: \"pod0\" is a duplicate",
        NULL);
    MUT(b, "'super_pod_id':'pod1'", "'super_pod_id':1", "super_pod_list[1].super_pod_id: expected a string", NULL);
    /* Two devices of one super pod with one super_device_id (rank 1 is server 0's second
     * device, rank 2 server 1's first; both in pod0). */
    MUT(b, "'super_device_id':'1002'", "'super_device_id':'1001'",
        "server_list[1].device[0].super_device_id: 1001 is a duplicate of server_list[0].device[1].super_device_id",
        "\"pod0\"");
    {
        /* The same super_device_id in two super pods is fine. */
        char *j = mutate(b, "'super_device_id':'1005'", "'super_device_id':'1001'"), err[256] = "";
        hccl_ranktable rt;
        TT_ASSERT(j != NULL);
        TT_ASSERT_MSG(j && hccl_ranktable_parse(j, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
        if (j) hccl_ranktable_free(&rt);
        free(j);
    }
    MUT(b, "'super_pod_id':'pod1','server_list':[{'server_id':'node_2'},{'server_id':'node_3'}]",
        "'super_pod_id':'pod1'", "super_pod_list[1].server_list: missing", NULL);
    MUT(b, "'super_pod_id':'pod1','server_list':[{'server_id':'node_2'},{'server_id':'node_3'}]",
        "'super_pod_id':'pod1','server_list':[]", "super_pod_list[1].server_list: empty", NULL);
    MUT(b, "{'server_id':'node_3'}", "{'server_id':'node_9'}",
        "super_pod_list[1].server_list[1].server_id: \"node_9\" is not a server", NULL);
    MUT(b, "{'server_id':'node_3'}", "{'server_id':'node_3'},{'server_id':'node_0'}",
        "super_pod_list[1].server_list[2].server_id: \"node_0\" is already in super_pod_list[0]", NULL);
    MUT(b, "{'server_id':'node_3'}", "{'server_id':'node_3'},{'server_id':'node_3'}",
        "super_pod_list[1].server_list[2].server_id", "already in super_pod_list[1]");
    MUT(b, ",{'server_id':'node_3'}", "", "server_list[3].server_id: \"node_3\" is in no super pod", NULL);
    MUT(b, "{'server_id':'node_3'}", "{'id':'node_3'}", "super_pod_list[1].server_list[1].server_id: missing", NULL);
    MUT(b, "{'server_id':'node_3'}", "3", "super_pod_list[1].server_list[1]: expected an object", NULL);
    /* Not contiguous: pod0 = {node_0, node_2}, pod1 = {node_1, node_3}. */
    char *x = mutate(b, "{'server_id':'node_1'}]", "{'server_id':'node_2'}]");
    char *y = mutate(x, "[{'server_id':'node_2'},{'server_id':'node_3'}]", "[{'server_id':'node_1'},{'server_id':'node_3'}]");
    expect_fail(y, "super_pod_list[0].server_list: the servers of a super pod must be contiguous", "server_list[0..2]",
                __LINE__);
    free(x);
    free(y);
    MUT(b, "'super_device_id':'1005'", "'super_device_id':'x'",
        "server_list[2].device[1].super_device_id: \"x\" is not a non-negative integer", NULL);
    MUT(b, "'super_device_id':'1005'", "'super_device_id':'4294967295'", "server_list[2].device[1].super_device_id",
        "out of range");
    free(b);
}

/* ---- files ---- */

static void data_path(char *buf, size_t len, const char *name)
{
    const char *slash = strrchr(__FILE__, '/');
    int dir = slash ? (int)(slash - __FILE__) : 1;
    snprintf(buf, len, "%.*s/../data/ranktable/%s", dir, slash ? __FILE__ : ".", name);
}

static void test_files(void)
{
    hccl_ranktable rt;
    char err[512] = "", path[600];
    data_path(path, sizeof path, "v1.0_2servers.json");
    TT_ASSERT_MSG(hccl_ranktable_load(path, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT_EQ(rt.nranks, 16);
    TT_ASSERT_EQ(rt.nservers, 2);
    TT_ASSERT(strcmp(rt.ranks[9].device_ip, "192.0.2.11") == 0);
    hccl_ranktable_free(&rt);
    data_path(path, sizeof path, "v1.2_2superpods.json");
    TT_ASSERT_MSG(hccl_ranktable_load(path, &rt, err, sizeof err) == HCCL_SUCCESS, "%s", err);
    TT_ASSERT_EQ(rt.nranks, 8);
    TT_ASSERT_EQ(rt.nsuperpods, 2);
    TT_ASSERT_EQ(rt.ranks[7].super_pod_index, 1);
    TT_ASSERT_EQ(rt.ranks[7].super_device_id, 7);
    hccl_ranktable_free(&rt);
    data_path(path, sizeof path, "bad_interleaved.json");
    TT_ASSERT_EQ(hccl_ranktable_load(path, &rt, err, sizeof err), HCCL_E_PARA);
    TT_ASSERT_MSG(has(err, "bad_interleaved.json: server_list[0].device[1].rank_id"), "%s", err);
    data_path(path, sizeof path, "bad_syntax.json");
    TT_ASSERT_EQ(hccl_ranktable_load(path, &rt, err, sizeof err), HCCL_E_PARA);
    TT_ASSERT_MSG(has(err, "not valid JSON") && has(err, "line 6"), "%s", err);

    TT_ASSERT_EQ(hccl_ranktable_load("/nonexistent/rt.json", &rt, err, sizeof err), HCCL_E_OPEN_FILE_FAILURE);
    TT_ASSERT_MSG(has(err, "/nonexistent/rt.json") && has(err, "No such file"), "%s", err);
    TT_ASSERT_EQ(hccl_ranktable_load("/", &rt, err, sizeof err), HCCL_E_OPEN_FILE_FAILURE);
    TT_ASSERT_MSG(has(err, "Is a directory"), "%s", err);
    TT_ASSERT_EQ(hccl_ranktable_load(NULL, &rt, err, sizeof err), HCCL_E_PARA);
    /* A FIFO without a writer (opening it used to block forever) and a device. */
    char fifo[] = "/tmp/test_ranktable_fifo_XXXXXX";
    TT_ASSERT(mkdtemp(fifo) != NULL);
    char fpath[64];
    snprintf(fpath, sizeof fpath, "%s/rt.json", fifo);
    TT_ASSERT_EQ(mkfifo(fpath, 0600), 0);
    TT_ASSERT_EQ(hccl_ranktable_load(fpath, &rt, err, sizeof err), HCCL_E_OPEN_FILE_FAILURE);
    TT_ASSERT_MSG(has(err, "rt.json: cannot read: it is a FIFO, not a regular file"), "%s", err);
    unlink(fpath);
    rmdir(fifo);
    TT_ASSERT_EQ(hccl_ranktable_load("/dev/null", &rt, err, sizeof err), HCCL_E_OPEN_FILE_FAILURE);
    TT_ASSERT_MSG(has(err, "it is a device"), "%s", err);

    /* A NUL byte inside, and a file over 64 MiB (sparse). */
    char tmp[] = "/tmp/test_ranktable_XXXXXX";
    int fd = mkstemp(tmp);
    TT_ASSERT(fd >= 0);
    if (fd < 0) return;
    TT_ASSERT_EQ(write(fd, "{\"a\":\0\"b\"}", 10), 10);
    TT_ASSERT_EQ(hccl_ranktable_load(tmp, &rt, err, sizeof err), HCCL_E_PARA);
    TT_ASSERT_MSG(has(err, "NUL byte at byte 5"), "%s", err);
    TT_ASSERT_EQ(ftruncate(fd, ((off_t)64 << 20) + 1), 0);
    TT_ASSERT_EQ(hccl_ranktable_load(tmp, &rt, err, sizeof err), HCCL_E_PARA);
    TT_ASSERT_MSG(has(err, "larger than 64 MiB"), "%s", err);
    /* Unreadable (unless we are root). */
    TT_ASSERT_EQ(ftruncate(fd, 0), 0);
    close(fd);
    chmod(tmp, 0);
    if (geteuid() != 0) {
        TT_ASSERT_EQ(hccl_ranktable_load(tmp, &rt, err, sizeof err), HCCL_E_OPEN_FILE_FAILURE);
        TT_ASSERT_MSG(has(err, "Permission denied"), "%s", err);
    }
    unlink(tmp);
}

int main(void)
{
    test_v10_single_server();
    test_v10_two_servers();
    test_v12_super_pods();
    test_limits();
    test_not_json();
    test_top_level_fields();
    test_server_fields();
    test_rank_ids();
    test_device_fields();
    test_super_pods_malformed();
    test_files();
    return tt_report("test_ranktable");
}
