# cython: language_level=3
"""Compiled ``with`` guards that bound what the core can cost, all through the runtime's C entry points.

``MinimalGuard`` does nothing else: read the device, switch if needed, switch back. No runtime seam, no thread
ownership, no errors, no debt kept. It tells what the ``with`` statement costs with plain methods (a bound
method made for ``__enter__`` and one for ``__exit__``) apart from what the core adds or saves.

``CheckedDevice`` (as ``guard_lib.device``) and ``CheckedGuard`` (as ``DeviceGuard``) add only the
cheapest form of the checks the core may not drop: the process's default runtime read at each selection,
its methods compared with those it offered C entry points for (a replacement must be honoured), the owning
thread's token compared on exit. ``CheckedGuard.create`` selects at once and hands the guard back in an
``Ok``, which, like the guard still owing, complains when dropped unlooked-at. Where a check fails it raises instead of taking the core's slow path: a floor under any guard
that makes these checks, not a guard.
"""

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

ctypedef int (*get_device_f)(int *) noexcept nogil
ctypedef int (*set_device_f)(int) noexcept nogil

cdef extern from *:
    ctypedef struct PyThreadState:
        pass
    PyThreadState *PyThreadState_Get()
    unsigned long long PyThreadState_GetID(PyThreadState *state)

cdef get_device_f _get_device = NULL
cdef set_device_f _set_device = NULL
cdef dict _runtime_globals = {}
cdef object _get_method = None
cdef object _set_method = None


def bind(capsules, runtime_globals=None, runtime=None):
    """Call the runtime through these two capsules (``get``, ``set``), as the core does.

    ``CheckedGuard`` reads the default runtime from ``runtime_globals`` and expects ``runtime``'s methods.
    """
    global _get_device, _set_device, _runtime_globals, _get_method, _set_method
    _get_device = <get_device_f>PyCapsule_GetPointer(capsules[0], PyCapsule_GetName(capsules[0]))
    _set_device = <set_device_f>PyCapsule_GetPointer(capsules[1], PyCapsule_GetName(capsules[1]))
    if runtime is not None:
        _runtime_globals, _get_method, _set_method = runtime_globals, runtime.get_device, runtime.set_device


cdef class MinimalGuard:
    cdef int index
    cdef int previous

    def __cinit__(self, int index):
        self.index = index

    def __enter__(self):
        _get_device(&self.previous)
        if self.previous != self.index:
            _set_device(self.index)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.previous != self.index:
            _set_device(self.previous)


cdef inline unsigned long long _token() noexcept:
    return PyThreadState_GetID(PyThreadState_Get())


cdef class Ok:
    cdef object value
    cdef bint unchecked

    def unwrap(self):
        self.unchecked = False
        return self.value

    def __del__(self):
        if self.unchecked:
            raise RuntimeError("dropped unchecked")


cdef class _Checked:
    cdef int index
    cdef int previous
    cdef object runtime  # held while borrowed, so the guard is tracked by the collector
    cdef unsigned long long thread
    cdef bint owes

    def __cinit__(self, int index):
        self.index = index

    cdef object select(self):
        runtime = _runtime_globals.get("_default")
        if runtime.get_device is not _get_method:
            raise RuntimeError("get_device was replaced")
        self.runtime = runtime
        self.thread = _token()
        _get_device(&self.previous)
        if self.previous != self.index:
            if runtime.set_device is not _set_method:
                raise RuntimeError("set_device was replaced")
            _set_device(self.index)
        self.owes = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.thread != _token():
            raise RuntimeError("another thread's guard")
        if self.previous != self.index:
            if self.runtime.set_device is not _set_method:
                raise RuntimeError("set_device was replaced")
            _set_device(self.previous)
        self.owes = False


cdef class CheckedDevice(_Checked):
    """As ``guard_lib.device(i)``: selects on entering."""

    def __enter__(self):
        return self.select()


cdef class CheckedGuard(_Checked):
    """As ``DeviceGuard``: ``create`` selects, entering only checks."""

    @classmethod
    def create(cls, int index):
        cdef CheckedGuard guard = CheckedGuard(index)
        guard.select()
        cdef Ok ok = Ok.__new__(Ok)
        ok.value, ok.unchecked = guard, True
        return ok

    def __enter__(self):
        if not self.owes or self.thread != _token():
            raise RuntimeError("closed, or another thread's guard")
        return self

    def __del__(self):
        if self.owes:
            raise RuntimeError("dropped owing")
