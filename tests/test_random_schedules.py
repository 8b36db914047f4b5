"""Random command sequences: whatever the checker accepts must compute what the unscheduled program does."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mascarpone as ms

rng = np.random.default_rng(7)
IMG = rng.random((13, 19), dtype=np.float32)


def program():
    """A producer, a consumer with a stencil, and an in-place recurrence on the consumer."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 2)
    x1 = ms.Var("x", 1, W)
    with ms.Function("prog") as f:
        img = ms.Input("img", [H + 2, W], ms.float32)
        p = ms.Computation("p", [yb, x], img[yb, x] * 2)
        c = ms.Computation("c", [y, x], p[y, x] + p[y + 1, x] + p[y + 2, x])
        r = c.update([y, x1], c[y, x1 - 1] * ms.f32(0.5) + c[y, x1])
    return f, {"p": p, "c": c, "r": r}


REFERENCE = program()[0].compile("cpu")(img=IMG)

commands = st.lists(st.tuples(
    st.sampled_from(["split", "interchange", "tile", "shift", "skew", "reverse", "parallelize",
                     "vectorize", "unroll", "after", "compute_at", "inline"]),
    st.sampled_from(["p", "c", "r"]),
    st.integers(0, 3), st.integers(0, 3), st.sampled_from([2, 3, 4, 8])), max_size=5)


def apply(comps, cmd, name, a, b, factor):
    comp = comps[name]
    loops = comp.loops
    la, lb = loops[a % len(loops)], loops[b % len(loops)]
    other = comps[{"p": "c", "c": "r", "r": "p"}[name]]
    if cmd == "split":
        comp.split(la, factor)
    elif cmd == "interchange":
        comp.interchange(la, lb)
    elif cmd == "tile":
        k = a % len(loops)
        if k + 1 < len(loops):
            comp.tile(loops[k], loops[k + 1], factor, 4)
    elif cmd == "shift":
        comp.shift(la, factor - 3)
    elif cmd == "skew":
        i, j = sorted((a % len(loops), b % len(loops)))
        if i < j:
            comp.skew(loops[i], loops[j], 1)
    elif cmd == "reverse":
        comp.reverse(la)
    elif cmd == "parallelize":
        comp.parallelize(la)
    elif cmd == "vectorize":
        comp.vectorize(la, factor)
    elif cmd == "unroll":
        comp.unroll(la, factor)
    elif cmd == "after":
        comp.after(other, other.loops[b % len(other.loops)] if b % 2 else ms.root)
    elif cmd == "compute_at" and name == "p":
        comps["c"]  # p's only reader
        comp.compute_at(comps["c"], comps["c"].loops[b % len(comps["c"].loops)])
    elif cmd == "inline" and name == "p":
        comp.inline()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands)
def test_accepted_schedules_compute_the_same_values(seq):
    f, comps = program()
    for cmd in seq:
        try:
            apply(comps, *cmd)
        except ms.ScheduleError:
            pass  # a command that does not apply to this state, refused with a message
    try:
        kernel = f.compile("cpu")
    except (ms.IllegalScheduleError, ms.ScheduleError):
        return
    np.testing.assert_allclose(kernel(img=IMG), REFERENCE, rtol=1e-5)


def test_condition_that_isl_writes_as_constant_true():
    """isl can print an always-true disjunct as the integer 1 inside a guard; it must read as a bool."""
    f, comps = program()
    for cmd in [("split", "p", 0, 0, 2), ("vectorize", "c", 1, 0, 2), ("vectorize", "c", 0, 0, 2)]:
        apply(comps, *cmd)
    np.testing.assert_allclose(f.compile("cpu")(img=IMG), REFERENCE, rtol=1e-5)
