/* split.c - groups of ranks: ddp_comm_split, ddp_comm_create_group and
 * ddp_comm_free (comm.h).
 *
 * A split is a collective of the parent communicator, in three parts:
 *   who    one all-gather of every parent rank's colour, key, world rank
 *          and node: each rank finds its group (same colour, ordered by
 *          key then parent rank), the group's nodes and their order;
 *   set-up the backend makes the group's context (its split(), else its
 *          create() on a bootstrap of the group: bootstrap_create_group),
 *          whose rounds travel over the parent in lock step: every round
 *          is one all-gather of every parent rank's message (two parent
 *          collectives), whatever group a rank is in, so that groups set
 *          up at once share the rounds.  A rank whose set-up ended keeps
 *          taking part with an "ended" message until every rank has
 *          ended; a rank still setting up that meets a group-mate which
 *          ended fails at once, naming it, rather than waiting for data
 *          that will not come;
 *   verdict the last round carries each rank's result: every rank of the
 *          parent fails if any failed (naming the first), and the groups
 *          made are released; else each group runs its first barrier.
 * Every wait is one of the parent's collectives or the group's, so every
 * wait is bounded by DDP_TIMEOUT and names who did not come.
 *
 * ddp_comm_create_group is the same with the group's members only: the
 * lock-step rounds are the caller's all-gather among them (a torch store,
 * a group the members already share), "who" checks that they name the
 * same ranks, and the backend makes the context with join() (or create())
 * while the parent's other ranks go on with their own calls.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "comm.h"
#include "ddp_internal.h"

#define FN "ddp_comm_split"

/* What a rank says of itself in the all-gather of "who". */
enum { W_COLOUR, W_KEY, W_WORLD, W_NODE, W_WORDS };

/* A lock-step round's message: a header, then the data. */
enum { MSG_SETUP = 1, MSG_ENDED = 2 };
struct msg_head {
    int32_t tag;    /* MSG_SETUP, MSG_ENDED */
    int32_t rc;     /* MSG_ENDED: the set-up's result on that rank */
    char why[200];  /* MSG_ENDED with rc < 0: why */
};

struct setup {
    const char *fn;        /* the call, for messages */
    char tag[40];          /* the group's name in the job (bootstrap's
                              job_id: the parent's, "/", this) */
    struct ddp_comm *parent;
    int parts;             /* participants of a lock-step round (split:
                              the parent's ranks; create_group: the
                              members) */
    ddp_allgather_fn user; /* create_group: the caller's all-gather (NULL:
                              a split, whose rounds are the parent's) */
    void *user_arg;
    int size;              /* the group's (0: no group) */
    int *part;             /* the participant of each group rank (split:
                              its parent rank) */
    int *world;            /* the world rank of each group rank */
    int *node;             /* the node of each group rank, numbered densely */
    int rank;              /* this rank's in the group */
    bool member;           /* in a group (else: size 1, this rank alone,
                              for a backend's split: backend.h) */
    /* The last lock-step round: every participant's message. */
    char *all;
    size_t *off, *len;
};

static _Atomic unsigned next_id = 1;

/* One collective of the parent. */
static int parent_allgather (struct ddp_comm *p, const void *send, void *recv,
                             size_t count, ddp_dtype_t dtype)
{
    struct ddp_coll k = { .kind = DDP_COLL_ALLGATHER, .sendbuf = send,
                          .recvbuf = recv, .count = count, .dtype = dtype };

    return core_run (p, FN, DDP_COLL_ALLGATHER, &k);
}

/* A lock-step round's transport: every participant's len bytes into
 * all, in participant order: the parent's all-gather for a split, the
 * caller's among the members for create_group. */
static int gather (struct setup *s, const void *mine, void *all, size_t len)
{
    int rc;

    if (!s->user)
        return parent_allgather (s->parent, mine, all, len, DDP_UINT8);
    if ((rc = s->user (s->user_arg, mine, all, len)) != 0)
        return ddpi_error (DDP_EUSER, "%s: the caller's all-gather failed "
                           "on this rank (it returned %d)", s->fn, rc);
    return 0;
}

/* The world rank of participant r. */
static int part_world (const struct setup *s, int r)
{
    return s->user ? s->world[r] : ddp_comm_world_rank (s->parent, r);
}

/* A lock-step round: every participant's message (head, then len bytes
 * of data) into s->all, s->off, s->len.  Two all-gathers: the lengths,
 * then the messages padded to the longest. */
static int lockstep (struct setup *s, const struct msg_head *head,
                     const void *data, size_t len)
{
    int n = s->parts, rc;
    uint64_t mine = sizeof (*head) + len, *lens = NULL, max = 0;
    char *msg = NULL;

    free (s->all);
    s->all = NULL;
    if (!(lens = calloc ((size_t)n, sizeof (*lens))))
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", s->fn);
    if ((rc = gather (s, &mine, lens, sizeof (mine))) < 0)
        goto out;
    for (int r = 0; r < n; r++)
        max = lens[r] > max ? lens[r] : max;
    max = (max + 7) & ~(uint64_t)7; /* every message's header aligned */
    if (max > ((uint64_t)1 << 24) || !(msg = calloc (1, max))
        || !(s->all = malloc ((size_t)max * (size_t)n))) {
        rc = ddpi_error (DDP_ENOMEM, "%s: out of memory (set-up messages of "
                         "%llu bytes)", s->fn, (unsigned long long)max);
        goto out;
    }
    memcpy (msg, head, sizeof (*head));
    if (len)
        memcpy (msg + sizeof (*head), data, len);
    if ((rc = gather (s, msg, s->all, (size_t)max)) < 0)
        goto out;
    for (int r = 0; r < n; r++) {
        s->off[r] = (size_t)max * (size_t)r;
        s->len[r] = (size_t)lens[r];
    }
out:
    free (lens);
    free (msg);
    return rc;
}

/* Participant r's header in the last round. */
static const struct msg_head *head_of (const struct setup *s, int r)
{
    return (const struct msg_head *)(s->all + s->off[r]);
}

/* The group bootstrap's round (bootstrap.h): a lock-step round, of
 * which this rank keeps its group's messages. */
static int group_round (void *arg, const void *blob, size_t len, void **all,
                        size_t *all_off, size_t *all_len, char *err,
                        size_t errlen)
{
    struct setup *s = arg;
    struct msg_head head = { .tag = MSG_SETUP };
    size_t total = 0, at = 0;
    char *out;
    int rc;

    *all = NULL;
    if ((rc = lockstep (s, &head, blob, len)) < 0) {
        snprintf (err, errlen, "%s", ddpi_last_error ());
        return rc;
    }
    for (int g = 0; g < s->size; g++) {
        if (head_of (s, s->part[g])->tag != MSG_SETUP) {
            snprintf (err, errlen, "group rank %d (world rank %d) left the "
                      "group's set-up (it failed there, see its message)",
                      g, s->world[g]);
            return DDP_EREMOTE;
        }
        total += s->len[s->part[g]] - sizeof (head);
    }
    if (!(out = malloc (total ? total : 1))) {
        snprintf (err, errlen, "out of memory");
        return DDP_ENOMEM;
    }
    for (int g = 0; g < s->size; g++) {
        size_t l = s->len[s->part[g]] - sizeof (head);

        memcpy (out + at, s->all + s->off[s->part[g]] + sizeof (head), l);
        all_off[g] = at;
        all_len[g] = l;
        at += l;
    }
    *all = out;
    return 0;
}

/* Who is in this rank's group (colour >= 0): s->size, rank, part, world
 * and node from every parent rank's words (w: W_WORDS each). */
static int find_group (struct setup *s, const int64_t *w, int colour)
{
    int n = s->parent->size, me = s->parent->rank, m = 0, nn = 0;
    int *wnode = NULL;

    for (int r = 0; r < n; r++)
        m += w[r * W_WORDS + W_COLOUR] == colour;
    s->part = calloc ((size_t)m, sizeof (int));
    s->world = calloc ((size_t)m, sizeof (int));
    s->node = calloc ((size_t)m, sizeof (int));
    wnode = calloc ((size_t)m, sizeof (int));
    if (!s->part || !s->world || !s->node || !wnode) {
        free (wnode);
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", s->fn);
    }
    /* Insertion by (key, parent rank): a split is rare, groups small. */
    for (int r = 0, k = 0; r < n; r++) {
        if (w[r * W_WORDS + W_COLOUR] != colour)
            continue;
        int i = k++;
        while (i > 0 && w[s->part[i - 1] * W_WORDS + W_KEY]
                            > w[r * W_WORDS + W_KEY]) {
            s->part[i] = s->part[i - 1];
            i--;
        }
        s->part[i] = r;
    }
    for (int i = 0; i < m; i++) {
        const int64_t *x = w + s->part[i] * W_WORDS;
        int j;

        s->world[i] = (int)x[W_WORLD];
        if (s->part[i] == me)
            s->rank = i;
        /* Nodes numbered in the order the group's ranks meet them. */
        for (j = 0; j < nn && wnode[j] != (int)x[W_NODE]; j++)
            ;
        if (j == nn)
            wnode[nn++] = (int)x[W_NODE];
        s->node[i] = j;
    }
    s->size = m;
    s->member = true;
    free (wnode);
    return 0;
}

/* A rank in no group, for a backend with split(): itself alone. */
static int find_self (struct setup *s)
{
    s->part = calloc (1, sizeof (int));
    s->world = calloc (1, sizeof (int));
    s->node = calloc (1, sizeof (int));
    if (!s->part || !s->world || !s->node)
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", s->fn);
    s->part[0] = s->parent->rank;
    s->world[0] = ddp_rank ();
    s->size = 1;
    s->rank = 0;
    return 0;
}

static void setup_free (struct setup *s)
{
    free (s->part);
    free (s->world);
    free (s->node);
    free (s->all);
    free (s->off);
    free (s->len);
}

/* A bootstrap of s's ranks (*bp), its rounds s's lock-step rounds. */
static int make_boot (struct setup *s, struct bootstrap **bp)
{
    char job[300], err[256] = "";
    struct bootstrap_group spec = {
        .rank = s->rank, .size = s->size, .rank_node = s->node,
        .job_id = job, .round = group_round, .arg = s };
    const struct bootstrap_info *pi =
        bootstrap_info (s->parent->boot ? s->parent->boot : core_boot ());
    int rc;

    snprintf (job, sizeof (job), "%s/%s", pi->job_id, s->tag);
    if ((rc = bootstrap_create_group (bp, &spec, core_config ()->timeout_s,
                                      "DDP_TIMEOUT", err, sizeof (err))) < 0)
        return ddpi_error (rc, "%s: %s", s->fn, err);
    return 0;
}

/* Make this rank's context of the group (c->ctx), or take part in the
 * backend's split without a group (c NULL). */
static int make_context (struct setup *s, struct ddp_comm *c, int colour,
                         int key)
{
    const struct ddp_backend *be = s->parent->be;
    struct bootstrap *self = NULL;
    void *none = NULL;
    int rc;

    if (!c) {
        if (!be->split)
            return 0;
        if ((rc = make_boot (s, &self)) == 0)
            rc = be->split (s->parent->ctx, DDP_UNDEFINED, key, self,
                            core_config (), &none);
        bootstrap_destroy (self);
        return rc;
    }
    if ((rc = make_boot (s, &c->boot)) < 0)
        return rc;
    if (s->user)    /* create_group: the parent's other ranks are elsewhere */
        rc = be->join ? be->join (s->parent->ctx, c->boot, core_config (),
                                  &c->ctx)
                      : be->create (c->boot, core_config (), &c->ctx);
    else
        rc = be->split ? be->split (s->parent->ctx, colour, key, c->boot,
                                core_config (), &c->ctx)
                   : be->create (c->boot, core_config (), &c->ctx);
    bootstrap_group_close (c->boot);
    return rc;
}

/* After this rank's set-up (rc): rounds until every parent rank has
 * ended; then the verdict.  Returns 0 when every rank succeeded, else
 * this rank's code or DDP_EREMOTE naming the first that failed. */
static int verdict (struct setup *s, int rc)
{
    struct msg_head head = { .tag = MSG_ENDED, .rc = rc };
    int n = s->parts, lrc, first = -1;
    bool all_ended;

    if (rc < 0)
        snprintf (head.why, sizeof (head.why), "%s", ddpi_last_error ());
    do {
        if ((lrc = lockstep (s, &head, NULL, 0)) < 0)
            return lrc;
        all_ended = true;
        for (int r = 0; r < n; r++)
            all_ended = all_ended && head_of (s, r)->tag == MSG_ENDED;
    } while (!all_ended);
    for (int r = 0; r < n && first < 0; r++)
        if (head_of (s, r)->rc < 0)
            first = r;
    if (rc < 0 || first < 0)
        return rc;
    return ddpi_error (DDP_EREMOTE, "%s: setting up a group failed on "
                       "world rank %d: %.200s", s->fn,
                       part_world (s, first),
                       head_of (s, first)->why);
}

/* A new group of s, not yet set up; NULL (logged) when out of memory. */
static struct ddp_comm *new_group (struct setup *s)
{
    struct ddp_comm *c = calloc (1, sizeof (*c));

    if (!c || !(c->world_ranks = malloc ((size_t)s->size * sizeof (int)))) {
        free (c);
        ddpi_error (DDP_ENOMEM, "%s: out of memory", s->fn);
        return NULL;
    }
    c->magic = CORE_COMM_MAGIC;
    c->be = s->parent->be;
    c->rank = s->rank;
    c->size = s->size;
    memcpy (c->world_ranks, s->world, (size_t)s->size * sizeof (int));
    c->id = next_id++;
    return c;
}

static void group_free (struct ddp_comm *c)
{
    if (!c)
        return;
    c->magic = 0;
    if (c->ctx)
        c->be->destroy (c->ctx);
    bootstrap_destroy (c->boot);
    free (c->world_ranks);
    free (c);
}

/* Set the group up (s: who), on every rank of the parent. */
static int setup_group (struct setup *s, int colour, int key,
                        struct ddp_comm **out)
{
    struct ddp_comm *c = NULL;
    int rc = 0;

    if (!(s->off = calloc ((size_t)s->parts, sizeof (size_t)))
        || !(s->len = calloc ((size_t)s->parts, sizeof (size_t))))
        rc = ddpi_error (DDP_ENOMEM, "%s: out of memory", s->fn);
    else if (s->member && !(c = new_group (s)))
        rc = DDP_ENOMEM;
    if (rc == 0)
        rc = make_context (s, c, colour, key);
    rc = verdict (s, rc);
    if (rc == 0 && c && (rc = core_done (c, c->be->barrier (c->ctx))) < 0)
        ddpi_error (rc, "%s: the new group's first barrier: %s", s->fn,
                    ddpi_last_error ());
    if (rc < 0) {
        group_free (c);
        return rc;
    }
    if (c)
        c->calls = 1;   /* that barrier */
    *out = c;
    return 0;
}

int ddp_comm_split (ddp_comm_t *parent, int colour, int key,
                    ddp_comm_t **newcomm)
{
    struct ddp_comm *p = core_comm (parent), *c = NULL;
    struct setup s = { .fn = FN, .parent = p };
    bool bad = !newcomm || (colour < 0 && colour != DDP_UNDEFINED);
    int64_t mine[W_WORDS], *all = NULL;
    int rc;

    if (newcomm)
        *newcomm = NULL;
    if ((rc = core_check (p ? p : core_world (), FN)) < 0)
        return rc;
    request_drain (p);
    if ((rc = core_vote (p, FN, CHECK_SPLIT)) < 0)
        return rc;
    s.parts = p->size;
    snprintf (s.tag, sizeof (s.tag), "%u:%d", p->splits,
              bad ? DDP_UNDEFINED : colour);
    mine[W_COLOUR] = bad ? DDP_UNDEFINED : colour;
    mine[W_KEY] = key;
    mine[W_WORLD] = ddp_rank ();
    mine[W_NODE] = ddp_node_rank ();
    if (!(all = calloc ((size_t)p->size, sizeof (mine))))
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", FN);
    /* Every rank takes part, the bad ones too: the others must not wait. */
    if ((rc = parent_allgather (p, mine, all, W_WORDS, DDP_INT64)) == 0)
        rc = mine[W_COLOUR] >= 0 ? find_group (&s, all, colour)
             : p->be->split ? find_self (&s) : 0;
    if (rc == 0)
        rc = setup_group (&s, (int)mine[W_COLOUR], key, &c);
    p->splits++;
    setup_free (&s);
    free (all);
    if (rc == 0 && bad)
        rc = ddpi_error (DDP_EINVAL, "%s: %s", FN,
                         newcomm ? "colour must be >= 0 or DDP_UNDEFINED"
                                 : "newcomm is NULL");
    if (rc < 0)
        return rc;
    if (c) {
        core_add_group (c);
        ddpi_debug ("%s: group %u: rank %d of %d", FN, c->id, c->rank,
                    c->size);
    }
    *newcomm = c;
    return 0;
}

/* comm.h. */
void split_release (struct ddp_comm *c, bool barrier)
{
    core_remove_group (c);
    request_stop (c);
    if (barrier && !c->broken
        && core_vote (c, "ddp_comm_free", CHECK_FREE) == 0)
        (void)c->be->barrier (c->ctx);
    group_free (c);
}

int ddp_comm_free (ddp_comm_t **comm)
{
    struct ddp_comm *c;
    int rc;

    if (!comm || !*comm)
        return 0;
    c = *comm;
    if (c == core_world ())
        return ddpi_error (DDP_EINVAL, "ddp_comm_free: the world cannot be "
                           "freed (ddp_finalize does that)");
    if ((rc = core_check (c, "ddp_comm_free")) < 0 && rc != c->broken)
        return rc;
    split_release (c, true);
    *comm = NULL;
    return 0;
}

/* ---- ddp_comm_create_group: the members only ------------------------- */

#define CFN "ddp_comm_create_group"

/* What a member says of itself in create_group's first round. */
#define WHO_MAGIC 0x6464702d77686f31ULL /* "ddp-who1" */
struct who {
    uint64_t magic;     /* WHO_MAGIC */
    uint64_t list;      /* a hash of the members' world ranks, in order */
    uint64_t nonce;     /* group rank 0's names the group */
    int32_t n, world, node, bad;
};

/* The hash of world ranks w[0..n-1] in their order (FNV-1a steps). */
static uint64_t list_hash (const int *w, int n)
{
    uint64_t h = 1469598103934665603ULL;

    for (int i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) {
            h ^= (uint64_t)(((uint32_t)w[i] >> (8 * b)) & 0xff);
            h *= 1099511628211ULL;
        }
    return h;
}

/* The arguments that leave this rank out of the set-up (it cannot take
 * part: no all-gather, no place among the members): 0 or DDP_EINVAL. */
static int check_members (struct ddp_comm *p, const int *ranks, int n,
                          ddp_allgather_fn fn, int *me)
{
    *me = -1;
    if (!fn)
        return ddpi_error (DDP_EINVAL, "%s: allgather is NULL", CFN);
    if (!ranks || n < 1 || n > p->size)
        return ddpi_error (DDP_EINVAL, "%s: ranks must list 1 to %d ranks "
                           "of the parent (got %s, n = %d)", CFN, p->size,
                           ranks ? "a list" : "NULL", n);
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= p->size)
            return ddpi_error (DDP_EINVAL, "%s: ranks[%d] = %d is not a rank "
                               "of the parent (0 .. %d)", CFN, i, ranks[i],
                               p->size - 1);
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return ddpi_error (DDP_EINVAL, "%s: rank %d is listed twice "
                                   "(ranks[%d] and ranks[%d])", CFN,
                                   ranks[i], j, i);
        if (ranks[i] == p->rank)
            *me = i;
    }
    if (*me < 0)
        return ddpi_error (DDP_EINVAL, "%s: this rank (%d of the parent) is "
                           "not in ranks: only the members call it", CFN,
                           p->rank);
    return 0;
}

/* The members' places (s->part: group rank g is participant g), world
 * ranks and a first guess of the nodes (set from "who"). */
static int members_init (struct setup *s, const int *ranks, int n, int me)
{
    s->parts = s->size = n;
    s->rank = me;
    s->member = true;
    s->part = calloc ((size_t)n, sizeof (int));
    s->world = calloc ((size_t)n, sizeof (int));
    s->node = calloc ((size_t)n, sizeof (int));
    if (!s->part || !s->world || !s->node)
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", CFN);
    for (int g = 0; g < n; g++) {
        s->part[g] = g;
        s->world[g] = ddp_comm_world_rank (s->parent, ranks[g]);
    }
    return 0;
}

/* Group rank g's record against this rank's: 0, or DDP_EMISMATCH. */
static int who_check (const struct setup *s, const struct who *w,
                      const struct who *mine, int g)
{
    if (w->magic != WHO_MAGIC)
        return ddpi_error (DDP_EMISMATCH, "%s: place %d of the caller's "
                           "all-gather holds no member's record (it must "
                           "return every member's bytes in group rank "
                           "order)", CFN, g);
    if (w->n != mine->n || w->list != mine->list)
        return ddpi_error (DDP_EMISMATCH, "%s: group rank %d (world rank %d) "
                           "listed other ranks (%d of them) than this rank "
                           "(%d): every member must pass the same ranks in "
                           "the same order", CFN, g, (int)w->world,
                           (int)w->n, (int)mine->n);
    if (w->world != s->world[g])
        return ddpi_error (DDP_EMISMATCH, "%s: place %d of the caller's "
                           "all-gather holds world rank %d's record, not "
                           "group rank %d's (world rank %d): it must return "
                           "them in group rank order", CFN, g, (int)w->world,
                           g, s->world[g]);
    if (w->bad)
        return ddpi_error (DDP_EINVAL, "%s: group rank %d (world rank %d) "
                           "passed newcomm NULL", CFN, g, (int)w->world);
    return 0;
}

/* The first round: every member's record; checks them, numbers the
 * group's nodes and names the group. */
static int members_who (struct setup *s, bool bad)
{
    struct who mine = { .magic = WHO_MAGIC, .n = s->size,
                        .world = s->world[s->rank],
                        .node = ddp_node_rank (), .bad = bad }, *all;
    int *seen, nn = 0, rc = 0;

    mine.list = list_hash (s->world, s->size);
    if (getrandom (&mine.nonce, sizeof (mine.nonce), 0)
        != (ssize_t)sizeof (mine.nonce))
        mine.nonce = (uint64_t)getpid () << 32 ^ (uint64_t)time (NULL);
    all = calloc ((size_t)s->size, sizeof (*all));
    seen = calloc ((size_t)s->size, sizeof (*seen));
    if (!all || !seen) {
        free (all);
        free (seen);
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", CFN);
    }
    rc = gather (s, &mine, all, sizeof (mine));
    for (int g = 0; rc == 0 && g < s->size; g++) {
        int j;

        if ((rc = who_check (s, &all[g], &mine, g)) < 0)
            break;
        for (j = 0; j < nn && seen[j] != all[g].node; j++)
            ;
        if (j == nn)
            seen[nn++] = all[g].node;
        s->node[g] = j;
    }
    if (rc == 0)
        snprintf (s->tag, sizeof (s->tag), "g%016llx",
                  (unsigned long long)all[0].nonce);
    free (all);
    free (seen);
    return rc;
}

int ddp_comm_create_group (ddp_comm_t *parent, const int *ranks, int n,
                           ddp_allgather_fn allgather, void *arg,
                           ddp_comm_t **newcomm)
{
    struct ddp_comm *p = core_comm (parent), *c = NULL;
    struct setup s = { .fn = CFN, .parent = p, .user = allgather,
                       .user_arg = arg };
    int me, rc;

    if (newcomm)
        *newcomm = NULL;
    if ((rc = core_check (p ? p : core_world (), CFN)) < 0
        || (rc = check_members (p, ranks, n, allgather, &me)) < 0)
        return rc;
    /* From here this rank takes part, newcomm NULL too: the others must
     * not wait for it. */
    if ((rc = members_init (&s, ranks, n, me)) == 0
        && (rc = members_who (&s, !newcomm)) == 0)
        rc = setup_group (&s, 0, 0, &c);
    setup_free (&s);
    if (rc != 0)
        return rc;
    if (!c || !newcomm) {
        /* Not reached: a member always gets a group, and members_who
         * fails every member when one passed newcomm NULL. */
        if (c)
            split_release (c, false);
        return ddpi_error (DDP_EINVAL, "%s: newcomm is NULL", CFN);
    }
    core_add_group (c);
    ddpi_debug ("%s: group %u: rank %d of %d", CFN, c->id, c->rank, c->size);
    *newcomm = c;
    return 0;
}
