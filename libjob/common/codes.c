/* codes.c - the public API's answers that need no state: what an error
 * code means (ddp_strerror), why the last call failed (ddp_last_error, the
 * per-thread message of util.c) and how large an element is
 * (ddp_dtype_size), and the names of dtypes and ops for messages.
 * They live here, below the core, so that the backends use them without
 * calling back into core.c. */
#include "config.h"

#include <stddef.h>

#include "ddp.h"
#include "ddp_internal.h"

const char *ddp_strerror (int err)
{
    switch (err) {
    case DDP_OK: return "success";
    case DDP_EINVAL: return "invalid argument";
    case DDP_ENOINIT: return "libddp is not initialized (call ddp_init)";
    case DDP_ENOMEM: return "out of memory";
    case DDP_ENOLAUNCH: return "world size > 1 but no PMIx server "
                               "(launch with srun --ddp)";
    case DDP_EPMIX: return "a PMIx call failed";
    case DDP_ETRANSPORT: return "the host transport failed";
    case DDP_ETIMEDOUT: return "a peer did not arrive within DDP_TIMEOUT";
    case DDP_EPEER: return "a peer died or aborted";
    case DDP_EREMOTE: return "the operation failed on another rank";
    case DDP_EUSER: return "a user callback failed";
    case DDP_ENOTSUP: return "not supported";
    case DDP_ENCCL: return "an NCCL call failed";
    case DDP_ECUDA: return "a CUDA call failed";
    case DDP_EMISMATCH: return "ranks disagree";
    }
    return "unknown error";
}

const char *ddp_last_error (void)
{
    return ddpi_last_error ();
}

size_t ddp_dtype_size (ddp_dtype_t dtype)
{
    return ddpi_dtype_bytes (dtype);
}

/* ddp_internal.h. */
const char *ddpi_dtype_name (int dtype)
{
    static const char *const names[DDP_NUM_DTYPES] = {
        [DDP_INT8] = "int8",         [DDP_UINT8] = "uint8",
        [DDP_INT32] = "int32",       [DDP_UINT32] = "uint32",
        [DDP_INT64] = "int64",       [DDP_UINT64] = "uint64",
        [DDP_FLOAT16] = "float16",   [DDP_BFLOAT16] = "bfloat16",
        [DDP_FLOAT32] = "float32",   [DDP_FLOAT64] = "float64",
    };

    return dtype >= 0 && dtype < DDP_NUM_DTYPES && names[dtype] ? names[dtype]
                                                                : "?";
}

/* ddp_internal.h. */
const char *ddpi_op_name (int op)
{
    static const char *const names[DDP_NUM_OPS] = {
        [DDP_SUM] = "SUM", [DDP_PROD] = "PROD", [DDP_MIN] = "MIN",
        [DDP_MAX] = "MAX", [DDP_AVG] = "AVG",
    };

    return op >= 0 && op < DDP_NUM_OPS && names[op] ? names[op] : "?";
}
