/*
 * socket.c - socket helpers: address selection, listen with port ranges, connect
 * with retry, accept and full send/receive with deadlines (see socket.h).
 */
#include "boot/socket.h"

#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE_PORT_RANGE 1024

const char *hccl_addr_str(const hccl_addr *a)
{
    static __thread char bufs[4][INET6_ADDRSTRLEN + IF_NAMESIZE + 16];
    static __thread int next;
    char *b = bufs[next++ & 3];
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, sizeof ip);
        snprintf(b, sizeof bufs[0], "%s:%u", ip, hccl_addr_port(a));
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
        char zone[IF_NAMESIZE + 12] = "";
        inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
        if (v6->sin6_scope_id != 0) { /* the interface of a link-local address */
            char name[IF_NAMESIZE];
            if (if_indextoname(v6->sin6_scope_id, name))
                snprintf(zone, sizeof zone, "%%%s", name);
            else
                snprintf(zone, sizeof zone, "%%%u", (unsigned)v6->sin6_scope_id);
        }
        snprintf(b, sizeof bufs[0], "[%s%s]:%u", ip, zone, hccl_addr_port(a));
    } else {
        snprintf(b, sizeof bufs[0], "(no address)");
    }
    return b;
}

uint16_t hccl_addr_port(const hccl_addr *a)
{
    if (a->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)a)->sin_port);
    if (a->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
    return 0;
}

void hccl_addr_set_port(hccl_addr *a, uint16_t port)
{
    if (a->ss_family == AF_INET) ((struct sockaddr_in *)a)->sin_port = htons(port);
    if (a->ss_family == AF_INET6) ((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

socklen_t hccl_addr_len(const hccl_addr *a)
{
    return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int family_param(void)
{
    const char *f = hccl_param_read_str("HCCL_SOCKET_FAMILY", "AF_INET");
    if (strcmp(f, "AF_INET6") == 0 || strcmp(f, "inet6") == 0) return AF_INET6;
    static int warned;
    if (strcmp(f, "AF_INET") != 0 && strcmp(f, "inet") != 0 && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        HCCL_WARN(BOOT, "HCCL_SOCKET_FAMILY=%s is neither AF_INET nor AF_INET6: using AF_INET", f);
    return AF_INET;
}

HcclResult hccl_addr_parse(const char *host, uint16_t port, hccl_addr *out)
{
    memset(out, 0, sizeof *out);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        HCCL_WARN(BOOT, "cannot resolve address \"%s\": %s", host, gai_strerror(rc));
        return HCCL_E_PARA;
    }
    /* Prefer the configured family when the name has both. */
    struct addrinfo *pick = res;
    for (struct addrinfo *r = res; r; r = r->ai_next)
        if (r->ai_family == family_param()) {
            pick = r;
            break;
        }
    memcpy(out, pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    hccl_addr_set_port(out, port);
    return HCCL_SUCCESS;
}

/* One HCCL_SOCKET_IFNAME rule list: does interface `name` match? */
static int ifname_matches(const char *spec, const char *name)
{
    int exclude = 0, exact = 0;
    if (*spec == '^') {
        exclude = 1;
        spec++;
    }
    if (*spec == '=') {
        exact = 1;
        spec++;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    int hit = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (exact ? strcmp(name, tok) == 0 : strncmp(name, tok, strlen(tok)) == 0) hit = 1;
    }
    return exclude ? !hit : hit;
}

/* Why no interface matching `spec` gave an address of `family`: the matching
 * interfaces and what they lack, or, when none matches, the interfaces there are. */
static void explain_no_ifname(const char *spec, int family, const struct ifaddrs *ifs)
{
    char names[512] = "", matched[512] = "";
    size_t on = 0, om = 0;
    int other_family = 0;
    for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET) continue; /* one entry per interface */
        if (!ifname_matches(spec, i->ifa_name)) {
            if (on < sizeof names)
                on += (size_t)snprintf(names + on, sizeof names - on, "%s%s", on ? ", " : "", i->ifa_name);
            continue;
        }
        int has = 0, has_other = 0;
        for (const struct ifaddrs *j = ifs; j; j = j->ifa_next) {
            if (!j->ifa_addr || strcmp(j->ifa_name, i->ifa_name) != 0) continue;
            int f = j->ifa_addr->sa_family;
            if (f == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)j->ifa_addr)->sin6_addr)) continue;
            if (f == family) has = 1;
            else if (f == AF_INET || f == AF_INET6) has_other = 1;
        }
        other_family |= has_other && (i->ifa_flags & IFF_UP);
        const char *state = !(i->ifa_flags & IFF_UP) ? "down"
                            : has                    ? "up"
                            : has_other && family == AF_INET ? "only IPv6 addresses"
                            : has_other                      ? "only IPv4 addresses"
                            : family == AF_INET6 ? "no IPv6 address but link-local ones"
                                                 : "no IPv4 address";
        if (om < sizeof matched)
            om += (size_t)snprintf(matched + om, sizeof matched - om, "%s%s (%s)", om ? ", " : "", i->ifa_name, state);
    }
    const char *fam = family == AF_INET6 ? "AF_INET6" : "AF_INET";
    if (om == 0)
        HCCL_WARN(BOOT, "HCCL_SOCKET_IFNAME=%s matches no interface of this host (it has: %s)", spec,
                  on ? names : "none");
    else
        HCCL_WARN(BOOT, "HCCL_SOCKET_IFNAME=%s matches no interface that is up with an %s address: %s%s", spec, fam,
                  matched,
                  other_family ? (family == AF_INET ? " (set HCCL_SOCKET_FAMILY=AF_INET6 to use IPv6)"
                                                    : " (set HCCL_SOCKET_FAMILY=AF_INET to use IPv4)")
                               : "");
}

/* The first address of `family` on an interface that is up and matches `spec`; when
 * there is none, `explain` says why in a WARN. */
static HcclResult addr_from_ifname(const char *spec, int family, int explain, hccl_addr *out)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) return HCCL_E_SYSCALL;
    HcclResult res = HCCL_E_NOT_FOUND;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != family || !(i->ifa_flags & IFF_UP)) continue;
        if (!ifname_matches(spec, i->ifa_name)) continue;
        if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr)) continue;
        memset(out, 0, sizeof *out);
        memcpy(out, i->ifa_addr, family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
        HCCL_INFO(BOOT, "HCCL_SOCKET_IFNAME=%s selects %s (%s)", spec, i->ifa_name, hccl_addr_str(out));
        res = HCCL_SUCCESS;
        break;
    }
    if (res != HCCL_SUCCESS && explain) explain_no_ifname(spec, family, ifs);
    freeifaddrs(ifs);
    return res;
}

int hccl_addr_is_loopback(const hccl_addr *a)
{
    if (a->ss_family == AF_INET) return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->ss_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return 0;
}

HcclResult hccl_socket_nonloopback_addr(int family, hccl_addr *out)
{
    return addr_from_ifname("^lo,docker,virbr", family, 0, out);
}

/* HCCL_IF_IP: an IPv4 or IPv6 literal; a link-local IPv6 one needs its zone
 * ("fe80::1%eth0", as in rank tables and MASTER_ADDR), without which it names no
 * interface and cannot be bound. */
static HcclResult if_ip_addr(const char *ip, hccl_addr *out)
{
    memset(out, 0, sizeof *out);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    /* Strict literals: getaddrinfo alone would take inet_aton's forms ("1.2.3"). */
    const char *zone = strchr(ip, '%');
    char head[INET6_ADDRSTRLEN];
    unsigned char bin[sizeof(struct in6_addr)];
    snprintf(head, sizeof head, "%.*s", zone ? (int)(zone - ip) : (int)strlen(ip), ip);
    int literal = zone ? inet_pton(AF_INET6, head, bin) == 1
                       : inet_pton(AF_INET, ip, bin) == 1 || inet_pton(AF_INET6, ip, bin) == 1;
    if (!literal || getaddrinfo(ip, NULL, &hints, &res) != 0 || !res) {
        if (literal && zone)
            HCCL_WARN(BOOT, "HCCL_IF_IP=\"%s\" is not an IPv6 address with a zone that is an interface of this host "
                      "(\"%s\" is not one)", ip, zone + 1);
        else
            HCCL_WARN(BOOT, "HCCL_IF_IP=\"%s\" is not an IPv4 or IPv6 address", ip);
        return HCCL_E_PARA;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)out;
    if (out->ss_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr) && v6->sin6_scope_id == 0) {
        HCCL_WARN(BOOT, "HCCL_IF_IP=\"%s\" is a link-local IPv6 address without a zone: name its interface, "
                  "as in \"%s%%eth0\"", ip, ip);
        return HCCL_E_PARA;
    }
    hccl_addr_set_port(out, 0);
    return HCCL_SUCCESS;
}

HcclResult hccl_socket_local_addr(const hccl_addr *toward, hccl_addr *out)
{
    const char *ip = hccl_param_read_str("HCCL_IF_IP", NULL);
    if (ip) return if_ip_addr(ip, out);
    const char *ifname = hccl_param_read_str("HCCL_SOCKET_IFNAME", NULL);
    if (ifname) return addr_from_ifname(ifname, family_param(), 1, out);
    if (toward && (toward->ss_family == AF_INET || toward->ss_family == AF_INET6)) {
        /* The source address the kernel would use to reach `toward`. */
        int fd = socket(toward->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            hccl_addr t = *toward;
            if (hccl_addr_port(&t) == 0) hccl_addr_set_port(&t, 9);
            socklen_t len = sizeof *out;
            memset(out, 0, sizeof *out);
            int ok = connect(fd, (struct sockaddr *)&t, hccl_addr_len(&t)) == 0 &&
                     getsockname(fd, (struct sockaddr *)out, &len) == 0;
            close(fd);
            if (ok) {
                hccl_addr_set_port(out, 0);
                return HCCL_SUCCESS;
            }
        }
    }
    memset(out, 0, sizeof *out);
    if (family_param() == AF_INET6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
        v6->sin6_family = AF_INET6;
        v6->sin6_addr = in6addr_loopback;
    } else {
        struct sockaddr_in *v4 = (struct sockaddr_in *)out;
        v4->sin_family = AF_INET;
        v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    return HCCL_SUCCESS;
}

void hccl_socket_set_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

void hccl_socket_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void whitelist_read(void);

HcclResult hccl_socket_listen(hccl_addr *addr, int use_base_port, int *fd_out)
{
    whitelist_read(); /* here, on the caller's thread: the bootstrap root accepts on its own */
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        HCCL_WARN(BOOT, "socket(): %s", strerror(errno));
        return HCCL_E_SYSCALL;
    }
    int64_t base = use_base_port ? hccl_param_read_int_in("HCCL_IF_BASE_PORT", -1, 1, 65535, HCCL_PARAM_DEFAULT) : -1;
    int bound = 0, err = 0;
    if (hccl_addr_port(addr) != 0) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        bound = bind(fd, (struct sockaddr *)addr, hccl_addr_len(addr)) == 0;
        err = errno;
    } else if (base > 0 && base < 65536) {
        for (int64_t p = base; p < base + BASE_PORT_RANGE && p < 65536 && !bound; p++) {
            hccl_addr_set_port(addr, (uint16_t)p);
            bound = bind(fd, (struct sockaddr *)addr, hccl_addr_len(addr)) == 0;
            err = errno;
        }
    } else {
        bound = bind(fd, (struct sockaddr *)addr, hccl_addr_len(addr)) == 0;
        err = errno;
    }
    if (!bound || listen(fd, 4096) != 0) {
        if (bound) err = errno;
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)addr;
        int no_zone = addr->ss_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr) && v6->sin6_scope_id == 0;
        HCCL_WARN(BOOT, "cannot listen on %s%s: %s%s", hccl_addr_str(addr),
                  base > 0 ? " (HCCL_IF_BASE_PORT range)" : "", strerror(err),
                  no_zone                    ? " (a link-local address needs its interface: write it as fe80::...%eth0)"
                  : err == EADDRNOTAVAIL ? " (not an address of this host)"
                                         : "");
        close(fd);
        return err == EADDRINUSE ? HCCL_E_UNAVAIL : HCCL_E_SYSCALL;
    }
    socklen_t len = sizeof *addr;
    getsockname(fd, (struct sockaddr *)addr, &len);
    *fd_out = fd;
    return HCCL_SUCCESS;
}

static int remaining_ms(uint64_t deadline_ns)
{
    uint64_t now = hccl_now_ns();
    if (now >= deadline_ns) return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > 1000 ? 1000 : (int)ms;
}

HcclResult hccl_socket_connect(const hccl_addr *addr, uint64_t deadline_ns, int *fd_out)
{
    return hccl_socket_connect_unless(addr, deadline_ns, NULL, NULL, fd_out);
}

HcclResult hccl_socket_connect_unless(const hccl_addr *addr, uint64_t deadline_ns, int (*stop)(void *), void *arg,
                                      int *fd_out)
{
    int last_err = 0, refused = 0;
    hccl_iwait iw = {0, 0};
    for (;;) {
        int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            int err = errno;
            HCCL_WARN(BOOT, "cannot open a socket to connect to %s: %s", hccl_addr_str(addr), strerror(err));
            errno = err; /* for the caller's own line */
            return HCCL_E_SYSCALL;
        }
        int rc = connect(fd, (const struct sockaddr *)addr, hccl_addr_len(addr));
        if (rc != 0 && errno == EINPROGRESS) {
            for (;;) {
                struct pollfd p = {fd, POLLOUT, 0};
                int ms = remaining_ms(deadline_ns);
                if (ms > 100 && hccl_interrupt_get()) ms = 100; /* slices for the interrupt check */
                int n = poll(&p, 1, ms);
                if (n > 0) {
                    int soerr = 0;
                    socklen_t l = sizeof soerr;
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &l);
                    rc = soerr ? -1 : 0;
                    errno = soerr;
                    break;
                }
                if (n < 0 && errno == EINTR) continue;
                if (hccl_interrupt_due(&iw)) {
                    close(fd);
                    errno = EINTR;
                    return HCCL_E_INTERNAL;
                }
                if (ms == 0 || n < 0) {
                    rc = -1;
                    errno = ETIMEDOUT;
                    break;
                }
            }
        }
        if (rc == 0) {
            hccl_socket_set_nonblock(fd, 0);
            hccl_socket_tune(fd);
            *fd_out = fd;
            return HCCL_SUCCESS;
        }
        last_err = errno;
        refused |= last_err == ECONNREFUSED;
        close(fd);
        if (hccl_now_ns() >= deadline_ns) break;
        if (last_err != ECONNREFUSED && last_err != ETIMEDOUT && last_err != EAGAIN && last_err != ENETUNREACH &&
            last_err != EHOSTUNREACH && last_err != ECONNRESET)
            break;
        errno = last_err;
        if (stop && stop(arg)) { /* the caller says why */
            errno = last_err;
            return HCCL_E_TIMEOUT;
        }
        if (hccl_interrupt_due(&iw)) {
            errno = EINTR;
            return HCCL_E_INTERNAL;
        }
        usleep(20000);
    }
    HCCL_WARN(BOOT, "cannot connect to %s: %s", hccl_addr_str(addr), strerror(last_err));
    /* For the caller's own line; a host that refused before did answer (the last
     * try may just have run into the deadline). */
    errno = last_err == ETIMEDOUT && refused ? ECONNREFUSED : last_err;
    return last_err == ETIMEDOUT || hccl_now_ns() >= deadline_ns ? HCCL_E_TIMEOUT : HCCL_E_TCP_CONNECT;
}

/* HCCL_WHITELIST_DISABLE=0 with HCCL_WHITELIST_FILE naming a JSON file
 * {"host_ip": ["198.18.0.1", ...]}: only listed peers may connect (loopback always
 * may). Read once. */
#define WHITELIST_MAX 4096
static pthread_once_t wl_once = PTHREAD_ONCE_INIT;
static int wl_enabled;
static hccl_addr *wl_addrs;
static int wl_n;

static void whitelist_load(void)
{
    if (hccl_param_read_int("HCCL_WHITELIST_DISABLE", 1) != 0) return;
    wl_enabled = 1; /* enabled: a missing or bad file admits nobody but loopback */
    const char *path = hccl_param_read_str("HCCL_WHITELIST_FILE", NULL);
    if (!path) {
        HCCL_WARN(BOOT, "HCCL_WHITELIST_DISABLE=0 but HCCL_WHITELIST_FILE is not set: only loopback peers admitted");
        return;
    }
    FILE *f = fopen(path, "r");
    char *text = NULL;
    long len = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && len < (1 << 20) && fseek(f, 0, SEEK_SET) == 0) {
        text = hccl_malloc((size_t)len + 1);
        if (text && fread(text, 1, (size_t)len, f) == (size_t)len) text[len] = 0;
        else {
            hccl_free(text);
            text = NULL;
        }
    }
    if (f) fclose(f);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    hccl_free(text);
    cJSON *list = root ? cJSON_GetObjectItemCaseSensitive(root, "host_ip") : NULL;
    if (!cJSON_IsArray(list)) {
        HCCL_WARN(BOOT, "HCCL_WHITELIST_FILE %s: cannot read a {\"host_ip\": [...]} list; only loopback admitted", path);
        cJSON_Delete(root);
        return;
    }
    int n = cJSON_GetArraySize(list);
    wl_addrs = hccl_calloc(n > 0 ? (size_t)n : 1, sizeof *wl_addrs);
    for (int i = 0; wl_addrs && i < n && wl_n < WHITELIST_MAX; i++) {
        cJSON *it = cJSON_GetArrayItem(list, i);
        hccl_addr a;
        memset(&a, 0, sizeof a);
        if (cJSON_IsString(it) && inet_pton(AF_INET, it->valuestring, &((struct sockaddr_in *)&a)->sin_addr) == 1)
            a.ss_family = AF_INET;
        else if (cJSON_IsString(it) && inet_pton(AF_INET6, it->valuestring, &((struct sockaddr_in6 *)&a)->sin6_addr) == 1)
            a.ss_family = AF_INET6;
        else {
            HCCL_WARN(BOOT, "HCCL_WHITELIST_FILE %s: host_ip[%d] is not an IP address; ignored", path, i);
            continue;
        }
        wl_addrs[wl_n++] = a;
    }
    cJSON_Delete(root);
    HCCL_INFO(BOOT, "whitelist: %d peer address(es) from %s", wl_n, path);
}

static void whitelist_read(void) { pthread_once(&wl_once, whitelist_load); }

static int whitelisted(const hccl_addr *a)
{
    whitelist_read();
    if (!wl_enabled) return 1;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;
        if ((ntohl(v4->sin_addr.s_addr) >> 24) == 127) return 1;
        for (int i = 0; i < wl_n; i++)
            if (wl_addrs[i].ss_family == AF_INET &&
                ((struct sockaddr_in *)&wl_addrs[i])->sin_addr.s_addr == v4->sin_addr.s_addr)
                return 1;
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
        if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
            /* An IPv4 peer of a listener on "::" (::ffff:a.b.c.d): judged as IPv4. */
            hccl_addr m;
            memset(&m, 0, sizeof m);
            ((struct sockaddr_in *)&m)->sin_family = AF_INET;
            memcpy(&((struct sockaddr_in *)&m)->sin_addr, &v6->sin6_addr.s6_addr[12], 4);
            return whitelisted(&m);
        }
        if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) return 1;
        for (int i = 0; i < wl_n; i++)
            if (wl_addrs[i].ss_family == AF_INET6 &&
                memcmp(&((struct sockaddr_in6 *)&wl_addrs[i])->sin6_addr, &v6->sin6_addr, sizeof v6->sin6_addr) == 0)
                return 1;
    }
    return 0;
}

HcclResult hccl_socket_accept(int listen_fd, uint64_t deadline_ns, int *fd_out, hccl_addr *peer)
{
    for (;;) {
        struct pollfd p = {listen_fd, POLLIN, 0};
        int ms = remaining_ms(deadline_ns);
        int n = poll(&p, 1, ms);
        if (n < 0 && errno != EINTR) return HCCL_E_SYSCALL;
        if (n > 0) {
            hccl_addr a;
            socklen_t len = sizeof a;
            int fd = accept4(listen_fd, (struct sockaddr *)&a, &len, SOCK_CLOEXEC);
            if (fd >= 0 && !whitelisted(&a)) {
                HCCL_WARN(BOOT, "refused a connection from %s: not in HCCL_WHITELIST_FILE", hccl_addr_str(&a));
                close(fd);
                continue;
            }
            if (fd >= 0) {
                hccl_socket_tune(fd);
                if (peer) *peer = a;
                *fd_out = fd;
                return HCCL_SUCCESS;
            }
            if (errno != EAGAIN && errno != ECONNABORTED && errno != EINTR) return HCCL_E_SYSCALL;
        }
        if (ms == 0) return HCCL_E_TIMEOUT;
    }
}

static HcclResult wait_fd(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int ms = remaining_ms(deadline_ns);
        int n = poll(&p, 1, ms);
        if (n > 0) return HCCL_SUCCESS;
        if (n < 0 && errno != EINTR) return HCCL_E_SYSCALL;
        if (ms == 0) return HCCL_E_TIMEOUT;
    }
}

HcclResult hccl_socket_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            CHECK(wait_fd(fd, POLLOUT, deadline_ns));
            continue;
        }
        return HCCL_E_TCP_TRANSFER;
    }
    return HCCL_SUCCESS;
}

HcclResult hccl_socket_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            CHECK(wait_fd(fd, POLLIN, deadline_ns));
            continue;
        }
        return HCCL_E_TCP_TRANSFER; /* closed or reset */
    }
    return HCCL_SUCCESS;
}
