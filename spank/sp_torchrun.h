/* sp_torchrun.h - recognising a step whose command is torchrun.
 *
 * torchrun (torch.distributed.run) starts its own worker processes on its
 * node and gives each its RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT and TORCHELASTIC_* itself; for its own rendezvous it reads its
 * arguments, each of which it also takes from a PET_<NAME> variable
 * (--nnodes from PET_NNODES, --node-rank from PET_NODE_RANK, --master-addr
 * and --master-port from PET_MASTER_ADDR and PET_MASTER_PORT; with the
 * default static rendezvous node 0's torchrun listens on the master port).
 * Under srun --ddp it needs one task per node, and all of the node's GPUs.
 */
#ifndef SP_TORCHRUN_H
#define SP_TORCHRUN_H

#include <stdbool.h>

/* What to do instead, for messages. */
#define SP_TORCHRUN_ADVICE \
    "run one task per node (srun --ddp -N2 --ntasks-per-node=1 torchrun " \
    "--nproc-per-node=4 train.py; the plugin then sets PET_NNODES, " \
    "PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT for torchrun and " \
    "leaves every GPU of the node visible), or drop torchrun: srun --ddp " \
    "gives every task what torchrun would (srun --ddp -N2 " \
    "--ntasks-per-node=4 python3 train.py)"

/* True when the command ARGV (ARGC words) runs torchrun: a program named
 * torchrun (any directory), or a python ("python", "python3",
 * "python3.11", any directory) running the module torch.distributed.run or
 * torch.distributed.launch with -m.  False for anything else, NULL or
 * empty, and for torchrun started by a wrapper (a shell, a script). */
bool sp_cmd_is_torchrun (int argc, char *const argv[]);

#endif /* SP_TORCHRUN_H */
