/*
 * The native fast path: one call signature's checks, packing and cuLaunchKernelEx in C.
 *
 * native.py compiles this file once per machine and Python (the way Triton builds its
 * launcher).  FastLaunch(table) reads a phobos.launch.table.LaunchTable, the one description
 * of a call signature's checks, as the C struct that table.c_header() declares in
 * phobos_launch_table.h (with the enums and constants used here).  Calling it does what
 * fastpath.py's generated Python does, from the same table: 0 when it launched, the CUresult
 * when the driver refused (nothing launched), None when an argument fails a check or cannot
 * be read -- the caller then takes the reference path, which explains.  Torch tensors are
 * read through their accessors, other arrays through __cuda_array_interface__; the driver is
 * asked which GPU holds those last, after every other check.  The launch block is the
 * thread's LaunchBlock (params.py), written in place.
 *
 * SteadyCall(state, grid, fallback) is a launch function whose steady state runs here too.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

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
    int is_method, flags;
    getter get;
    void *closure;
    PyCFunction method;
} Accessor;

/* A TMA descriptor a slot packed last, with the array layout it describes. */
enum { TENSOR_MAP_BYTES = 128, MAX_TENSOR_MAPS = 8 };
typedef struct {
    int known;
    uint64_t ptr;
    int64_t shape[MAX_RANK], strides[MAX_RANK];
    unsigned char bytes[TENSOR_MAP_BYTES];
} KeptMap;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *table;         /* the LaunchTable (a ctypes object): it keeps what it points at */
    const LaunchTable *t;    /* its memory */
    PyObject *device_object; /* t->device as an int, for the current-stream function */
    LaunchKernelEx launch;
    PointerGetAttribute pointer_attribute; /* NULL when no argument is a CAI array */
    void *function;
    char *config, *params;
    void **kernel_params;
    unsigned int versions[MAX_TENSORS]; /* each torch type's version tag when resolved */
    Accessor accessors[MAX_TENSORS][N_ACCESSORS];
    KeptMap maps[MAX_TENSOR_MAPS]; /* by a tensormap slot's b (its index among them) */
} FastLaunch;

static PyObject *empty_tuple, *accessor_names[N_ACCESSORS];
static PyObject *s_cai, *s_data, *s_shape, *s_typestr, *s_strides, *s_version, *s_stream, *s_mask,
    *s_last_launch, *s_try_launch, *s_race_check;

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

/* The outcome of a step: 1 goes on; 0 declines (return None); -1 raises (return NULL). */
#define STEP(outcome)                                                                          \
    do {                                                                                       \
        int step_ = (outcome);                                                                 \
        if (step_ <= 0) {                                                                      \
            return step_ < 0 ? NULL : Py_NewRef(Py_None);                                      \
        }                                                                                      \
    } while (0)

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
    int64_t lo = 0, hi = 0;
    switch (type) {
    case TYPE_I8: lo = INT8_MIN; hi = INT8_MAX; break;
    case TYPE_I16: lo = INT16_MIN; hi = INT16_MAX; break;
    case TYPE_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    case TYPE_U8: hi = UINT8_MAX; break;
    case TYPE_U16: case TYPE_BF16: hi = UINT16_MAX; break;
    case TYPE_U32: hi = UINT32_MAX; break;
    case TYPE_I64:
        memcpy(dst, &v, 8);
        return !is_unsigned;
    case TYPE_U64:
        if (!is_unsigned) {
            u = (uint64_t)v;
        }
        memcpy(dst, &u, 8);
        return is_unsigned || v >= 0;
    default: return 0;
    }
    if (is_unsigned || v < lo || v > hi) {
        return 0;
    }
    uint8_t x8 = (uint8_t)v;
    uint16_t x16 = (uint16_t)v;
    uint32_t x32 = (uint32_t)v;
    int width = hi == INT8_MAX || hi == UINT8_MAX ? 1 : hi == INT16_MAX || hi == UINT16_MAX ? 2 : 4;
    memcpy(dst, width == 1 ? (void *)&x8 : width == 2 ? (void *)&x16 : (void *)&x32, width);
    return 1;
}

/* A scalar argument (already read when not taken as is) into its slot; 0 fails, -1 raises. */
static int pack_scalar(FastLaunch *self, const SlotEntry *slot, PyObject *arg) {
    char *dst = self->params + slot->offset;
    int exact = (slot->exact == EXACT_FLOAT && PyFloat_CheckExact(arg)) ||
                (slot->exact == EXACT_INT && PyLong_CheckExact(arg)) ||
                (slot->exact == EXACT_BOOL && PyBool_Check(arg));
    PyObject *value = exact ? Py_NewRef(arg) : PyObject_CallOneArg(slot->reader, arg);
    if (value == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = 0;
    int64_t v;
    uint64_t u;
    if (slot->type == TYPE_BOOL) {
        int truth = PyObject_IsTrue(value);
        uint8_t x = (uint8_t)truth;
        memcpy(dst, &x, 1);
        ok = truth >= 0;
    } else if (slot->type == TYPE_F16 || slot->type == TYPE_F32 || slot->type == TYPE_F64) {
        double x = PyFloat_Check(value) ? PyFloat_AS_DOUBLE(value) : 0.0;
        if (PyFloat_Check(value) && slot->type == TYPE_F64) {
            memcpy(dst, &x, 8);
            ok = 1;
        } else if (PyFloat_Check(value)) {
            ok = (slot->type == TYPE_F16 ? PACK2(x, dst) : PACK4(x, dst)) == 0;
        }
    } else if (read_i64(value, &v)) {
        ok = pack_integer(dst, slot->type, v, 0, 0);
    } else if (read_u64(value, &u)) {
        ok = pack_integer(dst, slot->type, 0, u, 1);
    }
    Py_DECREF(value);
    return ok ? 1 : give_up() ? -1 : 0;
}

/* A grid tuple of 1 to 3 exact ints, each in 1 .. its limit. */
static int read_grid_tuple(FastLaunch *self, PyObject *g, uint32_t dims[3]) {
    Py_ssize_t n = PyTuple_CheckExact(g) ? PyTuple_GET_SIZE(g) : 0;
    if (n < 1 || n > 3) {
        return 0;
    }
    dims[1] = dims[2] = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(g, i);
        int overflow = 0;
        long v = PyLong_CheckExact(o) ? PyLong_AsLongAndOverflow(o, &overflow) : 0;
        if (overflow || v < 1 || v > self->t->max_grid[i]) {
            PyErr_Clear();
            return 0;
        }
        dims[i] = (uint32_t)v;
    }
    return 1;
}

/* The grid: a tuple, or the grid function called with meta (compile-time values, extents). */
static int read_grid(FastLaunch *self, PyObject *grid, const int64_t *extents, uint32_t dims[3]) {
    if (PyTuple_CheckExact(grid) || !PyCallable_Check(grid)) {
        return read_grid_tuple(self, grid, dims);
    }
    PyObject *meta = PyDict_Copy(self->t->meta), *g = NULL;
    for (int e = 0; meta != NULL && e < self->t->nextents; e++) {
        PyObject *value = PyLong_FromLongLong(extents[e]);
        PyObject *name = PyTuple_GET_ITEM(self->t->extent_names, e);
        if (value == NULL || PyDict_SetItem(meta, name, value) < 0) {
            Py_CLEAR(meta);
        }
        Py_XDECREF(value);
    }
    if (meta != NULL) {
        g = PyObject_CallOneArg(grid, meta);
        Py_DECREF(meta);
    }
    if (g == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = read_grid_tuple(self, g, dims);
    Py_DECREF(g);
    return ok;
}

/* The launch stream: the library's current stream, an int handle, or a stream object's. */
static int read_stream(FastLaunch *self, PyObject *stream, uint64_t *handle) {
    if (PyLong_CheckExact(stream)) {
        return read_u64(stream, handle);
    }
    PyObject *h = stream == Py_None
                      ? PyObject_CallOneArg(self->t->current_stream, self->device_object)
                      : PyObject_CallOneArg(self->t->stream_handle, stream);
    if (h == NULL) {
        return give_up() ? -1 : 0;
    }
    int ok = read_u64(h, handle);
    Py_DECREF(h);
    return ok;
}

/* A TMA descriptor into DST: the one kept for this array layout, else the slot's reader's
   (phobos.launch.tensormaps.TensorMaps, which asks the driver), kept.  1 packed, 0 gives
   up (the reference path then explains), -1 raises. */
static int pack_tensor_map(FastLaunch *self, const SlotEntry *slot, char *dst, uint64_t ptr,
                           const int64_t *shape, const int64_t *strides) {
    KeptMap *kept = &self->maps[slot->b];
    int rank = self->t->tensors[slot->a].rank;
    size_t axes = (size_t)rank * sizeof(int64_t);
    if (kept->known && kept->ptr == ptr && !memcmp(kept->shape, shape, axes) &&
        !memcmp(kept->strides, strides, axes)) {
        memcpy(dst, kept->bytes, TENSOR_MAP_BYTES);
        return 1;
    }
    PyObject *shape_tuple = PyTuple_New(rank), *strides_tuple = PyTuple_New(rank);
    PyObject *made = NULL;
    int ok = shape_tuple && strides_tuple;
    for (int a = 0; ok && a < rank; a++) {
        PyObject *n = PyLong_FromLongLong(shape[a]), *s = PyLong_FromLongLong(strides[a]);
        ok = n && s;
        if (n) PyTuple_SET_ITEM(shape_tuple, a, n);
        if (s) PyTuple_SET_ITEM(strides_tuple, a, s);
    }
    if (ok) {
        PyObject *address = PyLong_FromUnsignedLongLong(ptr);
        made = address ? PyObject_CallFunctionObjArgs(slot->reader, address, shape_tuple,
                                                      strides_tuple, NULL)
                       : NULL;
        Py_XDECREF(address);
    }
    Py_XDECREF(shape_tuple);
    Py_XDECREF(strides_tuple);
    if (made == NULL) {
        return give_up() ? -1 : 0;
    }
    ok = PyBytes_Check(made) && PyBytes_GET_SIZE(made) == TENSOR_MAP_BYTES;
    if (ok) {
        memcpy(kept->bytes, PyBytes_AS_STRING(made), TENSOR_MAP_BYTES);
        memcpy(dst, kept->bytes, TENSOR_MAP_BYTES);
        kept->ptr = ptr;
        memcpy(kept->shape, shape, axes);
        memcpy(kept->strides, strides, axes);
        kept->known = 1;
    }
    Py_DECREF(made);
    return ok;
}

/* The checks of a tensor's layout once read: alignment, unit stride, rows, the 32-bit span. */
static int layout_fits(const TensorEntry *spec, const int64_t *shape, const int64_t *strides,
                       uint64_t ptr, int strides_read) {
    int last = spec->rank - 1;
    if (ptr % (uint64_t)spec->align ||
        (strides_read && spec->unit_stride && strides[last] != 1 && shape[last] > 1)) {
        return 0;
    }
    for (int a = 0; spec->row_words > 1 && a < last; a++) {
        if (shape[a] > 1 && strides[a] % spec->row_words) {
            return 0;
        }
    }
    int64_t span = 0, part;
    for (int a = 0; spec->span_check && a < spec->rank; a++) {
        int64_t step = strides[a] < 0 ? -strides[a] : strides[a];
        if (shape[a] > 1 && (__builtin_mul_overflow(shape[a] - 1, step, &part) ||
                             __builtin_add_overflow(span, part, &span))) {
            return 0;
        }
    }
    return span < INDEX32_LIMIT;
}

/* Reads and checks a torch tensor; 1 fits, 0 does not (or cannot tell), -1 raises. */
static int read_torch_tensor(FastLaunch *self, int i, PyObject *arg, int64_t *shape,
                             int64_t *strides, uint64_t *ptr) {
    const TensorEntry *spec = &self->t->tensors[i];
    const Accessor *accessors = self->accessors[i];
    int64_t device;
#define READ(which, test)                                                                      \
    do {                                                                                       \
        PyObject *o = read_accessor(&accessors[which], arg);                                   \
        if (o == NULL) {                                                                       \
            return give_up() ? -1 : 0;                                                         \
        }                                                                                      \
        int ok = (test);                                                                       \
        Py_DECREF(o);                                                                          \
        if (!ok) {                                                                             \
            return 0;                                                                          \
        }                                                                                      \
    } while (0)
    READ(A_DTYPE, o == spec->dtype);
    READ(A_SHAPE, read_dims(o, spec->rank, shape));
    READ(A_DATA_PTR, read_u64(o, ptr));
    if (spec->needs_strides) {
        READ(A_STRIDE, read_dims(o, spec->rank, strides));
    }
    if (!layout_fits(spec, shape, strides, *ptr, spec->needs_strides)) {
        return 0;
    }
    READ(A_GET_DEVICE, read_i64(o, &device) && device == self->t->device);
    if (spec->check_contiguous) {
        READ(A_IS_CONTIGUOUS, o == Py_True);
    }
#undef READ
    return 1;
}

/* Whether a typestr names the element type `body` ("f4") as dtypes.from_typestr reads it: in
 * any byte order but big-endian, which only a one-byte type may be. */
static int typestr_is(PyObject *typestr, PyObject *body) {
    const char *text = typestr != NULL && PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : 0;
    const char *want = PyUnicode_AsUTF8(body);
    if (text == NULL || want == NULL) {
        PyErr_Clear();
        return 0;
    }
    return text[0] && !strcmp(text + 1, want) && (text[0] != '>' || !strcmp(text + 2, "1"));
}

/* Reads and checks an array's __cuda_array_interface__ (v2/v3) as arrays.cai_fields does (which
 * GPU holds its data is asked later); 1 fits, 0 does not, -1 raises.  *producer is its v3
 * stream, if it names one. */
static int read_cai_tensor(const TensorEntry *spec, PyObject *arg, int64_t *shape,
                           int64_t *strides, uint64_t *ptr, int *has_producer,
                           uint64_t *producer) {
    PyObject *cai = PyObject_GetAttr(arg, s_cai);
    if (cai == NULL || !PyDict_Check(cai)) {
        Py_XDECREF(cai);
        return give_up() ? -1 : 0;
    }
    PyObject *mask = PyDict_GetItemWithError(cai, s_mask);
    PyObject *data = PyDict_GetItemWithError(cai, s_data);
    PyObject *dims = PyDict_GetItemWithError(cai, s_shape);
    PyObject *steps = PyDict_GetItemWithError(cai, s_strides);
    PyObject *version = PyDict_GetItemWithError(cai, s_version);
    PyObject *stream = PyDict_GetItemWithError(cai, s_stream);
    int ok = (mask == NULL || mask == Py_None) &&
                           typestr_is(PyDict_GetItemWithError(cai, s_typestr), spec->dtype) &&
                           data != NULL && PyTuple_Check(data) && PyTuple_GET_SIZE(data) >= 2 &&
                           read_u64(PyTuple_GET_ITEM(data, 0), ptr) && *ptr != 0 &&
                           dims != NULL && read_dims(dims, spec->rank, shape);
    if (ok && spec->written) {
        ok = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) == 0; /* a readonly array is refused */
    }
    if (ok && (steps == NULL || steps == Py_None)) {
        int64_t step = 1;
        for (int a = spec->rank - 1; a >= 0; a--) {
            strides[a] = step;
            step *= shape[a] > 1 ? shape[a] : 1;
        }
    } else if (ok) {
        ok = read_dims(steps, spec->rank, strides);
        for (int a = 0; ok && a < spec->rank; a++) {
            ok = strides[a] % spec->itemsize == 0;
            strides[a] /= spec->itemsize;
        }
    }
    int64_t v = 0;
    *has_producer = ok && version != NULL && read_i64(version, &v) && v >= 3 &&
                    stream != NULL && stream != Py_None;
    if (*has_producer) {
        ok = read_u64(stream, producer);
    }
    ok = ok && !PyErr_Occurred() && layout_fits(spec, shape, strides, *ptr, 1);
    Py_DECREF(cai);
    return !ok && give_up() ? -1 : ok;
}

/* One launch of `args` (a tuple); the body of fast_launch_call. */
static PyObject *launch_args(FastLaunch *self, PyObject *grid, PyObject *args, PyObject *stream) {
    const LaunchTable *t = self->t;
    if (PyTuple_GET_SIZE(args) != t->nargs) {
        Py_RETURN_NONE;
    }
    PyObject **items = &PyTuple_GET_ITEM(args, 0);
    for (int i = 0; i < t->ntensors; i++) {
        PyTypeObject *type = (PyTypeObject *)t->tensors[i].type;
        /* A torch type that changed (an attribute reassigned) has a new version tag. */
        if (Py_TYPE(items[t->tensors[i].position]) != type ||
            (t->tensors[i].read == READ_TORCH && type->tp_version_tag != self->versions[i])) {
            Py_RETURN_NONE;
        }
    }
    int64_t shapes[MAX_TENSORS][MAX_RANK], strides[MAX_TENSORS][MAX_RANK];
    int64_t extents[MAX_TENSORS * MAX_RANK];
    uint64_t ptrs[MAX_TENSORS], producers[MAX_TENSORS], handle;
    uint32_t dims[3];
    int nproducers = 0;
    for (int i = 0; i < t->ntensors; i++) {
        const TensorEntry *spec = &t->tensors[i];
        PyObject *arg = items[spec->position];
        int has_producer = 0;
        STEP(spec->read == READ_CAI
                 ? read_cai_tensor(spec, arg, shapes[i], strides[i], &ptrs[i], &has_producer,
                                   &producers[nproducers])
                 : read_torch_tensor(self, i, arg, shapes[i], strides[i], &ptrs[i]));
        nproducers += has_producer;
    }
    for (int e = 0; e < t->nextents; e++) {
        const DimEntry *c = &t->extent_sources[e];
        extents[e] = shapes[c->tensor][c->axis];
        STEP(!t->index32 || extents[e] < INDEX32_LIMIT);
    }
    for (int k = 0; k < t->nextent_checks; k++) {
        const DimEntry *c = &t->extent_checks[k];
        STEP(shapes[c->tensor][c->axis] == extents[c->value]);
    }
    for (int k = 0; k < t->nliteral_checks; k++) {
        const DimEntry *c = &t->literal_checks[k];
        STEP(shapes[c->tensor][c->axis] == c->value);
    }
    for (int s = 0; s < t->nslots; s++) {
        const SlotEntry *slot = &t->slots[s];
        char *dst = self->params + slot->offset;
        switch (slot->source) {
        case SOURCE_POINTER: STEP(pack_integer(dst, slot->type, 0, ptrs[slot->a], 1)); break;
        case SOURCE_STRIDE:
            STEP(pack_integer(dst, slot->type, strides[slot->a][slot->b], 0, 0));
            break;
        case SOURCE_EXTENT: STEP(pack_integer(dst, slot->type, extents[slot->a], 0, 0)); break;
        case SOURCE_TENSORMAP:
            STEP(pack_tensor_map(self, slot, dst, ptrs[slot->a], shapes[slot->a],
                                 strides[slot->a]));
            break;
        default: STEP(pack_scalar(self, slot, items[slot->a]));
        }
    }
    STEP(read_grid(self, grid, extents, dims));
    STEP(read_stream(self, stream, &handle));
    /* An array made on another stream: the reference path makes the launch wait for it. */
    uint64_t launch_stream = handle ? handle : LEGACY_DEFAULT_STREAM;
    for (int p = 0; p < nproducers; p++) {
        STEP((producers[p] ? producers[p] : LEGACY_DEFAULT_STREAM) == launch_stream);
    }
    /* Last, the driver: which GPU holds each array read through its interface. */
    for (int i = 0; i < t->ntensors; i++) {
        int ordinal = -1;
        STEP(t->tensors[i].read != READ_CAI ||
             (!self->pointer_attribute(&ordinal, POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptrs[i]) &&
              ordinal == t->device));
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
    if (PyTuple_Check(argv[1])) {
        return launch_args(self, argv[0], argv[1], argv[2]);
    }
    if (!PyList_Check(argv[1])) {
        Py_RETURN_NONE;
    }
    PyObject *tuple = PyList_AsTuple(argv[1]); /* a scalar's reader may change a list */
    PyObject *result = tuple == NULL ? NULL : launch_args(self, argv[0], tuple, argv[2]);
    Py_XDECREF(tuple);
    return result;
}

/* Whether a table is one this file can read without going out of bounds. */
static int table_fits(const LaunchTable *t) {
    const int counts[3] = {t->nextents, t->nextent_checks, t->nliteral_checks};
    const int limits[3] = {sizeof t->extent_sources / sizeof(DimEntry),
                           sizeof t->extent_checks / sizeof(DimEntry),
                           sizeof t->literal_checks / sizeof(DimEntry)};
    const DimEntry *groups[3] = {t->extent_sources, t->extent_checks, t->literal_checks};
    if (t->nargs < 0 || t->ntensors < 0 || t->ntensors > MAX_TENSORS || t->nslots < 0 ||
        t->nslots > (int)(sizeof t->slots / sizeof(SlotEntry)) || !t->launch || !t->config ||
        (t->nslots && (!t->params || !t->kernel_params)) || !t->other_thread ||
        !t->current_stream || !t->stream_handle || !t->meta || !PyDict_Check(t->meta) ||
        !t->extent_names || !PyTuple_Check(t->extent_names) ||
        PyTuple_GET_SIZE(t->extent_names) != t->nextents) {
        return 0;
    }
    for (int i = 0; i < t->ntensors; i++) {
        const TensorEntry *e = &t->tensors[i];
        if (e->rank < 1 || e->rank > MAX_RANK || e->align < 1 || e->position < 0 ||
            e->position >= t->nargs || e->itemsize < 1 || !e->type || !PyType_Check(e->type) ||
            !e->dtype || (e->span_check && !e->needs_strides) || e->row_words < 1 ||
            (e->row_words > 1 && !e->needs_strides) ||
            (e->unit_stride && !e->needs_strides && !e->check_contiguous) ||
            (e->read != READ_TORCH && e->read != READ_CAI) ||
            (e->read == READ_CAI &&
             (!PyUnicode_Check(e->dtype) || !e->needs_strides || !t->pointer_attribute))) {
            return 0;
        }
    }
    for (int g = 0; g < 3; g++) {
        for (int k = 0; k < counts[g]; k++) {
            const DimEntry *c = &groups[g][k];
            if (counts[g] > limits[g] || c->tensor < 0 || c->tensor >= t->ntensors ||
                c->axis < 0 || c->axis >= t->tensors[c->tensor].rank ||
                (g == 1 && (c->value < 0 || c->value >= t->nextents))) {
                return 0;
            }
        }
    }
    for (int s = 0; s < t->nslots; s++) {
        const SlotEntry *slot = &t->slots[s];
        int a = slot->a, bad = slot->type < TYPE_BOOL || slot->type > TYPE_TMAP ||
                              slot->offset < 0 || a < 0 || slot->b < 0 ||
                              (slot->source != SOURCE_SCALAR && slot->type >= TYPE_F16 &&
                               slot->source != SOURCE_TENSORMAP) ||
                              ((slot->source == SOURCE_TENSORMAP) != (slot->type == TYPE_TMAP));
        switch (slot->source) {
        case SOURCE_POINTER: bad |= a >= t->ntensors || slot->type != TYPE_U64; break;
        case SOURCE_STRIDE:
            bad |= a >= t->ntensors || slot->b >= t->tensors[a].rank ||
                   !t->tensors[a].needs_strides;
            break;
        case SOURCE_EXTENT: bad |= a >= t->nextents; break;
        case SOURCE_SCALAR:
            bad |= a >= t->nargs || !slot->reader || !PyCallable_Check(slot->reader);
            break;
        case SOURCE_TENSORMAP:
            bad |= a >= t->ntensors || slot->b >= MAX_TENSOR_MAPS ||
                   !t->tensors[a].needs_strides || !slot->reader ||
                   !PyCallable_Check(slot->reader);
            break;
        default: bad = 1;
        }
        if (bad) {
            return 0;
        }
    }
    return 1;
}

static int fast_launch_clear(FastLaunch *self) {
    memset(self->maps, 0, sizeof self->maps);
    Py_CLEAR(self->table);
    Py_CLEAR(self->device_object);
    self->t = NULL;
    self->vectorcall = NULL;
    return 0;
}

/* FastLaunch(table): a LaunchTable of this build (its size is checked), checked again here. */
static int fast_launch_init(FastLaunch *self, PyObject *args, PyObject *kwds) {
    PyObject *table;
    static char *names[] = {"table", NULL};
    Py_buffer view;
    fast_launch_clear(self);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", names, &table) ||
        PyObject_GetBuffer(table, &view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    const LaunchTable *t = view.buf; /* the ctypes object's memory stays put while it lives */
    Py_ssize_t size = view.len;
    PyBuffer_Release(&view);
    if (size != (Py_ssize_t)sizeof(LaunchTable) || !table_fits(t)) {
        PyErr_SetString(PyExc_ValueError, "FastLaunch: not a LaunchTable of this build");
        return -1;
    }
    for (int i = 0; i < t->ntensors; i++) {
        PyTypeObject *type = (PyTypeObject *)t->tensors[i].type;
        for (int a = 0; t->tensors[i].read == READ_TORCH && a < N_ACCESSORS; a++) {
            resolve_accessor(&self->accessors[i][a], type, a);
        }
        self->versions[i] = type->tp_version_tag;
        if (t->tensors[i].read == READ_TORCH &&
            (!(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || self->versions[i] == 0)) {
            PyErr_SetString(PyExc_ValueError, "FastLaunch: the tensor type has no version tag");
            return -1;
        }
    }
    if ((self->device_object = PyLong_FromLong(t->device)) == NULL) {
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

static int fast_launch_traverse(FastLaunch *self, visitproc visit, void *arg) {
    Py_VISIT(self->table);
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
    .tp_new = PyType_GenericNew,
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
    PyObject *state, *grid, *fallback;
} SteadyCall;

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
    PyObject *try_launch = NULL, *args = NULL, *code = NULL, *stream = Py_None;
    if (!PyTuple_CheckExact(last) || PyTuple_GET_SIZE(last) != 2 ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(last, 0))) {
        goto done;
    }
    PyObject *values = PyTuple_GET_ITEM(last, 0);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames), matched = 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *value = argv[nargs + k], *expected;
        if (same_name(name, s_stream)) {
            stream = value;
        } else if (same_name(name, s_race_check)) {
            if (PyObject_IsTrue(value) != 0) {
                goto done;
            }
        } else if ((expected = PyDict_GetItemWithError(values, name)) == NULL ||
                   PyObject_RichCompareBool(expected, value, Py_EQ) <= 0) {
            goto done;
        } else {
            matched++;
        }
    }
    if (matched != PyDict_GET_SIZE(values) ||
        (try_launch = PyObject_GetAttr(PyTuple_GET_ITEM(last, 1), s_try_launch)) == NULL ||
        (args = PyTuple_New(nargs)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyTuple_SET_ITEM(args, i, Py_NewRef(argv[i]));
    }
    PyObject *call[3] = {self->grid, args, stream};
    code = PyObject_Vectorcall(try_launch, call, 3, NULL);
done:
    Py_XDECREF(try_launch);
    Py_XDECREF(args);
    Py_DECREF(last);
    int launched = code != NULL && PyLong_CheckExact(code) && PyLong_AsLong(code) == 0;
    Py_XDECREF(code);
    return launched ? 1 : PyErr_Occurred() && give_up() < 0 ? -1 : 0;
}

static PyObject *steady_call(PyObject *callable, PyObject *const *argv, size_t nargsf,
                             PyObject *kwnames) {
    SteadyCall *self = (SteadyCall *)callable;
    int launched = launch_steadily(self, argv, PyVectorcall_NARGS(nargsf), kwnames);
    if (launched) {
        return launched < 0 ? NULL : Py_NewRef(Py_None);
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
    if (self != NULL) {
        self->state = Py_NewRef(state);
        self->grid = Py_NewRef(grid);
        self->fallback = Py_NewRef(fallback);
        self->vectorcall = steady_call;
    }
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
    PyObject **strings[] = {&accessor_names[A_DTYPE], &accessor_names[A_SHAPE],
                            &accessor_names[A_DATA_PTR], &accessor_names[A_STRIDE],
                            &accessor_names[A_GET_DEVICE], &accessor_names[A_IS_CONTIGUOUS],
                            &s_cai, &s_data, &s_shape, &s_typestr, &s_strides, &s_version,
                            &s_stream, &s_mask, &s_last_launch, &s_try_launch, &s_race_check};
    const char *texts[] = {"dtype", "shape", "data_ptr", "stride", "get_device", "is_contiguous",
                           "__cuda_array_interface__", "data", "shape", "typestr", "strides",
                           "version", "stream", "mask", "last_launch", "try_launch",
                           "race_check"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        if ((*strings[k] = PyUnicode_InternFromString(texts[k])) == NULL) {
            return NULL;
        }
    }
    PyObject *m = (empty_tuple = PyTuple_New(0)) == NULL ? NULL : PyModule_Create(&module);
    if (m != NULL && (PyModule_AddType(m, &FastLaunchType) < 0 ||
                      PyModule_AddType(m, &SteadyCallType) < 0)) {
        Py_CLEAR(m);
    }
    return m;
}
