"""Time tiling of stencils: the loop nests a time loop repeats over the same arrays (Jacobi, heat).

A group is the statements a front-end nested in one outer loop `t` that no index of theirs uses (each
step rewrites the same elements) and whose other indices are the loop variables plus constants: a
stencil applied `t` times. The dependences of step t+1 on step t keep `t` outermost, so each step
sweeps all the arrays and, once they outgrow the caches, runs at memory speed. Time tiling, as Pluto
and PPCG do it: shift the later statements of a step along the first space loop so they read only
values already computed at that position, skew that loop by `t` (by the least factor that makes the
(t, space) band permutable), tile the band, and run the statements of a step fused in each tile;
a tile's columns then stay in cache over several steps. Every candidate is checked like any other
schedule (the exact dependences decide the shifts and the skew).

Split tiles run a stencil whose sweeps are too short to start threads for (jacobi-1d: 2000 points a
step) on all threads with two barriers per block of steps. Each statement of a step is a level
(step s, statement k of m: level m*s + k within the block); along the first space loop, tile j of
width W holds, at level l, a trapezoid narrowing by the stencil's reach r per level on both sides
([W j + r l, W j + W - 1 - r l]: its own points only, so the tiles run in parallel), then the
trapezoids between them, widening ([W j - r l, W j + r l - 1]), run in parallel as well. Their union
at each level is the whole line, each point once (W > 2 r (levels - 1)). The line's ends cut the
first and last widening trapezoids in half; the last runs with the first (`split_tile_map`'s wrap),
so that with one tile per thread each thread's widening work is a whole trapezoid.
"""
from __future__ import annotations

from . import machine, model
from .analysis import from_source

#: the largest shift tried between consecutive statements of a step (a stencil's reach)
MAX_SHIFT = 2
#: time-tile depths the model picks from and the search tries
TIME_EDGES = (4, 8, 16)
#: the model's depth: enough steps per tile to reuse each column several times
TIME_EDGE = 8


def groups(function, stages, free) -> list:
    """[[computations of one step, in program order]] of the time-stepped stencils among `free`
    (untouched computations, see `qualifies`), grouped by the front-end's nesting in their time loop."""
    names = {c.name for c in free}
    parent = {c: c for c in free}

    def root(c):
        while parent[c] is not c:
            c = parent[c]
        return c
    for entry in function._ordering:
        how, comp, other, level = entry
        # nested in the time loop alone: the front-end's depth 1, or that loop's name
        if comp.name in names and other.name in names and from_source(entry, function) and \
                comp.loops and comp.loops[:1] == other.loops[:1] and level in (1, comp.loops[0]):
            parent[root(comp)] = root(other)
    order = {c: k for k, c in enumerate(function.computations)}
    out = {}
    for c in free:
        out.setdefault(root(c), []).append(c)
    found = []
    for members in out.values():
        members.sort(key=order.get)
        if all(qualifies(stages.get(c.name)) for c in members) and _rewrites_its_input(members, stages):
            found.append(members)
    return found


def qualifies(stage) -> bool:
    """Whether a stage is a stencil step in a time loop: two loops at least, the outermost used by no
    index, the others in affine indices with unit coefficients (constant offsets)."""
    if stage is None or len(stage.vars) < 2:
        return False
    t = stage.vars[0]
    for ref in stage.refs:
        for coeffs in ref.dims:
            if coeffs is None or coeffs.get(t, 0) != 0 or any(abs(c) > 1 for c in coeffs.values()):
                return False
    return stage.trip(t) >= 2


def _rewrites_its_input(members, stages) -> bool:
    """Whether the step reads an array the step writes (so step t+1 depends on step t)."""
    written = {stages[c.name].refs[0].array for c in members}
    return any(r.array in written for c in members for r in stages[c.name].refs[1:])


def tile_sizes(stages, members) -> list:
    """[time edge, space edge] of the model: TIME_EDGE steps, and the widest space edge for which the
    columns a tile touches over its steps (its width plus the skew's drift) fit half of L2."""
    column = 0
    for c in members:
        stage = stages[c.name]
        inner = 1
        for v in stage.vars[2:]:
            inner *= max(1, stage.trip(v))
        column += inner * stage.refs[0].elem_bytes
    space = model.TILE_EDGES[0]
    for edge in model.TILE_EDGES:
        if (edge + 2 * TIME_EDGE) * 2 * column <= machine.cache_bytes(2) // 2:
            space = edge
    return [TIME_EDGE, space]


def tile_variants(model_sizes) -> list:
    """Sizes the search tries beside the model's: other depths, half and double the width, none ([])."""
    t, s = model_sizes
    out = [[d, s] for d in TIME_EDGES if d != t] + [[t, e] for e in (s // 2, s * 2) if e >= 4] + [[]]
    return [v for k, v in enumerate(out) if v not in out[:k]]


#: the grid a screening by parametric time tiles tries: depths and space edges
SCREEN_DEPTHS, SCREEN_WIDTHS = (2, 4, 8, 16, 32), (16, 32, 64, 128, 256, 512)


def tile_grid(stages, members) -> list:
    """[time edge, space edge] pairs for a screening by one kernel with parametric time tiles: every
    depth up to the steps and width up to the space loop (and the whole of each)."""
    stage = stages[members[0].name]
    t, space = stage.vars[:2]
    steps, width = stage.trip(t), stage.trip(space)
    depths = [d for d in SCREEN_DEPTHS if d < steps] + [steps]
    widths = [w for w in SCREEN_WIDTHS if w < width] + [width]
    return [[d, w] for d in depths for w in widths]


def needs_time_tiling(stages, members) -> bool:
    """Whether the arrays a step touches outgrow the L2 caches of all cores (else each step's sweep,
    run in parallel, finds every core's share in its own L2: a parallel loop gives each thread the
    same part of its range at every step). Time tiles run one after another, so they must win back
    the other cores first."""
    seen, total = set(), 0
    for c in members:
        stage = stages[c.name]
        for ref in stage.refs:
            if ref.array not in seen:
                seen.add(ref.array)
                n = ref.elem_bytes
                for v in stage.vars[1:]:
                    n *= max(1, stage.trip(v))
                total += n
    return total > machine.cache_bytes(2) * machine.cores()


#: split tiles: a block's trapezoids narrow by at most a quarter of their width over its levels (the
#: widening ones, the second phase, then hold about a quarter of the points)
SPLIT_NARROWING = 4
#: the largest reach per level (points a statement reads on each side of its own) split tiles try
MAX_REACH = 2


def split_sizes(stages, members, threads) -> list | None:
    """[steps per block, tile width] of the model's split tiles: one tile per thread along the first
    space loop, and as many steps per block as narrow each trapezoid by a quarter of its width at
    reach 1 (all the steps where fewer); None where there are fewer than 2 threads, or where a tile
    would be narrower than 16 points or hold no step."""
    stage = stages[members[0].name]
    t, space = stage.vars[:2]
    width = -(-stage.trip(space) // max(threads, 1))
    steps = min(stage.trip(t), width // (SPLIT_NARROWING * len(members)))
    if threads < 2 or steps < 1 or width < 16:
        return None
    return [steps, width]


def split_variants(model_sizes, stages, members) -> list:
    """Split tiles the search tries beside the model's: half and double the steps per block, half the
    width (two tiles per thread), or none (False); those whose trapezoids would overlap at reach 1 or
    whose blocks would hold more steps than there are left out."""
    steps, width = model_sizes
    stage = stages[members[0].name]
    most = stage.trip(stage.vars[0])
    out = [[max(1, steps // 2), width], [steps * 2, width], [steps, width // 2]]
    out = [v for v in out if v[0] <= most and v[1] >= 2 * (len(members) * v[0] - 1) + 1] + [False]
    return [v for k, v in enumerate(out) if v not in out[:k] and v != model_sizes]


def split_tile_map(comp, k, levels, sizes, reach, origin, names, wrap=None) -> str:
    """The isl text of statement `k` (of `levels` per step) of a split-tiled step: its instances
    [t, x, ...] sent to [block, phase, tile, piece, step, x, ...] (`names`), the tiles of `sizes` =
    [steps, width] along x counted from `origin`.

    `wrap` (the number of narrowing tiles at the sizes scheduled for) numbers the widening tiles modulo
    it, `piece` counting the wraps: the one past the last narrowing tile, the right half of a trapezoid
    the line's end cuts, runs in the iteration of tile 0, after the left half the line's start cuts, so
    that each of the `wrap` widening tiles holds as many points and the threads finish together (the
    widening tiles are independent of each other, so any grouping of them is legal). Without `wrap`,
    piece is 0."""
    steps, width = sizes
    variables = [v.name for v in comp.vars]
    t, x = variables[:2]
    block, phase, tile, piece, step = names[:5]
    level = f"({levels}*{step} + {k})"
    low, high = f"{width}*{tile} - {x} + {origin}", f"{width}*{tile} - {x} + {origin} + {width - 1}"
    narrowing = (f"{phase} = 0 and {piece} = 0 and {low} + {reach}*{level} <= 0 and "
                 f"{high} - {reach}*{level} >= 0")
    if wrap:
        low = f"{width}*{tile} + {width * wrap}*{piece} - {x} + {origin}"
        pieces = f"0 <= {tile} < {wrap} and {piece} >= 0"
    else:
        pieces = f"{piece} = 0"
    widening = (f"{phase} = 1 and {pieces} and {low} - {reach}*{level} <= 0 and "
                f"{low} + {reach}*{level} - 1 >= 0")
    inner = ", ".join(variables[1:])
    return (f"{{ {comp.name}[{', '.join(variables)}] -> [{block}, {phase}, {tile}, {piece}, {step}, {inner}] : "
            f"{t} = {steps}*{block} + {step} and 0 <= {step} < {steps} and (({narrowing}) or ({widening})) }}")
