/* ddp.h - public interface of libddp (placeholder; the core API lands with issue 4). */
#ifndef DDP_H
#define DDP_H

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the library version as "MAJOR.MINOR.PATCH"; never NULL. */
const char *ddp_version (void);

#ifdef __cplusplus
}
#endif
#endif /* DDP_H */
