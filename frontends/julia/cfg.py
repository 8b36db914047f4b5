"""The control-flow graph of a CodeIR: a networkx DiGraph of basic blocks, dominators and natural loops."""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from .ir import CodeIR, JuliaNotSupportedError


@dataclass(eq=False)
class NaturalLoop:
    """A natural loop: its header block, its blocks, the blocks jumping back to the header, its children."""
    header: int
    blocks: set
    latches: list
    parent: "NaturalLoop | None" = None
    children: list = field(default_factory=list)

    @property
    def depth(self):
        d, p = 1, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d

    def exits(self, graph):
        """Blocks outside the loop that a block of the loop jumps to."""
        return sorted({v for u in self.blocks for v in graph.successors(u) if v not in self.blocks})


@dataclass
class ControlFlow:
    """Blocks as a DiGraph (edges carry `cond`: None, or (statement number, taken-when-true)), dominators, loops."""
    graph: nx.DiGraph
    idom: dict
    loops: list            # outermost first
    loop_of: dict          # block -> innermost NaturalLoop containing it (absent: none)

    def dominates(self, a, b):
        while True:
            if a == b:
                return True
            parent = self.idom.get(b)
            if parent is None or parent == b:
                return False
            b = parent

    def top_loops(self):
        return [lp for lp in self.loops if lp.parent is None]


def build_cfg(code: CodeIR) -> nx.DiGraph:
    """Blocks and their edges: a goto, both sides of a conditional goto, or the fall-through."""
    g = nx.DiGraph()
    n_blocks = len(code.blocks)
    for b, numbers in code.blocks.items():
        g.add_node(b, stmts=numbers)
    for b, numbers in code.blocks.items():
        last = code.stmt(numbers[-1])
        if last.kind == "goto":
            g.add_edge(b, last.target, cond=None)
        elif last.kind == "gotoifnot":
            if b + 1 <= n_blocks:
                g.add_edge(b, b + 1, cond=(last.number, True))
            if last.target == b + 1:
                g.edges[b, b + 1]["cond"] = None
            else:
                g.add_edge(b, last.target, cond=(last.number, False))
        elif last.kind in ("return", "unreachable"):
            pass
        elif b + 1 <= n_blocks:
            g.add_edge(b, b + 1, cond=None)
    return g


def analyze(code: CodeIR) -> ControlFlow:
    """Dominators and the natural-loop forest; irreducible control flow raises JuliaNotSupportedError."""
    g = build_cfg(code)
    reachable = nx.descendants(g, 1) | {1}
    g = g.subgraph(sorted(reachable)).copy()
    idom = nx.immediate_dominators(g, 1)
    cf = ControlFlow(g, idom, [], {})
    back = [(u, h) for u, h in g.edges if cf.dominates(h, u)]
    forward = g.copy()
    forward.remove_edges_from(back)
    if not nx.is_directed_acyclic_graph(forward):
        cycle = nx.find_cycle(forward)
        blocks = sorted({u for u, _ in cycle})
        first = code.stmt(code.blocks[blocks[0]][0])
        raise JuliaNotSupportedError(
            f"irreducible control flow: blocks {blocks} form a cycle with more than one entry (no block of it "
            f"dominates the others); only structured loops (for, while) are supported", first)
    by_header = {}
    for u, h in back:
        body = {h} | _reaching(g, u, h)
        lp = by_header.get(h)
        if lp is None:
            by_header[h] = NaturalLoop(h, body, [u])
        else:
            lp.blocks |= body
            lp.latches.append(u)
    loops = sorted(by_header.values(), key=lambda lp: (-len(lp.blocks), lp.header))
    for i, lp in enumerate(loops):
        candidates = [o for o in loops[:i] if lp.blocks <= o.blocks and o is not lp]
        if candidates:
            lp.parent = min(candidates, key=lambda o: len(o.blocks))
            lp.parent.children.append(lp)
    for lp in sorted(loops, key=lambda lp: lp.depth):
        for b in lp.blocks:
            cf.loop_of[b] = lp
    for lp in loops:
        lp.children.sort(key=lambda c: c.header)
    cf.loops = sorted(loops, key=lambda lp: (lp.depth, lp.header))
    return cf


def _reaching(g, latch, header):
    """Blocks that reach `latch` without going through `header` (the body of the back edge)."""
    seen, stack = {latch}, [latch]
    while stack:
        b = stack.pop()
        if b == header:
            continue
        for p in g.predecessors(b):
            if p not in seen and p != header:
                seen.add(p)
                stack.append(p)
    return seen
