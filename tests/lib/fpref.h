/* fpref.h - reference conversions for the tests, independent of libddp's
 * own (libjob/common/reduce.c), which the tests check against them:
 * binary16 through gcc's _Float16 (libgcc's soft conversions), bfloat16 by
 * rounding to a multiple of its ulp in double arithmetic; and element i of
 * a buffer of any ddp dtype read or written as a double through them.
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
#include <string.h>

#include "ddp.h"

/* The bits of a float, and the float of some bits. */
static inline uint32_t fpref_f2u (float f)
{
    uint32_t u;
    memcpy (&u, &f, sizeof (u));
    return u;
}

static inline float fpref_u2f (uint32_t u)
{
    float f;
    memcpy (&f, &u, sizeof (f));
    return f;
}

/* f rounded to binary16, nearest-even (overflow to infinity, NaN stays a
 * quiet NaN): its bit pattern. */
static inline uint16_t fpref_to_f16 (float f)
{
    _Float16 h = (_Float16) f;
    uint16_t u;
    memcpy (&u, &h, sizeof (u));
    return u;
}

/* The binary16 value of a bit pattern (exact), for _Float16 arithmetic or
 * widening to float. */
static inline _Float16 fpref_from_f16 (uint16_t u)
{
    _Float16 h;
    memcpy (&h, &u, sizeof (h));
    return h;
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

/* Set element i of buf, of dtype t, to v: integers by C's conversion, the
 * 16-bit floats through float and the references above.  An unknown dtype
 * leaves buf alone. */
static inline void fpref_put (ddp_dtype_t t, void *buf, size_t i, double v)
{
    switch (t) {
    case DDP_INT8: ((int8_t *) buf)[i] = (int8_t) v; break;
    case DDP_UINT8: ((uint8_t *) buf)[i] = (uint8_t) v; break;
    case DDP_INT32: ((int32_t *) buf)[i] = (int32_t) v; break;
    case DDP_UINT32: ((uint32_t *) buf)[i] = (uint32_t) v; break;
    case DDP_INT64: ((int64_t *) buf)[i] = (int64_t) v; break;
    case DDP_UINT64: ((uint64_t *) buf)[i] = (uint64_t) v; break;
    case DDP_FLOAT16: ((uint16_t *) buf)[i] = fpref_to_f16 ((float) v); break;
    case DDP_BFLOAT16: ((uint16_t *) buf)[i] = fpref_to_bf16 ((float) v); break;
    case DDP_FLOAT32: ((float *) buf)[i] = (float) v; break;
    case DDP_FLOAT64: ((double *) buf)[i] = v; break;
    default: break;
    }
}

/* Element i of buf, of dtype t, as a double (exact but for 64-bit integers
 * beyond 2^53); NAN for an unknown dtype. */
static inline double fpref_get (ddp_dtype_t t, const void *buf, size_t i)
{
    switch (t) {
    case DDP_INT8: return ((const int8_t *) buf)[i];
    case DDP_UINT8: return ((const uint8_t *) buf)[i];
    case DDP_INT32: return ((const int32_t *) buf)[i];
    case DDP_UINT32: return ((const uint32_t *) buf)[i];
    case DDP_INT64: return (double) ((const int64_t *) buf)[i];
    case DDP_UINT64: return (double) ((const uint64_t *) buf)[i];
    case DDP_FLOAT16: return (double) fpref_from_f16 (((const uint16_t *) buf)[i]);
    case DDP_BFLOAT16: return fpref_from_bf16 (((const uint16_t *) buf)[i]);
    case DDP_FLOAT32: return ((const float *) buf)[i];
    case DDP_FLOAT64: return ((const double *) buf)[i];
    default: return NAN;
    }
}

#endif /* DDP_FPREF_H */
