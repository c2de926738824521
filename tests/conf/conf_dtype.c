/*
 * conf_dtype.c - element types for the conformance tests: sizes, names, codecs for the
 * low-precision floats (fp16, bf16, fp8 e4m3/e5m2/e8m0, written here from their
 * definitions so the tests depend on no library code), and the test inputs.
 *
 * Inputs of reductions are small integers (or powers of two for e8m0) chosen so that
 * every partial result of up to nranks inputs is exactly representable in the type:
 * integers are exact up to 2048 in fp16, 256 in bf16, 16 in e4m3 and 8 in e5m2, so SUM
 * inputs are bounded by limit / nranks; PROD inputs are 1, -1, 2 and rarely 0 with at
 * most two 2s and two -1s per element (|product| <= 4); MAX/MIN use the whole exact
 * range (large unsigned values catch a signed comparison). e8m0 holds only powers of
 * two: PROD of {1, 2, 1/2} and MAX/MIN are exact; SUM is exact only for nranks <= 2 with
 * the same input on both ranks.
 */
#include "conf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const HcclDataType conf_all_dtypes[CONF_NDTYPES] = {
    HCCL_DATA_TYPE_INT8,    HCCL_DATA_TYPE_INT16,   HCCL_DATA_TYPE_INT32,   HCCL_DATA_TYPE_FP16,
    HCCL_DATA_TYPE_FP32,    HCCL_DATA_TYPE_INT64,   HCCL_DATA_TYPE_UINT64,  HCCL_DATA_TYPE_UINT8,
    HCCL_DATA_TYPE_UINT16,  HCCL_DATA_TYPE_UINT32,  HCCL_DATA_TYPE_FP64,    HCCL_DATA_TYPE_BFP16,
    HCCL_DATA_TYPE_INT128,  HCCL_DATA_TYPE_HIF8,    HCCL_DATA_TYPE_FP8E4M3, HCCL_DATA_TYPE_FP8E5M2,
    HCCL_DATA_TYPE_FP8E8M0,
};

const HcclReduceOp conf_all_ops[4] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};

size_t conf_dt_size(HcclDataType dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8:
    case HCCL_DATA_TYPE_HIF8:
    case HCCL_DATA_TYPE_FP8E4M3:
    case HCCL_DATA_TYPE_FP8E5M2:
    case HCCL_DATA_TYPE_FP8E8M0: return 1;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
    case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP64: return 8;
    case HCCL_DATA_TYPE_INT128: return 16;
    default: return 0;
    }
}

const char *conf_dt_name(HcclDataType dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return "int8";
    case HCCL_DATA_TYPE_INT16: return "int16";
    case HCCL_DATA_TYPE_INT32: return "int32";
    case HCCL_DATA_TYPE_FP16: return "fp16";
    case HCCL_DATA_TYPE_FP32: return "fp32";
    case HCCL_DATA_TYPE_INT64: return "int64";
    case HCCL_DATA_TYPE_UINT64: return "uint64";
    case HCCL_DATA_TYPE_UINT8: return "uint8";
    case HCCL_DATA_TYPE_UINT16: return "uint16";
    case HCCL_DATA_TYPE_UINT32: return "uint32";
    case HCCL_DATA_TYPE_FP64: return "fp64";
    case HCCL_DATA_TYPE_BFP16: return "bf16";
    case HCCL_DATA_TYPE_INT128: return "int128";
    case HCCL_DATA_TYPE_HIF8: return "hif8";
    case HCCL_DATA_TYPE_FP8E4M3: return "fp8e4m3";
    case HCCL_DATA_TYPE_FP8E5M2: return "fp8e5m2";
    case HCCL_DATA_TYPE_FP8E8M0: return "fp8e8m0";
    default: return "?";
    }
}

const char *conf_op_name(HcclReduceOp op)
{
    switch (op) {
    case HCCL_REDUCE_SUM: return "sum";
    case HCCL_REDUCE_PROD: return "prod";
    case HCCL_REDUCE_MAX: return "max";
    case HCCL_REDUCE_MIN: return "min";
    default: return "?";
    }
}

int conf_dt_reducible(HcclDataType dt)
{
    return dt != HCCL_DATA_TYPE_HIF8 && conf_dt_size(dt) != 0;
}

static int dt_unsigned(HcclDataType dt)
{
    return dt == HCCL_DATA_TYPE_UINT8 || dt == HCCL_DATA_TYPE_UINT16 || dt == HCCL_DATA_TYPE_UINT32 ||
           dt == HCCL_DATA_TYPE_UINT64 || dt == HCCL_DATA_TYPE_FP8E8M0;
}

/* ---- minifloat codecs ---------------------------------------------------------- */

typedef struct {
    int eb, mb, bias;
    int ieee; /* 1: all-ones exponent is inf/NaN; 0: e4m3fn, only S.1111.111 is NaN */
} mini_fmt;

static const mini_fmt F16 = {5, 10, 15, 1}, BF16 = {8, 7, 127, 1}, E4M3 = {4, 3, 7, 0}, E5M2 = {5, 2, 15, 1};

/* Encodes a value that is exactly representable (the tests only use such values). */
static uint32_t mini_encode(double v, const mini_fmt *f)
{
    uint32_t sign = signbit(v) ? 1u : 0u, field, m;
    double a = fabs(v);
    int e;
    if (a == 0) return sign << (f->eb + f->mb);
    frexp(a, &e);
    int E = e - 1; /* a in [2^E, 2^(E+1)) */
    double mm;
    if (E + f->bias >= 1) {
        field = (uint32_t)(E + f->bias);
        mm = ldexp(ldexp(a, -E) - 1.0, f->mb);
    } else {
        field = 0;
        mm = ldexp(a, f->bias - 1 + f->mb);
    }
    m = (uint32_t)mm;
    if ((double)m != mm || field >= (1u << f->eb) || m >= (1u << f->mb)) {
        fprintf(stderr, "conf_dtype: test bug: %g is not exact in a %d/%d minifloat\n", v, f->eb, f->mb);
        abort();
    }
    return (sign << (f->eb + f->mb)) | (field << f->mb) | m;
}

static double mini_decode(uint32_t bits, const mini_fmt *f)
{
    uint32_t emax = (1u << f->eb) - 1, mmax = (1u << f->mb) - 1;
    uint32_t sign = (bits >> (f->eb + f->mb)) & 1u;
    uint32_t e = (bits >> f->mb) & emax, m = bits & mmax;
    double v;
    if (f->ieee && e == emax) v = m ? NAN : INFINITY;
    else if (!f->ieee && e == emax && m == mmax) v = NAN;
    else if (e) v = ldexp(1.0 + ldexp((double)m, -f->mb), (int)e - f->bias);
    else v = ldexp((double)m, 1 - f->bias - f->mb);
    return sign ? -v : v;
}

/* v rounded to the nearest value of format f, ties to even (no overflow in the tests). */
static double mini_round(double v, const mini_fmt *f)
{
    if (v == 0 || v != v) return v;
    int e;
    frexp(fabs(v), &e);
    int E = e - 1;
    if (E < 1 - f->bias) E = 1 - f->bias; /* subnormal quantum */
    double q = ldexp(1.0, E - f->mb);
    return rint(v / q) * q; /* rint: the default mode rounds half to even */
}

double conf_round(HcclDataType dt, double v)
{
    switch (dt) {
    case HCCL_DATA_TYPE_FP16: return mini_round(v, &F16);
    case HCCL_DATA_TYPE_BFP16: return mini_round(v, &BF16);
    case HCCL_DATA_TYPE_FP8E4M3: return mini_round(v, &E4M3);
    case HCCL_DATA_TYPE_FP8E5M2: return mini_round(v, &E5M2);
    case HCCL_DATA_TYPE_FP32: return (double)(float)v;
    default: return v;
    }
}

uint16_t conf_f32_to_f16(float f)
{
    return (uint16_t)mini_encode((double)f, &F16);
}

float conf_f16_to_f32(uint16_t h)
{
    return (float)mini_decode(h, &F16);
}

void conf_put(HcclDataType dt, void *p, double v)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_UINT8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_INT16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_UINT16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_INT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_UINT32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case HCCL_DATA_TYPE_UINT64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    case HCCL_DATA_TYPE_INT128: { __int128 x = (__int128)(int64_t)v; memcpy(p, &x, 16); break; }
    case HCCL_DATA_TYPE_FP32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_FP64: memcpy(p, &v, 8); break;
    case HCCL_DATA_TYPE_FP16: { uint16_t x = (uint16_t)mini_encode(v, &F16); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_BFP16: { uint16_t x = (uint16_t)mini_encode(v, &BF16); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_FP8E4M3: { uint8_t x = (uint8_t)mini_encode(v, &E4M3); memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_FP8E5M2: { uint8_t x = (uint8_t)mini_encode(v, &E5M2); memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_FP8E8M0: {
        int e;
        double fr = frexp(v, &e);
        if (v <= 0 || fr != 0.5 || e - 1 + 127 < 0 || e - 1 + 127 > 254) {
            fprintf(stderr, "conf_dtype: test bug: %g is not a power of two for e8m0\n", v);
            abort();
        }
        uint8_t x = (uint8_t)(e - 1 + 127);
        memcpy(p, &x, 1);
        break;
    }
    default:
        fprintf(stderr, "conf_dtype: test bug: conf_put on %s\n", conf_dt_name(dt));
        abort();
    }
}

double conf_get(HcclDataType dt, const void *p)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: { int8_t x; memcpy(&x, p, 1); return x; }
    case HCCL_DATA_TYPE_UINT8: { uint8_t x; memcpy(&x, p, 1); return x; }
    case HCCL_DATA_TYPE_INT16: { int16_t x; memcpy(&x, p, 2); return x; }
    case HCCL_DATA_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case HCCL_DATA_TYPE_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case HCCL_DATA_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case HCCL_DATA_TYPE_INT64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case HCCL_DATA_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case HCCL_DATA_TYPE_INT128: {
        __int128 x;
        memcpy(&x, p, 16);
        if (x > ((__int128)1 << 62) || x < -((__int128)1 << 62)) return NAN; /* out of test range */
        return (double)(int64_t)x;
    }
    case HCCL_DATA_TYPE_FP32: { float x; memcpy(&x, p, 4); return x; }
    case HCCL_DATA_TYPE_FP64: { double x; memcpy(&x, p, 8); return x; }
    case HCCL_DATA_TYPE_FP16: { uint16_t x; memcpy(&x, p, 2); return mini_decode(x, &F16); }
    case HCCL_DATA_TYPE_BFP16: { uint16_t x; memcpy(&x, p, 2); return mini_decode(x, &BF16); }
    case HCCL_DATA_TYPE_FP8E4M3: { uint8_t x; memcpy(&x, p, 1); return mini_decode(x, &E4M3); }
    case HCCL_DATA_TYPE_FP8E5M2: { uint8_t x; memcpy(&x, p, 1); return mini_decode(x, &E5M2); }
    case HCCL_DATA_TYPE_FP8E8M0: {
        uint8_t x;
        memcpy(&x, p, 1);
        return x == 0xff ? NAN : ldexp(1.0, (int)x - 127);
    }
    default: return NAN;
    }
}

/* ---- inputs ----------------------------------------------------------------------- */

uint64_t conf_hash(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full ^ c;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void conf_pattern(void *p, size_t n, uint64_t seed, uint64_t rank)
{
    unsigned char *c = p;
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        if ((i & 7) == 0) h = conf_hash(seed, rank, i >> 3);
        c[i] = (unsigned char)(h >> ((i & 7) * 8));
    }
}

/* Largest magnitude such that partial sums of n inputs stay exact. */
static double sum_limit(HcclDataType dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return 127;
    case HCCL_DATA_TYPE_UINT8: return 255;
    case HCCL_DATA_TYPE_INT16: return 32767;
    case HCCL_DATA_TYPE_UINT16: return 65535;
    case HCCL_DATA_TYPE_FP16: return 2048;
    case HCCL_DATA_TYPE_BFP16: return 256;
    case HCCL_DATA_TYPE_FP8E4M3: return 16;
    case HCCL_DATA_TYPE_FP8E5M2: return 8;
    default: return 1e6;
    }
}

/* Range of MAX/MIN inputs (any value is exact there). */
static double minmax_range(HcclDataType dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return 127;
    case HCCL_DATA_TYPE_UINT8: return 255;
    case HCCL_DATA_TYPE_INT16: return 32767;
    case HCCL_DATA_TYPE_UINT16: return 65535;
    case HCCL_DATA_TYPE_INT32: return 2147483647.0;
    case HCCL_DATA_TYPE_UINT32: return 4294967295.0;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_INT128: return 4503599627370495.0; /* 2^52 - 1 */
    case HCCL_DATA_TYPE_FP16: return 2048;
    case HCCL_DATA_TYPE_BFP16: return 256;
    case HCCL_DATA_TYPE_FP8E4M3: return 16;
    case HCCL_DATA_TYPE_FP8E5M2: return 8;
    default: return 1e6; /* fp32, fp64 */
    }
}

int conf_reduce_checked(HcclDataType dt, HcclReduceOp op, int nranks)
{
    if (!conf_dt_reducible(dt)) return 0;
    if (dt == HCCL_DATA_TYPE_FP8E8M0 && op == HCCL_REDUCE_SUM) return nranks <= 2;
    return 1;
}

double conf_value(HcclDataType dt, HcclReduceOp op, int nranks, int rank, uint64_t i, uint64_t seed)
{
    uint64_t h = conf_hash(seed, (uint64_t)rank, i);
    uint64_t r = (uint64_t)rank;
    if (op == HCCL_REDUCE_PROD) {
        if (i % 13 == 5 && rank == nranks - 1 && dt != HCCL_DATA_TYPE_FP8E8M0) return 0;
        if ((i + r) % 5 == 0) return 2; /* at most 2 of 8 consecutive ranks */
        if ((i * 3 + r) % 7 == 1) {     /* at most 2 of 8 consecutive ranks */
            if (dt == HCCL_DATA_TYPE_FP8E8M0) return 0.5;
            if (!dt_unsigned(dt)) return -1;
        }
        return 1;
    }
    if (dt == HCCL_DATA_TYPE_FP8E8M0) {
        if (op == HCCL_REDUCE_SUM) h = conf_hash(seed, 0, i); /* same on every rank: v + v = 2v */
        return ldexp(1.0, (int)(h % 9) - 4);
    }
    if (op == HCCL_REDUCE_SUM) {
        double m = floor(sum_limit(dt) / nranks);
        if (m > 100) m = 100;
        if (dt_unsigned(dt)) return (double)(h % (uint64_t)(m + 1));
        return (double)(h % (uint64_t)(2 * m + 1)) - m;
    }
    /* MAX / MIN: the whole range */
    if (dt == HCCL_DATA_TYPE_UINT64) {
        /* half of the values above 2^63: a signed comparison gets them wrong */
        if (h & 1) return 9223372036854775808.0 + (double)((h >> 8) % 100000) * 2048.0;
        return (double)((h >> 8) % 100000);
    }
    double range = minmax_range(dt);
    uint64_t span = (uint64_t)range;
    if (dt_unsigned(dt)) return (double)(h % (span + 1));
    return (double)(h % (2 * span + 1)) - range;
}

double conf_apply(HcclReduceOp op, double a, double b)
{
    switch (op) {
    case HCCL_REDUCE_SUM: return a + b;
    case HCCL_REDUCE_PROD: return a * b;
    case HCCL_REDUCE_MAX: return a > b ? a : b;
    case HCCL_REDUCE_MIN: return a < b ? a : b;
    default: return NAN;
    }
}
