/* rollcall.h - after the bootstrap fence timed out, find out across nodes
 * which ranks never reached ddp_init.  Internal to libddp.
 *
 * Slurm's fence does not say who is missing, and a rank can safely ask
 * only its own node's PMIx server which local ranks committed their setup
 * data (pmix_missing.c says why).  So the survivors pool what their nodes
 * know, with one report per node:
 *   - on each node the survivors meet on a node-local socket (an abstract
 *     Unix socket named after the step and the node): the first surviving
 *     local rank (by the node's PMIx probe) binds it and is the node's
 *     delegate; the others connect and give it their view, so a rank one
 *     probe missed is still seen; the delegate waits for every rank of
 *     its node (whatever its own view says: a view may have missed one)
 *     until the relay's window ends; a delegate that does not come is
 *     replaced by whoever binds the socket next;
 *   - node 0's delegate opens a short-lived hub on MASTER_PORT (the step's
 *     rendezvous port, which the SPANK plugin derives from the job step;
 *     MASTER_ADDR is node 0), every other delegate reports its node's
 *     ranks and which of them never arrived; the hub reads the reports as
 *     they come (epoll, no limit on their number) and answers every
 *     delegate with the union once every node reported or its window
 *     ended;
 *   - each delegate relays the answer to its node's survivors.
 * So the hub handles one connection per node, not per rank.  This runs
 * only after an init failed, for a few seconds at most (every wait is
 * bounded), and is best effort: a rank that cannot reach its delegate,
 * or a delegate the hub, keeps its own node's view.
 * Reports come from the network and are checked, never trusted: at worst
 * a forged one changes the words of an error message.  The node-local
 * socket also checks that its peer runs as the same user.
 */
#ifndef DDP_ROLLCALL_H
#define DDP_ROLLCALL_H

#include <stdbool.h>
#include <stdint.h>

/* Ranks an answer lists; more are counted. */
#define ROLLCALL_LIST_MAX 64
/* Ranks of one node a report may hold. */
#define ROLLCALL_NODE_MAX 65536

/* What the hub knows of a rank. */
enum ddpi_rank_state {
    RANK_UNHEARD = 0,   /* no report from its node */
    RANK_PRESENT = 1,   /* a report saw it arrive */
    RANK_MISSING = 2,   /* its node's reports say it never arrived */
};

/* The hub's tally: one state per rank, and which nodes reported. */
struct ddpi_tally {
    int size, nnodes;
    uint8_t *state;     /* size entries of enum ddpi_rank_state */
    bool *heard;        /* nnodes entries */
    int nheard;
};

/* Prepare t for size ranks on nnodes nodes (both >= 1).  Returns 0, or -1
 * when out of memory (t is then safe to free). */
int ddpi_tally_init (struct ddpi_tally *t, int size, int nnodes);

void ddpi_tally_free (struct ddpi_tally *t);

/* Add node's report: its n ranks, of which the m in missing never arrived
 * (each of them must be among ranks).  A rank any report saw arrive stays
 * present: a later probe can only have seen more.  Returns 0, or -1 for a
 * report that is not sound (node or a rank out of range, m > n, a missing
 * rank not among the node's); t is then unchanged. */
int ddpi_tally_add (struct ddpi_tally *t, int node, const int32_t *ranks,
                    int n, const int32_t *missing, int m);

/* The ranks in state st, ascending, the first max of them into out.
 * Returns how many there are in all. */
int ddpi_tally_list (const struct ddpi_tally *t, int st, int32_t *out,
                     int max);

/* What the roll call found. */
struct ddpi_rollcall;

/* The wire messages (rollcall.c), parsed from buffers so that their
 * checks can be fuzzed (tests/fuzz/fuzz_rollcall.c). */

/* Bytes of a report's header; ddpi_report_len() needs that many. */
#define ROLLCALL_REPORT_HDR 32

/* The whole length of the report whose header is hdr (at least
 * ROLLCALL_REPORT_HDR bytes), or 0 when the header is not one of step
 * tag's reports or announces more ranks than a report may hold. */
size_t ddpi_report_len (const void *hdr, uint64_t tag);

/* Check the report buf (len bytes, header included) for step tag and add
 * it to t.  Returns 0, or -1 when it is not sound (t unchanged). */
int ddpi_report_add (struct ddpi_tally *t, uint64_t tag, const void *buf,
                     size_t len);

/* Parse the answer buf (len bytes) for step tag in a world of size ranks
 * into out.  Returns 0, or -1 when it is not sound (out then undefined). */
int ddpi_answer_parse (const void *buf, size_t len, uint64_t tag, int size,
                       struct ddpi_rollcall *out);

/* Bytes of the largest answer. */
#define ROLLCALL_ANSWER_MAX (32 + 2 * ROLLCALL_LIST_MAX * 4)

/* Write the answer of tally t for step tag into buf (ROLLCALL_ANSWER_MAX
 * bytes).  Returns its length. */
size_t ddpi_answer_fill (const struct ddpi_tally *t, uint64_t tag, char *buf);

/* node's report for step tag: its n ranks, of which the m in missing
 * never arrived (n, m within ROLLCALL_NODE_MAX), in a malloc'd buffer of
 * *len bytes.  Returns it, or NULL when out of memory. */
char *ddpi_report_make (uint64_t tag, int node, const int *ranks, int n,
                        const int *missing, int m, size_t *len);

/* The node a report's header (ROLLCALL_REPORT_HDR bytes, checked by
 * ddpi_report_len) speaks for. */
int ddpi_report_node (const void *hdr);

struct ddpi_rollcall {
    int nmissing, nmissing_listed;  /* reported missing: in all, listed */
    int32_t missing[ROLLCALL_LIST_MAX];
    int nunheard, nunheard_listed;  /* on nodes that did not report */
    int32_t unheard[ROLLCALL_LIST_MAX];
};

/* This rank's part in it. */
struct ddpi_rollcall_in {
    uint64_t tag;           /* the job step, the same on every rank */
    int rank;               /* this rank */
    int size, nnodes, node; /* world size, nodes, this node */
    const int *local_ranks; /* this node's ranks (local_size), this one
                               among them */
    int local_size;
    const int *missing;     /* which of them never arrived, as far as this
                               rank's probe saw (nmissing) */
    int nmissing;
    double relay;           /* seconds the delegate waits for its node's
                               other ranks, at most (> 0) */
    double window;          /* seconds the hub waits for the nodes */
};

/* The relay's window libddp uses: a node's survivors come within
 * milliseconds of each other (their PMIx server gave up on the fence for
 * all of them at once); a node with a rank that never came waits all of
 * it. */
#define ROLLCALL_RELAY_WINDOW 0.5

/* Take part in the roll call: become this node's delegate or give it this
 * rank's view; node 0's delegate is the hub, the others report to it.
 * Needs MASTER_ADDR (an IPv4 address) and MASTER_PORT.  Returns 0 with
 * *out filled, or -1 when there was no roll call to take part in
 * (variables unset, a relay window not > 0, no delegate or hub reached in
 * time, a bad answer).  Takes at most relay + window + 2 seconds. */
int ddpi_rollcall_run (const struct ddpi_rollcall_in *in,
                       struct ddpi_rollcall *out);

#endif /* DDP_ROLLCALL_H */
