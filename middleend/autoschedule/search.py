"""The measured search over what the model leaves open: coordinate descent from the model's choice,
one stage and one knob at a time (the stages with the most iterations first), keeping a variant
only when it is clearly faster, within a time budget, and still so when timed beside the best so far. (The naive schedule is timed afterwards,
beside the best, so the result is never slower than what the user had.)"""
from __future__ import annotations

import copy
import random
import statistics
import time

from . import machine, model, timetile

#: a variant must beat the best so far by this factor to replace it (timing noise)
MARGIN = 0.97
NAIVE = {"naive": True}


def variants(applier, stages, seed) -> list:
    """[(stage name, knob, value)] to try, in a fixed order for a given seed: isl's scheduler's fusion
    and loop orders ("*": the whole function) where they differ from the model's, statements of a source
    nest left apart rather than fused back at their parallel loop, no packing or other blocks
    of a packed contraction, other numbers of a reduction's reads streamed at once (or a strip of vectors
    in registers instead), other tile sizes (or none) of each band with reuse, other time tiles (or
    none) of a time-stepped stencil and its tiles one after another rather than in wavefronts, other
    numbers of interleaved chains, split tiles of other sizes (or none, or the model's where it had none) of
    a stencil not time-tiled, an interleaved sweep's tiles in wavefronts of other sizes (or none),
    other unroll-and-jam factors of a stencil, serial loops for parallel ones, the innermost loop left to
    the compiler's vectorizer, unroll factors around the vector loop (where it carries no window), root
    for producers computed at tiles."""
    # isl's scheduler's fusion and loop orders, where they differ from the model's
    out = [("*", "isl", True)] if applier.differs else []
    if applier.fused:
        out.append(("*", "fuse", False))
    order = sorted(stages.values(), key=lambda s: (-s.work(), s.name))
    rng = random.Random(seed)
    for stage in order:
        mine = []
        if stage.name in applier.transposed:
            mine.append((stage.name, "transpose", False))
        if stage.name in applier.registers:
            mine += [(stage.name, "registers", shape) for shape in (False,) + model.REGISTER_TILES
                     if shape != applier.registers[stage.name]]
        if stage.name in applier.streamed:
            mine += [(stage.name, "streams", u) for u in model.STREAM_VARIANTS if u != applier.streamed[stage.name]]
        if stage.name in applier.packed:
            mine.append((stage.name, "pack", False))
            lanes = machine.vector_lanes(stage.comp.dtype)
            mine += [(stage.name, "pack", b) for b in model.pack_variants(applier.packed[stage.name], lanes)]
        band = applier.bands.get(stage.name)
        if band and stage.name not in applier.registers:
            lanes = machine.vector_lanes(stage.comp.dtype)
            sizes = model.tile_variants(stage, band, lanes)
            # tiled by the model: its sizes are measured already; untiled: so is "no tiling" ([])
            sizes = sizes[1:] if stage.name in applier.tiled else [s for s in sizes if s]
            mine += [(stage.name, "tiles", s) for s in sizes]
        if stage.name in applier.time_groups:
            sizes = timetile.tile_variants(applier.time_groups[stage.name][1])
            if stage.name not in applier.time_tiled:     # the model left it: "none" is measured already
                sizes = [applier.time_groups[stage.name][1]] + [s for s in sizes if s]
            mine += [(stage.name, "timetile", s) for s in sizes]
        if stage.name in applier.split_groups and stage.name not in applier.time_tiled:
            model_split = applier.split_groups[stage.name]
            tried = [model_split] + timetile.split_variants(model_split, stages,
                                                            applier.time_groups[stage.name][0])
            mine += [(stage.name, "split", v) for v in tried if v != applier.split_tiled.get(stage.name, False)]
        if stage.name in applier.wavefronts:
            mine.append((stage.name, "wavefront", False))
        if stage.name in applier.interleaved:
            mine += [(stage.name, "interleave", c) for c in model.CHAIN_VARIANTS]
        if stage.name in applier.space_waves:
            mine += [(stage.name, "spacewave", t) for t in (False, model.SPACE_WAVE) + model.SPACE_WAVE_VARIANTS
                     if t != applier.space_waves[stage.name] and (t or applier.space_waves[stage.name])]
        if stage.name in applier.parallel:
            mine.append((stage.name, "parallel", False))
        if stage.name in applier.jammable:
            mine += [(stage.name, "jam", f) for f in (0, model.JAM) + model.JAM_VARIANTS
                     if f != applier.jammable[stage.name]]
        if stage.name in applier.vectorized:
            mine.append((stage.name, "vectorize", False))
        if stage.name in applier.unrollable:
            mine += [(stage.name, "unroll", u) for u in model.UNROLL_FACTORS if u > 1]
        if applier.placements.get(stage.name) == "compute_at":
            mine.append((stage.name, "place", "root"))
        rng.shuffle(mine)
        out += mine
    return out


def with_knob(choice, stage, knob, value) -> dict:
    """`choice` with one knob of one stage set."""
    out = copy.deepcopy(choice)
    out.setdefault(knob, {})[stage] = value
    return out


#: tile sizes a screening passes on to be measured as constant tiles, fastest first; the share of the
#: budget left that a screening may take
SCREENED_KEPT, SCREEN_SHARE = 2, 0.5
#: the knobs whose sizes a screening by parametric tiles ranks: a band's tiles and a stencil's time tiles
SCREENED_KNOBS = ("tiles", "timetile")


def search(measure, candidates_of, budget_s, screen=None, confirm=None) -> tuple:
    """(best choice, its seconds, {json of a choice: seconds} of those measured). `measure(choice,
    limit_s)` times a choice, taking more runs only while under `limit_s` seconds; the model's
    choice ({}) is always measured, then the variants `candidates_of(choice)` gives for it while the
    budget lasts: a variant starts only where the budget left covers the median time a measurement has
    taken (its compile and runs) and a reserve of one more measurement (the model's took), which
    `autoschedule`'s final comparison with the naive loops spends, so the search ends near its budget,
    not a compile past it. A better choice can open knobs the model's did not have (a stencil no longer
    time-tiled gets its own loops' knobs): those are tried after the others.

    `screen(choice, stage, knob, sizes, limit_s)`, where given, ranks the sizes of a stage's tiles or
    time tiles (those offered and more) by one kernel with parametric tiles, fastest first (None where
    it cannot), within SCREEN_SHARE of the budget left: the first time a stage's tile sizes come up,
    its SCREENED_KEPT fastest replace them, followed by the sizes offered that ranked in the faster half
    (a ranking of the simpler program parametric tiles make, so a size it does not find slow is still
    measured).

    `confirm(candidate, best, limit_s)`, where given, times a variant that measured clearly faster than
    the best beside it, their calls interleaved, and returns (its seconds, the best's seconds): both
    measurements then come from one span of the machine's load, and the variant replaces the best only
    where it is still clearly faster there (a variant timed while the machine was quieter than when the
    best was timed does not win by that)."""
    start = time.perf_counter()
    left = lambda: budget_s - (time.perf_counter() - start)     # noqa: E731
    best, best_t = {}, measure({}, left())
    costs = [time.perf_counter() - start]      # seconds each measurement took, confirmation included
    reserve = costs[0]      # for autoschedule's final comparison, which compiles and times the naive loops
    seen = {"{}": best_t}
    queue = list(candidates_of(best))
    offered = {(stage, knob) for stage, knob, _ in queue}
    screened = set()
    while queue and left() > reserve:
        stage, knob, value = queue.pop(0)
        if knob in SCREENED_KNOBS and value and screen is not None and (stage, knob) not in screened:
            screened.add((stage, knob))
            sizes_offered = [value] + [v for s, k, v in queue if (s, k) == (stage, knob) and v]
            ranked = screen(best, stage, knob, sizes_offered, (left() - reserve) * SCREEN_SHARE)
            if ranked:
                # the fastest first, then the sizes offered that ranked in the faster half
                kept = ranked[:SCREENED_KEPT] + [v for v in sizes_offered
                                                 if v in ranked[SCREENED_KEPT:len(ranked) // 2]]
                queue = [q for q in queue if (q[0], q[1]) != (stage, knob) or not q[2]]
                queue[:0] = [(stage, knob, sizes) for sizes in kept]
                continue
        cand = with_knob(best, stage, knob, value)
        if repr(cand) in seen:
            continue
        if left() - reserve < statistics.median(costs):
            break
        began = time.perf_counter()
        t = measure(cand, left())
        seen[repr(cand)] = t
        if t < best_t * MARGIN and confirm is not None:
            t, best_t = confirm(cand, best, left())
        costs.append(time.perf_counter() - began)
        if t < best_t * MARGIN:
            best, best_t = cand, t
            opened = [v for v in candidates_of(best) if (v[0], v[1]) not in offered]
            offered.update((stage, knob) for stage, knob, _ in opened)
            queue += opened
    return best, best_t, seen
