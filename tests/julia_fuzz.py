"""Mutation fuzzing of the Julia front-end.

The printed IR of the fixtures and of the corpus is mutated (lines deleted, repeated or swapped, SSA
and block numbers, names, operators and literals replaced, characters inserted, text cut) and each
mutant goes through parse, translation, compilation and a call, next to the reference interpreter.
Every outcome is one of:

* ``typed error``          the front-end or compiler refused it with a MascarponeError
* ``accepted, equal``      the kernel's results equal the interpreter's (or both refused the call)
* ``Julia throws``         the interpreter raised what Julia would throw (DivideError, InexactError,
                           DomainError) where the kernel returned a value
* ``interpreter limit``    the interpreter hit its step limit (a very long loop), or cannot evaluate an
                           operation the kernel compiled (`x ^ n` of a float by a variable): not compared
* ``accepted, different``  a wrong result: a bug
* ``raw exception``        a Python exception that is not a MascarponeError: a bug
* ``crash`` / ``hang``     the worker process died, or a case ran past its time limit: a bug

Cases run in a worker subprocess, one after the other; the parent reads each case's start and
outcome, so a crash or a hang is counted for the case that caused it and a new worker goes on with
the next case. `fuzz(seed, budget_s)` returns the outcomes; mutant i of a seed is always the same.
"""
from __future__ import annotations

import copy
import json
import os
import random
import re
import select
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
OUTCOMES = ("typed error", "accepted, equal", "Julia throws", "interpreter limit", "accepted, different",
            "raw exception", "crash", "hang")
BUGS = ("accepted, different", "raw exception", "crash", "hang")

_NAMES = ["+", "-", "*", "/", "÷", "%", "===", "!==", "==", "<", "<=", ">", "&", "|", "⊻", "<<", ">>>", "min",
          "max", "abs", "sqrt", "length", "size", "getindex", "setindex!", "iterate", "getfield", "not_int", "isa",
          "zero", "one", "Float64", "Int64", "Float32", "nothing", "eachindex", "axes", "enumerate", "zip",
          "indexed_iterate", "tuple", "convert", "typeassert", "literal_pow", "ifelse", "div", "rem", "exp", "log"]
_LITERALS = ["0", "1", "-1", "2", "3", "1.5", "-0.0", "0.0", "1.0e308", "9007199254740993", "9223372036854775807",
             "-9223372036854775808", "64", "1000000", "true", "false", "nothing", "2.5f0", "-3"]
_TYPES = ["Vector{Float64}", "Matrix{Float64}", "Int64", "Float64", "Vector{Int64}", "Float32", "Vector{Float32}",
          "Array{Float64, 3}", "Bool"]
_NOISE = ["│   @ REPL[1]:2 within `f`", "   ┌ @ int.jl:87 within `+`", "│  └", "", "julia> ", ")", "CodeInfo(",
          "│╻", "1 ─", "└──", "$(Expr(:inbounds, true))", "%", "#", "var\"", "φ (#1 => 1)", "::Int64", "@_",
          "(", "[", "\"", "'", "\\", "\t", "∘", "≠"]


def seeds():
    """(name, text, argtypes, argument maker, static parameters) of every fixture style and every corpus case
    that translates."""
    sys.path.insert(0, str(HERE))
    from julia_corpus import CASES, arguments
    from julia_fixtures import KERNELS, STYLES, fixture, random_args
    out = []
    for kernel in KERNELS:
        for style in STYLES:
            text, argtypes = fixture(kernel, style)
            out.append((f"{kernel}.{style}", text, argtypes, lambda at, seed: _fixture_args(at, seed, random_args),
                        None))
    for case in CASES:
        if case.refused is None:
            out.append((case.file, case.text, case.argtypes,
                        lambda at, seed, case=case: _corpus_args(at, seed, case, arguments), case.static_parameters))
    return out


def _fixture_args(argtypes, seed, random_args):
    if all(t in _TYPES for t in argtypes.values()) and not any(t in ("Float32", "Vector{Float32}", "Bool",
                                                                      "Vector{Int64}") for t in argtypes.values()):
        return special_values(random_args(argtypes, seed, n=5), seed)
    return generic_args(argtypes, seed)


def _corpus_args(argtypes, seed, case, arguments):
    if argtypes == case.argtypes:
        return special_values(arguments(case, seed, n=5), seed)
    return generic_args(argtypes, seed)


_FLOATS = [float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 1e308, -5e-324, -1.0]
_INTS = [0, -1, 2**63 - 1, -2**63, 1]


def special_values(args, seed):
    """For one seed in three, a few array elements become NaN, ±0.0, ±Inf, huge or extreme integers."""
    rng = np.random.default_rng(seed + 7919)
    if rng.random() > 1 / 3:
        return args
    for a in args:
        if isinstance(a, np.ndarray) and a.size:
            for _ in range(2):
                k = np.unravel_index(rng.integers(a.size), a.shape)
                pool = _INTS if a.dtype.kind == "i" else _FLOATS
                a[k] = pool[rng.integers(len(pool))]
    return args


def generic_args(argtypes, seed, n=5):
    """Julia-shaped arguments for any supported argtypes (small arrays, small integers)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in argtypes.values():
        t = t.replace(" ", "")
        elt = "Float32" if "Float32" in t else ("Int64" if "Int64" in t else "Float64")
        if t.startswith(("Vector", "Matrix", "Array")):
            shape = (n,) if t.startswith("Vector") else ((n, n) if t.startswith("Matrix") else (n - 1, n - 2, n))
            a = rng.random(shape) if elt != "Int64" else rng.integers(-9, 10, shape)
            out.append(np.asfortranarray(a.astype({"Float32": np.float32, "Int64": np.int64,
                                                    "Float64": np.float64}[elt])))
        elif t == "Int64":
            out.append(int(rng.integers(0, 5)))
        elif t == "Bool":
            out.append(bool(rng.integers(0, 2)))
        else:
            out.append(float(rng.random()) + 0.25)
    return special_values(out, seed)


def mutate(text, argtypes, rng: random.Random):
    """A mutant of the text (and now and then of argtypes): one to three random edits."""
    lines = text.split("\n")
    argtypes = dict(argtypes)
    for _ in range(rng.choice((1, 1, 2, 3))):
        # edits that keep the text readable (numbers, names, literals) more often than structural ones
        op = rng.choice((0, 1, 2, 3, 3, 3, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 9, 10, 11, 11))
        i = rng.randrange(len(lines))
        line = lines[i]
        if op == 0 and len(lines) > 1:
            del lines[i]
        elif op == 1:
            lines.insert(i, line)
        elif op == 2 and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif op == 3:
            lines[i] = _replace_token(line, r"%(\d+)", lambda m: f"%{max(0, int(m) + rng.randint(-3, 3))}", rng)
        elif op == 4:
            lines[i] = _replace_token(line, r"#(\d+)", lambda m: f"#{max(0, int(m) + rng.randint(-2, 2))}", rng)
        elif op == 5:
            names = [n for n in _NAMES if n in line]
            if names:
                old = rng.choice(names)
                lines[i] = line.replace(old, rng.choice(_NAMES), 1)
        elif op == 6:
            lines[i] = _replace_token(line, r"(?<![%#@\w])(-?\d+(?:\.\d+)?)", lambda m: rng.choice(_LITERALS), rng)
        elif op == 7:
            slots = sorted(set(re.findall(r"@_\d+|\b[a-z]\w*\b", text)))
            here = [s for s in slots if s in line]
            if here:
                lines[i] = line.replace(rng.choice(here), rng.choice(slots), 1)
        elif op == 8 and line:
            k = rng.randrange(len(line) + 1)
            lines[i] = line[:k] + rng.choice(_NOISE) + line[k:]
        elif op == 9 and line:
            k = rng.randrange(len(line))
            lines[i] = line[:k] + line[k + 1:]
        elif op == 10:
            lines = lines[:rng.randrange(1, len(lines) + 1)]
        elif op == 11 and argtypes:
            name = rng.choice(list(argtypes))
            if rng.random() < 0.3:
                del argtypes[name]
            else:
                argtypes[name] = rng.choice(_TYPES)
    return "\n".join(lines), argtypes


def _replace_token(line, pattern, new, rng):
    found = list(re.finditer(pattern, line))
    if not found:
        return line
    m = rng.choice(found)
    return line[:m.start()] + new(m.group(1)) + line[m.end():]


def mutant(seed, index, pool):
    """The index-th mutant of a fuzzing seed: (seed name, text, argtypes, argument maker, static parameters)."""
    rng = random.Random(f"{seed}:{index}")
    name, text, argtypes, make_args, static = pool[rng.randrange(len(pool))]
    text, argtypes = mutate(text, argtypes, rng)
    return name, text, argtypes, make_args, static


def run_one(text, argtypes, make_args, seed=0, static_parameters=None, max_steps=300_000):
    """(outcome, detail) of one mutant, run in this process."""
    from mascarpone.frontends.julia import JuliaNotSupportedError, JuliaRuntimeError, StepLimitError, from_julia, interpret
    from mascarpone.middleend.errors import MascarponeError
    try:
        f = from_julia(text, argtypes, static_parameters=static_parameters)
        kernel = f.compile()
    except MascarponeError as err:
        return "typed error", f"{type(err).__name__}: {str(err)[:200]}"
    except Exception:
        return "raw exception", "translation: " + traceback.format_exc(limit=-3)
    try:
        args = make_args(argtypes, seed)
    except Exception:
        return "typed error", "no arguments can be made for these argtypes"
    ours = copy.deepcopy(args)
    try:
        ref, ref_err = interpret(text, argtypes, *args, max_steps=max_steps,
                                 static_parameters=static_parameters), None
    except StepLimitError:
        return "interpreter limit", ""
    except MascarponeError as err:
        ref, ref_err = None, err
    except Exception:
        return "raw exception", "interpreter: " + traceback.format_exc(limit=-3)
    try:
        got, got_err = kernel(*ours), None
    except MascarponeError as err:
        got, got_err = None, err
    except Exception:
        return "raw exception", "kernel: " + traceback.format_exc(limit=-3)
    if ref_err is not None and got_err is not None:
        return "accepted, equal", f"both refuse the call: {type(ref_err).__name__} / {type(got_err).__name__}"
    if ref_err is not None:
        if isinstance(ref_err, JuliaNotSupportedError):
            return "interpreter limit", str(ref_err)[:200]
        if isinstance(ref_err, JuliaRuntimeError) and ref_err.kind != "BoundsError":
            return "Julia throws", str(ref_err)[:200]
        return "accepted, different", f"the interpreter refused ({type(ref_err).__name__}: {ref_err}); the " \
                                      "kernel returned"
    if got_err is not None:
        return "accepted, different", f"the kernel refused ({type(got_err).__name__}: {got_err}); the interpreter returned {ref!r}"
    if not _same(ref, got) or not all(_same(a, b) for a, b in zip(args, ours) if isinstance(a, np.ndarray)):
        return "accepted, different", f"interpreter {ref!r}, kernel {got!r}"
    return "accepted, equal", ""


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and \
            np.allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)
    if a is None or b is None:
        return a is None and b is None
    try:
        return bool(a == b or (a != a and b != b))
    except Exception:
        return False


def worker(seed, start, stop, deadline):
    """Run mutants start..stop-1 of a seed, printing `start i` and a JSON outcome line for each."""
    pool = seeds()
    name, text, argtypes, make_args, static = pool[0]
    run_one(text, argtypes, make_args, static_parameters=static)   # warm up the JIT: cases are timed alone
    for i in range(start, stop):
        if time.time() > deadline:
            break
        print(f"start {i}", flush=True)
        _injected_fault(i)
        name, text, argtypes, make_args, static = mutant(seed, i, pool)
        outcome, detail = run_one(text, argtypes, make_args, seed=i, static_parameters=static)
        print(json.dumps({"i": i, "seed": name, "outcome": outcome, "detail": detail}), flush=True)


def _injected_fault(i):
    """Tests of the harness itself: JULIA_FUZZ_FAULTS="3:crash,5:hang" makes case 3 kill the worker and
    case 5 never finish."""
    faults = dict(f.split(":") for f in os.environ.get("JULIA_FUZZ_FAULTS", "").split(",") if f)
    if faults.get(str(i)) == "crash":
        os._exit(139)
    if faults.get(str(i)) == "hang":
        time.sleep(3600)


def _lines(proc, timeout):
    """The complete lines the worker has written within `timeout` seconds (None at end of output). The
    pipe is read unbuffered: a line left in a reader's buffer would wait there while select() saw
    nothing more to read."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        return []
    chunk = os.read(proc.stdout.fileno(), 65536)
    if not chunk:
        return None
    proc.pending += chunk
    *lines, proc.pending = proc.pending.split(b"\n")
    return [line.decode() for line in lines]


def fuzz(seed=0, budget_s=5.0, cases=10**9, case_timeout_s=30.0, log=None):
    """Outcomes of the mutants of `seed` run within `budget_s` seconds (at most `cases`): a list of dicts."""
    deadline = time.time() + budget_s
    results, i = [], 0
    while i < cases and time.time() < deadline:
        code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import julia_fuzz; " \
               f"julia_fuzz.worker({seed!r}, {i}, {cases}, {deadline})"
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONHASHSEED": "0"})
        proc.pending = b""
        current, last, started, running = None, time.time(), False, True
        while running:
            lines = _lines(proc, 0.25)
            if lines is None:           # the worker is gone
                proc.wait()
                if not started:
                    raise RuntimeError(f"the fuzzing worker did not start (exit {proc.returncode})")
                if current is not None:
                    results.append({"i": current, "outcome": "crash", "detail": f"exit {proc.returncode}"})
                    i = current + 1
                else:
                    i = cases if not results else results[-1]["i"] + 1
                break
            for line in lines:
                started = True
                if line.startswith("start "):
                    current, last = int(line.split()[1]), time.time()
                    continue
                r = json.loads(line)
                results.append(r)
                if log is not None:
                    log(r)
                current = None
            if current is not None and time.time() - last > case_timeout_s:
                proc.kill()
                proc.wait()
                results.append({"i": current, "outcome": "hang", "detail": f"over {case_timeout_s} s"})
                i = current + 1
                running = False
            elif current is None and time.time() > deadline + case_timeout_s:
                proc.kill()
                proc.wait()
                i = cases
                running = False
    return results


def counts(results):
    """{outcome: number of cases} in the order of OUTCOMES."""
    out = {o: 0 for o in OUTCOMES}
    for r in results:
        out[r["outcome"]] += 1
    return out
