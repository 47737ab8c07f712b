/* reduce.h - element arithmetic for the collectives (pure functions).
 *
 * Semantics, the same in every backend so results are bitwise reproducible:
 * - Integers: SUM and PROD wrap modulo 2^bits (two's complement); MIN, MAX
 *   compare as signed/unsigned per the dtype; AVG is SUM then a division by
 *   the number of ranks truncated toward zero.
 * - FLOAT32/FLOAT64: IEEE arithmetic in the type itself.  MIN/MAX return an
 *   operand unchanged: a NaN operand wins (the first one when both are NaN);
 *   otherwise the smaller/larger, the first operand on ties (so -0/+0 keep
 *   the order of the reduction).
 * - FLOAT16/BFLOAT16 (uint16_t bit patterns): each operation converts both
 *   operands to float, computes in float and rounds back to nearest-even
 *   (overflow gives infinity, a NaN result stays a quiet NaN with its sign).
 *   MIN/MAX compare the float values but return the operand's bits unchanged.
 * - AVG: the element-wise SUM, then ddpi_reduce_finish() divides by n (for
 *   16-bit floats: in float, then rounded).
 */
#ifndef DDP_REDUCE_H
#define DDP_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "ddp.h"

/* dst[i] = a[i] op b[i] for count elements.  dst may be a (not b unless
 * a == b == dst).  AVG combines as SUM.  dtype and op must be valid. */
void ddpi_reduce_op (void *dst, const void *a, const void *b, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op);

/* dst = ((src[0] op src[1]) op src[2]) ... op src[n-1], element-wise, in that
 * order (n >= 1; n == 1 copies).  dst may alias src[0] only. */
void ddpi_reduce_many (void *dst, const void *const *src, int n, size_t count,
                      ddp_dtype_t dtype, ddp_op_t op);

/* Finish a reduction of nranks contributions in place: for AVG divide every
 * element by nranks; for the other ops do nothing. */
void ddpi_reduce_finish (void *buf, size_t count, ddp_dtype_t dtype,
                        ddp_op_t op, int nranks);

/* IEEE binary16 and bfloat16 conversions (round to nearest, ties to even). */
float ddpi_half_to_float (uint16_t h);
uint16_t ddpi_float_to_half (float f);
float ddpi_bf16_to_float (uint16_t h);
uint16_t ddpi_float_to_bf16 (float f);

#endif /* DDP_REDUCE_H */
