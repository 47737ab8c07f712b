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
 * - Accumulation: a collective combining many contributions keeps its
 *   partial results in the accumulation type of ddpi_acc_dtype(): FLOAT32
 *   for FLOAT16/BFLOAT16 with SUM, PROD or AVG, so a chain of any length
 *   rounds to 16 bits once, at the end (ddpi_narrow); the dtype itself
 *   otherwise (MIN and MAX never round).
 *
 * The order of the operands is part of the result (floating point is not
 * associative; MIN/MAX keep the first operand on ties): every backend
 * combines the contributions in an order that is a fixed function of the
 * count, dtype, op and the job's layout, never of arrival times, and says
 * which (the host backend: host.h, "Reduction order").
 */
#ifndef DDP_REDUCE_H
#define DDP_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddp.h"

/* dst[i] = a[i] op b[i] for count elements.  dst may be a or b (the same
 * address, not a partial overlap): each element is read before it is
 * written.  AVG combines as SUM.  dtype and op must be valid. */
void ddpi_reduce_op (void *dst, const void *a, const void *b, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op);

/* dst = ((src[0] op src[1]) op src[2]) ... op src[n-1], element-wise, in that
 * order (n >= 1; n == 1 copies).  dst may alias src[0] only. */
void ddpi_reduce_many (void *dst, const void *const *src, int n, size_t count,
                      ddp_dtype_t dtype, ddp_op_t op);

/* The type partials of dtype under op are accumulated in (see above).
 * Inline: a rank alone's reduction asks it on every call. */
static inline ddp_dtype_t ddpi_acc_dtype (ddp_dtype_t dtype, ddp_op_t op)
{
    bool half = dtype == DDP_FLOAT16 || dtype == DDP_BFLOAT16;
    bool rounds = op == DDP_SUM || op == DDP_PROD || op == DDP_AVG;

    return half && rounds ? DDP_FLOAT32 : dtype;
}

/* dst (accumulation type of dtype/op) = src (dtype), count elements:
 * exact (a copy when the two types are the same).  dst and src must not
 * overlap unless they are the same buffer of the same type. */
void ddpi_widen (void *dst, const void *src, size_t count, ddp_dtype_t dtype,
                 ddp_op_t op);

/* dst (dtype) = src (accumulation type) rounded to nearest-even; dst may
 * be src (the same address): the elements are narrowed in order. */
void ddpi_narrow (void *dst, const void *src, size_t count,
                  ddp_dtype_t dtype, ddp_op_t op);

/* As ddpi_reduce_many() into dst of the accumulation type from n sources
 * of dtype: dst = ((widen (src[0]) op widen (src[1])) op ...), computed
 * in the accumulation type.  dst must not overlap a source. */
void ddpi_reduce_many_acc (void *dst, const void *const *src, int n,
                           size_t count, ddp_dtype_t dtype, ddp_op_t op);

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
