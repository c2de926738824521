/*
 * flight.c - the flight recorder (format in flight.h).
 */
#include "core/flight.h"

#include "reduce/reduce.h"

#include "util/log.h"
#include "util/param.h"
#include "util/ticks.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

HCCL_PARAM_INT_IN(fr_size, "HCCL_FLIGHT_RECORDER_SIZE", 128, 0, 65536, HCCL_PARAM_CLAMP)

static uint64_t wall_us(const hccl_flight *f, uint64_t mono_ns)
{
    return (uint64_t)((int64_t)mono_ns + f->wall_minus_mono_ns) / 1000u;
}

/* A timestamp of an entry in wall-clock microseconds (0 stays 0: not yet). */
static uint64_t stamp_us(const hccl_flight *f, const hccl_ticks_ref *r, uint64_t t)
{
    return t ? wall_us(f, hccl_ticks_ns(r, t)) : 0;
}

void hccl_flight_init(hccl_flight *f, uint32_t nranks)
{
    memset(f, 0, sizeof *f);
    f->nranks = nranks;
    uint32_t want = (uint32_t)hccl_param_fr_size();
    f->cap = 1;
    while (f->cap < want) f->cap <<= 1; /* a power of two: a slot is id & (cap - 1) */
    if (!want) f->cap = 0;
    if (f->cap) f->ring = hccl_calloc(f->cap, sizeof *f->ring);
    if (!f->ring) f->cap = 0;
    /* Read at init, on the application's thread: a dump may run on a stream's worker. */
    const char *dir = hccl_param_read_str("HCCL_FLIGHT_RECORDER_DIR", "/tmp");
    size_t dir_len = strlen(dir);
    f->dir = hccl_malloc(dir_len + 1); /* whole: a cut name could be another directory */
    if (f->dir) memcpy(f->dir, dir, dir_len + 1);
    f->next_id = 1;
    (void)hccl_ticks(); /* the first timestamp starts the TSC's calibration (ticks.h) */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t mono = hccl_now_ns();
    f->wall_minus_mono_ns = (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) - (int64_t)mono;
}

void hccl_flight_free(hccl_flight *f)
{
    for (uint32_t i = 0; i < f->cap; i++) hccl_free(f->ring[i].error);
    hccl_free(f->ring);
    hccl_free(f->dir);
}

static hccl_fr_entry *slot(hccl_flight *f, uint64_t id)
{
    if (!f->cap || id == 0) return NULL;
    hccl_fr_entry *e = &f->ring[id & (f->cap - 1)];
    return e->id == id ? e : NULL;
}

/* Under f->lock: a new queued entry. */
static hccl_fr_entry *add(hccl_flight *f, const hccl_op_args *args, uint64_t now)
{
    uint64_t id = f->next_id++;
    hccl_fr_entry *e = &f->ring[id & (f->cap - 1)];
    if (e->error) hccl_free(e->error);
    memset(e, 0, sizeof *e);
    e->id = id;
    e->op = args->type;
    e->count = args->count;
    e->dtype = (int)args->dtype;
    e->peer = args->root;
    e->nitems = args->nitems;
    e->enqueue_t = now;
    return e;
}

uint64_t hccl_flight_enqueue(hccl_flight *f, const hccl_op_args *args, uint64_t now)
{
    if (!f->cap) return 0;
    hccl_spin_lock(&f->lock);
    hccl_fr_entry *e = add(f, args, now);
    hccl_fingerprint_of(args, f->nranks, &e->fp);
    uint64_t id = e->id; /* after the unlock another thread's add may reuse the entry */
    hccl_spin_unlock(&f->lock);
    return id;
}

uint64_t hccl_flight_start(hccl_flight *f, uint64_t id, const hccl_op_args *args, const hccl_fingerprint *fp,
                           hccl_algo_id algo, uint64_t now)
{
    if (!f->cap) return 0;
    hccl_spin_lock(&f->lock);
    hccl_fr_entry *e = id ? slot(f, id) : add(f, args, now);
    if (e) {
        e->fp = *fp;
        e->algo = (int)algo + 1;
        e->state = 1;
        e->start_t = now;
        id = e->id;
    }
    hccl_spin_unlock(&f->lock);
    return id;
}

void hccl_flight_end(hccl_flight *f, uint64_t id, uint32_t seq, const char *error, uint64_t now)
{
    hccl_spin_lock(&f->lock);
    hccl_fr_entry *e = slot(f, id);
    if (e) {
        e->state = error ? 3 : 2;
        e->end_t = now;
        if (error) {
            /* Whole: the text names every rank involved (tools read it from the dump). */
            size_t len = strnlen(error, HCCL_FR_ERROR_MAX - 1);
            hccl_free(e->error);
            e->error = hccl_malloc(len + 1);
            if (e->error) {
                memcpy(e->error, error, len);
                e->error[len] = 0;
            }
        }
    }
    if (!error && seq) f->last_done_seq = seq;
    hccl_spin_unlock(&f->lock);
}

/* JSON string body with escapes. */
static void put_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(o, "\\%c", c);
        else if (c < 0x20) fprintf(o, "\\u%04x", c);
        else fputc(c, o);
    }
    fputc('"', o);
}

/* Where a dump is written: a regular file (or a new one) is written under a name of
 * its own in the same directory and renamed into place when complete, so that dumps
 * of one communicator that overlap (a failing operation's and a watchdog's
 * HcclCommDumpFlightRecorder(comm, NULL), two threads) or a reader never see a file
 * written by two at once or half written. Anything else (a FIFO, /dev/stdout, a
 * symbolic link) is written in place. tmp gets the temporary name, or "". */
static FILE *open_dump(const char *path, char *tmp, size_t tmp_len)
{
    static unsigned long serial;
    struct stat st;
    tmp[0] = 0;
    if (lstat(path, &st) == 0 ? S_ISREG(st.st_mode) : errno == ENOENT) {
        snprintf(tmp, tmp_len, "%s.%d.%lu.tmp", path, (int)getpid(), __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (o) return o;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        tmp[0] = 0; /* a directory we cannot create in: the file itself, as before */
    }
    return fopen(path, "w");
}

static int write_dump(const hccl_flight *f, const char *path, const char *comm, uint32_t rank, uint32_t nranks,
                      const char *reason, const hccl_fr_entry *ops, uint32_t nops, uint32_t last_done)
{
    /* The text is made in memory first: a file it would make larger than RLIMIT_FSIZE
     * (ulimit -f) is not written, since the kernel would send SIGXFSZ, which kills the
     * process by default, and a failing operation must return its error. */
    char *text = NULL;
    size_t text_len = 0;
    FILE *o = open_memstream(&text, &text_len);
    if (!o) {
        HCCL_WARN(COLL, "comm %s rank %u: flight recorder: cannot write %s: %s", comm, rank, path, strerror(errno));
        return -1;
    }
    char host[64] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    fprintf(o, "{\"version\":1,\"comm\":");
    put_str(o, comm);
    fprintf(o, ",\"rank\":%u,\"nranks\":%u,\"host\":", rank, nranks);
    put_str(o, host);
    fprintf(o, ",\"pid\":%d,\"reason\":", (int)getpid());
    put_str(o, reason ? reason : "");
    hccl_ticks_ref ref;
    hccl_ticks_ref_now(&ref);
    fprintf(o, ",\"dumped_us\":%llu,\"last_completed_seq\":%u,\"ops\":[", (unsigned long long)wall_us(f, ref.ns),
            last_done);
    static const char *states[] = {"queued", "running", "done", "failed"};
    int comma = 0;
    for (uint32_t i = 0; i < nops; i++) {
        const hccl_fr_entry *e = &ops[i];
        char call[160];
        if (e->op == HCCL_OP_SEND || e->op == HCCL_OP_RECV)
            snprintf(call, sizeof call, "%s(count=%llu, %s, %s=%u)", hccl_op_name(e->op), (unsigned long long)e->count,
                     hccl_dtype_name((HcclDataType)e->dtype), e->op == HCCL_OP_SEND ? "destRank" : "srcRank", e->peer);
        else if (e->op == HCCL_OP_BATCH_SEND_RECV)
            snprintf(call, sizeof call, "BatchSendRecv(itemNum=%u)", e->nitems);
        else
            hccl_fingerprint_str(&e->fp, call, sizeof call);
        fprintf(o, "%s\n{\"seq\":%u,\"call\":", comma ? "," : "", e->fp.seq);
        put_str(o, call);
        fprintf(o, ",\"op\":\"%s\",\"count\":%llu,\"algo\":\"%s\",\"state\":\"%s\",\"enqueue_us\":%llu,\"start_us\":%llu,"
                   "\"end_us\":%llu,\"error\":",
                hccl_op_name(e->op), (unsigned long long)e->count,
                e->algo ? hccl_algo_id_name((hccl_algo_id)(e->algo - 1), e->op) : "-", states[e->state & 3],
                (unsigned long long)stamp_us(f, &ref, e->enqueue_t), (unsigned long long)stamp_us(f, &ref, e->start_t),
                (unsigned long long)stamp_us(f, &ref, e->end_t));
        put_str(o, e->error ? e->error : "");
        fputc('}', o);
        comma = 1;
    }
    fprintf(o, "\n]}\n");
    int bad = ferror(o);
    if (fclose(o) != 0 || bad || !text) {
        HCCL_WARN(COLL, "comm %s rank %u: flight recorder: cannot write %s: %s", comm, rank, path, strerror(ENOMEM));
        free(text);
        return -1;
    }
    struct stat st;
    struct rlimit rl;
    if ((stat(path, &st) == 0 ? S_ISREG(st.st_mode) : errno == ENOENT) && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY && (uint64_t)text_len > (uint64_t)rl.rlim_cur) {
        HCCL_WARN(COLL, "comm %s rank %u: flight recorder: cannot write %s: its %zu bytes are above RLIMIT_FSIZE "
                  "(ulimit -f)", comm, rank, path, text_len);
        free(text);
        return -1;
    }
    char tmp[4200];
    o = open_dump(path, tmp, sizeof tmp);
    if (!o) {
        HCCL_WARN(COLL, "comm %s rank %u: flight recorder: cannot write %s: %s", comm, rank, path, strerror(errno));
        free(text);
        return -1;
    }
    errno = 0;
    size_t put = fwrite(text, 1, text_len, o);
    free(text);
    int regular = fstat(fileno(o), &st) == 0 && S_ISREG(st.st_mode); /* not /dev/full's node */
    bad = put != text_len || ferror(o);
    int err = errno;
    if (fclose(o) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad && tmp[0] && rename(tmp, path) != 0) {
        bad = 1;
        err = errno;
    }
    if (!bad) return 0;
    /* A truncated dump (a full disk) is not JSON: tools/hccl_fr_report.py would choke on it. */
    if (regular) unlink(tmp[0] ? tmp : path);
    HCCL_WARN(COLL, "comm %s rank %u: flight recorder: cannot write %s: %s%s", comm, rank, path,
              strerror(err ? err : EIO), regular ? " (removed the partial file)" : "");
    return -1;
}

/* Under f->lock: the entries still in the ring, oldest first, into out (cap entries),
 * each error text copied (NULL where the copy failed). Returns how many. */
static uint32_t snapshot(hccl_flight *f, hccl_fr_entry *out)
{
    uint32_t n = 0;
    uint64_t first = f->next_id > f->cap ? f->next_id - f->cap : 1;
    for (uint64_t id = first; id < f->next_id; id++) {
        hccl_fr_entry *e = slot(f, id);
        if (!e) continue;
        out[n] = *e;
        if (e->error) {
            size_t len = strlen(e->error);
            out[n].error = hccl_malloc(len + 1);
            if (out[n].error) memcpy(out[n].error, e->error, len + 1);
        }
        n++;
    }
    return n;
}

int hccl_flight_dump(hccl_flight *f, const char *path, const char *comm, uint32_t rank, uint32_t nranks,
                     const char *reason, char *written, size_t written_len)
{
    char buf[4096];
    if (!f->cap) return 1; /* HCCL_FLIGHT_RECORDER_SIZE=0: off, no file at all */
    if (!path) {
        /* The name in the file name with anything but letters, digits, '-' and '.' as
         * '_': a configured name with '/' must not lead outside the directory. */
        char safe[160];
        size_t k = 0;
        for (; comm[k] && k < sizeof safe - 1; k++) {
            char ch = comm[k];
            int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                     ch == '.';
            safe[k] = ok ? ch : '_';
        }
        safe[k] = 0;
        if (!f->dir) {
            HCCL_WARN(COLL, "comm %s rank %u: flight recorder: out of memory for HCCL_FLIGHT_RECORDER_DIR", comm, rank);
            return -1;
        }
        int len = snprintf(buf, sizeof buf, "%s/hccl_fr_%s_r%u_p%d.json", f->dir, safe, rank, (int)getpid());
        if (len < 0 || (size_t)len >= sizeof buf) {
            HCCL_WARN(COLL, "comm %s rank %u: flight recorder: cannot write to HCCL_FLIGHT_RECORDER_DIR %.64s... (%zu "
                      "characters): %s", comm, rank, f->dir, strlen(f->dir), strerror(ENAMETOOLONG));
            return -1;
        }
        path = buf;
    }
    /* A copy taken under the lock, written without it: operations keep recording
     * while the file is written. */
    hccl_fr_entry *ops = hccl_calloc(f->cap, sizeof *ops);
    if (!ops) {
        HCCL_WARN(COLL, "flight recorder: out of memory for a dump to %s", path);
        return -1;
    }
    hccl_spin_lock(&f->lock);
    uint32_t nops = snapshot(f, ops);
    uint32_t last_done = f->last_done_seq;
    hccl_spin_unlock(&f->lock);
    int rc = write_dump(f, path, comm, rank, nranks, reason, ops, nops, last_done);
    for (uint32_t i = 0; i < nops; i++) hccl_free(ops[i].error);
    hccl_free(ops);
    if (rc == 0 && written) snprintf(written, written_len, "%s", path);
    return rc;
}
