/*
 * test_reduce.c - element sizes/names, the fp32 <-> narrow float conversions and every
 * (dtype, op) reduction kernel, checked against references written independently here:
 *
 *   integers      load sign/zero-extended into __int128, compute in unsigned __int128,
 *                 truncate to the element width (so wrapping is checked against modular
 *                 arithmetic, not against the same cast chain).
 *   fp32/fp64     native arithmetic, NaN-propagating max/min written with isnan().
 *   narrow floats decode by formula (ldexp of the fields), compute in fp32, encode by
 *                 bisection over the monotone positive codes with the nearest-even tie
 *                 rule and each format's overflow rule (e4m3 -> NaN, others -> inf);
 *                 e8m0 by its own rule (frexp). fp8 kernels are checked exhaustively on
 *                 all 256 x 256 input pairs, fp16/bf16 on random and special pairs.
 */
#include "reduce/reduce.h"
#include "tinytest.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---------------- reference narrow formats ---------------- */

typedef struct {
    const char *name;
    int ebits, mbits;
    int ieee;          /* 1: top exponent is inf/NaN; 0: e4m3fn (only all-ones is NaN) */
    uint32_t topcode;  /* first positive code past the largest finite value */
    float (*dec)(uint16_t);
    uint16_t (*enc)(float);
} fmt_t;

static float dec_f16(uint16_t v) { return hccl_fp16_to_fp32(v); }
static uint16_t enc_f16(float f) { return hccl_fp32_to_fp16(f); }
static float dec_bf16(uint16_t v) { return hccl_bf16_to_fp32(v); }
static uint16_t enc_bf16(float f) { return hccl_fp32_to_bf16(f); }
static float dec_e4m3(uint16_t v) { return hccl_fp8e4m3_to_fp32((uint8_t)v); }
static uint16_t enc_e4m3(float f) { return hccl_fp32_to_fp8e4m3(f); }
static float dec_e5m2(uint16_t v) { return hccl_fp8e5m2_to_fp32((uint8_t)v); }
static uint16_t enc_e5m2(float f) { return hccl_fp32_to_fp8e5m2(f); }

static const fmt_t F16 = {"fp16", 5, 10, 1, 0x7C00, dec_f16, enc_f16};
static const fmt_t BF16 = {"bf16", 8, 7, 1, 0x7F80, dec_bf16, enc_bf16};
static const fmt_t E4M3 = {"e4m3", 4, 3, 0, 0x7F, dec_e4m3, enc_e4m3};
static const fmt_t E5M2 = {"e5m2", 5, 2, 1, 0x7C, dec_e5m2, enc_e5m2};

/* magnitude of a positive code by formula (valid up to and including topcode) */
static double ref_mag(const fmt_t *f, uint32_t c)
{
    int bias = (1 << (f->ebits - 1)) - 1;
    uint32_t e = c >> f->mbits, m = c & ((1u << f->mbits) - 1);
    if (e == 0)
        return ldexp((double)m, 1 - bias - f->mbits);
    return ldexp(1.0 + ldexp((double)m, -f->mbits), (int)e - bias);
}

static double ref_decode(const fmt_t *f, uint32_t code)
{
    uint32_t sb = 1u << (f->ebits + f->mbits);
    uint32_t c = code & (sb - 1);
    double s = (code & sb) ? -1.0 : 1.0;
    if (c > f->topcode)
        return NAN;
    if (c == f->topcode)
        return f->ieee ? s * INFINITY : NAN;
    return s * ref_mag(f, c);
}

/* encoding of v; NaN results come back as the all-ones pattern */
static uint32_t ref_encode(const fmt_t *f, double v)
{
    uint32_t sb = 1u << (f->ebits + f->mbits);
    uint32_t nan = (sb << 1) - 1;
    if (isnan(v))
        return nan;
    uint32_t s = signbit(v) ? sb : 0;
    double a = fabs(v);
    uint32_t over = f->ieee ? (s | f->topcode) : nan;
    if (a >= ref_mag(f, f->topcode))
        return over;
    uint32_t lo = 0, hi = f->topcode; /* mag(lo) <= a < mag(hi) */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (ref_mag(f, mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - ref_mag(f, lo), dh = ref_mag(f, hi) - a;
    uint32_t c = (dl < dh || (dl == dh && !(lo & 1))) ? lo : hi;
    if (c == f->topcode)
        return over;
    return s | c;
}

static int same_value(double x, double y)
{
    return (isnan(x) && isnan(y)) || x == y;
}

/* e8m0 reference: the rule documented in convert.c */
static uint8_t ref_e8m0_encode(double v)
{
    if (isnan(v) || v <= 0 || v > ldexp(1.0, 127))
        return 0xFF;
    if (v < ldexp(1.0, -127))
        return 0x00;
    int k;
    frexp(v, &k); /* v = frac * 2^k, frac in [0.5, 1): v in [2^(k-1), 2^k) */
    k -= 1;
    double lo = ldexp(1.0, k), hi = ldexp(1.0, k + 1);
    int clo = k + 127;
    if (v - lo < hi - v || (v - lo == hi - v && !(clo & 1)))
        return (uint8_t)clo;
    return (uint8_t)(clo + 1);
}

static double ref_e8m0_decode(uint8_t v)
{
    return v == 0xFF ? NAN : ldexp(1.0, (int)v - 127);
}

/* ---------------- sizes and names ---------------- */

static void test_sizes_names(void)
{
    static const struct {
        int dt;
        size_t size;
        const char *name;
    } t[] = {{0, 1, "int8"},    {1, 2, "int16"},    {2, 4, "int32"},    {3, 2, "fp16"},   {4, 4, "fp32"},
             {5, 8, "int64"},   {6, 8, "uint64"},   {7, 1, "uint8"},    {8, 2, "uint16"}, {9, 4, "uint32"},
             {10, 8, "fp64"},   {11, 2, "bfp16"},   {12, 16, "int128"}, {14, 1, "hif8"},  {15, 1, "fp8e4m3"},
             {16, 1, "fp8e5m2"}, {17, 1, "fp8e8m0"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        TT_ASSERT_EQ(hccl_dtype_size((HcclDataType)t[i].dt), t[i].size);
        TT_ASSERT_MSG(strcmp(hccl_dtype_name((HcclDataType)t[i].dt), t[i].name) == 0, "dtype %d", t[i].dt);
    }
    int bad[] = {13, 18, 19, 100, 254, 255, 256, -1, -100, 0x7FFFFFFF};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TT_ASSERT_EQ(hccl_dtype_size((HcclDataType)bad[i]), 0);
        TT_ASSERT(strcmp(hccl_dtype_name((HcclDataType)bad[i]), "unknown") == 0);
        for (int op = 0; op < 4; op++)
            TT_ASSERT(hccl_reduce_get((HcclDataType)bad[i], (HcclReduceOp)op) == NULL);
    }
    const char *ops[] = {"sum", "prod", "max", "min"};
    for (int op = 0; op < 4; op++) {
        TT_ASSERT(strcmp(hccl_redop_name((HcclReduceOp)op), ops[op]) == 0);
        TT_ASSERT(hccl_redop_valid((HcclReduceOp)op));
    }
    int badop[] = {4, 5, 254, 255, -1};
    for (size_t i = 0; i < sizeof badop / sizeof badop[0]; i++) {
        TT_ASSERT(!hccl_redop_valid((HcclReduceOp)badop[i]));
        TT_ASSERT(strcmp(hccl_redop_name((HcclReduceOp)badop[i]), "unknown") == 0);
        for (int dt = 0; dt < 18; dt++)
            TT_ASSERT(hccl_reduce_get((HcclDataType)dt, (HcclReduceOp)badop[i]) == NULL);
    }
    for (int dt = 0; dt < 18; dt++)
        for (int op = 0; op < 4; op++) {
            int expect = dt != 13 && dt != HCCL_DATA_TYPE_HIF8;
            TT_ASSERT_MSG((hccl_reduce_get((HcclDataType)dt, (HcclReduceOp)op) != NULL) == expect, "dt %d op %d",
                          dt, op);
        }
}

/* ---------------- conversions ---------------- */

static void check_roundtrip(const fmt_t *f)
{
    uint32_t ncodes = 1u << (1 + f->ebits + f->mbits);
    int bad_dec = 0, bad_rt = 0;
    for (uint32_t c = 0; c < ncodes; c++) {
        float v = f->dec((uint16_t)c);
        double r = ref_decode(f, c);
        if (!same_value(v, r) || (v == 0 && !signbit(v) != !signbit(r))) {
            if (bad_dec++ < 3)
                fprintf(stderr, "%s: decode(0x%x) = %a, want %a\n", f->name, c, (double)v, r);
        }
        uint16_t back = f->enc(v);
        if (isnan(r) ? !isnan(f->dec(back)) : back != c)
            bad_rt++;
    }
    TT_ASSERT_MSG(bad_dec == 0, "%s: %d codes decode wrongly", f->name, bad_dec);
    TT_ASSERT_MSG(bad_rt == 0, "%s: %d codes do not round-trip", f->name, bad_rt);
}

static int check_encode(const fmt_t *f, float v)
{
    uint32_t got = f->enc(v), want = ref_encode(f, v);
    double gv = ref_decode(f, got), wv = ref_decode(f, want);
    int ok = isnan(wv) ? isnan(gv) : got == want;
    if (!ok)
        fprintf(stderr, "%s: encode(%a) = 0x%x, want 0x%x\n", f->name, (double)v, got, want);
    return ok;
}

/* every midpoint between neighbouring codes, its fp32 neighbours, and random fp32 inputs */
static void check_encode_sweep(const fmt_t *f)
{
    int bad = 0;
    for (uint32_t c = 0; c < f->topcode && bad < 10; c++) {
        float mid = (float)((ref_mag(f, c) + ref_mag(f, c + 1)) / 2);
        float vals[] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), (float)ref_mag(f, c)};
        for (int k = 0; k < 4; k++) {
            bad += !check_encode(f, vals[k]);
            bad += !check_encode(f, -vals[k]);
        }
    }
    for (int i = 0; i < 200000 && bad < 10; i++)
        bad += !check_encode(f, u2f((uint32_t)rnd()));
    float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN, FLT_TRUE_MIN,
                        u2f(0x7F800001u), u2f(0xFFC00001u), 1.0f, -1.0f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        bad += !check_encode(f, specials[i]);
    TT_ASSERT_MSG(bad == 0, "%s: %d encodings differ from the reference", f->name, bad);
}

static void test_fp16(void)
{
    check_roundtrip(&F16);
    check_encode_sweep(&F16);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(1.0f), 0x3C00);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(-2.0f), 0xC000);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(2049.0f), 0x6800); /* tie -> 2048 (even) */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(2051.0f), 0x6802); /* tie -> 2052 (even) */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(2050.0f), 0x6801);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(65504.0f), 0x7BFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(65519.0f), 0x7BFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(65520.0f), 0x7C00);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(-65520.0f), 0xFC00);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(1e10f), 0x7C00);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(INFINITY), 0x7C00);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(-INFINITY), 0xFC00);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(-0.0f), 0x8000);
    TT_ASSERT((hccl_fp32_to_fp16(NAN) & 0x7FFF) > 0x7C00);
    TT_ASSERT((hccl_fp32_to_fp16(u2f(0x7F800001u)) & 0x7FFF) > 0x7C00); /* low-payload NaN stays NaN */
    /* subnormals */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(0x1p-24f), 0x0001);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(0x1p-25f), 0x0000);        /* tie -> 0 */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(0x1.8p-25f), 0x0001);
    TT_ASSERT_EQ(hccl_fp32_to_fp16(0x1.8p-24f), 0x0002);      /* tie 1|2 -> 2 */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(0x1p-14f), 0x0400);        /* smallest normal */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(0x1p-14f - 0x1p-25f), 0x0400); /* tie 3FF|400 -> 400 */
    TT_ASSERT_EQ(hccl_fp32_to_fp16(FLT_MIN), 0x0000);
    TT_ASSERT(hccl_fp16_to_fp32(0x0001) == 0x1p-24f);
    TT_ASSERT(hccl_fp16_to_fp32(0x03FF) == 1023 * 0x1p-24f);
    TT_ASSERT(hccl_fp16_to_fp32(0x7BFF) == 65504.0f);
    TT_ASSERT(isinf(hccl_fp16_to_fp32(0xFC00)) && hccl_fp16_to_fp32(0xFC00) < 0);
    TT_ASSERT(isnan(hccl_fp16_to_fp32(0x7C01)) && isnan(hccl_fp16_to_fp32(0xFE00)));
}

static void test_bf16(void)
{
    check_roundtrip(&BF16);
    check_encode_sweep(&BF16);
    TT_ASSERT_EQ(hccl_fp32_to_bf16(1.0f), 0x3F80);
    TT_ASSERT_EQ(hccl_fp32_to_bf16(1.0f + 0x1p-8f), 0x3F80);     /* tie -> even */
    TT_ASSERT_EQ(hccl_fp32_to_bf16(1.0f + 0x3p-8f), 0x3F82);     /* tie -> even (up) */
    TT_ASSERT_EQ(hccl_fp32_to_bf16(1.0f + 0x1.2p-8f), 0x3F81);   /* above the tie */
    TT_ASSERT_EQ(hccl_fp32_to_bf16(FLT_MAX), 0x7F80);            /* rounds past the max */
    TT_ASSERT_EQ(hccl_fp32_to_bf16(u2f(0x7F7F7FFFu)), 0x7F7F);   /* max finite bf16 */
    TT_ASSERT_EQ(hccl_fp32_to_bf16(-INFINITY), 0xFF80);
    TT_ASSERT_EQ(hccl_fp32_to_bf16(FLT_TRUE_MIN), 0x0000);
    TT_ASSERT_EQ(hccl_fp32_to_bf16(u2f(0x00018000u)), 0x0002);   /* subnormal tie -> even */
    uint16_t n = hccl_fp32_to_bf16(u2f(0x7F800001u));          /* NaN must not become inf */
    TT_ASSERT((n & 0x7FFF) > 0x7F80 && (n & 0x40));
    TT_ASSERT(isnan(hccl_bf16_to_fp32(hccl_fp32_to_bf16(u2f(0xFFFFFFFFu)))));
    TT_ASSERT(hccl_bf16_to_fp32(0x4049) == 3.140625f);
}

static void test_fp8(void)
{
    check_roundtrip(&E4M3);
    check_encode_sweep(&E4M3);
    check_roundtrip(&E5M2);
    check_encode_sweep(&E5M2);
    /* e4m3fn */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(1.0f), 0x38);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(-1.0f), 0xB8);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(448.0f), 0x7E);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(-448.0f), 0xFE);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(464.0f), 0x7E);  /* tie 448|480 -> 448 (even) */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(465.0f), 0x7F);  /* rounds past 448: NaN */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(480.0f), 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(1e30f), 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(-1e30f), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(INFINITY), 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(-INFINITY), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(NAN) & 0x7F, 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(0x1p-9f), 0x01);   /* smallest subnormal */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(0x1p-10f), 0x00);  /* tie -> 0 */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e4m3(0x1p-6f), 0x08);   /* smallest normal */
    TT_ASSERT(hccl_fp8e4m3_to_fp32(0x7E) == 448.0f);
    TT_ASSERT(hccl_fp8e4m3_to_fp32(0x78) == 256.0f);
    TT_ASSERT(isnan(hccl_fp8e4m3_to_fp32(0x7F)) && isnan(hccl_fp8e4m3_to_fp32(0xFF)));
    TT_ASSERT(hccl_fp8e4m3_to_fp32(0x07) == 7 * 0x1p-9f);
    /* e5m2 */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(1.0f), 0x3C);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(57344.0f), 0x7B);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(61439.0f), 0x7B);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(61440.0f), 0x7C);  /* tie 57344|inf -> inf (even) */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(1e30f), 0x7C);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(-INFINITY), 0xFC);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(NAN) & 0x7F, 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(0x1p-16f), 0x01);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(0x1p-17f), 0x00);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(1.125f), 0x3C);    /* tie 1|1.25 -> 1 */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e5m2(1.375f), 0x3E);    /* tie 1.25|1.5 -> 1.5 */
    TT_ASSERT(hccl_fp8e5m2_to_fp32(0x7B) == 57344.0f);
    TT_ASSERT(isinf(hccl_fp8e5m2_to_fp32(0x7C)) && isnan(hccl_fp8e5m2_to_fp32(0x7D)));
}

static void test_e8m0(void)
{
    int bad = 0;
    for (int c = 0; c < 256; c++) {
        float v = hccl_fp8e8m0_to_fp32((uint8_t)c);
        bad += !same_value(v, ref_e8m0_decode((uint8_t)c));
        if (c != 0xFF)
            bad += hccl_fp32_to_fp8e8m0(v) != c;
        else
            bad += hccl_fp32_to_fp8e8m0(v) != 0xFF;
        /* midpoints and their neighbours */
        if (c < 0xFE) {
            float mid = v * 1.5f;
            float vals[] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), nextafterf(v, 0),
                            nextafterf(v, INFINITY)};
            for (int k = 0; k < 5; k++)
                bad += hccl_fp32_to_fp8e8m0(vals[k]) != ref_e8m0_encode(vals[k]);
        }
    }
    for (int i = 0; i < 200000; i++) {
        float v = u2f((uint32_t)rnd());
        bad += hccl_fp32_to_fp8e8m0(v) != ref_e8m0_encode(v);
    }
    TT_ASSERT_MSG(bad == 0, "e8m0: %d mismatches", bad);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(1.0f), 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(2.0f), 0x80);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(0.5f), 0x7E);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(1.4f), 0x7F);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(1.6f), 0x80);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(1.5f), 0x80); /* tie -> even code */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(3.0f), 0x80); /* tie 0x80|0x81 -> 0x80 */
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(0.0f), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(-0.0f), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(-1.0f), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(NAN), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(INFINITY), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(FLT_MAX), 0xFF);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(0x1p127f), 0xFE);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(0x1p-127f), 0x00);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(0x1p-128f), 0x00);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(FLT_TRUE_MIN), 0x00);
    TT_ASSERT_EQ(hccl_fp32_to_fp8e8m0(0x1p-126f), 0x01);
    TT_ASSERT(hccl_fp8e8m0_to_fp32(0x7F) == 1.0f && hccl_fp8e8m0_to_fp32(0x00) == 0x1p-127f);
    TT_ASSERT(hccl_fp8e8m0_to_fp32(0xFE) == 0x1p127f && isnan(hccl_fp8e8m0_to_fp32(0xFF)));
}

/* ---------------- kernels ---------------- */

enum { N = 400 };

static int is_signed_int(int dt)
{
    return dt == HCCL_DATA_TYPE_INT8 || dt == HCCL_DATA_TYPE_INT16 || dt == HCCL_DATA_TYPE_INT32 ||
           dt == HCCL_DATA_TYPE_INT64 || dt == HCCL_DATA_TYPE_INT128;
}
static int is_int(int dt)
{
    return is_signed_int(dt) || dt == HCCL_DATA_TYPE_UINT8 || dt == HCCL_DATA_TYPE_UINT16 ||
           dt == HCCL_DATA_TYPE_UINT32 || dt == HCCL_DATA_TYPE_UINT64;
}

static i128 load_int(const unsigned char *p, size_t w, int sgn)
{
    u128 u = 0;
    memcpy(&u, p, w); /* little-endian */
    if (sgn && w < 16 && (u >> (8 * w - 1)) & 1)
        u |= ~(u128)0 << (8 * w);
    return (i128)u;
}

static void store_int(unsigned char *p, size_t w, i128 v)
{
    memcpy(p, &v, w);
}

/* the reference result of one element (for floats, any NaN encoding stands for NaN) */
static void ref_elem(int dt, int op, const unsigned char *x, const unsigned char *y, unsigned char *r)
{
    size_t w = hccl_dtype_size((HcclDataType)dt);
    if (is_int(dt)) {
        int s = is_signed_int(dt);
        i128 a = load_int(x, w, s), b = load_int(y, w, s), v;
        if (op == 0)
            v = (i128)((u128)a + (u128)b);
        else if (op == 1)
            v = (i128)((u128)a * (u128)b);
        else if (op == 2)
            v = a > b ? a : b;
        else
            v = a < b ? a : b;
        store_int(r, w, v);
        return;
    }
    if (dt == HCCL_DATA_TYPE_FP64) {
        double a, b, v;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        if (op == 0)
            v = a + b;
        else if (op == 1)
            v = a * b;
        else if (isnan(a) || isnan(b))
            v = NAN;
        else
            v = op == 2 ? fmax(a, b) : fmin(a, b);
        memcpy(r, &v, 8);
        return;
    }
    if (dt == HCCL_DATA_TYPE_FP8E8M0) {
        double a = ref_e8m0_decode(*x), b = ref_e8m0_decode(*y), v;
        if (op == 0)
            v = (float)a + (float)b; /* computed in fp32 by contract */
        else if (op == 1)
            v = a * b;               /* exact (double covers 2^-254 .. 2^254) */
        else if (isnan(a) || isnan(b))
            v = NAN;
        else
            v = op == 2 ? fmax(a, b) : fmin(a, b);
        *r = ref_e8m0_encode(v);
        return;
    }
    const fmt_t *f = dt == HCCL_DATA_TYPE_FP16 ? &F16 : dt == HCCL_DATA_TYPE_BFP16 ? &BF16
                   : dt == HCCL_DATA_TYPE_FP8E4M3 ? &E4M3 : dt == HCCL_DATA_TYPE_FP8E5M2 ? &E5M2 : NULL;
    float a, b, v;
    if (f) {
        uint32_t ca = 0, cb = 0;
        memcpy(&ca, x, w);
        memcpy(&cb, y, w);
        a = (float)ref_decode(f, ca);
        b = (float)ref_decode(f, cb);
    } else {
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
    }
    if (op == 0)
        v = a + b;
    else if (op == 1)
        v = a * b;
    else if (isnan(a) || isnan(b))
        v = NAN;
    else
        v = op == 2 ? fmaxf(a, b) : fminf(a, b);
    if (f) {
        uint32_t c = ref_encode(f, v);
        memcpy(r, &c, w);
    } else {
        memcpy(r, &v, 4);
    }
}

/* value of an element as double (NaN-aware comparison of float results) */
static double elem_value(int dt, const unsigned char *p)
{
    uint32_t c = 0;
    switch (dt) {
    case HCCL_DATA_TYPE_FP32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case HCCL_DATA_TYPE_FP64: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    case HCCL_DATA_TYPE_FP8E8M0:
        return ref_e8m0_decode(*p);
    case HCCL_DATA_TYPE_FP16:
        memcpy(&c, p, 2);
        return ref_decode(&F16, c);
    case HCCL_DATA_TYPE_BFP16:
        memcpy(&c, p, 2);
        return ref_decode(&BF16, c);
    case HCCL_DATA_TYPE_FP8E4M3:
        return ref_decode(&E4M3, *p);
    case HCCL_DATA_TYPE_FP8E5M2:
        return ref_decode(&E5M2, *p);
    }
    return 0;
}

static int elem_equal(int dt, const unsigned char *got, const unsigned char *want)
{
    size_t w = hccl_dtype_size((HcclDataType)dt);
    if (is_int(dt))
        return memcmp(got, want, w) == 0;
    return same_value(elem_value(dt, got), elem_value(dt, want));
}

/* fills n elements of a and b: special pairs first, then random values */
static void fill_inputs(int dt, unsigned char *a, unsigned char *b, size_t n)
{
    size_t w = hccl_dtype_size((HcclDataType)dt);
    for (size_t i = 0; i < n * w; i++) {
        a[i] = (unsigned char)rnd();
        b[i] = (unsigned char)rnd();
    }
    if (is_int(dt)) {
        int s = is_signed_int(dt);
        u128 umax = ~(u128)0 >> (128 - 8 * w);       /* 2^bits - 1 */
        i128 smax = (i128)(umax >> 1);                /* 2^(bits-1) - 1 */
        i128 vmin = s ? -smax - 1 : 0;
        i128 vmax = s ? smax : (i128)umax;            /* uint128: all ones, stored as -1 */
        i128 sp[] = {vmin, vmax, -1, 0, 1, 2, vmin + 1, vmax - 1};
        size_t k = 0;
        for (size_t i = 0; i < 8; i++)
            for (size_t j = 0; j < 8 && k < n; j++, k++) {
                store_int(a + k * w, w, sp[i]);
                store_int(b + k * w, w, sp[j]);
            }
        /* small numbers too, so that products do not always wrap */
        for (; k < n && k < 128; k++) {
            store_int(a + k * w, w, (i128)(int)(rnd() % 200) - 100);
            store_int(b + k * w, w, (i128)(int)(rnd() % 200) - 100);
        }
        return;
    }
    if (dt == HCCL_DATA_TYPE_FP32 || dt == HCCL_DATA_TYPE_FP64) {
        double sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -2.5, FLT_MAX, -FLT_MAX, 1e-40, 3.0};
        size_t nsp = sizeof sp / sizeof sp[0], k = 0;
        for (size_t i = 0; i < n; i++) {
            double x, y;
            if (k < nsp * nsp) {
                x = sp[k / nsp];
                y = sp[k % nsp];
                k++;
            } else {
                x = ((double)(rnd() % 2000000) - 1000000.0) / 64.0;
                y = ((double)(rnd() % 2000000) - 1000000.0) / 128.0;
            }
            if (dt == HCCL_DATA_TYPE_FP32) {
                float fx = (float)x, fy = (float)y;
                memcpy(a + i * 4, &fx, 4);
                memcpy(b + i * 4, &fy, 4);
            } else {
                memcpy(a + i * 8, &x, 8);
                memcpy(b + i * 8, &y, 8);
            }
        }
        return;
    }
    if (w == 1) { /* fp8: exhaustive when n covers all pairs */
        for (size_t i = 0; i < n; i++) {
            a[i] = (unsigned char)(i >> 8);
            b[i] = (unsigned char)i;
        }
        return;
    }
    /* fp16 / bf16: random bit patterns, plus neighbours (close exponents, ties) */
    for (size_t i = 0; i < n; i += 2) {
        uint16_t x;
        memcpy(&x, a + i * 2, 2);
        uint16_t y = (uint16_t)(x + (rnd() % 64) - 32);
        memcpy(b + i * 2, &y, 2);
        if (i + 1 < n) {
            uint16_t z = (uint16_t)(x ^ 0x8000u ^ (rnd() % 16)); /* near-cancellation */
            memcpy(b + (i + 1) * 2, &z, 2);
            memcpy(a + (i + 1) * 2, &x, 2);
        }
    }
    static const uint16_t f16sp[][2] = {{0x6800, 0x3C00}, /* 2048 + 1 */
                                        {0x7BFF, 0x7BFF}, /* max + max -> inf */
                                        {0x7C00, 0xFC00}, /* inf - inf -> NaN */
                                        {0x7E00, 0x3C00}, {0x3C00, 0x7E00}, {0x0001, 0x8001}, {0x0001, 0x0001}};
    if (dt == HCCL_DATA_TYPE_FP16)
        for (size_t i = 0; i < sizeof f16sp / sizeof f16sp[0] && i < n; i++) {
            memcpy(a + i * 2, &f16sp[i][0], 2);
            memcpy(b + i * 2, &f16sp[i][1], 2);
        }
}

static void check_kernel(int dt, int op, size_t n)
{
    size_t w = hccl_dtype_size((HcclDataType)dt);
    hccl_reduce_fn fn = hccl_reduce_get((HcclDataType)dt, (HcclReduceOp)op);
    TT_ASSERT_MSG(fn != NULL, "%s %s", hccl_dtype_name((HcclDataType)dt), hccl_redop_name((HcclReduceOp)op));
    if (!fn)
        return;
    unsigned char *a = malloc(n * w + 1), *b = malloc(n * w), *d = malloc(n * w + 1), *r = malloc(w);
    unsigned char *ia = malloc(n * w), *ib = malloc(n * w);
    fill_inputs(dt, a, b, n);
    fn(d, a, b, n);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        ref_elem(dt, op, a + i * w, b + i * w, r);
        if (!elem_equal(dt, d + i * w, r)) {
            if (bad++ < 5)
                fprintf(stderr, "%s %s [%zu]: a=%.17g b=%.17g got %.17g want %.17g (0x%02x.. vs 0x%02x..)\n",
                        hccl_dtype_name((HcclDataType)dt), hccl_redop_name((HcclReduceOp)op), i,
                        elem_value(dt, a + i * w), elem_value(dt, b + i * w), elem_value(dt, d + i * w),
                        elem_value(dt, r), d[i * w], r[0]);
        }
    }
    TT_ASSERT_MSG(bad == 0, "%s %s: %d of %zu elements wrong", hccl_dtype_name((HcclDataType)dt),
                  hccl_redop_name((HcclReduceOp)op), bad, n);
    /* aliasing: dst == a, dst == b, dst == a == b */
    memcpy(ia, a, n * w);
    memcpy(ib, b, n * w);
    fn(ia, ia, b, n);
    TT_ASSERT_MSG(memcmp(ia, d, n * w) == 0, "%s %s: dst == a", hccl_dtype_name((HcclDataType)dt),
                  hccl_redop_name((HcclReduceOp)op));
    fn(ib, a, ib, n);
    TT_ASSERT_MSG(memcmp(ib, d, n * w) == 0, "%s %s: dst == b", hccl_dtype_name((HcclDataType)dt),
                  hccl_redop_name((HcclReduceOp)op));
    memcpy(ia, a, n * w);
    memcpy(ib, a, n * w);
    fn(ib, a, a, n);
    fn(ia, ia, ia, n);
    TT_ASSERT(memcmp(ia, ib, n * w) == 0);
    /* unaligned buffers (offset by one byte) give the same bytes */
    unsigned char *ua = malloc(n * w + 1), *ub = malloc(n * w + 1), *ud = malloc(n * w + 1);
    memcpy(ua + 1, a, n * w);
    memcpy(ub + 1, b, n * w);
    fn(ud + 1, ua + 1, ub + 1, n);
    TT_ASSERT_MSG(memcmp(ud + 1, d, n * w) == 0, "%s %s: unaligned", hccl_dtype_name((HcclDataType)dt),
                  hccl_redop_name((HcclReduceOp)op));
    /* count 0 writes nothing; count 1 writes one element only */
    memset(ud, 0xA5, n * w + 1);
    fn(ud, a, b, 0);
    TT_ASSERT(ud[0] == 0xA5);
    fn(ud, a, b, 1);
    TT_ASSERT(memcmp(ud, d, w) == 0 && ud[w] == 0xA5);
    free(ua);
    free(ub);
    free(ud);
    free(ia);
    free(ib);
    free(a);
    free(b);
    free(d);
    free(r);
}

static void test_kernels(void)
{
    for (int dt = 0; dt < 18; dt++) {
        if (dt == 13 || dt == HCCL_DATA_TYPE_HIF8)
            continue;
        size_t n = hccl_dtype_size((HcclDataType)dt) == 1 ? 65536 : dt == HCCL_DATA_TYPE_FP16 ||
                   dt == HCCL_DATA_TYPE_BFP16 ? 20000 : N;
        for (int op = 0; op < 4; op++)
            check_kernel(dt, op, n);
    }
}

/* a few results spelled out */
static void test_known_results(void)
{
    uint16_t x[3] = {0x6800, 0x6800, 0x3C00}, y[3] = {0x3C00, 0x4200, 0x3C00}, d[3];
    hccl_reduce_get(HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM)(d, x, y, 3);
    TT_ASSERT_EQ(d[0], 0x6800); /* 2048 + 1 = 2048 in fp16 */
    TT_ASSERT_EQ(d[1], 0x6802); /* 2048 + 3 = 2051 -> 2052 */
    TT_ASSERT_EQ(d[2], 0x4000); /* 1 + 1 = 2 */

    int32_t ia[2] = {INT32_MAX, INT32_MIN}, ib[2] = {1, -1}, id[2];
    hccl_reduce_get(HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM)(id, ia, ib, 2);
    TT_ASSERT(id[0] == INT32_MIN && id[1] == INT32_MAX);
    hccl_reduce_get(HCCL_DATA_TYPE_INT32, HCCL_REDUCE_PROD)(id, ia, ib, 2);
    TT_ASSERT(id[0] == INT32_MAX && id[1] == INT32_MIN);

    uint16_t ua[1] = {0xFFFF}, ub[1] = {0xFFFF}, ud[1];
    hccl_reduce_get(HCCL_DATA_TYPE_UINT16, HCCL_REDUCE_PROD)(ud, ua, ub, 1);
    TT_ASSERT_EQ(ud[0], 1);

    float fa[4] = {NAN, 1.0f, 2.0f, -0.5f}, fb[4] = {1.0f, NAN, 1.0f, -3.0f}, fd[4];
    hccl_reduce_get(HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX)(fd, fa, fb, 4);
    TT_ASSERT(isnan(fd[0]) && isnan(fd[1]) && fd[2] == 2.0f && fd[3] == -0.5f);
    hccl_reduce_get(HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MIN)(fd, fa, fb, 4);
    TT_ASSERT(isnan(fd[0]) && isnan(fd[1]) && fd[2] == 1.0f && fd[3] == -3.0f);

    uint8_t e8a[4] = {0x7F, 0x00, 0xFE, 0x80}, e8b[4] = {0x7F, 0x00, 0xFE, 0xFF}, e8d[4];
    hccl_reduce_get(HCCL_DATA_TYPE_FP8E8M0, HCCL_REDUCE_PROD)(e8d, e8a, e8b, 4);
    TT_ASSERT(e8d[0] == 0x7F && e8d[1] == 0x00 && e8d[2] == 0xFF && e8d[3] == 0xFF); /* 2^254 > 2^127 */
    e8b[2] = 0x80;
    hccl_reduce_get(HCCL_DATA_TYPE_FP8E8M0, HCCL_REDUCE_PROD)(e8d, e8a, e8b, 4);
    TT_ASSERT_EQ(e8d[2], 0xFF); /* 2^127 * 2 */
    e8b[2] = 0xFE;
    hccl_reduce_get(HCCL_DATA_TYPE_FP8E8M0, HCCL_REDUCE_SUM)(e8d, e8a, e8b, 4);
    TT_ASSERT(e8d[0] == 0x80 && e8d[1] == 0x01 && e8d[2] == 0xFF && e8d[3] == 0xFF); /* 2^128: inf */
    e8b[2] = 0x81; /* 2^127 + 4 rounds to 2^127 in fp32 */
    hccl_reduce_get(HCCL_DATA_TYPE_FP8E8M0, HCCL_REDUCE_SUM)(e8d, e8a, e8b, 4);
    TT_ASSERT_EQ(e8d[2], 0xFE);

    uint8_t qa[2] = {0x7E, 0x38}, qb[2] = {0x7E, 0x38}, qd[2];
    hccl_reduce_get(HCCL_DATA_TYPE_FP8E4M3, HCCL_REDUCE_SUM)(qd, qa, qb, 2);
    TT_ASSERT(qd[0] == 0x7F && qd[1] == 0x40); /* 448 + 448 -> NaN; 1 + 1 = 2 */
    uint8_t pa[1] = {0x7B}, pd[1];
    hccl_reduce_get(HCCL_DATA_TYPE_FP8E5M2, HCCL_REDUCE_SUM)(pd, pa, pa, 1);
    TT_ASSERT_EQ(pd[0], 0x7C); /* 57344 * 2 -> inf */

    __extension__ unsigned __int128 big = ~(unsigned __int128)0 >> 1; /* INT128_MAX */
    __extension__ __int128 la[1], lb[1] = {1}, ld[1];
    memcpy(la, &big, 16);
    hccl_reduce_get(HCCL_DATA_TYPE_INT128, HCCL_REDUCE_SUM)(ld, la, lb, 1);
    TT_ASSERT(ld[0] < 0 && ld[0] == -la[0] - 1);
}

/* MAX/MIN order -0 < +0 whichever operand comes first: max(+0, -0) = max(-0, +0) = +0,
 * min = -0 (else the sign of a zero result depends on an algorithm's reduction order),
 * for every float type with a sign. */
static void test_signed_zeros(void)
{
    static const struct {
        HcclDataType dt;
        size_t w;
        int top; /* byte holding the sign (little-endian) */
    } types[] = {{HCCL_DATA_TYPE_FP32, 4, 3},    {HCCL_DATA_TYPE_FP64, 8, 7},    {HCCL_DATA_TYPE_FP16, 2, 1},
                 {HCCL_DATA_TYPE_BFP16, 2, 1},   {HCCL_DATA_TYPE_FP8E4M3, 1, 0}, {HCCL_DATA_TYPE_FP8E5M2, 1, 0}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const size_t w = types[t].w;
        unsigned char a[4 * 8] = {0}, b[4 * 8] = {0}, d[4 * 8];
        /* pairs (+0,-0), (-0,+0), (-0,-0), (+0,+0) */
        a[1 * w + types[t].top] = a[2 * w + types[t].top] = 0x80;
        b[0 * w + types[t].top] = b[2 * w + types[t].top] = 0x80;
        for (int op = HCCL_REDUCE_MAX; op <= HCCL_REDUCE_MIN; op++) {
            hccl_reduce_get(types[t].dt, (HcclReduceOp)op)(d, a, b, 4);
            for (int i = 0; i < 4; i++) {
                int neg = d[i * w + types[t].top] == 0x80, want = op == HCCL_REDUCE_MAX ? i == 2 : i != 3;
                TT_ASSERT_MSG(neg == want, "%s %s pair %d: %s zero", hccl_dtype_name(types[t].dt),
                              hccl_redop_name((HcclReduceOp)op), i, neg ? "negative" : "positive");
            }
        }
    }
}

/* Every float kernel returns NaN as the type's canonical quiet NaN (what fp32 NAN converts
 * to), whatever the NaN inputs' signs and payloads and their order, and NaN results
 * made from non-NaN inputs (inf - inf, 0 * inf, e4m3 overflow) too: otherwise which NaN
 * comes out depends on an algorithm's reduction order. Every op, both operand orders,
 * every pair of a list of specials (NaNs of both signs, signalling and payload ones,
 * +-inf, +-0, +-max, 1). */
static void test_canonical_nan(void)
{
    static const struct {
        HcclDataType dt;
        size_t w;
        uint64_t qnan;
        uint64_t v[12];
    } types[] = {
        {HCCL_DATA_TYPE_FP32, 4, 0x7FC00000u,
         {0x7FC00000u, 0xFFC00000u, 0x7FC12345u, 0xFFD00001u, 0x7F800001u, 0xFF800001u, 0x7F800000u, 0xFF800000u,
          0x00000000u, 0x80000000u, 0x7F7FFFFFu, 0x3F800000u}},
        {HCCL_DATA_TYPE_FP64, 8, 0x7FF8000000000000ull,
         {0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF8000000012345ull, 0xFFF8000100000001ull,
          0x7FF0000000000001ull, 0xFFF0000000000001ull, 0x7FF0000000000000ull, 0xFFF0000000000000ull, 0,
          0x8000000000000000ull, 0x7FEFFFFFFFFFFFFFull, 0x3FF0000000000000ull}},
        {HCCL_DATA_TYPE_FP16, 2, 0x7E00,
         {0x7E00, 0xFE00, 0x7E45, 0xFF01, 0x7C01, 0xFC01, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x7BFF, 0x3C00}},
        {HCCL_DATA_TYPE_BFP16, 2, 0x7FC0,
         {0x7FC0, 0xFFC0, 0x7FC5, 0xFF81, 0x7F81, 0xFF81, 0x7F80, 0xFF80, 0x0000, 0x8000, 0x7F7F, 0x3F80}},
        {HCCL_DATA_TYPE_FP8E4M3, 1, 0x7F, {0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0xFF, 0x7E, 0xFE, 0x00, 0x80, 0x7E, 0x38}},
        {HCCL_DATA_TYPE_FP8E5M2, 1, 0x7F, {0x7E, 0xFE, 0x7D, 0xFF, 0x7F, 0xFD, 0x7C, 0xFC, 0x00, 0x80, 0x7B, 0x3C}},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const size_t w = types[t].w;
        unsigned char a[144 * 8], b[144 * 8], d[144 * 8];
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++) {
                memcpy(a + (size_t)(i * 12 + j) * w, &types[t].v[i], w); /* little-endian */
                memcpy(b + (size_t)(i * 12 + j) * w, &types[t].v[j], w);
            }
        for (int op = 0; op < 4; op++) {
            hccl_reduce_fn fn = hccl_reduce_get(types[t].dt, (HcclReduceOp)op);
            fn(d, a, b, 144);
            int bad = 0;
            for (int k = 0; k < 144 && !bad; k++) {
                uint64_t got = 0, swapped = 0;
                memcpy(&got, d + (size_t)k * w, w);
                int i = k / 12, j = k % 12;
                unsigned char dd[8];
                fn(dd, b + (size_t)k * w, a + (size_t)k * w, 1);
                memcpy(&swapped, dd, w);
                int is_nan = 0;
                switch (types[t].dt) {
                case HCCL_DATA_TYPE_FP32: is_nan = isnan(u2f((uint32_t)got)); break;
                case HCCL_DATA_TYPE_FP64: is_nan = (got & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; break;
                case HCCL_DATA_TYPE_FP16: is_nan = isnan(hccl_fp16_to_fp32((uint16_t)got)); break;
                case HCCL_DATA_TYPE_BFP16: is_nan = isnan(hccl_bf16_to_fp32((uint16_t)got)); break;
                case HCCL_DATA_TYPE_FP8E4M3: is_nan = isnan(hccl_fp8e4m3_to_fp32((uint8_t)got)); break;
                default: is_nan = isnan(hccl_fp8e5m2_to_fp32((uint8_t)got)); break;
                }
                if ((is_nan && got != types[t].qnan) || swapped != got) {
                    TT_ASSERT_MSG(0, "%s %s(0x%llx, 0x%llx) = 0x%llx, swapped 0x%llx; NaN must be 0x%llx",
                                  hccl_dtype_name(types[t].dt), hccl_redop_name((HcclReduceOp)op),
                                  (unsigned long long)types[t].v[i], (unsigned long long)types[t].v[j],
                                  (unsigned long long)got, (unsigned long long)swapped,
                                  (unsigned long long)types[t].qnan);
                    bad = 1;
                }
            }
        }
    }
}

/* hccl_reduce_in_order_own against hccl_reduce_in_order with every input in its slot:
 * fp32 sums whose order shows in the bits (big and small values), n = 2..5, every
 * self, own apart from dst, own == dst (in place), own overlapping dst partly. */
static void test_in_order_own(void)
{
    enum { C = 37, STRIDE = 40 * 4, NMAX = 5 };
    hccl_reduce_fn fn = hccl_reduce_get(HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM);
    float input[NMAX][C];
    for (int j = 0; j < NMAX; j++)
        for (int i = 0; i < C; i++) input[j][i] = (j % 2 ? 1e8f : 1.0f) * (float)(1 + (i * 7 + j * 3) % 11) / 3.0f;
    for (uint32_t n = 2; n <= NMAX; n++)
        for (uint32_t self = 0; self < n; self++)
            for (int layout = 0; layout < 3; layout++) {
                _Alignas(64) char all[NMAX * STRIDE], slots[NMAX * STRIDE];
                float want[C], buf[3 * C];
                memset(all, 0, sizeof all);
                for (uint32_t j = 0; j < n; j++) memcpy(all + STRIDE * j, input[j], sizeof input[j]);
                hccl_reduce_in_order(fn, want, all, STRIDE, n, C);
                memcpy(slots, all, sizeof slots);
                memset(slots + STRIDE * self, 0x7f, STRIDE); /* its slot holds nothing */
                float *own = buf + C, *dst = layout == 0 ? buf + 2 * C : layout == 1 ? own : own + 5;
                memcpy(own, input[self], sizeof input[self]);
                hccl_reduce_in_order_own(fn, dst, slots, STRIDE, n, C, sizeof want, self, own);
                TT_ASSERT_MSG(memcmp(dst, want, sizeof want) == 0, "n %u, self %u, layout %d: not the in-order result",
                              n, self, layout);
            }
}

int main(void)
{
    test_sizes_names();
    test_fp16();
    test_bf16();
    test_fp8();
    test_e8m0();
    test_kernels();
    test_known_results();
    test_signed_zeros();
    test_canonical_nan();
    test_in_order_own();
    return tt_report("test_reduce");
}
