"""The kernels of a GPU target as C-family source: the C printer with a GPU dialect.

A kernel's body is printed by `CPrinter` (expressions, helpers and stores
exactly as for the "c" target); this printer adds what a launch needs:

  * inside the block loops every thread of a block runs the code: a block
    loop takes its iteration from the block index, a thread loop from the
    thread index, and iterations past a loop's end (a partial tile, a grid
    or block larger than the loop) and the conditions between loops become
    booleans that each statement tests, run by the threads its thread loops
    select (thread 0 along the dimensions none selects);
  * barriers separate consecutive parts of a block's code and end each
    iteration of a serial loop holding thread loops; none is ever under a
    condition, as OpenCL and CUDA require (and PoCL's compiler relies on);
  * temporaries live where they are allocated: in a block's shared memory
    outside thread loops, in private memory (registers) inside a thread, in
    device memory (a scratch buffer, one slice per block or thread) when
    their size is not a constant or too large;
  * accumulators are kept in registers by the shared promotion pass, on
    serial loops only (launches.py runs it on each kernel's body);
  * a serial loop nest inside a thread whose trip counts are constants and
    whose unrolled body is small (a filter's taps) is unrolled completely:
    the thread's code is then straight-line, which PoCL needs to run a
    block's threads in SIMD lanes (it vectorizes its loop over them only
    where that loop is innermost) and a GPU compiler to keep the taps'
    operands in registers. The order of the operations does not change.
"""
from __future__ import annotations

from mascarpone.backends.c.dialect import CDialect
from mascarpone.backends.c.printer import CPrinter, _Lines
from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import Access, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, Store, walk_exprs, walk_stmts
from mascarpone.middleend.types import int32, int64

from .bounds import constant_iterations, exact_at_points, expr_range
from .launches import GPU_KINDS, has_gpu_loops

#: temporaries of a constant size up to this many bytes live in private memory (registers), per thread
PRIVATE_LIMIT = 4096

#: a loop nest inside a thread is unrolled completely when it runs at most this many statements
UNROLL_LIMIT = 256


def unrolled_statements(s):
    """How many statements `s` runs when every loop in it has a constant trip count, else None."""
    if isinstance(s, For):
        trips = constant_iterations(s.lo, s.hi)
        inner = unrolled_statements(s.body)
        return None if trips is None or inner is None else trips * inner
    if isinstance(s, Block):
        counts = [unrolled_statements(c) for c in s.body]
        return None if None in counts else sum(counts)
    if isinstance(s, If):
        counts = [unrolled_statements(c) for c in (s.then, s.else_) if c is not None]
        return None if None in counts else sum(counts)
    if isinstance(s, Allocate):
        return unrolled_statements(s.body)
    return 1


class GPUDialect(CDialect):
    """What a GPU language spells its own way, beyond the C dialect's types, literals and math names."""

    prefetches = False   # no cache hints in device code
    hoists_allocations = False   # device temporaries are placed by the launch builder (launches.py)
    threads_parallel_loops = False   # a parallel loop in device code runs in one thread's order

    #: qualifier of a kernel entry point
    kernel_qualifier = ""

    def group_id(self, dim: int) -> str:
        """The index of this thread's block along `dim` (0: x)."""
        raise NotImplementedError

    def local_id(self, dim: int) -> str:
        """The index of this thread in its block along `dim`."""
        raise NotImplementedError

    def num_groups(self, dim: int) -> str:
        """The number of blocks along `dim`."""
        raise NotImplementedError

    def local_size(self, dim: int) -> str:
        """The number of threads of a block along `dim`."""
        raise NotImplementedError

    def barrier(self) -> str:
        """The statement every thread of a block waits at, after which each sees the others' writes."""
        raise NotImplementedError

    def pointer_arg(self, memory: str, ctype: str, ident: str, const: bool) -> str:
        """A kernel parameter pointing to a buffer in `memory` ('global' or 'constant')."""
        raise NotImplementedError

    def global_pointer(self, ctype: str) -> str:
        """The type of a pointer to device memory holding `ctype` elements."""
        raise NotImplementedError

    def shared_array(self, ctype: str, ident: str, count: int) -> str:
        """The declaration of an array in a block's shared memory."""
        raise NotImplementedError

    def constant_array(self, ctype: str, ident: str, count: int) -> str:
        """The declaration of a module-scope array in constant memory (dialects whose constant inputs are
        not kernel arguments)."""
        raise NotImplementedError

    def kernel_signature(self, name: str, params: list) -> str:
        return f"{self.kernel_qualifier} void {name}({', '.join(params) or 'void'})"

    def simd_pragma(self, factor: int) -> str:
        return ""     # a vector loop runs serially in a GPU thread

    def unroll_pragma(self, factor: int) -> str:
        return f"#pragma unroll {factor}"

    def full_unroll_pragma(self) -> str:
        """The line before a loop of a constant trip count to unroll completely."""
        return "#pragma unroll"


def narrow_name(spec) -> str:
    """The entry point of `spec`'s variant with 32-bit index arithmetic."""
    return f"{spec.name}_i32"


class Scratch:
    """A temporary kept in device memory: `per` ('kernel', 'block' or 'thread') slices of `buffer`'s size."""

    def __init__(self, ident, buffer, per):
        self.ident, self.buffer, self.per = ident, buffer, per


class DevicePrinter(CPrinter):
    """Prints the kernels of one lowered function (one translation unit, helpers shared)."""

    def __init__(self, dialect: GPUDialect, lowered, param_ranges):
        super().__init__(dialect)
        self.lowered = lowered
        self.param_ranges = param_ranges   # {size: (lo, hi)} for bounding shapes at compile time
        self.spec = None
        self.level = "leaf"
        self.shared = []        # lines declaring shared arrays (kernel scope)
        self.scratch = []       # Scratch of the current kernel
        self.has_threads = False
        self.guards = []        # conditions (C booleans) the current code runs under
        self.bound_dims = set()  # thread dimensions the enclosing thread loops take
        self.thread_vars = set()
        self.narrow = False      # index arithmetic in 32 bits (see narrow.py)

    def index_dtype(self):
        return int32 if self.narrow else int64

    # a kernel --------------------------------------------------------------------------------
    def device_kernel(self, spec, globals_, scalars, constants=(), narrow=False) -> tuple:
        """(lines of the kernel, its buffer arguments in order, its scratch buffers) for `spec`.
        `globals_`: buffers in device memory it may use; `scalars`: names of its int64 arguments;
        `constants`: inputs in constant memory declared at module scope (none are arguments). `narrow`:
        the variant `narrow_name(spec)` whose index arithmetic is in 32 bits, for calls whose sizes prove
        that every index fits (narrow.py); its int64 arguments are converted once, at its start."""
        self.narrow = narrow
        self.spec, self.shared, self.scratch, self.views, self.guards = spec, [], [], {}, []
        self.bound_dims, self.thread_vars = set(), set()
        self.has_threads = bool(spec.thread_dims)
        body = spec.body
        used = {n.target.name for e in walk_exprs(body) for n in walk(e) if isinstance(n, Access)}
        used |= {s.buffer.name for s in walk_stmts(body) if isinstance(s, Store)}
        args, params = [], []
        views = []
        for b in globals_:
            if b.name not in used:
                continue
            view = self._view(b)
            views.append(view)
            if b.name in constants:
                continue
            memory = "constant" if b.memory == "constant" else "global"
            params.append(self.d.pointer_arg(memory, self.d.memory(b.dtype), view.ident, b.kind == "input"))
            args.append(b)
        inner, entry = _Lines(), _Lines()
        for name in scalars:
            ident = self.names(name)
            if narrow:
                wide = self.names.fresh(f"{ident}_")
                params.append(f"const int64_t {wide}")
                entry(f"const int32_t {ident} = (int32_t){wide};")
            else:
                params.append(f"const int64_t {ident}")
        self.level = "leaf" if spec.single else "band"
        self.stmt(body, inner)
        out = _Lines()
        out.extend(entry)
        for line in self.shared:
            out(line)
        self._declare_strides(views, out)
        out.extend(inner)
        for s in self.scratch:
            params.append(self.d.pointer_arg("global", self.d.memory(s.buffer.dtype), s.ident + "_all", False))
        head = self.d.kernel_signature(narrow_name(spec) if narrow else spec.name, params)
        return [head + " {", *out.lines, "}"], args, list(self.scratch)

    # statements --------------------------------------------------------------------------------
    # Inside the block loops ("band" level) the code runs on every thread of the block: a block or
    # thread loop defines its variable from the block or thread index, and conditions (a loop past its
    # end, a guard) become booleans that each leaf tests (a leaf: code with no GPU loop inside, run by
    # the threads its thread loops select, thread 0 along the dimensions none selects). No barrier may
    # sit under a condition: OpenCL and CUDA require every thread of a block to reach it. Barriers
    # separate consecutive parts, and end each iteration of a serial loop holding thread loops.
    def _leaf_guard(self):
        conds = [g for g in self.guards if g is not None]
        if self.has_threads:   # (dimensions no thread loop of the kernel uses have one thread)
            used = set(self.spec.thread_dims.values())
            conds += [f"{self.d.local_id(d)} == 0" for d in sorted(used - self.bound_dims)]
        return " && ".join(conds)

    def _stmt(self, s, out):
        if self.level != "band" or s is None:
            return super()._stmt(s, out)
        if isinstance(s, For) and s.kind in GPU_KINDS:
            return self._gpu_loop(s, out)
        if not has_gpu_loops(s):
            guard = self._leaf_guard()
            self.level = "leaf"
            try:
                if not guard:
                    return super()._stmt(s, out)
                out(f"if ({guard}) {{")
                self._nested(s, out)
                out("}")
            finally:
                self.level = "band"
            return
        if isinstance(s, Block):
            for k, c in enumerate(s.body):
                self.stmt(c, out)
                if k + 1 < len(s.body) and self.has_threads:
                    out(self.d.barrier())
            return
        if isinstance(s, If):
            self._bind([(s.cond, False)], out)
            flag = self.names.fresh("if")
            out(f"const bool {flag} = {self.expr(s.cond)};")
            self.guards.append(flag)
            self.stmt(s.then, out)
            self.guards.pop()
            if s.else_ is not None:
                if self.has_threads:
                    out(self.d.barrier())
                self.guards.append(f"!{flag}")
                self.stmt(s.else_, out)
                self.guards.pop()
            return
        if isinstance(s, For):
            varying = sorted(self.thread_vars & {n.name for e in (s.lo, s.hi) for n in walk(e)
                                                 if hasattr(n, "name")})
            if varying:
                raise NotSupportedError(f"loop {s.var} holds GPU loops and its bounds depend on the thread "
                                        f"loop(s) {varying}: threads would disagree on its barriers")
            self._bind([(s.lo, True), (s.hi, True)], out)
            var = self.names(s.var)
            out(f"for ({self.index_ctype()} {var} = {self.expr(s.lo, True)}; {var} < {self.expr(s.hi, True)}; "
                f"{var}++) {{")
            out.depth += 1
            self.stmt(s.body, out)
            if self.has_threads:
                out(self.d.barrier())    # before the next iteration overwrites what this one shared
            out.depth -= 1
            out("}")
            return
        if isinstance(s, Allocate):
            if self.thread_vars:
                raise NotSupportedError(f"the temporary {s.buffer.name} is allocated inside thread loops "
                                        f"{sorted(self.thread_vars)} and used by thread loops inside it; compute "
                                        f"its producer at a block loop or inside the innermost thread loop")
            return self._allocate(s, out)
        return super()._stmt(s, out)

    def _gpu_loop(self, s, out):
        """A block or thread loop: its variable from the block or thread index; iterations past its end run
        nothing (a condition every leaf inside tests)."""
        self._bind([(s.lo, True), (s.hi, True)], out)
        var = self.names(s.var)
        if s.kind == "gpu_block":
            index = self.d.group_id(self.spec.block_dim(s))
        else:
            dim = self.spec.thread_dims[id(s)]
            index = self.d.local_id(dim)
        out("{")   # (a scope: a sibling loop may take the same name)
        out.depth += 1
        out(f"const {self.index_ctype()} {var} = {self.expr(s.lo, True)} + ({self.index_ctype()}){index};")
        if self._fills_launch(s):
            self.guards.append(None)   # (no condition)
        else:
            flag = self.names.fresh("in")
            out(f"const bool {flag} = {var} < {self.expr(s.hi, True)};")
            self.guards.append(flag)
        if s.kind == "gpu_thread":
            self.bound_dims.add(dim)
            self.thread_vars.add(s.var)
        try:
            self.stmt(s.body, out)
        finally:
            self.guards.pop()
            if s.kind == "gpu_thread":
                self.bound_dims.discard(dim)
                self.thread_vars.discard(s.var)
        out.depth -= 1
        out("}")

    def _fills_launch(self, s) -> bool:
        """Whether the GPU loop `s` runs exactly as many iterations as the launch has blocks or threads
        along its dimension (launch_shape sizes them), so that no index passes its end: a block loop whose
        bounds depend on sizes and host loops only, the host computing its trip count exactly, or a thread
        loop of a constant trip count that every thread loop of its dimension shares."""
        if s.kind == "gpu_block":
            kernel_vars = {n.var for n in walk_stmts(self.spec.body) if isinstance(n, For)}
            symbols = {n.name for e in (s.lo, s.hi) for n in walk(e) if hasattr(n, "name")}
            return not symbols & kernel_vars and exact_at_points(s.lo) and exact_at_points(s.hi)
        dim = self.spec.thread_dims[id(s)]
        trips = {constant_iterations(t.lo, t.hi) for t in self.spec.thread_loops()
                 if self.spec.thread_dims[id(t)] == dim}
        return None not in trips and len(trips) == 1

    def _for(self, s, out):
        if s.kind in GPU_KINDS:
            raise NotSupportedError(f"the {s.kind} loop {s.var} is nested where a launch cannot map it")
        self._bind([(s.lo, True), (s.hi, True)], out)
        lo, hi = self.expr(s.lo, True), self.expr(s.hi, True)
        var = self.names(s.var)
        statements = unrolled_statements(s)
        if statements is not None and statements <= UNROLL_LIMIT:
            out(self.d.full_unroll_pragma())
        elif s.kind == "unroll" and s.factor > 1:
            out(self.d.unroll_pragma(s.factor))
        out(f"for ({self.index_ctype()} {var} = {lo}; {var} < {hi}; {var}++) {{")
        self._nested(s.body, out)
        out("}")

    def _allocate(self, s, out):
        buffer = s.buffer
        if buffer.name in self.views:
            raise NotSupportedError(f"the temporary {buffer.name} is allocated twice in one scope")
        elem = self.d.memory(buffer.dtype)
        count = self._most_elements(buffer)
        per = "block" if self.level == "band" and not self.spec.single else "thread"
        view = self._view(buffer)
        head, body = _Lines(out.depth), _Lines(out.depth)
        try:
            limit = None if per == "block" else PRIVATE_LIMIT
            if count is not None and (limit is None or count * buffer.dtype.bytes <= limit) \
                    and (per == "thread" or count * buffer.dtype.bytes <= self.shared_limit):
                if per == "block":
                    self.shared.append(self.d.shared_array(elem, view.ident, max(count, 1)))
                else:
                    head(f"{elem} {view.ident}[{max(count, 1)}];")
            else:
                if self.spec.single:
                    per = "kernel"
                self.scratch.append(Scratch(view.ident, buffer, per))
                slot = {"kernel": "0", "block": self._flat_block(), "thread": self._flat_thread()}[per]
                count_text = " * ".join(f"({x})" for x in view.extents) or "1"
                head(f"{self.d.global_pointer(elem)} {view.ident} = {view.ident}_all + ({slot}) * ({count_text});")
            self.stmt(s.body, body)
            self._declare_strides([view], head)
            out.extend(head)
            out.extend(body)
        finally:
            del self.views[buffer.name]

    #: shared memory one kernel may take in static arrays (the device's limit is checked at launch)
    shared_limit = 48 * 1024

    def _most_elements(self, buffer):
        """The most elements `buffer` holds for any sizes (a constant), or None."""
        env = dict(self.param_ranges)
        count = 1
        for d in buffer.shape:
            hi = expr_range(d, env)[1]
            if hi == float("inf"):
                return None
            count *= max(int(hi), 0)
        return count

    def _flat_block(self):
        dims = len(self.spec.blocks)
        if not dims:
            return "(int64_t)0"
        text = self.d.group_id(dims - 1)
        for d in range(dims - 2, -1, -1):
            text = f"({text}) * (int64_t){self.d.num_groups(d)} + {self.d.group_id(d)}"
        return f"(int64_t)({text})"

    def _flat_thread(self):
        if self.spec.single:
            return "0"
        t = self.d.local_id(2)
        for d in (1, 0):
            t = f"({t}) * (int64_t){self.d.local_size(d)} + {self.d.local_id(d)}"
        size = " * ".join(f"(int64_t){self.d.local_size(d)}" for d in range(3))
        return f"({self._flat_block()} * {size} + {t})"

