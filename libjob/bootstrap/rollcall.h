/* rollcall.h - after the bootstrap fence timed out, find out across nodes
 * which ranks never reached ddp_init.  Internal to libddp.
 *
 * Slurm's fence does not say who is missing, and a rank can safely ask
 * only its own node's PMIx server which local ranks committed their setup
 * data (bootstrap.c says why).  So the survivors pool what their nodes
 * know: a surviving rank of node 0 opens a short-lived hub on MASTER_PORT
 * (the step's rendezvous port, which the SPANK plugin derives from the job
 * step; MASTER_ADDR is node 0), every other survivor reports to it its
 * node's ranks and which of them never arrived, and all get back the
 * union.  This runs only after an init failed, for two seconds at most,
 * and is best effort: a rank that cannot reach the hub keeps its own
 * node's view.
 * Reports come from the network and are checked, never trusted: at worst
 * a forged one changes the words of an error message.
 */
#ifndef DDP_ROLLCALL_H
#define DDP_ROLLCALL_H

#include <stdbool.h>
#include <stdint.h>

/* Ranks an answer lists; more are counted. */
#define ROLLCALL_LIST_MAX 64

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

struct ddpi_rollcall {
    int nmissing, nmissing_listed;  /* reported missing: in all, listed */
    int32_t missing[ROLLCALL_LIST_MAX];
    int nunheard, nunheard_listed;  /* on nodes that did not report */
    int32_t unheard[ROLLCALL_LIST_MAX];
};

/* This rank's part in it. */
struct ddpi_rollcall_in {
    uint64_t tag;           /* the job step, the same on every rank */
    int size, nnodes, node; /* world size, nodes, this node */
    const int *local_ranks; /* this node's ranks (local_size) */
    int local_size;
    const int *missing;     /* which of them never arrived (nmissing) */
    int nmissing;
    double window;          /* seconds the hub waits for reports */
};

/* Take part in the roll call: on node 0, become the hub if no other rank
 * there is; else report to it.  Needs MASTER_ADDR (an IPv4 address) and
 * MASTER_PORT.  Returns 0 with *out filled, or -1 when there was no roll
 * call to take part in (variables unset, no hub reached in time, a bad
 * answer).  Takes at most window + 1 seconds. */
int ddpi_rollcall_run (const struct ddpi_rollcall_in *in,
                       struct ddpi_rollcall *out);

#endif /* DDP_ROLLCALL_H */
