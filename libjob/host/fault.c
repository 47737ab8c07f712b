/* fault.c - the fault policy of the host backend (fault.h): what an event
 * the transport reported means (who is at fault, of what kind), the swap
 * of lists that completes a timeout's record, the error the user is told.
 *
 * Above the transport: calls record.c (the record as data) and, through
 * the relay callbacks in h->relay, the links (flood.c); nothing below
 * calls it. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>

#include "ddp_internal.h"
#include "fault.h"
#include "record.h"
#include "wait.h"

int host_fault_code (int kind)
{
    kind = FAULT_KIND (kind);
    return kind == FAULT_TIMEOUT ? DDP_ETIMEDOUT
         : kind == FAULT_LINK ? DDP_ETRANSPORT
         : kind == FAULT_MISMATCH ? DDP_EMISMATCH : DDP_EPEER;
}

/* What the ranks of a record of kind did, into buf. */
static const char *kind_str (int kind, char *buf, size_t len)
{
    int d = FAULT_DETAIL (kind);

    switch (FAULT_KIND (kind)) {
    case FAULT_DIED: return "died";
    case FAULT_ABORTED: return "called ddp_abort";
    case FAULT_TIMEOUT: return "did not arrive within DDP_TIMEOUT";
    case FAULT_LINK: return "lost its node's link";
    case FAULT_MISMATCH: return "disagree on a collective call (kind, "
                                "count, dtype, op, root or order)";
    case FAULT_LEFT: return "left (ddp_finalize)";
    case FAULT_EXITED:
        snprintf (buf, len, "exited with status %d without ddp_finalize", d);
        return buf;
    case FAULT_KILLED:
        snprintf (buf, len, "died: killed by signal %d (%s)", d,
                  d > 0 && d < NSIG ? strsignal (d) : "unknown");
        return buf;
    }
    return "failed";
}

/* fault.h. */
int host_record_kind (struct host *h)
{
    double end = 0;
    int kind;

    while ((kind = atomic_load (&h->hdr->fault_kind)) == 0) {
        double t = ddpi_now ();
        if (end == 0)
            end = t + 1e-3;
        else if (t > end)
            return FAULT_DIED;
    }
    return kind;
}

/* Is global rank r in the segment's fault list? */
static bool listed (struct host *h, int r)
{
    int nlist = h->hdr->fault_nlist;

    if (nlist > FAULT_LIST_MAX)
        nlist = FAULT_LIST_MAX;
    return ddpi_rank_in (h->hdr->fault_list, nlist, r);
}

/* The latest step a local rank of this node entered. */
static uint64_t latest_step (struct host *h)
{
    uint64_t top = 0;

    for (int lr = 0; lr < h->lsize; lr++) {
        uint64_t s = atomic_load (&h->flags[lr].seq);
        top = s > top ? s : top;
    }
    return top;
}

/* The rank the claimer of a timeout waited for (the record's first rank:
 * the fallback name of an empty list), or -1. */
static int awaited (struct host *h)
{
    int a = atomic_load (&h->hdr->fault_rank) - 1;

    return a >= 0 && a < h->size ? a : -1;
}

/* The node's speaker in the swap of lists: its lowest local rank that
 * reached the node's latest step, is not at fault and is not the rank a
 * timeout waited for (that one may be stopped: it would never speak).
 * Returns that local rank, or -1 when there is none. */
static int speaker (struct host *h)
{
    uint64_t top = latest_step (h);
    int a = awaited (h);

    for (int lr = 0; lr < h->lsize; lr++)
        if (atomic_load (&h->flags[lr].seq) == top
            && !listed (h, h->local_ranks[lr]) && h->local_ranks[lr] != a)
            return lr;
    return -1;
}

/* This rank took the record in (fault_here): it is alive. */
static void mark_here (struct host *h)
{
    if (h->lrank < HOST_HERE_MAX)
        atomic_fetch_or (&h->hdr->fault_here[h->lrank / 64],
                         (uint64_t)1 << (h->lrank % 64));
}

/* Did local rank lr take the record in?  (Past HOST_HERE_MAX: taken as
 * yes, nothing tells.) */
static bool here (struct host *h, int lr)
{
    return lr >= HOST_HERE_MAX
           || (atomic_load (&h->hdr->fault_here[lr / 64])
               & ((uint64_t)1 << (lr % 64))) != 0;
}

/* Local ranks that never reached the node's latest step are absent: add
 * them to the record (the record may have come from another node before
 * this node's own wait for them ran out). */
static void add_local_absent (struct host *h)
{
    int list[FAULT_LIST_MAX], n = 0, nlist = 0;
    uint64_t top = latest_step (h), states[FAULT_LIST_MAX];

    for (int lr = 0; lr < h->lsize; lr++) {
        if (atomic_load (&h->flags[lr].seq) == top)
            continue;
        if (nlist < FAULT_LIST_MAX) {
            states[nlist] = atomic_load (&h->flags[lr].state);
            list[nlist++] = h->local_ranks[lr];
        }
        n++;
    }
    if (nlist > 0)
        host_fault_merge (h, list, states, nlist, n);
}

/* How long the speaker waits for the rank a timeout waited for, when it
 * is a node-mate in the call, to take the record in (every wait of a call
 * looks at the record every few milliseconds): one that does not is
 * stopped in the call (SIGSTOP, a debugger) and is named. */
#define ANSWER_S 0.15

/* The awaited rank a, a node-mate that reached the node's latest step and
 * is in a call, did not take the record in within ANSWER_S: add it to the
 * record, with what it was doing. */
static void add_stuck (struct host *h, int a)
{
    const struct timespec step = { 0, 2 * 1000 * 1000 };
    double end = ddpi_now () + ANSWER_S;
    int lr;
    uint64_t st;
    int32_t r = a;

    if (a < 0 || h->rank_node[a] != h->node || listed (h, a))
        return;     /* not a node-mate, or named already (HOST_EV_LATE) */
    lr = h->rank_lrank[a];
    st = atomic_load (&h->flags[lr].state);
    if (atomic_load (&h->flags[lr].seq) != latest_step (h) || !st
        || !FAULT_STATE_IN (st))
        return;
    while (!here (h, lr) && ddpi_now () < end)
        nanosleep (&step, NULL);
    if (!here (h, lr))
        host_fault_merge (h, &r, &st, 1, 1);
}

/* Is rank a, the one the claimer of a timeout waited for, alive and in
 * the call?  A node-mate that took the record in, or a rank of a node
 * whose speaker answered the swap (heard) with a list that does not name
 * it. */
static bool awaited_alive (struct host *h, int a, bool heard)
{
    if (a < 0 || listed (h, a))
        return false;
    if (h->rank_node[a] != h->node)
        return heard;
    return here (h, h->rank_lrank[a]);
}

/* A timeout in a job of several nodes: ranks on other nodes may be absent
 * too, and only their nodes know.  The node's speaker swaps lists with
 * the other nodes until HOST_SWAP_S after start (when this rank's report
 * began); the other local ranks wait for that, HOST_FINAL_S more. */
static void complete_list (struct host *h, double start)
{
    struct ddpi_waiter w;
    int sp = speaker (h), a = awaited (h);
    double window = start + HOST_SWAP_S - ddpi_now ();
    bool heard;

    if (window < 0.05)
        window = 0.05;
    if (h->lrank != sp) {
        ddpi_wait_init (&w, window + HOST_FINAL_S, h->spin_us);
        ddpi_wait_yield (&w, h->yield_s);   /* as a step's waits (shm.c) */
        while (!atomic_load (&h->hdr->fault_final)
               && ddpi_wait_step (&w) >= 0)
            ;
        return;
    }
    add_local_absent (h);
    add_stuck (h, a);
    heard = h->relay->gather (h, start + HOST_SWAP_S - ddpi_now (),
                              a >= 0 ? h->rank_node[a] : -1);
    if (h->hdr->fault_nlist == 0 && awaited_alive (h, a, heard))
        atomic_store (&h->hdr->fault_alive, 1);
    atomic_store (&h->hdr->fault_final, 1);
}

/* A record whose list is empty (a timeout nobody could pin down) or not
 * sound names the rank the claimer gave (the one it waited for). */
static void check_list (struct host *h)
{
    int n = h->hdr->fault_n, nlist = h->hdr->fault_nlist;

    if (nlist < 1 || nlist > FAULT_LIST_MAX || n < nlist) {
        h->hdr->fault_list[0] = atomic_load (&h->hdr->fault_rank) - 1;
        h->hdr->fault_n = h->hdr->fault_nlist = 1;
    }
}

static const char *const call_names[HOST_KINDS] = {
    "ddp_barrier", "ddp_bcast", "ddp_reduce", "ddp_allreduce", "ddp_gather",
    "ddp_allgather", "ddp_reduce_scatter", "a collective",
};

const char *host_call_name (int kind)
{
    if (kind == FAULT_KIND_FINALIZE)
        return "ddp_finalize";
    return kind >= 0 && kind < HOST_KINDS ? call_names[kind]
                                          : call_names[KIND_OTHER];
}

/* Listed ranks of this node whose state the record lacks get it from
 * their flags (a record claimed in this node lists its ranks alone). */
static void local_states (struct host *h)
{
    int nlist = h->hdr->fault_nlist;

    if (!h->rank_node || !h->flags)
        return;
    for (int i = 0; i < nlist && i < FAULT_LIST_MAX; i++) {
        int r = h->hdr->fault_list[i];
        if (r >= 0 && r < h->size && h->rank_node[r] == h->node
            && h->hdr->fault_state[i] == 0)
            h->hdr->fault_state[i] = atomic_load (
                &h->flags[h->rank_lrank[r]].state);
    }
}

/* What a rank in state st was doing, seen from this rank's call. */
static void doing (struct host *h, uint64_t st, char *buf, size_t len)
{
    unsigned long long c = (unsigned long long)FAULT_STATE_CALL (st);

    if (st == 0)
        snprintf (buf, len, "%s", "");
    else if (FAULT_STATE_KIND (st) == FAULT_KIND_SILENT && FAULT_STATE_IN (st))
        snprintf (buf, len, "sent nothing in %s #%llu, and node %d took a "
                  "connection but did not answer the swap of fault lists: "
                  "busy outside libddp (late), stopped or stuck",
                  host_call_name (h->kind),
                  (unsigned long long)FAULT_SILENT_OF (c),
                  FAULT_SILENT_NODE (c));
    else if (FAULT_STATE_KIND (st) == FAULT_KIND_SILENT)
        snprintf (buf, len, "sent nothing in %s #%llu, and no connection to "
                  "node %d came up: its link is down or it is (network?)",
                  host_call_name (h->kind),
                  (unsigned long long)FAULT_SILENT_OF (c),
                  FAULT_SILENT_NODE (c));
    else if (FAULT_STATE_IN (st))
        snprintf (buf, len, "%s in %s #%llu",
                  c == h->call ? "is still" : "is",
                  host_call_name (FAULT_STATE_KIND (st)), c);
    else if (c < h->call)
        snprintf (buf, len, "never entered %s #%llu",
                  host_call_name (h->kind),
                  (unsigned long long)h->call);
    else
        snprintf (buf, len, "left %s #%llu",
                  host_call_name (FAULT_STATE_KIND (st)), c);
}

#define GROUPS_MAX 4

/* The detail of a timeout: for each listed rank what it was doing,
 * grouped by what (GROUPS_MAX at most, the rest counted), e.g. "rank 5
 * (node 1) is still in ddp_barrier #811; ranks 3,17 never entered
 * ddp_allreduce #812".  A rank still in this very call that this one
 * waited for is waiting itself: for a third rank, or, where the ranks
 * disagree on the call's root, for this one (each waits for the root it
 * named); the detail then points at DDP_CHECK, which tells. */
static void describe (struct host *h, char *out, size_t len)
{
    char what[GROUPS_MAX][224], cur[224], ranks[96];
    int grp[GROUPS_MAX][FAULT_LIST_MAX], ng[GROUPS_MAX] = { 0 }, ngroups = 0;
    int nlist = h->hdr->fault_nlist, more = h->hdr->fault_n, g;
    bool still = false;
    size_t at = 0;

    out[0] = '\0';
    for (int i = 0; i < nlist && i < FAULT_LIST_MAX; i++) {
        uint64_t st = h->hdr->fault_state[i];
        doing (h, st, cur, sizeof (cur));
        still |= st && FAULT_STATE_IN (st) && FAULT_STATE_CALL (st) == h->call
                 && FAULT_STATE_KIND (st) != FAULT_KIND_SILENT;
        for (g = 0; g < ngroups && strcmp (what[g], cur) != 0; g++)
            ;
        if (g == ngroups && ngroups < GROUPS_MAX && cur[0])
            snprintf (what[ngroups++], sizeof (what[0]), "%s", cur);
        if (g < ngroups) {
            grp[g][ng[g]++] = h->hdr->fault_list[i];
            more--;
        }
    }
    for (g = 0; g < ngroups && at < len; g++) {
        char node[32] = "";
        if (ng[g] == 1 && h->rank_node)
            snprintf (node, sizeof (node), " (node %d)",
                      h->rank_node[grp[g][0]]);
        at += (size_t)snprintf (out + at, len - at, "; rank%s %s%s %s",
                                ng[g] > 1 ? "s" : "",
                                ddpi_format_ranks (ranks, sizeof (ranks),
                                                   grp[g], ng[g]),
                                node, what[g]);
    }
    if (ngroups > 0 && more > 0 && at < len)
        at += (size_t)snprintf (out + at, len - at, "; %d more rank%s", more,
                                more > 1 ? "s" : "");
    if (still && at < len)
        snprintf (out + at, len - at, " (waiting itself: for another rank, "
                  "or, if the ranks disagree on this call's root, for this "
                  "one; DDP_CHECK=1 compares every call)");
}

/* fault.h.  The kinds in check.h's numbering (host_core.h). */
const char *host_desc_kind_name (int dkind)
{
    static const char *const names[HOST_DESC_BARRIER + 1] = {
        [DDP_COLL_BCAST] = "ddp_bcast", [DDP_COLL_REDUCE] = "ddp_reduce",
        [DDP_COLL_ALLREDUCE] = "ddp_allreduce",
        [DDP_COLL_GATHER] = "ddp_gather",
        [DDP_COLL_ALLGATHER] = "ddp_allgather",
        [DDP_COLL_REDUCE_SCATTER] = "ddp_reduce_scatter",
        [HOST_DESC_BARRIER] = "ddp_barrier",
    };

    return dkind >= 0 && dkind <= HOST_DESC_BARRIER ? names[dkind]
                                                    : "a collective";
}

/* fault.h.  The writer stores count, then what (coll.c): a what read
 * twice the same around the count vouches for that count. */
bool host_desc_of (struct host *h, int lr, uint64_t call, uint64_t *what,
                   uint64_t *count)
{
    _Atomic uint64_t *d = h->flags[lr].desc[call % HOST_DESC_SLOTS];
    uint64_t w = atomic_load_explicit (&d[0], memory_order_acquire);

    *count = atomic_load_explicit (&d[1], memory_order_acquire);
    *what = HOST_DESC_STAMP (w, 0);
    return w == HOST_DESC_STAMP (w, call)
           && atomic_load_explicit (&d[0], memory_order_relaxed) == w;
}

/* fault.h. */
void host_desc_name (char *buf, size_t len, uint64_t what, uint64_t count)
{
    int kind = HOST_DESC_KIND (what), at;

    at = snprintf (buf, len, "%s", host_desc_kind_name (kind));
    if (kind >= HOST_DESC_BARRIER || at < 0 || (size_t)at >= len)
        return;
    at += snprintf (buf + at, len - (size_t)at, " of %llu %s",
                    (unsigned long long)count,
                    ddpi_dtype_name (HOST_DESC_DTYPE (what)));
    if (HOST_DESC_OP (what) >= 0 && at >= 0 && (size_t)at < len)
        at += snprintf (buf + at, len - (size_t)at, " with %s",
                        ddpi_op_name (HOST_DESC_OP (what)));
    if (ddp_coll_has_root ((enum ddp_coll_kind)kind) && at >= 0
        && (size_t)at < len)
        snprintf (buf + at, len - (size_t)at, " %s root %d",
                  kind == DDP_COLL_BCAST ? "from" : "to",
                  HOST_DESC_ROOT (what));
}

/* fault.h.  A peer on this node needs no note: its flags describe its
 * call (mismatch_detail). */
int host_fault_calls (struct host *h, int other, uint64_t what,
                      uint64_t count, uint64_t call)
{
    h->mm_rank = other;
    h->mm_what = what;
    h->mm_count = count;
    h->mm_call = call;
    return host_fault_mismatch (h, other);
}

/* The call rank r made in the call the fault was seen in, as this rank
 * can tell (its flags on this node, the frame that told the calls apart,
 * else what its state says) into out at *at (len bytes in all). */
static void one_call (struct host *h, int r, uint64_t st, char *out,
                      size_t len, size_t *at)
{
    uint64_t what = 0, count = 0, call = h->hdr->fault_call;
    bool known = false;
    char name[96];

    if (*at >= len)
        return;
    if (call == 0)
        call = h->call;
    if (h->rank_node && h->flags && r >= 0 && r < h->size
        && h->rank_node[r] == h->node)
        known = host_desc_of (h, h->rank_lrank[r], call, &what, &count);
    else if (r == h->mm_rank) {
        what = h->mm_what;
        count = h->mm_count;
        call = h->mm_call;
        known = true;
    }
    if (!known) {
        doing (h, st, name, sizeof (name));
        if (name[0])
            *at += (size_t)snprintf (out + *at, len - *at, "; rank %d "
                                     "(node %d) %s", r,
                                     h->rank_node ? h->rank_node[r] : -1,
                                     name);
        return;
    }
    host_desc_name (name, sizeof (name), what, count);
    *at += (size_t)snprintf (out + *at, len - *at, "; rank %d: %s (its "
                             "collective #%llu)", r, name,
                             (unsigned long long)call);
}

/* The detail of a mismatch: each listed rank's call, e.g. "; rank 0:
 * ddp_allreduce of 4 int32 with SUM (its collective #3); rank 1:
 * ddp_allreduce of 4 float32 with SUM (its collective #3)". */
static void mismatch_detail (struct host *h, char *out, size_t len)
{
    int nlist = h->hdr->fault_nlist;
    size_t at = 0;

    out[0] = '\0';
    for (int i = 0; i < nlist && i < FAULT_LIST_MAX; i++)
        one_call (h, h->hdr->fault_list[i], h->hdr->fault_state[i], out, len,
                  &at);
}

/* report()'s error for a mismatch: the call this rank is in, the pair,
 * each one's call, who saw it. */
static int mismatch_report (struct host *h, int code, int who)
{
    char list[96], by[48] = "", det[320];

    local_states (h);
    mismatch_detail (h, det, sizeof (det));
    if (who != h->rank)
        snprintf (by, sizeof (by), " (noticed by rank %d)", who);
    return ddpi_error (code, "%s #%llu: rank%s %s %s%s%s; every rank must "
                       "make the same calls in the same order (DDP_CHECK=1 "
                       "compares every rank's)", host_call_name (h->kind),
                       (unsigned long long)h->call,
                       h->hdr->fault_nlist > 1 ? "s" : "",
                       ddpi_format_ranks (list, sizeof (list),
                                          h->hdr->fault_list,
                                          h->hdr->fault_nlist),
                       kind_str (FAULT_MISMATCH, NULL, 0), det, by);
}

/* A timeout whose lists name nobody while the rank its claimer (who)
 * waited for is alive and in the call (fault_alive): the link between
 * their nodes carried nothing, not a late rank.  Logs it; returns
 * DDP_ETRANSPORT, kept as the sticky state. */
static int report_link (struct host *h, int who)
{
    int a = awaited (h);
    int wn = who >= 0 && who < h->size ? h->rank_node[who] : -1;

    h->broken = DDP_ETRANSPORT;
    return ddpi_error (DDP_ETRANSPORT, "no data from node %d (rank %d) to "
                       "node %d (rank %d) for %g s while both are alive and "
                       "in the call (%s; rank %d noticed it): network? (a "
                       "firewall, or the link between the nodes; no rank "
                       "is absent), or the two disagree on this call's root "
                       "and each waits for the other (DDP_CHECK=1 compares "
                       "every call)", h->rank_node[a], a, wn, who,
                       h->cfg->timeout_s, h->rank_node[a] == h->node
                           ? "it took the fault record in on its node"
                           : "its node answered the swap of fault lists on "
                             "another connection", who);
}

/* The nodes a timeout's record lists, into nodes (distinct, ascending;
 * room for FAULT_LIST_MAX), when every rank it lists is on a node that
 * sent nothing and with which no connection came up in the swap
 * (FAULT_KIND_SILENT without `in`), and it lists every rank it counts.
 * Returns how many; 0 when the record is not such a cut. */
static int cut_nodes (struct host *h, int *nodes)
{
    int nlist = h->hdr->fault_nlist, n = 0;

    if (nlist < 1 || nlist > FAULT_LIST_MAX || h->hdr->fault_n != nlist)
        return 0;
    for (int i = 0; i < nlist; i++) {
        uint64_t st = h->hdr->fault_state[i];
        int node = FAULT_SILENT_NODE (FAULT_STATE_CALL (st)), j;
        if (FAULT_STATE_KIND (st) != FAULT_KIND_SILENT || FAULT_STATE_IN (st))
            return 0;
        for (j = 0; j < n && nodes[j] != node; j++)
            ;
        if (j == n) {
            while (j > 0 && nodes[j - 1] > node) {
                nodes[j] = nodes[j - 1];
                j--;
            }
            nodes[j] = node;
            n++;
        }
    }
    return n;
}

/* A timeout whose absent ranks are all on nodes this node could not
 * connect to at all (cut_nodes): what was observed is a link, not a rank.
 * Logs it; returns DDP_ETRANSPORT, kept as the sticky state. */
static int report_cut (struct host *h, const int *nodes, int n)
{
    char nl[96], rl[192], why[256];

    h->broken = DDP_ETRANSPORT;
    ddpi_format_ranks (nl, sizeof (nl), nodes, n);
    if (n == 1)
        snprintf (why, sizeof (why), "the link between node %d and node %s "
                  "is down", h->node, nl);
    else
        snprintf (why, sizeof (why), "node %d's link is down, or the links "
                  "of nodes %s", h->node, nl);
    return ddpi_error (DDP_ETRANSPORT, "no data from node%s %s (rank%s %s) "
                       "to node %d for %g s, and no connection to %s on any "
                       "address within %g s: %s (network? the ranks there "
                       "may be alive)", n > 1 ? "s" : "", nl,
                       h->hdr->fault_nlist > 1 ? "s" : "",
                       ddpi_format_ranks (rl, sizeof (rl), h->hdr->fault_list,
                                          h->hdr->fault_nlist),
                       h->node, h->cfg->timeout_s, n > 1 ? "them" : "it",
                       HOST_SWAP_S, why);
}

/* Log and keep the fault now in the segment; returns its code. */
static int report (struct host *h)
{
    int kind = host_record_kind (h);
    int who = atomic_load (&h->hdr->fault_reporter);
    int code = host_fault_code (kind);
    double start = ddpi_now ();
    int n, nlist;

    mark_here (h);

    if (h->relay && h->lk && !h->fault_sent) {
        int first = atomic_load (&h->hdr->fault_rank) - 1;
        h->fault_sent = true;
        nlist = h->hdr->fault_nlist;
        if (nlist < 0 || nlist > FAULT_LIST_MAX)
            nlist = 0;
        local_states (h);
        h->relay->send (h, nlist ? h->hdr->fault_list : &first,
                        h->hdr->fault_state, nlist, h->hdr->fault_n, kind,
                        who);
    }
    if (!h->broken && h->nnodes > 1 && h->relay && kind == FAULT_TIMEOUT)
        complete_list (h, start);
    if (!h->broken && kind == FAULT_TIMEOUT && h->hdr->fault_nlist == 0
        && atomic_load (&h->hdr->fault_alive) && awaited (h) >= 0)
        return report_link (h, who);
    if (!h->broken && kind == FAULT_TIMEOUT) {
        int nodes[FAULT_LIST_MAX], ncut = cut_nodes (h, nodes);
        if (ncut > 0)
            return report_cut (h, nodes, ncut);
    }
    check_list (h);
    n = h->hdr->fault_n;
    nlist = h->hdr->fault_nlist;
    if (!h->broken) {
        char tmo[64] = "", list[192], more[48] = "", by[64] = "", det[512] = "";
        char what[64];
        h->broken = code;
        if (kind == FAULT_TIMEOUT) {
            snprintf (tmo, sizeof (tmo), " (%g s)", h->cfg->timeout_s);
            local_states (h);
            describe (h, det, sizeof (det));
        }
        if (kind == FAULT_MISMATCH)
            return mismatch_report (h, code, who);
        if (n > nlist)
            snprintf (more, sizeof (more), " (%d ranks in all)", n);
        if (FAULT_KIND (kind) == FAULT_LEFT) {
            /* Not a failure of the leaver: the call that needs it. */
            if (h->leaving)
                return h->broken;
            snprintf (by, sizeof (by), " before %s #%llu",
                      host_call_name (h->kind),
                      (unsigned long long)h->call);
        }
        else if (who != h->rank)
            snprintf (by, sizeof (by), " (noticed by rank %d)", who);
        ddpi_error (code, "rank%s %s%s %s%s%s%s", n > 1 ? "s" : "",
                    ddpi_format_ranks (list, sizeof (list),
                                       h->hdr->fault_list, nlist),
                    more, kind_str (kind, what, sizeof (what)), tmo, by,
                    det);
    }
    return h->broken;
}

/* A peer found dead may have been killed by a signal that is on its way to
 * this rank too: scancel, preemption and the end of a step signal every
 * task, node by node, milliseconds apart.  Give that signal DIED_GRACE
 * seconds to end this rank quietly before it names the peer dead (else
 * "rank 0 died" comes before Slurm's "Terminated" and misleads), and take
 * a record another rank claims meanwhile. */
#define DIED_GRACE 0.1

static void died_grace (struct host *h)
{
    const struct timespec step = { 0, 5 * 1000 * 1000 };
    double end = ddpi_now () + DIED_GRACE;

    while (atomic_load (&h->hdr->fault_rank) == 0 && ddpi_now () < end)
        nanosleep (&step, NULL);
}

/* PIDFD_GET_INFO (Linux 6.15): what a pidfd's process is, and once it was
 * reaped how it ended, for any process this one could open a pidfd of
 * (not only children).  The kernel's struct in its first version (64
 * bytes): the C library's headers may not have it yet. */
struct pidfd_exit_info {
    uint64_t mask, cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid;
    uint32_t fsuid, fsgid;
    int32_t exit_code;
};
#define PIDFD_INFO_EXIT_MASK (UINT64_C(1) << 3)
#define PIDFD_GET_INFO_CMD _IOWR (0xFF, 11, struct pidfd_exit_info)

/* How local rank lr's process ended, as its pidfd tells: 1 and its wait
 * status in *status, or 0 while that is not known (not yet reaped by its
 * parent, no pidfd, a kernel before 6.15). */
static int gone_status (struct host *h, int lr, int *status)
{
    struct pidfd_exit_info in = { .mask = PIDFD_INFO_EXIT_MASK };

    if (lr < 0 || lr >= h->lsize || !h->pidfds || h->pidfds[lr] < 0
        || ioctl (h->pidfds[lr], PIDFD_GET_INFO_CMD, &in) < 0
        || !(in.mask & PIDFD_INFO_EXIT_MASK))
        return 0;
    *status = in.exit_code;
    return 1;
}

/* The process of rank r, on this node, is gone.  Within DIED_GRACE (see
 * died_grace; a record claimed meanwhile stands) look at how it ended:
 * an exit with its status, a signal, or, when that cannot be seen,
 * FAULT_DIED.  An exit ends the grace: no signal is on its way. */
static int peer_gone (struct host *h, int r)
{
    const struct timespec step = { 0, 5 * 1000 * 1000 };
    double end = ddpi_now () + DIED_GRACE;
    int lr = h->rank_lrank ? h->rank_lrank[r] : -1, st = 0, kind = FAULT_DIED;
    bool known = false;

    for (;;) {
        known = known || gone_status (h, lr, &st);
        if (atomic_load (&h->hdr->fault_rank) != 0 || ddpi_now () >= end
            || (known && WIFEXITED (st)))
            break;
        nanosleep (&step, NULL);
    }
    if (known && WIFEXITED (st))
        kind = FAULT_WITH (FAULT_EXITED, WEXITSTATUS (st));
    else if (known && WIFSIGNALED (st))
        kind = FAULT_WITH (FAULT_KILLED, WTERMSIG (st));
    host_fault_claim (h, &r, 1, 1, kind, h->rank, h->call);
    return report (h);
}

/* What ddp_finalize waits for the bytes queued on this rank's links to
 * leave before it says it left (seconds). */
#define LEAVE_FLUSH 0.3

int host_fault_leave (struct host *h, uint64_t from)
{
    int32_t me = h->rank;
    uint64_t st = FAULT_STATE (h->call, FAULT_KIND_FINALIZE, 1);

    /* Ranks that disagreed on a call this rank made: it fails too (a
     * bcast's root that read nothing learns it here at the latest). */
    if (host_record_set (h)
        && FAULT_KIND (host_record_kind (h)) == FAULT_MISMATCH
        && h->hdr->fault_call <= h->call)
        return report (h);

    h->leaving = true;
    h->left_mid = from <= h->call;
    if (h->relay && h->relay->flush && h->lk)
        h->relay->flush (h, LEAVE_FLUSH);
    if (!host_fault_claim (h, &h->rank, 1, 1, FAULT_LEFT, h->rank, from)
        && FAULT_KIND (host_record_kind (h)) == FAULT_LEFT)
        host_fault_merge (h, &me, &st, 1, 1);
    return report (h);
}

/* Is rank r one of this node's, in ddp_finalize? */
static bool finalizing (struct host *h, int r)
{
    uint64_t st;

    if (!h->rank_node || r < 0 || r >= h->size || h->rank_node[r] != h->node)
        return false;
    st = atomic_load (&h->flags[h->rank_lrank[r]].state);
    return st != 0 && FAULT_STATE_KIND (st) == FAULT_KIND_FINALIZE;
}

int host_fault_set (struct host *h, const int *ranks, int n, int kind)
{
    char list[192], what[64];

    if (!h->hdr) {
        h->broken = host_fault_code (kind);
        return ddpi_error (h->broken, "rank%s %s %s", n > 1 ? "s" : "",
                           ddpi_format_ranks (list, sizeof (list), ranks, n),
                           kind_str (kind, what, sizeof (what)));
    }
    if (kind == FAULT_DIED)
        died_grace (h);
    host_fault_claim (h, ranks, n, n, kind, h->rank, h->call);
    return report (h);
}

int host_fault_mismatch (struct host *h, int other)
{
    int ranks[2];

    /* A rank in ddp_finalize meets one in another call: it leaves. */
    if (h->leaving)
        return host_fault_leave (h, h->call);
    if (finalizing (h, other)) {
        host_fault_claim (h, &other, 1, 1, FAULT_LEFT, other, h->call);
        return report (h);
    }

    ranks[0] = other < h->rank ? other : h->rank;
    ranks[1] = other < h->rank ? h->rank : other;
    return host_fault_set (h, ranks, 2, FAULT_MISMATCH);
}

/* fault.h.  The record names the earlier call (one_call reads each
 * rank's description of it) and fails every call from it on (call_agree,
 * host_record_stops). */
int host_fault_history (struct host *h, int other, uint64_t call)
{
    int ranks[2];
    int rc;

    ranks[0] = other < h->rank ? other : h->rank;
    ranks[1] = other < h->rank ? h->rank : other;
    if (!h->hdr)
        return host_fault_set (h, ranks, 2, FAULT_MISMATCH);
    host_fault_claim (h, ranks, 2, 2, FAULT_MISMATCH, h->rank,
                      call ? call : h->call);
    rc = report (h);
    if (call == 0 && rc == DDP_EMISMATCH)
        ddpi_error (rc, "%s #%llu: rank %d made other calls before this one "
                    "than rank %d (a kind, count, dtype, op or root "
                    "differed, more than %d calls ago or in more than one "
                    "call; DDP_CHECK=1 names each rank's)",
                    host_call_name (h->kind), (unsigned long long)h->call,
                    other, h->rank, HOST_DESC_SLOTS - 1);
    return rc;
}

int host_fault (struct host *h, int bad_rank, int kind)
{
    return host_fault_set (h, &bad_rank, 1, kind);
}

int host_check_fault (struct host *h)
{
    if (atomic_load_explicit (&h->hdr->fault_rank, memory_order_relaxed) == 0)
        return 0;
    return report (h);
}

/* A wait on local rank lr's arrival at step s ran out: every local rank
 * that has not reached step s is absent (ascending, as local_ranks is),
 * not only lr. */
static int absent_fault (struct host *h, int lr, uint64_t s)
{
    int list[FAULT_LIST_MAX];
    int j, n = 0, nlist = 0;

    for (j = 0; j < h->lsize; j++) {
        if (j == h->lrank || atomic_load_explicit (&h->flags[j].seq,
                                                   memory_order_acquire) >= s)
            continue;
        if (nlist < FAULT_LIST_MAX)
            list[nlist++] = h->local_ranks[j];
        n++;
    }
    if (n == 0)     /* arrived meanwhile: still a timeout of the waited one */
        return host_fault (h, h->local_ranks[lr], FAULT_TIMEOUT);
    host_fault_claim (h, list, nlist, n, FAULT_TIMEOUT, h->rank, h->call);
    return host_check_fault (h);
}

/* A data frame of another call may be the last of a rank that leaves
 * (its ddp_finalize's barrier), whose notice follows on the side
 * (flood.c): wait up to NOTICE_WAIT for a record, taking side frames,
 * before naming a mismatch.  True when a record came. */
#define NOTICE_WAIT 1.0

static bool notice_came (struct host *h)
{
    const struct timespec step = { 0, 2 * 1000 * 1000 };
    double end = ddpi_now () + NOTICE_WAIT;

    while (!host_record_set (h) && ddpi_now () < end) {
        if (h->relay && h->relay->poll)
            h->relay->poll (h);
        nanosleep (&step, NULL);
    }
    return host_record_set (h);
}

/* A frame came from ev->rank (the lead of node ev->node) that is not the
 * one awaited.  A data frame of another call than this rank's (as its
 * sender described it: kind, count, dtype, op, root): the ranks made
 * different calls, and the error names both.  Of this call with another
 * part or size: the
 * ranks passed different counts, dtypes or roots to the call (or made
 * different collectives under one number); of another call: they made
 * different sequences of calls.  Both fail every rank with DDP_EMISMATCH,
 * naming the pair; any other frame is a fault of the link. */
/* A node-mate that described one of this rank's last HOST_DESC_SLOTS - 1
 * calls otherwise (its flags' desc against this rank's past): a bcast's
 * root that read nothing, in ddp_finalize, whose node-mate is still in
 * that call.  host_fault_history of the first such pair, else 0. */
static int mates_differ (struct host *h)
{
    if (!h->flags)
        return 0;
    for (int lr = 0; lr < h->lsize; lr++) {
        for (uint64_t k = 1; lr != h->lrank && k < HOST_DESC_SLOTS
                             && k < h->call; k++) {
            uint64_t c = h->call - k, what, count;
            const struct trail_call *p = &h->past[c % HOST_DESC_SLOTS];
            if (host_desc_of (h, lr, c, &what, &count)
                && (what != p->what || count != p->count))
                return host_fault_history (h, h->local_ranks[lr], c);
        }
    }
    return 0;
}

/* A data frame that tells of an earlier call made differently: of this
 * call as this rank describes it but after other calls (another trail),
 * or of an earlier call that takes a root, which this rank did not
 * receive then (the two named different roots).  A mismatch of that
 * earlier call (host_fault_history), in ddp_finalize too; 0 for another
 * frame, or when a record is there already. */
static int earlier_bad (struct host *h, const struct host_event *ev)
{
    int kind = HOST_DESC_KIND (ev->got_what);

    if (host_record_set (h))
        return 0;
    if (ev->got_call == h->call && ev->got_what == h->desc.what
        && ev->got_count == h->desc.count && ev->got_trail != h->desc.trail) {
        struct trail_call c;
        h->mm_call = trail_blame (h->past, h->call, ev->got_trail, h->size,
                                  &c);
        h->mm_rank = h->mm_call ? ev->rank : -1;
        h->mm_what = c.what;
        h->mm_count = c.count;
        return host_fault_history (h, ev->rank, h->mm_call);
    }
    if (ev->got_call >= h->call || kind >= HOST_DESC_BARRIER
        || !ddp_coll_has_root ((enum ddp_coll_kind)kind))
        return 0;
    h->mm_rank = ev->rank;
    h->mm_what = ev->got_what;
    h->mm_count = ev->got_count;
    h->mm_call = ev->got_call;
    return host_fault_history (h, ev->rank, ev->got_call);
}

static int link_bad (struct host *h, const struct host_event *ev)
{
    const char *call = host_call_name (h->kind);
    unsigned long long c = (unsigned long long)h->call;
    int rc;

    if (ev->got_data && (rc = earlier_bad (h, ev)) < 0)
        return rc;
    if (h->leaving && ev->got_data)
        return host_fault_leave (h, h->call);
    if (ev->got_data && notice_came (h))
        return host_check_fault (h);
    if (!ev->got_data) {
        ddpi_error (DDP_ETRANSPORT, "%s #%llu: node %d (rank %d) sent a "
                    "frame that is not data where rank %d expected data",
                    call, c, ev->node, ev->rank, h->rank);
        return host_fault (h, ev->rank, FAULT_LINK);
    }
    if (ev->got_what != h->desc.what || ev->got_count != h->desc.count)
        return host_fault_calls (h, ev->rank, ev->got_what, ev->got_count,
                                 ev->got_call);
    rc = host_fault_mismatch (h, ev->rank);
    if (ev->got_call != h->call)
        return ddpi_error (rc, "%s #%llu: node %d (rank %d) sent data of its "
                           "collective #%llu to rank %d: the ranks made "
                           "different sequences of collective calls, or "
                           "disagreed on a root (DDP_CHECK=1 compares every "
                           "call)", call, c, ev->node, ev->rank,
                           (unsigned long long)ev->got_call, h->rank);
    if (ev->got_tag == (int32_t)ev->want_tag)
        return ddpi_error (rc, "%s #%llu: node %d (rank %d) sent a message of "
                           "%llu bytes where rank %d expected %zu: every "
                           "rank must pass the same count and dtype", call,
                           c, ev->node, ev->rank,
                           (unsigned long long)ev->got_len, h->rank,
                           ev->want_len);
    return ddpi_error (rc, "%s #%llu: node %d (rank %d) sent part %d (%llu "
                       "bytes) where rank %d expected part %u (%zu bytes): "
                       "every rank must pass the same count, dtype and root "
                       "to the same collective", call, c, ev->node, ev->rank,
                       (int)ev->got_tag, (unsigned long long)ev->got_len,
                       h->rank, ev->want_tag, ev->want_len);
}

int host_fault_event (struct host *h)
{
    struct host_event ev = h->ev;
    int rc;

    h->ev.kind = HOST_EV_NONE;
    /* ddp_finalize's short wait ran out: the others are elsewhere, or
     * still in a call this rank made differently. */
    if (h->leaving && (ev.kind == HOST_EV_ABSENT || ev.kind == HOST_EV_LATE
                       || ev.kind == HOST_EV_STALLED))
        return (rc = mates_differ (h)) < 0 ? rc
                                           : host_fault_leave (h, h->call);
    switch (ev.kind) {
    case HOST_EV_PEER_GONE:
        return peer_gone (h, ev.rank);
    case HOST_EV_LINK_LOST:
        return host_fault (h, ev.rank, FAULT_DIED);
    case HOST_EV_ABSENT:
        return absent_fault (h, ev.lr, ev.step);
    case HOST_EV_LATE:
        return host_fault (h, ev.rank, FAULT_TIMEOUT);
    case HOST_EV_LINK_BAD:
        return link_bad (h, &ev);
    case HOST_EV_STALLED:
        /* Claimed with an empty list: the nodes' lists will say who is
         * absent (the partner waited for may itself be waiting). */
        host_fault_claim (h, &ev.rank, 0, 0, FAULT_TIMEOUT, h->rank,
                          h->call);
        return host_check_fault (h);
    }
    /* HOST_EV_RECORD: the record says it all. */
    rc = host_check_fault (h);
    return rc < 0 ? rc : h->broken ? h->broken : DDP_ETRANSPORT;
}
