/*
 * The native fast path: one call signature's checks, packing and cuLaunchKernelEx in C.
 *
 * native.py compiles this file once per machine and Python (the way Triton builds its
 * launcher) and makes one FastLaunch per call signature, GPU and thread of arrays
 * (torch tensors through their accessors, anything else through its
 * __cuda_array_interface__) and scalars.  Calling it does what fastpath.py's generated Python does, with
 * the same outcome: 0 when it launched, the CUresult when the driver refused (nothing
 * launched), None when an argument fails a check or cannot be read -- the caller then
 * takes the reference path, which explains.  Every check the reference binder makes is
 * made here; only the cost differs (no interpreter between the accessors, no ctypes
 * between us and the driver).
 *
 * The launch block (CUlaunchConfig, parameter values, the void* array pointing at
 * them) is the thread's LaunchBlock from params.py: this object writes into its buffer,
 * so what a launch wrote reads back the same whichever path made it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stddef.h>
#include <stdint.h>
#include <structmember.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030B0000
#define PACK2(x, p) PyFloat_Pack2((x), (char *)(p), 1)
#define PACK4(x, p) PyFloat_Pack4((x), (char *)(p), 1)
#else
#define PACK2(x, p) _PyFloat_Pack2((x), (unsigned char *)(p), 1)
#define PACK4(x, p) _PyFloat_Pack4((x), (unsigned char *)(p), 1)
#endif

typedef int (*LaunchKernelEx)(void *config, void *function, void **params, void **extra);
typedef int (*PointerGetAttribute)(void *data, int attribute, unsigned long long pointer);

#define POINTER_ATTRIBUTE_DEVICE_ORDINAL 9 /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
#define LEGACY_DEFAULT_STREAM 1           /* how the CAI spells the legacy default stream */

/* Where a slot's value comes from: the rows of ArgumentBinder.slot_sources. */
enum { SRC_POINTER = 0, SRC_STRIDE = 1, SRC_EXTENT = 2, SRC_SCALAR = 3 };

/* Slot types, in the order native.py's SLOT_TYPES lists them. */
enum {
    SLOT_BOOL, SLOT_I8, SLOT_I16, SLOT_I32, SLOT_I64, SLOT_U8, SLOT_U16, SLOT_U32, SLOT_U64,
    SLOT_F16, SLOT_BF16, SLOT_F32, SLOT_F64
};

/* How a scalar argument is taken as is before the reader is asked (scalars.py). */
enum { EXACT_NONE = 0, EXACT_FLOAT = 1, EXACT_INT = 2, EXACT_BOOL = 3 };

#define MAX_ARGS 64
#define MAX_RANK 8
#define MAX_SLOTS 256
#define MAX_EXTENTS 64
#define MAX_CHECKS 256
#define INDEX32_LIMIT (INT64_C(1) << 31)

/* CUlaunchConfig field offsets (cuda.h); params.py's CONFIG_FORMAT spells the same. */
#define CONFIG_GRID 0
#define CONFIG_BLOCK 12
#define CONFIG_SMEM 24
#define CONFIG_STREAM 32

/* A torch accessor, resolved on the tensor type once: a getset descriptor's getter or a
 * method descriptor's C function, called directly (what attribute lookup would find, less
 * the lookup); anything else is looked up by name on each call. */
enum { A_DTYPE, A_SHAPE, A_DATA_PTR, A_STRIDE, A_GET_DEVICE, A_IS_CONTIGUOUS, N_ACCESSORS };

typedef struct {
    PyObject *name; /* interned, module-lifetime */
    int is_method;
    getter get;
    void *closure;
    PyCFunction method;
    int flags;
} Accessor;

typedef struct {
    int position;
    PyTypeObject *type; /* borrowed from `keep` */
    unsigned int version; /* the type's version tag when the accessors were resolved */
    Accessor accessors[N_ACCESSORS];
    PyObject *dtype;    /* borrowed from `keep` */
    int rank;
    int64_t align;
    int unit_stride;
    int needs_strides;
    int check_contiguous; /* one unit-stride axis: torch's is_contiguous() settles it */
    int span_check;       /* 32-bit indexing with more than one unit-stride axis */
    int cai;              /* read through __cuda_array_interface__ (dtype is then its typestr) */
    int64_t itemsize;     /* bytes per element: CAI strides are in bytes */
    int written;          /* a readonly CAI array is refused */
} TensorSpec;

typedef struct {
    int kind, a, b, type, exact;
    Py_ssize_t offset;
    PyObject *reader; /* borrowed from `keep`; scalars only */
} SlotSpec;

typedef struct {
    int t, axis;
    int64_t value; /* the extent's index, or a literal size */
} DimCheck;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    unsigned long owner;
    PyObject *other_thread;
    PyObject *current_stream;
    PyObject *stream_handle;
    PyObject *device_object;
    PyObject *meta;         /* the compile-time values a grid function sees */
    PyObject *extent_names; /* tuple of str */
    PyObject *keep;         /* everything the specs borrow, and the LaunchBlock */
    Py_ssize_t nargs;
    int ntensors, nslots, nextents, nextent_checks, nliteral_checks;
    int index32;
    long device;
    long max_grid[3];
    LaunchKernelEx launch;
    PointerGetAttribute pointer_attribute; /* NULL when no argument is a CAI array */
    void *function;
    char *config;
    char *params;
    void **kernel_params;
    TensorSpec tensors[MAX_ARGS];
    SlotSpec slots[MAX_SLOTS];
    DimCheck extent_sources[MAX_EXTENTS];
    DimCheck extent_checks[MAX_CHECKS];
    DimCheck literal_checks[MAX_CHECKS];
} FastLaunch;

static int fast_launch_clear(FastLaunch *self);

static PyObject *accessor_names[N_ACCESSORS];
static PyObject *empty_tuple;
static PyObject *s_cai, *s_data, *s_shape_key, *s_typestr, *s_strides, *s_version, *s_stream_key,
    *s_mask;

static void resolve_accessor(Accessor *a, PyTypeObject *type, int which) {
    a->name = accessor_names[which];
    a->is_method = which >= A_DATA_PTR;
    a->get = NULL;
    a->method = NULL;
    PyObject *d = _PyType_Lookup(type, a->name);
    if (d == NULL) {
        return;
    }
    if (!a->is_method && Py_IS_TYPE(d, &PyGetSetDescr_Type) &&
        PyType_IsSubtype(type, PyDescr_TYPE(d))) {
        PyGetSetDef *g = ((PyGetSetDescrObject *)d)->d_getset;
        a->get = g->get;
        a->closure = g->closure;
    } else if (a->is_method && Py_IS_TYPE(d, &PyMethodDescr_Type) &&
               PyType_IsSubtype(type, PyDescr_TYPE(d))) {
        PyMethodDef *m = ((PyMethodDescrObject *)d)->d_method;
        int flags = m->ml_flags & ~METH_COEXIST;
        if (flags == METH_NOARGS || flags == METH_VARARGS ||
            flags == (METH_VARARGS | METH_KEYWORDS)) {
            a->method = m->ml_meth;
            a->flags = flags;
        }
    }
}

static PyObject *read_accessor(const Accessor *a, PyObject *o) {
    if (a->get != NULL) {
        return a->get(o, a->closure);
    }
    if (a->method != NULL) {
        switch (a->flags) {
        case METH_NOARGS: return a->method(o, NULL);
        case METH_VARARGS: return a->method(o, empty_tuple);
        default: return ((PyCFunctionWithKeywords)(void (*)(void))a->method)(o, empty_tuple, NULL);
        }
    }
    return a->is_method ? PyObject_CallMethodNoArgs(o, a->name) : PyObject_GetAttr(o, a->name);
}

/* A failed read: an Exception means "cannot tell" (the reference path explains it); anything
 * else (KeyboardInterrupt) goes on up. Returns 0 for None, -1 to propagate. */
static int give_up(void) {
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) {
        return -1;
    }
    PyErr_Clear();
    return 0;
}

static int read_i64(PyObject *o, int64_t *out) {
    if (!PyLong_Check(o)) {
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

static int read_u64(PyObject *o, uint64_t *out) {
    if (!PyLong_Check(o)) {
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* A tuple or list of `rank` ints (torch.Size, stride(), a CAI shape) into `out`. */
static int read_dims(PyObject *dims, int rank, int64_t *out) {
    if (!(PyTuple_Check(dims) || PyList_Check(dims)) || PySequence_Fast_GET_SIZE(dims) != rank) {
        return 0;
    }
    for (int a = 0; a < rank; a++) {
        if (!read_i64(PySequence_Fast_GET_ITEM(dims, a), &out[a])) {
            return 0;
        }
    }
    return 1;
}

/* An integer into a slot of an integer type; 0 when it does not fit (as struct would refuse). */
static int pack_integer(char *dst, int type, int64_t v, uint64_t u, int is_unsigned) {
    int64_t lo, hi;
    switch (type) {
    case SLOT_I8: lo = INT8_MIN; hi = INT8_MAX; break;
    case SLOT_I16: lo = INT16_MIN; hi = INT16_MAX; break;
    case SLOT_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    case SLOT_U8: lo = 0; hi = UINT8_MAX; break;
    case SLOT_U16: case SLOT_BF16: lo = 0; hi = UINT16_MAX; break;
    case SLOT_U32: lo = 0; hi = UINT32_MAX; break;
    case SLOT_I64:
        if (is_unsigned) {
            return 0;
        }
        memcpy(dst, &v, 8);
        return 1;
    case SLOT_U64:
        if (!is_unsigned) {
            if (v < 0) {
                return 0;
            }
            u = (uint64_t)v;
        }
        memcpy(dst, &u, 8);
        return 1;
    default: return 0;
    }
    if (is_unsigned || v < lo || v > hi) {
        return 0;
    }
    switch (type) {
    case SLOT_I8: case SLOT_U8: { uint8_t x = (uint8_t)v; memcpy(dst, &x, 1); break; }
    case SLOT_I16: case SLOT_U16: case SLOT_BF16: {
        uint16_t x = (uint16_t)v;
        memcpy(dst, &x, 2);
        break;
    }
    default: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
    }
    return 1;
}

/* A Python int into an integer slot. */
static int pack_long(char *dst, int type, PyObject *o) {
    int64_t v;
    if (read_i64(o, &v)) {
        return pack_integer(dst, type, v, 0, 0);
    }
    uint64_t u;
    if (read_u64(o, &u)) {
        return pack_integer(dst, type, 0, u, 1);
    }
    return 0;
}

/* A scalar argument (already read when not taken as is) into its slot; 0 fails, -1 raises. */
static int pack_scalar(FastLaunch *self, SlotSpec *slot, PyObject *arg) {
    char *dst = self->params + slot->offset;
    PyObject *value = arg;
    int exact = (slot->exact == EXACT_FLOAT && PyFloat_CheckExact(arg)) ||
                (slot->exact == EXACT_INT && PyLong_CheckExact(arg)) ||
                (slot->exact == EXACT_BOOL && PyBool_Check(arg));
    if (!exact) {
        value = PyObject_CallOneArg(slot->reader, arg);
        if (value == NULL) {
            return give_up() ? -1 : 0;
        }
    } else {
        Py_INCREF(value);
    }
    int ok = 0;
    switch (slot->type) {
    case SLOT_BOOL: {
        int truth = PyObject_IsTrue(value);
        if (truth >= 0) {
            uint8_t x = (uint8_t)truth;
            memcpy(dst, &x, 1);
            ok = 1;
        }
        break;
    }
    case SLOT_F16: case SLOT_F32: case SLOT_F64: {
        if (!PyFloat_Check(value)) {
            break;
        }
        double x = PyFloat_AS_DOUBLE(value);
        if (slot->type == SLOT_F64) {
            memcpy(dst, &x, 8);
            ok = 1;
        } else {
            ok = (slot->type == SLOT_F16 ? PACK2(x, dst) : PACK4(x, dst)) == 0;
        }
        break;
    }
    default:
        ok = PyLong_Check(value) && pack_long(dst, slot->type, value);
    }
    Py_DECREF(value);
    if (!ok && give_up()) {
        return -1;
    }
    return ok;
}

/* One grid entry: an exact int in 1..limit. */
static int read_grid_entry(PyObject *o, long limit, uint32_t *out) {
    if (!PyLong_CheckExact(o)) {
        return 0;
    }
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow || v < 1 || v > limit) {
        PyErr_Clear();
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

static int read_grid_tuple(FastLaunch *self, PyObject *g, uint32_t dims[3]) {
    if (!PyTuple_CheckExact(g)) {
        return 0;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(g);
    if (n < 1 || n > 3) {
        return 0;
    }
    dims[1] = dims[2] = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!read_grid_entry(PyTuple_GET_ITEM(g, i), self->max_grid[i], &dims[i])) {
            return 0;
        }
    }
    return 1;
}

/* The grid: a tuple, or the grid function called with meta (compile-time values, extents). */
static int read_grid(FastLaunch *self, PyObject *grid, const int64_t *extents, uint32_t dims[3]) {
    if (PyTuple_CheckExact(grid)) {
        return read_grid_tuple(self, grid, dims);
    }
    if (!PyCallable_Check(grid)) {
        return 0;
    }
    PyObject *meta = PyDict_Copy(self->meta);
    if (meta == NULL) {
        return give_up() ? -1 : 0;
    }
    for (int e = 0; e < self->nextents; e++) {
        PyObject *value = PyLong_FromLongLong(extents[e]);
        if (value == NULL ||
            PyDict_SetItem(meta, PyTuple_GET_ITEM(self->extent_names, e), value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(meta);
            return give_up() ? -1 : 0;
        }
        Py_DECREF(value);
    }
    PyObject *g = PyObject_CallOneArg(grid, meta);
    Py_DECREF(meta);
    if (g == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = read_grid_tuple(self, g, dims);
    Py_DECREF(g);
    return ok;
}

/* The launch stream: the library's current stream, an int handle, or a stream object's. */
static int read_stream(FastLaunch *self, PyObject *stream, uint64_t *handle) {
    PyObject *h;
    if (stream == Py_None) {
        h = PyObject_CallOneArg(self->current_stream, self->device_object);
    } else if (PyLong_CheckExact(stream)) {
        return read_u64(stream, handle);
    } else {
        h = PyObject_CallOneArg(self->stream_handle, stream);
    }
    if (h == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = read_u64(h, handle);
    Py_DECREF(h);
    return ok;
}

/* The checks of a tensor's layout once read: alignment, unit stride, the 32-bit span. */
static int layout_fits(TensorSpec *spec, const int64_t *shape, const int64_t *strides,
                       uint64_t ptr, int strides_read) {
    if (ptr % (uint64_t)spec->align) {
        return 0;
    }
    int last = spec->rank - 1;
    if (strides_read && spec->unit_stride && strides[last] != 1 && shape[last] > 1) {
        return 0;
    }
    if (spec->span_check) {
        int64_t span = 0;
        for (int a = 0; a < spec->rank; a++) {
            if (shape[a] > 1) {
                int64_t step = strides[a] < 0 ? -strides[a] : strides[a];
                int64_t part;
                if (__builtin_mul_overflow(shape[a] - 1, step, &part) ||
                    __builtin_add_overflow(span, part, &span)) {
                    return 0;
                }
            }
        }
        if (span >= INDEX32_LIMIT) {
            return 0;
        }
    }
    return 1;
}

/* Reads and checks a torch tensor; 1 fits, 0 does not (or cannot tell), -1 raises. */
static int read_torch_tensor(FastLaunch *self, TensorSpec *spec, PyObject *arg, int64_t *shape,
                             int64_t *strides, uint64_t *ptr) {
    PyObject *o = read_accessor(&spec->accessors[A_DTYPE], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = o == spec->dtype;
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    o = read_accessor(&spec->accessors[A_SHAPE], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    ok = read_dims(o, spec->rank, shape);
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    o = read_accessor(&spec->accessors[A_DATA_PTR], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    ok = read_u64(o, ptr);
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    if (spec->needs_strides) {
        o = read_accessor(&spec->accessors[A_STRIDE], arg);
        if (o == NULL) {
            return give_up() ? -1 : 0;
        }
        ok = read_dims(o, spec->rank, strides);
        Py_DECREF(o);
        if (!ok) {
            return 0;
        }
    }
    if (!layout_fits(spec, shape, strides, *ptr, spec->needs_strides)) {
        return 0;
    }
    o = read_accessor(&spec->accessors[A_GET_DEVICE], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    int64_t device;
    ok = read_i64(o, &device) && device == self->device;
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    if (spec->check_contiguous) {
        o = read_accessor(&spec->accessors[A_IS_CONTIGUOUS], arg);
        if (o == NULL) {
            return give_up() ? -1 : 0;
        }
        ok = o == Py_True;
        Py_DECREF(o);
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* A CAI dict's entry (borrowed), or NULL when absent (with an error only if the lookup failed). */
static PyObject *cai_entry(PyObject *cai, PyObject *key) {
    return PyDict_GetItemWithError(cai, key);
}

/* Reads and checks an array's __cuda_array_interface__ (v2/v3) as arrays.read_cai does (which
 * GPU holds its data is asked after every other check).  *producer is its v3 stream. */
static int read_cai_dict(TensorSpec *spec, PyObject *cai, int64_t *shape,
                         int64_t *strides, uint64_t *ptr, int *has_producer,
                         uint64_t *producer) {
    if (!PyDict_Check(cai)) {
        return 0;
    }
    PyObject *o = cai_entry(cai, s_mask);
    if (o != NULL && o != Py_None) {
        return 0;
    }
    o = cai_entry(cai, s_typestr);
    if (o == NULL || !PyUnicode_Check(o) || PyUnicode_Compare(o, spec->dtype) != 0) {
        return 0;
    }
    o = cai_entry(cai, s_data);
    if (o == NULL || !PyTuple_Check(o) || PyTuple_GET_SIZE(o) < 2 ||
        !read_u64(PyTuple_GET_ITEM(o, 0), ptr) || *ptr == 0) {
        return 0;
    }
    if (spec->written) {
        int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(o, 1));
        if (readonly != 0) {
            return readonly < 0 ? -1 : 0;
        }
    }
    o = cai_entry(cai, s_shape_key);
    if (o == NULL || !read_dims(o, spec->rank, shape)) {
        return 0;
    }
    o = cai_entry(cai, s_strides);
    if (o == NULL || o == Py_None) {
        int64_t step = 1;
        for (int a = spec->rank - 1; a >= 0; a--) {
            strides[a] = step;
            step *= shape[a] > 1 ? shape[a] : 1;
        }
    } else {
        if (!read_dims(o, spec->rank, strides)) {
            return 0;
        }
        for (int a = 0; a < spec->rank; a++) {
            if (strides[a] % spec->itemsize) {
                return 0;
            }
            strides[a] /= spec->itemsize;
        }
    }
    *has_producer = 0;
    o = cai_entry(cai, s_version);
    int64_t version = 0;
    if (o != NULL && read_i64(o, &version) && version >= 3) {
        o = cai_entry(cai, s_stream_key);
        if (o != NULL && o != Py_None) {
            if (!read_u64(o, producer)) {
                return 0;
            }
            *has_producer = 1;
        }
    }
    return !PyErr_Occurred() && layout_fits(spec, shape, strides, *ptr, 1);
}

static int read_cai_tensor(TensorSpec *spec, PyObject *arg, int64_t *shape,
                           int64_t *strides, uint64_t *ptr, int *has_producer,
                           uint64_t *producer) {
    PyObject *cai = PyObject_GetAttr(arg, s_cai);
    if (cai == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = read_cai_dict(spec, cai, shape, strides, ptr, has_producer, producer);
    Py_DECREF(cai);
    if (ok <= 0 && give_up()) {
        return -1;
    }
    return ok > 0;
}

/* One launch of `args` (a tuple); the body of fast_launch_call. */
static PyObject *launch_args(FastLaunch *self, PyObject *grid, PyObject *args, PyObject *stream) {
    if (PyTuple_GET_SIZE(args) != self->nargs) {
        Py_RETURN_NONE;
    }
    PyObject **items = &PyTuple_GET_ITEM(args, 0);
    for (int i = 0; i < self->ntensors; i++) {
        TensorSpec *spec = &self->tensors[i];
        /* A torch type that changed (an attribute reassigned) has a new version tag. */
        if (Py_TYPE(items[spec->position]) != spec->type ||
            (!spec->cai && spec->type->tp_version_tag != spec->version)) {
            Py_RETURN_NONE;
        }
    }
    int64_t shapes[MAX_ARGS][MAX_RANK];
    int64_t strides[MAX_ARGS][MAX_RANK];
    uint64_t ptrs[MAX_ARGS];
    uint64_t producers[MAX_ARGS];
    int nproducers = 0;
    for (int i = 0; i < self->ntensors; i++) {
        TensorSpec *spec = &self->tensors[i];
        int ok, has_producer = 0;
        if (spec->cai) {
            ok = read_cai_tensor(spec, items[spec->position], shapes[i], strides[i],
                                 &ptrs[i], &has_producer, &producers[nproducers]);
            nproducers += has_producer;
        } else {
            ok = read_torch_tensor(self, spec, items[spec->position], shapes[i], strides[i],
                                   &ptrs[i]);
        }
        if (ok < 0) {
            return NULL;
        }
        if (!ok) {
            Py_RETURN_NONE;
        }
    }
    int64_t extents[MAX_EXTENTS];
    for (int e = 0; e < self->nextents; e++) {
        DimCheck *c = &self->extent_sources[e];
        extents[e] = shapes[c->t][c->axis];
        if (self->index32 && extents[e] >= INDEX32_LIMIT) {
            Py_RETURN_NONE;
        }
    }
    for (int k = 0; k < self->nextent_checks; k++) {
        DimCheck *c = &self->extent_checks[k];
        if (shapes[c->t][c->axis] != extents[c->value]) {
            Py_RETURN_NONE;
        }
    }
    for (int k = 0; k < self->nliteral_checks; k++) {
        DimCheck *c = &self->literal_checks[k];
        if (shapes[c->t][c->axis] != c->value) {
            Py_RETURN_NONE;
        }
    }
    for (int s = 0; s < self->nslots; s++) {
        SlotSpec *slot = &self->slots[s];
        char *dst = self->params + slot->offset;
        int ok;
        switch (slot->kind) {
        case SRC_POINTER: ok = pack_integer(dst, slot->type, 0, ptrs[slot->a], 1); break;
        case SRC_STRIDE: ok = pack_integer(dst, slot->type, strides[slot->a][slot->b], 0, 0); break;
        case SRC_EXTENT: ok = pack_integer(dst, slot->type, extents[slot->a], 0, 0); break;
        default: ok = pack_scalar(self, slot, items[slot->a]);
        }
        if (ok < 0) {
            return NULL;
        }
        if (!ok) {
            Py_RETURN_NONE;
        }
    }
    uint32_t dims[3];
    int ok = read_grid(self, grid, extents, dims);
    if (ok <= 0) {
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    }
    uint64_t handle;
    ok = read_stream(self, stream, &handle);
    if (ok <= 0) {
        return ok < 0 ? NULL : Py_NewRef(Py_None);
    }
    /* An array made on another stream: the reference path makes the launch wait for it. */
    uint64_t launch_stream = handle ? handle : LEGACY_DEFAULT_STREAM;
    for (int p = 0; p < nproducers; p++) {
        if ((producers[p] ? producers[p] : LEGACY_DEFAULT_STREAM) != launch_stream) {
            Py_RETURN_NONE;
        }
    }
    /* Last, the driver: which GPU holds each array read through its interface. */
    for (int i = 0; i < self->ntensors; i++) {
        int ordinal = -1;
        if (self->tensors[i].cai &&
            (self->pointer_attribute(&ordinal, POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptrs[i]) ||
             ordinal != self->device)) {
            Py_RETURN_NONE;
        }
    }
    memcpy(self->config + CONFIG_GRID, dims, sizeof dims);
    memcpy(self->config + CONFIG_STREAM, &handle, 8);
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = self->launch(self->config, self->function, self->kernel_params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(code);
}

static PyObject *fast_launch_call(PyObject *callable, PyObject *const *argv, size_t nargsf,
                                  PyObject *kwnames) {
    FastLaunch *self = (FastLaunch *)callable;
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "try_launch(grid, args, stream) takes 3 arguments");
        return NULL;
    }
    if (PyThread_get_thread_ident() != self->owner) {
        return PyObject_Vectorcall(self->other_thread, argv, 3, NULL);
    }
    PyObject *args = argv[1];
    if (PyTuple_Check(args)) {
        return launch_args(self, argv[0], args, argv[2]);
    }
    if (!PyList_Check(args)) {
        Py_RETURN_NONE;
    }
    /* A list is copied: reading a scalar may run code that changes it. */
    PyObject *tuple = PyList_AsTuple(args);
    if (tuple == NULL) {
        return NULL;
    }
    PyObject *result = launch_args(self, argv[0], tuple, argv[2]);
    Py_DECREF(tuple);
    return result;
}

/* Constructor arguments, all plain values from native.py (see native_launch there). */
static int fast_launch_init(FastLaunch *self, PyObject *args, PyObject *kwds) {
    (void)kwds;
    PyObject *tensors, *slots, *sources, *checks, *literals, *max_grid, *cta;
    unsigned long long launch, pointer_entry, function, config, params, kernel_params;
    unsigned long smem;
    fast_launch_clear(self);
    if (!PyArg_ParseTuple(args, "kOOOOnO!O!O!O!pl" "O!O!OKKKKKKO!kO", &self->owner,
                          &self->other_thread, &self->current_stream, &self->stream_handle,
                          &self->meta, &self->nargs, &PyTuple_Type, &tensors, &PyTuple_Type,
                          &sources, &PyTuple_Type, &checks, &PyTuple_Type, &literals,
                          &self->index32, &self->device, &PyTuple_Type, &slots, &PyTuple_Type,
                          &self->extent_names, &self->keep, &launch, &pointer_entry, &function, &config, &params,
                          &kernel_params, &PyTuple_Type, &cta, &smem, &max_grid)) {
        return -1;
    }
    Py_INCREF(self->other_thread);
    Py_INCREF(self->current_stream);
    Py_INCREF(self->stream_handle);
    Py_INCREF(self->meta);
    Py_INCREF(self->extent_names);
    Py_INCREF(self->keep);
    self->device_object = PyLong_FromLong(self->device);
    if (self->device_object == NULL) {
        return -1;
    }
    if (!PyDict_Check(self->meta) || self->nargs > MAX_ARGS ||
        PyTuple_GET_SIZE(tensors) > MAX_ARGS || PyTuple_GET_SIZE(slots) > MAX_SLOTS ||
        PyTuple_GET_SIZE(sources) > MAX_EXTENTS || PyTuple_GET_SIZE(checks) > MAX_CHECKS ||
        PyTuple_GET_SIZE(literals) > MAX_CHECKS ||
        PyTuple_GET_SIZE(self->extent_names) != PyTuple_GET_SIZE(sources)) {
        PyErr_SetString(PyExc_ValueError, "FastLaunch: more than the native path holds");
        return -1;
    }
    self->ntensors = (int)PyTuple_GET_SIZE(tensors);
    for (int i = 0; i < self->ntensors; i++) {
        TensorSpec *t = &self->tensors[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(tensors, i), "iO!OiLppppLpp", &t->position,
                              &PyType_Type, &t->type, &t->dtype, &t->rank, &t->align,
                              &t->unit_stride, &t->needs_strides, &t->check_contiguous,
                              &t->span_check, &t->itemsize, &t->cai, &t->written)) {
            return -1;
        }
        if (t->rank < 0 || t->rank > MAX_RANK || t->align < 1 || t->position < 0 ||
            t->position >= self->nargs || (t->span_check && !t->needs_strides) ||
            (t->unit_stride && !t->needs_strides && !t->check_contiguous) || t->itemsize < 1 ||
            (t->cai && (!PyUnicode_Check(t->dtype) || !t->needs_strides || pointer_entry == 0))) {
            PyErr_SetString(PyExc_ValueError, "FastLaunch: a tensor spec out of range");
            return -1;
        }
        if (t->cai) {
            continue;
        }
        for (int a = 0; a < N_ACCESSORS; a++) {
            resolve_accessor(&t->accessors[a], t->type, a);
        }
        t->version = t->type->tp_version_tag;
        if (!(t->type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || t->version == 0) {
            PyErr_SetString(PyExc_ValueError, "FastLaunch: the tensor type has no version tag");
            return -1;
        }
    }
    PyObject *groups[3] = {sources, checks, literals};
    DimCheck *targets[3] = {self->extent_sources, self->extent_checks, self->literal_checks};
    int *counts[3] = {&self->nextents, &self->nextent_checks, &self->nliteral_checks};
    for (int g = 0; g < 3; g++) {
        *counts[g] = (int)PyTuple_GET_SIZE(groups[g]);
        for (int k = 0; k < *counts[g]; k++) {
            DimCheck *c = &targets[g][k];
            c->value = 0;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(groups[g], k), g ? "iiL" : "ii", &c->t,
                                  &c->axis, &c->value)) {
                return -1;
            }
            if (c->t < 0 || c->t >= self->ntensors || c->axis < 0 ||
                c->axis >= self->tensors[c->t].rank ||
                (g == 1 && (c->value < 0 || c->value >= self->nextents))) {
                PyErr_SetString(PyExc_ValueError, "FastLaunch: a dimension check out of range");
                return -1;
            }
        }
    }
    self->nslots = (int)PyTuple_GET_SIZE(slots);
    for (int s = 0; s < self->nslots; s++) {
        SlotSpec *slot = &self->slots[s];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(slots, s), "iiiinO", &slot->kind, &slot->a,
                              &slot->b, &slot->type, &slot->offset, &slot->reader)) {
            return -1;
        }
        slot->exact = slot->type <= SLOT_BOOL ? EXACT_BOOL
                      : slot->type <= SLOT_U64 ? EXACT_INT
                      : slot->type == SLOT_BF16 ? EXACT_NONE
                                             : EXACT_FLOAT;
        int bad = slot->type < SLOT_BOOL || slot->type > SLOT_F64 || slot->offset < 0;
        switch (slot->kind) {
        case SRC_POINTER: bad |= slot->a >= self->ntensors || slot->type != SLOT_U64; break;
        case SRC_STRIDE:
            bad |= slot->a >= self->ntensors || slot->b >= self->tensors[slot->a].rank ||
                   !self->tensors[slot->a].needs_strides;
            break;
        case SRC_EXTENT: bad |= slot->a >= self->nextents; break;
        case SRC_SCALAR: bad |= slot->a >= self->nargs || !PyCallable_Check(slot->reader); break;
        default: bad = 1;
        }
        if (bad || slot->a < 0 || slot->b < 0 ||
            (slot->kind != SRC_SCALAR && slot->type >= SLOT_F16)) {
            PyErr_SetString(PyExc_ValueError, "FastLaunch: a slot spec out of range");
            return -1;
        }
    }
    uint32_t block[3];
    if (!PyArg_ParseTuple(cta, "III", &block[0], &block[1], &block[2]) ||
        !PyArg_ParseTuple(max_grid, "lll", &self->max_grid[0], &self->max_grid[1],
                          &self->max_grid[2])) {
        return -1;
    }
    if (launch == 0 || config == 0 || (self->nslots && (params == 0 || kernel_params == 0))) {
        PyErr_SetString(PyExc_ValueError, "FastLaunch: a null launch entry or launch block");
        return -1;
    }
    self->launch = (LaunchKernelEx)(uintptr_t)launch;
    self->pointer_attribute = (PointerGetAttribute)(uintptr_t)pointer_entry;
    self->function = (void *)(uintptr_t)function;
    self->config = (char *)(uintptr_t)config;
    self->params = (char *)(uintptr_t)params;
    self->kernel_params = self->nslots ? (void **)(uintptr_t)kernel_params : NULL;
    uint32_t smem32 = (uint32_t)smem;
    memcpy(self->config + CONFIG_BLOCK, block, sizeof block);
    memcpy(self->config + CONFIG_SMEM, &smem32, 4);
    self->vectorcall = fast_launch_call;
    return 0;
}

static PyObject *fast_launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    FastLaunch *self = (FastLaunch *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->vectorcall = NULL;
    }
    return (PyObject *)self;
}

static int fast_launch_traverse(FastLaunch *self, visitproc visit, void *arg) {
    Py_VISIT(self->other_thread);
    Py_VISIT(self->current_stream);
    Py_VISIT(self->stream_handle);
    Py_VISIT(self->meta);
    Py_VISIT(self->extent_names);
    Py_VISIT(self->keep);
    return 0;
}

static int fast_launch_clear(FastLaunch *self) {
    Py_CLEAR(self->other_thread);
    Py_CLEAR(self->current_stream);
    Py_CLEAR(self->stream_handle);
    Py_CLEAR(self->device_object);
    Py_CLEAR(self->meta);
    Py_CLEAR(self->extent_names);
    Py_CLEAR(self->keep);
    self->vectorcall = NULL;
    return 0;
}

static void fast_launch_dealloc(FastLaunch *self) {
    PyObject_GC_UnTrack(self);
    fast_launch_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *fast_launch_tp_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    if (((FastLaunch *)self)->vectorcall == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "FastLaunch was not initialised");
        return NULL;
    }
    return PyVectorcall_Call(self, args, kwargs);
}

static PyTypeObject FastLaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "phobos_native_launch.FastLaunch",
    .tp_doc = "try_launch(grid, args, stream): one call signature's launch, in C",
    .tp_basicsize = sizeof(FastLaunch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = fast_launch_new,
    .tp_init = (initproc)fast_launch_init,
    .tp_dealloc = (destructor)fast_launch_dealloc,
    .tp_traverse = (traverseproc)fast_launch_traverse,
    .tp_clear = (inquiry)fast_launch_clear,
    .tp_call = fast_launch_tp_call,
    .tp_vectorcall_offset = offsetof(FastLaunch, vectorcall),
};

/*
 * SteadyCall: phobos.lang's `kernel[grid]` in its steady state.  `kernel.last_launch` is
 * (the keyword values of the last launch that fixed every compile-time name, the
 * LoadedKernel it used) or None.  A call with the same keywords goes straight to that
 * kernel's try_launch; anything else -- other keywords, race_check, a launch the fast
 * path does not take -- calls `fallback` (phobos.lang's Python launcher) with the
 * call's own arguments, which tries again and explains.
 */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *kernel;
    PyObject *grid;
    PyObject *fallback;
} SteadyCall;

static PyObject *s_last_launch, *s_try_launch, *s_stream, *s_race_check;

static int same_name(PyObject *name, PyObject *interned) {
    return name == interned || PyUnicode_Compare(name, interned) == 0;
}

/* 1 when launched, 0 when the fallback should run, -1 on an error that goes up. */
static int launch_steadily(SteadyCall *self, PyObject *const *argv, Py_ssize_t nargs,
                           PyObject *kwnames) {
    PyObject *last = PyObject_GetAttr(self->kernel, s_last_launch);
    if (last == NULL) {
        return give_up() ? -1 : 0;
    }
    int result = 0;
    PyObject *try_launch = NULL, *args = NULL, *code = NULL;
    if (!PyTuple_CheckExact(last) || PyTuple_GET_SIZE(last) != 2 ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(last, 0))) {
        goto done;
    }
    PyObject *values = PyTuple_GET_ITEM(last, 0);
    PyObject *stream = Py_None;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames), matched = 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *value = argv[nargs + k];
        if (same_name(name, s_stream)) {
            stream = value;
            continue;
        }
        if (same_name(name, s_race_check)) {
            int on = PyObject_IsTrue(value);
            if (on != 0) {
                goto failed;
            }
            continue;
        }
        PyObject *expected = PyDict_GetItemWithError(values, name);
        if (expected == NULL) {
            goto failed;
        }
        int equal = PyObject_RichCompareBool(expected, value, Py_EQ);
        if (equal <= 0) {
            goto failed;
        }
        matched++;
    }
    if (matched != PyDict_GET_SIZE(values)) {
        goto done;
    }
    try_launch = PyObject_GetAttr(PyTuple_GET_ITEM(last, 1), s_try_launch);
    if (try_launch == NULL) {
        goto failed;
    }
    args = PyTuple_New(nargs);
    if (args == NULL) {
        goto failed;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(argv[i]);
        PyTuple_SET_ITEM(args, i, argv[i]);
    }
    PyObject *call[3] = {self->grid, args, stream};
    code = PyObject_Vectorcall(try_launch, call, 3, NULL);
    if (code == NULL) {
        goto failed;
    }
    result = PyLong_CheckExact(code) && PyLong_AsLong(code) == 0;
    goto done;
failed:
    result = PyErr_Occurred() && give_up() < 0 ? -1 : 0;
done:
    Py_XDECREF(code);
    Py_XDECREF(args);
    Py_XDECREF(try_launch);
    Py_DECREF(last);
    return result;
}

static PyObject *steady_call(PyObject *callable, PyObject *const *argv, size_t nargsf,
                             PyObject *kwnames) {
    SteadyCall *self = (SteadyCall *)callable;
    int launched = launch_steadily(self, argv, PyVectorcall_NARGS(nargsf), kwnames);
    if (launched < 0) {
        return NULL;
    }
    if (launched) {
        Py_RETURN_NONE;
    }
    return PyObject_Vectorcall(self->fallback, argv, nargsf, kwnames);
}

static PyObject *steady_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *kernel, *grid, *fallback;
    static char *names[] = {"kernel", "grid", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO", names, &kernel, &grid, &fallback)) {
        return NULL;
    }
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "SteadyCall: fallback must be callable");
        return NULL;
    }
    SteadyCall *self = (SteadyCall *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->kernel = Py_NewRef(kernel);
    self->grid = Py_NewRef(grid);
    self->fallback = Py_NewRef(fallback);
    self->vectorcall = steady_call;
    return (PyObject *)self;
}

static int steady_traverse(SteadyCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->kernel);
    Py_VISIT(self->grid);
    Py_VISIT(self->fallback);
    return 0;
}

static int steady_clear(SteadyCall *self) {
    Py_CLEAR(self->kernel);
    Py_CLEAR(self->grid);
    Py_CLEAR(self->fallback);
    return 0;
}

static void steady_dealloc(SteadyCall *self) {
    PyObject_GC_UnTrack(self);
    steady_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef steady_members[] = {
    {"grid", T_OBJECT_EX, offsetof(SteadyCall, grid), READONLY, "the grid of kernel[grid]"},
    {"fallback", T_OBJECT_EX, offsetof(SteadyCall, fallback), READONLY,
     "the Python launcher that takes every call the steady state does not"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject SteadyCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "phobos_native_launch.SteadyCall",
    .tp_doc = "kernel[grid] of phobos.lang: the steady state in C, the rest in `fallback`",
    .tp_basicsize = sizeof(SteadyCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = steady_new,
    .tp_dealloc = (destructor)steady_dealloc,
    .tp_traverse = (traverseproc)steady_traverse,
    .tp_clear = (inquiry)steady_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(SteadyCall, vectorcall),
    .tp_members = steady_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "phobos_native_launch",
    .m_doc = "The native launch fast path of phobos.launch (built by native.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit_phobos_native_launch(void) {
    const char *names[N_ACCESSORS] = {"dtype", "shape", "data_ptr", "stride", "get_device",
                                      "is_contiguous"};
    for (int a = 0; a < N_ACCESSORS; a++) {
        accessor_names[a] = PyUnicode_InternFromString(names[a]);
        if (accessor_names[a] == NULL) {
            return NULL;
        }
    }
    empty_tuple = PyTuple_New(0);
    s_cai = PyUnicode_InternFromString("__cuda_array_interface__");
    s_data = PyUnicode_InternFromString("data");
    s_shape_key = PyUnicode_InternFromString("shape");
    s_typestr = PyUnicode_InternFromString("typestr");
    s_strides = PyUnicode_InternFromString("strides");
    s_version = PyUnicode_InternFromString("version");
    s_stream_key = PyUnicode_InternFromString("stream");
    s_mask = PyUnicode_InternFromString("mask");
    if (!s_cai || !s_data || !s_shape_key || !s_typestr || !s_strides || !s_version ||
        !s_stream_key || !s_mask) {
        return NULL;
    }
    s_last_launch = PyUnicode_InternFromString("last_launch");
    s_try_launch = PyUnicode_InternFromString("try_launch");
    s_stream = PyUnicode_InternFromString("stream");
    s_race_check = PyUnicode_InternFromString("race_check");
    if (empty_tuple == NULL || s_last_launch == NULL || s_try_launch == NULL || s_stream == NULL ||
        s_race_check == NULL || PyType_Ready(&FastLaunchType) < 0 ||
        PyType_Ready(&SteadyCallType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&FastLaunchType);
    if (PyModule_AddObject(m, "FastLaunch", (PyObject *)&FastLaunchType) < 0) {
        Py_DECREF(&FastLaunchType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SteadyCallType);
    if (PyModule_AddObject(m, "SteadyCall", (PyObject *)&SteadyCallType) < 0) {
        Py_DECREF(&SteadyCallType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
