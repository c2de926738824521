/*
 * flight.h - the flight recorder: the last N operations of a communicator (sequence
 * number, call, algorithm, enqueue/start/end times, state, error), dumped as JSON to
 * a file when an operation fails and on request (HcclCommDumpFlightRecorder).
 * tools/hccl_fr_report.py turns the dumps of all ranks into a report of who is stuck
 * where, and into a Chrome trace.
 *
 * Dump format (one file per rank and communicator):
 *   {"version":1, "comm":"...", "rank":R, "nranks":N, "host":"...", "pid":P,
 *    "reason":"...", "dumped_us":T, "last_completed_seq":S,
 *    "ops":[{"seq":S, "call":"AllReduce(count=..., fp32, sum)", "op":"AllReduce",
 *            "count":C, "algo":"ring", "state":"queued|running|done|failed",
 *            "enqueue_us":T, "start_us":T, "end_us":T, "error":"..."}, ...]}
 * A point-to-point call has seq 0 and its call names its peer: "Send(count=C, fp32,
 * destRank=P)", "Recv(count=C, fp32, srcRank=P)", "BatchSendRecv(itemNum=N)".
 * Times are wall-clock microseconds: CLOCK_REALTIME when the recorder was made plus
 * CLOCK_MONOTONIC since, comparable across hosts only as far as their clocks agree.
 * Entries hold hccl_ticks() timestamps (util/ticks.h: the TSC where the kernel keeps
 * time with it, half the cost of a clock read), converted when dumped.
 */
#ifndef HCCL_CORE_FLIGHT_H
#define HCCL_CORE_FLIGHT_H

#include "algo/algo.h"
#include "core/net.h"

#include "util/spin.h"

#include <stdint.h>

typedef struct hccl_fr_entry {
    uint64_t id; /* monotonically increasing per communicator */
    hccl_fingerprint fp; /* the call, formatted only when dumped */
    int algo; /* the algorithm chosen (hccl_algo_id + 1; 0: none yet), named when dumped */
    hccl_op_type op;
    uint64_t count;
    /* Send and Recv: the dtype and peer of the call; BatchSendRecv: its items (the
     * fingerprint of a point-to-point call has neither, since such calls match each
     * other whatever they are). */
    int dtype;
    uint32_t peer;
    uint32_t nitems;
    int state; /* 0 queued, 1 running, 2 done, 3 failed */
    uint64_t enqueue_t, start_t, end_t; /* hccl_ticks(); 0: not yet */
    char *error; /* NULL, or the whole error text (at most HCCL_FR_ERROR_MAX bytes) */
} hccl_fr_entry;
#define HCCL_FR_ERROR_MAX 1024

typedef struct hccl_flight {
    hccl_spin lock; /* short sections only: a dump copies the ring under it */
    hccl_fr_entry *ring;
    uint32_t cap;
    uint64_t next_id;
    uint32_t last_done_seq;
    uint32_t nranks;            /* the communicator's (the fingerprints' count arrays) */
    int64_t wall_minus_mono_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at init */
    char *dir;                  /* HCCL_FLIGHT_RECORDER_DIR at init, whole (NULL: no memory) */
} hccl_flight;

void hccl_flight_init(hccl_flight *f, uint32_t nranks);
void hccl_flight_free(hccl_flight *f);
/* now: hccl_ticks() at the event. */
/* Record a new operation (queued); returns its id. */
uint64_t hccl_flight_enqueue(hccl_flight *f, const hccl_op_args *args, uint64_t now);
/* id 0: record a new operation, queued and started at once (one lock instead of
 * two); returns the id (0 when the recorder is off). */
uint64_t hccl_flight_start(hccl_flight *f, uint64_t id, const hccl_op_args *args, const hccl_fingerprint *fp,
                           hccl_algo_id algo, uint64_t now);
void hccl_flight_end(hccl_flight *f, uint64_t id, uint32_t seq, const char *error /* NULL = success */,
                     uint64_t now);
/* Write the JSON dump to path (NULL: HCCL_FLIGHT_RECORDER_DIR, default /tmp, with a
 * name made of comm, rank and pid); the path written goes to *written if given.
 * Returns 0, -1 when it could not be written (a WARN says why), or 1 when the
 * recorder is off (HCCL_FLIGHT_RECORDER_SIZE=0): nothing written, nothing logged. */
int hccl_flight_dump(hccl_flight *f, const char *path, const char *comm, uint32_t rank, uint32_t nranks,
                     const char *reason, char *written, size_t written_len);

#endif
