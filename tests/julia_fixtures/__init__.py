"""Printed lowered IR of Julia kernels (see lowering.py) and helpers to load them in tests."""
from pathlib import Path

import numpy as np

from .lowering import STYLES, read_kernel

HERE = Path(__file__).parent
KERNELS = sorted(p.stem for p in HERE.glob("*.jl"))


def fixture(kernel, style="v1_6.lowered"):
    """(printed IR text, argtypes) of a kernel in a printing style."""
    _, _, argtypes, _, _ = read_kernel(HERE / f"{kernel}.jl")
    return (HERE / f"{kernel}.{style}.txt").read_text(), argtypes


def random_args(argtypes, seed=0, n=9, tsteps=3):
    """Julia-shaped random arguments of the element types the argtypes name: n x n matrices (column-major),
    n-vectors, (n-1, n-2, n) 3-d arrays."""
    rng = np.random.default_rng(seed)
    out = []
    for name, t in argtypes.items():
        element = np.float32 if "Float32" in t else np.float64
        if t.startswith("Matrix"):
            out.append(np.asfortranarray(rng.random((n, n)).astype(element)))
        elif t.startswith("Vector"):
            out.append(rng.random(n).astype(element))
        elif t.startswith("Array"):
            out.append(np.asfortranarray(rng.random((n - 1, n - 2, n)).astype(element)))
        elif t == "Int64":
            out.append(tsteps)
        else:
            out.append(float(rng.random()) + 0.25)
    return out
