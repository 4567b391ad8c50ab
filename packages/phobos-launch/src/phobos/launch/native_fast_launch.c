/*
 * The native fast path: one call signature's checks, packing and cuLaunchKernelEx in C.
 *
 * native.py compiles this file once per machine and Python (the way Triton builds its
 * launcher) and makes one FastLaunch per call signature, GPU and thread from the table
 * that phobos.launch.table derives from the binder's tables: the C struct LaunchTable,
 * declared in phobos_launch_table.h, which table.c_header() writes for the build (with
 * the enums and constants this file uses).  Torch tensors are read through their
 * accessors, anything else through its __cuda_array_interface__.  Calling a FastLaunch
 * does what fastpath.py's generated Python does, with the same outcome: 0 when it
 * launched, the CUresult when the driver refused (nothing launched), None when an
 * argument fails a check or cannot be read -- the caller then takes the reference path,
 * which explains.  The checks that need no driver come first; which GPU holds an array
 * read through its interface is asked last, just before the launch.
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

#include "phobos_launch_table.h"

#if PY_VERSION_HEX >= 0x030B0000
#define PACK2(x, p) PyFloat_Pack2((x), (char *)(p), 1)
#define PACK4(x, p) PyFloat_Pack4((x), (char *)(p), 1)
#else
#define PACK2(x, p) _PyFloat_Pack2((x), (unsigned char *)(p), 1)
#define PACK4(x, p) _PyFloat_Pack4((x), (unsigned char *)(p), 1)
#endif

typedef int (*LaunchKernelEx)(void *config, void *function, void **params, void **extra);
typedef int (*PointerGetAttribute)(void *data, int attribute, unsigned long long pointer);

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
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *table;         /* the LaunchTable (a ctypes object): it keeps what it points at */
    const LaunchTable *t;    /* its memory */
    PyObject *device_object; /* t->device as an int, for the current-stream function */
    LaunchKernelEx launch;
    PointerGetAttribute pointer_attribute; /* NULL when no argument is a CAI array */
    void *function;
    char *config;
    char *params;
    void **kernel_params;
    unsigned int versions[MAX_TENSORS]; /* each torch type's version tag when resolved */
    Accessor accessors[MAX_TENSORS][N_ACCESSORS];
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
    case TYPE_I8: lo = INT8_MIN; hi = INT8_MAX; break;
    case TYPE_I16: lo = INT16_MIN; hi = INT16_MAX; break;
    case TYPE_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    case TYPE_U8: lo = 0; hi = UINT8_MAX; break;
    case TYPE_U16: case TYPE_BF16: lo = 0; hi = UINT16_MAX; break;
    case TYPE_U32: lo = 0; hi = UINT32_MAX; break;
    case TYPE_I64:
        if (is_unsigned) {
            return 0;
        }
        memcpy(dst, &v, 8);
        return 1;
    case TYPE_U64:
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
    case TYPE_I8: case TYPE_U8: { uint8_t x = (uint8_t)v; memcpy(dst, &x, 1); break; }
    case TYPE_I16: case TYPE_U16: case TYPE_BF16: {
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
static int pack_scalar(FastLaunch *self, const SlotEntry *slot, PyObject *arg) {
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
    case TYPE_BOOL: {
        int truth = PyObject_IsTrue(value);
        if (truth >= 0) {
            uint8_t x = (uint8_t)truth;
            memcpy(dst, &x, 1);
            ok = 1;
        }
        break;
    }
    case TYPE_F16: case TYPE_F32: case TYPE_F64: {
        if (!PyFloat_Check(value)) {
            break;
        }
        double x = PyFloat_AS_DOUBLE(value);
        if (slot->type == TYPE_F64) {
            memcpy(dst, &x, 8);
            ok = 1;
        } else {
            ok = (slot->type == TYPE_F16 ? PACK2(x, dst) : PACK4(x, dst)) == 0;
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
        if (!read_grid_entry(PyTuple_GET_ITEM(g, i), (long)self->t->max_grid[i], &dims[i])) {
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
    PyObject *meta = PyDict_Copy(self->t->meta);
    if (meta == NULL) {
        return give_up() ? -1 : 0;
    }
    for (int e = 0; e < self->t->nextents; e++) {
        PyObject *value = PyLong_FromLongLong(extents[e]);
        if (value == NULL ||
            PyDict_SetItem(meta, PyTuple_GET_ITEM(self->t->extent_names, e), value) < 0) {
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
        h = PyObject_CallOneArg(self->t->current_stream, self->device_object);
    } else if (PyLong_CheckExact(stream)) {
        return read_u64(stream, handle);
    } else {
        h = PyObject_CallOneArg(self->t->stream_handle, stream);
    }
    if (h == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = read_u64(h, handle);
    Py_DECREF(h);
    return ok;
}

/* The checks of a tensor's layout once read: alignment, unit stride, the 32-bit span. */
static int layout_fits(const TensorEntry *spec, const int64_t *shape, const int64_t *strides,
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
static int read_torch_tensor(FastLaunch *self, int i, PyObject *arg, int64_t *shape,
                             int64_t *strides, uint64_t *ptr) {
    const TensorEntry *spec = &self->t->tensors[i];
    const Accessor *accessors = self->accessors[i];
    PyObject *o = read_accessor(&accessors[A_DTYPE], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = o == spec->dtype;
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    o = read_accessor(&accessors[A_SHAPE], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    ok = read_dims(o, spec->rank, shape);
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    o = read_accessor(&accessors[A_DATA_PTR], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    ok = read_u64(o, ptr);
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    if (spec->needs_strides) {
        o = read_accessor(&accessors[A_STRIDE], arg);
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
    o = read_accessor(&accessors[A_GET_DEVICE], arg);
    if (o == NULL) {
        return give_up() ? -1 : 0;
    }
    int64_t device;
    ok = read_i64(o, &device) && device == self->t->device;
    Py_DECREF(o);
    if (!ok) {
        return 0;
    }
    if (spec->check_contiguous) {
        o = read_accessor(&accessors[A_IS_CONTIGUOUS], arg);
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

/* Whether a typestr names the element type `body` ("f4") as arrays.from_typestr reads it: in
 * any byte order but big-endian, which only a one-byte type may be. */
static int typestr_is(PyObject *typestr, PyObject *body) {
    const char *text = PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : NULL;
    const char *want = PyUnicode_AsUTF8(body);
    if (text == NULL || want == NULL) {
        PyErr_Clear();
        return 0;
    }
    return text[0] != '\0' && strcmp(text + 1, want) == 0 &&
           (text[0] != '>' || strcmp(text + 2, "1") == 0);
}

/* Reads and checks an array's __cuda_array_interface__ (v2/v3) as arrays.read_cai does (which
 * GPU holds its data is asked after every other check).  *producer is its v3 stream. */
static int read_cai_dict(const TensorEntry *spec, PyObject *cai, int64_t *shape,
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
    if (o == NULL || !typestr_is(o, spec->dtype)) {
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

static int read_cai_tensor(const TensorEntry *spec, PyObject *arg, int64_t *shape,
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
    const LaunchTable *t = self->t;
    if (PyTuple_GET_SIZE(args) != t->nargs) {
        Py_RETURN_NONE;
    }
    PyObject **items = &PyTuple_GET_ITEM(args, 0);
    for (int i = 0; i < t->ntensors; i++) {
        const TensorEntry *spec = &t->tensors[i];
        PyTypeObject *type = (PyTypeObject *)spec->type;
        /* A torch type that changed (an attribute reassigned) has a new version tag. */
        if (Py_TYPE(items[spec->position]) != type ||
            (spec->read == READ_TORCH && type->tp_version_tag != self->versions[i])) {
            Py_RETURN_NONE;
        }
    }
    int64_t shapes[MAX_TENSORS][MAX_RANK];
    int64_t strides[MAX_TENSORS][MAX_RANK];
    uint64_t ptrs[MAX_TENSORS];
    uint64_t producers[MAX_TENSORS];
    int nproducers = 0;
    for (int i = 0; i < t->ntensors; i++) {
        const TensorEntry *spec = &t->tensors[i];
        int ok, has_producer = 0;
        if (spec->read == READ_CAI) {
            ok = read_cai_tensor(spec, items[spec->position], shapes[i], strides[i], &ptrs[i],
                                 &has_producer, &producers[nproducers]);
            nproducers += has_producer;
        } else {
            ok = read_torch_tensor(self, i, items[spec->position], shapes[i], strides[i], &ptrs[i]);
        }
        if (ok < 0) {
            return NULL;
        }
        if (!ok) {
            Py_RETURN_NONE;
        }
    }
    int64_t extents[MAX_TENSORS * MAX_RANK];
    for (int e = 0; e < t->nextents; e++) {
        const DimEntry *c = &t->extent_sources[e];
        extents[e] = shapes[c->tensor][c->axis];
        if (t->index32 && extents[e] >= INDEX32_LIMIT) {
            Py_RETURN_NONE;
        }
    }
    for (int k = 0; k < t->nextent_checks; k++) {
        const DimEntry *c = &t->extent_checks[k];
        if (shapes[c->tensor][c->axis] != extents[c->value]) {
            Py_RETURN_NONE;
        }
    }
    for (int k = 0; k < t->nliteral_checks; k++) {
        const DimEntry *c = &t->literal_checks[k];
        if (shapes[c->tensor][c->axis] != c->value) {
            Py_RETURN_NONE;
        }
    }
    for (int s = 0; s < t->nslots; s++) {
        const SlotEntry *slot = &t->slots[s];
        char *dst = self->params + slot->offset;
        int ok;
        switch (slot->source) {
        case SOURCE_POINTER: ok = pack_integer(dst, slot->type, 0, ptrs[slot->a], 1); break;
        case SOURCE_STRIDE:
            ok = pack_integer(dst, slot->type, strides[slot->a][slot->b], 0, 0);
            break;
        case SOURCE_EXTENT: ok = pack_integer(dst, slot->type, extents[slot->a], 0, 0); break;
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
    for (int i = 0; i < t->ntensors; i++) {
        int ordinal = -1;
        if (t->tensors[i].read == READ_CAI &&
            (self->pointer_attribute(&ordinal, POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptrs[i]) ||
             ordinal != t->device)) {
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
    if (PyThread_get_thread_ident() != self->t->owner) {
        return PyObject_Vectorcall(self->t->other_thread, argv, 3, NULL);
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

/* FastLaunch(table): `table` is a phobos.launch.table.LaunchTable, made for this build (its
 * size is checked) and checked here again, so that no table makes it read out of bounds. */
static int fast_launch_init(FastLaunch *self, PyObject *args, PyObject *kwds) {
    PyObject *table;
    static char *names[] = {"table", NULL};
    fast_launch_clear(self);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", names, &table)) {
        return -1;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(table, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    const LaunchTable *t = view.buf;
    Py_ssize_t size = view.len;
    PyBuffer_Release(&view); /* the ctypes object's memory stays where it is while it lives */
    if (size != (Py_ssize_t)sizeof(LaunchTable)) {
        PyErr_SetString(PyExc_ValueError, "FastLaunch: not a LaunchTable of this build");
        return -1;
    }
    int bad = t->nargs < 0 || t->ntensors < 0 ||
              t->ntensors > MAX_TENSORS || t->nslots < 0 ||
              t->nslots > (int)(sizeof t->slots / sizeof t->slots[0]) || t->nextents < 0 ||
              t->nextents > (int)(sizeof t->extent_sources / sizeof t->extent_sources[0]) ||
              t->nextent_checks < 0 ||
              t->nextent_checks > (int)(sizeof t->extent_checks / sizeof t->extent_checks[0]) ||
              t->nliteral_checks < 0 ||
              t->nliteral_checks > (int)(sizeof t->literal_checks / sizeof t->literal_checks[0]) ||
              t->launch == 0 || t->config == 0 ||
              (t->nslots && (t->params == 0 || t->kernel_params == 0)) || !t->other_thread ||
              !t->current_stream || !t->stream_handle || !t->meta || !PyDict_Check(t->meta) ||
              !t->extent_names || !PyTuple_Check(t->extent_names) ||
              PyTuple_GET_SIZE(t->extent_names) != t->nextents;
    for (int i = 0; !bad && i < t->ntensors; i++) {
        const TensorEntry *e = &t->tensors[i];
        bad = e->rank < 1 || e->rank > MAX_RANK || e->align < 1 || e->position < 0 ||
              e->position >= t->nargs || e->itemsize < 1 || !e->type || !PyType_Check(e->type) ||
              !e->dtype || (e->span_check && !e->needs_strides) ||
              (e->unit_stride && !e->needs_strides && !e->check_contiguous) ||
              (e->read != READ_TORCH && e->read != READ_CAI) ||
              (e->read == READ_CAI &&
               (!PyUnicode_Check(e->dtype) || !e->needs_strides || t->pointer_attribute == 0));
    }
    const DimEntry *groups[3] = {t->extent_sources, t->extent_checks, t->literal_checks};
    int counts[3] = {t->nextents, t->nextent_checks, t->nliteral_checks};
    for (int g = 0; !bad && g < 3; g++) {
        for (int k = 0; !bad && k < counts[g]; k++) {
            const DimEntry *c = &groups[g][k];
            bad = c->tensor < 0 || c->tensor >= t->ntensors || c->axis < 0 ||
                  c->axis >= t->tensors[c->tensor].rank ||
                  (g == 1 && (c->value < 0 || c->value >= t->nextents));
        }
    }
    for (int s = 0; !bad && s < t->nslots; s++) {
        const SlotEntry *slot = &t->slots[s];
        bad = slot->type < TYPE_BOOL || slot->type > TYPE_F64 || slot->offset < 0 ||
              slot->a < 0 || slot->b < 0 ||
              (slot->source != SOURCE_SCALAR && slot->type >= TYPE_F16);
        switch (slot->source) {
        case SOURCE_POINTER: bad |= slot->a >= t->ntensors || slot->type != TYPE_U64; break;
        case SOURCE_STRIDE:
            bad |= slot->a >= t->ntensors || slot->b >= t->tensors[slot->a].rank ||
                   !t->tensors[slot->a].needs_strides;
            break;
        case SOURCE_EXTENT: bad |= slot->a >= t->nextents; break;
        case SOURCE_SCALAR:
            bad |= slot->a >= t->nargs || !slot->reader || !PyCallable_Check(slot->reader);
            break;
        default: bad = 1;
        }
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "FastLaunch: a table entry out of range");
        return -1;
    }
    for (int i = 0; i < t->ntensors; i++) {
        PyTypeObject *type = (PyTypeObject *)t->tensors[i].type;
        if (t->tensors[i].read == READ_CAI) {
            continue;
        }
        for (int a = 0; a < N_ACCESSORS; a++) {
            resolve_accessor(&self->accessors[i][a], type, a);
        }
        self->versions[i] = type->tp_version_tag;
        if (!(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || self->versions[i] == 0) {
            PyErr_SetString(PyExc_ValueError, "FastLaunch: the tensor type has no version tag");
            return -1;
        }
    }
    self->device_object = PyLong_FromLong(t->device);
    if (self->device_object == NULL) {
        return -1;
    }
    self->table = Py_NewRef(table);
    self->t = t;
    self->launch = (LaunchKernelEx)(uintptr_t)t->launch;
    self->pointer_attribute = (PointerGetAttribute)(uintptr_t)t->pointer_attribute;
    self->function = (void *)(uintptr_t)t->function;
    self->config = (char *)(uintptr_t)t->config;
    self->params = (char *)(uintptr_t)t->params;
    self->kernel_params = t->nslots ? (void **)(uintptr_t)t->kernel_params : NULL;
    memcpy(self->config + CONFIG_BLOCK, t->cta, sizeof t->cta);
    memcpy(self->config + CONFIG_SMEM, &t->dynamic_smem, 4);
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
    Py_VISIT(self->table);
    return 0;
}

static int fast_launch_clear(FastLaunch *self) {
    Py_CLEAR(self->table);
    Py_CLEAR(self->device_object);
    self->t = NULL;
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

static PyMemberDef fast_launch_members[] = {
    {"table", T_OBJECT, offsetof(FastLaunch, table), READONLY, "the LaunchTable it was made from"},
    {NULL, 0, 0, 0, NULL},
};

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
    .tp_members = fast_launch_members,
};

/*
 * SteadyCall(state, grid, fallback): a launch function in its steady state.  `state` is a
 * phobos.launch.SteadyState: `state.last_launch` is (the keyword values of the caller's last
 * launch, the LoadedKernel it used) or None.  A call with the same keywords (less stream=
 * and a false race_check=) goes straight to that kernel's try_launch; anything else --
 * other keywords, race_check, a launch the fast path does not take -- calls `fallback` with
 * the call's own arguments, which tries again and explains.
 */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *state;
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
    PyObject *last = PyObject_GetAttr(self->state, s_last_launch);
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
    PyObject *state, *grid, *fallback;
    static char *names[] = {"state", "grid", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO", names, &state, &grid, &fallback)) {
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
    self->state = Py_NewRef(state);
    self->grid = Py_NewRef(grid);
    self->fallback = Py_NewRef(fallback);
    self->vectorcall = steady_call;
    return (PyObject *)self;
}

static int steady_traverse(SteadyCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->state);
    Py_VISIT(self->grid);
    Py_VISIT(self->fallback);
    return 0;
}

static int steady_clear(SteadyCall *self) {
    Py_CLEAR(self->state);
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
    {"grid", T_OBJECT_EX, offsetof(SteadyCall, grid), READONLY, "the grid it launches on"},
    {"fallback", T_OBJECT_EX, offsetof(SteadyCall, fallback), READONLY,
     "the Python launcher that takes every call the steady state does not"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject SteadyCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "phobos_native_launch.SteadyCall",
    .tp_doc = "a launch function: its steady state in C, the rest in `fallback`",
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
