"""The sizes a Halide pipeline's estimates give (`Func.set_estimates`, `ImageParam.set_estimates`),
by the names of the Function's sizes: what Halide's autoschedulers read, and what
`HalideFunction.autoschedule` times its candidates at when no `sizes=` are given. A scalar Param's
estimate (`Param.set_estimate`) is not in the serialized pipeline, so a Param that is a size keeps
the autoscheduler's default."""
from __future__ import annotations

import re


def estimated_sizes(tr) -> dict:
    """{size name: value} for every size of the translation `tr` whose estimate the pipeline carries:
    output extents from the output Funcs' estimates, ImageParam extents from their buffer estimates.
    Sizes without an estimate are absent."""
    sizes = {}
    for o in tr.outputs:
        extents = _func_extents(o)
        for d, p in enumerate(tr.out_params[o.index]):
            if extents.get(o.args[d]) is not None:
                sizes[p.name] = extents[o.args[d]]
    for ip in tr.image_params.values():
        func = _image_func(tr, ip.name)
        by_var = _func_extents(func) if func is not None else {}
        for p, var in zip(ip.extent_params, func.args if func is not None else []):
            if by_var.get(var) is not None:
                sizes[p.name] = by_var[var]
    return sizes


def _image_func(tr, name):
    """The Func Halide makes for the ImageParam `name` (named `name_im`, with a `$k` suffix when the
    process made one of that name before): `ImageParam.set_estimates` puts the estimates there."""
    pattern = re.compile(re.escape(f"{name}_im") + r"(\$\d+)?")
    found = [f for f in tr.funcs if pattern.fullmatch(f.name)]
    return found[0] if len(found) == 1 else None


def _func_extents(func) -> dict:
    """{pure variable: estimated extent} of a Func."""
    schedule = func.schedule
    bounds = schedule.estimates if schedule is not None else None
    return {b.var: _constant(b.extent) for b in bounds or []}


def _constant(expr):
    """The value of an integer literal of the serialized IR, else None (unset or not a constant)."""
    if getattr(expr, "kind", None) not in ("IntImm", "UIntImm"):
        return None
    return int(getattr(expr, "value", 0) or 0)
