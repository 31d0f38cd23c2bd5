"""Errors raised by the kvcache compiler bindings.

MLIR reports problems as diagnostics (severity, location, message, notes).
The extension collects those of a failed parse, verification, pass pipeline
or JIT compilation and raises one `CompileError` carrying all of them:

    try:
        kvcache.parse(text, filename="model.mlir")
    except kvcache.CompileError as error:
        print(error)                       # model.mlir:3:7: error: ...
        error.diagnostics[0].location      # "model.mlir:3:7"

A kernel run by the GPU emulator (kvcache.EmulatedGPUModule) that fails one
of the emulator's checks or a device assert raises `EmulatorError` with the
emulator's report lines; the arrays may be partly written.

An array whose elements are not those of the argument it is passed for
raises `ArgumentTypeError`, both a TypeError (as kvcache.CPUModule raised
it) and a ValueError (as kvcache.abi raised it).
"""

from collections import namedtuple

__all__ = ["ArgumentTypeError", "CompileError", "Diagnostic", "EmulatorError"]

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


class ArgumentTypeError(TypeError, ValueError):
    """An array of the wrong element type for an argument (kvcache.abi,
    kvcache.CPUModule, kvcache.EmulatedGPUModule)."""
