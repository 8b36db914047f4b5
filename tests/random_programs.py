"""Random command sequences on one small program, for the property test and the long fuzzing run
(tests/fuzz/layouts.py): loop commands and layout commands, with buffers of every shape class.

A case is a list of commands `(name, computation, a, b, factor)`; `run_case` applies them (a command
that does not apply to the current state is refused with ms.ScheduleError and skipped), compiles, and
compares the result with the unscheduled program's."""
import numpy as np

import mascarpone as ms

LOOP_COMMANDS = ("split", "interchange", "tile", "shift", "skew", "reverse", "parallelize", "vectorize",
                 "unroll", "after", "compute_at", "inline", "store_root", "store_at")
LAYOUT_COMMANDS = ("store_in", "storage_fold")
COMPUTATIONS = ("p", "c", "r")
FACTORS = (1, 2, 3, 4, 8)

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
    return f, {"p": p, "c": c, "r": r, "H": H, "W": W}


def _buffers_of_p(H, W, y, x):
    """(name, shape, index) of buffers for p[y, x] (y < H + 2, x < W), one per shape class."""
    return [
        ("natural", [H + 2, W], [y, x]),
        ("transposed", [W, H + 2], [x, y]),
        ("padded", [H + 4, W + 8], [y + 1, x + 5]),
        ("flipped", [H + 2, W], [H + 1 - y, x]),
        ("panels", [(W + 3) // 4, H + 2, 4], [x // 4, y, x % 4]),
        ("too_few_rows", [H, W], [y, x]),
        ("too_small", [8, 8], [y, x]),
        ("one_row", [W], [x]),
        ("ring_of_rows", [3, W], [ms.floormod(y, 3), x]),
        ("one_column", [H + 2], [y]),
        ("one_element", [1], [x * 0]),
    ]


def _buffers_of_c(H, W, y, x):
    """(name, shape, index, how the caller's array maps to the program's) for the output c."""
    return [
        ("transposed_output", [W, H], [x, y], lambda a: a.T),
        ("padded_output", [H + 1, W + 2], [y + 1, x + 2], lambda a: a[1:, 2:]),
        ("one_row_output", [W], [x], None),
    ]


def apply(comps, cmd, name, a, b, factor):
    """Apply one command to the computation `name` (loops and buffers picked by `a`, `b`). The update r
    has no storage of its own: its layout commands go to p, which gets most of them."""
    if cmd in LAYOUT_COMMANDS and name == "r":
        name = "p"
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
        consumer = comps["c"]      # p's only reader
        comp.compute_at(consumer, consumer.loops[b % len(consumer.loops)])
    elif cmd == "inline" and name == "p":
        comp.inline()
    elif cmd == "store_root" and name == "p":
        comp.store_root()
    elif cmd == "store_at" and name == "p":
        consumer = comps["c"]
        comp.store_at(consumer.loops[b % len(consumer.loops)])
    elif cmd == "store_in":
        _store_in(comps, name, a, b)
    elif cmd == "storage_fold":
        comp.storage_fold(comp.vars[a % 2], factor)


def _store_in(comps, name, a, b):
    H, W = comps["H"], comps["W"]
    if name == "p":
        p = comps["p"]
        label, shape, index = _buffers_of_p(H, W, *p.vars)[(4 * a + b) % 11]
        p.store_in(ms.Buffer(f"pb_{label}", shape, ms.float32), index)
    else:
        c = comps["c"]
        label, shape, index, view = _buffers_of_c(H, W, *c.vars)[(4 * a + b) % 3]
        c.store_in(ms.Buffer(f"cb_{label}", shape, ms.float32, "output"), index)
        comps["view"] = view


_reference = None


def reference():
    """The unscheduled program's output for IMG."""
    global _reference
    if _reference is None:
        _reference = program()[0].compile("cpu")(img=IMG)
    return _reference


def run_case(seq):
    """'refused: ErrorClass' when the schedule is refused with a typed error, 'equal' when the kernel
    computes the unscheduled program's values, 'wrong: ...' otherwise. Other exceptions propagate."""
    f, comps = program()
    for cmd in seq:
        try:
            apply(comps, *cmd)
        except ms.MascarponeError:
            pass    # a command that does not apply to this state, refused with a message
    try:
        kernel = f.compile("cpu")
    except ms.MascarponeError as err:
        return f"refused: {type(err).__name__}"
    out = kernel(img=IMG)
    view = comps.get("view", lambda a: a)
    if view is None:
        return "wrong: a layout the caller cannot read was accepted"
    got = view(out)
    if got.shape != reference().shape:
        return f"wrong: shape {got.shape}"
    if not np.allclose(got, reference(), rtol=1e-5):
        return f"wrong: max difference {np.nanmax(np.abs(got - reference()))}"
    return "equal"


def random_case(generator, max_len=6, layout_share=0.35):
    """A random command sequence drawn with a numpy Generator."""
    n = int(generator.integers(0, max_len + 1))
    seq = []
    for _ in range(n):
        pool = LAYOUT_COMMANDS if generator.random() < layout_share else LOOP_COMMANDS
        seq.append((str(generator.choice(pool)), str(generator.choice(COMPUTATIONS)),
                    int(generator.integers(0, 4)), int(generator.integers(0, 4)), int(generator.choice(FACTORS))))
    return seq
