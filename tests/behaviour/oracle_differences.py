"""Every difference between the compiled core and the reference that is there on purpose, with its reason.

Keyed by a short name that the tests comparing the two implementations consult; a difference they find
that is not named here fails them. An entry goes when the difference does.
"""

from __future__ import annotations

DELIBERATE: dict[str, str] = {
    "c-entry-points-answer-codes-only": (
        "A runtime that offers C entry points is called through them by the core, and a C function can "
        "only answer an int code and an int device: it cannot raise, and cannot answer a value that is not "
        "a C int. The reference calls the runtime's Python methods. So a runtime whose Python get_device or "
        "set_device raises, or answers what no C function could (a string, a float, a short tuple, an index "
        "beyond a C int), while offering C entry points, is seen differently by the two: such a runtime "
        "breaks its own contract (its entry points are not its methods), as CudaRuntime never does."
    ),
    "decorated-function-is-compiled": (
        "What @device(i) returns is, in the core, a compiled function (type cython_function_or_method), "
        "not a Python function: inspect.isfunction() is False for it and its repr says cyfunction. It is "
        "called, bound as a method and read (name, qualname, doc, module, __wrapped__, __dict__, signature) "
        "as the reference's is; only its type differs, as compiling it is the point."
    ),
    "extension-type-names": (
        "Where Python itself words an error about an object of the core (an attribute it lacks: "
        "Err(...).value), it names the type by its C name, which carries the module: "
        "'guard_lib._core.Err' object has no attribute 'value', where the reference's says 'Err'. Every "
        "extension type is named so; guard_lib's own messages name no module."
    ),
    "traceback-frames-hold-no-locals": (
        "A traceback keeps its frames, and a Python frame keeps its locals; the core's frames in a "
        "traceback are Cython's, which keep none. So an object that only an exception's traceback still "
        "reaches (a guard left owing when a runtime raised GuardError while a failed switch settled, and "
        "create returned that error in an Err) lives as long as the exception in the reference and is freed "
        "at once in the core: its ResourceWarning comes at another time. The tests comparing the two clear "
        "the frames of the tracebacks they hold, in both, so that such an object goes when its borrow does."
    ),
    "argument-error-messages": (
        "A call with arguments a method does not take (none where one is needed, a keyword-only one given "
        "by position, an unknown keyword) raises TypeError in both, but the words are the language's: "
        "CPython's in the reference ('device.__init__() missing 1 required positional argument: "
        "'device_index''), Cython's argument parser's in the core ('__init__() takes exactly 1 positional "
        "argument (0 given)'). Matching them would put a Python-level check of every call's arguments "
        "before the core's own parser, on the hot path, for calls that are bugs in the caller."
    ),
    "unpacking-messages": (
        "A runtime answer of the wrong shape fails to unpack with the same exception type in both, but the "
        "message is the language's, not guard_lib's: CPython's in the reference ('not enough values to "
        "unpack (expected 2, got 1)', 'cannot unpack non-iterable NoneType object'), Cython's in the core "
        "('need more than 1 value to unpack', \"'NoneType' object is not iterable\"). Matching them would "
        "put a Python call on the core's hot path for answers no working runtime gives."
    ),
}
