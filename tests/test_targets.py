"""The target registry, the options every target checks, and the files the targets write for use outside
Python (an object file and a C header from "cpu", C source and a header from "c")."""
from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.backends.cpu import emit_object
from mascarpone.cli import main
from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.expr import Const, Sym
from mascarpone.middleend.loopir import For, LoweredFunction, Store
from mascarpone.middleend.targets import get_target
from mascarpone.middleend.types import float32

N, M = Sym("N"), Sym("M")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def axpy():
    """out[i, j] = a[i, j] * 2 + b[j], the rows in parallel, the columns vectorized."""
    a = Buffer("a", [N, M], float32, "input")
    b = Buffer("b", [M], float32, "input")
    out = Buffer("out", [N, M], float32, "output")
    i, j = Sym("i"), Sym("j")
    body = Store(out, (i, j), a[i, j] * 2.0 + b[j])
    zero = Const(0, ms.int64)
    nest = For("i", zero, N, For("j", zero, M, body, "vector", 8), "parallel")
    return LoweredFunction("axpy_obj", ["N", "M"], [a, b], [out], nest)


def blur_function(name="blur"):
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 2)
    with ms.Function(name) as f:
        img = ms.Input("img", [H + 2, W + 2], ms.float32)
        bx = ms.Computation("bx", [yb, x], (img[yb, x] + img[yb, x + 1] + img[yb, x + 2]) / 3)
        by = ms.Computation("by", [y, x], (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3)
    y0, x0, y1, x1 = by.tile(y, x, 32, 64)
    by.vectorize(x1, 8)
    by.parallelize(y0)
    bx.compute_at(by, x0)
    return f


# --- the registry ------------------------------------------------------------------------------

def test_targets_lists_cpu_and_c_with_their_state():
    listed = {t.name: t for t in ms.targets()}
    assert {"cpu", "c"} <= set(listed)
    for t in listed.values():
        assert t.available == (t.missing is None)
        assert t.available or t.install
    assert "cpu" in str(ms.targets()) and "available" in str(ms.targets())


def test_unknown_target_and_options_are_named():
    f = blur_function()
    with pytest.raises(ms.TargetError, match=r"unknown target 'gpu'; the registered targets are .*'c'.*'cpu'"):
        f.compile("gpu")
    with pytest.raises(ms.TargetError, match=r"target 'cpu' takes no option 'num_thread' \(did you mean "
                                             r"'num_threads'\?\); it takes num_threads, fast_math"):
        f.compile("cpu", num_thread=2)
    with pytest.raises(ms.TargetError, match="target 'c' takes no option 'num_threads'"):
        f.compile_to_c("/nonexistent/k.c", num_threads=2)   # threads are a run-time setting


def test_kernel_names_must_be_c_identifiers():
    f = blur_function("exp")  # would be the C library's exp in a C program or an object file
    with pytest.raises(ms.NotSupportedError, match="kernel name 'exp' is not a C identifier"):
        f.compile("c")
    with pytest.raises(ms.NotSupportedError, match="kernel name 'exp' is not a C identifier"):
        f.compile("cpu")


def test_bad_arch_is_refused_by_both_targets():
    f = blur_function()
    with pytest.raises(ms.TargetError, match="arch='pentium9'"):
        f.compile("cpu", arch="pentium9")
    with pytest.raises(ms.TargetError, match="does not know the CPU 'pentium9'"):
        f.compile("c", arch="pentium9")


def test_same_results_and_checks_on_cpu_and_c():
    f = blur_function()
    img = np.random.default_rng(0).random((70, 141), dtype=np.float32)
    want = f.compile("cpu", fp_contract=False)(img=img)
    kernel = f.compile("c", fp_contract=False, num_threads=2)
    assert np.array_equal(kernel(img=img), want)
    assert "#pragma omp parallel for" in kernel.source("c") and "#pragma omp simd" in kernel.source()
    with pytest.raises(ms.ArgumentError, match=r"img: expected shape"):
        kernel(img=img, H=5)
    with pytest.raises(ValueError, match="unknown source kind 'ptx'"):
        kernel.source("ptx")


# --- ahead-of-time files ------------------------------------------------------------------------

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "axpy_obj.h"
int main(void) {
    const int64_t n = 5, m = 11;
    float a[5 * 11], b[11], out[5 * 11];
    for (int t = 0; t < n * m; t++) a[t] = (float)t * 0.5f;
    for (int t = 0; t < m; t++) b[t] = (float)(t - 3);
    axpy_obj_set_num_threads(2);
    if (axpy_obj(a, b, out, n, m) != 0) return 2;
    for (int t = 0; t < n * m; t++) {
        float want = a[t] * 2.0f + b[t % m];
        if (out[t] != want) { printf("bad %d %f %f\n", t, out[t], want); return 1; }
    }
    void *bufs[3] = {a, b, out};
    int64_t params[2] = {n, m};
    for (int t = 0; t < n * m; t++) out[t] = 0;
    if (axpy_obj_argv(bufs, params) != 0 || out[n * m - 1] != a[n * m - 1] * 2.0f + b[m - 1]) return 3;
    printf("ok\n");
    return 0;
}
"""


def run_driver(tmp_path, code_file, extra=()):
    (tmp_path / "main.c").write_text(DRIVER)
    exe = tmp_path / "main"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(tmp_path / "main.c"), str(code_file), "-I", str(tmp_path),
                    "-fopenmp", "-lm", *extra], check=True, capture_output=True)
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr


@needs_gcc
def test_object_file_links_with_c(tmp_path):
    header = emit_object(axpy(), tmp_path / "axpy_obj.o")
    assert header == str(tmp_path / "axpy_obj.h")
    text = open(header).read()
    assert "int32_t axpy_obj(const float *a, const float *b, float *out, int64_t N, int64_t M);" in text
    run_driver(tmp_path, tmp_path / "axpy_obj.o")


@needs_gcc
def test_object_file_for_another_cpu(tmp_path):
    """`arch=` picks the CPU: x86-64-v3 has AVX2 but no AVX-512 registers."""
    if not shutil.which("objdump"):
        pytest.skip("needs objdump")
    emit_object(axpy(), tmp_path / "v3.o", arch="x86-64-v3")
    disasm = subprocess.run(["objdump", "-d", str(tmp_path / "v3.o")], capture_output=True, text=True).stdout
    assert "ymm" in disasm and "zmm" not in disasm


@needs_gcc
def test_c_source_builds_as_strict_c99_and_links(tmp_path):
    c_file, h_file = get_target("c").write(axpy(), tmp_path / "axpy_obj.c")
    assert h_file == str(tmp_path / "axpy_obj.h")
    # the declarations the header makes are those the source defines
    for flags in (["-fopenmp"], []):
        subprocess.run(["gcc", "-std=c99", "-pedantic-errors", "-Wall", "-Wextra", "-Werror", "-Wno-unknown-pragmas",
                        *flags, "-include", h_file, "-c", c_file, "-o", str(tmp_path / "k.o")],
                       check=True, capture_output=True)
    run_driver(tmp_path, c_file)


@needs_gcc
def test_compile_to_c_of_a_function_matches_its_kernel(tmp_path):
    f = blur_function()
    paths = f.compile_to_c(tmp_path / "blur.c", fp_contract=False)
    assert paths == [str(tmp_path / "blur.c"), str(tmp_path / "blur.h")]
    lib = tmp_path / "libblur.so"
    subprocess.run(["gcc", "-std=c99", "-O2", "-fopenmp", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(lib),
                    paths[0], "-lm"], check=True, capture_output=True)
    fn = ctypes.CDLL(str(lib)).blur_argv
    img = np.random.default_rng(1).random((40, 70), dtype=np.float32)
    out = np.zeros((38, 68), np.float32)
    bufs = (ctypes.c_void_p * 2)(img.ctypes.data, out.ctypes.data)
    params = (ctypes.c_int64 * 2)(38, 68)
    assert fn(bufs, params) == 0
    assert np.array_equal(out, f.compile("cpu", fp_contract=False)(img=img))


@needs_gcc
def test_command_line_writes_c(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("import mascarpone as ms\n"
                       "N = ms.Param('N')\n"
                       "i = ms.Var('i', 0, N)\n"
                       "with ms.Function('twice') as f:\n"
                       "    a = ms.Input('a', [N], ms.int32)\n"
                       "    b = ms.Computation('b', [i], a[i] * 2)\n")
    assert main(["compile", str(program), "--target", "c", "-o", str(tmp_path / "twice.c")]) == 0
    assert "int32_t twice(const int32_t *restrict a, int32_t *restrict b, int64_t N)" in \
        (tmp_path / "twice.c").read_text()
    assert (tmp_path / "twice.h").exists()
    assert main(["compile", str(program), "--target", "nothing"]) == 2
    assert main(["targets"]) == 0
