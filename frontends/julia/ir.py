"""The parsed form of Julia's printed lowered IR: expressions, statements and the code object.

Expressions are small immutable tuples-like dataclasses; statements keep the
line of the text they came from so later errors can point at it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mascarpone.middleend.errors import MascarponeError, NotSupportedError


class JuliaParseError(MascarponeError, ValueError):
    """The text is not Julia's printed lowered IR (or is damaged); the message gives the line."""

    def __init__(self, message, line=None):
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


class JuliaNotSupportedError(NotSupportedError):
    """A statement the Julia front-end cannot translate; names the statement and its number."""

    def __init__(self, message, stmt=None):
        where = ""
        if stmt is not None:
            where = f"statement %{stmt.number} (line {stmt.line}: `{stmt.text}`): "
        super().__init__(where + message)
        self.stmt = stmt


class JuliaRuntimeError(MascarponeError, RuntimeError):
    """What Julia itself would throw while running the function (BoundsError, InexactError, DivideError,
    DomainError, UndefVarError, MethodError, TypeError); `kind` is that exception's name."""

    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class JuliaBoundsError(JuliaRuntimeError, IndexError):
    """An array access outside the array, as Julia's BoundsError."""

    def __init__(self, message):
        super().__init__("BoundsError", message)


# expressions ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SSA:
    """`%n`: the value of statement n."""
    n: int


@dataclass(frozen=True)
class Slot:
    """A local variable or argument: `x`, `@_3`, `x@_6`."""
    name: str


@dataclass(frozen=True)
class Global:
    """A global binding: `Main.sqrt`, `Base.getindex`, or an operator printed infix (module None)."""
    module: str | None
    name: str


@dataclass(frozen=True)
class Lit:
    """A literal: Int64, Float64, Float32, Bool, Nothing, or a quoted Symbol."""
    value: object
    jtype: str


@dataclass(frozen=True)
class StaticParam:
    """`$(Expr(:static_parameter, n))`: the n-th type parameter of a `where` method."""
    n: int


@dataclass(frozen=True)
class Special:
    """Another `$(Expr(:head, ...))` used as a value (`:boundscheck`, `:foreigncall`, ...); never translated."""
    head: str
    text: str


@dataclass(frozen=True)
class Call:
    """A call `f(args...)`; `f` is any expression (a Global or an SSA value in 1.11+)."""
    fn: object
    args: tuple


NOTHING = Lit(None, "Nothing")


def operands(e):
    """The non-call nodes of an expression: the callee and arguments of calls, recursively."""
    if isinstance(e, Call):
        yield from operands(e.fn)
        for a in e.args:
            yield from operands(a)
    else:
        yield e


def ssa_refs(e):
    """Statement numbers an expression reads (`%n`)."""
    return [o.n for o in operands(e) if isinstance(o, SSA)]


def slot_names(e):
    """Names of the slots an expression reads."""
    return [o.name for o in operands(e) if isinstance(o, Slot)]


def callee_name(fn):
    """The bare function name of a callee that is a Global, else None."""
    return fn.name if isinstance(fn, Global) else None


# statements ----------------------------------------------------------------------------

@dataclass
class Stmt:
    """One statement of the code: `kind` is expr, assign, goto, gotoifnot, return, meta or unreachable."""
    number: int
    kind: str
    line: int
    text: str
    block: int = 0
    value: object = None        # expr / assign right-hand side / return value / gotoifnot condition
    target: object = None       # assign: the Slot; goto/gotoifnot: the block number
    meta: tuple = ()            # meta: ('inbounds', flag) and similar
    jtype: str | None = None    # printed type annotation (typed output)


@dataclass
class CodeIR:
    """A function's lowered code: statements (numbered from 1), blocks, and what the header said."""
    stmts: list
    blocks: dict                        # block number -> list of statement numbers
    style: str                          # 'lowered', 'typed' or 'warntype'
    arguments: list = field(default_factory=list)   # names from a @code_warntype header, if any
    slot_types: dict = field(default_factory=dict)  # slot name -> printed type, if any
    return_type: str | None = None
    static_params: list = field(default_factory=list)  # (name, printed type) from a `Static Parameters` header
    signature: str | None = None                       # `f(x::T, y) where T` from a `from ...` header line

    def stmt(self, n) -> Stmt:
        return self.stmts[n - 1]
