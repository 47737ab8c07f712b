/* pmix_job.c - what the PMIx server says of the job (pmix_method.h): its
 * size, this rank's node, and which ranks that node holds.
 *
 * Other nodes' data is not read: under Open MPI's mpirun it is numbered
 * differently on each node, so the node layout comes from the node ids
 * the ranks exchange first (read_sizes, layout.h).
 *
 * PMIx servers store this data differently, and a client finds a key only
 * where its store put it.  What tests/progs/pmix_ref shows (t0125):
 *   - PMIX_JOB_SIZE and PMIX_NUM_NODES: for the wildcard rank, everywhere.
 *   - PMIX_NODEID: for the rank itself, but with PMIx 4.2's ds12 store
 *     only as this node's data (PMIX_NODE_INFO).
 *   - this node's PMIX_LOCAL_SIZE and PMIX_LOCAL_PEERS: for the wildcard
 *     rank with PMIx 4.2 (every store) and PMIx 5's default store
 *     (shmem2); PMIx 5 with the hash or ds12/ds21 store (Slurm 24.11)
 *     holds them only as node data: asked for with PMIX_NODE_INFO and
 *     PMIX_NODEID of the node.
 * So each is asked for the way that is cheapest first, then the others.
 * Every get is PMIX_IMMEDIATE (job data the local server holds: a request
 * to another node would not help, and Slurm 22.05 answers some of them
 * never) and bounded by the bootstrap's timeout. */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pmix.h>

#include "ddp_internal.h"
#include "pmix_method.h"

/* The node qualifier of get_uint: this node's data (no PMIX_NODEID). */
#define THIS_NODE (-2)

/* Read an unsigned integer of any PMIx integer type, of proc (the
 * wildcard rank when wild) under key; node >= 0 qualifies the get as
 * node's data, THIS_NODE as this node's.  Returns 0 or -1. */
static int get_uint (const struct bootstrap *b, bool wild, const char *key,
                     int node, unsigned long *out)
{
    pmix_value_t *v = NULL;
    pmix_info_t q[2];
    pmix_proc_t p;
    uint32_t id = (uint32_t)node;
    bool yes = true;
    int rc = 0;

    PMIX_LOAD_PROCID (&p, ddpi_pmix_me.nspace,
                      wild ? PMIX_RANK_WILDCARD : ddpi_pmix_me.rank);
    PMIX_INFO_CONSTRUCT (&q[0]);
    PMIX_INFO_CONSTRUCT (&q[1]);
    if (node >= 0 || node == THIS_NODE)
        PMIX_INFO_LOAD (&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    if (node >= 0)
        PMIX_INFO_LOAD (&q[1], PMIX_NODEID, &id, PMIX_UINT32);
    if (ddpi_pmix_get_by (&p, key, q, node >= 0 ? 2 : node == THIS_NODE,
                          true, ddpi_now () + b->timeout_s, &v)
        != PMIX_SUCCESS)
        rc = -1;
    else
        switch (v->type) {
        case PMIX_UINT8: *out = v->data.uint8; break;
        case PMIX_UINT16: *out = v->data.uint16; break;
        case PMIX_UINT32: *out = v->data.uint32; break;
        case PMIX_UINT64: *out = v->data.uint64; break;
        case PMIX_SIZE: *out = v->data.size; break;
        case PMIX_INT: rc = v->data.integer < 0 ? -1 : 0;
                       *out = (unsigned long)v->data.integer; break;
        case PMIX_INT32: rc = v->data.int32 < 0 ? -1 : 0;
                         *out = (unsigned long)v->data.int32; break;
        default: rc = -1; break;
        }
    if (v)
        PMIX_VALUE_RELEASE (v);
    PMIX_INFO_DESTRUCT (&q[0]);
    PMIX_INFO_DESTRUCT (&q[1]);
    return rc;
}

/* Parse a PMIX_LOCAL_PEERS list ("0,1,5") of ranks below size into out
 * (room for size); sorted, no duplicates.  Returns the count, or -1. */
static int parse_peers (const char *s, int size, int *out)
{
    int i = 0;
    long v;
    char tok[32];

    while (*s) {
        size_t len = strcspn (s, ",");
        if (len == 0 || len >= sizeof (tok) || i >= size)
            return -1;
        memcpy (tok, s, len);
        tok[len] = '\0';
        if (ddpi_parse_long (tok, 0, size - 1, &v) < 0)
            return -1;
        out[i++] = (int)v;
        s += len;
        if (*s == ',')
            s++;
    }
    ddpi_sort_ranks (out, i);
    for (int j = 1; j < i; j++)
        if (out[j] == out[j - 1])
            return -1;
    return i;
}

/* PMIX_LOCAL_PEERS of the wildcard rank, plainly (node < 0) or as node's
 * data, parsed into out (room for b->info.size).  Returns the count, or
 * -1 when the server has none that way. */
static int get_peers (const struct bootstrap *b, int node, int *out)
{
    pmix_value_t *v = NULL;
    pmix_info_t q[2];
    pmix_proc_t wild;
    uint32_t id = (uint32_t)node;
    bool yes = true;
    int n = -1;

    PMIX_LOAD_PROCID (&wild, ddpi_pmix_me.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_CONSTRUCT (&q[0]);
    PMIX_INFO_CONSTRUCT (&q[1]);
    if (node >= 0) {
        PMIX_INFO_LOAD (&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
        PMIX_INFO_LOAD (&q[1], PMIX_NODEID, &id, PMIX_UINT32);
    }
    if (ddpi_pmix_get_by (&wild, PMIX_LOCAL_PEERS, q, node >= 0 ? 2 : 0,
                          true, ddpi_now () + b->timeout_s, &v)
            == PMIX_SUCCESS
        && v->type == PMIX_STRING && v->data.string)
        n = parse_peers (v->data.string, b->info.size, out);
    if (v)
        PMIX_VALUE_RELEASE (v);
    PMIX_INFO_DESTRUCT (&q[0]);
    PMIX_INFO_DESTRUCT (&q[1]);
    return n;
}

/* This node's ranks (PMIX_LOCAL_PEERS of the wildcard rank, plainly or
 * as the node data of our own PMIX_NODEID) into ranks (room for
 * b->info.size).  Returns their count, or -1. */
static int own_peers (const struct bootstrap *b, int *ranks)
{
    int n = get_peers (b, -1, ranks);

    return n > 0 ? n : get_peers (b, (int)b->node_id, ranks);
}

/* Size, this rank's node id, and (where it is one) the launcher's node
 * numbering.  Open MPI's mpirun numbers its own node 0 whether or not it
 * runs ranks, so PMIX_NODEID need not be below PMIX_NUM_NODES, and other
 * nodes' data is numbered differently on each node (layout.h): the node
 * layout comes from the ids the ranks exchange first (b->ids_pending).
 * Until then node_rank and num_nodes are the launcher's where they make
 * sense on this rank (the roll call after a failed first fence uses them),
 * else -1 and 0. */
static int read_sizes (struct bootstrap *b, char *err, size_t errlen)
{
    unsigned long size, nodeid, nnodes;

    if (get_uint (b, true, PMIX_JOB_SIZE, -1, &size) < 0 || size < 1
        || size > INT_MAX || ddpi_pmix_me.rank >= size)
        return bootstrap_err (err, errlen, DDP_EPMIX,
                              "PMIx: no valid PMIX_JOB_SIZE");
    if (get_uint (b, false, PMIX_NODEID, -1, &nodeid) < 0
        && get_uint (b, true, PMIX_NODEID, THIS_NODE, &nodeid) < 0)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: no PMIX_NODEID "
                              "for rank %u", ddpi_pmix_me.rank);
    if (nodeid > INT_MAX)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: PMIX_NODEID %lu "
                              "of rank %u is out of range", nodeid,
                              ddpi_pmix_me.rank);
    b->info.rank = (int)ddpi_pmix_me.rank;
    b->info.size = (int)size;
    b->node_id = (uint32_t)nodeid;
    b->ids_pending = true;
    if (get_uint (b, true, PMIX_NUM_NODES, -1, &nnodes) == 0 && nnodes >= 1
        && nodeid < nnodes && nnodes <= size) {
        b->info.node_rank = (int)nodeid;
        b->info.num_nodes = (int)nnodes;
    }
    else {
        b->info.node_rank = -1;
        b->info.num_nodes = 0;
    }
    return 0;
}

/* This node's ranks, their count, and our place among them.  A
 * PMIX_LOCAL_SIZE the server gives must agree with the peers it lists. */
static int read_local (struct bootstrap *b, char *err, size_t errlen)
{
    unsigned long lsize;
    int n, *shrunk;

    if (!(b->info.local_ranks = calloc ((size_t)b->info.size, sizeof (int))))
        return bootstrap_err (err, errlen, DDP_ENOMEM, "out of memory");
    if ((n = own_peers (b, b->info.local_ranks)) < 1)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: no valid "
                              "PMIX_LOCAL_PEERS for node id %u, neither as "
                              "job nor as node data", (unsigned)b->node_id);
    if ((get_uint (b, true, PMIX_LOCAL_SIZE, -1, &lsize) == 0
         || get_uint (b, true, PMIX_LOCAL_SIZE, (int)b->node_id,
                      &lsize) == 0)
        && lsize != (unsigned long)n)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: PMIX_LOCAL_SIZE "
                              "is %lu but PMIX_LOCAL_PEERS lists %d ranks",
                              lsize, n);
    /* Room for the job was needed to parse; keep this node's. */
    if ((shrunk = realloc (b->info.local_ranks, (size_t)n * sizeof (int))))
        b->info.local_ranks = shrunk;
    b->info.local_size = n;
    b->info.local_rank = -1;
    for (int i = 0; i < n; i++)
        if (b->info.local_ranks[i] == b->info.rank)
            b->info.local_rank = i;
    if (b->info.local_rank < 0)
        return bootstrap_err (err, errlen, DDP_EPMIX, "PMIx: rank %d is not "
                              "among its node's local peers", b->info.rank);
    return 0;
}

int ddpi_pmix_read_job (struct bootstrap *b, char *err, size_t errlen)
{
    int rc;

    if ((rc = read_sizes (b, err, errlen)) < 0
        || (rc = read_local (b, err, errlen)) < 0)
        return rc;
    return 0;
}
