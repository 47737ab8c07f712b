/* layout.h - the node layout from each rank's node as the launcher names
 * it, when the launcher's own numbering cannot be used (pure functions;
 * bootstrap.c uses them after the first bootstrap_exchange of a method
 * that asked for it, method.h).  Internal to libjob/bootstrap.
 *
 * Why: Open MPI's mpirun (ORTE) gives each rank a PMIX_NODEID that is its
 * daemon's number, counting mpirun's own node as 0 whether or not it runs
 * ranks: under salloc the job's nodes are then 1 and 2 of PMIX_NUM_NODES
 * 2, and the node data a rank's PMIx server holds for other node ids
 * differs from node to node.  Each rank's own id is still the same on
 * every rank of its node and different on other nodes, so the ids the
 * ranks exchange, numbered densely, give the layout every rank agrees on.
 */
#ifndef DDP_BOOTSTRAP_LAYOUT_H
#define DDP_BOOTSTRAP_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

/* Bytes a node id takes at the head of a rank's blob in the first
 * exchange (little-endian). */
#define BOOTSTRAP_NODE_ID_BYTES 4

void bootstrap_node_id_put (unsigned char *p, uint32_t id);
uint32_t bootstrap_node_id_take (const unsigned char *p);

/* Number the nodes: ids[r] is rank r's node as the launcher names it (any
 * values; equal ids mean the same node).  rank_node[r] (room for size)
 * gets the index of rank r's node among the distinct ids in ascending
 * order, 0 .. N-1: a launcher whose ids are already 0 .. N-1 keeps its
 * numbering.  Returns N (>= 1), or -1 when size < 1 or out of memory
 * (rank_node then unspecified).  O(size log size). */
int bootstrap_number_nodes (const uint32_t *ids, int size, int *rank_node);

/* Are the ranks that rank_node (size entries) places on node exactly the
 * n ranks of local (ascending)? */
bool bootstrap_node_is (const int *rank_node, int size, int node,
                        const int *local, int n);

#endif /* DDP_BOOTSTRAP_LAYOUT_H */
