"""Errors raised by the kvcache compiler bindings.

MLIR reports problems as diagnostics (severity, location, message, notes).
The extension collects those of a failed parse, verification, pass pipeline
or JIT compilation and raises one `CompileError` carrying all of them:

    try:
        kvcache.parse(text, filename="model.mlir")
    except kvcache.CompileError as error:
        print(error)                       # model.mlir:3:7: error: ...
        error.diagnostics[0].location      # "model.mlir:3:7"
"""

from collections import namedtuple

__all__ = ["CompileError", "Diagnostic"]

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
