"""What the CPU back-end emits for a fast sgemm, checked against numpy: prefetches of the next
accumulator tile (backends/common/promote.py, prefetch.py) and the packed, register-blocked hand
schedule of mascarpone/examples.py. No timings are asserted; the code's shape and its values are."""
from __future__ import annotations

import platform
import re
import shutil
import subprocess

import numpy as np
import pytest

import mascarpone as ms
from mascarpone import examples
from mascarpone.backends.common.prefetch import MAX_LINES, Prefetch, line_offsets
from mascarpone.backends.common.promote import promote_accumulators
from mascarpone.backends.cpu.machine import masked_memory
from mascarpone.middleend.autoschedule.machine import simd_bytes
from mascarpone.backends.cpu.vectorize import explicit_simd
from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.expr import Const, Sym, floormod, pseudo_c
from mascarpone.middleend.loopir import Allocate, Block, If, LoweredFunction, Store, walk_stmts
from mascarpone.middleend.types import float64
from test_native_targets import M, N, build, gemm_kernel, k, loop, rng

X86 = platform.machine() in ("x86_64", "AMD64")


def test_line_offsets_cover_every_line_of_the_box():
    # a 6 x 16 float tile: per row its first and last element (one line when aligned, two otherwise)
    offs = line_offsets((6, 16), 4)
    assert sorted(offs) == sorted((r, c) for r in range(6) for c in (0, 15))
    # a row of 40 floats spans 160 bytes: an element every 64 bytes, and the last
    assert line_offsets((40,), 4) == [(0,), (16,), (32,), (39,)]
    # doubles: 8 per line
    assert line_offsets((1, 8), 8) == [(0, 0), (0, 7)]
    # a box needing more than MAX_LINES hints gets none
    assert line_offsets((MAX_LINES + 1, 16), 4) == []


def _promoted_gemm_body(prefetch):
    kern = gemm_kernel("cpu")
    return promote_accumulators(kern.lowered.body, prefetch=prefetch)


def test_promotion_prefetches_the_next_tile_of_the_loop_around():
    body = _promoted_gemm_body(prefetch=True)
    hints = [s for s in walk_stmts(body) if isinstance(s, Prefetch)]
    assert len(hints) == 1
    (hint,) = hints
    assert hint.first.target.name == "C" and hint.extents == (4, 16) and hint.level == 2
    # C[(io + 1) * 4 + 0, jo * 16 + 0]: the tile of the next io, from its first element
    assert "io + 1" in pseudo_c(hint.first.indices[0])
    guards = [s for s in walk_stmts(body) if isinstance(s, If) and hint in list(walk_stmts(s.then))]
    assert guards and "io + 1" in pseudo_c(guards[-1].cond)   # only where a next iteration exists
    assert "prefetch(&C[" in str(body)                          # the loop IR prints it
    assert not any(isinstance(s, Prefetch) for s in walk_stmts(_promoted_gemm_body(prefetch=False)))


@pytest.mark.parametrize("target", ["cpu", "c"])
def test_gemm_with_prefetches_keeps_its_values(target):
    kern = gemm_kernel(target)
    r = rng(17)
    for m, n, kk in [(8, 32, 5), (12, 16, 33), (4, 48, 1), (4, 16, 0), (20, 64, 70)]:
        a = r.standard_normal((m, kk), dtype=np.float32)
        b = r.standard_normal((kk, n), dtype=np.float32)
        np.testing.assert_allclose(kern(A=a, B=b), a @ b, rtol=1e-5, atol=1e-5)
    if target == "c":
        assert "__builtin_prefetch(" in kern.source("c")
        return
    ir_text = kern.source("llvm")
    assert "@llvm.prefetch" in ir_text
    if X86:
        assert "prefetcht1" in kern.source("asm")


def _gemm_with_column_tail(mr=4, width=8):
    """C = A B in float64: 4 x 8 register tiles (rows unrolled, columns a vector loop) and, for the
    last N mod 8 columns, a tile whose vector loop is one partial chunk of floormod(N, 8) lanes."""
    A = Buffer("A", [M, Sym("K")], float64, "input")
    B = Buffer("B", [Sym("K"), N], float64, "input")
    C = Buffer("C", [M, N], float64, "output")
    io, ii = Sym("io"), Sym("ii")
    row = io * mr + ii

    def tile(col, lanes):
        zero = loop("ii", 0, mr, loop("ji", 0, lanes, Store(C, (row, col), Const(0.0, float64)), "vector", width), "unroll", mr)
        upd = Store(C, (row, col), C[row, col] + A[row, k] * B[k, col])
        micro = loop("k", 0, Sym("K"), loop("ii", 0, mr, loop("ji", 0, lanes, upd, "vector", width), "unroll", mr))
        return Block([zero, micro])

    rest = floormod(N, width)
    full = loop("jo", 0, N.__floordiv__(width), tile(Sym("jo") * width + Sym("ji"), width))
    nest = loop("io", 0, M.__floordiv__(mr), Block([full, tile(N - rest + Sym("ji"), rest)]))
    return LoweredFunction("gemm_tail", ["M", "N", "K"], [A, B], [C], nest)


def test_a_register_tile_ending_in_a_partial_vector_stays_in_registers():
    """Where the CPU masks loads and stores, the tile of a loop's last partial vector (floormod(N, 8)
    columns) is rounded up to a whole vector (Buffer.padded_lanes): its chunk loads and stores the
    tile whole, so the tile is registers and the reduction loop stores nothing, as full tiles do."""
    lowered = _gemm_with_column_tail()
    body = promote_accumulators(lowered.body, enters=lambda f: not explicit_simd(f),
                                padded=lambda f: explicit_simd(f))
    tiles = [s.buffer for s in walk_stmts(body) if isinstance(s, Allocate)]
    assert sorted(t.padded_lanes for t in tiles) == [0, 8] and all(t.shape[-1].value == 8 for t in tiles)
    unpadded = promote_accumulators(lowered.body)     # (a back-end that runs partial chunks lane by lane)
    assert [s.buffer.padded_lanes for s in walk_stmts(unpadded) if isinstance(s, Allocate)] == [0]
    kern = build("cpu", lowered)
    r = rng(5)
    for n in range(1, 20):      # every remainder, and none
        a, b = r.standard_normal((8, 7)), r.standard_normal((7, n))
        np.testing.assert_allclose(kern(A=a, B=b), a @ b, rtol=1e-12, atol=1e-12)
    if X86 and masked_memory():
        asm = kern.source("asm")
        reductions = {tuple(b) for b in _loops_with(asm, "vfmadd") + _loops_with(asm, "vmulpd")}  # (contracted or not)
        # the partial tile's reduction is a loop of its own, with masked loads of B's last columns
        assert any("{%k" in x for b in reductions for x in b)
        for body_lines in reductions:   # no store, masked or not, inside a reduction loop
            assert not any(x.startswith("vmov") and "(" in x.split(",")[-1] for x in body_lines), body_lines


def test_a_triangular_register_tile_stays_in_registers():
    """The diagonal tiles of a triangle (covariance's, syrk's): in each copy of the unrolled rows the
    columns are one chunk of `ii + 1` lanes; the 8 x 8 tile is padded, copied in and out over the
    triangle only, and the reduction loop keeps all of it in registers."""
    A = Buffer("A", [Sym("K"), M], float64, "input")
    C = Buffer("C", [M, M], float64, "output")
    io, ii, ji = Sym("io"), Sym("ii"), Sym("ji")
    row, col = io * 8 + ii, io * 8 + ji
    upd = Store(C, (row, col), C[row, col] + A[k, row] * A[k, col])
    micro = loop("k", 0, Sym("K"), loop("ii", 0, 8, loop("ji", 0, ii + 1, upd, "vector", 8), "unroll", 8))
    lowered = LoweredFunction("diagonal", ["M", "K"], [A], [C], loop("io", 0, M.__floordiv__(8), micro))
    body = promote_accumulators(lowered.body, enters=lambda f: not explicit_simd(f),
                                padded=lambda f: explicit_simd(f))
    assert [s.buffer.padded_lanes for s in walk_stmts(body) if isinstance(s, Allocate)] == [8]
    kern = build("cpu", lowered)
    a = rng(6).standard_normal((5, 24))
    block = np.kron(np.eye(3), np.ones((8, 8)))          # the three diagonal blocks
    np.testing.assert_allclose(kern(A=a), np.tril(a.T @ a) * block, rtol=1e-12, atol=1e-12)
    if X86 and masked_memory():
        asm = kern.source("asm")
        reductions = {tuple(b) for b in _loops_with(asm, "vfmadd") + _loops_with(asm, "vmulpd")}
        assert any("{%k" in x for b in reductions for x in b)
        for body_lines in reductions:
            assert not any(x.startswith("vmov") and "(" in x.split(",")[-1] for x in body_lines), body_lines


def _packed_gemm(sizes, vector_bits=None):
    blocks = examples.gemm_packed_blocks(*sizes, vector_bits=vector_bits)
    f, Ap, Bp, Ct, acc, C = examples.gemm_packed(mr=blocks["mr"], nr=blocks["nr"])
    examples.schedule_gemm_packed(Ap, Bp, Ct, acc, C, **blocks)
    return f


def test_register_tile_and_blocks_follow_the_machine():
    assert examples.gemm_register_tile(256) == (6, 16)
    assert examples.gemm_register_tile(512) == (8, 32)
    assert examples.gemm_register_tile() in ((6, 16), (8, 32))
    b = examples.gemm_packed_blocks(2048, 2048, 2048, threads=2, vector_bits=256)
    assert b == dict(mc=96, kc=256, nc=1024, mr=6, nr=16)
    assert examples.gemm_packed_blocks(2048, 2048, 2048, threads=1, vector_bits=256)["nc"] == 2048
    assert examples.gemm_packed_blocks(2048, 2048, 2048, threads=2, vector_bits=512) == dict(
        mc=128, kc=128, nc=1024, mr=8, nr=32)
    # a panel per thread, a multiple of nr, never narrower than one tile
    assert examples.gemm_packed_blocks(100, 200, 100, threads=3, vector_bits=512)["nc"] == 96
    assert examples.gemm_packed_blocks(8, 8, 8, threads=4, vector_bits=256)["nc"] == 16


@pytest.mark.parametrize("n, m, kk", [(130, 70, 300), (96, 256, 256), (7, 33, 5)])
@pytest.mark.parametrize("target", ["cpu", "c"])
@pytest.mark.parametrize("vector_bits", [256, 512])   # both tiles run anywhere (LLVM splits wide vectors)
def test_packed_gemm_hand_schedule_values(target, n, m, kk, vector_bits):
    f = _packed_gemm((n, m, kk), vector_bits)
    kern = f.compile(target, fixed=dict(N=n, M=m, K=kk))
    r = rng(n + m + kk)
    a = r.random((n, kk), dtype=np.float32)
    b = r.random((kk, m), dtype=np.float32)
    c = np.empty((n, m), np.float32)
    kern(A=a, B=b, C=c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)


def test_packed_gemm_inner_kernel_is_register_blocked():
    """The micro-kernel keeps every accumulator in a register: inside the k loop the tile is only
    FMAs, vector loads of the B panel and broadcasts of A, no load or store of C."""
    n = 192
    kern = _packed_gemm((n, n, n)).compile("cpu", fixed=dict(N=n, M=n, K=n))
    ir_text = kern.source("llvm")
    assert "@llvm.prefetch" in ir_text
    if not X86:
        return
    asm = kern.source("asm")
    assert "prefetcht1" in asm
    loops = _loops_with(asm, "vfmadd")
    assert loops, "no FMA loop"
    body = max(loops, key=lambda b: sum("vfmadd" in line for line in b))
    fmas = sum("vfmadd" in line for line in body)
    assert fmas >= 12
    assert not any("(%rsp)" in line for line in body), "an accumulator spilled to the stack"
    stores = [line for line in body if line.split()[0].startswith("vmov") and line.rstrip().endswith(")")]
    assert not stores, f"stores inside the micro-kernel: {stores}"


@pytest.mark.skipif(not X86, reason="x86 code")
def test_packed_gemm_avx512_tile_is_16_zmm_accumulators():
    """Compiled for an AVX-512 CPU (not run): the 8 x 32 tile's k loop holds 16 FMAs on zmm registers
    fed by two loads of B and 8 broadcasts of A (each a vbroadcastss feeding two FMAs, or folded into
    them as an embedded {1to16} broadcast), with nothing spilled."""
    n = 384
    kern = _packed_gemm((n, n, n), 512).compile("cpu", fixed=dict(N=n, M=n, K=n), arch="skylake-avx512")
    body = max(_loops_with(kern.source("asm"), "vfmadd"), key=lambda b: sum("vfmadd" in x for x in b))
    fmas = [x for x in body if x.startswith("vfmadd")]
    assert len(fmas) % 16 == 0 and all("zmm" in x for x in fmas)
    broadcasts = sum(x.startswith("vbroadcastss") for x in body) + sum("{1to16}" in x for x in fmas)
    assert len(fmas) // 2 <= broadcasts <= len(fmas)
    assert not any("(%rsp)" in x for x in body)


@pytest.mark.skipif(not X86 or shutil.which("objdump") is None, reason="x86 code, read with objdump")
def test_packed_gemm_c_kernel_keeps_its_tile_in_registers():
    """GCC, left to itself, turns the copies of a contiguous accumulator tile into memcpy and then keeps
    part of the tile on the stack inside the k loop; the c target's flags prevent that."""
    n = 192
    kern = _packed_gemm((n, n, n), 256).compile("c", fixed=dict(N=n, M=n, K=n))
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", kern.library_path], capture_output=True,
                          text=True, check=True).stdout
    loops = _objdump_loops(dump, "vfmadd")
    assert loops, "no FMA loop"
    body = max(loops, key=lambda b: sum("vfmadd" in x for x in b))
    # the tile's 96 floats: 12 FMAs on ymm registers, or 6 on zmm where GCC targets AVX-512
    lanes = sum({"zmm": 16, "ymm": 8, "xmm": 4}[x.split("%")[-1][:3]] for x in body if "vfmadd" in x)
    assert lanes >= 96
    assert not any("(%rsp)" in x for x in body), "an accumulator lives on the stack"


def _objdump_loops(dump, needle):
    """Instruction lists of objdump's loops (from a backward jump's target to the jump) holding `needle`."""
    rows = []
    for line in dump.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].strip().endswith(":"):
            try:
                rows.append((int(parts[0].strip()[:-1], 16), parts[-1].strip()))
            except ValueError:
                continue
    out = []
    for at, (addr, ins) in enumerate(rows):
        words = ins.split()
        if words and words[0].startswith("j") and len(words) > 1:
            try:
                target = int(words[1], 16)
            except ValueError:
                continue
            if target < addr:
                body = [i for a, i in rows[:at + 1] if a >= target]
                if any(needle in i for i in body):
                    out.append(body)
    return out


def _loops_with(asm, needle):
    """Instruction lists of the innermost loops (a label up to the branch back to it) containing `needle`."""
    lines = [line.strip() for line in asm.splitlines()]
    out = []
    for at, line in enumerate(lines):
        if line.startswith(".LBB") and line.endswith(":"):
            label = line[:-1]
            for end in range(at + 1, len(lines)):
                if lines[end].startswith("j") and lines[end].split()[-1] == label:
                    body = [x for x in lines[at + 1:end + 1] if x and not x.startswith((".", "#"))]
                    if any(needle in x for x in body) and not any(x.startswith(".LBB") for x in lines[at + 1:end]):
                        out.append(body)
                    break
    return out


@pytest.mark.parametrize("dtype", [ms.float32, ms.float64])
def test_reads_a_row_apart_are_transposed_blocks(dtype):
    """s[j] += A[j, i] * r[i] with lanes over j (a row apart in A) and `lanes` values of i unrolled
    inside each vector: the copies' reads are one block of rows of A, loaded as vectors and transposed
    in registers (backends/cpu/transposed.py: 16 x 16 floats, 8 x 8 doubles). numpy's values at sizes
    with tails in both loops; on AVX-512 the loop that adds them loads no lane on its own."""
    lanes = 64 // dtype.bytes
    N, M = ms.Param("N"), ms.Param("M")
    j, i = ms.Var("j", 0, M), ms.Var("i", 0, N)
    with ms.Function("colsum") as f:
        A = ms.Input("A", [M, N], dtype)
        r = ms.Input("r", [N], dtype)
        s = ms.Computation("s", [j], ms.cast(dtype, 0))
        acc = s.update([j, i], s[j] + A[j, i] * r[i])
    j0, j1 = acc.split("j", lanes)
    i0, i1 = acc.split("i", lanes)
    acc.reorder(j0, i0, j1, i1)
    acc.unroll(i1, lanes)
    acc.vectorize(j1, lanes)
    kern = f.compile("cpu")
    rng_ = np.random.default_rng(5)
    for m, n in ((3 * lanes, 4 * lanes), (3 * lanes + 5, 2 * lanes + 3)):
        a = rng_.random((m, n)).astype(dtype.numpy)
        v = rng_.random(n).astype(dtype.numpy)
        np.testing.assert_allclose(kern(A=a, r=v), a @ v, rtol=1e-5)
    if X86 and simd_bytes() >= 64:
        # (lane by lane, the 16 x 16 blocks took 213 lane inserts and no shuffle; the tails still insert)
        asm = kern.source("asm")
        shuffles = len(re.findall(r"^\s*v(unpck|shuf|perm|align)", asm, re.M))
        inserts = len(re.findall(r"^\s*(vinsert(ps|f32x4|f64x2|i32x4)|vpinsr|vmovhps|vmovhpd|vmovlps|vmovlpd)", asm, re.M))
        assert shuffles >= lanes * (lanes.bit_length() - 1) // 2 and inserts < lanes * lanes // 2, (shuffles, inserts)
