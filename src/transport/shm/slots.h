/*
 * slots.h - one shared segment of mailboxes for all the ranks of a communicator that
 * lives on one host: the small-message path of core/net.c's slot_gather.
 *
 * Every rank owns two slots, used by turns (the parity of a call counter that every
 * rank advances alike). A post writes a 32-byte tag (the operation's fingerprint)
 * and up to HCCL_SLOTS_DATA_MAX bytes into the caller's slot, then publishes the
 * counter value; every rank reads every slot. A slot of call s is rewritten at call
 * s + 2, which its owner reaches only after every rank has posted call s + 1, i.e.
 * after every rank is done reading call s: a reader's data stays put until it posts
 * again. The waiting policy (spin, yield, sleep, deadlines, dead peers) is the
 * caller's; this module only sleeps on request and wakes sleepers when it posts.
 */
#ifndef HCCL_TRANSPORT_SHM_SLOTS_H
#define HCCL_TRANSPORT_SHM_SLOTS_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>

#define HCCL_SLOTS_TAG_BYTES 32u
#define HCCL_SLOTS_STRIDE 1152u     /* bytes from one rank's slot to the next (9 pairs of lines) */
#define HCCL_SLOTS_TAG_OFF 8u       /* the tag's offset in a slot (after the call number) */
#define HCCL_SLOTS_DATA_OFF 48u     /* the data's offset in a slot (16-byte aligned) */
#define HCCL_SLOTS_DATA_MAX (HCCL_SLOTS_STRIDE - HCCL_SLOTS_DATA_OFF)
#define HCCL_SLOTS_MAX_RANKS 64u
#define HCCL_SLOTS_NAME_LEN 64u     /* the segment's name, NUL included */

typedef struct hccl_slots hccl_slots;

/* Create the segment for nranks ranks (rank 0 of the communicator does); its name,
 * to give the others, goes to name (HCCL_SLOTS_NAME_LEN bytes). */
HcclResult hccl_slots_create(uint32_t nranks, uint32_t rank, char *name, hccl_slots **out);
/* Map the segment another rank created (checks its name, size and header). */
HcclResult hccl_slots_open(const char *name, uint32_t nranks, uint32_t rank, hccl_slots **out);
/* Remove the name (once every rank has mapped the segment, or given up). */
void hccl_slots_unlink(const char *name);
void hccl_slots_close(hccl_slots *s);

/* Publish tag and bytes (<= HCCL_SLOTS_DATA_MAX) as this rank's slot of call seq (>= 1),
 * then wake the ranks that sleep in hccl_slots_sleep. */
void hccl_slots_post(hccl_slots *s, uint64_t seq, const void *tag, const void *data, size_t bytes);
/* Rank j's slot of call seq (its tag at HCCL_SLOTS_TAG_OFF, data at HCCL_SLOTS_DATA_OFF), or
 * NULL while j has not posted it. Slots of one call lie HCCL_SLOTS_STRIDE apart. */
const unsigned char *hccl_slots_peek(hccl_slots *s, uint32_t j, uint64_t seq);

/* Sleeping: arm returns a ticket and announces the sleep; the caller then looks at
 * the slots it waits for once more and, if still missing, calls hccl_slots_sleep
 * with the ticket, which returns after a post by any rank (or at once if one came
 * since the arm), after timeout_ns, or on a signal. A post and an arm cannot miss
 * each other. */
uint32_t hccl_slots_arm(hccl_slots *s);
void hccl_slots_sleep(hccl_slots *s, uint32_t ticket, uint64_t timeout_ns);
/* Undo an arm without sleeping. */
void hccl_slots_disarm(hccl_slots *s);

/* The communicator failed on this rank, in collective seq (0: not in a collective):
 * say so in the segment (the first such rank stays recorded) and wake the sleepers.
 * hccl_slots_aborted: that rank + 1, or 0; seq (unless NULL) gets the collective it
 * failed in. A rank whose slot operation completes after its peers gave up learns it
 * here (its data may all be there, but they have left). */
void hccl_slots_abort(hccl_slots *s, uint32_t seq);
uint32_t hccl_slots_aborted(hccl_slots *s, uint32_t *seq);

/* This rank gave up on an operation (HCCL_EXEC_TIMEOUT) and will fail it, but first
 * asks its peers where they are (a second or more) before it aborts: say so at once
 * (the first such rank stays recorded; no wake-up: only completing slot operations
 * look). hccl_slots_leaving: that rank + 1, or 0. */
void hccl_slots_leave(hccl_slots *s);
uint32_t hccl_slots_leaving(hccl_slots *s);

/* Placement: each rank says which CPU it last ran on (a hint, read without order);
 * hccl_slots_cpu: rank j's, or -1 when it has not said. */
void hccl_slots_set_cpu(hccl_slots *s, int cpu);
int hccl_slots_cpu(hccl_slots *s, uint32_t j);

#endif
