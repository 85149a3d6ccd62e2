# cython: language_level=3, binding=True, embedsignature=False
"""The compiled core: ``DeviceGuard`` and ``device`` with the reference's behaviour, at C speed.

``device_guard.py`` is the reference; this file does what it does, in the same order. The messages and the
slow paths both use are ``_shared.py``'s, called where the reference calls them. What is compiled runs no
Python instruction between reading the device, switching and recording the debt, so an interrupt can only
surface from a Python call made here: a Python runtime, or the shared error paths. Those calls sit where
the reference makes them, under the same handlers.

A runtime that offers its C entry points (``c_entry_points()``: two capsules named by the C signatures
below) is called through them; any other is called through the ``DeviceRuntime`` protocol.
"""

cimport cython
from cpython.pycapsule cimport PyCapsule_CheckExact, PyCapsule_GetName, PyCapsule_GetPointer
from cpython.dict cimport PyDict_GetItemWithError
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject, PyTypeObject
from cpython.weakref cimport PyWeakref_GET_OBJECT, PyWeakref_NewRef
from libc.string cimport strcmp

import functools
import sys
import warnings
from types import GenericAlias

from . import _shared
from . import runtime as _runtime_module
from .errors import GuardError, UncheckedResultWarning

ctypedef int (*_get_device_f)(int *) noexcept nogil
ctypedef int (*_set_device_f)(int) noexcept nogil

# The capsules' names: the C signatures of the functions they hold.
cdef const char *_GET_SIGNATURE = b"cudaError_t (int *)"
cdef const char *_SET_SIGNATURE = b"cudaError_t (int)"
cdef int _INT_MAX = 2147483647

cdef _get_runtime = _runtime_module.get_runtime
cdef dict _runtime_globals = _runtime_module.__dict__
# Bound at import: a finaliser that runs at interpreter shutdown may find module globals already cleared.
cdef _warn = warnings.warn


ctypedef PyObject *(*_vectorcall_f)(PyObject *, PyObject **, size_t, PyObject *)


cdef extern from *:
    """
    /* A type's own dictionary, and making a type's objects callable through the vectorcall protocol: the
       pointer to call sits at `offset` in each object. */
    static PyObject *guard_lib_type_dict(PyTypeObject *type) { return type->tp_dict; }
    static void guard_lib_set_vectorcall(PyTypeObject *type, Py_ssize_t offset) {
        type->tp_vectorcall_offset = offset;
        type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    }
    /* Calling a type by vectorcall: taken over only where the type has such a call to fall back on. */
    static vectorcallfunc guard_lib_generic_device_call = NULL;
    static void guard_lib_take_over_device_call(PyTypeObject *type, void *call) {
        guard_lib_generic_device_call = type->tp_vectorcall;
        if (guard_lib_generic_device_call != NULL) type->tp_vectorcall = (vectorcallfunc)call;
    }
    static PyObject *guard_lib_call_device_generic(PyObject *type, PyObject **args, size_t nargsf,
                                                   PyObject *kwnames) {
        return guard_lib_generic_device_call(type, args, nargsf, kwnames);
    }
    /* DeviceGuard.__new__ refuses, as the reference's does; create and take make guards by the type's own
       allocation, kept here. */
    static newfunc guard_lib_guard_new = NULL;
    static PyObject *guard_lib_refuse_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
        (void)type; (void)args; (void)kwds;
        PyErr_SetString(PyExc_TypeError, "DeviceGuard cannot be constructed directly: use DeviceGuard.create(index)");
        return NULL;
    }
    static void guard_lib_take_over_guard_new(PyTypeObject *type) {
        guard_lib_guard_new = type->tp_new;
        type->tp_new = guard_lib_refuse_new;
    }
    static PyObject *guard_lib_make_guard(PyObject *type) {
        PyObject *none = PyTuple_New(0);
        if (none == NULL) return NULL;
        PyObject *made = guard_lib_guard_new((PyTypeObject *)type, none, NULL);
        Py_DECREF(none);
        return made;
    }
    /* The calling thread's token: its thread state's id, which the interpreter never hands out twice, where
       a thread's id is reused as soon as the thread ends. */
    #define guard_lib_thread_token() ((unsigned long long)PyThreadState_GetID(PyThreadState_Get()))
    """
    PyObject *_type_dict "guard_lib_type_dict"(PyTypeObject *type)
    void _set_vectorcall "guard_lib_set_vectorcall"(PyTypeObject *type, Py_ssize_t offset)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)
    void PyType_Modified(PyTypeObject *type)
    void _take_over_device_call "guard_lib_take_over_device_call"(PyTypeObject *type, void *call)
    object _call_device_generic "guard_lib_call_device_generic"(
        object type, PyObject **args, size_t nargsf, PyObject *kwnames
    )
    unsigned long long _thread_token "guard_lib_thread_token"()
    void _take_over_guard_new "guard_lib_take_over_guard_new"(PyTypeObject *type)
    object _make_guard "guard_lib_make_guard"(object type)


cdef extern from *:
    """
    /* How obj.name is bound, as the generic attribute lookup finds it, read without running any Python.
       guard_lib_binding answers what it is bound to, as a new reference; None, with `kind` unknown and no
       error set, where it cannot be known so (a class with an attribute lookup of its own, a data
       descriptor other than a slot, a dictionary searched whose keys compare in Python) or where there is
       none. `kind` says where it was found, and `offset` where a slot is. */
    #include <structmember.h>
    #define GUARD_LIB_UNKNOWN 0
    #define GUARD_LIB_CLASS 1   /* on the class, and the object has no dictionary to shadow it */
    #define GUARD_LIB_SLOT 2    /* in a slot of the object, at `offset` */
    #define GUARD_LIB_DICT 3    /* in the object's dictionary, or on the class with one to shadow it */
    #ifdef Py_T_OBJECT_EX
    #define GUARD_LIB_T_OBJECT_EX Py_T_OBJECT_EX
    #else
    #define GUARD_LIB_T_OBJECT_EX 16  /* T_OBJECT_EX, a slot's member type */
    #endif
    static unsigned int guard_lib_type_version(PyObject *obj);
    /* Whether a str is looked up in `d` with no Python run: every key an exact str, compared in C. A key
       of another type with the same hash is compared by its own __eq__, which may change the methods
       being read, or free them. */
    static int guard_lib_str_keys(PyObject *d) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(d, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key)) return 0;
        }
        return 1;
    }
    /* The last type version whose classes were all found to hold str keys alone: a change to any of them
       gives the type another version. */
    static unsigned int guard_lib_str_keys_version = 0;
    static int guard_lib_str_keys_in_mro(PyObject *obj) {
        unsigned int version = guard_lib_type_version(obj);
        PyObject *mro = Py_TYPE(obj)->tp_mro;
        if (version != 0 && version == guard_lib_str_keys_version) return 1;
        if (mro == NULL) return 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
            PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
            /* A static type's dictionary is C's, and Python cannot add to it. */
            if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE)) continue;
            if (base->tp_dict == NULL || !guard_lib_str_keys(base->tp_dict)) return 0;
        }
        guard_lib_str_keys_version = version;
        return 1;
    }
    static PyObject *guard_lib_binding(PyObject *obj, PyObject *name, int *kind, Py_ssize_t *offset) {
        PyTypeObject *type = Py_TYPE(obj);
        PyObject *dict = NULL, *found, *bound = NULL;
        *kind = GUARD_LIB_UNKNOWN;
        if (type->tp_getattro != PyObject_GenericGetAttr) Py_RETURN_NONE;
        /* Making the object's dictionary allocates, and a collection there may run any finaliser: first.
           From here on nothing runs Python, so nothing read can change or be freed before it is held. */
        if (type->tp_dictoffset != 0) {
            dict = PyObject_GenericGetDict(obj, NULL);
            if (dict == NULL) { PyErr_Clear(); Py_RETURN_NONE; }
        }
        if ((dict == NULL || guard_lib_str_keys(dict)) && guard_lib_str_keys_in_mro(obj)) {
            found = _PyType_Lookup(type, name);
            if (found != NULL && Py_TYPE(found)->tp_descr_set != NULL) {
                if (Py_IS_TYPE(found, &PyMemberDescr_Type)) {
                    PyMemberDef *member = ((PyMemberDescrObject *)found)->d_member;
                    if (member->type == GUARD_LIB_T_OBJECT_EX) {
                        bound = *(PyObject **)((char *)obj + member->offset);
                        *offset = member->offset;
                        *kind = GUARD_LIB_SLOT;
                    }
                }
            } else if (dict != NULL) {
                bound = PyDict_GetItemWithError(dict, name);
                if (bound == NULL && PyErr_Occurred()) PyErr_Clear();
                else if (bound == NULL) bound = found;
                *kind = GUARD_LIB_DICT;
            } else {
                bound = found;
                *kind = GUARD_LIB_CLASS;
            }
        }
        if (bound == NULL) {
            bound = Py_None;
            *kind = GUARD_LIB_UNKNOWN;
        }
        Py_INCREF(bound);
        Py_XDECREF(dict);  /* the object holds it: nothing ran since it was made */
        return bound;
    }
    /* The version of a type's attributes: it changes whenever one of them, or one of its bases', does.
       0 where none is assigned. */
    static unsigned int guard_lib_type_version(PyObject *obj) {
        PyTypeObject *type = Py_TYPE(obj);
    #if PY_VERSION_HEX < 0x030C0000
        if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG)) return 0;
    #endif
        return type->tp_version_tag;
    }
    static PyObject *guard_lib_slot(PyObject *obj, Py_ssize_t offset) {
        return *(PyObject **)((char *)obj + offset);
    }
    """
    int _UNKNOWN "GUARD_LIB_UNKNOWN"
    int _CLASS "GUARD_LIB_CLASS"
    int _SLOT "GUARD_LIB_SLOT"
    object _binding "guard_lib_binding"(object obj, object name, int *kind, Py_ssize_t *offset)
    unsigned int _type_version "guard_lib_type_version"(object obj)
    PyObject *_slot "guard_lib_slot"(object obj, Py_ssize_t offset)


cdef class _Entry:
    """One runtime's C entry points, and what its get_device and set_device were when it offered them."""

    # Weak, so that the cache keeps no runtime alive; the borrows hold their runtime themselves.
    cdef object runtime
    # What get_device and set_device were bound to: weakly where they allow it, as one of them may hold
    # the runtime.
    cdef object bound_get
    cdef object bound_set
    cdef bint weak_get
    cdef bint weak_set
    # Where they were found, and the version of the runtime's type then: while it stands, a method found
    # on the class is still the one found, and one in a slot is read from the slot alone.
    cdef unsigned int type_version
    cdef int kind_get
    cdef int kind_set
    cdef Py_ssize_t offset_get
    cdef Py_ssize_t offset_set
    cdef _get_device_f get_device
    cdef _set_device_f set_device


cdef inline bint _same(object held, bint weak, PyObject *now) noexcept:
    if now == NULL:
        return False
    if weak:
        return PyWeakref_GET_OBJECT(held) == now
    return <PyObject *>held == now


cdef inline bint _still_offered(_Entry entry, object runtime) noexcept:
    # The entry points stand for get_device and set_device only while those are the ones they stood for
    # when offered: a runtime whose methods were replaced since is called through them.
    cdef unsigned int version = _type_version(runtime)
    if version != 0 and version == entry.type_version:
        if entry.kind_get == _SLOT and entry.kind_set == _SLOT:
            return _same(entry.bound_get, entry.weak_get, _slot(runtime, entry.offset_get)) and _same(
                entry.bound_set, entry.weak_set, _slot(runtime, entry.offset_set)
            )
        if entry.kind_get == _CLASS and entry.kind_set == _CLASS:
            return True
    return _look_again(entry, runtime)


cdef bint _look_again(_Entry entry, object runtime) noexcept:
    # The version first: a change while the methods are read then shows as another version.
    cdef unsigned int version = _type_version(runtime)
    cdef int kind_get = _UNKNOWN
    cdef int kind_set = _UNKNOWN
    cdef Py_ssize_t offset_get = 0
    cdef Py_ssize_t offset_set = 0
    now = _binding(runtime, "get_device", &kind_get, &offset_get)
    if kind_get == _UNKNOWN or not _same(entry.bound_get, entry.weak_get, <PyObject *>now):
        return False
    now = _binding(runtime, "set_device", &kind_set, &offset_set)
    if kind_set == _UNKNOWN or not _same(entry.bound_set, entry.weak_set, <PyObject *>now):
        return False
    entry.kind_get, entry.offset_get = kind_get, offset_get
    entry.kind_set, entry.offset_set = kind_set, offset_set
    entry.type_version = version
    return True


cdef object _held(object bound, bint *weak):
    try:
        held = PyWeakref_NewRef(bound, None)
        weak[0] = True
    except TypeError:
        held = bound
        weak[0] = False
    return held


# Python 3.13 names the type in an unset slot's AttributeError by its qualified name, after its module
# unless that is builtins or __main__.
cdef bint _QUALIFIED_NAMES = sys.version_info >= (3, 13)
# From 3.12 a function carries __type_params__, which functools.wraps copies where the wrapped has them.
cdef bint _TYPE_PARAMS = sys.version_info >= (3, 12)


cdef str _type_name(object obj):
    """The type of ``obj`` as Python names it where an attribute of the object is missing."""
    cls = type(obj)
    if not _QUALIFIED_NAMES:
        return cls.__name__
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


cdef extern from *:
    """
    /* A dictionary's version changes on every write to it (Python 3.12 and 3.13 keep the field, deprecated;
       3.14 drops it, and there every read looks the default up). */
    #if PY_VERSION_HEX < 0x030E0000
    #define GUARD_LIB_DICT_VERSIONED 1
    #if defined(__GNUC__)
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    #endif
    static uint64_t guard_lib_dict_version(PyObject *d) { return ((PyDictObject *)d)->ma_version_tag; }
    #if defined(__GNUC__)
    #pragma GCC diagnostic pop
    #endif
    #else
    #define GUARD_LIB_DICT_VERSIONED 0
    static uint64_t guard_lib_dict_version(PyObject *d) { (void)d; return 0; }
    #endif
    """
    unsigned long long _dict_version "guard_lib_dict_version"(dict d)
    bint _DICT_VERSIONED "GUARD_LIB_DICT_VERSIONED"


cdef unsigned long long _seen_version = 0
# Borrowed, not held: while the dictionary's version stands, the dictionary holds it.
cdef PyObject *_seen_default = NULL


cdef inline object _default_runtime():
    # Read from the module's dictionary: ``use_runtime`` may replace the default at any time. While the
    # dictionary's version is the one last seen, nothing in it changed, so the default read then stands.
    global _seen_version, _seen_default
    cdef unsigned long long version = _dict_version(_runtime_globals)
    if _DICT_VERSIONED and version == _seen_version and _seen_default != NULL:
        return <object>_seen_default
    cdef PyObject *found = PyDict_GetItemWithError(_runtime_globals, "_default")
    _seen_default = found
    _seen_version = version
    return None if found == NULL else <object>found


# The last runtime that offered usable entry points, looked up again only when another comes.
cdef _Entry _last_entry = None
# The last runtime called through the Python protocol, by address and type alone, so that nothing keeps
# it alive: another runtime that later takes its address, of the same type, is called through the Python
# protocol too, which is always right.
cdef size_t _last_plain = 0
cdef object _last_plain_type = None


cdef void *_pointer(object capsule, const char *signature) except? NULL:
    # Only this exact signature: one with an exception clause could leave a Python error set.
    if not PyCapsule_CheckExact(capsule):
        return NULL
    cdef const char *name = PyCapsule_GetName(capsule)
    if name == NULL or strcmp(name, signature) != 0:
        return NULL
    return PyCapsule_GetPointer(capsule, name)


cdef inline _Entry _entry_of(object runtime):
    """The C entry points ``runtime`` offers, or None when it is called from Python."""
    cdef _Entry entry = _last_entry
    if entry is None or PyWeakref_GET_OBJECT(entry.runtime) != <PyObject *>runtime:
        if <size_t><PyObject *>runtime == _last_plain and type(runtime) is _last_plain_type:
            return None
        entry = _look_up_entry(runtime)
        if entry is None:
            return None
    return entry if _still_offered(entry, runtime) else None


cdef _Entry _look_up_entry(object runtime):
    global _last_entry, _last_plain, _last_plain_type
    # The methods are read, and held, before the runtime is asked: its offer speaks for them as they were
    # then, and whatever runs after (the asking, a finaliser at any allocation) may replace them. The
    # version is read before both, so that a change of the class in between shows.
    cdef unsigned int version = _type_version(runtime)
    cdef int kind_get = _UNKNOWN
    cdef int kind_set = _UNKNOWN
    cdef Py_ssize_t offset_get = 0
    cdef Py_ssize_t offset_set = 0
    bound_get = _binding(runtime, "get_device", &kind_get, &offset_get)
    bound_set = _binding(runtime, "set_device", &kind_set, &offset_set)
    cdef void *get_device = NULL
    cdef void *set_device = NULL
    if kind_get != _UNKNOWN and kind_set != _UNKNOWN:
        try:
            capsules = runtime.c_entry_points()
            if capsules is not None:
                get_device = _pointer(capsules[0], _GET_SIGNATURE)
                set_device = _pointer(capsules[1], _SET_SIGNATURE)
        except BaseException:
            # The reference never asks: an offer that cannot be read, or raises, is as none, and no borrow
            # may fail for it.
            get_device = set_device = NULL
    if get_device == NULL or set_device == NULL:
        _last_plain = <size_t><PyObject *>runtime
        _last_plain_type = type(runtime)
        return None
    entry = _Entry()
    entry.bound_get = _held(bound_get, &entry.weak_get)
    entry.bound_set = _held(bound_set, &entry.weak_set)
    entry.kind_get, entry.offset_get = kind_get, offset_get
    entry.kind_set, entry.offset_set = kind_set, offset_set
    entry.type_version = version
    entry.get_device = <_get_device_f>get_device
    entry.set_device = <_set_device_f>set_device
    try:
        entry.runtime = PyWeakref_NewRef(runtime, None)
    except TypeError:
        # No weak reference to it: its entry serves this borrow only, and the next looks it up again.
        entry.runtime = None
        return entry
    _last_entry = entry
    return entry


cdef class _Outcome:
    """What ``Ok`` and ``Err`` share: whether the caller has looked."""

    # Zero, as on every new object, means nobody is owed a look: one made without __init__ (as the
    # reference's, whose __init__ never ran) stays silent.
    cdef bint _unchecked

    # The reference's fields, read and written as it reads and writes them.
    @property
    def _checked(self):
        return not self._unchecked

    @_checked.setter
    def _checked(self, bint checked):
        self._unchecked = not checked

    def __del__(self):
        # There is no frame of this finaliser for the warning to skip: the default level is the drop.
        if self._unchecked:
            _warn(f"{self!r} was dropped without being checked", UncheckedResultWarning, stacklevel=1)


cdef class Ok(_Outcome):
    """The success of an operation, holding its value."""

    cdef public object _value
    __match_args__ = ("value",)
    __class_getitem__ = classmethod(GenericAlias)

    def __init__(self, value):
        self._value = value
        self._unchecked = True

    @property
    def value(self):
        """The value. Reading it counts as checking the result."""
        self._unchecked = False
        return self._value

    def is_ok(self):
        self._unchecked = False
        return True

    def is_err(self):
        self._unchecked = False
        return False

    def unwrap(self):
        self._unchecked = False
        return self._value

    def __repr__(self):
        return f"Ok({self._value!r})"


cdef class Err(_Outcome):
    """The failure of an operation, holding the GuardError that says why."""

    cdef public object _error
    __match_args__ = ("error",)

    def __init__(self, error):
        self._error = error
        self._unchecked = True

    @property
    def error(self):
        """The GuardError. Reading it counts as checking the result."""
        self._unchecked = False
        return self._error

    def is_ok(self):
        self._unchecked = False
        return False

    def is_err(self):
        self._unchecked = False
        return True

    def unwrap(self):
        self._unchecked = False
        raise self._error

    def __repr__(self):
        return f"Err({self._error!r})"


cdef inline Ok _ok(object value):
    cdef Ok outcome = Ok.__new__(Ok)
    outcome._value = value
    outcome._unchecked = True
    return outcome


cdef inline Err _err(object error):
    cdef Err outcome = Err.__new__(Err)
    outcome._error = error
    outcome._unchecked = True
    return outcome


# ``with`` looks ``__enter__`` and ``__exit__`` up on every use and calls what it finds: for a plain method,
# a bound method made, called through it, and dropped, which costs more than the whole borrow. So the
# borrows' classes hold these two as _FastMethod: bound, it is a _Bound from a freelist, called by
# vectorcall, and the call the ``with`` statement makes goes straight to the borrow. Every other call, and
# every attribute but the call, is the method's own.
# In the collector's care: a subclass's borrow, or a runtime, can keep one of these bound methods, and the
# cycle through it would otherwise never be freed.
@cython.auto_pickle(False)
@cython.final
@cython.freelist(8)
cdef class _Bound:
    # A borrow's ``__enter__`` or ``__exit__``, bound to it. (No docstring: ``__doc__`` is the method's.)

    cdef _vectorcall_f _call
    cdef _Borrow _borrow
    cdef object _function

    def __call__(self, *args, **kwargs):
        return self._function(self._borrow, *args, **kwargs)

    cdef object _method(self):
        return self._function.__get__(self._borrow, type(self._borrow))

    def __getattr__(self, name):
        return getattr(self._method(), name)

    def __dir__(self):
        return dir(self._method())

    @property
    def __doc__(self):
        return self._method().__doc__

    @property
    def __signature__(self):
        import inspect

        return inspect.signature(self._method())

    def __eq__(self, other):
        # Against another _Bound, the bound method's own comparison gives way to this one, reflected.
        return self._method() == other

    def __hash__(self):
        return hash(self._method())

    def __repr__(self):
        return repr(self._method())

    def __reduce__(self):
        return self._method().__reduce__()


cdef object _called_as_is(_Bound bound, PyObject **args, size_t nargsf, PyObject *kwnames):
    cdef Py_ssize_t nargs = PyVectorcall_NARGS(nargsf)
    cdef Py_ssize_t i
    positional = [bound._borrow]
    for i in range(nargs):
        positional.append(<object>args[i])
    keywords = {}
    if kwnames != NULL:
        for i, name in enumerate(<tuple>kwnames):
            keywords[name] = <object>args[nargs + i]
    return bound._function(*positional, **keywords)


# The calls a ``with`` statement makes: ``__enter__()`` and ``__exit__(type, value, traceback)``.
cdef object _enter_device(object bound, PyObject **args, size_t nargsf, PyObject *kwnames):
    if kwnames == NULL and PyVectorcall_NARGS(nargsf) == 0:
        return (<device>(<_Bound>bound)._borrow)._enter_here()
    return _called_as_is(<_Bound>bound, args, nargsf, kwnames)


cdef object _enter_guard(object bound, PyObject **args, size_t nargsf, PyObject *kwnames):
    if kwnames == NULL and PyVectorcall_NARGS(nargsf) == 0:
        return (<DeviceGuard>(<_Bound>bound)._borrow)._entered()
    return _called_as_is(<_Bound>bound, args, nargsf, kwnames)


cdef object _exit(object bound, PyObject **args, size_t nargsf, PyObject *kwnames):
    if kwnames == NULL:
        (<_Bound>bound)._borrow._close()
        return None
    return _called_as_is(<_Bound>bound, args, nargsf, kwnames)


@cython.auto_pickle(False)
@cython.final
cdef class _FastMethod:
    # A method of the borrows' classes whose bound form is a _Bound. Read from the class, it is the method
    # itself; found in the class's dictionary, it calls and reads as the method.

    cdef object _function
    cdef _vectorcall_f _call

    def __get__(self, instance, owner):
        if instance is None:
            return self._function
        cdef _Bound bound = _Bound.__new__(_Bound)
        bound._call = self._call
        bound._borrow = <_Borrow?>instance
        bound._function = self._function
        return bound

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._function, name)

    @property
    def __doc__(self):
        return self._function.__doc__

    def __repr__(self):
        return repr(self._function)


# A device is made and dropped on every use; a short freelist spares the allocator both ways.
@cython.auto_pickle(False)
@cython.freelist(8)
cdef class _Borrow:
    """What ``DeviceGuard`` and ``device`` share: the selection, and the restore that undoes it."""

    cdef object _index
    cdef object _requested_runtime
    cdef object _runtime
    # On the path through the Python protocol: the two devices as Python values.
    cdef object _original
    cdef object _current
    # On the C path (_entry set), the two devices as C values alone: making Python objects of them on every
    # borrow would cost more than the borrow's own calls.
    cdef int _c_original
    cdef int _c_current
    cdef unsigned long long _thread
    # A device's borrows for the threads that entered it while another held it, by thread token.
    cdef dict _elsewhere
    # Zero, as every new object's fields are, means nothing is owed: no set-up is needed to be safe.
    cdef bint _owes
    cdef _Entry _entry
    # Set by what makes a borrow (create, take, device.__init__): a subclass's __init__ that never calls
    # device.__init__ leaves a borrow that the reference cannot enter or close either.
    cdef bint _made

    cdef int _refuse_unmade(self, str field="_restored") except -1:
        if not self._made:
            raise AttributeError(f"'{_type_name(self)}' object has no attribute '{field}'", name=field, obj=self)
        return 0

    cdef int _refuse_unread(self, str field) except -1:
        # As the reference's unset slot: nothing was read before the first selection.
        if self._runtime is None:
            raise AttributeError(f"'{_type_name(self)}' object has no attribute '{field}'", name=field, obj=self)
        return 0

    @property
    def _restored(self):
        self._refuse_unmade()
        return not self._owes

    cdef object _runtime_used(self):
        return self._runtime

    cdef object _original_device(self):
        return self._original if self._entry is None else self._c_original

    cdef object _current_device(self):
        return self._current if self._entry is None else self._c_current

    cdef object _enter(self):
        # Only on a borrow that owes nothing: device's __enter__ refuses one entered already.
        if not self._made:
            self._refuse_unmade()
        requested = self._index
        if type(requested) is int:
            index = requested
        else:
            converted = _shared.as_int(requested)
            if isinstance(converted, GuardError):
                raise converted
            index = converted
        # Compared in C where the index fits a C value; only a huge one takes Python's comparisons.
        cdef int overflow = 0
        cdef long long c_index = PyLong_AsLongLongAndOverflow(index, &overflow)
        cdef bint fits = overflow == 0
        cdef bint negative
        if fits:
            negative = c_index < 0
        else:
            negative = index < 0
        if negative:
            raise GuardError(f"cannot select CUDA device {index}: a device index is >= 0", device_index=index)
        runtime = self._requested_runtime
        if runtime is None:
            runtime = _default_runtime()
            if runtime is None:
                runtime = _get_runtime()
        entry = _entry_of(runtime)
        if entry is not None and fits and c_index <= _INT_MAX:
            return self._enter_c(runtime, entry, <int>c_index, index)
        code, original = runtime.get_device()
        if code:
            raise _shared.cuda_error(runtime, "cannot read the current CUDA device", index, code)
        self._entry = None
        self._runtime = runtime
        self._original = original
        self._current = index
        self._thread = _thread_token()
        if index == original:
            self._owes = True
            return self
        # As in the reference, a refusal's settling cut short by an interrupt is settled by the outer
        # handler: nobody else can pay, since a with statement whose __enter__ raised never calls __exit__.
        try:
            try:
                # The restore is owed from the request, not from the switch's success.
                self._owes = True
                (code,) = runtime.set_device(index)
                if code:
                    raise _shared.cuda_error(runtime, f"cannot select CUDA device {index}", index, code)
                return self
            except BaseException:
                self._settle()
                raise
        except BaseException:
            self._settle()
            raise

    cdef object _enter_c(self, object runtime, _Entry entry, int c_index, object index):
        cdef int original = 0
        cdef int code = entry.get_device(&original)
        if code:
            raise _shared.cuda_error(runtime, "cannot read the current CUDA device", index, code)
        self._entry = entry
        self._runtime = runtime
        self._c_original = original
        self._c_current = c_index
        self._thread = _thread_token()
        self._owes = True
        if c_index == original:
            return self
        cdef _set_device_f set_device = entry.set_device
        try:
            try:
                with nogil:
                    code = set_device(c_index)
                if code:
                    raise _shared.cuda_error(runtime, f"cannot select CUDA device {index}", index, code)
                return self
            except BaseException:
                self._settle()
                raise
        except BaseException:
            self._settle()
            raise

    cdef void _put_back(self) except *:
        cdef int code
        if self._entry is None:
            _shared.restore(self._runtime, self._original, self._current, self._current)
            return
        cdef int original = self._c_original
        if not _still_offered(self._entry, self._runtime):
            _shared.restore(self._runtime, original, self._c_current, self._c_current)
            return
        cdef _set_device_f set_device = self._entry.set_device
        with nogil:
            code = set_device(original)
        if code:
            _shared.restore_failed(self._runtime, original, self._c_current, self._c_current, code)

    cdef void _settle(self) except *:
        # Only on the owning thread: another thread's device is not this guard's to touch.
        if not self._owes or self._thread != _thread_token():
            return
        runtime = self._runtime_used()
        original = self._original_device()
        read, now = runtime.get_device()
        if read or now != original:
            _shared.restore(runtime, original, self._current_device(), None if read else now)
        self._owes = False

    @property
    def original_device(self):
        """The device that was current before the selection, which ``close`` restores."""
        self._refuse_unread("_devices")
        return self._original_device()

    @property
    def current_device(self):
        """The device that was selected."""
        self._refuse_unread("_devices")
        return self._current_device()

    cdef int _close(self) except -1:
        cdef bint home = self._thread == _thread_token()
        if (not self._owes or not home) and self._elsewhere:
            own = self._elsewhere.get(_thread_token())
            if own is not None and (<_Borrow>own)._owes:
                (<_Borrow>own)._close()
                del self._elsewhere[_thread_token()]
                return 0
        if not self._owes:
            if not self._made:
                try:
                    self._refuse_unmade()
                except BaseException:
                    # As the reference's settling, which trips over the same missing field.
                    self._refuse_unmade()
            return 0
        # On its own thread, a C-path borrow of the device already current has nothing to undo and nothing
        # that can fail: its debt ends here, outside the handler the other cases need.
        if home and self._entry is not None and self._c_current == self._c_original:
            self._owes = False
            return 0
        try:
            if not home:
                raise _shared.not_owner(self._current_device(), "restored")
            if self._entry is not None:
                moved = self._c_current != self._c_original
            else:
                moved = self._current != self._original
            if moved:
                self._put_back()
            self._owes = False
            return 0
        except BaseException:
            self._settle()
            raise

    cdef void _settle_mine(self) except *:
        # Whichever borrow of this object the calling thread holds, if any.
        if self._owes and self._thread == _thread_token():
            self._settle()
        elif self._elsewhere:
            own = self._elsewhere.get(_thread_token())
            if own is not None:
                (<_Borrow>own)._settle()

    def close(self, *_exc_info):
        """Restore the caller's device. Closing again, or closing a guard taken over, does nothing."""
        self._close()

    def __copy__(self):
        raise TypeError(f"a {type(self).__name__} cannot be copied: DeviceGuard.take() hands a borrow over")

    def __deepcopy__(self, memo):
        raise TypeError(f"a {type(self).__name__} cannot be copied: DeviceGuard.take() hands a borrow over")

    def __reduce__(self):
        raise TypeError(f"a {type(self).__name__} cannot be pickled: it holds a thread's device selection")


@cython.auto_pickle(False)
cdef class DeviceGuard(_Borrow):
    """A borrowed CUDA device: selected by ``create``, the caller's device restored by ``close``.

    Use it as a context manager. A guard belongs to the thread that created it, because CUDA's current
    device is per thread. ``take()`` hands the borrow to a new guard; only that one restores.
    """

    # Only there to make a DeviceGuard larger than a _Borrow, which keeps it out of the freelist: an object
    # taken from it keeps the collector's "finalised" mark, so a reused guard would never warn again.
    cdef char _not_freelisted

    def __init__(self, *args, **kwargs):
        # The reference's guard has object's __init__, which on a made guard does nothing with any arguments.
        pass

    @classmethod
    def create(cls, device_index, *, runtime=None):
        """Select ``device_index`` on this thread and return a guard that restores the caller's device.

        Never raises for a CUDA failure or a refused index: those come back as ``Err(GuardError)``.
        """
        # Made as the reference's object.__new__(cls) makes it: no subclass's __new__ is asked.
        cdef DeviceGuard guard = <DeviceGuard>_make_guard(cls)
        guard._made = True
        guard._index = device_index
        guard._requested_runtime = runtime
        try:
            guard._enter()
            return _ok(guard)
        except GuardError as error:
            return _err(error)
        except BaseException:
            # _enter raised still owing (the runtime raised through both of its settlings), or no memory
            # was left for the Ok: the caller never received the guard, so finish it here.
            guard._settle()
            raise

    def take(self):
        """Hand the borrow to a new guard, which alone restores; this one is left looking restored."""
        if not self._owes:
            raise GuardError(
                f"cannot take over a DeviceGuard for CUDA device {self._current_device()}: it was closed or "
                "taken",
                device_index=self._current_device(),
            )
        if self._thread != _thread_token():
            raise GuardError(
                f"cannot take over a DeviceGuard for CUDA device {self._current_device()} from another thread: "
                "only the thread that created it can restore its device",
                device_index=self._current_device(),
            )
        cdef DeviceGuard taker = <DeviceGuard>_make_guard(DeviceGuard)
        taker._made = True
        taker._runtime = self._runtime
        taker._entry = self._entry
        taker._original = self._original
        taker._current = self._current
        taker._c_original = self._c_original
        taker._c_current = self._c_current
        taker._thread = self._thread
        # The taker owes before this one stops owing, so at no instant does nobody owe.
        taker._owes = True
        self._owes = False
        return taker

    def __enter__(self):
        return self._entered()

    cdef object _entered(self):
        # Refused before the body runs: it would run on whatever device this thread is on.
        if not self._owes:
            raise _shared.closed_guard(self._current_device())
        if self._thread != _thread_token():
            raise _shared.not_owner(self._current_device(), "entered")
        return self

    def __repr__(self):
        state = "open" if self._owes else "restored"
        return f"<DeviceGuard device {self._current_device()} (restores {self._original_device()}), {state}>"

    def __del__(self):
        # No restore here: the collector may run this on any thread. There is no frame of this finaliser
        # for the warning to skip, so it points at the drop with the default stack level.
        if self._owes:
            _warn(
                f"DeviceGuard for CUDA device {self._current_device()} was garbage-collected without close(); "
                f"device {self._original_device()} was never restored",
                ResourceWarning,
                stacklevel=1,
                source=self,
            )


@cython.auto_pickle(False)
cdef class device(_Borrow):
    """device(device_index, *, runtime=None)
--

``with guard_lib.device(i) as borrow:`` selects device ``i`` and restores the caller's on exit.

    For callers who prefer exceptions: entering raises GuardError where ``DeviceGuard.create`` returns
    an Err. The selection happens on entering, not on construction; once exited, it can be entered
    again. ``borrow.original_device`` and ``borrow.current_device`` are there once entered.

    ``@guard_lib.device(i)`` decorates a function: every call runs on device ``i`` with a borrow of its
    own, so recursive calls and calls from several threads each restore their own caller's device.
    """

    def __init__(self, device_index, *, runtime=None):
        self._index = device_index
        self._requested_runtime = runtime
        self._owes = False
        self._made = True

    def __enter__(self):
        return self._enter_here()

    cdef object _enter_here(self):
        if not self._made:
            self._refuse_unmade()
        cdef bint free = not self._owes
        cdef bint home = self._thread == _thread_token()
        cdef _Borrow held = None
        if not free and home:
            held = self
        elif self._elsewhere:
            held = self._elsewhere.get(_thread_token())
        if held is not None and held._owes:
            raise GuardError(
                f"guard_lib.device({self._index!r}) is already entered; it is not reentrant",
                device_index=held._current_device(),
            )
        try:
            if free:
                return self._enter()
            return self._enter_elsewhere()
        except BaseException:
            self._settle_mine()
            raise

    cdef object _enter_elsewhere(self):
        # Another thread holds this object's borrow, and only it can restore that one: this thread's with
        # gets a borrow of its own, which with ... as hands out and this thread's exit closes.
        cdef device borrow = device(self._index, runtime=self._requested_runtime)
        try:
            try:
                borrow._enter()
                if self._elsewhere is None:
                    self._elsewhere = {}
                self._elsewhere[_thread_token()] = borrow
                return borrow
            except BaseException:
                borrow._settle()
                raise
        except BaseException:
            borrow._settle()
            raise

    def __call__(self, function):
        self._refuse_unmade("_index")
        _shared.refuse_undecoratable(self._index, function)
        wrapper = functools.wraps(function)(_on_device(self._index, self._requested_runtime, function))
        if _TYPE_PARAMS and "__type_params__" not in wrapper.__dict__:
            # The reference's wrapper is a Python function, which has them (empty) where the wrapped has none.
            wrapper.__type_params__ = ()
        return wrapper


cdef object _on_device(object index, object runtime, object function):
    def on_device(*args, **kwargs):
        cdef device borrow = device(index, runtime=runtime)
        cdef bint entered = False
        try:
            try:
                borrow._enter()
                # Only now may _close restore: after an enter that raised, it would restore again
                # without looking where the thread is.
                entered = True
                return function(*args, **kwargs)
            finally:
                if entered:
                    borrow._close()
        except BaseException:
            # _enter raised still owing (the runtime raised through both of its settlings): nobody else
            # holds the borrow, so finish here.
            borrow._settle()
            raise

    return on_device


cdef int _install(type cls, str name, str function, _vectorcall_f call) except -1:
    cdef dict namespace = <dict>_type_dict(<PyTypeObject *>cls)
    cdef _FastMethod method = _FastMethod.__new__(_FastMethod)
    method._function = namespace[function]
    method._call = call
    namespace[name] = method
    PyType_Modified(<PyTypeObject *>cls)
    return 0


cdef object _make_device(object cls, PyObject **args, size_t nargsf, PyObject *kwnames):
    # ``device(i)``, made on every borrow, without the generic call's argument parsing; every other call
    # is the generic one.
    cdef device borrow
    if kwnames == NULL and PyVectorcall_NARGS(nargsf) == 1 and cls is device:
        borrow = device.__new__(device)
        borrow._index = <object>args[0]
        borrow._made = True
        return borrow
    return _call_device_generic(cls, args, nargsf, kwnames)


cdef int _install_fast_methods() except -1:
    cdef _Bound probe = _Bound.__new__(_Bound)
    _set_vectorcall(<PyTypeObject *>_Bound, <Py_ssize_t>(<char *>&probe._call - <char *><PyObject *>probe))
    # As in the reference, ``__exit__`` is ``close``.
    _install(_Borrow, "__exit__", "close", <_vectorcall_f>_exit)
    _install(device, "__enter__", "__enter__", <_vectorcall_f>_enter_device)
    _install(DeviceGuard, "__enter__", "__enter__", <_vectorcall_f>_enter_guard)
    _take_over_device_call(<PyTypeObject *>device, <void *>_make_device)
    _take_over_guard_new(<PyTypeObject *>DeviceGuard)
    return 0


_install_fast_methods()
