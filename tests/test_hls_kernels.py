"""The "hls" target on whole programs: C simulation against numpy (and the cpu target, bit for bit), the
pragmas where the schedule put them, the report's initiation intervals against hand-computed values,
dataflow regions with FIFOs and line buffers, and the Vitis HLS project compile_to_hls writes."""
from __future__ import annotations

import copy
import re
import subprocess
import warnings

import numpy as np
import pytest

import mascarpone as ms
from differential import same_bits
from mascarpone.backends.hls import HLSWarning, latency as LAT, toolchain
from mascarpone.middleend.targets import get_target

pytestmark = pytest.mark.skipif(get_target("hls").missing() is not None,
                                reason=f"hls target: {get_target('hls').missing()}")
rng = np.random.default_rng(7)


def same_as_cpu(f, kernel, fixed=None, **args):
    """The C simulation's outputs, checked bit for bit against the cpu target (no contraction)."""
    ours = kernel(**copy.deepcopy(args))
    cpu = f.compile("cpu", fixed=fixed, fp_contract=False)(**copy.deepcopy(args))
    for a, b in zip(ours if isinstance(ours, tuple) else (ours,), cpu if isinstance(cpu, tuple) else (cpu,)):
        same_bits(a, b, f"{f.name} on hls and cpu")
    return ours


def pragma_after(source, loop_var, pragma):
    """Whether the line right after the header of a loop over `loop_var` is `pragma`."""
    lines = source.splitlines()
    for k, line in enumerate(lines[:-1]):
        if re.search(rf": for \(int64_t {loop_var} = ", line) and lines[k + 1].strip() == pragma:
            return True
    return False


# --- blur: line buffers in a dataflow region ------------------------------------------------------

def blur(partitioned=True, dataflow=True):
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 2)
    with ms.Function("blur_lb") as f:
        img = ms.Input("img", [H + 2, W + 2], ms.float32)
        bx = ms.Computation("bx", [yb, x], (img[yb, x] + img[yb, x + 1] + img[yb, x + 2]) / 3)
        by = ms.Computation("by", [y, x], (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3)
    bx.compute_at(by, x)
    bx.store_root()
    bx.storage_fold(yb, 3)          # three lines: the line buffer
    if partitioned:
        bx.partition(yb, kind="complete")
    by.pipeline(x, 1)
    if dataflow:
        f.dataflow([bx, by])
    return f


def test_blur_line_buffers_in_a_dataflow_region():
    f = blur()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        k = f.compile("hls", fixed={"W": 64})
    img = rng.random((22, 66), dtype=np.float32)
    out = same_as_cpu(f, k, fixed={"W": 64}, img=img)
    bx = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / np.float32(3)
    np.testing.assert_array_equal(out, (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3))
    src = k.source()
    # two stage functions called under DATAFLOW, a FIFO between them, the line buffer in the consumer only
    top = src[src.index("void blur_lb("):]
    assert "#pragma HLS DATAFLOW" in top and 'hls::stream<float> bx("bx");' in top
    assert len(re.findall(r"static void ms_stage_(bx|by)_\d+\(", src)) == 2
    producer = src[src.index("static void ms_stage_bx"):src.index("static void ms_stage_by")]
    consumer = src[src.index("static void ms_stage_by"):src.index("void blur_lb(")]
    assert "bx.write(" in producer and "float bx_1[3][64];" not in producer
    assert "float bx_1[3][64];" in consumer and "bx.read()" in consumer
    assert "#pragma HLS ARRAY_PARTITION variable=bx_1 type=complete dim=1" in consumer
    assert pragma_after(consumer, "x", "#pragma HLS PIPELINE II=1")
    # each stage's first row (three lines per x) is a loop of its own; in the steady state the consumer
    # pops one value per iteration (II=1) while the producer reads img three times through one m_axi
    # port (II=3); the first rows read 3 values of the FIFO (consumer) or 9 of img (producer)
    rep = k.report(show=False, H=20)
    steady = [(r.ii, r.limit) for r in rep.pipelined() if r.entries == 19]
    first = [(r.ii, r.limit) for r in rep.pipelined() if r.entries == 1]
    assert steady == [(3, "m_axi port of img: 3 reads and 0 writes per iteration"), (1, "requested")]
    assert first == [(9, "m_axi port of img: 9 reads and 0 writes per iteration"),
                     (3, "FIFO bx: 3 accesses per iteration")]
    line = rep.buffer("bx")
    assert (line.where, line.shape, line.banks, line.bram18k) == ("on-chip", [3, 64], 3, 3)


def test_blur_line_buffer_without_partition_is_port_bound():
    """One RAM bank of two ports serves the 3 reads and 1 write of the line buffer per iteration: II=2."""
    f = blur(partitioned=False)
    with pytest.warns(HLSWarning, match=r"II=1 .* every 2 cycles: bx: 4 accesses per iteration on 1 bank"):
        k = f.compile("hls", fixed={"W": 32})
    img = rng.random((9, 34), dtype=np.float32)
    same_as_cpu(f, k, fixed={"W": 32}, img=img)
    steady = [r for r in k.report(show=False, H=7).pipelined() if r.entries == 6]
    assert [r.ii for r in steady] == [3, 2]      # the producer still reads img three times


def test_dataflow_stream_between_elementwise_stages_and_refusals():
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("two_stage") as f:
        img = ms.Input("img", [H, W], ms.int32)
        a = ms.Computation("a", [y, x], img[y, x] * 3 + 1)
        b = ms.Computation("b", [y, x], a[y, x] * a[y, x] - img[y, x])
    a.pipeline(x)
    b.pipeline(x)
    f.dataflow([a, b])
    k = f.compile("hls")
    v = rng.integers(-1000, 1000, (5, 7)).astype(np.int32)
    a_ref = v * 3 + 1
    np.testing.assert_array_equal(same_as_cpu(f, k, img=v), a_ref * a_ref - v)
    assert "const int32_t a_in0 = a.read();" in k.source()   # read once, used twice
    assert k.report(show=False).buffer("a").where == "stream"
    # a consumer reading out of order, or twice per element, needs a line buffer: refused, with the fix
    b.interchange(y, x)
    with pytest.raises(ms.ScheduleError, match="b reads a in another order than a writes it; compute a at "
                                               "b's loop with store_root"):
        f.compile("hls")
    with ms.Function("unlisted") as g:
        img = ms.Input("img", [H, W], ms.int32)
        a = ms.Computation("a", [y, x], img[y, x] + 1)
        b = ms.Computation("b", [y, x], a[y, x] * 2)
    g.dataflow([b])
    with pytest.raises(ms.ScheduleError, match="a belongs to no stage"):
        g.compile("hls")


# --- conv2d: an unrolled, partitioned window ------------------------------------------------------

def conv2d(partitioned=True):
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    ky, kx = ms.Var("ky", 0, 3), ms.Var("kx", 0, 3)
    wy, wx = ms.Var("wy", 0, 3), ms.Var("wx", 0, 3)
    yb, xb = ms.Var("y", 0, H + 2), ms.Var("x", 0, W + 2)
    with ms.Function("conv2d") as f:
        img = ms.Input("img", [H + 2, W + 2], ms.float32)
        w = ms.Input("w", [3, 3], ms.float32)
        wl = ms.Computation("wl", [wy, wx], w[wy, wx])                 # the weights on chip
        win = ms.Computation("win", [yb, xb], img[yb, xb])             # the image on chip
        acc = ms.Computation("acc", [y, x], ms.f32(0))
        acc.update([y, x, ky, kx], acc[y, x] + win[y + ky, x + kx] * wl[ky, kx])
        out = ms.Computation("out", [y, x], acc[y, x])
    acc.compute_at(out, x)                 # one accumulator per output: a register
    acc.updates[0].unroll("ky", 3)
    acc.updates[0].unroll("kx", 3)
    out.pipeline(x, 1)
    wl.partition(wy, kind="complete")      # the weights and the accumulator are registers
    wl.partition(wx, kind="complete")
    acc.partition(y, kind="complete")
    acc.partition(x, kind="complete")
    if partitioned:                        # any 3x3 window touches each of the 9 banks once
        win.partition(yb, 3, kind="cyclic")
        win.partition(xb, 3, kind="cyclic")
    return f


def test_conv2d_unrolled_partitioned_window():
    f = conv2d()
    k = f.compile("hls", fixed={"H": 10, "W": 30})
    img = rng.random((12, 32), dtype=np.float32)
    w = rng.random((3, 3), dtype=np.float32)
    out = same_as_cpu(f, k, fixed={"H": 10, "W": 30}, img=img, w=w)
    ref = np.zeros((10, 30), np.float32)
    for ky in range(3):
        for kx in range(3):
            ref = ref + img[ky:ky + 10, kx:kx + 30] * w[ky, kx]
    np.testing.assert_array_equal(out, ref)
    src = k.source()
    assert pragma_after(src, "x", "#pragma HLS PIPELINE II=1")
    assert pragma_after(src, "ky", "#pragma HLS UNROLL") and pragma_after(src, "kx", "#pragma HLS UNROLL")
    assert "#pragma HLS ARRAY_PARTITION variable=win type=cyclic factor=3 dim=1" in src
    assert "#pragma HLS ARRAY_PARTITION variable=win type=cyclic factor=3 dim=2" in src
    rep = k.report(show=False)
    pipelined = rep.pipelined()
    assert pipelined and all(r.ii == 1 for r in pipelined)      # 9 window reads on 9 banks, weights in registers
    assert rep.loop("ky").in_pipeline and rep.loop("ky").trip == 3
    assert rep.buffer("wl").bram18k == 0


def test_conv2d_window_in_one_bank_is_port_bound():
    """9 reads of the window per output on one dual-port RAM: II = ceil(9 / 2) = 5."""
    with pytest.warns(HLSWarning, match="every 5 cycles: win: 9 accesses per iteration on 1 bank"):
        k = conv2d(partitioned=False).compile("hls", fixed={"H": 4, "W": 30})
    assert {r.ii for r in k.report(show=False).pipelined()} == {5}


# --- gemm: a pipelined inner loop over partitioned local tiles --------------------------------------

def gemm(partitioned=True):
    N = ms.Param("N")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, N), ms.Var("k", 0, N)
    with ms.Function("gemm_tiles") as f:
        A = ms.Input("A", [N, N], ms.float32)
        B = ms.Input("B", [N, N], ms.float32)
        Bl = ms.Computation("Bl", [k, j], B[k, j])                  # B on chip
        acc = ms.Computation("acc", [i, j], ms.f32(0))
        upd = acc.update([i, j, k], acc[i, j] + A[i, k] * Bl[k, j])
        C = ms.Computation("C", [i, j], acc[i, j])
    i0, j0, i1, j1 = C.tile(i, j, 8, 8)
    acc.compute_at(C, j0)                                         # an 8x8 tile of accumulators
    upd.reorder("k", "i", "j")                                   # k outside the tile: no recurrence in i
    upd.pipeline("i", 1)                                         # j (8 lanes) unrolled into the pipeline
    if partitioned:
        acc.partition(j, kind="complete")
        Bl.partition(j, 8, kind="cyclic")                         # 8 consecutive columns in 8 banks
    return f


def test_gemm_pipelined_over_partitioned_tiles():
    f = gemm()
    kern = f.compile("hls", fixed={"N": 32})
    A, B = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    C = same_as_cpu(f, kern, fixed={"N": 32}, A=A, B=B)
    ref = np.zeros((32, 32), np.float32)
    for kk in range(32):
        ref = ref + A[:, kk:kk + 1] * B[kk:kk + 1, :]
    np.testing.assert_array_equal(C, ref)
    src = kern.source()
    assert pragma_after(src, "i", "#pragma HLS PIPELINE II=1")
    assert re.search(r"ARRAY_PARTITION variable=acc_tile\w* type=complete dim=2", src)
    rep = kern.report(show=False)
    (loop,) = rep.pipelined()
    # per iteration: 8 accumulators read and written on 8 banks, 1 read of A (m_axi), 8 of the B panel
    assert (loop.ii, loop.trip, loop.entries) == (1, 8, 16 * 32)
    tile = rep.buffer("acc_tile")
    assert tile.shape == [8, 8] and tile.banks == 8 and tile.bram18k == 0


def test_gemm_tile_in_one_bank_is_port_bound():
    """8 reads and 8 writes of the accumulator tile per iteration on one dual-port RAM: II = 16 / 2 = 8."""
    with pytest.warns(HLSWarning, match="every 8 cycles"):
        kern = gemm(partitioned=False).compile("hls", fixed={"N": 16})
    assert kern.report(show=False).pipelined()[0].ii == 8


# --- recurrences: II = ceil(L / d) -------------------------------------------------------------------

def scan(dtype, distance=1, iir=False):
    N = ms.Param("N")
    i, r = ms.Var("i", 0, N), ms.Var("i", distance, N)
    with ms.Function(f"scan_{dtype.name}_{distance}{'_iir' if iir else ''}") as f:
        x = ms.Input("x", [N], dtype)
        s = ms.Computation("s", [i], x[i])
        if iir:
            u = s.update([r], ms.cast(dtype, 0.25) * x[r] + ms.cast(dtype, 0.75) * s[r - distance])
        else:
            u = s.update([r], s[r - distance] + x[r])
    u.pipeline(r, 1)
    return f


@pytest.mark.parametrize("dtype,distance,iir,expected", [
    (ms.int32, 1, False, 1),                                                # integer add: 0 cycles
    (ms.float32, 1, False, LAT.FLOAT[("add", 32)]),                        # 4
    (ms.float64, 1, False, LAT.FLOAT[("add", 64)]),                        # 5
    (ms.float32, 2, False, -(-LAT.FLOAT[("add", 32)] // 2)),               # ceil(4 / 2) = 2
    (ms.float32, 1, True, LAT.FLOAT[("mul", 32)] + LAT.FLOAT[("add", 32)]),  # 3 + 4 = 7
])
def test_recurrence_bounds_the_initiation_interval(dtype, distance, iir, expected):
    f = scan(dtype, distance, iir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = f.compile("hls")
    assert [r.ii for r in k.report(show=False, N=100).pipelined()] == [expected]
    assert bool([w for w in caught if issubclass(w.category, HLSWarning)]) == (expected > 1)
    x = (rng.random(100) * 4).astype(dtype.numpy) if dtype.is_float else rng.integers(-9, 9, 100).astype(np.int32)
    out = same_as_cpu(f, k, x=x)
    if not iir and distance == 1:
        np.testing.assert_array_equal(out, np.cumsum(x, dtype=x.dtype))


def test_impossible_ii_is_refused_when_strict_and_reported():
    f = scan(ms.float32, iir=True)
    with pytest.raises(ms.IllegalScheduleError, match=r"pipelined with II=1 but can start an iteration only "
                                                      r"every 7 cycles: recurrence s_update0 -> s_update0 through s "
                                                      r"\(at distance 1\)"):
        f.compile("hls", strict_ii=True)
    with pytest.warns(HLSWarning):
        rep = f.compile("hls").report(show=False, N=1000)
    (loop,) = rep.pipelined()
    assert (loop.requested_ii, loop.ii, loop.trip) == (1, 7, 999)
    assert "recurrence" in loop.limit and "II=1 requested, 7 achievable" in str(rep)
    # latency of a pipeline: (trip - 1) * II + depth + 1, depth = loads, fmul, fadd, store
    depth = LAT.LOAD_OFF_CHIP + LAT.FLOAT[("mul", 32)] + LAT.FLOAT[("add", 32)] + LAT.STORE
    assert loop.latency == 998 * 7 + depth + 1


# --- a uint8 Halide pipeline, bit-exact; a Julia kernel ------------------------------------------------

def test_halide_cvtcolor_uint8_bit_exact():
    hl = pytest.importorskip("halide")
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 3, "rgb")
    gray = hl.Func("gray")
    v = lambda ch: hl.cast(hl.UInt(32), inp[x, y, ch])    # noqa: E731
    gray[x, y] = hl.cast(hl.UInt(8), (v(2) * 1868 + v(1) * 9617 + v(0) * 4899 + 8192) / 16384)
    gray.vectorize(x, 8)
    f = ms.from_halide(gray)
    c = f.outputs()[0]                   # (Halide names it gray_1 if another test made a "gray")
    c.pipeline(c.loops[-2], 1)           # the loop around the 8 vector lanes
    k = f.compile("hls")
    image = rng.integers(0, 256, (3, 23, 40), dtype=np.uint8)
    inp.set(hl.Buffer(image))
    want = np.asarray(gray.realize([40, 23]))
    got = k.realize([40, 23], rgb=image)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    r = image.astype(np.uint32)
    np.testing.assert_array_equal(got, ((r[2] * 1868 + r[1] * 9617 + r[0] * 4899 + 8192) // 16384).astype(np.uint8))
    src = k.kernel.source()
    assert pragma_after(src, c.loops[-2], "#pragma HLS PIPELINE II=1")
    assert pragma_after(src, c.loops[-1], "#pragma HLS UNROLL")  # the 8 vector lanes are parallel copies
    # 8 lanes x 3 channels: 24 reads of rgb per iteration through its one m_axi port
    assert [(r.ii, r.limit) for r in k.kernel.report(show=False).pipelined()] == [
        (24, "m_axi port of rgb: 24 reads and 0 writes per iteration")]


def test_julia_gemm_kernel():
    from julia_fixtures import fixture, random_args
    from mascarpone.frontends.julia import interpret
    text, argtypes = fixture("gemm")
    f = ms.from_julia(text, argtypes)
    f["s49"].pipeline("j", 1)
    kernel = f.compile("hls")
    args = random_args(argtypes, 3, 9)
    ours = copy.deepcopy(args)
    interpret(text, argtypes, *args)
    kernel(*ours)
    np.testing.assert_array_equal(ours[0], args[0])     # C, bit for bit (no contraction on either side)
    assert pragma_after(kernel.kernel.source(), "j", "#pragma HLS PIPELINE II=1")


# --- sizes, interfaces, the project for vitis_hls -------------------------------------------------------

def test_interfaces_symbolic_temporaries_go_off_chip():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("offchip") as f:
        a = ms.Input("a", [N], ms.float64)
        t = ms.Computation("t", [i], a[i] * 2.0)
        ms.Computation("o", [i], t[N - 1 - i] + 1.0)
    k = f.compile("hls")
    src = k.source()
    for port, bundle in (("a", "gmem0"), ("o", "gmem1"), ("t", "gmem2")):
        assert f"#pragma HLS INTERFACE mode=m_axi port={port} offset=slave bundle={bundle}" in src
    assert "#pragma HLS INTERFACE mode=s_axilite port=N" in src
    assert "#pragma HLS INTERFACE mode=s_axilite port=return" in src
    assert "void offchip(const double *a, double *o, double *t, int64_t N)" in src
    v = rng.random(11)
    np.testing.assert_array_equal(same_as_cpu(f, k, a=v), v[::-1] * 2 + 1)
    assert k.report(show=False, N=11).buffer("t").where == "off-chip temporary"
    # fixed sizes put it on chip, a C array of constant size
    kf = f.compile("hls", fixed={"N": 11})
    assert "double t[11];" in kf.source() and kf.report(show=False).buffer("t").where == "on-chip"
    np.testing.assert_array_equal(kf(a=v), v[::-1] * 2 + 1)
    with pytest.raises(ms.ArgumentError, match="compiled for N = 11"):
        kf(a=rng.random(12))
    with pytest.raises(ms.ArgumentError, match="expected shape"):
        k(a=v.astype(np.float32))


def test_compile_to_hls_project_runs_its_testbench(tmp_path):
    f = blur()
    img = rng.random((10, 34), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HLSWarning)
        paths = f.compile_to_hls(tmp_path, fixed={"W": 32}, data={"img": img})
    names = {p.split("/")[-1] for p in paths}
    assert {"blur_lb.cpp", "blur_lb.h", "blur_lb_tb.cpp", "run_hls.tcl", "img.bin", "by.bin", "sizes.txt"} <= names
    tcl = (tmp_path / "run_hls.tcl").read_text()
    for command in ("set_top blur_lb", "csim_design", "csynth_design", "cosim_design", "create_clock -period 3.33"):
        assert command in tcl
    assert "depth=340" in (tmp_path / "blur_lb.cpp").read_text()     # the m_axi depth of img for co-simulation
    build = subprocess.run([toolchain.cxx_compiler(), "-std=c++14", "-O1", "-Wno-unknown-pragmas",
                            f"-I{toolchain.header_dir()}", "blur_lb.cpp", "blur_lb_tb.cpp", "-o", "tb"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["./tb", "data"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0 and "PASS" in run.stdout
    # the testbench checks: a wrong expected output fails it
    want = np.fromfile(tmp_path / "data" / "by.bin", np.float32)
    want[5] += 1
    want.tofile(tmp_path / "data" / "by.bin")
    run = subprocess.run(["./tb", "data"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 1 and "FAIL: 1 elements differ" in run.stdout


def test_partition_arguments_are_checked():
    f = blur()
    with pytest.raises(ms.ScheduleError, match="kind must be one of cyclic, block, complete"):
        f["by"].partition(0, 2, kind="diagonal")
    with pytest.raises(ms.ScheduleError, match="needs a positive integer factor"):
        f["by"].partition("x", 0)
    with pytest.raises(ms.ScheduleError, match="has no dimension 'z'"):
        f["by"].partition("z", 2)
