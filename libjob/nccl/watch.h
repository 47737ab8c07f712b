/* watch.h - which rank is gone or late, and what it was doing, asked on
 * libddp's own channel after NCCL failed or a deadline passed.  Internal
 * to the NCCL backend (design: doc/nccl.md, "A dead or late rank").
 *
 * NCCL's errors name no rank ("remote process exited or there was a
 * network error"), and a collective that never completes says nothing at
 * all.  So every rank of a communicator of several runs a watch: a
 * listening TCP socket, published in the rank's bootstrap blob (its
 * addresses, port and a random cookie), and a thread that answers each
 * question with what the rank is doing (a state word, nccl_util.h:
 * collective number, call, in or out, failed, ddp_abort).  A process that
 * is gone no longer listens: the connection is refused; one that hangs in
 * the kernel or is stopped accepts but does not answer; an unreachable
 * host lets no connection through.  The thread answers whatever the
 * program does (user code, a hung kernel, a wait in NCCL).
 *
 * After a failure a survivor diagnoses: it asks the lower ranks first
 * (batches of 8); when one of them failed too, that one is the collector
 * and this rank waits for its verdict; else this rank is the collector:
 * it asks every rank (the lower ones again: one that failed meanwhile
 * is the collector after all), describes what it found (nccl_describe)
 * and tells that verdict to every rank that answered, which keeps the
 * first one it is told.  The collector's questions say it collects: a
 * rank that answers them before it fails knows a verdict is coming and,
 * when it fails, waits for it instead of collecting too (it was asked
 * too early to be seen failed).  So the survivors report one collector's
 * finding (two may still collect when their questions cross as both
 * fail, or when a verdict does not come within the wait), and a survivor
 * that reports and exits at once is not taken for a dead rank by a
 * slower one (it told them first).  A rank that fails later (a late
 * rank, a slow one) reports the verdict it was told.  Costs: one thread
 * and one socket per rank, idle until asked; on the hot path nothing
 * (nccl_ctx.h's nccl_show stores the state word with a relaxed atomic
 * store); after a failure O(size) short connections for the collector
 * and O(1) for the others, each wait bounded by the window.
 *
 * Questions and verdicts quote the asked rank's cookie (it comes only
 * through the bootstrap): anything else is closed unanswered, and a
 * verdict is text only, printed, never acted on (doc/threat-model.md).
 */
#ifndef DDP_NCCL_WATCH_H
#define DDP_NCCL_WATCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl_util.h"

struct nccl_watch;

/* Start rank's watch (of size > 1 ranks): listen on every interface (on
 * DDP_HOST_ADDR only when set; the addresses put in *addr are those
 * DDP_SOCKET_IFNAME or its default picks: net.h) and start the thread,
 * which answers with the word at *state (the caller keeps it alive until
 * nccl_watch_stop).
 * Fills *addr for the rank's blob.  Returns 0 and sets *wp, or a DDP_E*
 * code with the reason in err (the backend then goes on without: addr->nip
 * is 0 and the peers do not ask this rank). */
int nccl_watch_start (int rank, int size, const _Atomic uint64_t *state,
                      struct nccl_watch_addr *addr, struct nccl_watch **wp,
                      char *err, size_t errlen);

/* Take the peers' addresses and host names from the decoded blobs of every
 * rank (all[0..size-1]).  Returns 0 or DDP_ENOMEM (the watch then asks
 * nobody).  Memory: 16 bytes per rank and one host entry per run of
 * consecutive ranks on one host. */
int nccl_watch_peers (struct nccl_watch *w, const struct nccl_blob *all);

/* After a failure seen in state mine (its NCCL_ST_FAILED flag set, also in
 * the word the thread answers with): find out who is at fault, as above,
 * each step bounded by window seconds (all of it by 9 windows and a
 * second, when ranks do not answer and collectors do not tell; a few
 * milliseconds when they do), and
 * write the verdict into out (len bytes): nccl_describe's text (which says
 * so when nobody was found at fault), followed by " (noticed by rank R)"
 * when another rank found it.  A second call gives the same verdict at
 * once.  Returns 0, or -1 when nothing could be found out (no watch, no
 * memory; out is then ""). */
int nccl_watch_diagnose (struct nccl_watch *w, uint64_t mine, double window,
                         char *out, size_t len);

/* Stop the thread, close the sockets, free w (NULL is a no-op).  Peers
 * asking afterwards find this rank gone. */
void nccl_watch_stop (struct nccl_watch *w);

#endif /* DDP_NCCL_WATCH_H */
