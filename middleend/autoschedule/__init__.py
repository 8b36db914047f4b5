"""The automatic scheduler: `Function.autoschedule` chooses a schedule and gives it as ordinary
scheduling commands (`f.history()` lists them), each checked like a hand-written one.

privatize scratch arrays given a copy per iteration of the loops that reuse them (Computation.expand),
          before anything else: the nests then tile and run in parallel as any other
analysis  loops, trip counts and memory references of each computation
model     loop order by memory cost, tile sizes by cache capacity, variants for the search
islschedule  isl's scheduler's fusion and loop orders (exact dependences as validity, proximity and
          coincidence constraints), a variant the search measures
timetile  the time-stepped stencils and their (time, space) tiles
apply     a choice given as commands, each kept only if the schedule stays legal (legal)
measure   compile by target name and time on random inputs of the sizes
search    coordinate descent over tile sizes, unroll factors and compute_at or root within the budget,
          a variant kept only where it is still faster timed beside the best (Paired, below), tile
          sizes first screened by one kernel with parametric tiles (Screening, below; the best then
          timed against the model's choice and the naive loops, their calls interleaved)
cache     the best choice on disk, per function, sizes, target and machine
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

from ..copy_in import copied_inputs
from ..errors import DomainError, MascarponeError
from ..targets import get_target
from . import cache, timetile
from .analysis import analyze
from .apply import Applier
from .legal import Checker
from .islschedule import propose
from .measure import Timer
from .machine import vector_lanes
from .model import PARAMETRIC, tile_grid
from .privatize import expand_scratch_arrays
from .search import MARGIN, NAIVE, search, variants, with_knob
from .state import restore, save

#: the size each parameter takes when neither sizes= nor fixed= gives it, and the most iterations a
#: nest may get from such sizes (a 4-deep nest gets 64 per loop, not 256)
DEFAULT_SIZE, DEFAULT_WORK = 256, 1 << 24


@dataclass
class Report:
    """What `autoschedule` did: the choice applied, the commands it gave, how many schedules it timed
    (0 when the choice came from the cache or `measure=False`), the best and naive times in
    seconds (None when not measured), and why it did not measure, if it could not."""

    choice: dict
    commands: list
    measured: int = 0
    from_cache: bool = False
    seconds: float | None = None
    naive_seconds: float | None = None
    sizes: dict = field(default_factory=dict)
    note: str = ""
    #: {stage: [(tile sizes, seconds)]} of the tile sizes screened by a kernel with parametric tiles; a
    #: time-stepped stencil's time tiles ([steps, width]) under "<its first statement> time tiles"
    screened: dict = field(default_factory=dict)


def autoschedule(function, target="cpu", budget_s=20.0, seed=0, sizes=None, measure=True, use_cache=True) -> Report:
    """Choose a schedule for the computations no command has scheduled yet and apply it (see
    `Function.autoschedule`)."""
    began = time.perf_counter()
    binds_in_place = get_target(target).binds_in_place   # (an unknown name is the caller's mistake)
    sizes = complete_sizes(function, sizes)
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or budget_s < 0:
        raise DomainError(f"autoschedule: budget_s must be a non-negative number of seconds, got {budget_s!r}")
    context = function.context(sizes)
    expanded = expand_scratch_arrays(function, context)
    start = save(function)
    key = cache.key(function, sizes, target, seed, measure)
    stages = analyze(function, context)
    checker = Checker(function)
    proposal = propose(function, function._prepare(), checker.dependences())
    # the copies of inputs into outputs that such a target's call makes instead of the kernel
    copies = set(copied_inputs(function, function._prepare(sizes))) if binds_in_place else set()

    held = None         # the choice the function holds now
    optimistic = True   # steps given unchecked first, until one fails its check (Applier)

    def apply(choice):
        nonlocal held, optimistic
        restore(function, start)
        applier = Applier(function, stages, checker, leave=copies, proposal=proposal, optimistic=optimistic)
        if not choice.get("naive"):
            applier.apply(choice)
        held = repr(choice)
        optimistic = optimistic and not applier.fell_back
        return applier

    entry = cache.load(key) if use_cache else None
    if entry is not None:
        apply(entry["choice"])
        return Report(entry["choice"], expanded + _added(function, start), from_cache=True,
                      seconds=entry.get("seconds"), naive_seconds=entry.get("naive_seconds"), sizes=sizes)
    model_applier = apply({})
    report = Report({}, [], sizes=sizes)
    left = lambda: budget_s - (time.perf_counter() - began)     # noqa: E731
    if measure and left() <= 0:
        # a pipeline of many stages: each command's check adds up, and its compile would take longer still
        report.note = (f"not measured: applying the model's choice took {budget_s - left():.1f} s, all of "
                       f"budget_s={budget_s:g}; the model's choice is applied")
        warnings.warn(f"autoschedule({function.name}): {report.note}", stacklevel=3)
    elif measure:
        try:
            timer = Timer(function, target, sizes, seed)
            model_variants = variants(model_applier, stages, seed)
            screening = Screening(apply, timer, stages)
            paired = Paired(apply, timer)
            best, best_t, seen = search(paired.measure,
                                        lambda c: model_variants if not c else variants(apply(c), stages, seed),
                                        left(), screening, paired.confirm)
            naive_t, compared = None, left() > 0
            if compared:
                best, best_t, naive_t = _side_by_side(best, paired.kernel, timer)
            report = Report(best, [], timer.count, seconds=best_t, naive_seconds=naive_t, sizes=sizes,
                            screened=screening.results)
            if naive_t is None:
                report.note = (f"the naive loops' first call ran past {CLEARLY_SLOWER:g} times the choice's and "
                               f"was stopped: they were not timed" if compared else
                               "the naive loops were not timed: the search's measurements spent the budget")
        except MascarponeError as err:
            note = f"not measured ({type(err).__name__}: {err}); the model's choice is applied"
            warnings.warn(f"autoschedule({function.name}): {note}", stacklevel=3)
            report.note = note
    if held != repr(report.choice):
        apply(report.choice)
    if not checker.legal():   # each command was checked; the whole once more, layout included
        restore(function, start)
        report.choice, report.note = dict(NAIVE), "the chosen schedule failed the final check; naive kept"
        warnings.warn(f"autoschedule({function.name}): {report.note}", stacklevel=3)
    report.commands = expanded + _added(function, start)
    if use_cache:
        cache.store(key, {"choice": report.choice, "seconds": report.seconds, "naive_seconds": report.naive_seconds,
                          "sizes": sizes, "target": target, "commands": report.commands})
    return report


class Screening:
    """Ranks tile sizes of a stage's band, or time tiles of a time-stepped stencil, by one kernel whose
    tiles take their sizes at call time: the sizes offered and a grid of them (model.tile_grid,
    timetile.tile_grid), each timed by a call with those sizes, no compile between them. Parametric
    tiles leave out what constant tiles allow around them (unrolling, a producer computed per tile,
    wavefronts), so the ranking only picks the sizes the search then measures as constant tiles."""

    def __init__(self, apply, timer, stages):
        self.apply, self.timer, self.stages = apply, timer, stages
        self.results = {}

    def __call__(self, choice, stage, knob, sizes, limit_s):
        applier = self.apply(with_knob(choice, stage, knob, PARAMETRIC))
        params = applier.tile_params.get(stage)
        if not params:
            return None
        if knob == "timetile":
            more = timetile.tile_grid(self.stages, applier.time_groups[stage][0])
        else:
            more = tile_grid(self.stages[stage], applier.bands[stage], vector_lanes(self.stages[stage].comp.dtype))
        grid = []
        for s in [list(s) for s in sizes] + more:     # (a band of another depth than the one tiled: left out)
            if len(s) == len(params) and s not in grid:
                grid.append(s)
        if not grid:
            return None
        try:
            kernel = self.timer.kernel()
        except MascarponeError:
            return None
        times = self.timer.time_each(kernel, [dict(zip(params, s)) for s in grid], limit_s)
        timed = sorted((t, k) for k, t in enumerate(times) if t is not None)
        self.results[stage if knob == "tiles" else f"{stage} time tiles"] = [(grid[k], t) for t, k in timed]
        return [grid[k] for _, k in timed]


class Paired:
    """The search's measurements: each choice compiled and timed alone, and a choice that measured
    clearly faster than the best so far timed again beside it (`search`'s confirm), their kernels reused:
    the first measured (the model's choice), the latest, the best and its last rival are held, nothing
    else."""

    def __init__(self, apply, timer):
        self.apply, self.timer = apply, timer
        self.first = self.latest = None     # (choice's repr, kernel) measured first, and last
        self.held = {}          # {choice's repr: kernel} of the best so far and its last rival

    def measure(self, choice, limit_s) -> float:
        """Median seconds of `choice` alone."""
        self.apply(choice)
        seconds, kernel = self.timer.time_kernel(limit_s)
        self.latest = (repr(choice), kernel)
        if self.first is None:      # the first choice measured is the first best
            self.first = self.latest
            self.held = {repr(choice): kernel}
        return seconds

    def confirm(self, candidate, best, limit_s) -> tuple:
        """(candidate's seconds, best's seconds) with their calls interleaved."""
        kernels = [self.kernel(candidate), self.kernel(best)]
        self.held = {repr(candidate): kernels[0], repr(best): kernels[1]}
        return tuple(self.timer.medians(kernels, limit_s))

    def kernel(self, choice):
        """`choice` compiled: the kernel held where it was measured last or is held, else compiled now."""
        key = repr(choice)
        if key in self.held:
            return self.held[key]
        for measured in (self.latest, self.first):
            if measured is not None and measured[0] == key:
                return measured[1]
        self.apply(choice)
        return self.timer.kernel()


#: naive loops whose first call takes this many times the best's first call are not timed further
CLEARLY_SLOWER = 4.0
#: the least time the naive loops' first call is given before it is stopped (a process's fork and a
#: short kernel's first call fit well within it)
NAIVE_FIRST_CALL_S = 0.5


def _side_by_side(best, kernel_of, timer):
    """(choice, its seconds, the naive loops' seconds): the search's best, the model's choice ({}) where the
    search moved away from it, and the naive loops, timed with their calls interleaved (a shared machine's
    load, which stalls parallel regions most, moves them alike). The search's best is kept only where it is
    clearly faster than the model's here too (one lucky measurement of the search does not decide), and the
    naive loops replace the choice only when they are clearly faster here and their fastest call is clearly
    faster than the choice's in a second timing of the two. Where the naive loops' first call already takes
    CLEARLY_SLOWER times the fastest first call, that call is their time; it is stopped at that time (at
    NAIVE_FIRST_CALL_S at the least), and their time is then None: the naive loops of a large problem can
    take minutes a call (a 2048^3 float32 product: 50 s), far beyond the budget."""
    choices = [best] + ([{}] if best else []) + [NAIVE]
    kernels = [kernel_of(choice) for choice in choices]
    firsts = timer.first_calls(kernels[:-1])
    bound = CLEARLY_SLOWER * min(firsts)
    naive_first = timer.first_call_within(kernels[-1], max(bound, NAIVE_FIRST_CALL_S))
    if naive_first is None:
        times = timer.medians(kernels[:-1], firsts=firsts)
        at = _kept_choice(times)
        return choices[at], times[at], None
    firsts.append(naive_first)
    if firsts[-1] > bound:
        times, naive_t = timer.medians(kernels[:-1], firsts=firsts[:-1]), firsts[-1]
    else:
        *times, naive_t = timer.medians(kernels, firsts=firsts)
    at = _kept_choice(times)
    chosen, chosen_t = choices[at], times[at]
    if naive_t < chosen_t * MARGIN:
        # a second span of the machine's load must agree, by the fastest calls of each (a spell of other
        # work slows parallel loops the most, and the cache keeps the result), as a variant of the
        # search must win twice
        fastest_chosen, fastest_naive = timer.fastest([kernels[at], kernels[-1]])
        if fastest_naive < fastest_chosen * MARGIN:
            return NAIVE, naive_t, naive_t
    return chosen, chosen_t, naive_t


def _kept_choice(times) -> int:
    """0 (the search's best) or 1 (the model's choice): the search's best only where clearly faster."""
    return 1 if len(times) == 2 and not times[0] < times[1] * MARGIN else 0


def _added(function, start):
    return function.history()[start.history_length:]


def complete_sizes(function, sizes) -> dict:
    """Every size of the function: those given, the others DEFAULT_SIZE, or less for deep nests so that
    a nest runs at most about DEFAULT_WORK iterations (within each size's declared range)."""
    sizes = dict(sizes or {})
    depth = max((len(c.vars) for c in function.computations), default=1)
    default = min(DEFAULT_SIZE, max(8, int(round(DEFAULT_WORK ** (1 / max(depth, 1))))))
    out = {}
    for p in function.sizes():
        lo, hi = function.param_range(p)
        value = sizes.pop(p, None)
        if value is None:
            value = default if hi is None else min(default, hi)
            value = value if lo is None else max(lo, value)
        out[p] = value
    if sizes:
        raise DomainError(f"autoschedule: function {function.name} has no size parameter(s) {sorted(sizes)}; "
                          f"it has {function.sizes()}")
    return function._checked_fixed(out)
