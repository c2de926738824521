/*
 * reduce.c - element sizes and names, and the reduction kernels dst[i] = a[i] op b[i].
 *
 * One macro-generated function per (dtype, op), dispatched through a table indexed
 * [dtype][op]. Every kernel is a plain loop: load a[i] and b[i], compute, store dst[i];
 * elements are moved with memcpy so that buffers need no particular alignment (gcc turns
 * these into ordinary, vectorisable loads), and dst may alias a or b exactly since each
 * element is read before it is written.
 *
 *   integers  SUM/PROD in the unsigned type of at least int width (wraps, UBSan-clean),
 *             MAX/MIN in the signed/unsigned type itself; INT128 via __int128.
 *   fp32/fp64 natively; MAX/MIN return NaN when either input is NaN, and order -0 < +0.
 *   every float kernel returns NaN as the canonical quiet NaN (what fp32's NAN converts to).
 *   fp16, bf16, fp8 e4m3/e5m2/e8m0: both inputs widened to fp32, computed there, rounded
 *             back to nearest even (see convert.c for each format's overflow rules).
 *             e8m0 PROD adds the exponents instead, which is the exact product rounded
 *             by the e8m0 rule without fp32 underflowing to 0 (which would encode NaN):
 *             below 2^-127 gives 0x00, above 2^127 gives 0xFF.
 *   HIF8      no kernel (movement only).
 */
#include "reduce/reduce.h"

#include <math.h>
#include <string.h>

#define NDTYPES 18 /* HCCL_DATA_TYPE_INT8 .. HCCL_DATA_TYPE_FP8E8M0 */
#define NOPS 4

size_t hccl_dtype_size(HcclDataType dtype)
{
    switch (dtype) {
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8:
    case HCCL_DATA_TYPE_HIF8:
    case HCCL_DATA_TYPE_FP8E4M3:
    case HCCL_DATA_TYPE_FP8E5M2:
    case HCCL_DATA_TYPE_FP8E8M0:
        return 1;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16:
        return 2;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
    case HCCL_DATA_TYPE_FP32:
        return 4;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP64:
        return 8;
    case HCCL_DATA_TYPE_INT128:
        return 16;
    default:
        return 0;
    }
}

const char *hccl_dtype_name(HcclDataType dtype)
{
    static const char *const names[NDTYPES] = {
        "int8",  "int16",  "int32",  "fp16", "fp32", "int64",   "uint64",  "uint8",   "uint16",
        "uint32", "fp64",  "bfp16",  "int128", NULL,  "hif8",   "fp8e4m3", "fp8e5m2", "fp8e8m0"};
    unsigned d = (unsigned)dtype;
    return d < NDTYPES && names[d] ? names[d] : "unknown";
}

const char *hccl_redop_name(HcclReduceOp op)
{
    static const char *const names[NOPS] = {"sum", "prod", "max", "min"};
    unsigned o = (unsigned)op;
    return o < NOPS ? names[o] : "unknown";
}

int hccl_redop_valid(HcclReduceOp op)
{
    return (unsigned)op < NOPS;
}

/* ---- kernel generator ---- */

#define KERNEL(NAME, T, EXPR)                                                       \
    static void NAME(void *dst, const void *a, const void *b, size_t count)         \
    {                                                                               \
        unsigned char *d = dst;                                                     \
        const unsigned char *pa = a, *pb = b;                                       \
        for (size_t i = 0; i < count; i++) {                                        \
            T x, y, r;                                                              \
            memcpy(&x, pa + i * sizeof(T), sizeof(T));                             \
            memcpy(&y, pb + i * sizeof(T), sizeof(T));                              \
            r = (EXPR);                                                             \
            memcpy(d + i * sizeof(T), &r, sizeof(T));                               \
        }                                                                           \
    }

/* integers: T the element type, U the unsigned type the arithmetic wraps in */
#define INT_KERNELS(NAME, T, U)                                                     \
    KERNEL(NAME##_sum, T, (T)((U)x + (U)y))                                         \
    KERNEL(NAME##_prod, T, (T)((U)x * (U)y))                                        \
    KERNEL(NAME##_max, T, x > y ? x : y)                                            \
    KERNEL(NAME##_min, T, x < y ? x : y)

/* NaN-propagating max/min: the result is NaN when either input is. Zeros are ordered
 * -0 < +0 (IEEE 754-2019 maximum/minimum), so that max(+0, -0) is +0 and min(+0, -0)
 * is -0 whichever operand comes first: without it the sign of a zero result would
 * depend on the algorithm's reduction order. */
#define FMAXN(x, y) (((x) > (y) || (x) != (x) || ((x) == (y) && !signbit(x))) ? (x) : (y))
#define FMINN(x, y) (((x) < (y) || (x) != (x) || ((x) == (y) && signbit(x))) ? (x) : (y))

/* Every NaN result is the type's canonical quiet NaN (the C NAN: positive, quiet bit
 * only; narrow types: what it converts to), so that the sign and payload of a NaN do not depend on which inputs were NaN
 * and in what order an algorithm combined them (x86 returns the first operand's NaN,
 * inf - inf gives a negative one). The compares and selects vectorise (max/min test
 * their inputs with | rather than the result, which gcc would not vectorise). */
#define CANON(T, r) ((r) != (r) ? (T)NAN : (r))
#define EITHER_NAN(x, y) (((x) != (x)) | ((y) != (y)))

#define FLOAT_KERNELS(NAME, T)                                                      \
    KERNEL(NAME##_sum, T, CANON(T, x + y))                                          \
    KERNEL(NAME##_prod, T, CANON(T, x * y))                                         \
    KERNEL(NAME##_max, T, EITHER_NAN(x, y) ? (T)NAN : FMAXN(x, y))                  \
    KERNEL(NAME##_min, T, EITHER_NAN(x, y) ? (T)NAN : FMINN(x, y))

static inline float fmaxn(float x, float y)
{
    return FMAXN(x, y);
}

static inline float fminn(float x, float y)
{
    return FMINN(x, y);
}

/* narrow floats: T the storage type, TO/FROM the fp32 conversions, ISNAN(v) whether an
 * encoding is NaN and QNAN the canonical one. The result is checked after rounding back,
 * since rounding makes NaN of some finite sums too (e4m3 beyond 448 keeps the sign). */
#define NARROW_KERNELS(NAME, T, TO, FROM, ISNAN, QNAN)                              \
    static inline T NAME##_canon(T v) { return ISNAN(v) ? (T)(QNAN) : v; }          \
    KERNEL(NAME##_sum, T, NAME##_canon(FROM(TO(x) + TO(y))))                        \
    KERNEL(NAME##_prod, T, NAME##_canon(FROM(TO(x) * TO(y))))                       \
    KERNEL(NAME##_max, T, NAME##_canon(FROM(fmaxn(TO(x), TO(y)))))                  \
    KERNEL(NAME##_min, T, NAME##_canon(FROM(fminn(TO(x), TO(y)))))

#define F16_ISNAN(v) (((v) & 0x7FFFu) > 0x7C00u)
#define BF16_ISNAN(v) (((v) & 0x7FFFu) > 0x7F80u)
#define E4M3_ISNAN(v) (((v) & 0x7Fu) == 0x7Fu)
#define E5M2_ISNAN(v) (((v) & 0x7Fu) > 0x7Cu)

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

INT_KERNELS(i8, int8_t, uint32_t)
INT_KERNELS(i16, int16_t, uint32_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(i128, i128, u128)
INT_KERNELS(u8, uint8_t, uint32_t)
INT_KERNELS(u16, uint16_t, uint32_t)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(u64, uint64_t, uint64_t)
FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)
NARROW_KERNELS(f16, uint16_t, hccl_fp16_to_fp32, hccl_fp32_to_fp16, F16_ISNAN, 0x7E00u)
NARROW_KERNELS(bf16, uint16_t, hccl_bf16_to_fp32, hccl_fp32_to_bf16, BF16_ISNAN, 0x7FC0u)
NARROW_KERNELS(e4m3, uint8_t, hccl_fp8e4m3_to_fp32, hccl_fp32_to_fp8e4m3, E4M3_ISNAN, 0x7Fu)
NARROW_KERNELS(e5m2, uint8_t, hccl_fp8e5m2_to_fp32, hccl_fp32_to_fp8e5m2, E5M2_ISNAN, 0x7Fu)

/* e8m0 product by exponent addition: 2^(x-127) * 2^(y-127) = 2^((x+y-127)-127) */
static inline uint8_t e8m0_mul(uint8_t x, uint8_t y)
{
    if (x == 0xFF || y == 0xFF)
        return 0xFF;
    int e = (int)x + (int)y - 127;
    if (e < 0)
        return 0x00; /* below 2^-127 */
    if (e > 254)
        return 0xFF; /* above 2^127 */
    return (uint8_t)e;
}

KERNEL(e8m0_sum, uint8_t, hccl_fp32_to_fp8e8m0(hccl_fp8e8m0_to_fp32(x) + hccl_fp8e8m0_to_fp32(y)))
KERNEL(e8m0_prod, uint8_t, e8m0_mul(x, y))
KERNEL(e8m0_max, uint8_t, hccl_fp32_to_fp8e8m0(fmaxn(hccl_fp8e8m0_to_fp32(x), hccl_fp8e8m0_to_fp32(y))))
KERNEL(e8m0_min, uint8_t, hccl_fp32_to_fp8e8m0(fminn(hccl_fp8e8m0_to_fp32(x), hccl_fp8e8m0_to_fp32(y))))

#define ROW(NAME) {NAME##_sum, NAME##_prod, NAME##_max, NAME##_min}

static const hccl_reduce_fn kernels[NDTYPES][NOPS] = {
    [HCCL_DATA_TYPE_INT8] = ROW(i8),
    [HCCL_DATA_TYPE_INT16] = ROW(i16),
    [HCCL_DATA_TYPE_INT32] = ROW(i32),
    [HCCL_DATA_TYPE_FP16] = ROW(f16),
    [HCCL_DATA_TYPE_FP32] = ROW(f32),
    [HCCL_DATA_TYPE_INT64] = ROW(i64),
    [HCCL_DATA_TYPE_UINT64] = ROW(u64),
    [HCCL_DATA_TYPE_UINT8] = ROW(u8),
    [HCCL_DATA_TYPE_UINT16] = ROW(u16),
    [HCCL_DATA_TYPE_UINT32] = ROW(u32),
    [HCCL_DATA_TYPE_FP64] = ROW(f64),
    [HCCL_DATA_TYPE_BFP16] = ROW(bf16),
    [HCCL_DATA_TYPE_INT128] = ROW(i128),
    /* 13: not a type; HCCL_DATA_TYPE_HIF8: movement only */
    [HCCL_DATA_TYPE_FP8E4M3] = ROW(e4m3),
    [HCCL_DATA_TYPE_FP8E5M2] = ROW(e5m2),
    [HCCL_DATA_TYPE_FP8E8M0] = ROW(e8m0),
};

void hccl_reduce_in_order(hccl_reduce_fn fn, void *dst, const char *slots, size_t stride, uint32_t n, size_t count)
{
    fn(dst, slots, slots + stride, count);
    for (uint32_t j = 2; j < n; j++) fn(dst, dst, slots + stride * j, count);
}

void hccl_reduce_in_order_own(hccl_reduce_fn fn, void *dst, char *slots, size_t stride, uint32_t n, size_t count,
                              size_t bytes, uint32_t self, const void *own)
{
    const uintptr_t in = (uintptr_t)own, out = (uintptr_t)dst;
    if (in < out + bytes && out < in + bytes && (in != out || self >= 2)) {
        memcpy(slots + stride * self, own, bytes);
        own = slots + stride * self;
    }
    fn(dst, self == 0 ? own : slots, self == 1 ? own : slots + stride, count);
    for (uint32_t j = 2; j < n; j++) fn(dst, dst, j == self ? own : slots + stride * j, count);
}

hccl_reduce_fn hccl_reduce_get(HcclDataType dtype, HcclReduceOp op)
{
    unsigned d = (unsigned)dtype, o = (unsigned)op;
    if (d >= NDTYPES || o >= NOPS)
        return NULL;
    return kernels[d][o];
}
