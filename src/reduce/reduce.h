/*
 * reduce.h - element types and reduction kernels (dtype x op).
 *
 * Contract: every HcclDataType has a size; every (dtype, op) pair that can be reduced
 * has a kernel dst[i] = a[i] op b[i] for i < count, where dst may alias a or b (but
 * no partial overlap). Integers wrap (two's complement) on SUM and PROD. Floating
 * MAX/MIN propagate NaN and order -0 < +0 (max(+0, -0) = +0 in either order, so the
 * sign of a zero result does not depend on the reduction order). FP16, BFP16,
 * FP8E4M3, FP8E5M2 and FP8E8M0 are computed in fp32 and rounded to nearest even on the way back; FP8E4M3 (the "fn" variant: no
 * infinity, max 448) turns out-of-range results into NaN, FP8E5M2 into infinity,
 * like PyTorch's conversions. HIF8 has no reduction kernel (movement only).
 * Each kernel call rounds to the element type (as NCCL does): an n-rank fp16/bf16 sum
 * rounds n-1 times. Every NaN result of a float kernel is the type's canonical quiet NaN
 * (what fp32's NAN converts to: fp32 0x7FC00000, fp64 0x7FF8000000000000, fp16 0x7E00,
 * bf16 0x7FC0, e4m3 0x7F, e5m2 0x7F, e8m0 0xFF), whatever the NaN inputs' signs and
 * payloads and their order, so which NaN comes out does not depend on the algorithm.
 */
#ifndef HCCL_REDUCE_H
#define HCCL_REDUCE_H

#include <hccl/hccl_types.h>
#include <stddef.h>
#include <stdint.h>

/* Element size in bytes, or 0 for a value that is not a valid HcclDataType. */
size_t hccl_dtype_size(HcclDataType dtype);
/* "int8", "fp32", "bfp16", ... or "unknown". */
const char *hccl_dtype_name(HcclDataType dtype);
/* "sum", "prod", "max", "min" or "unknown". */
const char *hccl_redop_name(HcclReduceOp op);
/* 1 when op is one of SUM/PROD/MAX/MIN. */
int hccl_redop_valid(HcclReduceOp op);

typedef void (*hccl_reduce_fn)(void *dst, const void *a, const void *b, size_t count);

/* Kernel for (dtype, op), or NULL when that pair cannot be reduced. */
hccl_reduce_fn hccl_reduce_get(HcclDataType dtype, HcclReduceOp op);

/* dst = slot 0 op slot 1 op ... op slot n-1, in that order (n >= 2), where slot j is
 * count elements at slots + j * stride: the one order every rank uses, so results are
 * bitwise the same on every rank and run to run. dst may not overlap a slot. */
void hccl_reduce_in_order(hccl_reduce_fn fn, void *dst, const char *slots, size_t stride, uint32_t n, size_t count);
/* The same, with input `self` read from `own` (the caller's input where it is) instead
 * of its slot, so that it need not be copied there first. When dst would overwrite
 * own before it is read (dst is own and self >= 2: slots 0 and 1 are summed into dst
 * first; or a partial overlap), own is copied into slot `self` and read there. */
void hccl_reduce_in_order_own(hccl_reduce_fn fn, void *dst, char *slots, size_t stride, uint32_t n, size_t count,
                              size_t bytes, uint32_t self, const void *own);

/* Scalar conversions (round to nearest even), exposed for tests and other modules. */
float hccl_fp16_to_fp32(uint16_t h);
uint16_t hccl_fp32_to_fp16(float f);
float hccl_bf16_to_fp32(uint16_t h);
uint16_t hccl_fp32_to_bf16(float f);
float hccl_fp8e4m3_to_fp32(uint8_t v);
uint8_t hccl_fp32_to_fp8e4m3(float f);
float hccl_fp8e5m2_to_fp32(uint8_t v);
uint8_t hccl_fp32_to_fp8e5m2(float f);
float hccl_fp8e8m0_to_fp32(uint8_t v);
uint8_t hccl_fp32_to_fp8e8m0(float f);

#endif
