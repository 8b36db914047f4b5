"""The HLS printer: a `LoweredFunction` as a Vitis HLS top function, in the HLS dialect of the C printer.

The top function `void NAME(inputs, outputs, off-chip temporaries, sizes)`
has an m_axi port per array (one bundle each) and s_axilite registers for
the sizes and the control; on-chip temporaries are C++ arrays of constant
size, indexed per dimension so that ARRAY_PARTITION names the schedule's
dimensions. A dataflow region becomes one static function per stage, called
in order under `#pragma HLS DATAFLOW` with `hls::stream` FIFOs between them.
Expressions are the C printer's (backends/c): the same helpers, the same
semantics. `csim_wrapper` adds the C calling convention of
backends/common/cheader for C simulation (`NAME_csim`), outside the code
Vitis reads.
"""
from __future__ import annotations

from mascarpone.backends.c.printer import CPrinter, _Lines
from mascarpone.backends.common.affine import constant_difference
from mascarpone.backends.common.cheader import C_TYPES, kernel_name
from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.loopir import Allocate, walk_stmts

from . import processes as P
from .dialect import HLSDialect
from .placement import ARGUMENT, OFF_CHIP, ON_CHIP, STREAM, place, shape_constants, temporaries

#: on-chip arrays above this many bytes are `static` (C simulation keeps them off the stack; synthesis
#: makes the same memories)
STATIC_BYTES = 64 * 1024
#: FIFO depth of a dataflow channel: producer and consumer run the same loops, one value apart
STREAM_DEPTH = 2


class HLSPrinter(CPrinter):
    """Prints one HLS translation unit; `depths` ({buffer name: elements}) sets m_axi depths for
    buffers whose size is known only at run time (for co-simulation)."""

    def __init__(self, lowered, depths=None):
        self.lowered = lowered
        self.placement = place(lowered)
        super().__init__(HLSDialect(streams=lowered.dataflow is not None))
        self.depths = dict(depths or {})
        self.streams = {}   # channel buffer name -> identifier of its FIFO in the current function

    # the translation unit -----------------------------------------------------------------------
    def off_chip(self) -> list:
        """The temporaries that are arguments of the top function (allocated by its caller)."""
        return [b for b in temporaries(self.lowered) if self.placement[b.name] == OFF_CHIP]

    def top_arguments(self) -> list:
        """(buffer, is input) of the top function's array arguments, in order."""
        low = self.lowered
        return [(b, True) for b in low.inputs] + [(b, False) for b in low.outputs] + \
               [(b, False) for b in self.off_chip()]

    def source(self, banner=()) -> str:
        """The C++ Vitis reads: helpers, the stage functions, the top function."""
        name = kernel_name(self.lowered)
        self.names(name)
        self.names(f"{name}_csim")
        self.names(f"{name}_num_threads")
        body = self._top(name)
        out = ["/* " + line + " */" for line in banner]
        out += self.d.includes() + [""]
        out += self.helpers.definitions()
        out += body
        return "\n".join(out) + "\n"

    def _signature(self, name, arrays, streams=(), ret="void"):
        args = []
        for b, is_input in arrays:
            const = "const " if is_input else ""
            args.append(f"{const}{self.d.memory(b.dtype)} *{self.names(b.name, 'buffer')}")
        for b in streams:
            args.append(f"{self.d.stream_type(self.d.memory(b.dtype))} &{self.names(b.name, 'stream')}")
        args += [f"int64_t {self.names(p)}" for p in self._sizes()]
        return f"{ret} {name}({', '.join(args) or 'void'})"

    def _sizes(self):
        return list(self.lowered.params)

    def _derived(self, out):
        for derived, value in self.lowered.derived:
            out(f"const int64_t {self.names(derived)} = {self.expr(value, True)};")

    def _top(self, name) -> list:
        low = self.lowered
        arrays = self.top_arguments()
        lines = []
        if low.dataflow is not None:
            stage_fns = self._processes(name)
            for fn_lines in stage_fns.values():
                lines += fn_lines + [""]
        out = _Lines()
        for k, (b, _) in enumerate(arrays):
            ident = self.names(b.name, "buffer")
            out(self.d.maxi_pragma(ident, f"gmem{k}", self._depth(b)))
        for p in self._sizes():
            out(self.d.axilite_pragma(self.names(p)))
        out(self.d.axilite_pragma("return"))
        if low.dataflow is not None:
            out(self.d.dataflow_pragma())
            self._derived(out)
            by_name = {b.name: b for b in temporaries(low)}
            for buf in (c.buffer for c in low.dataflow.channels):
                b = by_name[buf]
                ident = self.names(b.name, "stream")
                out(f"{self.d.stream_type(self.d.memory(b.dtype))} {ident}(\"{b.name}\");")
                out(self.d.stream_pragma(ident, STREAM_DEPTH))
            for fn, call in self._calls.items():
                out(call + ";")
        else:
            self._derived(out)
            views = [self._view(b) for b, _ in arrays]
            inner = _Lines()
            self.stmt(self._with_root_temporaries(low.body), inner)
            self._declare_strides(views, out)
            out.extend(inner)
        return lines + [self._signature(name, arrays) + " {", *out.lines, "}"]

    def _with_root_temporaries(self, body):
        allocated = {s.buffer.name for s in walk_stmts(body) if isinstance(s, Allocate)}
        for b in reversed([t for t in self.lowered.temporaries if t.name not in allocated]):
            body = Allocate(b, body)
        return body

    def _depth(self, b):
        dims = shape_constants(b)
        if dims is not None:
            count = 1
            for d in dims:
                count *= d
            return max(count, 1)
        return self.depths.get(b.name)

    def _processes(self, name) -> dict:
        """{stage: lines of its function}; records the calls the top function makes."""
        self._calls = {}
        out = {}
        by_name = {b.name: b for b in temporaries(self.lowered)}
        by_name.update({b.name: b for b in self.lowered.arguments})
        inputs = {b.name for b in self.lowered.inputs}
        for proc in P.split(self.lowered, self._with_root_temporaries(self.lowered.body)):
            fn = self.names.fresh(f"stage_{proc.name}_")
            arrays = [(by_name[b], b in inputs) for b in proc.buffers
                      if self.placement.get(b) in (ARGUMENT, OFF_CHIP)]
            streams = [by_name[s] for s in proc.streams]
            lines = _Lines()
            self._derived(lines)
            views = [self._view(b) for b, _ in arrays]
            inner = _Lines()
            self.stmt(proc.body, inner)
            self._declare_strides(views, lines)
            lines.extend(inner)
            for b, _ in arrays:
                del self.views[b.name]
            out[proc.name] = [f"static {self._signature(fn, arrays, streams)} {{", *lines.lines, "}"]
            args = [self.names(b.name, "buffer") for b, _ in arrays]
            args += [self.names(s.name, "stream") for s in streams]
            args += [self.names(p) for p in self._sizes()]
            self._calls[fn] = f"{fn}({', '.join(args)})"
        return out

    # buffers ---------------------------------------------------------------------------------------
    def element(self, view, indices) -> str:
        name = next((n for n, v in self.views.items() if v is view), None)
        if self.placement.get(name) == ON_CHIP and indices:
            return view.ident + "".join(f"[{self.expr(i, True)}]" for i in indices)
        return super().element(view, indices)

    def _allocate(self, s, out):
        b = s.buffer
        where = self.placement[b.name]
        if where in (ARGUMENT, OFF_CHIP, STREAM):
            # an argument of the top function, or no memory at all (a FIFO)
            self.stmt(s.body, out)
            return
        if b.name in self.views:
            raise NotSupportedError(f"the temporary {b.name} is allocated twice in one scope")
        view = self._view(b)
        dims = shape_constants(b)
        nbytes = b.dtype.bytes
        for d in dims:
            nbytes *= d
        static = "static " if nbytes > STATIC_BYTES else ""
        out(f"{static}{self.d.memory(b.dtype)} {view.ident}{''.join(f'[{max(d, 1)}]' for d in dims) or '[1]'};")
        for dim, factor, kind in b.partitions:
            out(self.d.partition_pragma(view.ident, dim, factor, kind))
        try:
            self.stmt(s.body, out)
        finally:
            del self.views[b.name]

    # statements ---------------------------------------------------------------------------------------
    def _stmt(self, s, out):
        if isinstance(s, P.StreamWrite):
            self._bind([(s.value, False)], out)
            value = self.expr(s.value)
            if s.value.dtype.is_bool:
                value = f"({self.d.memory(s.value.dtype)}){value}"
            out(f"{self.names(s.stream, 'stream')}.write({value});")
        elif isinstance(s, P.StreamRead):
            out(f"const {self.d.memory(s.dtype)} {self.names(s.local)} = {self.names(s.stream, 'stream')}.read();")
        else:
            super()._stmt(s, out)

    def _for(self, s, out):
        self._bind([(s.lo, True), (s.hi, True)], out)
        lo, hi = self.expr(s.lo, True), self.expr(s.hi, True)
        var = self.names(s.var)
        label = self.names.fresh(f"loop_{var}_")
        out(f"{label}: for (int64_t {var} = {lo}; {var} < {hi}; {var}++) {{")
        out.depth += 1
        if s.kind == "pipeline":
            out(self.d.pipeline_pragma(s.factor))
        elif s.kind in ("unroll", "vector") and s.factor > 1:
            trip = constant_difference(s.hi, s.lo)
            out(self.d.unroll_pragma(s.factor, full=trip is not None and trip <= s.factor))
        elif s.kind in ("parallel", "gpu_block", "gpu_thread", "distribute"):
            out(f"// {s.kind}: iterations run in order here (unroll or dataflow make parallel hardware)")
        self.stmt(s.body, out)
        out.depth -= 1
        out("}")


def csim_wrapper(printer: HLSPrinter) -> str:
    """The C simulation entry points: `NAME_csim` with the calling convention of backends/common/cheader
    (inputs, outputs, int64 sizes; returns 0, or 1 when an off-chip temporary cannot be allocated)
    and `NAME_num_threads`; off-chip temporaries are allocated here, as a host would."""
    low = printer.lowered
    name = kernel_name(low)
    names = printer.names
    args = [f"const {C_TYPES[b.dtype.name]} *{names(b.name, 'buffer')}" for b in low.inputs]
    args += [f"{C_TYPES[b.dtype.name]} *{names(b.name, 'buffer')}" for b in low.outputs]
    args += [f"int64_t {names(p)}" for p in low.params]
    out = _Lines()
    out("int32_t status = 0;")
    printer._derived(out)
    temps = printer.off_chip()
    for b in temps:
        elem = printer.d.memory(b.dtype)
        count = " * ".join(f"({printer.expr(d, True)})" for d in b.shape) or "1"
        ident = names(b.name, "buffer")
        out(f"{elem} *{ident} = ({elem} *)malloc(({count}) > 0 ? (size_t)({count}) * sizeof({elem}) : 1);")
    if temps:
        out(f"if ({' && '.join(names(b.name, 'buffer') for b in temps)}) {{")
        out.depth += 1
    call = [names(b.name, "buffer") for b, _ in printer.top_arguments()] + [names(p) for p in low.params]
    out(f"{name}({', '.join(call)});")
    if temps:
        out.depth -= 1
        out("} else {")
        out("    status = 1;")
        out("}")
        for b in temps:
            out(f"free({names(b.name, 'buffer')});")
    out("return status;")
    return "\n".join([
        "", "/* C simulation entry points (not part of the design) */", "#include <cstdlib>",
        'extern "C" {', f"int32_t {name}_num_threads = 0;",
        f"int32_t {name}_csim({', '.join(args) or 'void'}) {{", *out.lines, "}", "}", ""])
