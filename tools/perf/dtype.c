/*
 * dtype.c - element types of the benchmarks and exact conversions between doubles and
 * every HCCL data type (a generic minifloat codec serves fp16, bfloat16, fp8e4m3 and
 * fp8e5m2; int128 is two's complement little-endian, low 64 bits first).
 */
#include "dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

const perf_dtype perf_dtypes[] = {
    {HCCL_DATA_TYPE_INT8, "int8", 1, 127.0},
    {HCCL_DATA_TYPE_UINT8, "uint8", 1, 255.0},
    {HCCL_DATA_TYPE_INT16, "int16", 2, 32767.0},
    {HCCL_DATA_TYPE_UINT16, "uint16", 2, 65535.0},
    {HCCL_DATA_TYPE_INT32, "int32", 4, 2147483647.0},
    {HCCL_DATA_TYPE_UINT32, "uint32", 4, 4294967295.0},
    {HCCL_DATA_TYPE_INT64, "int64", 8, 9007199254740992.0},
    {HCCL_DATA_TYPE_UINT64, "uint64", 8, 9007199254740992.0},
    {HCCL_DATA_TYPE_FP16, "half", 2, 2048.0},
    {HCCL_DATA_TYPE_FP32, "float", 4, 16777216.0},
    {HCCL_DATA_TYPE_FP64, "double", 8, 9007199254740992.0},
    {HCCL_DATA_TYPE_BFP16, "bfloat16", 2, 256.0},
    {HCCL_DATA_TYPE_INT128, "int128", 16, 9007199254740992.0},
    {HCCL_DATA_TYPE_FP8E4M3, "fp8e4m3", 1, 16.0},
    {HCCL_DATA_TYPE_FP8E5M2, "fp8e5m2", 1, 8.0},
};
const int perf_ndtypes = (int)(sizeof(perf_dtypes) / sizeof(perf_dtypes[0]));

static const struct {
    const char *alias;
    const char *name;
} aliases[] = {
    {"char", "int8"},      {"byte", "uint8"},      {"int", "int32"},        {"uint", "uint32"},
    {"fp16", "half"},      {"float16", "half"},    {"fp32", "float"},       {"float32", "float"},
    {"fp64", "double"},    {"float64", "double"},  {"bf16", "bfloat16"},    {"bfp16", "bfloat16"},
    {"f8e4m3", "fp8e4m3"}, {"e4m3", "fp8e4m3"},    {"f8e5m2", "fp8e5m2"},   {"e5m2", "fp8e5m2"},
};

const perf_dtype *perf_dtype_find(const char *name)
{
    if (name == NULL) return NULL;
    for (size_t a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++)
        if (strcasecmp(name, aliases[a].alias) == 0) name = aliases[a].name;
    for (int i = 0; i < perf_ndtypes; i++)
        if (strcasecmp(name, perf_dtypes[i].name) == 0) return &perf_dtypes[i];
    return NULL;
}

unsigned perf_mini_encode(double v, int ebits, int mbits, int ieee)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const unsigned emax_field = (1u << ebits) - 1;
    const unsigned sign = signbit(v) ? 1u << (ebits + mbits) : 0;
    const unsigned nan = ieee ? (emax_field << mbits) | (1u << (mbits - 1)) : (emax_field << mbits) | ((1u << mbits) - 1);
    double a = fabs(v), q;
    int e;
    if (isnan(v)) return nan;
    if (a == 0.0) return sign;
    if (isinf(v)) return ieee ? sign | (emax_field << mbits) : sign | nan;
    frexp(a, &e);
    e -= 1; /* a = 1.f * 2^e */
    if (e < 1 - bias) { /* subnormal range: units of 2^(1-bias-mbits) */
        q = nearbyint(ldexp(a, bias - 1 + mbits));
        return sign | (unsigned)q; /* q == 2^mbits rolls into the smallest normal */
    }
    q = nearbyint(ldexp(a, mbits - e)); /* in [2^mbits, 2^(mbits+1)] */
    if (q >= ldexp(1.0, mbits + 1)) {
        q = ldexp(1.0, mbits);
        e++;
    }
    unsigned efield = (unsigned)(e + bias), man = (unsigned)q - (1u << mbits);
    if (ieee ? efield >= emax_field : (efield > emax_field || (efield == emax_field && man == (1u << mbits) - 1)))
        return ieee ? sign | (emax_field << mbits) : sign | nan; /* overflow */
    return sign | (efield << mbits) | man;
}

double perf_mini_decode(unsigned bits, int ebits, int mbits, int ieee)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const unsigned emax_field = (1u << ebits) - 1;
    unsigned s = (bits >> (ebits + mbits)) & 1u, ef = (bits >> mbits) & emax_field, man = bits & ((1u << mbits) - 1);
    double v;
    if (ieee && ef == emax_field) v = man ? NAN : INFINITY;
    else if (!ieee && ef == emax_field && man == (1u << mbits) - 1) v = NAN;
    else if (ef == 0) v = ldexp((double)man, 1 - bias - mbits);
    else v = ldexp((double)(man | (1u << mbits)), (int)ef - bias - mbits);
    return s ? -v : v;
}

void perf_store(const perf_dtype *t, void *buf, size_t i, double v)
{
    unsigned char *p = (unsigned char *)buf + i * t->size;
    switch (t->type) {
    case HCCL_DATA_TYPE_INT8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_UINT8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_INT16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_UINT16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_INT32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_UINT32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case HCCL_DATA_TYPE_UINT64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    case HCCL_DATA_TYPE_FP32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_FP64: memcpy(p, &v, 8); break;
    case HCCL_DATA_TYPE_FP16: { uint16_t x = (uint16_t)perf_mini_encode(v, 5, 10, 1); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_BFP16: { uint16_t x = (uint16_t)perf_mini_encode(v, 8, 7, 1); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_FP8E4M3: p[0] = (unsigned char)perf_mini_encode(v, 4, 3, 0); break;
    case HCCL_DATA_TYPE_FP8E5M2: p[0] = (unsigned char)perf_mini_encode(v, 5, 2, 1); break;
    case HCCL_DATA_TYPE_INT128: {
        int64_t lo = (int64_t)v, hi = lo < 0 ? -1 : 0;
        memcpy(p, &lo, 8);
        memcpy(p + 8, &hi, 8);
        break;
    }
    default: memset(p, 0, t->size); break;
    }
}

double perf_load(const perf_dtype *t, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *)buf + i * t->size;
    switch (t->type) {
    case HCCL_DATA_TYPE_INT8: { int8_t x; memcpy(&x, p, 1); return x; }
    case HCCL_DATA_TYPE_UINT8: { uint8_t x; memcpy(&x, p, 1); return x; }
    case HCCL_DATA_TYPE_INT16: { int16_t x; memcpy(&x, p, 2); return x; }
    case HCCL_DATA_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case HCCL_DATA_TYPE_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case HCCL_DATA_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case HCCL_DATA_TYPE_INT64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case HCCL_DATA_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case HCCL_DATA_TYPE_FP32: { float x; memcpy(&x, p, 4); return x; }
    case HCCL_DATA_TYPE_FP64: { double x; memcpy(&x, p, 8); return x; }
    case HCCL_DATA_TYPE_FP16: { uint16_t x; memcpy(&x, p, 2); return perf_mini_decode(x, 5, 10, 1); }
    case HCCL_DATA_TYPE_BFP16: { uint16_t x; memcpy(&x, p, 2); return perf_mini_decode(x, 8, 7, 1); }
    case HCCL_DATA_TYPE_FP8E4M3: return perf_mini_decode(p[0], 4, 3, 0);
    case HCCL_DATA_TYPE_FP8E5M2: return perf_mini_decode(p[0], 5, 2, 1);
    case HCCL_DATA_TYPE_INT128: {
        int64_t lo, hi;
        memcpy(&lo, p, 8);
        memcpy(&hi, p + 8, 8);
        if (hi != (lo < 0 ? -1 : 0)) return NAN; /* beyond what the tests store */
        return (double)lo;
    }
    default: return NAN;
    }
}
