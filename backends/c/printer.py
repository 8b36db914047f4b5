"""The C printer: a `LoweredFunction` as one C translation unit, in a dialect.

The unit defines the calling convention of backends/common/cheader (the
kernel, `NAME_argv`, `NAME_set_num_threads`) so that the same Python kernel
class, C header and callers serve the LLVM and the C targets. Expressions
follow middleend/semantics.py exactly: integer `+ - *` are done in an unsigned
type and converted back (wrapping, never C's undefined signed overflow),
except int64 index arithmetic, which the contract says never overflows; the
other operations C does not define for every input call the helpers of
backends/c/semantics.py. A sub-expression used more than once in a statement
is computed once, into a `const` local.
"""
from __future__ import annotations

from dataclasses import dataclass

from mascarpone.backends.common.cheader import kernel_name, signature
from mascarpone.backends.common.cnames import Names
from mascarpone.backends.common.collapse import collapse_parallel_nests
from mascarpone.backends.common.hoist import hoist_allocations
from mascarpone.backends.common.prefetch import Prefetch, line_offsets
from mascarpone.backends.common.promote import promote_accumulators
from mascarpone.backends.common.temporaries import StackBudget
from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import (BIT_OPS, COMPARE_OPS, INT_FUNCS, LOGIC_OPS, SHIFT_OPS, Access, BinOp,
                                       Call, Cast, Const, Reinterpret, Select, Sym, UnOp, pseudo_c)
from mascarpone.middleend.loopir import Allocate, Block, For, If, Store, walk_stmts
from mascarpone.middleend.types import DType, int64

from .dialect import CDialect
from .semantics import Helpers

_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
           "eq": "==", "ne": "!=", "bitand": "&", "bitor": "|", "bitxor": "^"}
_WRAPPING = ("add", "sub", "mul")
_HELPER_OPS = ("min", "max", "div", "mod", "ediv", "emod")


@dataclass
class _View:
    """A buffer in scope: its C name, element type and strides (ints, or names of int64 locals)."""

    ident: str
    dtype: DType
    extents: list   # C text of each extent
    strides: list   # int, or (name, C text of its value) declared where the buffer comes into scope
    used: set       # names of the stride locals some access used


class _Lines:
    """Indented lines of C."""

    def __init__(self, depth=1):
        self.lines, self.depth = [], depth

    def __call__(self, text=""):
        if text.startswith("#"):
            self.lines.append(text)      # preprocessor lines start at column 0
        else:
            self.lines.append("    " * self.depth + text if text else "")

    def extend(self, other):
        self.lines.extend(other.lines)


def operands_in_context(e, index):
    """The operands of `e` with whether each is in index context (as the printer evaluates them)."""
    if isinstance(e, Access):
        return [(i, True) for i in e.indices]
    if isinstance(e, BinOp):
        inherit = index and e.op not in LOGIC_OPS
        return [(e.a, inherit), (e.b, inherit)]
    if isinstance(e, UnOp):
        return [(e.a, index)]
    if isinstance(e, Select):
        return [(e.cond, False), (e.t, index), (e.f, index)]
    return [(c, False) for c in e.children]


class CPrinter:
    """Prints loop IR as C in a dialect; one printer per translation unit."""

    def __init__(self, dialect: CDialect | None = None):
        self.d = dialect or CDialect()
        self.names = Names()
        self.helpers = Helpers(self.d)
        self.bound = {}        # id(expr) -> name of the local holding its value (in the current statement)
        self.views = {}        # buffer name -> _View
        self.in_parallel = False
        self.in_simd = False
        self.stack = StackBudget()
        self.threads_global = None

    # the translation unit ------------------------------------------------------------------------
    def translation_unit(self, lowered, banner: list = (), pragmas: list = ()) -> str:
        """The C source of `lowered` with the kernel ABI; `banner` lines open it as a comment,
        `pragmas` follow the includes."""
        name = kernel_name(lowered)
        for reserved in self.exported_names(name):
            self.names(reserved)
        self.threads_global = f"{name}_num_threads"
        kernel = self.kernel(lowered)
        out = ["/* " + line + " */" for line in banner]
        out += self.d.includes() + list(pragmas) + [""]
        out += self.globals(lowered)
        out += self.helpers.definitions()
        out += kernel + [""]
        out += self.exports(lowered)
        return "\n".join(out)

    # what a dialect's printer may extend ---------------------------------------------------------------
    def exported_names(self, name) -> list:
        """The C names the unit defines besides its helpers (program names may not take them)."""
        return [name, f"{name}_argv", f"{name}_set_num_threads", f"{name}_num_threads"]

    def globals(self, lowered) -> list:
        """Lines of the unit's global variables (the thread count of parallel loops)."""
        return [f"int32_t {self.threads_global} = 0;", ""]

    def exports(self, lowered) -> list:
        """The functions after the kernel: `NAME_argv` (arguments packed in arrays) and
        `NAME_set_num_threads`."""
        name = kernel_name(lowered)
        buffers = list(lowered.arguments)
        args = [f"({'const ' if k < len(lowered.inputs) else ''}{self.d.memory(b.dtype)} *)buffers[{k}]"
                for k, b in enumerate(buffers)]
        args += [f"params[{k}]" for k in range(len(lowered.params))]
        return [f"int32_t {name}_argv(void **buffers, const int64_t *params) {{",
                f"    {'(void)params; ' if not lowered.params else ''}return {name}({', '.join(args)});",
                "}", "",
                f"void {name}_set_num_threads(int32_t n) {{",
                f"    {self.threads_global} = n < 0 ? 0 : n;",
                "}", ""]

    def signature(self, lowered) -> str:
        """The kernel's C prototype, without `;`."""
        return signature(lowered, self.names, self.d.restrict)

    def prologue(self, lowered, out) -> None:
        """Lines at the start of the kernel, before the derived sizes (none in C)."""

    def epilogue(self, lowered, out) -> None:
        """Lines before the kernel returns `ms_status` (none in C)."""

    def other_stmt(self, s, out) -> None:
        """Print a statement the loop IR does not define (a dialect's own, such as communication)."""
        raise NotSupportedError(f"the C printer cannot print {type(s).__name__} statements")

    def index_dtype(self) -> DType:
        """The type int64 index arithmetic is done in (loop variables, strides, shared index sub-expressions,
        min/max/div helpers): int64; a GPU kernel whose indices the sizes of a call prove to fit in 32 bits
        has a variant in int32."""
        return int64

    def index_ctype(self) -> str:
        """The C name of `index_dtype()`."""
        return self.d.scalar(self.index_dtype())

    def heap_block(self, elem: str, count: str) -> tuple:
        """(C expression allocating `count` elements of type `elem` on the heap, the statement that frees
        it with `{}` for its name, or None when nothing is to be freed)."""
        return f"malloc({count} > 0 ? (size_t){count} * sizeof({elem}) : 1)", "free({});"

    def allocation_failed(self, ident: str, body) -> str:
        """The C condition under which the heap temporary `ident`, allocated around the loop IR `body`,
        is unusable (the body is then skipped and the kernel returns 1)."""
        return f"{ident} == NULL"

    def kernel(self, lowered) -> list:
        """The kernel function's lines."""
        body = lowered.body
        if self.d.threads_parallel_loops:
            body = collapse_parallel_nests(body)
        body = promote_accumulators(body, prefetch=self.d.prefetches)
        if self.d.hoists_allocations:
            body = hoist_allocations(body)
        out = _Lines()
        out("int32_t ms_status = 0;")
        self.prologue(lowered, out)
        for derived, value in lowered.derived:
            out(f"const int64_t {self.names(derived)} = {self.expr(value, True)};")
        views = [self._view(b) for b in lowered.arguments]
        allocated = {s.buffer.name for s in walk_stmts(body) if isinstance(s, Allocate)}
        pending = [t for t in lowered.temporaries if t.name not in allocated]
        for b in reversed(pending):  # kernel-wide temporaries without an Allocate of their own
            body = Allocate(b, body)
        inner = _Lines()
        self.stmt(body, inner)
        self._declare_strides(views, out)
        out.extend(inner)
        self.epilogue(lowered, out)
        out("return ms_status;")
        return [self.signature(lowered) + " {", *out.lines, "}"]

    # buffers ------------------------------------------------------------------------------------------
    def _view(self, buffer) -> _View:
        """Bring `buffer` into scope (its C name and strides)."""
        ident = self.names(buffer.name, "buffer")
        extents = [self.expr(d, True) for d in buffer.shape]
        strides = [1] if buffer.shape else []
        for k in range(len(buffer.shape) - 1, 0, -1):
            inner, ext = strides[0], buffer.shape[k]
            if isinstance(ext, Const) and isinstance(inner, int):
                strides.insert(0, ext.value * inner)
                continue
            value = extents[k] if inner == 1 else f"{extents[k]} * {inner if isinstance(inner, int) else inner[0]}"
            strides.insert(0, (self.names.fresh(f"{ident}_s"), value))
        view = _View(ident, buffer.dtype, extents, strides, set())
        self.views[buffer.name] = view
        return view

    def _declare_strides(self, views, out):
        """Declare the stride locals of `views` that accesses used, and those they are computed from
        (an outer stride is an extent times the next inner one), inner ones first."""
        for v in views:
            needed = False
            decls = []
            for s in v.strides:
                if isinstance(s, int):
                    needed = False
                    continue
                needed = needed or s[0] in v.used
                if needed:
                    decls.append(f"const {self.index_ctype()} {s[0]} = {s[1]};")
            for line in reversed(decls):
                out(line)

    def _flat(self, view, indices) -> str:
        if len(indices) != len(view.strides):
            raise NotSupportedError(f"buffer {view.ident} has {len(view.strides)} dimension(s), "
                                    f"accessed with {len(indices)} index(es)")
        terms = []
        for idx, stride in zip(indices, view.strides):
            if isinstance(idx, Const) and idx.value == 0:
                continue
            text = self.expr(idx, True)
            if stride == 1:
                terms.append(text)
            elif isinstance(stride, int):
                terms.append(f"{text} * {stride}")
            else:
                view.used.add(stride[0])
                terms.append(f"{text} * {stride[0]}")
        return " + ".join(terms) or "0"

    def element(self, view, indices) -> str:
        """C text of the element of `view` at `indices` (an lvalue): the flat index into its memory
        (a dialect with multi-dimensional local arrays indexes them per dimension instead)."""
        return f"{view.ident}[{self._flat(view, indices)}]"

    def _buffer(self, name) -> _View:
        try:
            return self.views[name]
        except KeyError:
            raise NotSupportedError(f"the buffer {name!r} is not an argument and not allocated here") from None

    # expressions ----------------------------------------------------------------------------------------
    def expr(self, e, index=False) -> str:
        """C text of the loop IR expression `e` (`index`: int64 index arithmetic, which cannot overflow)."""
        name = self.bound.get(id(e))
        if name is not None:
            return name
        if isinstance(e, Const):
            if e.dtype.is_bool:
                return self.d.bool_literal(e.value)
            if e.dtype.is_float:
                return self.d.float_literal(e.value, e.dtype)
            return self.d.int_literal(e.value, e.dtype)
        if isinstance(e, Sym):
            ident = self.names(e.name)
            return ident if e.dtype == int64 else f"(({self.d.scalar(e.dtype)}){ident})"
        if isinstance(e, Access):
            load = self.element(self._buffer(e.target.name), e.indices)
            return f"({load} != 0)" if e.dtype.is_bool else load
        if isinstance(e, BinOp):
            return self._binop(e, index)
        if isinstance(e, UnOp):
            return self._unop(e, index)
        if isinstance(e, Select):
            return f"({self.expr(e.cond)} ? {self.expr(e.t, index)} : {self.expr(e.f, index)})"
        if isinstance(e, Cast):
            return self._cast(e)
        if isinstance(e, Reinterpret):
            return self.helpers.call("bits", (e.a.dtype, e.dtype), [self.expr(e.a)])
        if isinstance(e, Call):
            args = [self.expr(a) for a in e.args]
            if e.fn in INT_FUNCS or e.fn in ("maximum", "minimum"):
                return self.helpers.call(e.fn, (e.dtype,), args)
            return self.d.math_call(e.fn, e.dtype, args)
        raise NotSupportedError(f"the C printer cannot print {type(e).__name__} nodes: {pseudo_c(e)}")

    def _binop(self, e, index):
        op, dt = e.op, e.a.dtype
        if op in LOGIC_OPS:  # both sides are evaluated: `&`/`|` on 0/1 values
            return f"({self.expr(e.a)} {'&' if op == 'and' else '|'} {self.expr(e.b)})"
        if op in SHIFT_OPS:
            return self.helpers.call(op, (dt, e.b.dtype), [self.expr(e.a, index), self.expr(e.b, index)])
        if op in COMPARE_OPS:
            return f"({self.expr(e.a, index)} {_SYMBOL[op]} {self.expr(e.b, index)})"
        if op in BIT_OPS:
            return f"(({self.d.scalar(dt)})({self.expr(e.a, index)} {_SYMBOL[op]} {self.expr(e.b, index)}))"
        if dt.is_bool:  # min and max of bools
            return f"({self.expr(e.a)} {'&' if op == 'min' else '|'} {self.expr(e.b)})"
        if dt.is_float:
            if op in ("add", "sub", "mul", "div"):
                return f"({self.expr(e.a, index)} {_SYMBOL[op]} {self.expr(e.b, index)})"
            if op == "mod":
                return self.d.math_call("fmod", dt, [self.expr(e.a), self.expr(e.b)])
            return self.helpers.call(op, (dt,), [self.expr(e.a), self.expr(e.b)])
        if op in _WRAPPING:
            if index and dt == int64:
                return f"({self.expr(e.a, True)} {_SYMBOL[op]} {self.expr(e.b, True)})"
            return self._wrapped(e, index)
        if op in _HELPER_OPS:
            ht = self.index_dtype() if index and dt == int64 else dt
            return self.helpers.call(op, (ht,), [self.expr(e.a, index), self.expr(e.b, index)])
        raise NotSupportedError(f"the C printer has no rule for {op} on {dt}: {pseudo_c(e)}")

    def _unop(self, e, index):
        if e.op == "not":
            return f"(!{self.expr(e.a)})"
        if e.op == "bitnot":
            return f"(({self.d.scalar(e.dtype)})~{self.expr(e.a, index)})"
        if e.dtype.is_float:
            return f"(-{self.expr(e.a, index)})"
        if index and e.dtype == int64:
            return f"(-{self.expr(e.a, True)})"
        return self._wrapped(e, index)

    def _wrapped(self, e, index):
        """An integer `+ - *` or negation, done in the unsigned work type and converted back."""
        return f"(({self.d.scalar(e.dtype)})({self._work(e, e.dtype, index)}))"

    def _work(self, e, dt, index):
        """`e` as an expression of the unsigned work type of `dt`, equal to it modulo 2^width: a chain of
        wrapping operations stays in that type and is converted back once."""
        w = self.d.work(dt)
        if id(e) not in self.bound and e.dtype == dt:
            if isinstance(e, BinOp) and e.op in _WRAPPING:
                return f"({self._work(e.a, dt, index)} {_SYMBOL[e.op]} {self._work(e.b, dt, index)})"
            if isinstance(e, UnOp) and e.op == "neg":
                return f"(0u - {self._work(e.a, dt, index)})"
        return f"({w}){self.expr(e, index)}"

    def _cast(self, e):
        src, dst = e.a.dtype, e.dtype
        a = self.expr(e.a)
        if src == dst:
            return a
        if dst.is_bool:
            return f"({a} != 0)"
        if src.is_float and dst.is_int:
            return self.helpers.call("f2i", (src, dst), [a])
        return f"(({self.d.scalar(dst)}){a})"

    # statements -------------------------------------------------------------------------------------------
    def _bind(self, roots, out):
        """Declare a `const` local for every sub-expression of `roots` ((expr, index) pairs) used more than
        once, operands first; later prints of those nodes use the local."""
        counts, first_context, order = {}, {}, []
        stack = [(e, index, False) for e, index in reversed(roots)]
        while stack:
            e, index, done = stack.pop()
            if done:
                order.append(e)
                continue
            k = id(e)
            counts[k] = counts.get(k, 0) + 1
            if counts[k] > 1:
                continue
            first_context[k] = index
            stack.append((e, index, True))
            stack.extend((c, ci, False) for c, ci in reversed(operands_in_context(e, index)))
        for e in order:
            if counts[id(e)] > 1 and not isinstance(e, (Const, Sym)):
                index = first_context[id(e)]
                text = self.expr(e, index)
                name = self.names.fresh("t")
                ctype = self.index_ctype() if index and e.dtype == int64 else self.d.scalar(e.dtype)
                out(f"const {ctype} {name} = {text};")
                self.bound[id(e)] = name

    def stmt(self, s, out):
        """Print the statement `s` into `out`."""
        saved = self.bound
        self.bound = {}
        try:
            self._stmt(s, out)
        finally:
            self.bound = saved

    def _stmt(self, s, out):
        if s is None:
            return
        if isinstance(s, Block):
            for c in s.body:
                self.stmt(c, out)
        elif isinstance(s, Store):
            view = self._buffer(s.buffer.name)
            self._bind([(i, True) for i in s.indices] + [(s.value, False)], out)
            value = self.expr(s.value)
            if s.buffer.dtype.is_bool:
                value = f"({self.d.memory(s.buffer.dtype)}){value}"
            out(f"{self.element(view, s.indices)} = {value};")
        elif isinstance(s, If):
            self._bind([(s.cond, False)], out)
            out(f"if ({self.expr(s.cond)}) {{")
            self._nested(s.then, out)
            if s.else_ is not None:
                out("} else {")
                self._nested(s.else_, out)
            out("}")
        elif isinstance(s, For):
            self._for(s, out)
        elif isinstance(s, Allocate):
            self._allocate(s, out)
        elif isinstance(s, Prefetch):
            self._prefetch(s, out)
        else:
            self.other_stmt(s, out)

    def _prefetch(self, s, out):
        """A hint per cache line of the box; the address is integer arithmetic, so a line past the
        buffer is not undefined behaviour."""
        view = self._buffer(s.first.target.name)
        elem = self.d.memory(s.first.target.dtype)
        for offsets in line_offsets(s.extents, s.first.target.dtype.bytes):
            idx = [i if k == 0 else BinOp("add", i, Const(k, int64)) for i, k in zip(s.first.indices, offsets)]
            address = f"(uintptr_t){view.ident} + (uintptr_t)({self._flat(view, idx)}) * sizeof({elem})"
            for line in self.d.prefetch(address, s.level):
                out(line)

    def _nested(self, s, out):
        out.depth += 1
        self.stmt(s, out)
        out.depth -= 1

    def _for(self, s, out):
        self._bind([(s.lo, True), (s.hi, True)], out)
        lo, hi = self.expr(s.lo, True), self.expr(s.hi, True)
        var = self.names(s.var)
        header = f"for ({self.index_ctype()} {var} = {lo}; {var} < {hi}; {var}++) {{"
        if s.kind == "parallel" and not self.in_parallel and not self.in_simd:
            return self._parallel(s, var, lo, hi, out)
        if s.kind == "vector" and s.factor > 1 and not self.in_simd and self._simd_body(s.body):
            out(self.d.simd_pragma(s.factor))
            out(header)
            self.in_simd = True
            try:
                self._nested(s.body, out)
            finally:
                self.in_simd = False
            out("}")
            return
        if s.kind == "unroll" and s.factor > 1:
            out(self.d.unroll_pragma(s.factor))
        out(header)
        self._nested(s.body, out)
        out("}")

    @staticmethod
    def _simd_body(body) -> bool:
        """Whether a vector loop's body may run under `omp simd`: no OpenMP construct may nest in it (a
        parallel loop, the atomic status write of a heap temporary), so no loop-level parallelism and no
        temporaries."""
        return not any(isinstance(n, Allocate) or (isinstance(n, For) and n.kind == "parallel")
                       for n in walk_stmts(body))

    def _parallel(self, s, var, lo, hi, out):
        """A parallel loop: OpenMP threads take dynamic chunks of about a quarter of their share each, so
        a thread the system delays takes fewer chunks instead of holding the others up."""
        b, e = self.names.fresh("lo"), self.names.fresh("hi")
        nt, chunk = self.names.fresh("threads"), self.names.fresh("chunk")
        out(f"const int64_t {b} = {lo}, {e} = {hi};")
        out(f"if ({b} < {e}) {{")
        out.depth += 1
        out(f"const int {nt} = {self.helpers.threads()}({self.threads_global});")
        out(f"int64_t {chunk} = ({e} - {b}) / (4 * (int64_t){nt});")
        out(f"if ({chunk} < 1) {chunk} = 1;")
        out(self.d.parallel_pragma(nt, chunk))
        out(f"for (int64_t {var} = {b}; {var} < {e}; {var}++) {{")
        saved = self.stack
        self.in_parallel, self.stack = True, StackBudget()  # a worker thread's stack
        try:
            self._nested(s.body, out)
        finally:
            self.in_parallel, self.stack = False, saved
        out("}")
        out.depth -= 1
        out("}")

    def _allocate(self, s, out):
        """A temporary: a stack array when the budget takes it, else a heap block (out of memory: the
        body is skipped and the call returns 1)."""
        buffer = s.buffer
        if buffer.name in self.views:
            raise NotSupportedError(f"the temporary {buffer.name} is allocated twice in one scope")
        elem = self.d.memory(buffer.dtype)
        nbytes = self.stack.take(buffer)
        view = self._view(buffer)
        head, body = _Lines(out.depth), _Lines(out.depth)
        try:
            if nbytes is not None:
                count = max(nbytes // buffer.dtype.bytes, 1)
                head(f"{elem} {view.ident}[{count}];")
                self.stmt(s.body, body)
                self._declare_strides([view], head)
                out.extend(head)
                out.extend(body)
                return
            count = " * ".join(f"({x})" for x in view.extents) or "1"
            size = self.names.fresh("count")
            head(f"const int64_t {size} = {count};")
            take, release = self.heap_block(elem, size)
            head(f"{elem} *{self.d.restrict} {view.ident} = ({elem} *){take};")
            body.depth += 1
            self.stmt(s.body, body)
            body.depth -= 1
            self._declare_strides([view], head)
            out.extend(head)
            out(f"if ({self.allocation_failed(view.ident, s.body)}) {{")
            out.depth += 1
            if self.in_parallel:
                out(self.d.atomic_write_pragma())
            out("ms_status = 1;")
            out.depth -= 1
            out("} else {")
            out.extend(body)
            if release:
                out.depth += 1
                out(release.format(view.ident))
                out.depth -= 1
            out("}")
        finally:
            del self.views[buffer.name]
