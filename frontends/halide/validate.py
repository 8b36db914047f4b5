"""Checks of a decoded pipeline before translation: what Halide's own IR guarantees, verified.

Bytes that decode (reader.py checks offsets and lengths) may still be
corrupted or hostile: names missing, a Func without definition, a call with
the wrong number of arguments or a Tuple index out of range, a variable
repeated on a definition's left-hand side, operands of different types, an
integer constant outside its type, split factors that are not positive int32
constants. Each raises HalideFormatError naming the Func (and definition).
Unroll and vector widths beyond MAX_UNROLL and MAX_LANES are refused when the
schedule is applied (schedule.py), since a loop's extent is known only then.
"""
from __future__ import annotations

from .errors import HalideFormatError
from .schema import CALL_TYPES, FOR_TYPES, SPLIT_TYPES, TAIL_STRATEGIES, TYPE_CODES

#: the most dimensions a Func, an ImageParam or a Buffer may have (Halide's buffers allow 16)
MAX_DIMS = 16

_BOOL = ("UInt", 1)
_ARITH = ("Add", "Sub", "Mul", "Div", "Mod", "Min", "Max")
_COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE")
#: intrinsics the translation reads, with their argument counts (None: two or more)
INTRINSIC_ARITY = {
    "likely": 1, "likely_if_innermost": 1, "strict_float": 1, "promise_clamped_identity": 1,
    "promise_clamped": 3, "unsafe_promise_clamped": 3, "abs": 1, "absd": 2, "bitwise_and": 2, "bitwise_or": 2,
    "bitwise_xor": 2, "bitwise_not": 1, "shift_left": 2, "shift_right": 2, "popcount": 1,
    "count_leading_zeros": 1, "count_trailing_zeros": 1, "lerp": 3, "mux": None, "if_then_else": 3,
    "return_second": 2,
}
#: math externs (`sqrt_f32`, ...) by base name, with their argument counts
_EXTERN_ARITY = {"sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "tanh": 1, "floor": 1, "ceil": 1,
                 "round": 1, "trunc": 1, "abs": 1, "is_nan": 1, "pow": 2, "atan2": 2}


def _type_of(t, what):
    """(code name, bits) of a Type node, checked: scalar, and a width its code has."""
    if t is None:
        raise HalideFormatError(f"{what} has no type")
    code = TYPE_CODES[t.code] if 0 <= t.code < len(TYPE_CODES) else None
    valid = {"Int": (8, 16, 32, 64), "UInt": (1, 8, 16, 32, 64), "Float": (16, 32, 64), "BFloat": (16,),
             "Handle": (64,)}
    if code is None or t.bits not in valid[code]:
        raise HalideFormatError(f"{what} has the invalid type code {t.code}, {t.bits} bits")
    if t.lanes not in (0, 1):
        raise HalideFormatError(f"{what} has a type of {t.lanes} lanes; definitions hold scalars")
    return code, t.bits


def _name(value, what):
    if not isinstance(value, str) or not value:
        raise HalideFormatError(f"{what} has no name")
    return value


def _int_fits(value, code, bits):
    if code == "UInt":
        return 0 <= value < (1 << bits)
    return -(1 << (bits - 1)) <= value < (1 << (bits - 1))


class PipelineChecker:
    """Walks a decoded pipeline once; `check()` raises HalideFormatError at the first fault."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.funcs = {}
        self.images = {}
        self.buffers = {}
        self.scalars = {}

    def check(self):
        pipe = self.pipe
        if not pipe.funcs:
            raise HalideFormatError("the pipeline has no Funcs")
        for i, f in enumerate(pipe.funcs):
            if f is None:
                raise HalideFormatError(f"Func {i} of the pipeline is missing")
            name = _name(f.name, f"Func {i} of the pipeline")
            if name in self.funcs:
                raise HalideFormatError(f"two Funcs of the pipeline are named {name}")
            self.funcs[name] = f
        if not pipe.output_names:
            raise HalideFormatError("the pipeline names no outputs")
        for n in pipe.output_names:
            if n not in self.funcs:
                raise HalideFormatError(f"the pipeline's output {n!r} is not one of its Funcs")
        twice = next((n for n in pipe.output_names if pipe.output_names.count(n) > 1), None)
        if twice is not None:
            raise HalideFormatError(f"the pipeline lists Func {twice} twice among its outputs "
                                    f"{pipe.output_names}; list each output once")
        for p in pipe.external_parameters:
            self._parameter(p)
        for b in pipe.buffers:
            self._buffer(b)
        for f in pipe.funcs:
            self._func(f)

    # inputs -------------------------------------------------------------------------------
    def _parameter(self, p):
        name = _name(p.name, "a parameter of the pipeline")
        if name in self.images or name in self.scalars:
            raise HalideFormatError(f"two parameters of the pipeline are named {name}")
        t = _type_of(p.type, f"parameter {name}")
        if p.is_buffer:
            if not 0 <= p.dimensions <= MAX_DIMS:
                raise HalideFormatError(f"ImageParam {name} has {p.dimensions} dimensions")
            self.images[name] = (t, p.dimensions)
        else:
            self.scalars[name] = t

    def _buffer(self, b):
        name = _name(b.name, "a Buffer of the pipeline")
        t = _type_of(b.type, f"Buffer {name}")
        if b.dimensions != len(b.dims) or not 0 <= b.dimensions <= MAX_DIMS:
            raise HalideFormatError(f"Buffer {name} says it has {b.dimensions} dimensions but describes {len(b.dims)}")
        count = 1
        for d in b.dims:
            if d is None or d.extent < 0:
                raise HalideFormatError(f"Buffer {name} has a dimension of negative or missing extent")
            count *= d.extent
        if count > (1 << 31):
            raise HalideFormatError(f"Buffer {name} has {count} elements, more than a Halide Buffer holds")
        self.buffers[name] = (t, b.dimensions)

    # Funcs ----------------------------------------------------------------------------------
    def _func(self, f):
        where = f"Func {f.name}"
        args = [_name(a, f"an argument of {where}") for a in f.args]
        if len(set(args)) != len(args):
            repeated = next(a for a in args if args.count(a) > 1)
            raise HalideFormatError(f"{where} repeats the variable {repeated} on its left-hand side "
                                    f"({f.name}({', '.join(args)})); Halide refuses such definitions")
        if len(args) > MAX_DIMS:
            raise HalideFormatError(f"{where} has {len(args)} dimensions")
        if not f.output_types:
            raise HalideFormatError(f"{where} has no value types")
        types = [_type_of(t, f"a value of {where}") for t in f.output_types]
        if f.extern_function_name:
            return   # define_extern: refused by name (pipeline.check_supported)
        if f.init_def is None:
            raise HalideFormatError(f"{where} has no pure definition")
        for k, d in enumerate([f.init_def] + list(f.updates)):
            self._definition(f, k, d, args, types)
        self._func_schedule(f, args)

    def _definition(self, f, k, d, args, types):
        where = f"Func {f.name}" + (f" (update {k - 1})" if k else "")
        if d is None:
            raise HalideFormatError(f"{where} is missing")
        if len(d.values) != len(types):
            raise HalideFormatError(f"{where} defines {len(d.values)} values for the {len(types)} of its type")
        if len(d.args) != len(args):
            raise HalideFormatError(f"{where} writes at {len(d.args)} indices; {f.name} has {len(args)} dimensions")
        for i, a in enumerate(d.args):
            if a is None:
                raise HalideFormatError(f"{where}: its index {i} is missing")
            if k == 0 and (a.kind != "Variable" or a.name != args[i]):
                raise HalideFormatError(f"{where}: the pure definition must write at its arguments "
                                        f"{f.name}({', '.join(args)})")
        if k:
            pure = [a.name for a in d.args if a.kind == "Variable" and a.name in args]
            repeated = next((n for n in pure if pure.count(n) > 1), None)
            if repeated is not None:
                raise HalideFormatError(f"{where} repeats the variable {repeated} on its left-hand side; Halide "
                                        f"refuses such definitions")
        exprs = ExprChecker(self, where, None if k else f.name)
        for v, (value, t) in enumerate(zip(d.values, types)):
            got = exprs(value, f"value {v}")
            if got != t:
                raise HalideFormatError(f"{where}: value {v} is a {got} value, but {f.name} holds {t}")
        for i, a in enumerate(d.args):
            if exprs(a, f"index {i}")[0] not in ("Int", "UInt"):
                raise HalideFormatError(f"{where}: its index {i} is not an integer")
        if d.predicate is not None and d.predicate.kind != "UndefinedExpr":
            if exprs(d.predicate, "predicate") != _BOOL:
                raise HalideFormatError(f"{where}: its predicate is not a condition")
            if not k and not (d.predicate.kind in ("UIntImm", "IntImm") and d.predicate.value == 1):
                # (only an update's RDom has a where clause; Halide writes a pure definition's as true)
                raise HalideFormatError(f"{where}: the pure definition has a condition; Halide gives pure "
                                        f"definitions none (a condition belongs to an update's RDom.where)")
        self._stage_schedule(where, d.stage_schedule, exprs)

    def _stage_schedule(self, where, s, exprs):
        if s is None:
            return
        for r in s.rvars:
            _name(getattr(r, "var", None), f"a reduction variable of {where}")
            for side in (r.min, r.extent):
                if exprs(side, f"the bounds of {r.var}")[0] not in ("Int", "UInt"):
                    raise HalideFormatError(f"{where}: the bounds of {r.var} are not integers")
        for sp in s.splits:
            what = f"{where}: a split of its schedule"
            for n in (sp.old_var, sp.outer) + ((sp.inner,) if sp.split_type == 0 else ()):
                _name(n, what)
            if sp.split_type >= len(SPLIT_TYPES):
                raise HalideFormatError(f"{what} has the unknown kind {sp.split_type}")
            if sp.tail >= len(TAIL_STRATEGIES):
                raise HalideFormatError(f"{what} has the unknown tail strategy {sp.tail}")
            if SPLIT_TYPES[sp.split_type] == "SplitVar":
                factor = sp.factor
                if factor is None or factor.kind not in ("IntImm", "UIntImm") or factor.type is None:
                    continue   # refused by name when the schedule is applied (a factor must be constant)
                code, bits = _type_of(factor.type, f"the factor of split({sp.old_var}) in {where}")
                if not _int_fits(factor.value, code, min(bits, 32)) or factor.value <= 0:
                    raise HalideFormatError(f"{where}: split({sp.old_var}) by {factor.value}; a factor is a "
                                            f"positive 32-bit integer")
            elif SPLIT_TYPES[sp.split_type] == "FuseVars":
                _name(sp.inner, what)
        for dim in s.dims:
            _name(dim.var, f"{where}: a loop of its schedule")
            if not 0 <= dim.for_type < len(FOR_TYPES):
                raise HalideFormatError(f"{where}: loop {dim.var} has the unknown loop type {dim.for_type}")
        names = [dim.var for dim in s.dims]
        if len(set(names)) != len(names):
            raise HalideFormatError(f"{where}: its schedule lists a loop twice ({names})")

    def _func_schedule(self, f, args):
        where = f"Func {f.name}"
        s = f.func_schedule
        if s is None:
            return
        for level, what in ((s.compute_level, "compute_at"), (s.store_level, "store_at")):
            if level is None or not level.func_name:
                continue
            other = self.funcs.get(level.func_name)
            if other is None:
                raise HalideFormatError(f"{where}.{what}({level.func_name}, ...) names a Func the pipeline does "
                                        f"not have")
            if not -1 <= level.stage_index <= len(other.updates):
                raise HalideFormatError(f"{where}.{what}({level.func_name}) names stage {level.stage_index}, which "
                                        f"{level.func_name} does not have")
            _name(level.var_name, f"{where}.{what}({level.func_name}): its loop")
        for sd in s.storage_dims:
            if sd is None or sd.var not in args:
                raise HalideFormatError(f"{where}: a storage dimension names no argument of {f.name}")
        for b in s.bounds:
            if b is None or b.var not in args:
                raise HalideFormatError(f"{where}: a bound() names no argument of {f.name}")
            exprs = ExprChecker(self, f"{where}: bound({b.var})")
            for side in (b.min, b.extent):
                if side is not None and side.kind != "UndefinedExpr" and exprs(side, "its bounds")[0] not in ("Int", "UInt"):
                    raise HalideFormatError(f"{where}: bound({b.var}) is not an integer")
        for w in s.wrappers:
            if w is None or not 0 <= w.func_index < len(self.pipe.funcs):
                raise HalideFormatError(f"{where}: a wrapper names no Func of the pipeline")


class ExprChecker:
    """The type of a Halide expression (code name, bits), checking it node by node as Halide's IR
    constructors do."""

    def __init__(self, pipeline, where, pure_of=None):
        self.p = pipeline
        self.where = where
        self.pure_of = pure_of   # the Func whose pure definition this is: it may not call itself

    def fail(self, what, why):
        return HalideFormatError(f"{self.where}: {what} {why}")

    def __call__(self, node, what="an expression"):
        stack, out = [(node, False)], {}
        # iterative post-order: deep expressions must not exhaust Python's stack
        while stack:
            n, done = stack.pop()
            if n is None:
                raise self.fail(what, "has a missing sub-expression")
            if not done:
                stack.append((n, True))
                stack.extend((c, False) for c in self._children(n, what))
                continue
            out[id(n)] = self._type(n, [out[id(c)] for c in self._children(n, what)], what)
        return out[id(node)]

    def _children(self, n, what):
        kind = n.kind
        if kind in _ARITH or kind in _COMPARE or kind in ("And", "Or"):
            return [n.a, n.b]
        if kind in ("Not",):
            return [n.a]
        if kind in ("Cast", "Reinterpret"):
            return [n.value]
        if kind == "Select":
            return [n.condition, n.true_value, n.false_value]
        if kind == "Let":
            return [n.value, n.body]
        if kind == "Call":
            return list(n.args)
        return []

    def _type(self, n, kids, what):
        kind = n.kind
        if kind in ("IntImm", "UIntImm"):
            t = _type_of(n.type, f"{self.where}: a constant in {what}")
            if t[0] not in ("Int", "UInt") or not _int_fits(n.value, *t):
                raise self.fail(what, f"has the constant {n.value}, outside its type {t[0]}({t[1]})")
            return t
        if kind == "FloatImm":
            t = _type_of(n.type, f"{self.where}: a constant in {what}")
            if t[0] != "Float":
                raise self.fail(what, f"has a float constant of type {t[0]}")
            return t
        if kind == "StringImm":
            return ("Handle", 64)
        if kind in _ARITH:
            if kids[0] != kids[1]:
                raise self.fail(what, f"has a {kind} of a {kids[0]} and a {kids[1]} value")
            return kids[0]
        if kind in _COMPARE:
            if kids[0] != kids[1]:
                raise self.fail(what, f"compares a {kids[0]} and a {kids[1]} value")
            return _BOOL
        if kind in ("And", "Or", "Not"):
            if any(k != _BOOL for k in kids):
                raise self.fail(what, f"has a logical {kind} of non-boolean values")
            return _BOOL
        if kind == "Select":
            if kids[0] != _BOOL or kids[1] != kids[2]:
                raise self.fail(what, "has a select whose condition is not boolean or whose values differ in type")
            return kids[1]
        if kind in ("Cast", "Reinterpret"):
            return _type_of(n.type, f"{self.where}: a {kind.lower()} in {what}")
        if kind == "Let":
            _name(n.name, f"{self.where}: a let in {what}")
            return kids[1]
        if kind == "Variable":
            _name(n.name, f"{self.where}: a variable in {what}")
            t = _type_of(n.type, f"{self.where}: variable {n.name} in {what}")
            rd = n.reduction_domain
            if rd is not None and rd.defined:
                names = [_name(getattr(r, "var", None), f"{self.where}: a reduction variable in {what}")
                         for r in rd.domain]
                if n.name not in names:
                    raise self.fail(what, f"has the variable {n.name} with a reduction domain over {names}, "
                                          f"which does not hold it")
            return t
        if kind == "Call":
            return self._call(n, kids, what)
        return _type_of(getattr(n, "type", None), f"{self.where}: a {kind} node in {what}") \
            if getattr(n, "type", None) is not None else ("Handle", 64)

    def _call(self, n, kids, what):
        t = _type_of(n.type, f"{self.where}: a call in {what}")
        if n.call_type >= len(CALL_TYPES):
            raise self.fail(what, f"has a call of unknown kind {n.call_type}")
        kind = CALL_TYPES[n.call_type]
        if kind in ("Halide", "Image") and any(k[0] not in ("Int", "UInt") for k in kids):
            raise self.fail(what, f"calls {n.name} at a non-integer index")
        if kind == "Halide":
            funcs = self.p.pipe.funcs
            if not 0 <= n.func_index < len(funcs):
                raise self.fail(what, f"calls Func index {n.func_index}; the pipeline has {len(funcs)} Funcs")
            callee = funcs[n.func_index]
            if callee.name == self.pure_of:
                raise self.fail(what, f"calls {callee.name} itself; only an update may read its own Func")
            if len(kids) != len(callee.args):
                raise self.fail(what, f"calls {callee.name} with {len(kids)} arguments; it has {len(callee.args)}")
            if not 0 <= n.value_index < len(callee.output_types):
                raise self.fail(what, f"reads value {n.value_index} of {callee.name}, which has "
                                      f"{len(callee.output_types)}")
            if t != _type_of(callee.output_types[n.value_index], f"a value of Func {callee.name}"):
                raise self.fail(what, f"reads {callee.name} as a {t} value, but it holds another type")
            return t
        if kind == "Image":
            source = self.p.images.get(n.param_name) or self.p.buffers.get(n.image_name)
            if source is None:
                raise self.fail(what, f"reads the image {n.name!r}, which is neither an ImageParam nor a Buffer of "
                                      f"the pipeline")
            if source[1] != len(kids) or source[0] != t:
                raise self.fail(what, f"reads {n.name} with {len(kids)} indices as {t}; it has {source[1]} "
                                      f"dimensions of {source[0]}")
            return t
        name = _name(n.name, f"{self.where}: a call in {what}")
        if kind in ("Intrinsic", "PureIntrinsic") and name in INTRINSIC_ARITY:
            arity = INTRINSIC_ARITY[name]
            if (len(kids) < 2) if arity is None else len(kids) != arity:
                raise self.fail(what, f"calls {name} with {len(kids)} arguments")
        if kind in ("Extern", "PureExtern", "ExternCPlusPlus"):
            base = name.rpartition("_")[0]
            if base in _EXTERN_ARITY and len(kids) != _EXTERN_ARITY[base]:
                raise self.fail(what, f"calls {name} with {len(kids)} arguments")
        return t


def check_pipeline(pipe):
    """Raise HalideFormatError, naming the Func, for what no Halide pipeline contains."""
    PipelineChecker(pipe).check()
