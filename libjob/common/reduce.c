/* reduce.c - element arithmetic for the collectives (see reduce.h). */
#include "config.h"

/* The element loops are the hot path of large reductions: let gcc vectorize
 * them (with -O2 it does not version loops for aliasing). */
#pragma GCC optimize ("O3")

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "reduce.h"

static uint32_t f2u (float f)
{
    uint32_t u;
    memcpy (&u, &f, sizeof (u));
    return u;
}

static float u2f (uint32_t u)
{
    float f;
    memcpy (&f, &u, sizeof (f));
    return f;
}

float ddpi_half_to_float (uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;

    if (exp == 0) {
        float v = (float)man * 0x1p-24f;    /* zero or subnormal: exact */
        return sign ? -v : v;
    }
    if (exp == 31)
        return u2f (sign | 0x7f800000u | (man << 13));
    return u2f (sign | ((exp - 15 + 127) << 23) | (man << 13));
}

/* Round m >> shift to nearest, ties to even (1 <= shift <= 31). */
static uint32_t round_shift (uint32_t m, int shift)
{
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);

    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

uint16_t ddpi_float_to_half (float f)
{
    uint32_t x = f2u (f);
    uint16_t sign = (x >> 16) & 0x8000;
    int exp = (int)((x >> 23) & 0xff);
    uint32_t man = x & 0x7fffff;
    int e = exp - 127;
    uint32_t r;

    if (exp == 0xff) {
        if (man)    /* NaN: quiet, keep the top of the payload */
            return sign | 0x7e00 | (uint16_t)(man >> 13);
        return sign | 0x7c00;
    }
    if (exp == 0)
        return sign;    /* float zero or subnormal: far below 2^-25 */
    if (e >= -14) {
        /* Normal range: the carry of the rounding may bump the exponent,
         * up to infinity (0x7c00). */
        r = ((uint32_t)(e + 15) << 10) + round_shift (man, 13);
        if (r >= 0x7c00)
            return sign | 0x7c00;
        return sign | (uint16_t)r;
    }
    if (-e - 1 > 24)
        return sign;    /* below half the smallest subnormal */
    r = round_shift (man | 0x800000u, -e - 1);  /* subnormal, units 2^-24 */
    return sign | (uint16_t)r;
}

float ddpi_bf16_to_float (uint16_t h)
{
    return u2f ((uint32_t)h << 16);
}

uint16_t ddpi_float_to_bf16 (float f)
{
    uint32_t x = f2u (f);

    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffff))
        return (uint16_t)((x >> 16) | 0x40);    /* quiet NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* Integer loops: arithmetic on the unsigned type U so overflow wraps. */
#define INT_LOOPS(T, U)                                                       \
    static void op_##T (T *d, const T *a, const T *b, size_t n, ddp_op_t op)  \
    {                                                                         \
        size_t i;                                                             \
        switch (op) {                                                         \
        case DDP_SUM:                                                         \
        case DDP_AVG:                                                         \
            for (i = 0; i < n; i++)                                           \
                d[i] = (T)((U)a[i] + (U)b[i]);                                \
            break;                                                            \
        case DDP_PROD:                                                        \
            for (i = 0; i < n; i++)                                           \
                d[i] = (T)((U)a[i] * (U)b[i]);                                \
            break;                                                            \
        case DDP_MIN:                                                         \
            for (i = 0; i < n; i++)                                           \
                d[i] = b[i] < a[i] ? b[i] : a[i];                             \
            break;                                                            \
        case DDP_MAX:                                                         \
            for (i = 0; i < n; i++)                                           \
                d[i] = b[i] > a[i] ? b[i] : a[i];                             \
            break;                                                            \
        default:                                                              \
            break;                                                            \
        }                                                                     \
    }

typedef int8_t i8;
typedef uint8_t u8;
typedef int32_t i32;
typedef uint32_t u32;
typedef int64_t i64;
typedef uint64_t u64;
INT_LOOPS (i8, uint32_t)
INT_LOOPS (u8, uint32_t)
INT_LOOPS (i32, uint32_t)
INT_LOOPS (u32, uint32_t)
INT_LOOPS (i64, uint64_t)
INT_LOOPS (u64, uint64_t)

#define FLOAT_LOOPS(T)                                                        \
    static void op_##T (T *d, const T *a, const T *b, size_t n, ddp_op_t op)  \
    {                                                                         \
        size_t i;                                                             \
        switch (op) {                                                         \
        case DDP_SUM:                                                         \
        case DDP_AVG:                                                         \
            for (i = 0; i < n; i++)                                           \
                d[i] = a[i] + b[i];                                           \
            break;                                                            \
        case DDP_PROD:                                                        \
            for (i = 0; i < n; i++)                                           \
                d[i] = a[i] * b[i];                                           \
            break;                                                            \
        case DDP_MIN:                                                         \
            for (i = 0; i < n; i++)                                           \
                d[i] = isnan (a[i]) ? a[i] : isnan (b[i]) ? b[i]              \
                     : b[i] < a[i] ? b[i] : a[i];                             \
            break;                                                            \
        case DDP_MAX:                                                         \
            for (i = 0; i < n; i++)                                           \
                d[i] = isnan (a[i]) ? a[i] : isnan (b[i]) ? b[i]              \
                     : b[i] > a[i] ? b[i] : a[i];                             \
            break;                                                            \
        default:                                                              \
            break;                                                            \
        }                                                                     \
    }

FLOAT_LOOPS (float)
FLOAT_LOOPS (double)

/* 16-bit floats: to float, compute, round back; MIN/MAX keep the bits. */
#define HALF_LOOPS(NAME, TOF, FROMF)                                          \
    static void op_##NAME (uint16_t *d, const uint16_t *a, const uint16_t *b, \
                           size_t n, ddp_op_t op)                             \
    {                                                                         \
        size_t i;                                                             \
        for (i = 0; i < n; i++) {                                             \
            float x = TOF (a[i]), y = TOF (b[i]);                             \
            switch (op) {                                                     \
            case DDP_SUM:                                                     \
            case DDP_AVG:                                                     \
                d[i] = FROMF (x + y);                                         \
                break;                                                        \
            case DDP_PROD:                                                    \
                d[i] = FROMF (x * y);                                         \
                break;                                                        \
            case DDP_MIN:                                                     \
                d[i] = isnan (x) ? a[i] : isnan (y) ? b[i]                    \
                     : y < x ? b[i] : a[i];                                   \
                break;                                                        \
            case DDP_MAX:                                                     \
                d[i] = isnan (x) ? a[i] : isnan (y) ? b[i]                    \
                     : y > x ? b[i] : a[i];                                   \
                break;                                                        \
            default:                                                          \
                break;                                                        \
            }                                                                 \
        }                                                                     \
    }

HALF_LOOPS (f16, ddpi_half_to_float, ddpi_float_to_half)
HALF_LOOPS (bf16, ddpi_bf16_to_float, ddpi_float_to_bf16)

void ddpi_reduce_op (void *dst, const void *a, const void *b, size_t count,
                    ddp_dtype_t dtype, ddp_op_t op)
{
    switch (dtype) {
    case DDP_INT8:
        op_i8 (dst, a, b, count, op);
        break;
    case DDP_UINT8:
        op_u8 (dst, a, b, count, op);
        break;
    case DDP_INT32:
        op_i32 (dst, a, b, count, op);
        break;
    case DDP_UINT32:
        op_u32 (dst, a, b, count, op);
        break;
    case DDP_INT64:
        op_i64 (dst, a, b, count, op);
        break;
    case DDP_UINT64:
        op_u64 (dst, a, b, count, op);
        break;
    case DDP_FLOAT16:
        op_f16 (dst, a, b, count, op);
        break;
    case DDP_BFLOAT16:
        op_bf16 (dst, a, b, count, op);
        break;
    case DDP_FLOAT32:
        op_float (dst, a, b, count, op);
        break;
    case DDP_FLOAT64:
        op_double (dst, a, b, count, op);
        break;
    default:
        break;
    }
}

void ddpi_reduce_many (void *dst, const void *const *src, int n, size_t count,
                      ddp_dtype_t dtype, ddp_op_t op)
{
    size_t es = ddp_dtype_size (dtype);
    size_t block = 16384 / (es ? es : 1);   /* stay in L1 across sources */
    size_t off;
    int k;

    if (n < 1 || es == 0)
        return;
    if (n == 1) {
        if (dst != src[0])
            memcpy (dst, src[0], count * es);
        return;
    }
    for (off = 0; off < count; off += block) {
        size_t len = count - off < block ? count - off : block;
        char *d = (char *)dst + off * es;

        ddpi_reduce_op (d, (const char *)src[0] + off * es,
                       (const char *)src[1] + off * es, len, dtype, op);
        for (k = 2; k < n; k++)
            ddpi_reduce_op (d, d, (const char *)src[k] + off * es, len, dtype,
                           op);
    }
}

/* The conversions of a 16-bit float type. */
static float (*const to_float[2]) (uint16_t) = { ddpi_half_to_float,
                                                 ddpi_bf16_to_float };
static uint16_t (*const from_float[2]) (float) = { ddpi_float_to_half,
                                                   ddpi_float_to_bf16 };

void ddpi_widen (void *dst, const void *src, size_t count, ddp_dtype_t dtype,
                 ddp_op_t op)
{
    float (*conv) (uint16_t) = to_float[dtype == DDP_BFLOAT16];
    const uint16_t *s = src;
    float *d = dst;

    if (ddpi_acc_dtype (dtype, op) == dtype) {
        if (dst != src)
            memcpy (dst, src, count * ddp_dtype_size (dtype));
        return;
    }
    for (size_t i = 0; i < count; i++)
        d[i] = conv (s[i]);
}

void ddpi_narrow (void *dst, const void *src, size_t count,
                  ddp_dtype_t dtype, ddp_op_t op)
{
    uint16_t (*conv) (float) = from_float[dtype == DDP_BFLOAT16];
    const float *s = src;
    uint16_t *d = dst;

    if (ddpi_acc_dtype (dtype, op) == dtype) {
        if (dst != src)
            memmove (dst, src, count * ddp_dtype_size (dtype));
        return;
    }
    /* In place, element i (2 bytes at 2i) is written after element i
     * (4 bytes at 4i) was read, and never over an element still unread. */
    for (size_t i = 0; i < count; i++)
        d[i] = conv (s[i]);
}

void ddpi_reduce_many_acc (void *dst, const void *const *src, int n,
                           size_t count, ddp_dtype_t dtype, ddp_op_t op)
{
    ddp_dtype_t at = ddpi_acc_dtype (dtype, op);
    size_t es = ddp_dtype_size (dtype), block = 4096, off;
    float tmp[4096];
    int k;

    if (at == dtype) {
        ddpi_reduce_many (dst, src, n, count, dtype, op);
        return;
    }
    if (n < 1)
        return;
    for (off = 0; off < count; off += block) {
        size_t len = count - off < block ? count - off : block;
        float *d = (float *)dst + off;

        ddpi_widen (d, (const char *)src[0] + off * es, len, dtype, op);
        for (k = 1; k < n; k++) {
            ddpi_widen (tmp, (const char *)src[k] + off * es, len, dtype, op);
            ddpi_reduce_op (d, d, tmp, len, at, op);
        }
    }
}

/* Divide in 64 bits so nranks never overflows a narrow type. */
#define INT_DIV(T, W)                                                         \
    do {                                                                      \
        T *p = buf;                                                           \
        for (i = 0; i < count; i++)                                           \
            p[i] = (T)((W)p[i] / (W)nranks);                                  \
    } while (0)

void ddpi_reduce_finish (void *buf, size_t count, ddp_dtype_t dtype,
                        ddp_op_t op, int nranks)
{
    size_t i;

    if (op != DDP_AVG || nranks < 1)
        return;
    switch (dtype) {
    case DDP_INT8:
        INT_DIV (int8_t, int64_t);
        break;
    case DDP_UINT8:
        INT_DIV (uint8_t, uint64_t);
        break;
    case DDP_INT32:
        INT_DIV (int32_t, int64_t);
        break;
    case DDP_UINT32:
        INT_DIV (uint32_t, uint64_t);
        break;
    case DDP_INT64:
        INT_DIV (int64_t, int64_t);
        break;
    case DDP_UINT64:
        INT_DIV (uint64_t, uint64_t);
        break;
    case DDP_FLOAT16: {
        uint16_t *p = buf;
        for (i = 0; i < count; i++)
            p[i] = ddpi_float_to_half (ddpi_half_to_float (p[i]) / (float)nranks);
        break;
    }
    case DDP_BFLOAT16: {
        uint16_t *p = buf;
        for (i = 0; i < count; i++)
            p[i] = ddpi_float_to_bf16 (ddpi_bf16_to_float (p[i]) / (float)nranks);
        break;
    }
    case DDP_FLOAT32: {
        float *p = buf;
        for (i = 0; i < count; i++)
            p[i] = p[i] / (float)nranks;
        break;
    }
    case DDP_FLOAT64: {
        double *p = buf;
        for (i = 0; i < count; i++)
            p[i] = p[i] / (double)nranks;
        break;
    }
    default:
        break;
    }
}
