"""`from_julia`: printed lowered IR to an ms.Function, and the kernel that takes Julia's arrays."""
from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl
import numpy as np

from mascarpone.middleend.affine import affine_text, param_names
from mascarpone.middleend.algorithm import iteration_domain
from mascarpone.middleend.buffer import as_index_expr
from mascarpone.middleend.errors import ArgumentError
from mascarpone.middleend.expr import Access, walk_distinct
from mascarpone.middleend.function import Function
from mascarpone.middleend.targets import get_target

from .arguments import check_read_slots, ordered_argtypes
from .guards import sizes_hold
from .arguments import static_parameters as static_parameters_of
from .parser import parse
from .translate import WidenRetry, translate
from .types import check_array
from .values import ArrayRef


class JuliaFunction(Function):
    """An ms.Function built from a Julia function: schedule its computations, then `compile()`.

    `statements` maps each computation name to the Julia statement it comes from;
    `compile` returns a JuliaKernel, called with Julia's arguments.
    """

    def compile(self, target="cpu", check=True, fixed=None, **options):
        """Compile like ms.Function.compile; the kernel takes the Julia function's arguments.

        Floating-point contraction (FMA) is off unless `fp_contract=True` is passed, so results
        are those of Julia's own code."""
        if "fp_contract" in get_target(target).options:
            options.setdefault("fp_contract", False)
        kernel = super().compile(target, check=check, fixed=fixed, **options)
        return JuliaKernel(self, kernel)

    def describe(self):
        """One line per computation: its name, loops and the Julia statement it comes from."""
        return "\n".join(f"{c.name}[{', '.join(c.loops)}]: {self.statements.get(c.name, '')}"
                         for c in self.computations)


def from_julia(text, argtypes, name=None, static_parameters=None) -> JuliaFunction:
    """An ms.Function for the Julia function whose lowered IR `text` prints.

    `argtypes` maps each argument name, in order, to its Julia type (`"Matrix{Float64}"`,
    `"Int64"`, ...). Computations are named `s<n>` after the statement number n
    they come from; loops keep Julia's variable names. `static_parameters` gives the values of
    a `where` method's parameters (`["Float64"]`) when the text does not list them.
    """
    code = parse(text)
    argtypes = ordered_argtypes(code, argtypes)
    check_read_slots(code, argtypes)
    sparams = static_parameters_of(code, argtypes, static_parameters)
    fname = name or _function_name(text) or "julia_kernel"
    widen = {}
    for _ in range(len(code.stmts) + 1):
        with JuliaFunction(fname) as f:
            try:
                tr = translate(code, argtypes, f, sparams, widen)
            except WidenRetry as retry:
                if retry.widen == widen:
                    raise AssertionError("the widened types did not settle") from None
                widen = retry.widen
                continue
        break
    f.julia_argtypes = tr.argtypes
    f.statements = tr.statements
    f.julia_arrays = tr.arrays
    f.julia_array_inputs = tr.array_inputs
    f.julia_params = tr.params
    f.julia_scalar_inputs = tr.scalar_inputs
    f.julia_return = next((c for c in f.computations if c.name.startswith("ret") and c.is_output and not c.vars),
                          None) if tr.returned is not None and not _is_array(tr.returned) else None
    f.julia_returns_array = tr.returned.name if _is_array(tr.returned) else None
    f.bounds_violations = _bounds_violations(f, tr.affine_reads)
    _drop_writes_below_the_first_element(f)
    f.checks_input_reads_at_call = True     # (the kernel's BoundsError, from bounds_violations)
    f.julia_bounds_flags = [(comp.name, what) for comp, what in tr.bounds_flags]
    f.julia_broadcast_sizes = tr.broadcast_sizes
    f.julia_linear_sizes = list(tr.linear_sizes.values())
    f.julia_eachindex_lengths = tr.eachindex_lengths
    return f


def _is_array(v):
    return isinstance(v, ArrayRef)


def _function_name(text):
    m = re.search(r"MethodInstance for (?:[\w.]*\.)?([^\s(]+)\(", text)
    if not m:
        return None
    raw = m.group(1).replace("!", "_bang")
    raw = re.sub(r"\W", "_", raw)
    return raw if raw.isidentifier() else None


def _bounds_violations(f, reads=()):
    """isl sets of parameter values for which some access falls outside its array (Julia's BoundsError):
    the accesses of the computations, and the `reads` (access, loop variables, guard, statement) that none
    of them keeps (a value nobody uses, which Julia reads all the same)."""
    params = sorted(f.param_names)
    bad, kept = [], set()
    for comp in f.computations:
        accesses = {}     # (each distinct access once: a max of many reads shares them between selects)
        if comp.updated is not None:
            accesses[(comp.updated.name, str(comp.update_at))] = (comp.updated, comp.update_at)
        exprs = [comp.expr] + ([comp.predicate] if comp.predicate is not None else [])
        for e in exprs:
            for n in walk_distinct(e):
                if isinstance(n, Access):
                    kept.add(id(n))
                    accesses.setdefault((n.target.name, str(n.indices)), (n.target, n.indices))
        for target, idx in accesses.values():
            outside = _outside(f, params, target, idx, comp.vars, comp.domain)
            if outside is not None:
                bad.append((comp.name, target.name, outside))
    for access, loop_vars, guard, statement in reads:
        if id(access) not in kept:
            domain, _ = iteration_domain(f, "read", loop_vars, guard)
            outside = _outside(f, params, access.target, access.indices, loop_vars, domain)
            if outside is not None:
                bad.append((statement, access.target.name, outside))
    return bad


def _outside(f, params, target, idx, loop_vars, domain):
    """The parameter values for which `target[idx]` falls outside the array at some point of `domain`,
    or None where it cannot (or the array's shape or the indices are not affine)."""
    shape = _julia_shape(f, target)
    if shape is None:
        return None
    texts = [affine_text(as_index_expr(i)) for i in idx]
    if any(t is None for t in texts):
        return None
    conds = " or ".join(f"({t}) < 0 or ({t}) >= ({affine_text(as_index_expr(d))})" for t, d in zip(texts, shape))
    if not conds:
        return None
    s = _points_where(params, domain, loop_vars, conds).intersect(domain).params()
    return None if s.is_empty() else s


def _drop_writes_below_the_first_element(f):
    """Take out of each update's domain the points that write its Julia array below the first element.
    Julia throws a BoundsError there, and so does the kernel: the sizes that reach them are refused at the
    call (`bounds_violations`, computed before). Left in, they would shift the array's storage by their
    least index for every size, and a call where the loop runs no iteration would be refused for the
    array's shape."""
    params = sorted(f.param_names)
    for comp in f.computations:
        if comp.updated is None or _julia_shape(f, comp.updated) is None:
            continue
        texts = [affine_text(as_index_expr(i)) for i in comp.update_at]
        if any(t is None for t in texts) or not texts:
            continue
        inside = _points_where(params, comp.domain, comp.vars, " and ".join(f"({t}) >= 0" for t in texts))
        if not comp.domain.is_subset(inside):
            comp.domain = comp.domain.intersect(inside)


def _points_where(params, domain, loop_vars, condition):
    """The points of `domain`'s space (its loop variables `loop_vars`) where `condition` (isl text) holds."""
    return isl.Set(f"[{', '.join(params)}] -> {{ {domain.get_tuple_name()}[{', '.join(v.name for v in loop_vars)}] : "
                   f"{condition} }}")


def _julia_shape(f, target):
    for name, comp in f.julia_arrays.items():
        if comp is target or f.julia_array_inputs.get(name) is target:
            inp = f.julia_array_inputs[name]
            return inp.shape
    return None


_ARRAY, _SIZE, _NUMBER = "array", "size", "number"   # (an Int64 or a Bool argument is a size)


def _check_linear_sizes(name, sizes, of, of_sizes, what, caveat=""):
    """ArgumentError unless the array `name`, indexed with linear indices of the array `of`, has its sizes:
    the kernel reads it at their Cartesian indices in `of`, Julia's elements only then. `caveat` ends
    the message."""
    if sizes == of_sizes:
        return
    n, m = int(np.prod(sizes)), int(np.prod(of_sizes))
    if n < m:
        raise ArgumentError(f"BoundsError: {what}, of sizes {sizes} and {of} {of_sizes}: Julia throws a "
                            f"BoundsError when the loop reaches the linear index {n + 1} of {name}{caveat}")
    reshape = f" (reshape({name}, size({of})) in Julia)" if n == m else ""
    raise ArgumentError(f"{what}: {name} has sizes {sizes} and {of} {of_sizes}; the kernel indexes {name} at the "
                        f"Cartesian index each linear index has in {of}, which is Julia's element only when the sizes "
                        f"are equal: pass arrays of equal sizes{reshape}{caveat}")


def _check_eachindex_lengths(names, sizes, what, caveat=""):
    """ArgumentError (Julia's DimensionMismatch) unless the arrays of `eachindex(A, B, ...)` all have A's
    length: Julia compares their linear indices Base.OneTo(length(X)), not their shapes. `caveat` ends
    the message."""
    lengths = [int(np.prod(s)) for s in sizes]
    if all(n == lengths[0] for n in lengths):
        return
    ranges = [f"Base.OneTo({n})" for n in lengths]
    got = ", ".join(ranges[:-1]) + " and " + ranges[-1]      # (as Julia joins them)
    shapes = ", ".join(f"{n} {s}" for n, s in zip(names, sizes))
    raise ArgumentError(f"DimensionMismatch: {what}: all inputs to eachindex must have the same indices, got {got} "
                        f"(sizes {shapes}): pass arrays of {names[0]}'s length{caveat}")


@dataclass(frozen=True)
class _ArrayArgument:
    dtype: np.dtype     # its elements' dtype
    sizes: tuple        # the size parameter of each of its dimensions, Julia's first one first
    input: str          # the buffer the kernel reads it from
    output: str | None  # the buffer the kernel writes it to, when the function writes it


def _argument_step(f, name, jt) -> tuple:
    """(kind, name, Julia type, what the call needs to pass it) for one argument of `f`."""
    if jt.is_array:
        written = f.julia_arrays.get(name)
        read = f.julia_array_inputs[name]
        return (_ARRAY, name, jt, _ArrayArgument(
            jt.dtype.numpy, tuple(f.julia_params[(name, d)].name for d in range(1, jt.ndim + 1)), read.name,
            written.name if written is not None and written is not read else None))
    if jt.dtype.is_int or jt.dtype.is_bool:
        size = f.julia_params[name].name
        return (_SIZE, name, jt, (size, size in f.param_names))
    return (_NUMBER, name, jt, (f.julia_scalar_inputs[name].name, jt.dtype.numpy))


class _DirectCall:
    """A JuliaKernel's call for arguments of one signature that bind as given (each written array updated
    in place, nothing copied or zeroed): their checks passed once, so the call hands the arrays straight
    to the kernel's direct launch (`Kernel.direct`). After the kernel's NATIVE_AFTER such calls, its
    native entry for the signature (`positional_entry`) takes their place, where it has one."""

    __slots__ = ("run", "sources", "numbers", "ret", "returns", "calls", "native")

    def __init__(self, julia_kernel, run, sources):
        self.run = run
        self.sources = sources      # per buffer, the argument position it is (None: the return value)
        steps = julia_kernel._steps
        self.numbers = [(pos, steps[pos][3][1]) for pos, (kind, *_) in enumerate(steps) if kind is _NUMBER]
        self.ret = None if julia_kernel._return is None else julia_kernel._return[1]
        returned = julia_kernel.function.julia_returns_array
        self.returns = None if returned is None else julia_kernel.argnames.index(returned)
        self.calls = 0
        self.native = None      # its native entry, once built

    def __call__(self, args):
        """(True, the call's result), or (False, None) where the arrays do not bind as given (they share
        memory) and the general path must run."""
        self.calls += 1
        if self.numbers:
            args = list(args)
            for pos, dtype in self.numbers:
                args[pos] = np.array(args[pos], dtype=dtype)
        ret = None if self.ret is None else np.empty((), self.ret)
        if not self.run([ret if pos is None else args[pos] for pos in self.sources]):
            return False, None
        if ret is not None:
            return True, ret[()]
        return True, None if self.returns is None else args[self.returns]

    def native_slots(self, steps, args):
        """The slots of `positional_entry` for calls like `args` (whose call this is), or None where the
        native entry does not take them (a scalar return, a number that is not a Python float)."""
        if self.ret is not None:
            return None
        slots = []
        for pos, ((kind, *_), v) in enumerate(zip(steps, args)):
            buffers = tuple(b for b, source in enumerate(self.sources) if source == pos)
            if kind is _ARRAY:
                slots.append(("array", v.shape, v.dtype, v.flags.num, buffers))
            elif kind is _SIZE:
                if type(v) not in (int, bool):
                    return None
                slots.append(("bool" if type(v) is bool else "size", v))
            else:
                dtype = dict(self.numbers)[pos]
                if type(v) is not float or np.dtype(dtype) not in (np.float32, np.float64) or len(buffers) != 1:
                    return None
                slots.append(("float", np.dtype(dtype), buffers[0]))
        return slots


class JuliaKernel:
    """A compiled Julia function: call it with the Julia function's arguments (positionally or by name).

    Arrays are numpy arrays with Julia's shape (`A[i-1, j-1]` is Julia's `A[i, j]`); Fortran-ordered
    arrays are used without copies. Arrays the function writes are updated in place, as in Julia,
    and the function's return value is returned. The sizes of parametric tiles (`tile` with `ms.Param`
    sizes) are keyword arguments.
    """

    def __init__(self, function: JuliaFunction, kernel):
        self.function = function
        self.kernel = kernel
        self.argnames = list(function.julia_argtypes)
        self._tile_sizes = function.tile_sizes()
        self._checked = {}
        self._steps = [_argument_step(function, name, jt) for name, jt in function.julia_argtypes.items()]
        ret = function.julia_return
        self._return = None if ret is None else (ret.name, ret.dtype.numpy)
        self._direct = {}   # a call's signature (`_signature`) -> its _DirectCall: calls repeat their arguments' kinds
        self._native = None     # the kernel's native entry for the latest signature that called directly often

    def __call__(self, *args, **kwargs):
        native = self._native
        if native is not None and not kwargs:
            result = native(*args)
            if result is not self.kernel.ENTRY_MISMATCH:
                return result
        if not kwargs and self._direct:
            direct = self._direct.get(self._signature(args))
            if direct is not None:
                done, result = direct(args)
                if done:
                    if direct.native is not None:
                        self._native = direct.native    # (its signature is back)
                    elif direct.calls == getattr(self.kernel, "NATIVE_AFTER", None):
                        self._build_native(direct, args)
                    return result
        return self._call(args, kwargs)

    def _build_native(self, direct, args):
        """Make the kernel's native entry for the signature of `args` (which just ran directly) the
        first path of later calls, where the kernel offers one and it takes these arguments."""
        build = getattr(self.kernel, "positional_entry", None)
        slots = None if build is None else direct.native_slots(self._steps, args)
        if slots is not None:
            direct.native = build(slots, direct.run, direct.returns)
            self._native = direct.native or self._native

    def _signature(self, args):
        """What every check of a call depends on (hashable; None when an argument is not what a call takes):
        each array's shape, dtype and flags, each size's type and value, each number's type."""
        if len(args) != len(self._steps):
            return None
        key = []
        for (kind, *_), v in zip(self._steps, args):
            if kind is _ARRAY:
                if type(v) is not np.ndarray:
                    return None
                key.append((v.shape, v.dtype, v.flags.num))
            else:
                key.append((type(v), v) if kind is _SIZE else type(v))
        return tuple(key)

    def _call(self, args, kwargs):
        # the sizes of parametric tiles (`tile` with ms.Param sizes) come as keywords, as on any kernel
        tiles = {k: kwargs.pop(k) for k in self._tile_sizes if k in kwargs}
        values = args if not kwargs and len(args) == len(self.argnames) else self._arguments(args, kwargs)
        call, params, copy_back = dict(tiles), {}, []
        for (kind, name, jt, extra), v in zip(self._steps, values):
            if kind is _ARRAY:
                if not isinstance(v, np.ndarray) or v.ndim != jt.ndim or v.dtype != extra.dtype:
                    check_array(name, v, jt)     # (raises, naming the argument)
                for size, extent in zip(extra.sizes, v.shape):
                    params[size] = extent
                view = v.T
                call[extra.input] = view
                if extra.output is not None:
                    if view.flags.c_contiguous and view.flags.aligned and view.flags.writeable:
                        call[extra.output] = view
                    else:
                        out = np.empty(view.shape, view.dtype)
                        call[extra.output] = out
                        copy_back.append((v, out))
            elif kind is _SIZE:
                is_bool = isinstance(v, (bool, np.bool_))
                if is_bool != jt.dtype.is_bool or not (is_bool or isinstance(v, (int, np.integer))):
                    wanted = "true or false" if jt.dtype.is_bool else "an integer"
                    raise ArgumentError(f"argument {name}::{jt} must be {wanted}, got {v!r}")
                size, passed = extra
                params[size] = int(v)
                if passed:
                    call[size] = int(v)
            else:
                if isinstance(v, np.ndarray) or not isinstance(v, (int, float, np.number)):
                    raise ArgumentError(f"argument {name}::{jt} must be a number, got {v!r}")
                call[extra[0]] = np.array(v, dtype=extra[1])
        # each check only where its statement may run with these sizes (Julia checks when it runs)
        for size, dest_size, what, reached in self.function.julia_broadcast_sizes:
            n, m = params[size], params.get(dest_size, dest_size)    # (1 past the destination's rank)
            if n not in (m, 1) and reached.holds(params):
                raise ArgumentError(f"DimensionMismatch: {what}, of sizes {n} and {m} (Julia broadcasts an "
                                    f"argument whose size is the destination's or 1){reached.caveat}")
        # before the sizes of linear indexing: Julia throws at `eachindex(A, B)`, before the loop reads B[i]
        # (sizes compared first: whether a statement may run is asked of isl only when they differ)
        for names, sizes, what, reached in self.function.julia_eachindex_lengths:
            shapes = [tuple(params[p] for p in s) for s in sizes]
            if len({int(np.prod(shape)) for shape in shapes}) > 1 and reached.holds(params):
                _check_eachindex_lengths(names, shapes, what, reached.caveat)
        for name, sizes, of, of_sizes, what, reached in self.function.julia_linear_sizes:
            shape, of_shape = tuple(params[p] for p in sizes), tuple(params[p] for p in of_sizes)
            if shape != of_shape and reached.holds(params):
                _check_linear_sizes(name, shape, of, of_shape, what, reached.caveat)
        self._check_bounds(params)
        ret = None
        if self._return is not None:
            ret = np.empty((), self._return[1])
            call[self._return[0]] = ret
        outputs = self.kernel(**call)
        for a, out in copy_back:
            a[...] = out.T
        self._check_flags(outputs)
        if not (tiles or copy_back or self.function.julia_bounds_flags):
            self._remember(values, call)
        if ret is not None:
            return ret[()]
        if self.function.julia_returns_array is not None:
            return values[self.argnames.index(self.function.julia_returns_array)]
        return None

    def _remember(self, values, call):
        """Keep the direct launch of a call that bound every array as given, for later calls of its
        signature (`_DirectCall`)."""
        key = self._signature(values)
        if key is None or key in self._direct:
            return
        run = self.kernel.direct(call)
        if run is None:
            return
        source = {}     # buffer name -> argument position (None: the return value)
        for pos, (kind, _, _, extra) in enumerate(self._steps):
            if kind is _ARRAY:
                source[extra.input] = pos
                if extra.output is not None:
                    source[extra.output] = pos
            elif kind is _NUMBER:
                source[extra[0]] = pos
        if self._return is not None:
            source[self._return[0]] = None
        lowered = self.kernel.lowered
        buffers = [b.name for b in (*lowered.inputs, *lowered.outputs)]
        if any(name not in source for name in buffers):
            return
        if len(self._direct) >= 64:
            self._direct.clear()
        self._direct[key] = _DirectCall(self, run, [source[n] for n in buffers])

    def _arguments(self, args, kwargs) -> list:
        """The arguments in declaration order, from positional and keyword ones (ArgumentError naming what
        is wrong)."""
        f = self.function
        if len(args) > len(self.argnames):
            raise ArgumentError(f"{f.name} takes {len(self.argnames)} arguments, got {len(args)}")
        values = dict(zip(self.argnames, args))
        for k, v in kwargs.items():
            if k not in self.argnames:
                raise ArgumentError(f"{f.name} has no argument {k!r}; its arguments are {self.argnames}")
            if k in values:
                raise ArgumentError(f"argument {k} given twice")
            values[k] = v
        missing = [a for a in self.argnames if a not in values]
        if missing:
            raise ArgumentError(f"{f.name} is missing argument(s) {missing}")
        return [values[a] for a in self.argnames]

    def _check_flags(self, outputs):
        """Julia's BoundsError for an access with a data-dependent index that went outside its array (the
        kernel skipped it and set a flag; arrays written before are updated, as when Julia throws)."""
        flags = dict(self.function.julia_bounds_flags)
        if not flags:
            return
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        for buf, value in zip(self.kernel.lowered.outputs, outputs):
            if buf.name in flags and np.any(value):
                raise ArgumentError(f"BoundsError: {flags[buf.name]}")

    def _check_bounds(self, params):
        key = tuple(params.items())     # (in the arguments' order, the same at every call)
        if key in self._checked:
            if self._checked[key]:
                raise ArgumentError(self._checked[key])
            return
        message = None
        for comp, array, bad in self.function.bounds_violations:
            names = param_names(bad)
            if any(n not in params for n in names):
                continue
            if sizes_hold(bad, params):
                message = (f"BoundsError: with {', '.join(f'{k} = {v}' for k, v in sorted(params.items()))}, "
                           f"{comp} accesses {array} outside its bounds")
                break
        self._checked[key] = message
        if message:
            raise ArgumentError(message)

    def __repr__(self):
        return f"<JuliaKernel {self.function.name}({', '.join(self.argnames)})>"
