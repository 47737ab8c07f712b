/* sp_relay.h - how the nodes of a multi-node step learn the MASTER_PORT
 * its first node chose.
 *
 * Only the first node can tell which ports are free there (its claims and
 * listeners), and the other nodes need the same number before their tasks
 * start.  srun, which every slurmstepd of the step already reaches
 * (SLURM_SRUN_COMM_HOST), relays it: before the launch it listens on a
 * TCP port of its own and hands every node "PORT:TOKEN" in the step's
 * environment (SP_RELAY_ENV), TOKEN 128 random bits that only the step's
 * user and root can read; the first node's slurmstepd, once it holds its
 * claim, sends "PUT TOKEN MASTERPORT" (0: it found none), and the others
 * send "GET TOKEN" and are answered "PORT MASTERPORT" once it is known.
 * A line without the token is dropped unanswered.  Nothing else is said.
 */
#ifndef SP_RELAY_H
#define SP_RELAY_H

#include <stddef.h>

/* The step's variable with the relay's "PORT:TOKEN". */
#define SP_RELAY_ENV "SLURM_SPANK_DDP_RELAY"
/* The longest "PORT:TOKEN", without its '\0'. */
#define SP_RELAY_SPEC_MAX 48

struct sp_relay;

/* Listen on an ephemeral TCP port of every IPv4 address with a fresh
 * random token, and write "PORT:TOKEN" in SPEC (LEN bytes, at least
 * SP_RELAY_SPEC_MAX + 1).  Returns the relay (serve it with
 * sp_relay_serve), or NULL with errno EINVAL (SPEC NULL or short),
 * ENOMEM, or socket()'s, bind()'s, listen()'s or getrandom()'s. */
struct sp_relay *sp_relay_create (char *spec, size_t len);

/* Answer the step's nodes until the descriptor STOP_FD becomes readable
 * (or hangs up): take the first PUT with the token, answer every GET with
 * the token once the port is known, drop anything else.  A connection that
 * has not sent its line within 5 s is closed, as is a GET not answered
 * within 120 s; at most 256 connections at once (beyond that the oldest
 * that has not said its line is dropped).  Returns 0 when told to stop,
 * -1 with errno when poll() fails. */
int sp_relay_serve (struct sp_relay *r, int stop_fd);

/* The port the first node sent, 0 when it sent 0, -1 when none yet. */
int sp_relay_port (const struct sp_relay *r);

/* Close the relay's sockets and free it (NULL: nothing).  Keeps errno. */
void sp_relay_destroy (struct sp_relay *r);

/* The first node: tell the relay at HOST (a numeric address or a name)
 * and SPEC ("PORT:TOKEN", SP_RELAY_ENV) the step's MASTER_PORT PORT (0:
 * none), waiting TIMEOUT_MS milliseconds at most for its "OK".  Returns 0,
 * or -1 with errno EINVAL (a malformed SPEC, PORT outside 0..65535),
 * ETIMEDOUT, EPROTO (an answer that is not "OK"), or the connection's. */
int sp_relay_put (const char *host, const char *spec, int port,
                  int timeout_ms);

/* Another node: ask the relay at HOST and SPEC for the step's MASTER_PORT,
 * waiting TIMEOUT_MS milliseconds at most.  Returns the port (1..65535), 0
 * when the first node found none, or -1 with errno EINVAL (a malformed
 * SPEC), ETIMEDOUT, EPROTO (a malformed answer) or the connection's. */
int sp_relay_get (const char *host, const char *spec, int timeout_ms);

#endif /* SP_RELAY_H */
