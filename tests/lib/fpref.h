/* fpref.h - reference conversions for the tests, independent of libddp's
 * own (libjob/common/reduce.c), which the tests check against them:
 * binary16 through gcc's _Float16 (libgcc's soft conversions), bfloat16 by
 * rounding to a multiple of its ulp in double arithmetic; element i of a
 * buffer of any ddp dtype read or written as a double through them; and
 * the reduction ops in double.
 *
 * Used by the reduction unit test (libjob/common/test/reduce.c), by
 * ddp_check and by nccl_check (tests/progs/).  Everything is static inline:
 * include it once per test program; link with -lm.
 */
#ifndef DDP_FPREF_H
#define DDP_FPREF_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ddp.h"

/* Bit patterns and values, by union punning (defined in C11): the bits of
 * a float and the float of some bits; f rounded to binary16 nearest-even
 * (overflow to infinity, a NaN stays a quiet NaN) as a bit pattern; the
 * binary16 value of a bit pattern, for _Float16 arithmetic or widening. */
union fpref_32 { float f; uint32_t u; };
union fpref_16 { _Float16 h; uint16_t u; };

static inline uint32_t fpref_f2u (float f)
{
    return (union fpref_32){ .f = f }.u;
}
static inline float fpref_u2f (uint32_t u)
{
    return (union fpref_32){ .u = u }.f;
}
static inline uint16_t fpref_to_f16 (float f)
{
    return (union fpref_16){ .h = (_Float16) f }.u;
}
static inline _Float16 fpref_from_f16 (uint16_t u)
{
    return (union fpref_16){ .u = u }.h;
}

/* f rounded to bfloat16, nearest-even: |f| rounded to a multiple of its
 * bfloat16 ulp (2^(e-8) for f = m * 2^e, 0.5 <= m < 1; 2^-133 at the least,
 * the subnormal step); overflow gives infinity, a NaN stays a quiet NaN
 * with its sign. */
static inline uint16_t fpref_to_bf16 (float f)
{
    double v = f, r, ulp;
    int e;

    if (isnan (f))
        return (uint16_t) ((fpref_f2u (f) >> 16) | 0x40);
    if (isinf (f) || v == 0)
        return (uint16_t) (fpref_f2u (f) >> 16);
    frexp (v, &e);
    ulp = ldexp (1.0, e - 8 > -133 ? e - 8 : -133);
    r = nearbyint (v / ulp) * ulp;
    if (fabs (r) >= 0x1p128)
        r = v > 0 ? INFINITY : -INFINITY;
    return (uint16_t) (fpref_f2u ((float) r) >> 16);
}

/* The float value of a bfloat16 bit pattern (exact). */
static inline float fpref_from_bf16 (uint16_t b)
{
    return fpref_u2f ((uint32_t) b << 16);
}

/* acc op x in double arithmetic, to build a reference reduction one rank
 * at a time: SUM and AVG add (AVG's division is the caller's), MIN and MAX
 * keep acc on ties. */
static inline double fpref_combine (ddp_op_t op, double acc, double x)
{
    switch (op) {
    case DDP_PROD: return acc * x;
    case DDP_MIN: return x < acc ? x : acc;
    case DDP_MAX: return x > acc ? x : acc;
    default: return acc + x;
    }
}

/* The dtypes whose elements are plain C types, with those types. */
#define FPREF_C_TYPES(X)                                                      \
    X (DDP_INT8, int8_t) X (DDP_UINT8, uint8_t) X (DDP_INT32, int32_t)        \
    X (DDP_UINT32, uint32_t) X (DDP_INT64, int64_t) X (DDP_UINT64, uint64_t)  \
    X (DDP_FLOAT32, float) X (DDP_FLOAT64, double)

/* Set element i of buf, of dtype t, to v: C's conversion for the plain
 * types, through float and the references above for the 16-bit floats.
 * An unknown dtype leaves buf alone. */
static inline void fpref_put (ddp_dtype_t t, void *buf, size_t i, double v)
{
    uint16_t *h = buf;

    switch (t) {
#define FPREF_PUT(DT, T) case DT: ((T *) buf)[i] = (T) v; break;
    FPREF_C_TYPES (FPREF_PUT)
#undef FPREF_PUT
    case DDP_FLOAT16: h[i] = fpref_to_f16 ((float) v); break;
    case DDP_BFLOAT16: h[i] = fpref_to_bf16 ((float) v); break;
    default: break;
    }
}

/* Element i of buf, of dtype t, as a double (exact but for 64-bit integers
 * beyond 2^53); NAN for an unknown dtype. */
static inline double fpref_get (ddp_dtype_t t, const void *buf, size_t i)
{
    const uint16_t *h = buf;

    switch (t) {
#define FPREF_GET(DT, T) case DT: return (double) ((const T *) buf)[i];
    FPREF_C_TYPES (FPREF_GET)
#undef FPREF_GET
    case DDP_FLOAT16: return (double) fpref_from_f16 (h[i]);
    case DDP_BFLOAT16: return fpref_from_bf16 (h[i]);
    default: return NAN;
    }
}

#endif /* DDP_FPREF_H */
