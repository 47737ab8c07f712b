/* reduce.c - unit tests for libjob/common/reduce.c, against references of
 * its own: tests/lib/fpref.h for the 16-bit floats (gcc's _Float16 for
 * binary16, a frexp/nearbyint rounding for bfloat16), plain C for the rest. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fpref.h"
#include "tap.h"
#include "reduce.h"

static uint32_t rng = 2463534242u;
static uint32_t xr (void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void test_half (void)
{
    int bad = 0, badr = 0, i;
    uint32_t u;

    for (u = 0; u < 65536; u++) {
        float got = ddpi_half_to_float ((uint16_t)u);
        float want = (float)fpref_from_f16 ((uint16_t)u);
        if (isnan (want) ? !isnan (got) : fpref_f2u (got) != fpref_f2u (want))
            bad++;
        /* Round trip of every non-NaN half is exact. */
        if (!isnan (want) && ddpi_float_to_half (want) != (uint16_t)u)
            badr++;
    }
    ok (bad == 0, "half_to_float matches _Float16 on all 65536 patterns (%d bad)", bad);
    ok (badr == 0, "float_to_half round-trips every half (%d bad)", badr);
    /* Midpoints between neighbouring halves: ties to even. */
    bad = 0;
    for (u = 0; u < 0x7bff; u++) {
        float lo = (float)fpref_from_f16 ((uint16_t)u);
        float hi = (float)fpref_from_f16 ((uint16_t)(u + 1));
        float mid = (float)(((double)lo + (double)hi) / 2);
        uint16_t want = fpref_to_f16 (mid);
        if (ddpi_float_to_half (mid) != want || ddpi_float_to_half (-mid) != (want | 0x8000))
            bad++;
        if (((want & 1) != 0) && (double)mid == ((double)lo + (double)hi) / 2)
            bad++;  /* a tie must round to the even neighbour */
    }
    ok (bad == 0, "float_to_half rounds midpoints to even (%d bad)", bad);
    bad = 0;
    for (i = 0; i < 2000000; i++) {
        float f = fpref_u2f (xr ());
        uint16_t got = ddpi_float_to_half (f), want = fpref_to_f16 (f);
        if (isnan (f) ? !((got & 0x7c00) == 0x7c00 && (got & 0x3ff)
                          && (got & 0x8000) == (want & 0x8000))
                      : got != want)
            bad++;
    }
    ok (bad == 0, "float_to_half matches _Float16 on 2M random floats (%d bad)", bad);
    is_int (ddpi_float_to_half (65520.0f), 0x7c00, "65520 rounds to +inf");
    is_int (ddpi_float_to_half (65519.0f), 0x7bff, "65519 rounds to 65504");
    is_int (ddpi_float_to_half (-INFINITY), 0xfc00, "-inf");
    is_int (ddpi_float_to_half (0x1p-24f), 0x0001, "2^-24 is the smallest subnormal");
    is_int (ddpi_float_to_half (0x1p-25f), 0x0000, "2^-25 ties to zero (even)");
    is_int (ddpi_float_to_half (0x1.8p-25f), 0x0001, "1.5*2^-25 rounds up");
    is_int (ddpi_float_to_half (-0.0f), 0x8000, "-0 keeps its sign");
    ok ((ddpi_float_to_half (NAN) & 0x7e00) == 0x7e00, "NaN stays a quiet NaN");
    ok ((ddpi_float_to_half (-NAN) & 0x8000) != 0, "NaN keeps its sign");
}

static void test_bf16 (void)
{
    int bad = 0, i;
    uint32_t u;

    for (u = 0; u < 65536; u++) {
        float f = fpref_from_bf16 ((uint16_t)u);
        if (fpref_f2u (ddpi_bf16_to_float ((uint16_t)u)) != fpref_f2u (f))
            bad++;
        if (!isnan (f) && ddpi_float_to_bf16 (f) != u)
            bad++;
    }
    ok (bad == 0, "bf16 conversions exact on all 65536 patterns (%d bad)", bad);
    bad = 0;
    for (i = 0; i < 2000000; i++) {
        float f = fpref_u2f (xr ());
        if (ddpi_float_to_bf16 (f) != fpref_to_bf16 (f))
            bad++;
    }
    ok (bad == 0, "float_to_bf16 matches the reference on 2M random floats (%d bad)", bad);
    is_int (ddpi_float_to_bf16 (fpref_u2f (0x3f808000)), 0x3f80, "tie rounds down to even");
    is_int (ddpi_float_to_bf16 (fpref_u2f (0x3f818000)), 0x3f82, "tie rounds up to even");
    is_int (ddpi_float_to_bf16 (fpref_u2f (0x7f7fffff)), 0x7f80, "FLT_MAX rounds to inf");
    ok ((ddpi_float_to_bf16 (NAN) & 0x7fc0) == 0x7fc0, "NaN stays a quiet NaN");
    ok ((ddpi_float_to_bf16 (fpref_u2f (0x7f800001)) & 0x7f) != 0,
        "signalling NaN does not become inf");
}

#define N 4099

/* Integer ops against plain C with wrapping through the unsigned type. */
#define INT_CASE(T, U, DT)                                                    \
    do {                                                                      \
        T a[N], b[N], d[N], w[N];                                             \
        for (op = 0; op < DDP_NUM_OPS; op++) {                                \
            int bad = 0;                                                      \
            for (i = 0; i < N; i++) {                                         \
                a[i] = (T)xr ();                                              \
                b[i] = i % 7 == 0 ? a[i] : (T)(xr () >> (i % 3 ? 0 : 20));    \
                if (i % 11 == 0) a[i] = (T)(xr () % 5);                       \
            }                                                                 \
            for (i = 0; i < N; i++) {                                         \
                switch (op) {                                                 \
                case DDP_SUM: case DDP_AVG: w[i] = (T)((U)a[i] + (U)b[i]); break; \
                case DDP_PROD: w[i] = (T)((U)a[i] * (U)b[i]); break;          \
                case DDP_MIN: w[i] = a[i] < b[i] ? a[i] : b[i]; break;        \
                case DDP_MAX: w[i] = a[i] > b[i] ? a[i] : b[i]; break;        \
                }                                                             \
            }                                                                 \
            ddpi_reduce_op (d, a, b, N, DT, (ddp_op_t)op);                    \
            bad = memcmp (d, w, sizeof (d)) != 0;                             \
            memcpy (d, a, sizeof (d));                                        \
            ddpi_reduce_op (d, d, b, N, DT, (ddp_op_t)op);                    \
            bad += memcmp (d, w, sizeof (d)) != 0;                            \
            ok (!bad, "%s %s (out of place and in place)", #T, opn[op]);      \
        }                                                                     \
    } while (0)

static const char *opn[] = { "sum", "prod", "min", "max", "avg" };

static void test_int_ops (void)
{
    int op, i;
    INT_CASE (int8_t, uint8_t, DDP_INT8);
    INT_CASE (uint8_t, uint8_t, DDP_UINT8);
    INT_CASE (int32_t, uint32_t, DDP_INT32);
    INT_CASE (uint32_t, uint32_t, DDP_UINT32);
    INT_CASE (int64_t, uint64_t, DDP_INT64);
    INT_CASE (uint64_t, uint64_t, DDP_UINT64);
}

/* Float values with specials mixed in. */
static double fval (int i)
{
    static const double sp[] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40,
                                 65504, 70000, 1.0, -1.0 };
    if (i % 13 == 0)
        return sp[(i / 13) % 10];
    return ((double)(xr () % 2000001) - 1000000) / ((xr () % 1000) + 1);
}

static double fop (double a, double b, int op)
{
    switch (op) {
    case DDP_SUM: case DDP_AVG: return a + b;
    case DDP_PROD: return a * b;
    case DDP_MIN: return isnan (a) ? a : isnan (b) ? b : b < a ? b : a;
    case DDP_MAX: return isnan (a) ? a : isnan (b) ? b : b > a ? b : a;
    }
    return 0;
}

static int same_f (double got, double want)
{
    if (isnan (want))
        return isnan (got);
    return got == want && signbit (got) == signbit (want);
}

static void test_float_ops (void)
{
    static float fa[N], fb[N], fd[N];
    static double da[N], db[N], dd[N];
    static uint16_t ha[N], hb[N], hd[N], ba[N], bb[N], bd[N];
    int op, i, bad;

    for (op = 0; op < DDP_NUM_OPS; op++) {
        for (i = 0; i < N; i++) {
            da[i] = fval (i);
            db[i] = fval (i + 5);
            fa[i] = (float)da[i];
            fb[i] = (float)db[i];
            ha[i] = fpref_to_f16 (fa[i]);
            hb[i] = fpref_to_f16 (fb[i]);
            ba[i] = fpref_to_bf16 (fa[i]);
            bb[i] = fpref_to_bf16 (fb[i]);
        }
        ddpi_reduce_op (fd, fa, fb, N, DDP_FLOAT32, (ddp_op_t)op);
        ddpi_reduce_op (dd, da, db, N, DDP_FLOAT64, (ddp_op_t)op);
        ddpi_reduce_op (hd, ha, hb, N, DDP_FLOAT16, (ddp_op_t)op);
        ddpi_reduce_op (bd, ba, bb, N, DDP_BFLOAT16, (ddp_op_t)op);
        bad = 0;
        for (i = 0; i < N; i++)
            if (!same_f (fd[i], (float)fop (fa[i], fb[i], op)))
                bad++;
        ok (!bad, "float32 %s (%d bad)", opn[op], bad);
        bad = 0;
        for (i = 0; i < N; i++)
            if (!same_f (dd[i], fop (da[i], db[i], op)))
                bad++;
        ok (!bad, "float64 %s (%d bad)", opn[op], bad);
        bad = 0;
        for (i = 0; i < N; i++) {
            _Float16 x = fpref_from_f16 (ha[i]), y = fpref_from_f16 (hb[i]), w;
            if (op == DDP_MIN || op == DDP_MAX) {
                /* the operand's own bits */
                uint16_t wb = (op == DDP_MIN
                               ? (isnan ((float)x) ? ha[i] : isnan ((float)y) ? hb[i]
                                  : y < x ? hb[i] : ha[i])
                               : (isnan ((float)x) ? ha[i] : isnan ((float)y) ? hb[i]
                                  : y > x ? hb[i] : ha[i]));
                if (hd[i] != wb)
                    bad++;
                continue;
            }
            w = op == DDP_PROD ? x * y : x + y;
            if (!same_f (ddpi_half_to_float (hd[i]), (double)w))
                bad++;
        }
        ok (!bad, "float16 %s matches _Float16 arithmetic (%d bad)", opn[op], bad);
        bad = 0;
        for (i = 0; i < N; i++) {
            float x = fpref_from_bf16 (ba[i]), y = fpref_from_bf16 (bb[i]);
            uint16_t wb;
            if (op == DDP_MIN || op == DDP_MAX)
                wb = (uint16_t)(fop (x, y, op) == x && !isnan (y) ? ba[i]
                                : isnan (x) ? ba[i] : bb[i]);
            else
                wb = fpref_to_bf16 ((float)fop (x, y, op));
            if (op == DDP_MIN || op == DDP_MAX) {
                uint16_t want = isnan (x) ? ba[i] : isnan (y) ? bb[i]
                              : (op == DDP_MIN ? (y < x ? bb[i] : ba[i])
                                               : (y > x ? bb[i] : ba[i]));
                wb = want;
            }
            if (isnan (fpref_from_bf16 (wb)) ? !isnan (fpref_from_bf16 (bd[i])) : bd[i] != wb)
                bad++;
        }
        ok (!bad, "bfloat16 %s matches the reference (%d bad)", opn[op], bad);
    }
}

static void test_many_and_finish (void)
{
    float s0[100], s1[100], s2[100], s3[100], d[100], w;
    const void *src[4] = { s0, s1, s2, s3 };
    int8_t i8[4] = { -7, 7, -128, 127 };
    int32_t i32[3] = { -7, 7, -9 };
    uint8_t u8[2] = { 255, 3 };
    uint16_t h[2];
    double f64[1] = { 1.0 };
    int i, bad = 0;

    for (i = 0; i < 100; i++) {
        s0[i] = (float)fval (i + 1) * 1e-3f;
        s1[i] = (float)fval (i + 2) * 1e3f;
        s2[i] = (float)fval (i + 3);
        s3[i] = (float)fval (i + 4) * 1e-7f;
    }
    ddpi_reduce_many (d, src, 4, 100, DDP_FLOAT32, DDP_SUM);
    for (i = 0; i < 100; i++) {
        w = ((s0[i] + s1[i]) + s2[i]) + s3[i];
        if (!same_f (d[i], w))
            bad++;
    }
    ok (!bad, "reduce_many sums in source order (%d bad)", bad);
    ddpi_reduce_many (d, src, 1, 100, DDP_FLOAT32, DDP_SUM);
    ok (memcmp (d, s0, sizeof (d)) == 0, "reduce_many of one source copies it");
    ddpi_reduce_finish (i8, 4, DDP_INT8, DDP_AVG, 2);
    ok (i8[0] == -3 && i8[1] == 3 && i8[2] == -64 && i8[3] == 63,
        "int8 avg truncates toward zero");
    i8[0] = -100;
    ddpi_reduce_finish (i8, 1, DDP_INT8, DDP_AVG, 200);
    ok (i8[0] == 0, "int8 avg by 200 ranks does not overflow the divisor");
    ddpi_reduce_finish (i32, 3, DDP_INT32, DDP_AVG, 4);
    ok (i32[0] == -1 && i32[1] == 1 && i32[2] == -2, "int32 avg truncates");
    ddpi_reduce_finish (u8, 2, DDP_UINT8, DDP_AVG, 2);
    ok (u8[0] == 127 && u8[1] == 1, "uint8 avg");
    ddpi_reduce_finish (u8, 2, DDP_UINT8, DDP_SUM, 2);
    ok (u8[0] == 127, "finish does nothing for SUM");
    h[0] = fpref_to_f16 (3.0f);
    h[1] = fpref_to_f16 (1.0f);
    ddpi_reduce_finish (h, 2, DDP_FLOAT16, DDP_AVG, 3);
    ok (h[0] == fpref_to_f16 (1.0f) && h[1] == fpref_to_f16 (1.0f / 3.0f),
        "float16 avg divides in float and rounds");
    h[0] = fpref_to_bf16 (3.0f);
    ddpi_reduce_finish (h, 1, DDP_BFLOAT16, DDP_AVG, 3);
    ok (h[0] == fpref_to_bf16 (1.0f), "bfloat16 avg");
    ddpi_reduce_finish (f64, 1, DDP_FLOAT64, DDP_AVG, 3);
    ok (f64[0] == 1.0 / 3.0, "float64 avg");
}

/* fp32 accumulation of 16-bit floats: one rounding at the end, however
 * many contributions. */
static void test_acc (void)
{
    enum { AN = 5000, AK = 17 };
    static uint16_t src[AK][AN], out[AN];
    static float acc[AN], ref[AN];
    const void *sp[AK];
    uint16_t one = fpref_to_f16 (1.0f), big = fpref_to_f16 (2048.0f);
    float x[3] = { 1.5f, -2.25f, 65504.0f };
    int i, k, bad = 0, badn = 0;

    ok (ddpi_acc_dtype (DDP_FLOAT16, DDP_SUM) == DDP_FLOAT32
        && ddpi_acc_dtype (DDP_BFLOAT16, DDP_AVG) == DDP_FLOAT32
        && ddpi_acc_dtype (DDP_FLOAT16, DDP_PROD) == DDP_FLOAT32,
        "16-bit floats accumulate in float32 for sum, prod, avg");
    ok (ddpi_acc_dtype (DDP_FLOAT16, DDP_MIN) == DDP_FLOAT16
        && ddpi_acc_dtype (DDP_BFLOAT16, DDP_MAX) == DDP_BFLOAT16
        && ddpi_acc_dtype (DDP_FLOAT32, DDP_SUM) == DDP_FLOAT32
        && ddpi_acc_dtype (DDP_INT8, DDP_SUM) == DDP_INT8,
        "min, max and the other types accumulate in themselves");
    for (k = 0; k < AK; k++) {
        sp[k] = src[k];
        for (i = 0; i < AN; i++)
            src[k][i] = k == 0 ? big : one;
    }
    ddpi_reduce_many_acc (acc, sp, AK, AN, DDP_FLOAT16, DDP_SUM);
    ddpi_narrow (out, acc, AN, DDP_FLOAT16, DDP_SUM);
    for (i = 0; i < AN; i++)
        bad += out[i] != fpref_to_f16 (2064.0f);
    ok (!bad, "2048 + 16 x 1 in float16 is 2064 with fp32 accumulation "
        "(%d bad; 16-bit steps would stay at 2048)", bad);
    for (k = 0; k < AK; k++)
        for (i = 0; i < AN; i++)
            src[k][i] = (uint16_t)(xr () & 0x7bff);    /* finite halves */
    ddpi_reduce_many_acc (acc, sp, AK, AN, DDP_FLOAT16, DDP_PROD);
    for (i = 0; i < AN; i++) {
        ref[i] = ddpi_half_to_float (src[0][i]);
        for (k = 1; k < AK; k++)
            ref[i] *= ddpi_half_to_float (src[k][i]);
        bad += fpref_f2u (acc[i]) != fpref_f2u (ref[i]);
    }
    ok (!bad, "reduce_many_acc: float ops in source order (%d bad)", bad);
    for (i = 0; i < AN; i++) {
        ddpi_widen (&acc[i], &src[1][i], 1, DDP_BFLOAT16, DDP_SUM);
        badn += ddpi_float_to_bf16 (acc[i]) != src[1][i];
    }
    ok (!badn, "bfloat16 widen and narrow round-trip (%d bad)", badn);
    memcpy (acc, x, sizeof (x));
    ddpi_narrow (acc, acc, 3, DDP_FLOAT16, DDP_SUM);
    memcpy (out, acc, 3 * sizeof (uint16_t));
    ok (out[0] == fpref_to_f16 (1.5f) && out[1] == fpref_to_f16 (-2.25f)
        && out[2] == fpref_to_f16 (65504.0f), "narrow in place");
    ddpi_widen (acc, x, 3, DDP_FLOAT32, DDP_SUM);
    ok (memcmp (acc, x, sizeof (x)) == 0, "widen of float32 copies");
    acc[0] = 1.0f;
    acc[1] = 2.0f;
    ddpi_reduce_op (&acc[1], &acc[0], &acc[1], 1, DDP_FLOAT32, DDP_SUM);
    ok (acc[1] == 3.0f, "reduce_op: dst may be the second operand");
}

int main (void)
{
    plan (NO_PLAN);
    test_half ();
    test_bf16 ();
    test_int_ops ();
    test_float_ops ();
    test_many_and_finish ();
    test_acc ();
    done_testing ();
    return 0;
}
