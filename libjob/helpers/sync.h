/* sync.h - how a helper's step ends with the same answer on every rank
 * (sync.c; internal to libjob/helpers, used by helpers.c and bytes.c).
 *
 * A failure on one rank (a callback, a bad argument, an allocation) becomes
 * an error on every rank, carried by the collective that ends the step: the
 * rank that failed returns its own code, every other rank DDP_EREMOTE.
 * That collective is a status allreduce (helpers_sync_status), repeated in
 * rounds while a callback on some rank outlasts DDP_TIMEOUT
 * (helpers_run_synced).  Built on libddp's public API only.
 */
#ifndef DDP_HELPERS_SYNC_H
#define DDP_HELPERS_SYNC_H

#include <stdbool.h>
#include <stdint.h>

/* Has ddp_init() succeeded (the backend is not "none")? */
bool helpers_initialized (void);

/* Is DDP_DEBUG 1 (env.c's grammar: a malformed value is off, with one
 * warning)?  Then the helpers log why they fail. */
bool helpers_debug (void);

/* The checks a helper with a root makes before any collective, with the
 * same answer on every rank: DDP_ENOINIT before ddp_init, DDP_EINVAL for a
 * root that is not a rank, else 0 with *is_root set. */
int helpers_check_root (int root, bool *is_root);

/* Share this rank's status 'local' (0 or a DDP_E* code) and learn
 * everyone's, in one allreduce.  Returns the collective's error if it
 * failed; else 'local' if this rank failed; DDP_EREMOTE if another did;
 * DDP_EMISMATCH if 'check' differs across ranks; else 0.  *flag (may be
 * NULL) is set to whether any rank passed flag_in true.  what names the
 * helper in DDP_DEBUG messages. */
int helpers_sync_status (const char *what, int local, uint64_t check,
                         bool flag_in, bool *flag);

/* Run run(arg) on this rank if 'runs' (it returns 0 or a DDP_E* code),
 * then return as helpers_sync_status() with the callback's result (or
 * 'local', if that is already a failure and run is not called) as this
 * rank's status, however long the callbacks take: the ranks that wait
 * keep exchanging rounds, and a watchdog thread takes this rank's part
 * while its callback runs long.  run must not call a collective. */
int helpers_run_synced (const char *what, bool runs, int (*run) (void *),
                        void *arg, int local, uint64_t check, bool flag_in,
                        bool *flag);

#endif /* DDP_HELPERS_SYNC_H */
