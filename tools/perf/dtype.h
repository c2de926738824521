/*
 * dtype.h - element types of the benchmarks: names, sizes, and exact load/store of
 * values (as doubles) in every HCCL data type, including fp16, bfloat16, fp8 and
 * int128, written here so the tools depend on the public headers only.
 */
#ifndef HCCL_PERF_DTYPE_H
#define HCCL_PERF_DTYPE_H

#include <hccl/hccl.h>
#include <stddef.h>

typedef struct perf_dtype {
    HcclDataType type;
    const char *name;   /* nccl-tests style name, printed in the table */
    size_t size;        /* bytes per element */
    double exact_max;   /* every integer 0..exact_max is representable exactly */
} perf_dtype;

/* All types the benchmarks know, in the order "-d all" runs them. */
extern const perf_dtype perf_dtypes[];
extern const int perf_ndtypes;

/* Looks a type up by name or alias ("half", "fp16", "bf16", ...); NULL when unknown. */
const perf_dtype *perf_dtype_find(const char *name);

/* Stores v (rounded to nearest even for the float types) as element i of buf. */
void perf_store(const perf_dtype *t, void *buf, size_t i, double v);
/* Loads element i of buf as a double (NaN for NaN encodings or values out of range). */
double perf_load(const perf_dtype *t, const void *buf, size_t i);

/* Minifloat helpers, exposed for the tests: IEEE-style when ieee != 0, else the
 * OCP "FN" convention (no infinities, all-ones is NaN). */
unsigned perf_mini_encode(double v, int ebits, int mbits, int ieee);
double perf_mini_decode(unsigned bits, int ebits, int mbits, int ieee);

#endif
