/* sp_conf.h - the plugin's plugstack.conf arguments.
 *
 *   required ddp.so [default=off|auto|host|nccl] [bind=gpu|none]
 *                   [port_range=LO-HI] [torch_env=yes|no|GROUP[,GROUP...]]
 *                   [socket_ifname=SELECTOR]
 *
 * torch_env's groups (SP_TORCH_*): env (RANK ... MASTER_PORT, what
 * PyTorch's env:// reads), elastic (the rest of what torchrun gives its
 * workers: GROUP_RANK, ROLE_RANK, ..., TORCHELASTIC_*), omp
 * (OMP_NUM_THREADS where the task has none); yes is all three, no none.
 *
 * socket_ifname: the site's default for DDP_SOCKET_IFNAME (its grammar
 * exactly: libjob/common/ifsel.h), for jobs that set neither it nor
 * DDP_HOST_ADDR; none by default.
 *
 * Every argument is KEY=VALUE; an unknown key, a malformed value or a key
 * given twice is an error (the plugin then refuses to load).
 */
#ifndef SP_CONF_H
#define SP_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "sp_option.h"

/* The longest argument (KEY=VALUE) plugstack.conf may give. */
#define SP_CONF_ARGMAX 256

struct sp_conf {
    enum sp_backend default_backend;  /* when the user gives no --ddp */
    bool bind;                        /* bind each task to one GPU */
    unsigned port_lo, port_hi;        /* MASTER_PORT range, inclusive */
    unsigned torch_env;               /* SP_TORCH_* bits: what to export */
    char socket_ifname[SP_CONF_ARGMAX + 1]; /* site selector; "": none */
};

/* torch_env's groups. */
#define SP_TORCH_ENV 1u      /* RANK, WORLD_SIZE, ..., MASTER_PORT */
#define SP_TORCH_ELASTIC 2u  /* GROUP_RANK, ..., TORCHELASTIC_* */
#define SP_TORCH_OMP 4u      /* OMP_NUM_THREADS when unset */
#define SP_TORCH_ALL (SP_TORCH_ENV | SP_TORCH_ELASTIC | SP_TORCH_OMP)

/* The defaults: default=off bind=gpu port_range=29500-29999 torch_env=yes,
 * no socket_ifname. */
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

/* Parse torch_env's value: a boolean (yes: every group, no: none) or a
 * comma-separated list of group names (env, elastic, omp), each at most
 * once, no empty item.  Returns 0 and sets *OUT (SP_TORCH_* bits), or -1
 * with errno EINVAL. */
int sp_parse_torch_env (const char *s, unsigned *out);

/* Check socket_ifname's value S: DDP_SOCKET_IFNAME's grammar
 * (ddpi_ifsel_parse), not empty.  Returns 0, or -1 with errno EINVAL and
 * a message naming the key, the value and the grammar in ERR (ERRLEN
 * bytes). */
int sp_parse_socket_ifname (const char *s, char *err, size_t errlen);

/* Parse a port range "LO-HI" with 1 <= LO <= HI <= 65535.  Returns 0 and
 * sets *LO, *HI, or -1 with errno EINVAL (malformed) or ERANGE. */
int sp_parse_port_range (const char *s, unsigned *lo, unsigned *hi);

#endif /* SP_CONF_H */
