/* machine.h - what ddp-run finds on this machine: its GPUs, whether an
 * NVIDIA driver is there, and a free MASTER_PORT.
 *
 * The SPANK plugin takes a node's GPUs from the CUDA_VISIBLE_DEVICES that
 * Slurm's gres set (spank/sp_gpus.h).  Without Slurm, ddp-run takes them
 * from CUDA_VISIBLE_DEVICES when it is set (the user's choice, the same
 * list syntax), else from the driver: one GPU per entry of
 * /proc/driver/nvidia/gpus/, else one per /dev/nvidiaN device, numbered
 * 0..N-1 as CUDA numbers them.  No CUDA library is loaded.  The driver
 * test is the plugin's: /proc/driver/nvidia/version or /dev/nvidiactl.
 *
 * Paths are read under a root directory: "" for this machine, or a fake
 * tree for tests (ddp-run's DDP_RUN_SYSROOT).
 */
#ifndef DR_MACHINE_H
#define DR_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

#include "sp_gpus.h"

/* The GPUs ddp-run may bind ranks to. */
struct dr_gpus {
    char list[SP_GPU_LIST_MAXLEN + 1]; /* CUDA_VISIBLE_DEVICES entries:
                                          the variable's own, or
                                          "0,1,...,count-1" */
    int count;                         /* entries in list */
    bool driver;                       /* an NVIDIA driver is loaded */
    char from[1024];                   /* where list came from, for
                                          messages */
};

/* Find the GPUs under ROOT ("" for this machine).  CVD is the value of
 * CUDA_VISIBLE_DEVICES, or NULL when it is unset; when set it is the list
 * ("" hides every GPU, as it does for CUDA).  Returns 0 and fills *G, or -1
 * with a message in ERR (ERRLEN bytes) when CVD is not a GPU list (the
 * syntax of sp_gpus.h) or the driver lists more GPUs than a list holds. */
int dr_gpus_find (const char *root, const char *cvd, struct dr_gpus *g,
                  char *err, size_t errlen);

/* Is something listening on TCP PORT on this machine (IPv4 or IPv6, the
 * kernel's tables under ROOT/proc/net)?  Returns 1 (yes), 0 (no), or -1
 * with errno set when a table cannot be read. */
int dr_port_taken (const char *root, unsigned port);

/* A port for MASTER_PORT: the first one in [LO, HI] from START on
 * (wrapping around) on which nothing listens.  Returns the port, or -1
 * with errno EADDRINUSE (all taken), EINVAL (a bad range) or the error of
 * reading the tables. */
int dr_port_pick (const char *root, unsigned start, unsigned lo, unsigned hi);

#endif /* DR_MACHINE_H */
