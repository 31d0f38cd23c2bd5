"""Errors raised by the kvcache compiler bindings.

MLIR reports problems as diagnostics (severity, location, message, notes).
The extension collects those of a failed parse, verification, pass pipeline
or JIT compilation and raises one `CompileError` carrying all of them:

    try:
        kvcache.parse(text, filename="model.mlir")
    except kvcache.CompileError as error:
        print(error)                       # model.mlir:3:7: error: ...
        error.diagnostics[0].location      # "model.mlir:3:7"

A call of a compiled function whose arguments break the kernel ops' rules
(docs/Contract.md 5: offsets, row counts, layers, pages, lengths that do
not fit each other) raises `CheckError`, a ValueError, before anything is
written; the module stays usable:

    try:
        cpu.decode_step(*cache.arguments(), layer, q, k, v, offsets, out)
    except kvcache.CheckError as error:
        error.function                     # "decode_step"
        print(error)                       # decode_step: kvcache.attention_ragged at ...: 'out' has 1 rows, ...

A kernel run by the GPU emulator (kvcache.EmulatedGPUModule) that fails one
of the emulator's checks or a device assert raises `EmulatorError` with the
emulator's report lines; the arrays may be partly written.

An array whose elements are not those of the argument it is passed for
raises `ArgumentTypeError`, both a TypeError (as kvcache.CPUModule raised
it) and a ValueError (as kvcache.abi raised it).
"""

from collections import namedtuple

__all__ = ["ArgumentTypeError", "CheckError", "CompileError", "Diagnostic",
           "EmulatorError"]

Diagnostic = namedtuple("Diagnostic", ["severity", "location", "message", "notes"])
Diagnostic.__doc__ = """One MLIR diagnostic: severity ("error", "warning",
"note", "remark"), location ("file:line:col" where the IR has one), message,
and notes as (location, message) pairs."""


class CompileError(Exception):
    """MLIR rejected the input: `str(error)` is every diagnostic, one per line
    as `location: severity: message`; `diagnostics` holds them parsed."""

    def __init__(self, message, diagnostics=()):
        super().__init__(message)
        self.diagnostics = [d if isinstance(d, Diagnostic) else
                            Diagnostic(d[0], d[1], d[2], [tuple(n) for n in d[3]])
                            for d in diagnostics]

    @property
    def locations(self):
        """The location of each diagnostic, in order."""
        return [d.location for d in self.diagnostics]


class EmulatorError(RuntimeError):
    """A call of an EmulatedGPUModule failed a check of the GPU emulator (a
    race, an uninitialized or out-of-bounds shared-memory access, a barrier
    or a warp-collective operation (shuffle, ldmatrix, mma.sync) not reached
    by every thread it needs, a launch error) or a device assert. `reports`
    holds the emulator's report lines, `str(error)` joins them; `kinds`
    names what failed, one entry per line: the check
    ("race", "uninitialized", "shared bounds", "barrier", "shuffle",
    "cp.async", "launch") or "assert" for a device assert."""

    _PREFIX = "kvcache gpu emulator: "

    def __init__(self, reports):
        if isinstance(reports, str):
            reports = reports.splitlines()
        self.reports = [line for line in reports if line]
        super().__init__("\n".join(self.reports) or
                         "the GPU emulator reported an error")

    @property
    def kinds(self):
        kinds = []
        for line in self.reports:
            if line.startswith(self._PREFIX):
                kinds.append(line[len(self._PREFIX):].split(":", 1)[0])
            else:
                kinds.append("assert")
        return kinds


class CheckError(ValueError):
    """A run-time check of the compiler (docs/Contract.md 5) failed on the
    arguments of a call of kvcache.CPUModule or kvcache.EmulatedGPUModule:
    the function's check routine, run before it (always, checked or not),
    or, in a module compiled with checked=True, a check inside it. Nothing
    was written: the arrays are as they were before the call. `function`
    is the function called, `message` (also `str(error)`) the compiler's
    message: the function, the kernel op and its location, the argument
    and the two values that do not fit."""

    def __init__(self, function, message):
        super().__init__(message)
        self.function = function
        self.message = message

    def __reduce__(self):
        return type(self), (self.function, self.message)


class ArgumentTypeError(TypeError, ValueError):
    """An array of the wrong element type for an argument (kvcache.abi,
    kvcache.CPUModule, kvcache.EmulatedGPUModule)."""
