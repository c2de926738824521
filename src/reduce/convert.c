/*
 * convert.c - software, bit-exact conversions between fp32 and the narrow float types
 * (fp16, bf16, fp8 E4M3fn, fp8 E5M2, fp8 E8M0). All fp32 -> narrow conversions round
 * to nearest, ties to even.
 *
 * Formats (s = sign, e = exponent, m = mantissa bits):
 *   fp16    s1 e5 m10, bias 15, IEEE binary16: subnormals, inf (e=31,m=0), NaN (e=31,m!=0).
 *           Overflow rounds to inf (65520 -> inf, 65519.99 -> 65504).
 *   bf16    the top 16 bits of fp32 (s1 e8 m7). NaN stays NaN and is made quiet.
 *   e4m3fn  s1 e4 m3, bias 7, no infinity: e=15 is a normal binade except m=7, which is
 *           NaN (0x7F / 0xFF). Max finite 448 (0x7E). Like PyTorch's float8_e4m3fn cast,
 *           a result that rounds beyond 448 (|x| > 464, or |x| >= 480) and +-inf become
 *           NaN with the input's sign.
 *   e5m2    s1 e5 m2, bias 15, IEEE-like (the top byte of an fp16). Max finite 57344;
 *           values that round beyond it become inf (|x| >= 61440), NaN -> 0x7F | sign.
 *   e8m0    unsigned, exponent only: v encodes 2^(v-127), v = 0..254; 0xFF is NaN; there
 *           is no zero and no sign. fp32 -> e8m0 (this library's definition): NaN, values
 *           <= 0 (both zeros included) and values > 2^127 (inf included) give 0xFF; values
 *           below 2^-127 give 0x00; anything else rounds to the nearest power of two in
 *           linear terms (x in [2^k, 2^(k+1)) goes up when x > 1.5 * 2^k), and an exact tie
 *           x = 1.5 * 2^k goes to the even encoding (the result whose byte has LSB 0, as
 *           IEEE round-to-nearest-even picks the even significand): 1.5 -> 2.0 (0x80),
 *           3.0 -> 2.0 (0x80).
 *
 * fp16, e4m3 and e5m2 share one rounding routine (narrow_round): it places the fp32
 * significand (with its implicit bit) at the target's precision, shifting further right
 * for target subnormals, and rounds the dropped bits to nearest even; a carry out of the
 * mantissa lands in the exponent field, which is the correct encoding in every case
 * (largest subnormal -> smallest normal, largest finite -> inf/NaN pattern).
 */
#include "reduce/reduce.h"

#include <string.h>

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * Rounds |x| (fp32 bits without sign, finite) to a format with ebits exponent bits
 * (bias 2^(ebits-1)-1) and mbits mantissa bits. Returns the unsigned encoding, or for a
 * value too large a code at or above the first inf/NaN pattern, which callers clamp.
 */
static uint32_t narrow_round(uint32_t absbits, int ebits, int mbits)
{
    const int bias = (1 << (ebits - 1)) - 1;
    int e32 = (int)(absbits >> 23);
    if (e32 == 0)
        return 0; /* fp32 zero or subnormal: far below every target's smallest subnormal */
    int te = e32 - 127 + bias; /* target biased exponent */
    if (te >= (1 << ebits))
        return 1u << (ebits + mbits); /* overflow, whatever the rounding: above every code */
    uint32_t sig = (absbits & 0x7FFFFFu) | 0x800000u; /* 24-bit significand */
    uint32_t r;
    int shift;
    if (te >= 1) {
        shift = 23 - mbits;
        r = ((uint32_t)te << mbits) | ((sig & 0x7FFFFFu) >> shift);
    } else {
        shift = 23 - mbits + (1 - te);
        if (shift > 24)
            return 0; /* below half the smallest subnormal */
        r = sig >> shift;
    }
    uint32_t rem = sig & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1)))
        r++;
    return r;
}

/* ---- fp16 ---- */

float hccl_fp16_to_fp32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1F;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1F)
        return u2f(sign | 0x7F800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return u2f(sign);
        /* subnormal: m * 2^-24, exact in fp32 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t hccl_fp32_to_fp16(float f)
{
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: keep the payload's top bits, set the quiet bit */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a == 0x7F800000u)
        return (uint16_t)(sign | 0x7C00u);
    uint32_t r = narrow_round(a, 5, 10);
    if (r >= 0x7C00u)
        r = 0x7C00u;
    return (uint16_t)(sign | r);
}

/* ---- bf16 ---- */

float hccl_bf16_to_fp32(uint16_t h)
{
    return u2f((uint32_t)h << 16);
}

uint16_t hccl_fp32_to_bf16(float f)
{
    uint32_t x = f2u(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x0040u);
    /* RNE on the low 16 bits; a carry propagates into the exponent (max -> inf) */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* ---- fp8 E4M3fn ---- */

float hccl_fp8e4m3_to_fp32(uint8_t v)
{
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t e = (v >> 3) & 0xF;
    uint32_t m = v & 0x7u;
    if (e == 0xF && m == 0x7)
        return u2f(sign | 0x7FC00000u);
    if (e == 0) {
        float s = (float)m * 0x1p-9f; /* subnormal: m/8 * 2^-6 */
        return sign ? -s : s;
    }
    return u2f(sign | ((e + 120) << 23) | (m << 20));
}

uint8_t hccl_fp32_to_fp8e4m3(float f)
{
    uint32_t x = f2u(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) /* inf and NaN: no infinity in this format */
        return (uint8_t)(sign | 0x7Fu);
    uint32_t r = narrow_round(a, 4, 3);
    if (r >= 0x7Fu) /* beyond 448 */
        r = 0x7Fu;
    return (uint8_t)(sign | r);
}

/* ---- fp8 E5M2 ---- */

float hccl_fp8e5m2_to_fp32(uint8_t v)
{
    return hccl_fp16_to_fp32((uint16_t)((uint16_t)v << 8));
}

uint8_t hccl_fp32_to_fp8e5m2(float f)
{
    uint32_t x = f2u(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return (uint8_t)(sign | 0x7Fu);
    if (a == 0x7F800000u)
        return (uint8_t)(sign | 0x7Cu);
    uint32_t r = narrow_round(a, 5, 2);
    if (r >= 0x7Cu)
        r = 0x7Cu;
    return (uint8_t)(sign | r);
}

/* ---- fp8 E8M0 ---- */

float hccl_fp8e8m0_to_fp32(uint8_t v)
{
    if (v == 0xFF)
        return u2f(0x7FC00000u);
    if (v == 0)
        return u2f(0x00400000u); /* 2^-127, an fp32 subnormal */
    return u2f((uint32_t)v << 23);
}

uint8_t hccl_fp32_to_fp8e8m0(float f)
{
    uint32_t x = f2u(f);
    /* NaN, negative, zeros (also -0) and > 2^127 (inf included) */
    if ((x >> 31) || x == 0 || x > 0x7F000000u)
        return 0xFF;
    if (x < 0x00400000u)
        return 0x00; /* below 2^-127 */
    if (x < 0x00800000u) { /* fp32 subnormal in [2^-127, 2^-126): midpoint 0x600000 */
        return x > 0x00600000u ? 0x01 : 0x00; /* the tie goes to the even 0x00 */
    }
    uint32_t e = x >> 23; /* 1..254 */
    uint32_t m = x & 0x7FFFFFu;
    if (m > 0x400000u || (m == 0x400000u && (e & 1u)))
        e++; /* e <= 253 here, since x <= 2^127 excludes e = 254 with m != 0 */
    return (uint8_t)e;
}
