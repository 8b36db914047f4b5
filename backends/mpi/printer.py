"""The C printer's MPI dialect: the per-rank kernel with its exchanges, and what a caller needs around it.

The kernel of a `DistributedFunction` is printed by the shared C printer; this
dialect adds the communicator argument, the rank's setup on entry (its own
duplicate of the communicator, its rank and block bounds), the exchanges
(`Exchange`: for every peer, the element sets scanned into runs and posted as
one receive and one send; `Wait`: MPI_Waitall), and at the end the gathering of
every rank's status and message counts. Exported besides the kernel:

    int32_t NAME_argv(void **buffers, const int64_t *params, int32_t comm_f);
    int32_t NAME_rows(int32_t argument, int64_t rank, int64_t nranks, const int64_t *params,
                      int64_t *range);
    int32_t NAME_stats(int64_t *out, int32_t capacity);
    void NAME_set_num_threads(int32_t n);
"""
from __future__ import annotations

import os

from mascarpone.backends.c.dialect import CDialect
from mascarpone.backends.c.printer import CPrinter
from mascarpone.backends.common.cheader import kernel_name
from mascarpone.middleend.communication import DST_RANK, SRC_RANK, Exchange, Span, Wait
from mascarpone.middleend.distribution import outer_param
from mascarpone.middleend.expr import Sym, walk
from mascarpone.middleend.loopir import own_exprs, walk_stmts
from mascarpone.middleend.spmd import NRANKS, RANK
from mascarpone.middleend.types import int64

#: the MPI datatype of each element type (bool elements are bytes)
MPI_TYPES = {
    "int8": "MPI_INT8_T", "int16": "MPI_INT16_T", "int32": "MPI_INT32_T", "int64": "MPI_INT64_T",
    "uint8": "MPI_UINT8_T", "uint16": "MPI_UINT16_T", "uint32": "MPI_UINT32_T", "uint64": "MPI_UINT64_T",
    "float32": "MPI_FLOAT", "float64": "MPI_DOUBLE", "bool": "MPI_UINT8_T",
}

COMM_ARG = "mpi_comm"
PEER = "mpi_peer"

with open(os.path.join(os.path.dirname(__file__), "runtime.c")) as _f:
    RUNTIME = _f.read()


class MPIDialect(CDialect):
    """C99 with MPI: the C dialect plus <mpi.h>."""

    name = "mpi"

    def includes(self) -> list:
        return ["#include <mpi.h>"] + super().includes()


class MPIPrinter(CPrinter):
    """Prints a DistributedFunction's per-rank kernel (see the module docstring)."""

    def __init__(self, dist):
        super().__init__(MPIDialect())
        self.dist = dist
        self._kept = 0          # kernel-wide heap buffers kept between calls
        self._kernel = kernel_name(dist.lowered)

    # the unit -----------------------------------------------------------------------------------
    def exported_names(self, name) -> list:
        return super().exported_names(name) + [f"{name}_rows", f"{name}_stats", f"{name}_keyval",
                                               f"{name}_table", f"{name}_table_ranks", f"{name}_kept",
                                               f"{name}_kept_bytes"]

    def globals(self, lowered) -> list:
        name = kernel_name(lowered)
        kept = max(self._kept, 1)
        return RUNTIME.splitlines() + [
            "", *super().globals(lowered),
            f"static int {name}_keyval = MPI_KEYVAL_INVALID;",
            f"static int64_t *{name}_table = NULL;",
            f"static int {name}_table_ranks = 0;",
            f"static void *{name}_kept[{kept}];",
            f"static size_t {name}_kept_bytes[{kept}];", ""]

    def heap_block(self, elem, count) -> tuple:
        # kernel-wide buffers (the local boxes) are kept between calls; those of a parallel loop's
        # iterations are taken and given back as in C
        if self.in_parallel:
            return super().heap_block(elem, count)
        k, self._kept = self._kept, self._kept + 1
        name = self._kernel
        return f"ms_keep(&{name}_kept[{k}], &{name}_kept_bytes[{k}], (size_t){count} * sizeof({elem}))", None

    def signature(self, lowered) -> str:
        head = super().signature(lowered)
        if head.endswith("(void)"):
            return head[:-len("(void)")] + f"(MPI_Comm {COMM_ARG})"
        return head[:-1] + f", MPI_Comm {COMM_ARG})"

    def prologue(self, lowered, out) -> None:
        name = kernel_name(lowered)
        self.names(COMM_ARG)
        out(f"ms_comm_state *const ms_st = ms_state({COMM_ARG}, &{name}_keyval);")
        out("const MPI_Comm ms_comm = ms_st->comm;")
        out("int ms_rank_int, ms_size_int;")
        out("MPI_Comm_rank(ms_comm, &ms_rank_int);")
        out("MPI_Comm_size(ms_comm, &ms_size_int);")
        out(f"const int64_t {self.names(RANK)} = ms_rank_int, {self.names(NRANKS)} = ms_size_int;")
        out(f"const int32_t ms_nthreads = {self.threads_global} > 0 ? {self.threads_global} : "
            f"ms_node_threads(ms_st);")
        out("ms_runs ms_msg = {0};")
        out("ms_requests ms_reqs = {0};")
        out("ms_counters ms_count = {0};")
        self._threads_saved, self.threads_global = self.threads_global, "ms_nthreads"

    def epilogue(self, lowered, out) -> None:
        name = kernel_name(lowered)
        self.threads_global = self._threads_saved
        out("ms_wait_all(&ms_reqs);")
        out(f"ms_status = ms_gather(ms_comm, ms_status, &ms_count, &{name}_table, &{name}_table_ranks);")
        out("free(ms_msg.runs);")
        out("free(ms_reqs.reqs);")

    def exports(self, lowered) -> list:
        name = kernel_name(lowered)
        buffers = list(lowered.arguments)
        args = [f"({'const ' if k < len(lowered.inputs) else ''}{self.d.memory(b.dtype)} *)buffers[{k}]"
                for k, b in enumerate(buffers)]
        args += [f"params[{k}]" for k in range(len(lowered.params))]
        args.append("MPI_Comm_f2c((MPI_Fint)comm)")
        out = [f"int32_t {name}_argv(void **buffers, const int64_t *params, int32_t comm) {{",
               f"    {'(void)params; ' if not lowered.params else ''}return {name}({', '.join(args)});",
               "}", "",
               f"void {name}_set_num_threads(int32_t n) {{",
               f"    {self.threads_global} = n < 0 ? 0 : n;",
               "}", ""]
        out += self._rows(lowered)
        out += [f"int32_t {name}_stats(int64_t *out, int32_t capacity) {{",
                f"    for (int k = 0; k < {name}_table_ranks * 5 && k < capacity * 5; k++) out[k] = {name}_table[k];",
                f"    return {name}_table_ranks;",
                "}", ""]
        return out

    def _rows(self, lowered) -> list:
        """NAME_rows: the block of an argument's distributed dimension that a rank holds (returns the
        dimension), or -1 for an argument every rank holds whole."""
        name = kernel_name(lowered)
        body = self._lines_for_rows(lowered)
        return [f"int32_t {name}_rows(int32_t argument, int64_t {self.names(RANK)}, int64_t {self.names(NRANKS)}, "
                f"const int64_t *params, int64_t *range) {{", *body, "}", ""]

    def _lines_for_rows(self, lowered):
        from mascarpone.backends.c.printer import _Lines
        out = _Lines()
        out("(void)params;")
        for k, p in enumerate(lowered.params):
            out(f"const int64_t {self.names(p)} = params[{k}];")
            out(f"(void){self.names(p)};")
        for derived, value in self.dist.size_derived:
            out(f"const int64_t {self.names(derived)} = {self.expr(value, True)};")
            out(f"(void){self.names(derived)};")
        out("switch (argument) {")
        for k, p in enumerate(self.dist.placements):
            if p.dist is None:
                continue
            lo, hi = self.dist.block(p.dist.index, Sym(RANK, int64), Sym(NRANKS, int64))
            out(f"case {k}:")
            out(f"    range[0] = {self.expr(lo, True)};")
            out(f"    range[1] = {self.expr(hi, True)};")
            out(f"    return {p.dim};")
        out("default:")
        out("    return -1;")
        out("}")
        return out.lines

    # statements ----------------------------------------------------------------------------------------
    def other_stmt(self, s, out) -> None:
        if isinstance(s, Span):
            view = self._buffer(s.buffer.name)
            mpi_type = MPI_TYPES[s.buffer.dtype.name]
            elem = self.d.memory(s.buffer.dtype)
            out(f"ms_run_add(&ms_msg, &{view.ident}[{self._flat(view, s.indices)}], {self.expr(s.length, True)}, "
                f"{mpi_type}, (int64_t)sizeof({elem}));")
        elif isinstance(s, Exchange):
            self._exchange(s, out)
        elif isinstance(s, Wait):
            out("ms_wait_all(&ms_reqs);")
        else:
            super().other_stmt(s, out)

    def _exchange(self, s, out):
        """For every peer: scan what it sends this rank and post the receive, then what this rank sends
        it and post the send."""
        _, items = self.dist.exchanges[s.index]
        used = set()
        for _, scan in items:
            used |= _symbols(scan)
        out(f"{{   /* exchange {s.index} */")
        out.depth += 1
        for j, e in enumerate(s.outer):
            name = outer_param(j)
            if name in used:
                out(f"const int64_t {self.names(name)} = {self.expr(e, True)};")
        peer = self.names(PEER)
        rank, nranks = self.names(RANK), self.names(NRANKS)
        out(f"for (int64_t {peer} = 0; {peer} < {nranks}; {peer}++) {{")
        out.depth += 1
        out(f"if ({peer} == {rank}) continue;")
        for sending in (False, True):
            out("{")
            out.depth += 1
            for d in self.dist.distributions:
                peer_lo, peer_hi = self.dist.block(d.index, Sym(PEER, int64), Sym(NRANKS, int64))
                mine = (Sym(d.param("me", "lo"), int64), Sym(d.param("me", "hi"), int64))
                theirs = (peer_lo, peer_hi)
                for role, (lo, hi) in (("src", mine if sending else theirs), ("dst", theirs if sending else mine)):
                    for side, value in (("lo", lo), ("hi", hi)):
                        name = d.param(role, side)
                        if name in used:
                            out(f"const int64_t {self.names(name)} = {self.expr(value, True)};")
            ends = ((rank, peer) if sending else (peer, rank))
            for name, value in zip((SRC_RANK, DST_RANK), ends):
                if name in used:
                    out(f"const int64_t {self.names(name)} = {value};")
            for _, scan in items:
                self.stmt(scan, out)
            out(f"ms_post(&ms_msg, (int){peer}, {s.index % 32768}, {int(sending)}, ms_comm, &ms_reqs, &ms_count);")
            out.depth -= 1
            out("}")
        out.depth -= 1
        out("}")
        out.depth -= 1
        out("}")

    def allocation_failed(self, ident, body) -> str:
        # every rank must take the same branch around an exchange, or the others would wait for it
        if any(isinstance(n, (Exchange, Wait)) for n in walk_stmts(body)):
            return f"ms_any_failed(ms_comm, {ident} == NULL)"
        return super().allocation_failed(ident, body)


def _symbols(stmt) -> set:
    """Names of the symbols a scan uses."""
    names = set()
    for s in walk_stmts(stmt):
        exprs = list(own_exprs(s))
        if isinstance(s, Span):
            exprs += list(s.indices) + [s.length]
        for e in exprs:
            names |= {n.name for n in walk(e) if isinstance(n, Sym)}
    return names
