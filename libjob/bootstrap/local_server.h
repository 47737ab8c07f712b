/* local_server.h - the server side of the local bootstrap method: it
 * answers the ranks of one job started on this machine (local_proto.h has
 * the protocol, localjob.h starts the ranks and runs this server).  Not
 * part of libddp: it is built into libddplocal.la, for tests and the
 * ddp-run command (contrib/ddp-run/).
 *
 * A round completes when every rank synced it: each rank then gets the
 * round's blobs it may see (every GLOBAL one, the LOCAL ones of its
 * simulated node).  A round fails for every rank in it, with a message
 * naming the ranks at fault, when a rank ended (or closed its connection)
 * before it arrived, when the earliest arrival's bound passed, or when a
 * rank syncs another round.  A rank that comes to a failed round gets the
 * same failure at once. */
#ifndef DDP_LOCAL_SERVER_H
#define DDP_LOCAL_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct ddpi_lserver;

/* A server for size ranks (>= 1) on nnodes simulated nodes; node_of[r] is
 * rank r's node (0 .. nnodes-1, every node holding a rank); fds[r] is the
 * server's end of rank r's socket, which the server takes over (it closes
 * them; they are made non-blocking).  job is the job's id for the ranks
 * (e.g. the launcher's pid); name prefixes the lines the server logs on
 * stderr (an abort, a failed round).  Returns the server, or NULL (errno
 * EINVAL for a bad layout, ENOMEM). */
struct ddpi_lserver *ddpi_lserver_create (int size, int nnodes,
                                          const int *node_of, const int *fds,
                                          long job, const char *name);

/* Serve for at most wait_s seconds (0: only what is ready): read what the
 * ranks sent, answer them, fail the rounds that cannot complete.  Returns
 * how many ranks still have their connection open. */
int ddpi_lserver_serve (struct ddpi_lserver *s, double wait_s);

/* Read what rank sent before its process ended, up to the end of its
 * connection or the first abort (of any rank), without waiting: a rank
 * that aborts and exits at once has its abort seen before its exit, and
 * the others are not told "rank R exited" first.  At most 64 messages. */
void ddpi_lserver_drain (struct ddpi_lserver *s, int rank);

/* Rank's process ended with wait status st (waitpid()): it will never
 * arrive at a round, and messages say how it ended. */
void ddpi_lserver_ended (struct ddpi_lserver *s, int rank, int st);

/* Did rank say that its collectives failed because of another rank
 * (bootstrap_victim)?  Its words (valid until ddpi_lserver_destroy), or
 * NULL. */
const char *ddpi_lserver_victim (struct ddpi_lserver *s, int rank);

/* Why rank said it ends badly (bootstrap_reason: "raised ValueError:
 * x"), its first words (valid until ddpi_lserver_destroy), or NULL. */
const char *ddpi_lserver_reason (struct ddpi_lserver *s, int rank);

/* Has a rank asked to end the job (bootstrap_abort)?  Returns true and
 * sets *rank and *code (its exit status) the first time and every time
 * after; false otherwise. */
bool ddpi_lserver_aborted (struct ddpi_lserver *s, int *rank, int *code);

/* Describe wait status st into buf (len bytes): "exited with status 1",
 * "killed by signal 9".  Returns buf. */
char *ddpi_lserver_status_str (int st, char *buf, size_t len);

/* Close every connection and free the server (NULL is a no-op). */
void ddpi_lserver_destroy (struct ddpi_lserver *s);

#endif /* DDP_LOCAL_SERVER_H */
