/* nccl_dl.h - CUDA's runtime and NCCL, loaded at run time (internal to
 * libjob/nccl; doc/nccl.md, "Finding CUDA and NCCL").
 *
 * libddp links neither libcudart nor libnccl, so one build made where
 * they are installed starts on every node, GPU or not; they are loaded the
 * first time a step asks for the NCCL backend (DDP_BACKEND=nccl, or auto
 * asking whether this node has a GPU).  Each library is taken from the
 * first of:
 *   1. the process itself, when it already holds the library's calls
 *      (a program that links them, a stand-in preloaded) and it is of the
 *      build's major version (cudaRuntimeGetVersion, ncclGetVersion);
 *   2. the directory configure found it in (DDP_CUDA_LIBDIR and
 *      DDP_NCCL_LIBDIR of config.h), as libcudart.so.MAJOR and
 *      libnccl.so.MAJOR with the majors of the build's headers;
 *   3. the dynamic linker's search path (LD_LIBRARY_PATH, ld.so.cache, the
 *      system directories), by its soname.
 * A library that is found but lacks a call this build uses is refused,
 * naming the call.  Every CUDA and NCCL call of the backend goes through
 * the table: DL (cudaSetDevice) (dev).  Only this folder includes this
 * header (it shows CUDA's and NCCL's types).
 */
#ifndef DDP_NCCL_DL_H
#define DDP_NCCL_DL_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

/* The runtime's calls the backend makes (the names as the header maps
 * them: cudaGetDeviceProperties is cudaGetDeviceProperties_v2 since CUDA
 * 12, and the table and the lookup both see the mapped name). */
#define NCCL_DL_CUDART_CALLS(X) \
    X (cudaRuntimeGetVersion) X (cudaGetDeviceCount) X (cudaGetLastError) \
    X (cudaGetErrorString) X (cudaSetDevice) X (cudaFree) X (cudaMalloc) \
    X (cudaMemset) X (cudaMemGetInfo) X (cudaDeviceGetPCIBusId) \
    X (cudaGetDeviceProperties) X (cudaPointerGetAttributes) \
    X (cudaMemcpyAsync) X (cudaStreamCreate) X (cudaStreamDestroy) \
    X (cudaStreamQuery)

/* NCCL's calls every NCCL >= 2.14 has. */
#define NCCL_DL_NCCL_CALLS(X) \
    X (ncclGetVersion) X (ncclGetUniqueId) X (ncclGetErrorString) \
    X (ncclGetLastError) X (ncclCommInitRankConfig) X (ncclCommFinalize) \
    X (ncclCommDestroy) X (ncclCommAbort) X (ncclCommGetAsyncError) \
    X (ncclAllReduce) X (ncclReduce) X (ncclBroadcast) X (ncclAllGather) \
    X (ncclReduceScatter) X (ncclSend) X (ncclRecv) X (ncclGroupStart) X (ncclGroupEnd)

/* NCCL's calls that a library older than the build's headers may lack:
 * the table's entry is then NULL and the backend does without
 * (ncclCommInitRankScalable: one root; ncclCommSplit, NCCL >= 2.18: a
 * group's communicator is created from the group's bootstrap instead). */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
#define NCCL_DL_HAVE_SPLIT 1
#define NCCL_DL_SPLIT(X) X (ncclCommSplit)
#else
#define NCCL_DL_SPLIT(X)
#endif
#ifdef HAVE_NCCL_SCALABLE_INIT
#define NCCL_DL_NCCL_OPTIONAL(X) X (ncclCommInitRankScalable) NCCL_DL_SPLIT (X)
#else
#define NCCL_DL_NCCL_OPTIONAL(X) NCCL_DL_SPLIT (X)
#endif

#define NCCL_DL_FIELD(fn) __typeof__ (fn) *fn;
struct nccl_dl_table {
    NCCL_DL_CUDART_CALLS (NCCL_DL_FIELD)
    NCCL_DL_NCCL_CALLS (NCCL_DL_FIELD)
    NCCL_DL_NCCL_OPTIONAL (NCCL_DL_FIELD)
};
#undef NCCL_DL_FIELD

/* Filled by nccl_dl_load(); read only after it returned 0. */
extern struct nccl_dl_table nccl_dl;

/* The call fn through the table: DL (ncclGetVersion) (&v). */
#define DL(fn) (nccl_dl.fn)

/* Load both libraries and fill the table, once per process (later calls
 * return the first call's result; thread-safe).  Returns 0, or DDP_ECUDA
 * with what was looked for and where in why (whylen bytes; a short form
 * that fits a rank's message to its peers) and every attempt's own words
 * under DDP_DEBUG.  Never unloads. */
int nccl_dl_load (char *why, size_t whylen);

/* Where the libraries were found (after a successful load) or are looked
 * for (before one, or after a failed one), in one line into buf: e.g.
 * "loaded at run time: libnccl.so.2 (NCCL 22803) from /usr/lib/..., ...".
 * Does not load anything.  Returns buf. */
const char *nccl_dl_describe (char *buf, size_t len);

/* After cudaGetDeviceCount failed with e: the cause in words a user can
 * act on, into buf (len bytes): no NVIDIA driver on this node
 * (libcuda.so.1 cannot be loaded), a driver older than the runtime, no
 * device visible, or "cudaGetDeviceCount: " and CUDA's own words for
 * anything else.  When hint is not NULL, *hint is what a step that asked
 * for NCCL can do about it ("request GPUs (--gres=gpu:N ...)"), a
 * constant string.  Returns buf. */
const char *nccl_dl_cuda_cause (cudaError_t e, char *buf, size_t len,
                                const char **hint);

#endif /* DDP_NCCL_DL_H */
