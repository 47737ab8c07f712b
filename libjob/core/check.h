/* check.h - DDP_CHECK: every collective's arguments compared across the
 * ranks before it runs (internal to libddp).
 *
 * The host backend agrees on each call's kind, count, dtype, op and root
 * in the call itself wherever a rank reads another's data or waits for it
 * (host.h), and a call that no rank read (every rank naming itself the
 * root of a bcast) at the next call that some rank reads (the trail);
 * a count of 0 on some ranks only passes unseen, and two ranks that wait
 * for each other do so until DDP_TIMEOUT; the NCCL backend compares
 * nothing.  With DDP_CHECK=1 the core (core.c) describes
 * each call (struct check_sig), and before running it checks that every
 * rank describes the same call: one all-reduce of six 64-bit words (the
 * maximum of the description and of its complement, i.e. its maximum and
 * minimum), and only when they differ an all-gather of every rank's
 * description, from which every rank writes the same message.  Like
 * PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL, a mode for chasing a problem:
 * it adds a small collective to every call.
 *
 * The encoding and the message are pure code (tested in test/check.c);
 * the exchange is the core's.
 */
#ifndef DDP_CHECK_H
#define DDP_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "ddp.h"

/* The calls a description tells apart: enum ddp_coll_kind's six
 * (backend.h), then these. */
enum {
    CHECK_BARRIER = 6,
    CHECK_FINALIZE = 7,
    CHECK_SPLIT = 8,     /* ddp_comm_split (its colour is not compared) */
    CHECK_FREE = 9,      /* ddp_comm_free */
    CHECK_KINDS = 10,
};

/* Words of a description that must agree; w[CHECK_CMP] is the rank's own
 * number of the call (its first collective is 1), reported, not compared,
 * so that a rank that skipped a call is named with the call it is in. */
#define CHECK_CMP 3

struct check_sig {
    uint64_t w[CHECK_CMP + 1];
};

/* Describe a call: kind (the enum ddp_coll_kind value or CHECK_*), what
 * it takes (count, dtype; op of a reduction; root of a bcast, reduce or
 * gather; what a kind does not take is left out) and the rank's number of
 * it. */
struct check_sig check_sig_make (int kind, size_t count, ddp_dtype_t dtype,
                                 ddp_op_t op, int root, uint64_t ordinal);

/* Do a and b describe the same call (their ordinals aside)? */
int check_sig_same (const struct check_sig *a, const struct check_sig *b);

/* Write a call as a rank described it to buf (len bytes; always
 * terminated): "ddp_bcast of 2 float32 from root 1". */
void check_sig_name (char *buf, size_t len, const struct check_sig *s);

/* Write to buf (len bytes; always terminated) how the n ranks' calls
 * (all[r]: rank r's) differ, the ranks grouped by call, in the order each
 * call is first seen, e.g. "ranks 0,2: ddp_bcast of 2 float32 from root 0
 * (their collective #3); rank 1: ddp_bcast of 2 float32 from root 1
 * (its collective #3)".  At most CHECK_GROUPS calls are listed, as many
 * as fit whole (the first always, cut where it must be), the rest of the
 * ranks counted.  Returns the number of different calls. */
#define CHECK_GROUPS 4
int check_report (char *buf, size_t len, const struct check_sig *all, int n);

#endif /* DDP_CHECK_H */
