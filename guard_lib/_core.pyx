# cython: language_level=3, binding=True, embedsignature=False
"""The compiled core: what the reference ``device_guard.py`` does, in the same order, with ``_shared.py``'s
messages and slow paths, at C speed. A runtime's C entry points (``c_entry_points()``: two capsules named by
the C signatures below) are called only while the method read at that call, as the reference reads it, is
the one it had when asked: a replacement, by anyone at any time, is the one called."""

cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.method cimport PyMethod_Check, PyMethod_GET_FUNCTION, PyMethod_GET_SELF
from cpython.object cimport PyObject, PyTypeObject
from cpython.pycapsule cimport PyCapsule_CheckExact, PyCapsule_GetName, PyCapsule_GetPointer
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

cdef extern from *:
    """
    /* Gives a function a vectorcall of one's own: one taking *args has none, and a call makes a tuple. */
    static void guard_lib_give_vectorcall(PyObject *f, void *call) {
        ((PyCFunctionObject *)f)->vectorcall = (vectorcallfunc)call;
    }
    """
    ctypedef struct PyThreadState:
        pass
    PyThreadState *PyThreadState_Get()
    unsigned long long PyThreadState_GetID(PyThreadState *state)
    void _give_vectorcall "guard_lib_give_vectorcall"(object function, void *call)
    Py_ssize_t _refcount "Py_REFCNT"(PyObject *o)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)

cdef const char *_GET_SIGNATURE = b"cudaError_t (int *)"  # the capsules' names: their functions' C signatures
cdef const char *_SET_SIGNATURE = b"cudaError_t (int)"
cdef long long _INT_MAX = 2147483647

cdef object _get_runtime = _runtime_module.get_runtime
cdef dict _runtime_globals = _runtime_module.__dict__
cdef object _warn = warnings.warn  # bound at import: shutdown may clear module globals before a finaliser
cdef object _MAKE = object()  # what create passes to a guard's allocation, which refuses any other call
cdef tuple _MAKE_ARGS = (_MAKE,)
# 3.13 names the type in an unset slot's AttributeError by its qualified name, after a module not builtins.
cdef bint _QUALIFIED_NAMES = sys.version_info >= (3, 13)
# From 3.12 a function carries __type_params__, which functools.wraps copies where the wrapped has them.
cdef bint _TYPE_PARAMS = sys.version_info >= (3, 12)

cdef inline unsigned long long _token() noexcept:
    # The thread state's id, which the interpreter never hands out twice (a thread's id is reused).
    return PyThreadState_GetID(PyThreadState_Get())

cdef str _type_name(object obj):
    """The type of ``obj`` as Python names it where an attribute of the object is missing."""
    cls = type(obj)
    if _QUALIFIED_NAMES and cls.__module__ not in ("builtins", "__main__"):
        return f"{cls.__module__}.{cls.__qualname__}"
    return cls.__qualname__ if _QUALIFIED_NAMES else cls.__name__

cdef inline int _mine(object obj, type cls, str method) except -1:
    # Cython's methods read from the class take any self: refused as Python's are, before a field is read.
    if not isinstance(obj, cls):
        raise TypeError(f"descriptor '{method}' for '{cls.__name__}' objects doesn't apply to a "
                        f"'{type(obj).__name__}' object")
    return 0

cdef inline PyObject *_key(object method, object runtime) noexcept:
    # A method read from the class is bound afresh at every read: it is known by its function.
    if PyMethod_Check(method) and PyMethod_GET_SELF(method) == <PyObject *>runtime:
        return PyMethod_GET_FUNCTION(method)
    return <PyObject *>method

@cython.final
cdef class _Offer:
    """A runtime's C entry points and the methods it had when it offered them. Cached for the last runtime
    borrowed, it holds the runtime and methods weakly, the capsules strongly; a borrow holds it till restored."""

    cdef object runtime  # a weak reference; None: this offer serves one borrow and is held by it alone
    cdef object get_key  # weak references while cached, else the objects
    cdef object set_key
    cdef object capsules  # None: nothing to call through C
    cdef _get_device_f get_device
    cdef _set_device_f set_device

    cdef inline bint stands(self, object held, object method, object runtime) noexcept:
        """Whether ``method``, read just now from ``runtime``, is the one this offer was made for."""
        cdef PyObject *target = <PyObject *>held
        if self.capsules is None:
            return False
        if self.runtime is not None:
            target = PyWeakref_GET_OBJECT(held)
            if target == <PyObject *>None:  # it died: whatever is read now is another
                return False
        return target == _key(method, runtime)

cdef _Offer _cached = None

cdef void *_pointer(object capsule, const char *signature) except? NULL:
    # Only this exact signature: one with an exception clause could leave a Python error set.
    cdef const char *name = PyCapsule_GetName(capsule) if PyCapsule_CheckExact(capsule) else NULL
    return PyCapsule_GetPointer(capsule, name) if name != NULL and strcmp(name, signature) == 0 else NULL

cdef inline _Offer _offer_of(object runtime, object get):
    cdef _Offer offer = _cached
    if offer is not None and PyWeakref_GET_OBJECT(offer.runtime) == <PyObject *>runtime:
        return offer
    return _ask(runtime, get)

cdef _Offer _ask(object runtime, object get):
    """Ask for the runtime's entry points, which speak for ``get`` (just read) and ``set_device`` as now."""
    global _cached
    cdef _Offer offer = _Offer()
    cdef void *get_device = NULL
    cdef void *set_device = NULL
    try:
        offer.runtime = PyWeakref_NewRef(runtime, None)
    except TypeError:
        offer.runtime = None
    try:
        set_ = runtime.set_device
        get_key, set_key = <object>_key(get, runtime), <object>_key(set_, runtime)
        # Only what something else holds can be read again as the same: a method made at each read is not.
        if callable(get) and callable(set_) and _refcount(<PyObject *>get_key) > 2 and _refcount(<PyObject *>set_key) > 2:
            capsules = runtime.c_entry_points()
            if capsules is not None:
                capsules = (capsules[0], capsules[1])
                get_device = _pointer(capsules[0], _GET_SIGNATURE)
                set_device = _pointer(capsules[1], _SET_SIGNATURE)
    except BaseException:
        # The reference never asks: an offer that cannot be read, or raises, is as none.
        get_device = set_device = NULL
    if get_device != NULL and set_device != NULL:
        offer.capsules = capsules
        offer.get_device = <_get_device_f>get_device
        offer.set_device = <_set_device_f>set_device
        offer.get_key, offer.set_key = get_key, set_key
        if offer.runtime is not None:
            try:
                weak_get, weak_set = PyWeakref_NewRef(get_key, None), PyWeakref_NewRef(set_key, None)
            except TypeError:
                # Held strongly, they could keep the runtime alive: this borrow alone uses C, later ones Python.
                _cached = _Offer()
                _cached.runtime, offer.runtime = offer.runtime, None
                return offer
            offer.get_key, offer.set_key = weak_get, weak_set
    if offer.runtime is not None:
        _cached = offer
    return offer

cdef class _Outcome:
    """What ``Ok`` and ``Err`` share: whether the caller has looked."""

    # Zero, as on every new object: one made without __init__ (as the reference's) stays silent.
    cdef bint _unchecked

    # The reference's fields, read and written as it reads and writes them.
    @property
    def _checked(self):
        return not self._unchecked

    @_checked.setter
    def _checked(self, bint checked):
        self._unchecked = not checked

    def __del__(self):  # no frame of this finaliser to skip: the default stack level is the drop
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
        _mine(self, Ok, "is_ok")
        self._unchecked = False
        return True
    def is_err(self):
        _mine(self, Ok, "is_err")
        self._unchecked = False
        return False
    def unwrap(self):
        _mine(self, Ok, "unwrap")
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
        _mine(self, Err, "is_ok")
        self._unchecked = False
        return False
    def is_err(self):
        _mine(self, Err, "is_err")
        self._unchecked = False
        return True
    def unwrap(self):
        _mine(self, Err, "unwrap")
        self._unchecked = False
        raise self._error
    def __repr__(self):
        return f"Err({self._error!r})"

@cython.auto_pickle(False)
cdef class _Borrow:
    """What ``DeviceGuard`` and ``device`` share: the selection, and the restore that undoes it."""

    cdef object _index
    cdef object _requested_runtime
    cdef object _runtime
    cdef object _original
    cdef object _current
    # The offer the device was read through, held while the borrow owes; None: read from Python.
    cdef _Offer _offer
    cdef unsigned long long _thread
    # A device's borrows for the threads that entered it while another held it, by thread token.
    cdef dict _elsewhere
    # Zero, as every new object's fields are, means nothing is owed: no set-up is needed to be safe.
    cdef bint _owes
    # Set by create, take and device.__init__: one a subclass's __init__ skipped is refused as the reference's.
    cdef bint _made

    cdef int _refuse_unmade(self, str field="_restored", bint unread=False) except -1:
        # As the reference's unset slot: __init__ skipped, or (unread) nothing read before the first selection.
        if (self._runtime is None) if unread else not self._made:
            raise AttributeError(f"'{_type_name(self)}' object has no attribute '{field}'", name=field, obj=self)
        return 0

    @property
    def _restored(self):
        self._refuse_unmade()
        return not self._owes

    cdef object _enter(self):
        # Only on a made borrow that owes nothing: device's __enter__ refuses any other.
        index = self._index
        if type(index) is not int:
            index = _shared.as_int(index)
            if isinstance(index, GuardError):
                raise index
        # Compared in C where the index fits a C value; only a huge one takes Python's comparisons.
        cdef int overflow = 0
        cdef long long c_index = PyLong_AsLongLongAndOverflow(index, &overflow)
        if c_index < 0 if overflow == 0 else index < 0:
            raise GuardError(f"cannot select CUDA device {index}: a device index is >= 0", device_index=index)
        runtime = self._requested_runtime
        if runtime is None:
            runtime = _runtime_globals.get("_default")
            if runtime is None:
                runtime = _get_runtime()
        get = runtime.get_device
        cdef _Offer offer = _offer_of(runtime, get)
        cdef bint c_path = overflow == 0 and c_index <= _INT_MAX
        cdef int c_code = 0
        cdef int c_original = 0
        if c_path and offer.stands(offer.get_key, get, runtime):
            c_code = offer.get_device(&c_original)
            code, original = c_code, c_original
        else:
            c_path = False
            code, original = get()
        if code:
            raise _shared.cuda_error(runtime, "cannot read the current CUDA device", index, code)
        self._runtime = runtime
        self._offer = offer if c_path else None
        self._original = original
        self._current = index
        self._thread = _token()
        if (c_index == c_original) if c_path else (index == original):
            self._owes = True
            return self
        # As in the reference, the outer handler settles what an interrupt left of the inner one's settling.
        try:
            try:
                # The restore is owed from the request, not from the switch's success.
                self._owes = True
                set_ = runtime.set_device
                if c_path and offer.stands(offer.set_key, set_, runtime):
                    with nogil:
                        c_code = offer.set_device(<int>c_index)
                    code = c_code
                else:
                    (code,) = set_(index)
                if code:
                    raise _shared.cuda_error(runtime, f"cannot select CUDA device {index}", index, code)
                return self
            except BaseException:
                self._settle()
                raise
        except BaseException:
            self._settle()
            raise

    cdef int _settle(self) except -1:
        # Only on the owning thread: another thread's device is not this guard's to touch.
        if not self._owes or self._thread != _token():
            return 0
        runtime, original = self._runtime, self._original
        read, now = runtime.get_device()
        if read or now != original:
            _shared.restore(runtime, original, self._current, None if read else now)
        self._owes = False
        self._offer = None

    @property
    def original_device(self):
        """The device that was current before the selection, which ``close`` restores."""
        self._refuse_unmade("_devices", True)
        return self._original

    @property
    def current_device(self):
        """The device that was selected."""
        self._refuse_unmade("_devices", True)
        return self._current

    cdef int _close(self) except -1:
        cdef int c_code
        cdef int c_original = 0
        cdef bint home = self._thread == _token()
        if (not self._owes or not home) and self._elsewhere:
            own = self._elsewhere.get(_token())
            if own is not None and (<_Borrow>own)._owes:
                (<_Borrow>own)._close()
                del self._elsewhere[_token()]
                return 0
        if not self._owes:
            try:
                self._refuse_unmade()
            except BaseException:  # as the reference's settling, which trips over the same missing field
                self._refuse_unmade()
            return 0
        cdef _Offer offer = self._offer
        try:
            if not home:
                raise _shared.not_owner(self._current, "restored")
            original, current = self._original, self._current
            if offer is not None:
                c_original = original
            if (c_original != <int>current) if offer is not None else (current != original):
                runtime = self._runtime
                set_ = runtime.set_device
                if offer is not None and offer.stands(offer.set_key, set_, runtime):
                    with nogil:
                        c_code = offer.set_device(c_original)
                    code = c_code
                else:
                    (code,) = set_(original)
                if code:
                    _shared.restore_failed(runtime, original, current, current, code)
            self._owes = False
            self._offer = None
        except BaseException:
            self._settle()
            raise

    cdef int _settle_mine(self) except -1:
        # Whichever borrow of this object the calling thread holds, if any.
        if self._owes and self._thread == _token():
            self._settle()
        elif self._elsewhere and self._elsewhere.get(_token()) is not None:
            (<_Borrow>self._elsewhere[_token()])._settle()
        return 0

    def close(self, *_exc_info):
        """Restore the caller's device. Closing again, or closing a guard taken over, does nothing."""
        # Never run: every call of close, by any protocol, comes through its vectorcall, _close_call below.

    # As in the reference, leaving a ``with`` block is ``close``.
    __exit__ = close

    def __copy__(self):
        raise TypeError(f"a {type(self).__name__} cannot be copied: DeviceGuard.take() hands a borrow over")

    def __deepcopy__(self, memo):
        raise TypeError(f"a {type(self).__name__} cannot be copied: DeviceGuard.take() hands a borrow over")

    def __reduce__(self):
        raise TypeError(f"a {type(self).__name__} cannot be pickled: it holds a thread's device selection")

cdef DeviceGuard _make_guard(object cls):
    # As the reference's object.__new__(cls): no subclass's __new__ asked, a class that is no guard refused.
    if not (isinstance(cls, type) and issubclass(cls, DeviceGuard)):
        object.__new__(cls)
        raise TypeError(f"DeviceGuard.create() makes a DeviceGuard, not {cls!r}")
    # DeviceGuard's own allocation, called in C: DeviceGuard.__new__(cls, _MAKE) looks it up and copies the tuple.
    cdef DeviceGuard guard = (<PyTypeObject *>DeviceGuard).tp_new(cls, <PyObject *>_MAKE_ARGS, NULL)
    guard._made = True
    return guard

@cython.auto_pickle(False)
cdef class DeviceGuard(_Borrow):
    """A borrowed CUDA device: selected by ``create``, the caller's device restored by ``close``.

    Use it as a context manager. A guard belongs to the thread that created it, because CUDA's current
    device is per thread. ``take()`` hands the borrow to a new guard; only that one restores.
    """

    def __cinit__(self, *args, **kwargs):
        if len(args) != 1 or args[0] is not _MAKE or kwargs:
            raise TypeError("DeviceGuard cannot be constructed directly: use DeviceGuard.create(index)")

    def __init__(self, *args, **kwargs):
        pass  # as object's __init__, the reference's, does on a made guard with any arguments

    @classmethod
    def create(cls, device_index, *, runtime=None):
        """Select ``device_index`` on this thread and return a guard that restores the caller's device.

        Never raises for a CUDA failure or a refused index: those come back as ``Err(GuardError)``.
        """
        cdef DeviceGuard guard = _make_guard(cls)
        guard._index = device_index
        guard._requested_runtime = runtime
        cdef _Outcome outcome
        try:
            guard._enter()
            outcome = Ok.__new__(Ok)
            (<Ok>outcome)._value = guard
        except GuardError as error:
            outcome = Err.__new__(Err)
            (<Err>outcome)._error = error
        except BaseException:
            # _enter raised still owing, or no memory was left for the Ok: the caller never got the guard.
            guard._settle()
            raise
        outcome._unchecked = True
        return outcome

    def take(self):
        """Hand the borrow to a new guard, which alone restores; this one is left looking restored."""
        _mine(self, DeviceGuard, "take")
        if not self._owes:
            raise GuardError(f"cannot take over a DeviceGuard for CUDA device {self._current}: it was closed or taken",
                             device_index=self._current)
        if self._thread != _token():
            raise GuardError(f"cannot take over a DeviceGuard for CUDA device {self._current} from another thread: "
                             "only the thread that created it can restore its device", device_index=self._current)
        cdef DeviceGuard taker = _make_guard(DeviceGuard)
        taker._runtime = self._runtime
        taker._offer = self._offer
        taker._original = self._original
        taker._current = self._current
        taker._thread = self._thread
        # The taker owes before this one stops owing, so at no instant does nobody owe.
        taker._owes = True
        self._owes = False
        self._offer = None
        return taker

    def __enter__(self):
        _mine(self, DeviceGuard, "__enter__")
        # Refused before the body runs: it would run on whatever device this thread is on.
        if not self._owes:
            raise _shared.closed_guard(self._current)
        if self._thread != _token():
            raise _shared.not_owner(self._current, "entered")
        return self

    def __repr__(self):
        state = "open" if self._owes else "restored"
        return f"<DeviceGuard device {self._current} (restores {self._original}), {state}>"

    def __del__(self):
        # No restore: the collector may run this on any thread. The default stack level points at the drop.
        if self._owes:
            _warn(
                f"DeviceGuard for CUDA device {self._current} was garbage-collected without close(); "
                f"device {self._original} was never restored",
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
        self._elsewhere = None
        self._made = True

    def __enter__(self):
        _mine(self, device, "__enter__")
        self._refuse_unmade()
        cdef bint free = not self._owes
        cdef _Borrow held = self if not free and self._thread == _token() else None
        if held is None and self._elsewhere:
            held = self._elsewhere.get(_token())
        if held is not None and held._owes:
            raise GuardError(f"guard_lib.device({self._index!r}) is already entered; it is not reentrant",
                             device_index=held._current)
        try:
            if free:
                return self._enter()
            return self._enter_elsewhere()
        except BaseException:
            # Interrupted on the way out: a with statement whose __enter__ raised never calls __exit__.
            self._settle_mine()
            raise

    cdef object _enter_elsewhere(self):
        # Another thread holds this object's borrow, which only it can restore: this thread gets its own.
        cdef device borrow = device(self._index, runtime=self._requested_runtime)
        try:
            try:
                borrow._enter()
                self._elsewhere = {} if self._elsewhere is None else self._elsewhere
                self._elsewhere[_token()] = borrow
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
                # Only now may _close restore: after a failed enter it would restore again without looking.
                entered = True
                return function(*args, **kwargs)
            finally:
                if entered:
                    borrow._close()
        except BaseException:
            # _enter raised still owing (the runtime raised through both settlings): nobody else can finish.
            borrow._settle()
            raise
    return on_device

cdef object _close_call(object close, PyObject **args, size_t nargsf, PyObject *kwnames):
    # close, self first, as every caller calls it (a tuple's call too), refusing what Cython's own call refuses.
    if kwnames != NULL and len(<tuple>kwnames):
        raise TypeError(f"close() got an unexpected keyword argument '{(<tuple>kwnames)[0]}'")
    if PyVectorcall_NARGS(nargsf) == 0:
        raise TypeError(f"unbound method {close.__qualname__}() needs an argument")
    _mine(<object>args[0], _Borrow, "close")
    (<_Borrow>args[0])._close()

_give_vectorcall(vars(_Borrow)["close"], <void *>_close_call)
