/*
 * _hccl.h - private declarations shared by the files of the hccl._hccl extension
 * module (CPython API, no binding generator).
 *
 *   _hccl.c      the module: communicators (Comm), operations, async handles (Handle),
 *                error reporting, and the C timing loop used by the overhead benchmark;
 *   _hccl_buf.c  turning Python objects (torch CPU tensors, objects with the buffer
 *                protocol such as NumPy arrays, objects with __array_interface__)
 *                into (pointer, element count, HCCL data type).
 */
#ifndef HCCL_PY_HCCL_H
#define HCCL_PY_HCCL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <hccl/hccl.h>
#include <stdint.h>

/* A data type code: an HcclDataType, or PYHCCL_DT_BOOL (moved as uint8; reductions on
 * it are logical: SUM/MAX = or, PROD/MIN = and). */
#define PYHCCL_DT_BOOL 1000

typedef struct hbuf {
    PyObject *obj;     /* borrowed from the caller while parsing; owned by a Handle */
    void *ptr;         /* first element (may be NULL when count is 0) */
    uint64_t count;    /* elements */
    int dtype;         /* HcclDataType or PYHCCL_DT_BOOL */
    size_t itemsize;   /* bytes per element */
    int has_view;      /* view must be released with PyBuffer_Release */
    Py_buffer view;
} hbuf;

/* Fills *b from obj. writable: the operation writes into it. Returns 0, or -1 with a
 * Python exception set (TypeError for unsupported objects and dtypes, ValueError for
 * non-contiguous or read-only buffers). */
int pyhccl_buf_get(PyObject *obj, hbuf *b, int writable, const char *what);
void pyhccl_buf_release(hbuf *b);
/* The HcclDataType to hand to libhccl for a dtype code. */
static inline HcclDataType pyhccl_wire_dtype(int dtype)
{
    return dtype == PYHCCL_DT_BOOL ? HCCL_DATA_TYPE_UINT8 : (HcclDataType)dtype;
}
/* Name of a dtype code ("float32", "bool", ...). */
const char *pyhccl_dtype_name(int dtype);

/* hccl._hccl._set_torch_provider(fn): fn() -> (torch.Tensor, {torch dtype: code}) is
 * called the first time an object that looks like a tensor is seen. */
PyObject *pyhccl_set_torch_provider(PyObject *self, PyObject *fn);

#endif
