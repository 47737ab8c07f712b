/* layout.c - the node layout from the ranks' node ids (libjob/bootstrap/
 * layout.h): numbering, the check against a node's own list, the wire
 * form of an id. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "layout.h"

/* rank_node of ids (size of them) equals want. */
static bool numbered (const uint32_t *ids, int size, int nnodes,
                      const int *want)
{
    int got[16];

    return bootstrap_number_nodes (ids, size, got) == nnodes
           && memcmp (got, want, (size_t)size * sizeof (int)) == 0;
}

static void numbering (void)
{
    uint32_t dense[] = { 0, 0, 1, 1 }, orte[] = { 1, 1, 2, 2 };
    uint32_t cyclic[] = { 2, 1, 2, 1 }, uneven[] = { 1, 1, 2 };
    uint32_t far[] = { 4000000000u, 7, 7, 4000000000u, 0 };
    uint32_t one[] = { 5 };
    int w_dense[] = { 0, 0, 1, 1 }, w_cyclic[] = { 1, 0, 1, 0 };
    int w_uneven[] = { 0, 0, 1 }, w_far[] = { 2, 1, 1, 2, 0 };
    int w_one[] = { 0 }, out[4];

    ok (numbered (dense, 4, 2, w_dense), "dense ids 0,0,1,1 keep their "
        "numbering (srun)");
    ok (numbered (orte, 4, 2, w_dense), "ids 1,1,2,2 (mpirun's node is 0) "
        "become nodes 0 and 1");
    ok (numbered (cyclic, 4, 2, w_cyclic), "ranks placed cyclically: "
        "nodes in the order of their ids, not of their first rank");
    ok (numbered (uneven, 3, 2, w_uneven), "2 ranks and 1");
    ok (numbered (far, 5, 3, w_far), "ids far apart, beyond INT_MAX");
    ok (numbered (one, 1, 1, w_one), "one rank: one node");
    is_int (bootstrap_number_nodes (one, 0, out), -1, "no ranks: -1");
}

static void node_check (void)
{
    int rank_node[] = { 1, 0, 1, 0, 1 };
    int odd[] = { 1, 3 }, even[] = { 0, 2, 4 }, part[] = { 0, 2 };
    int more[] = { 0, 1, 2, 4 }, other[] = { 1, 2 };

    ok (bootstrap_node_is (rank_node, 5, 0, odd, 2), "node 0 is 1,3");
    ok (bootstrap_node_is (rank_node, 5, 1, even, 3), "node 1 is 0,2,4");
    ok (!bootstrap_node_is (rank_node, 5, 1, part, 2), "a list that lacks "
        "a rank of the node does not match");
    ok (!bootstrap_node_is (rank_node, 5, 1, more, 4), "a list with a rank "
        "of another node does not match");
    ok (!bootstrap_node_is (rank_node, 5, 0, other, 2), "1,2 is not node 0");
    ok (bootstrap_node_is (rank_node, 5, 2, odd, 0),
        "a node of no ranks matches the empty list");
}

static void wire (void)
{
    unsigned char b[BOOTSTRAP_NODE_ID_BYTES];
    uint32_t ids[] = { 0, 1, 258, 0x7fffffffu, 0xfffffffeu };

    bootstrap_node_id_put (b, 0x04030201u);
    ok (b[0] == 1 && b[1] == 2 && b[2] == 3 && b[3] == 4,
        "a node id is little-endian on the wire");
    for (size_t i = 0; i < sizeof (ids) / sizeof (ids[0]); i++) {
        bootstrap_node_id_put (b, ids[i]);
        ok (bootstrap_node_id_take (b) == ids[i], "node id %u: put, taken "
            "back", (unsigned)ids[i]);
    }
}

int main (void)
{
    plan (NO_PLAN);
    numbering ();
    node_check ();
    wire ();
    done_testing ();
    return 0;
}
