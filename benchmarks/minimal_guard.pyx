# cython: language_level=3
"""A compiled ``with`` guard that does nothing else: read the device, switch if needed, switch back.

Not guard_lib: no runtime seam, no thread ownership, no errors, no debt kept. ``bench_guard.py`` builds it
and times it beside the core, through the same C entry points, so that what the ``with`` statement costs
with plain methods (a bound method made for ``__enter__`` and one for ``__exit__``) is told apart from what
the core adds or saves.
"""

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

ctypedef int (*get_device_f)(int *) noexcept nogil
ctypedef int (*set_device_f)(int) noexcept nogil

cdef get_device_f _get_device = NULL
cdef set_device_f _set_device = NULL


def bind(capsules):
    """Call the runtime through these two capsules (``get``, ``set``), as the core does."""
    global _get_device, _set_device
    _get_device = <get_device_f>PyCapsule_GetPointer(capsules[0], PyCapsule_GetName(capsules[0]))
    _set_device = <set_device_f>PyCapsule_GetPointer(capsules[1], PyCapsule_GetName(capsules[1]))


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
