/*
 * _hccl_buf.c - from a Python object to (pointer, element count, data type).
 *
 * Three kinds of objects are accepted, tried in this order:
 *
 *   1. torch tensors (torch.Tensor and subclasses such as nn.Parameter): CPU only,
 *      contiguous; data_ptr(), numel() and dtype are read through the tensor's own
 *      methods, so torch is never linked. The tensor type and the dtype table come
 *      from a provider function registered by hccl/_api.py, called the first time an
 *      object with a data_ptr attribute is seen (so `import hccl` never imports torch);
 *   2. objects with the buffer protocol (NumPy arrays, bytearray, memoryview, array):
 *      C-contiguous, writable when written to; the format character gives the type;
 *   3. objects with __array_interface__ (version 3): data pointer, typestr, shape, and
 *      strides that must be None (C order).
 *
 * Data types: int8/16/32/64, uint8/16/32/64, float16, bfloat16 (torch only: NumPy has
 * none), float32, float64, and bool (moved as uint8; see PYHCCL_DT_BOOL).
 */
#include "_hccl.h"

#include <string.h>

static PyObject *torch_provider;   /* callable, or NULL */
static PyObject *torch_tensor_type; /* torch.Tensor once the provider ran */
static PyObject *torch_dtypes;      /* {torch.dtype: int code} */
static int torch_loaded;

static PyObject *s_data_ptr, *s_numel, *s_dtype, *s_is_contiguous, *s_is_cpu, *s_is_sparse, *s_is_neg, *s_is_conj;

PyObject *pyhccl_set_torch_provider(PyObject *self, PyObject *fn)
{
    (void)self;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "torch provider must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(torch_provider, fn);
    torch_loaded = 0;
    Py_RETURN_NONE;
}

static int load_torch(void)
{
    if (torch_loaded) return torch_tensor_type != NULL;
    torch_loaded = 1;
    if (!s_data_ptr) {
        s_data_ptr = PyUnicode_InternFromString("data_ptr");
        s_numel = PyUnicode_InternFromString("numel");
        s_dtype = PyUnicode_InternFromString("dtype");
        s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
        s_is_cpu = PyUnicode_InternFromString("is_cpu");
        s_is_sparse = PyUnicode_InternFromString("is_sparse");
        s_is_neg = PyUnicode_InternFromString("is_neg");
        s_is_conj = PyUnicode_InternFromString("is_conj");
        if (!s_data_ptr || !s_numel || !s_dtype || !s_is_contiguous || !s_is_cpu || !s_is_sparse || !s_is_neg ||
            !s_is_conj)
            return -1;
    }
    if (!torch_provider) return 0;
    PyObject *r = PyObject_CallNoArgs(torch_provider);
    if (!r) return -1;
    if (r == Py_None) {
        Py_DECREF(r);
        return 0;
    }
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyType_Check(PyTuple_GET_ITEM(r, 0)) ||
        !PyDict_Check(PyTuple_GET_ITEM(r, 1))) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "torch provider must return (Tensor type, dtype dict)");
        return -1;
    }
    torch_tensor_type = Py_NewRef(PyTuple_GET_ITEM(r, 0));
    torch_dtypes = Py_NewRef(PyTuple_GET_ITEM(r, 1));
    Py_DECREF(r);
    return 1;
}

const char *pyhccl_dtype_name(int dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: return "int8";
    case HCCL_DATA_TYPE_INT16: return "int16";
    case HCCL_DATA_TYPE_INT32: return "int32";
    case HCCL_DATA_TYPE_INT64: return "int64";
    case HCCL_DATA_TYPE_UINT8: return "uint8";
    case HCCL_DATA_TYPE_UINT16: return "uint16";
    case HCCL_DATA_TYPE_UINT32: return "uint32";
    case HCCL_DATA_TYPE_UINT64: return "uint64";
    case HCCL_DATA_TYPE_FP16: return "float16";
    case HCCL_DATA_TYPE_BFP16: return "bfloat16";
    case HCCL_DATA_TYPE_FP32: return "float32";
    case HCCL_DATA_TYPE_FP64: return "float64";
    case PYHCCL_DT_BOOL: return "bool";
    default: return "unknown";
    }
}

static size_t dtype_size(int dt)
{
    switch (dt) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: case PYHCCL_DT_BOOL: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16: case HCCL_DATA_TYPE_BFP16:
        return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64: case HCCL_DATA_TYPE_UINT64: case HCCL_DATA_TYPE_FP64: return 8;
    default: return 0;
    }
}

/* Kind letter ('i' signed, 'u' unsigned, 'f' float, 'b' bool) and size -> code, or -1. */
static int dtype_of(char kind, size_t size)
{
    switch (kind) {
    case 'b': return size == 1 ? PYHCCL_DT_BOOL : -1;
    case 'i':
        return size == 1 ? HCCL_DATA_TYPE_INT8 : size == 2 ? HCCL_DATA_TYPE_INT16 : size == 4 ? HCCL_DATA_TYPE_INT32
             : size == 8 ? HCCL_DATA_TYPE_INT64 : -1;
    case 'u':
        return size == 1 ? HCCL_DATA_TYPE_UINT8 : size == 2 ? HCCL_DATA_TYPE_UINT16 : size == 4 ? HCCL_DATA_TYPE_UINT32
             : size == 8 ? HCCL_DATA_TYPE_UINT64 : -1;
    case 'f':
        return size == 2 ? HCCL_DATA_TYPE_FP16 : size == 4 ? HCCL_DATA_TYPE_FP32 : size == 8 ? HCCL_DATA_TYPE_FP64 : -1;
    default: return -1;
    }
}

/* struct-module format of a buffer -> code (native or little-endian only). */
static int dtype_of_format(const char *fmt, Py_ssize_t itemsize)
{
    if (!fmt) return dtype_of('u', 1);
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    if (!fmt[0] || fmt[1]) return -1;
    switch (fmt[0]) {
    case '?': return PYHCCL_DT_BOOL;
    case 'b': return dtype_of('i', 1);
    case 'B': case 'c': return dtype_of('u', 1);
    case 'h': case 'i': case 'l': case 'q': case 'n': return dtype_of('i', (size_t)itemsize);
    case 'H': case 'I': case 'L': case 'Q': case 'N': return dtype_of('u', (size_t)itemsize);
    case 'e': case 'f': case 'd': return dtype_of('f', (size_t)itemsize);
    default: return -1;
    }
}

static int get_torch(PyObject *obj, hbuf *b, const char *what)
{
    PyObject *v = PyObject_GetAttr(obj, s_is_cpu);
    if (!v) {
        PyErr_Clear(); /* older torch: no is_cpu; data_ptr below still works on CPU */
    } else {
        int cpu = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (cpu < 0) return -1;
        if (!cpu) {
            PyErr_Format(PyExc_TypeError, "hccl: %s is not a CPU tensor (this HCCL works on host memory); "
                                          "move it with .cpu()", what);
            return -1;
        }
    }
    v = PyObject_GetAttr(obj, s_is_sparse);
    if (v) {
        int sp = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (sp) {
            PyErr_Format(PyExc_TypeError, "hccl: %s is a sparse tensor; only dense tensors are supported", what);
            return -1;
        }
    } else {
        PyErr_Clear();
    }
    v = PyObject_CallMethodNoArgs(obj, s_is_contiguous);
    if (!v) return -1;
    int contig = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (contig < 0) return -1;
    if (!contig) {
        PyErr_Format(PyExc_ValueError, "hccl: %s is not contiguous; pass t.contiguous() (and copy the result back "
                                       "for in-place operations)", what);
        return -1;
    }
    PyObject *dt = PyObject_GetAttr(obj, s_dtype);
    if (!dt) return -1;
    PyObject *code = PyDict_GetItemWithError(torch_dtypes, dt);
    if (!code) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "hccl: %s has dtype %R, which HCCL does not support", what, dt);
        Py_DECREF(dt);
        return -1;
    }
    Py_DECREF(dt);
    b->dtype = (int)PyLong_AsLong(code);
    b->itemsize = dtype_size(b->dtype);
    /* After the dtype (complex ones are refused as such): a lazily negated or
     * conjugated view (torch._neg_view(t), z.conj().imag) keeps its values without
     * the sign in memory: read raw they would be wrong, and written raw they would
     * read back negated. No silent copy is made, as for strided views. */
    for (int k = 0; k < 2; k++) {
        v = PyObject_CallMethodNoArgs(obj, k ? s_is_conj : s_is_neg);
        if (!v) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
            PyErr_Clear(); /* older torch: no such bit */
            continue;
        }
        int bit = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (bit < 0) return -1;
        if (bit) {
            PyErr_Format(PyExc_ValueError, "hccl: %s has its %s bit set (a lazy %s view); its memory does not hold "
                                           "its values: pass %s (and copy the result back for in-place operations)",
                         what, k ? "conjugate" : "negative", k ? "conj()" : "negated",
                         k ? "t.resolve_conj()" : "t.resolve_neg()");
            return -1;
        }
    }
    v = PyObject_CallMethodNoArgs(obj, s_numel);
    if (!v) return -1;
    b->count = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (PyErr_Occurred()) return -1;
    v = PyObject_CallMethodNoArgs(obj, s_data_ptr);
    if (!v) return -1;
    b->ptr = PyLong_AsVoidPtr(v);
    Py_DECREF(v);
    if (PyErr_Occurred()) return -1;
    return 0;
}

static int get_buffer(PyObject *obj, hbuf *b, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) != 0) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        /* Tell apart read-only, non-contiguous and not exportable at all (NumPy's
         * datetime64, say) for the message: ask again for any layout, read-only. */
        Py_buffer probe;
        int exportable = PyObject_GetBuffer(obj, &probe, PyBUF_FULL_RO) == 0, ro = 0;
        if (exportable) {
            ro = writable && probe.readonly && PyBuffer_IsContiguous(&probe, 'C');
            PyBuffer_Release(&probe);
        } else {
            PyErr_Clear();
        }
        PyObject *why = v ? PyObject_Str(v) : NULL;
        if (!exportable)
            PyErr_Format(PyExc_TypeError, "hccl: %s (%.80s) cannot be used as a buffer (%s); HCCL takes numeric "
                                          "types only", what, Py_TYPE(obj)->tp_name,
                         why && PyUnicode_Check(why) ? PyUnicode_AsUTF8(why) : "no buffer protocol");
        else if (ro)
            PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) is read-only, but the operation writes into it", what,
                         Py_TYPE(obj)->tp_name);
        else
            PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) is not C-contiguous; pass a contiguous copy "
                                           "(numpy.ascontiguousarray / t.contiguous())", what, Py_TYPE(obj)->tp_name);
        Py_XDECREF(why);
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        return -1;
    }
    b->has_view = 1;
    int dt = dtype_of_format(b->view.format, b->view.itemsize);
    if (dt < 0 || dtype_size(dt) != (size_t)b->view.itemsize) {
        /* Name the dtype too where the object has one (NumPy: "complex64" says more
         * than 'Zf'), and say why a byte-swapped number type is refused. */
        const char *fmt = b->view.format ? b->view.format : "B";
        PyObject *dtype = PyObject_HasAttrString(obj, "dtype") ? PyObject_GetAttrString(obj, "dtype") : NULL;
        PyObject *dname = dtype ? PyObject_Str(dtype) : NULL;
        const char *dn = dname ? PyUnicode_AsUTF8(dname) : NULL;
        PyErr_Clear();
        int swapped = (fmt[0] == '>' || fmt[0] == '!') && dtype_of_format(fmt + 1, b->view.itemsize) >= 0;
        PyErr_Format(PyExc_TypeError, "hccl: %s has %s%s%selement format '%s' (%zd bytes), which HCCL does not "
                     "support%s", what, dn ? "dtype " : "", dn ? dn : "", dn ? ", " : "", fmt, b->view.itemsize,
                     swapped ? " (big-endian: pass a native byte-order copy, a.astype(a.dtype.newbyteorder('=')))"
                             : "");
        Py_XDECREF(dname);
        Py_XDECREF(dtype);
        PyBuffer_Release(&b->view);
        b->has_view = 0;
        return -1;
    }
    b->dtype = dt;
    b->itemsize = (size_t)b->view.itemsize;
    b->ptr = b->view.buf;
    b->count = (uint64_t)(b->view.len / b->view.itemsize);
    return 0;
}

/* The typestr of an __array_interface__ ("<f4", "|u1", "|b1": byte order, kind, a
 * size in bytes and nothing else) -> code, or -1. */
static int dtype_of_typestr(const char *ts)
{
    if (ts[0] != '<' && ts[0] != '|' && ts[0] != '=') return -1;
    if (!ts[1] || !ts[2] || ts[2] < '1' || ts[2] > '9' || (ts[3] && (ts[3] < '0' || ts[3] > '9' || ts[4])))
        return -1;
    return dtype_of(ts[1], (size_t)(ts[3] ? (ts[2] - '0') * 10 + (ts[3] - '0') : ts[2] - '0'));
}

static int get_array_interface(PyObject *obj, PyObject *ai, hbuf *b, int writable, const char *what)
{
    const char *tn = Py_TYPE(obj)->tp_name;
    if (!PyDict_Check(ai)) {
        PyErr_Format(PyExc_TypeError, "hccl: %s (%.80s) has an __array_interface__ that is a %.80s, not a dict",
                     what, tn, Py_TYPE(ai)->tp_name);
        return -1;
    }
    PyObject *version = PyDict_GetItemString(ai, "version");
    if (!version || !PyLong_Check(version) || PyLong_AsLong(version) != 3) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) has __array_interface__ version %R; only version 3 is "
                                       "supported", what, tn, version ? version : Py_None);
        return -1;
    }
    PyObject *strides = PyDict_GetItemString(ai, "strides");
    if (strides && strides != Py_None) {
        PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) is not C-contiguous (__array_interface__ has strides)",
                     what, tn);
        return -1;
    }
    PyObject *data = PyDict_GetItemString(ai, "data");
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !PyLong_Check(PyTuple_GET_ITEM(data, 0))) {
        PyErr_Format(PyExc_TypeError, "hccl: %s (%.80s) has __array_interface__ data %R; HCCL needs a tuple "
                                      "(address as int, read-only flag)", what, tn, data ? data : Py_None);
        return -1;
    }
    PyObject *typestr = PyDict_GetItemString(ai, "typestr");
    if (!typestr || !PyUnicode_Check(typestr)) {
        PyErr_Format(PyExc_TypeError, "hccl: %s (%.80s) has __array_interface__ typestr %R, not a str", what, tn,
                     typestr ? typestr : Py_None);
        return -1;
    }
    const char *ts = PyUnicode_AsUTF8(typestr);
    if (!ts) return -1;
    int dt = dtype_of_typestr(ts);
    if (dt < 0) {
        PyErr_Format(PyExc_TypeError, "hccl: %s has typestr '%s', which HCCL does not support", what, ts);
        return -1;
    }
    PyObject *shape = PyDict_GetItemString(ai, "shape");
    if (!shape || !PyTuple_Check(shape)) {
        PyErr_Format(PyExc_TypeError, "hccl: %s (%.80s) has __array_interface__ shape %R, not a tuple", what, tn,
                     shape ? shape : Py_None);
        return -1;
    }
    /* Every dimension an int >= 0; the product, in bytes, must fit a Py_ssize_t
     * (unless a dimension is 0): (2**33, 2**33) must not wrap around to 0. */
    const uint64_t max = (uint64_t)PY_SSIZE_T_MAX / dtype_size(dt);
    uint64_t n = 1;
    int empty = 0, huge = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        PyObject *o = PyTuple_GET_ITEM(shape, i);
        int ovf = 0;
        long long d = PyLong_Check(o) ? PyLong_AsLongLongAndOverflow(o, &ovf) : -1;
        if (!PyLong_Check(o) || (d == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "hccl: %s (%.80s) has __array_interface__ shape %R: dimensions must be "
                                          "ints", what, tn, shape);
            return -1;
        }
        if (ovf < 0 || (!ovf && d < 0)) {
            PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) has __array_interface__ shape %R with a negative "
                                           "dimension", what, tn, shape);
            return -1;
        }
        if (d == 0) empty = 1;
        else if (ovf > 0 || (uint64_t)d > max || n > max / (uint64_t)d) huge = 1;
        else n *= (uint64_t)d;
    }
    if (empty) {
        n = 0;
    } else if (huge) {
        PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) has __array_interface__ shape %R: more bytes than memory "
                                       "can hold", what, tn, shape);
        return -1;
    }
    int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (ro < 0) return -1;
    if (ro && writable) {
        PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) is read-only, but the operation writes into it", what, tn);
        return -1;
    }
    b->ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    if (PyErr_Occurred()) return -1;
    if (!b->ptr && n) {
        PyErr_Format(PyExc_ValueError, "hccl: %s (%.80s) has a NULL __array_interface__ data address", what, tn);
        return -1;
    }
    b->dtype = dt;
    b->itemsize = dtype_size(dt);
    b->count = n;
    return 0;
}

int pyhccl_buf_get(PyObject *obj, hbuf *b, int writable, const char *what)
{
    memset(b, 0, sizeof *b);
    b->obj = obj;
    if (torch_tensor_type && PyObject_TypeCheck(obj, (PyTypeObject *)torch_tensor_type))
        return get_torch(obj, b, what);
    if (PyObject_CheckBuffer(obj)) return get_buffer(obj, b, writable, what);
    if (!torch_loaded && PyObject_HasAttrString(obj, "data_ptr")) {
        int r = load_torch();
        if (r < 0) return -1;
        if (r > 0 && PyObject_TypeCheck(obj, (PyTypeObject *)torch_tensor_type)) return get_torch(obj, b, what);
    }
    PyObject *ai = PyObject_GetAttrString(obj, "__array_interface__");
    if (ai) {
        int r = get_array_interface(obj, ai, b, writable, what);
        Py_DECREF(ai);
        return r;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "hccl: %s must be a torch CPU tensor, a NumPy array or another object with the buffer protocol "
                 "or __array_interface__, not %.80s", what, Py_TYPE(obj)->tp_name);
    return -1;
}

void pyhccl_buf_release(hbuf *b)
{
    if (b->has_view) {
        PyBuffer_Release(&b->view);
        b->has_view = 0;
    }
}
