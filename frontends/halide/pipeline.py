"""The structure of a decoded pipeline: its Funcs, their stages, the call graph and what is not supported."""
from __future__ import annotations

import copy

from mascarpone.middleend.errors import NotSupportedError

from .errors import HalideFormatError
from .exprs import dtype_of
from .reader import Node
from .schema import CALL_TYPES, FOR_TYPES


def walk_nodes(node):
    """Every decoded Node under `node` (expressions, lists, tables), parents first."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
            continue
        if n is None or not hasattr(n, "kind"):
            continue
        yield n
        for v in n.__dict__.values():
            if isinstance(v, list) or hasattr(v, "kind"):
                stack.append(v)


class FuncInfo:
    """One Halide Func: its pure arguments (dimension 0 first), value types and stages."""

    def __init__(self, index, node):
        self.index = index
        self.node = node
        self.name = node.name
        self.args = list(node.args)
        self.stages = ([node.init_def] if node.init_def is not None else []) + list(node.updates)
        self.dtypes = [dtype_of(t, f"Func {self.name}") for t in node.output_types]
        self.callees = set()
        # filled by bounds inference and translation
        self.region = None
        self.stage_boxes = []
        self.comps = []          # comps[stage][value index]
        self.loop_names = []     # per stage: Halide loop name -> mascarpone loop name
        self.element_orders = {}  # update stage -> the order its Tuple's elements run in (_readers_first)

    @property
    def ndim(self):
        return len(self.args)

    @property
    def schedule(self):
        return self.node.func_schedule

    def stage_name(self, k):
        return f"Func {self.name}" + (f" (update {k - 1})" if k else "")

    def __repr__(self):
        return f"FuncInfo({self.name})"


def check_supported(info: FuncInfo):
    """Raise NotSupportedError naming the Func and the feature for what the front-end cannot translate."""
    node = info.node
    if node.extern_function_name:
        raise NotSupportedError(f"Func {info.name} uses define_extern ({node.extern_function_name}), which the "
                                f"Halide front-end does not support")
    if not info.stages:
        raise NotSupportedError(f"Func {info.name} has no definition")
    for k, d in enumerate(info.stages):
        where = info.stage_name(k)
        if d.specializations:
            raise NotSupportedError(f"{where} uses specialize, which the Halide front-end does not support")
        sched = d.stage_schedule
        if sched is not None and sched.atomic:
            raise NotSupportedError(f"{where} uses atomic, which the Halide front-end does not support")
    if node.func_schedule is not None and node.func_schedule.memoized:
        raise NotSupportedError(f"Func {info.name} uses memoize, which the Halide front-end does not support")


_FUNC_CALL = CALL_TYPES.index("Halide")


def func_calls(node, index=None):
    """The calls to Funcs under `node` (call type Halide), only those to the Func at `index` where given."""
    return [n for n in walk_nodes(node)
            if n.kind == "Call" and n.call_type == _FUNC_CALL and (index is None or n.func_index == index)]


def _call_instead(calls, index, name):
    """Point `calls` at the Func at `index`, named `name`."""
    for n in calls:
        n.func_index, n.name = index, name


def resolve_calls_by_name(pipe):
    """Calls to a Func that the bytes give by name only (func_index -1) point to the Func of that name, as
    Halide's deserializer finds them: after `rfactor`, the update of the reduction reads itself through
    a call the serializer writes that way."""
    index = {}
    for k, f in enumerate(pipe.funcs):
        index[f.name] = k if f.name not in index else None   # (a name two Funcs share stays unresolved)
    for n in func_calls(pipe.funcs, -1):
        if index.get(n.name) is not None:
            n.func_index = index[n.name]


#: the var names of Halide's LoopLevel::root() and of the loop outside all others
ROOT_LEVELS = ("__root", "__outermost")


def is_default_level(level) -> bool:
    """Whether a compute level (a LoopLevel node, or None) is Halide's default: inlined, or where used
    for a Func with updates, which cannot be inlined."""
    return level is None or (not level.func_name and level.var_name in ("", "__inlined"))


def _unscheduled(f) -> bool:
    """Whether the decoded Func has Halide's default placement."""
    return is_default_level(f.func_schedule.compute_level if f.func_schedule is not None else None)


def _computed_in_a_loop(f) -> bool:
    """Whether the decoded Func is computed inside a loop of another Func (compute_at)."""
    level = f.func_schedule.compute_level if f.func_schedule is not None else None
    return level is not None and bool(level.func_name) and level.var_name not in ROOT_LEVELS


def _stages(f):
    """The decoded Func's definitions: the pure one, then the updates."""
    return ([f.init_def] if f.init_def is not None else []) + list(f.updates)


def compute_reductions_in_their_consumer(pipe):
    """An unscheduled Func with updates (an inline reduction: `maximum(...)`, `sum(...)`) is computed
    at the root here, which gives Halide's values unless it reads, directly or through inlined Funcs, a
    Func computed inside a loop of another Func. Such a reduction is computed in the innermost loop of
    its one consumer (the Func whose stage reads it, directly or through inlined Funcs), as Halide
    computes it; inside a vector loop Halide computes it lane by lane in that vector, so here it is
    computed per vector (at the loop outside) and, where the consumer reads it along the vector's
    variable itself, its own loop along that variable runs innermost in vectors of the same width.

    Returns {Func name: (its argument along the consumer's vector, the width)} for those computed per
    vector."""
    outputs = set(pipe.output_names)
    inlined = {k for k, f in enumerate(pipe.funcs) if _unscheduled(f) and not f.updates and f.name not in outputs}

    def reached(stages):
        """The indices of the Funcs that `stages` read, directly or through inlined Funcs."""
        seen, todo = set(), [c.func_index for c in func_calls(stages)]
        while todo:
            j = todo.pop()
            if j in seen or not 0 <= j < len(pipe.funcs):
                continue
            seen.add(j)
            if j in inlined:
                todo += [c.func_index for c in func_calls(_stages(pipe.funcs[j]))]
        return seen

    def readers(k):
        """The (Func, stage) pairs that read the Func at `k`, directly or through inlined Funcs."""
        out, todo, seen = [], [k], {k}
        while todo:
            j = todo.pop()
            for c_index, c in enumerate(pipe.funcs):
                for stage_index, d in enumerate(_stages(c)):
                    if c_index == j or not func_calls(d, j):
                        continue
                    if c_index not in inlined:
                        out += [(c, stage_index)] if not any(c is o and stage_index == s for o, s in out) else []
                    elif c_index not in seen:
                        seen.add(c_index)
                        todo.append(c_index)
        return out

    vectors = {}
    for index, f in enumerate(pipe.funcs):
        if not f.updates or not _unscheduled(f) or f.name in outputs or \
                not any(_computed_in_a_loop(pipe.funcs[j]) for j in reached(_stages(f)) if j != index):
            continue
        where = readers(index)
        if len(where) != 1:
            continue   # (read by several stages or Funcs: left at the root, refused there)
        consumer, k = where[0]
        stage = _stages(consumer)[k]
        schedule = stage.stage_schedule
        loops = [d for d in (schedule.dims if schedule is not None else []) if d.var not in ROOT_LEVELS]
        innermost = next((d for d in loops if FOR_TYPES[d.for_type] != "Vectorized"), None)
        if innermost is None or f.func_schedule is None:
            continue
        f.func_schedule.compute_level = Node("LoopLevel", dict(
            func_name=consumer.name, stage_index=k, var_name=innermost.var, is_rvar=innermost.dim_type != 0,
            locked=True))
        vector = next((d for d in loops if FOR_TYPES[d.for_type] == "Vectorized"), None)
        through = [d for j in reached(stage) if j in inlined for d in _stages(pipe.funcs[j])]
        along = _vector_argument(f, index, stage, vector, through) if vector is not None else None
        if along is not None:
            vectors[f.name] = along
    return vectors


def _vector_argument(f, index, stage, vector, inlined=()):
    """(the argument of `f` along which the consumer's `stage` reads it in its vector loop `vector`, the
    vector's width), or None: the loop must be split off a pure variable by a constant, and every call
    to `f` must pass that variable itself there, in `stage` or in the `inlined` definitions it reads
    (Funcs written with the consumer's Vars, as pipelines share them; were they not, another loop of
    `f` would run in vectors, which computes the same values)."""
    splits = {s.inner: s for s in stage.stage_schedule.splits}
    split = splits.get(vector.var)
    if split is None or split.factor is None or split.factor.kind != "IntImm":
        return None
    var = split.old_var
    while var in splits:   # (a split of a split's inner loop)
        var = splits[var].old_var
    calls = func_calls([stage] + list(inlined), index)
    dims = [d for d in range(len(f.args)) if all(d < len(c.args) and c.args[d].kind == "Variable"
                                                 and c.args[d].name == var for c in calls)]
    return (f.args[dims[0]], split.factor.value) if calls and len(dims) == 1 else None


def compute_in_each_reading_stage(pipe):
    """A Func computed at a loop of a consumer that several stages read, with no stage named
    (`producer.compute_at(consumer, x)`, read by the pure definition and an update), is computed in each
    of those stages, as Halide's lowering realizes it once per stage: a copy of it for each stage after
    the first, whose calls there go to the copy. A Func that others are computed at keeps one place."""
    by_name = {f.name: k for k, f in enumerate(pipe.funcs)}
    placed_at = {f.func_schedule.compute_level.func_name for f in pipe.funcs
                 if f.func_schedule is not None and f.func_schedule.compute_level is not None}
    for index, f in enumerate(list(pipe.funcs)):
        level = f.func_schedule.compute_level if f.func_schedule is not None else None
        if level is None or level.stage_index >= 0 or level.func_name not in by_name or f.name in placed_at:
            continue
        consumer = pipe.funcs[by_name[level.func_name]]
        first = 1 if consumer.init_def is not None else 0    # (an update's stage number)
        stages = _stages(consumer)
        readers = [k for k, d in enumerate(stages) if func_calls(d, index)]
        if len(readers) < 2:
            continue
        level.stage_index = readers[0]
        for k in readers[1:]:
            clone, clone_index = copy.deepcopy(f), len(pipe.funcs)
            clone.name = f"{f.name}$in_stage_{k}"
            _call_instead(func_calls([clone.init_def] + list(clone.updates), index),   # (its updates read it)
                          clone_index, clone.name)
            clone.func_schedule.compute_level.stage_index = k
            pipe.funcs.append(clone)
            stage = copy.deepcopy(stages[k])   # (its nodes may be shared with the other stages')
            consumer.updates[k - first] = stage
            _call_instead(func_calls(stage, index), clone_index, clone.name)


def redirect_to_wrappers(funcs):
    """Calls to a Func with wrappers (`f.in_(g)`, `f.in_()`, `f.clone_in(g)`) go to its wrappers, as
    Halide's lowering makes them: in g, calls to f read g's wrapper (or clone); elsewhere, where f has
    a global wrapper (`f.in_()`), they read it, except in the wrappers themselves."""
    for f in funcs:
        refs = f.node.func_schedule.wrappers if f.node.func_schedule is not None else []
        if not refs:
            continue
        specific = {r.func_name: r.func_index for r in refs if r.func_name}
        everywhere = next((r.func_index for r in refs if not r.func_name), None)
        wrappers = set(specific.values()) | ({everywhere} if everywhere is not None else set())
        for c in funcs:
            if c is f or c.index in wrappers:
                continue
            target = specific.get(c.name, everywhere)
            if target is None:
                continue
            _call_instead(func_calls(c.stages, f.index), target, funcs[target].name)


def build_call_graph(funcs):
    """Fill `callees` of every FuncInfo from the Halide calls in its definitions."""
    for info in funcs:
        for n in func_calls(info.stages):
            if not 0 <= n.func_index < len(funcs):
                raise HalideFormatError(f"Func {info.name} calls Func index {n.func_index}, but the pipeline "
                                        f"has {len(funcs)} Funcs")
            if n.func_index != info.index:
                info.callees.add(n.func_index)


def consumers_first(funcs, outputs):
    """The Funcs reachable from the outputs, each after every Func that calls it."""
    order, state = [], {}

    def visit(i):
        if state.get(i) == "done":
            return
        if state.get(i) == "open":
            raise HalideFormatError(f"the Funcs of the pipeline call each other in a cycle through {funcs[i].name}")
        state[i] = "open"
        for c in sorted(funcs[i].callees):
            visit(c)
        state[i] = "done"
        order.append(funcs[i])

    for o in outputs:
        visit(o.index)
    return list(reversed(order))
