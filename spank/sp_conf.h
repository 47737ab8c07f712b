/* sp_conf.h - the plugin's plugstack.conf arguments.
 *
 *   required ddp.so [default=off|auto|host|nccl] [bind=gpu|none]
 *                   [port_range=LO-HI] [torch_env=yes|no]
 *
 * Every argument is KEY=VALUE; an unknown key, a malformed value or a key
 * given twice is an error (the plugin then refuses to load).
 */
#ifndef SP_CONF_H
#define SP_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "sp_option.h"

struct sp_conf {
    enum sp_backend default_backend;  /* when the user gives no --ddp */
    bool bind;                        /* bind each task to one GPU */
    unsigned port_lo, port_hi;        /* MASTER_PORT range, inclusive */
    bool torch_env;                   /* export RANK, WORLD_SIZE, ... */
};

/* The defaults: default=off bind=gpu port_range=29500-29999 torch_env=yes. */
#define SP_CONF_DEFAULT_PORT_LO 29500
#define SP_CONF_DEFAULT_PORT_HI 29999

/* Fill *CONF with the defaults. */
void sp_conf_init (struct sp_conf *conf);

/* Parse plugstack.conf arguments AC/AV into *CONF (defaults first).  Returns
 * 0; on failure returns -1 with errno EINVAL, writes a message naming the
 * offending argument to ERR (ERRLEN bytes) and leaves *CONF alone. */
int sp_conf_parse (int ac, char *const av[], struct sp_conf *conf, char *err,
                   size_t errlen);

/* Parse a boolean (yes/no, true/false, 1/0, on/off).  Returns 0 and sets
 * *OUT, or -1 with errno EINVAL. */
int sp_parse_bool (const char *s, bool *out);

/* Parse a port range "LO-HI" with 1 <= LO <= HI <= 65535.  Returns 0 and
 * sets *LO, *HI, or -1 with errno EINVAL (malformed) or ERANGE. */
int sp_parse_port_range (const char *s, unsigned *lo, unsigned *hi);

#endif /* SP_CONF_H */
