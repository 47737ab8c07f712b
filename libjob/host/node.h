/* node.h - a collective's steps within one node (node.c), over the node
 * segment (transport.h: the slots, the banks, the ring, the flags; host.h
 * has the step protocol); a wait's event becomes the fault's DDP_E* code
 * through fault.c.  Internal to libddp. */
#ifndef DDP_NODE_H
#define DDP_NODE_H

#include <stdint.h>

#include "host_core.h"

/* ---- the segment's waits, as the fault's codes ---- */

/* Wait until local rank lr's flag which reaches step s (node_wait_flag),
 * the first n local ranks' do (node_wait_first), or every local rank's
 * (node_wait_all).  0, or a DDP_E* code after the fault was decided. */
int node_wait_flag (struct host *h, int lr, int which, uint64_t s);
int node_wait_first (struct host *h, int n, int which, uint64_t s);
int node_wait_all (struct host *h, int which, uint64_t s);

/* ---- steps ---- */

/* Start the next step (its number in *sp): wait until the bank it uses
 * is free again (every local rank finished the step before).  0, the
 * backend's standing error (h->broken), or a wait's code. */
int node_step_begin (struct host *h, uint64_t *sp);

/* node_step_begin(), then show the node this rank entered the step with
 * nothing of its own in it (flag 0), with the call's tag
 * (node_tag_post). */
int node_step_enter (struct host *h, uint64_t *sp);

/* Post the tag of this rank's step s of the call under way (its step and
 * the call's signature, h->desc) in its polled flag line, before the
 * step's flag: its readers check it (node_tag_check), so that ranks that
 * made different calls (kind, count, dtype, op, root) fail the call with
 * DDP_EMISMATCH instead of reading stale, short or misread data.  For
 * steps whose data carries no tag of its own (node.c), barriers'
 * included. */
void node_tag_post (struct host *h, uint64_t s);

/* Local rank lr's flag for step s was seen: did it post the tag of step
 * s of this call (node_tag_post)?  0, or DDP_EMISMATCH after the fault
 * was recorded, naming lr's rank and this one and the call each made.
 * node_tags_check: of local ranks 0..n-1 other than this one. */
int node_tag_check (struct host *h, int lr, uint64_t s);
int node_tags_check (struct host *h, int n, uint64_t s);

/* Reduce every local rank's slot of bank, elements [lo, lo+n) of dtype,
 * into dst in the accumulation type of dtype/op (not finished). */
void node_reduce (struct host *h, int bank, void *dst, size_t lo,
                  size_t n, ddp_dtype_t dtype, ddp_op_t op);

/* ---- a whole call on a job of one node (N == 1, more than one rank) ---- */

/* count elements of send reduced over the node into recv (NULL: not
 * wanted on this rank, a reduce off its root); all: an all-reduce (every
 * rank has a recv, the same on every rank), which from 256 KiB goes by
 * single copy where the node allows it. */
int node_reduce_run (struct host *h, const char *send, char *recv,
                     size_t count, ddp_dtype_t dtype, ddp_op_t op, bool all);

/* Block r (count elements) of the reduction over the node of every
 * rank's send (size x count elements) into rank r's recv, which may be
 * its block of send (in place); the same result to the bit as
 * node_reduce_run (all) gives for that block.  From 256 KiB of send by
 * single copy where the node allows it, each rank reading its block of
 * the others' sends; else through the slots, a piece of every block a
 * step, each rank reducing its own. */
int node_reduce_scatter_run (struct host *h, const char *send, char *recv,
                             size_t count, ddp_dtype_t dtype, ddp_op_t op);

/* bytes of rank root's buf into every other rank's. */
int node_bcast_run (struct host *h, char *buf, size_t bytes, int root);

/* bytes of every rank's send into recv at rank x bytes (recv NULL: not
 * wanted here, a gather off its root); root < 0: an allgather.  es: the
 * element size (a step never splits an element). */
int node_gather_run (struct host *h, const char *send, char *recv,
                     size_t bytes, size_t es, int root);

#endif /* DDP_NODE_H */
