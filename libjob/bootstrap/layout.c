/* layout.c - the node layout from the ranks' node ids (layout.h). */
#include "config.h"

#include <stdlib.h>

#include "layout.h"

void bootstrap_node_id_put (unsigned char *p, uint32_t id)
{
    for (int i = 0; i < BOOTSTRAP_NODE_ID_BYTES; i++)
        p[i] = (unsigned char)(id >> (8 * i));
}

uint32_t bootstrap_node_id_take (const unsigned char *p)
{
    uint32_t id = 0;

    for (int i = 0; i < BOOTSTRAP_NODE_ID_BYTES; i++)
        id |= (uint32_t)p[i] << (8 * i);
    return id;
}

static int cmp_u32 (const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

int bootstrap_number_nodes (const uint32_t *ids, int size, int *rank_node)
{
    uint32_t *sorted, *at;
    int n = 0;

    if (size < 1 || !(sorted = malloc ((size_t)size * sizeof (*sorted))))
        return -1;
    for (int r = 0; r < size; r++)
        sorted[r] = ids[r];
    qsort (sorted, (size_t)size, sizeof (*sorted), cmp_u32);
    for (int r = 0; r < size; r++)
        if (n == 0 || sorted[r] != sorted[n - 1])
            sorted[n++] = sorted[r];
    for (int r = 0; r < size; r++) {
        at = bsearch (&ids[r], sorted, (size_t)n, sizeof (*sorted), cmp_u32);
        rank_node[r] = (int)(at - sorted);
    }
    free (sorted);
    return n;
}

bool bootstrap_node_is (const int *rank_node, int size, int node,
                        const int *local, int n)
{
    int i = 0;

    for (int r = 0; r < size; r++)
        if (rank_node[r] == node && (i >= n || local[i++] != r))
            return false;
    return i == n;
}
