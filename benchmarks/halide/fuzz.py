"""Fuzzing the Halide front-end with mutated `serialize_pipeline` bytes of varied pipelines.

    python benchmarks/halide/fuzz.py [--cases N] [--seed S] [--timeout SECONDS] [--show K]

Each case is a seed pipeline's bytes changed one way: random bytes overwritten,
the bytes cut short, or one field of the decoded pipeline changed (a number to an
extreme, a name emptied or swapped, a list shortened or repeated, an expression
dropped or replaced by another) and the pipeline encoded again. Cases run in a
worker process, so a crash or a hang is counted and the worker replaced. Each case
ends as one of:

  typed error         from_halide, compile or realize raised a mascarpone error
  accepted, equal     it ran, and Halide's realize of the same bytes gives the same values
  accepted, unchecked it ran, but Halide itself refuses, crashes or hangs on those bytes
  accepted, UNEQUAL   it ran and gave other values than Halide (a wrong result)
  raw exception       any other exception (a defect)
  crash               the process died (a defect)
  hang                no answer within the time limit (a defect)
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import pickle
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))   # (the test encoder of decoded pipelines)
sys.path.insert(0, str(HERE))

OUTCOMES = ("typed error", "accepted, equal", "accepted, unchecked", "accepted, UNEQUAL", "raw exception",
            "crash", "hang")
DEFECTS = ("accepted, UNEQUAL", "raw exception", "crash", "hang")


# seed pipelines ------------------------------------------------------------------------------

def seeds():
    """[(name, outputs, {ImageParam: array}, [(Param, value)], sizes)]: small pipelines covering
    stencils with boundary conditions, reductions, Tuples, Params, scans and schedules."""
    import halide as hl
    from mascarpone.bench.suite import halide_pipelines as pipelines
    rng = np.random.default_rng(7)
    out = []
    for name in ("cvt_color", "conv3x3", "gaussian", "heat2d", "nb", "blur_repeat_edge", "histogram", "iir",
                 "tuple_func"):
        # (wider than the widest vector: Halide shifts a short vector loop below the region's min)
        spec = getattr(pipelines, name)(40, 34, rng)
        out.append((name, spec["outputs"], spec["images"], [], spec["sizes"]))
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.Int(16), 2, "img")
    gain = hl.Param(hl.Int(32), "gain")
    scale = hl.Param(hl.Float(32), "scale")
    r = hl.RDom([(0, 3), (0, gain)], "r")
    r.where(r.x <= r.y)
    acc, shown = hl.Func("acc"), hl.Func("shown")
    acc[x, y] = hl.i32(0)
    acc[x, y] += hl.i32(inp[hl.clamp(x + r.x, 0, inp.width() - 1), hl.clamp(y + r.y, 0, inp.height() - 1)])
    shown[x, y] = hl.select(acc[x, y] > 100, hl.f32(acc[x, y]) * scale, -scale)
    acc.compute_at(shown, y)
    shown.split(x, hl.Var("xo"), hl.Var("xi"), 4).vectorize(hl.Var("xi"))
    out.append(("params and where", [shown], {inp: rng.integers(-500, 500, (10, 12)).astype(np.int16)},
                [(gain, 3), (scale, 0.5)], [12, 10]))
    return out


# mutations ----------------------------------------------------------------------------------------

_INTS = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-(1 << 31), (1 << 31) - 1),
         "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1)}
_EXTREMES = (0, 1, -1, 2, 3, 7, 64, 255, 1 << 16, (1 << 31) - 1, -(1 << 31), 1 << 32, (1 << 63) - 1)


def _fields(node, out):
    """(node, field, kind) of every field of every table under `node`."""
    from mascarpone.frontends.halide.schema import TABLES
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None or n.kind not in TABLES:
            continue
        for field, kind in TABLES[n.kind]:
            out.append((n, field, kind))
            v = getattr(n, field, None)
            if isinstance(v, list):
                stack.extend(e for e in v if hasattr(e, "kind"))
            elif hasattr(v, "kind"):
                stack.append(v)
    return out


def mutate(data: bytes, rng) -> tuple[bytes, str]:
    """One mutation of a pipeline's bytes, and what it was."""
    from halide_bytes import encode
    from mascarpone.frontends.halide.reader import read_pipeline
    how = rng.integers(0, 10)
    if how < 2:
        bad = bytearray(data)
        for pos in rng.integers(0, len(bad), int(rng.integers(1, 5))):
            bad[pos] = int(rng.integers(0, 256))
        return bytes(bad), "bytes overwritten"
    if how == 2:
        cut = int(rng.integers(0, len(data)))
        return data[:cut], f"cut to {cut} bytes"
    pipe = read_pipeline(data)
    fields = _fields(pipe, [])
    node, field, kind = fields[int(rng.integers(0, len(fields)))]
    value = getattr(node, field, None)
    if kind in _INTS:
        lo, hi = _INTS[kind]
        new = int(rng.choice(_EXTREMES)) if rng.random() < 0.7 else int(rng.integers(-1000, 1000))
        new = min(max(new, lo), hi)
    elif kind == "bool":
        new = not value
    elif kind == "float64":
        new = float(rng.choice([0.0, -1.0, 1e30, float("inf"), float("nan"), 0.5]))
    elif kind == "str":
        names = [getattr(n, f) for n, f, k in fields if k == "str" and getattr(n, f, None)]
        pick = rng.integers(0, 3)
        new = None if pick == 0 else "" if pick == 1 else names[int(rng.integers(0, len(names)))]
    elif kind.startswith("[") and isinstance(value, list) and value:
        new, pick = list(value), rng.integers(0, 3)
        k = int(rng.integers(0, len(new)))
        if pick == 0:
            del new[k]
        elif pick == 1:
            new.insert(k, new[k])
        else:
            new = []
    elif kind == "Expr":
        exprs = [getattr(n, f) for n, f, k in fields if k == "Expr" and getattr(n, f, None) is not None]
        new = None if rng.random() < 0.3 or not exprs else exprs[int(rng.integers(0, len(exprs)))]
    else:
        new = None
    setattr(node, field, new)
    try:
        return encode(pipe), f"{node.kind}.{field} = {_short(new)}"
    except RecursionError:
        return data, "no change (a cycle of expressions)"


def _short(v):
    text = repr(v)
    return text if len(text) < 60 else text[:57] + "..."


# one case, in a worker ------------------------------------------------------------------------------

def _ours(data, spec):
    import mascarpone as ms
    _, _, images, params, sizes = spec
    try:
        kernel = ms.from_halide(data).compile("cpu", fp_contract=False)
        inputs = {ip.name(): a for ip, a in images.items()}
        inputs.update({p.name(): v for p, v in params})
        out = kernel.realize(sizes, **inputs)
        return "accepted", [np.asarray(a).copy() for a in (out if isinstance(out, list) else [out])]
    except ms.MascarponeError as err:
        return "typed error", f"{type(err).__name__}: {err}"[:300]
    except Exception:   # noqa: BLE001 - counting what escapes is the point
        return "raw exception", traceback.format_exc()[-1500:]


def _halide_type(t):
    import halide as hl
    return {0: hl.Int, 1: hl.UInt, 2: hl.Float}[t.code](t.bits)


def _theirs(data, spec):
    """(Halide's realize of the same bytes, None), or (None, why Halide refuses them)."""
    import halide as hl
    from mascarpone.frontends.halide.reader import read_pipeline
    _, _, images, params, sizes = spec
    try:
        pipe = read_pipeline(data)
        by_name = {ip.name(): a for ip, a in images.items()}
        by_name.update({p.name(): v for p, v in params})
        user, setters = {}, []
        for p in pipe.external_parameters:
            if p.is_buffer:
                ip = hl.ImageParam(_halide_type(p.type), p.dimensions, p.name)
                setters.append((ip, hl.Buffer(by_name[p.name])))
            else:
                ip = hl.Param(_halide_type(p.type), p.name)
                setters.append((ip, by_name[p.name]))
            user[p.name] = ip.parameter()
        pipeline = hl.deserialize_pipeline(data, user)
        for ip, v in setters:
            ip.set(v)
        out = pipeline.realize(sizes)
        out = [out] if isinstance(out, hl.Buffer) else list(out)
        return [np.asarray(b).copy() for b in out], None
    except Exception as err:   # noqa: BLE001 - Halide refusing the bytes
        return None, str(err)[:300]


def _nonfinite_constant(data):
    """Whether the decoded pipeline holds a FloatImm that is infinite or NaN."""
    import math
    from mascarpone.frontends.halide.pipeline import walk_nodes
    from mascarpone.frontends.halide.reader import read_pipeline
    return any(n.kind == "FloatImm" and not math.isfinite(n.value) for n in walk_nodes(read_pipeline(data)))


def _same(ours, theirs):
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if np.issubdtype(a.dtype, np.floating):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-4, equal_nan=True):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def worker(conn):
    """Serve cases: receive (case id, seed index, bytes); send ("ours", id, outcome, detail) and, for
    an accepted case, ("theirs", id, outcome) after running Halide (which may die on the bytes)."""
    import os
    import tempfile
    import warnings
    warnings.simplefilter("ignore")
    os.chdir(tempfile.mkdtemp(prefix="halide-fuzz-"))   # (a mutated schedule may debug_to_file into it)
    # code generation refused within about a minute (the default allows several), below the case timeout
    os.environ.setdefault("MASCARPONE_ISL_MAX_OPERATIONS", "30000000")
    specs = seeds()
    conn.send(("ready",))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        case, index, data = msg
        outcome, detail = _ours(data, specs[index])
        if outcome != "accepted":
            conn.send(("ours", case, outcome, detail))
            continue
        conn.send(("ours", case, "accepted", None))
        theirs, why = _theirs(data, specs[index])
        verdict = "accepted, unchecked" if theirs is None else \
            "accepted, equal" if _same(detail, theirs) else "accepted, UNEQUAL"
        if verdict == "accepted, UNEQUAL" and _nonfinite_constant(data):
            # Halide simplifies float math as if no value were infinite or NaN (without strict_float):
            # its result for such a constant is not IEEE arithmetic, ours is
            verdict, why = "accepted, unchecked", "a float constant is inf or NaN; Halide assumes finite floats"
        conn.send(("theirs", case, verdict, why))


# the driver ---------------------------------------------------------------------------------

class Pool:
    """One worker process at a time, replaced when it dies or stops answering."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker, args=(child,), daemon=True)
        self.proc.start()
        if not self.conn.poll(120) or self.conn.recv() != ("ready",):
            raise RuntimeError("the fuzzing worker did not start")

    def _kill(self):
        self.proc.kill()
        self.proc.join()
        self.proc = None

    def _answer(self, timeout):
        """The worker's next message, "crash" or "hang"."""
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                pass
        dead = not self.proc.is_alive()
        self._kill()
        return "crash" if dead else "hang"

    def run(self, case, index, data):
        """(outcome, detail) of one case."""
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((case, index, data))
        first = self._answer(self.timeout)
        if first in ("crash", "hang"):
            return first, None
        _, _, outcome, detail = first
        if outcome != "accepted":
            return outcome, detail
        second = self._answer(self.timeout)
        if second in ("crash", "hang"):
            return "accepted, unchecked", f"Halide's realize: {second}"
        return second[2], second[3]

    def close(self):
        if self.proc is not None and self.proc.is_alive():
            self.conn.send(None)
            self.proc.join(5)
            if self.proc.is_alive():
                self._kill()


def fuzz(cases, seed=0, timeout=60.0, budget=None, log=None):
    """Run up to `cases` mutated cases (or until `budget` seconds have passed); returns (Counter of
    outcomes, [(outcome, seed name, mutation, detail)] of the defects)."""
    import halide as hl
    rng = np.random.default_rng(seed)
    specs = seeds()
    originals = [hl.serialize_pipeline(hl.Pipeline(s[1])) for s in specs]
    pool, counts, defects = Pool(timeout), Counter(), []
    start = time.perf_counter()
    try:
        for case in range(cases):
            if budget is not None and time.perf_counter() - start > budget:
                break
            index = int(rng.integers(0, len(specs)))
            data, what = mutate(originals[index], rng)
            outcome, detail = pool.run(case, index, data)
            counts[outcome] += 1
            if outcome in DEFECTS:
                defects.append((outcome, specs[index][0], what, detail))
            if log is not None:
                log(case, specs[index][0], what, outcome, detail)
    finally:
        pool.close()
    return counts, defects


def replay(case, seed=0):
    """Case `case` of the sequence of `seed`, run here with its details printed (for a defect found)."""
    import halide as hl
    rng = np.random.default_rng(seed)
    specs = seeds()
    originals = [hl.serialize_pipeline(hl.Pipeline(s[1])) for s in specs]
    for _ in range(case + 1):
        index = int(rng.integers(0, len(specs)))
        data, what = mutate(originals[index], rng)
    print(f"case {case}: {specs[index][0]}: {what}")
    outcome, detail = _ours(data, specs[index])
    print("ours:", outcome, detail if outcome != "accepted" else [a.ravel()[:8] for a in detail])
    theirs, why = _theirs(data, specs[index])
    print("Halide:", why if theirs is None else [a.ravel()[:8] for a in theirs])
    return data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    parser.add_argument("--show", type=int, default=10, help="defects to print in full")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--replay", type=int, help="run case N of the seed's sequence in this process, in detail")
    args = parser.parse_args()
    if args.replay is not None:
        return replay(args.replay, args.seed)

    def log(case, name, what, outcome, detail):
        if args.verbose or outcome in DEFECTS:
            print(f"{case}: {name}: {what}: {outcome}" + (f" ({detail[:200]!r})" if args.verbose and detail else ""),
                  flush=True)

    start = time.perf_counter()
    counts, defects = fuzz(args.cases, args.seed, args.timeout, log=log)
    total = sum(counts.values())
    print(f"\n{total} cases, seed {args.seed}, {time.perf_counter() - start:.0f} s")
    for outcome in OUTCOMES:
        print(f"  {outcome:22s} {counts.get(outcome, 0)}")
    for outcome, name, what, detail in defects[:args.show]:
        print(f"\n--- {outcome}: {name}: {what}\n{detail or ''}")


if __name__ == "__main__":
    main()
