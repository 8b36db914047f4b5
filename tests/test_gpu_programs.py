"""Programs scheduled for the GPU (gpu_tile, shared and constant memory, host loops) on "opencl" against
"cpu" bit for bit and against numpy, every kernel also compiled as CUDA to PTX for sm_80 and sm_90."""
from __future__ import annotations

import re

import numpy as np
import pytest

import mascarpone as ms
from mascarpone import examples

from gpu_check import CUDA_DEVICE, OPENCL_MISSING, check_ptx, device, needs_opencl, require, run_gpu  # noqa: F401

rng = np.random.default_rng(7)


def blur_reference(img):
    bx = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


def shared_blur():
    """The two-stage blur: 8 x 32 tiles of by, each with its 10 x 32 tile of bx computed by the block's
    threads into shared memory."""
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.gpu_tile("y", "x", 8, 32)
    bx.compute_at(by, x0)
    bx.gpu([], ["y", "x"])
    return f


@pytest.mark.parametrize("h,w", [(64, 64), (29, 37)])   # the second divides neither tile size
def test_blur_with_a_shared_memory_producer(h, w):
    img = rng.random((h + 2, w + 2), dtype=np.float32)
    k, out = run_gpu(shared_blur(), img=img)
    np.testing.assert_allclose(out, blur_reference(img), rtol=1e-6)
    src = k.source("opencl")
    assert "__local float" in src and "barrier(" in src
    assert len(k.kernels) == 1


def sgemm(tile=16):
    """C = A @ B in tile x tile thread blocks; per tile of k, A's and B's tiles staged in shared memory; each
    thread's element accumulated in a register over the tile."""
    f, C, acc = examples.gemm()
    C.gpu_tile("i", "j", tile, tile)
    acc.gpu_tile("i", "j", tile, tile)
    k0, k1 = acc.split("k", tile)
    acc.reorder("i0", "j0", k0, "i1", "j1", k1)
    A, B = f.inputs
    acc.cache_shared(A, at=k0)
    acc.cache_shared(B, at=k0)
    return f


@pytest.mark.parametrize("n,m,kk", [(32, 48, 64), (37, 29, 23)])
def test_sgemm_shared_tiles_and_register_accumulator(n, m, kk):
    a = rng.random((n, kk), dtype=np.float32)
    b = rng.random((kk, m), dtype=np.float32)
    k, out = run_gpu(sgemm(), A=a, B=b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    src = k.source("opencl")
    assert "__local float A_shared_tile[256]" in src and "__local float B_shared_tile[256]" in src
    assert "float C_acc" in src.replace(".", "_")     # the accumulator, a private (register) value
    assert len(k.kernels) == 2                        # C's initialisation, then the product


def conv2d():
    H, W, CI, CO = (ms.Param(p) for p in ("H", "W", "CI", "CO"))
    co, y, x = ms.Var("co", 0, CO), ms.Var("y", 0, H), ms.Var("x", 0, W)
    ci, ky, kx = ms.Var("ci", 0, CI), ms.Var("ky", 0, 3), ms.Var("kx", 0, 3)
    with ms.Function("conv2d") as f:
        inp = ms.Input("inp", [CI, H + 2, W + 2], ms.float32)
        w = ms.Input("w", [CO, CI, 3, 3], ms.float32)
        out = ms.Computation("out", [co, y, x], ms.f32(0))
        acc = out.update([co, y, x, ci, ky, kx], out[co, y, x] + inp[ci, y + ky, x + kx] * w[co, ci, ky, kx])
    w.gpu_constant()
    out.gpu_tile("y", "x", 8, 16)
    acc.gpu_tile("y", "x", 8, 16)
    acc.reorder("co", "y0", "x0", "y1", "x1", "ci", "ky", "kx")
    out.gpu([], [])   # co stays a host loop around the launches
    return f


def conv2d_reference(inp, w):
    """conv2d's values by numpy."""
    h, wd = inp.shape[1] - 2, inp.shape[2] - 2
    ref = np.zeros((w.shape[0], h, wd), np.float32)
    for dy in range(3):
        for dx in range(3):
            ref += np.einsum("chw,oc->ohw", inp[:, dy:dy + h, dx:dx + wd], w[:, :, dy, dx])
    return ref


def test_conv2d_with_weights_in_constant_memory():
    I = rng.random((3, 14, 23), dtype=np.float32)
    Wt = rng.random((4, 3, 3, 3), dtype=np.float32)
    k, out = run_gpu(conv2d(), inp=I, w=Wt)
    np.testing.assert_allclose(out, conv2d_reference(I, Wt), rtol=1e-5)
    assert "__constant float *restrict w" in k.source("opencl")
    assert "__constant__ float w[" in check_ptx(conv2d()).source("cuda")
    # the 3 x 3 taps are unrolled (straight-line code in each thread), the loop over CI channels is not
    src = k.source("opencl")
    assert unrolled(src, "ky") and unrolled(src, "kx") and not unrolled(src, "ci")


def unrolled(source, var):
    """Whether the loop over `var` in `source` is marked for complete unrolling."""
    lines = [line.strip() for line in source.splitlines()]
    heads = [k for k, line in enumerate(lines) if line.startswith(f"for (int64_t {var} =")]
    assert heads, f"no loop over {var}"
    return all(lines[k - 1] == "#pragma unroll" for k in heads)


def test_only_small_constant_loop_nests_inside_threads_are_unrolled():
    N = ms.Param("N")
    i, r = ms.Var("i", 0, N), ms.Var("r", 0, 300)
    with ms.Function("window") as f:
        a = ms.Input("a", [N + 300], ms.float32)
        s = ms.Computation("s", [i], ms.f32(0))
        acc = s.update([i, r], s[i] + a[i + r])
    s.gpu_tile("i", 32)
    acc.gpu_tile("i", 32)
    x = rng.random(70, dtype=np.float32)
    k, out = run_gpu(f, a=np.concatenate([x, np.zeros(300, np.float32)]))
    np.testing.assert_allclose(out, [x[j:].sum() for j in range(70)], rtol=1e-5)
    assert not unrolled(k.source("opencl"), "r")   # 300 statements: more than UNROLL_LIMIT


def heat2d():
    f, u, step = examples.heat2d()
    u.gpu_tile("y", "x", 8, 8)
    step.gpu_tile("y", "x", 8, 8)
    return f


def test_heat2d_host_time_loop_launches_a_kernel_per_step():
    a = rng.random((13, 13))
    k, out = run_gpu(heat2d(), A=a, T=5)
    ref = a.copy()
    for _ in range(5):
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:])
        ref = nxt
    np.testing.assert_allclose(out[5 % 2], ref, rtol=1e-12)
    assert k.profile().launches >= 6     # the first plane, then at least one launch per step


def heat2d_reference(a, steps):
    ref = a.copy()
    for _ in range(steps):
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:])
        ref = nxt
    return ref


def test_repeated_calls_with_other_sizes_data_and_device_arrays(device):
    """A call replays the host program worked out for its sizes and sets only the kernel arguments that
    changed: calls that alternate sizes, inputs and device arrays each get their own result."""
    k = heat2d().compile(device.target, fp_contract=False)
    ref = heat2d().compile("cpu", fp_contract=False)
    cases = [(rng.random((13, 13)), 5), (rng.random((21, 9 + 12)), 3), (rng.random((13, 13)), 5),
             (rng.random((13, 13)), 4), (rng.random((8, 8)), 1)]
    for a, steps in cases:
        out = k(A=a, T=steps)
        np.testing.assert_array_equal(out, ref(A=a.copy(), T=steps))
        np.testing.assert_allclose(out[steps % 2], heat2d_reference(a, steps), rtol=1e-12)
        assert k.profile().launches >= steps + 1
    assert len(k._traces) == 4    # one host program per distinct sizes
    # device arrays: two inputs of the same size in turn, outputs given and allocated
    a1, a2 = rng.random((13, 13)), rng.random((13, 13))
    d1, d2 = device.to_device(a1), device.to_device(a2)
    given = device.empty((2, 13, 13), np.float64)
    for d, a in ((d1, a1), (d2, a2), (d1, a1)):
        out = k(A=d, T=5)
        np.testing.assert_array_equal(out.get(), ref(A=a.copy(), T=5))
        assert k(A=d, T=5, u=given) is given
        np.testing.assert_array_equal(given.get(), out.get())
        assert k.profile().upload_ms == 0 and k.profile().download_ms == 0
    # a host program longer than the kernel keeps is worked out at each call, with the same results
    k.KEEP_STEPS = 3
    a = rng.random((10, 10))
    for _ in range(2):
        np.testing.assert_array_equal(k(A=a, T=7), ref(A=a.copy(), T=7))
    assert (a.shape[0],) not in [key[:1] for key in k._traces]


@pytest.mark.parametrize("target", ["opencl", "cuda"])
def test_profile_describes_the_last_call(target):
    require(target)
    k = heat2d().compile(target)
    a = rng.random((16, 16))
    k(A=a, T=6)
    first = k.profile()
    k(A=a, T=2)
    second = k.profile()
    # the first plane, then the step's two kernels at each step
    assert first.launches == 1 + 2 * 6 and second.launches == 1 + 2 * 2
    assert [e[:2] for e in second.events] == [("upload", "A"), ("kernel", "heat2d_k0")] + \
        [("kernel", "heat2d_k1"), ("kernel", "heat2d_k2")] * 2 + [("download", "u")]
    assert second.kernel_ms == sum(ms for kind, _, ms in second.events if kind == "kernel") > 0
    assert "5 launch(es)" in str(second)


def triangular():
    """L = 2 A on the lower triangle (j <= i), 4x8 GPU tiles."""
    N = ms.Param("N")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, N)
    with ms.Function("tri") as f:
        A = ms.Input("A", [N, N], ms.float64)
        L = ms.Computation("L", [i, j], A[i, j] * 2.0, where=(j <= i))
    L.gpu_tile("i", "j", 4, 8)
    return f


def test_triangular_domain():
    f = triangular()
    a = np.arange(19.0 * 19).reshape(19, 19)
    _, out = run_gpu(f, A=a)
    np.testing.assert_array_equal(out, np.tril(a * 2))


def test_guards_only_where_a_launch_runs_past_a_loops_end():
    # i0's trip count is the grid's (sizes only); j0's depends on i0, and the thread loops end in partial tiles
    guarded = re.findall(r"const bool ms_in\d+ = (\w+) <", triangular().compile("opencl").source("opencl"))
    assert guarded == ["j0", "i1", "j1"] * 2     # (in the 64-bit and the 32-bit variant)


def test_a_call_with_the_last_calls_device_arrays(device):
    """A call given the same device arrays as the last one skips their checks, yet reads their current
    contents and zeroes again an output the kernel leaves partly unwritten."""
    f = triangular()
    k = f.compile(device.target)
    a = np.arange(19.0 * 19).reshape(19, 19)
    d_a, d_out = device.to_device(a), device.empty((19, 19), np.float64)
    args = {"A": d_a, "L": d_out, "N": 19}
    for step in range(3):
        d_out.fill(7.0)                  # the part above the diagonal is zeroed again at each call
        d_a.set(a + step)                # and the input's new contents are read
        assert k(**args) is d_out
        np.testing.assert_array_equal(d_out.get(), np.tril((a + step) * 2))
    with pytest.raises(ms.ArgumentError, match=r"A: expected shape \(18, 18\)"):
        k(A=d_a, L=d_out, N=18)          # another size: checked again
    small = device.to_device(a[:5, :5].copy())
    np.testing.assert_array_equal(k(A=small).get(), np.tril(a[:5, :5] * 2))


def two_stages():
    """t = 3 A in a device temporary, out = t + t[i, N-1-j]; both 4x8 GPU tiles, two launches."""
    N = ms.Param("N")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, N)
    with ms.Function("two_stages") as f:
        A = ms.Input("A", [N, N], ms.float32)
        t = ms.Computation("t", [i, j], A[i, j] * 3.0)
        out = ms.Computation("out", [i, j], t[i, j] + t[i, N - 1 - j], output=True)
    t.gpu_tile("i", "j", 4, 8)
    out.gpu_tile("i", "j", 4, 8)
    return f


def test_a_repeated_call_runs_the_last_calls_launches_again(device):
    """A call with the very device arrays of the last one repeats its launches on the same temporaries;
    where the runtime's pool holds other buffers by then (another kernel of a shared runtime took them), it
    is bound afresh. Each call's profile lists its own launches."""
    k = two_stages().compile(device.target)
    a = rng.random((24, 24), dtype=np.float32)
    want = lambda a: a * 3 + (a * 3)[:, ::-1]    # noqa: E731
    d_a, d_out = device.to_device(a), device.empty((24, 24), np.float32)
    k(A=d_a, out=d_out)
    replay = k._replay
    assert replay is not None and replay.allocs and len(replay.launches) == 2
    for step in range(3):
        d_a.set(a + step)
        assert k(A=d_a, out=d_out) is d_out and k._replay is replay
        np.testing.assert_allclose(d_out.get(), want(a + step), rtol=1e-6)
        assert [e[:2] for e in k.profile().events] == [("kernel", "two_stages_k0"), ("kernel", "two_stages_k1")]
    (nbytes, temporary), = replay.allocs
    rt = k.runtime
    assert rt.free[nbytes].popleft() is temporary      # taken: the next call gets another buffer
    b = rng.random((24, 24), dtype=np.float32)
    d_a.set(b)
    np.testing.assert_allclose(k(A=d_a, out=d_out).get(), want(b), rtol=1e-6)
    assert k._replay is not replay and k._replay.allocs[0][1] is not temporary
    # numpy arrays are copied at each call, and such a call is not repeated
    np.testing.assert_allclose(k(A=b), want(b), rtol=1e-6)
    assert k._replay is None


def nb():
    """nb: f = 255 - in, g = 2 * in, h = f + g, k = f - g; f and g inlined, h and k fused in one kernel."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("nb") as fn:
        inp = ms.Input("inp", [H, W], ms.int32)
        f = ms.Computation("f", [y, x], 255 - inp[y, x])
        g = ms.Computation("g", [y, x], 2 * inp[y, x])
        h = ms.Computation("h", [y, x], f[y, x] + g[y, x], output=True)
        k = ms.Computation("k", [y, x], f[y, x] - g[y, x], output=True)
    f.inline()
    g.inline()
    h.gpu_tile("y", "x", 8, 32)
    k.gpu_tile("y", "x", 8, 32)
    k.after(h, "x1")
    return fn


def test_nb_four_stages_fused_in_one_kernel():
    a = rng.integers(0, 255, (21, 70)).astype(np.int32)
    k, (h, kk) = run_gpu(nb(), inp=a)
    np.testing.assert_array_equal(h, 255 - a + 2 * a)
    np.testing.assert_array_equal(kk, 255 - a - 2 * a)
    assert len(k.kernels) == 1


def launched_entries(k):
    """The entry points the host program of `k`'s last sizes launched (the 32-bit variants end in _i32)."""
    steps = k._traces[next(reversed(k._traces))]
    return [s.kernel.entry_point for s in steps if hasattr(s, "kernel")]


def test_index_arithmetic_in_32_bits_where_the_sizes_prove_it_fits(monkeypatch):
    from mascarpone.backends.gpu.opencl import default_runtime
    a = rng.integers(0, 255, (21, 70)).astype(np.int32)
    k, _ = run_gpu(nb(), inp=a)
    runtime = default_runtime()
    # a CPU device (PoCL) keeps 64-bit index arithmetic, a GPU takes the 32-bit variant
    assert runtime.narrow_indices == (not runtime.device.type & runtime.cl.device_type.CPU)
    assert launched_entries(k) == ["nb_k0_i32" if runtime.narrow_indices else "nb_k0"]
    monkeypatch.setattr(runtime, "narrow_indices", True)     # as on a GPU: the 32-bit variant runs here too
    k, _ = run_gpu(nb(), inp=a)
    assert launched_entries(k) == ["nb_k0_i32"]
    assert "const int32_t y1 = " in k.source("opencl") and "const int64_t y1 = " in k.source("opencl")
    # a size beyond int32 (the kernel's sizes are int64 arguments): the launch takes the 64-bit variant
    N, K = ms.Param("N"), ms.Param("K")
    i = ms.Var("i", 0, N)
    with ms.Function("offset") as f:
        x = ms.Input("x", [N], ms.int64)
        out = ms.Computation("out", [i], x[i] + ms.cast(ms.int64, K))   # (K is an int32 in expressions)
    out.gpu_tile("i", 32)
    for value, entry in ((5, "offset_k0_i32"), (2**40 + 3, "offset_k0")):
        k, got = run_gpu(f, x=np.arange(40), K=value)
        np.testing.assert_array_equal(got, np.arange(40) + np.int64(np.int32(value % 2**32)))
        assert launched_entries(k) == [entry]


def test_32_bit_proof_counts_offsets_and_blocks_past_the_end():
    """The proof at sizes too large to allocate here: nb's offsets reach H*W - 1."""
    from mascarpone.backends.gpu.host import launch_shape
    from mascarpone.backends.gpu.narrow import indices_fit_int32
    k = nb().compile("cuda" if OPENCL_MISSING else "opencl")
    kernel = k.kernels["nb_k0"]
    buffers = list(k.lowered.arguments)

    def fits(h, w):
        env = {"H": h, "W": w}
        return indices_fit_int32(kernel, buffers, env, *launch_shape(kernel.spec, env))
    assert fits(40000, 40000)                # 1.6e9 elements
    assert not fits(50000, 50000)            # 2.5e9: past int32
    assert fits(8, 2**28 - 32)               # offsets up to 8 W - 1 < 2^31
    assert not fits(8, 2**28)                # 2^31 elements
    # 9 rows: the second block's 8 rows of threads (7 past the end, whose variables the kernel computes) are
    # counted, up to offset 16 W - 1
    assert fits(9, 2**27 - 32) and not fits(9, 2**27 + 32)


def test_illegal_gpu_tag_on_a_loop_carrying_a_dependence():
    N = ms.Param("N")
    i = ms.Var("i", 1, N)
    ia = ms.Var("i", 0, N)
    with ms.Function("scan") as f:
        a = ms.Input("a", [N], ms.float32)
        s = ms.Computation("s", [ia], a[ia])
        step = s.update([i], s[i - 1] + a[i])
    i0, i1 = step.gpu_tile("i", 16)
    with pytest.raises(ms.IllegalScheduleError, match=r"loop i\d of s_update0 is tagged gpu_(block|thread) but "
                                                      r"carries a read-after-write dependence.*gpu_tile"):
        f.compile("opencl")


def test_gpu_tags_that_cannot_form_a_launch_are_refused():
    f, bx, by = examples.blur()
    by.gpu(["x"], ["y"])
    with pytest.raises(ms.ScheduleError, match=r"thread loop y is outside its block loop x.*by.gpu\(\[x\], \[y\]\)"):
        f.lower()
    f, bx, by = examples.blur()
    with pytest.raises(ms.ScheduleError, match="at most 3 block"):
        by.gpu(["y", "x", "y", "x"])


@needs_opencl
def test_thread_block_larger_than_the_device_is_refused_at_compile_time():
    f, bx, by = examples.blur()
    by.gpu_tile("y", "x", 128, 128)
    with pytest.raises(ms.TargetError, match=r"16384 threads is more than the device's limit of \d+ threads"):
        f.compile("opencl")
    with pytest.raises(ms.TargetError, match="limit of 1024 threads per block"):
        f.compile("cuda")


def test_cuda_compiles_without_a_gpu_and_says_so_when_called():
    k = check_ptx(shared_blur())
    assert "__shared__ float" in k.source("cuda") and "__syncthreads();" in k.source("cuda")
    assert ".entry blur_k0" in k.source("ptx")
    from mascarpone.backends.gpu.cuda import device_arch, to_device
    with pytest.raises(ms.ArgumentError, match="arrays of numbers or bools, not <U1"):
        to_device(np.array(["a", "b"]))
    if device_arch() is None:
        with pytest.raises(ms.TargetError, match="no CUDA device"):
            k(img=np.zeros((10, 10), np.float32))


def test_device_arrays_in_and_out_without_copies_and_profile(device):
    img = rng.random((34, 50), dtype=np.float32)
    k = shared_blur().compile(device.target)
    d_img = device.to_device(img)
    out = k(img=d_img)
    assert isinstance(out, device.array_type)
    p = k.profile()
    assert p.upload_ms == 0 and p.download_ms == 0 and p.launches == 1 and p.kernel_ms > 0
    np.testing.assert_allclose(out.get(), blur_reference(img), rtol=1e-6)
    host = k(img=img)    # numpy in, numpy out: copies both ways, timed apart
    np.testing.assert_array_equal(host, out.get())
    p = k.profile()
    assert p.upload_ms > 0 and p.download_ms > 0 and p.transfer_ms == p.upload_ms + p.download_ms
    given = device.empty((32, 48), np.float32)
    assert k(img=d_img, by=given) is given
    with pytest.raises(ms.ArgumentError, match=r"by: expected shape \(32, 48\) and dtype float32"):
        k(img=d_img, by=device.empty((32, 48), np.float64))


def test_several_launches_and_one_thread_kernels():
    """Statements outside the block loops run in one-thread kernels between launches."""
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("steps") as f:
        a = ms.Input("a", [N], ms.int64)
        b = ms.Computation("b", [i], a[i] * 3)
        c = ms.Computation("c", [i], b[i] + b[N - 1 - i])
        d = ms.Computation("d", [i], c[i] - 1)
    b.gpu_tile("i", 32)
    d.gpu_tile("i", 8)
    x = rng.integers(-1000, 1000, 77)
    k, out = run_gpu(f, a=x)
    np.testing.assert_array_equal(out, x * 3 + x[::-1] * 3 - 1)
    assert len(k.kernels) == 3 and k.kernels["steps_k1"].spec.single


@pytest.mark.parametrize("kernel", ["gemm", "jacobi2d"])
def test_julia_functions_with_gpu_tags(kernel):
    """Julia kernels read from their printed lowered IR, tagged for the GPU, against the reference
    interpreter (Julia's arrays stay column-major on the device)."""
    import copy

    from julia_fixtures import fixture, random_args
    from mascarpone.julia import interpret
    text, argtypes = fixture(kernel)
    f = ms.from_julia(text, argtypes)
    if kernel == "gemm":
        f["s49"].after(f["s22"], ms.root)
        f["s49"].reorder("j", "i", "k")
        f["s49"].gpu_tile("j", "i", 4, 8)
        f["s22"].interchange("i", "j")
        f["s22"].gpu_tile("j", "i", 4, 8)
    else:
        for s in ("s39", "s79"):     # the time loop t stays on the host: two launches per step
            f[s].gpu_tile("j", "i", 4, 4)
    check_ptx(f)
    targets = ([] if OPENCL_MISSING else ["opencl"]) + (["cuda"] if CUDA_DEVICE else [])
    if not targets:
        pytest.skip(f"no OpenCL here ({OPENCL_MISSING}) and no CUDA device")
    args = random_args(argtypes, 0, 9)
    want = copy.deepcopy(args)
    interpret(text, argtypes, *want)
    for target in targets:
        ours = copy.deepcopy(args)
        f.compile(target, fp_contract=False)(*ours)
        for r, o in zip(want, ours):
            if isinstance(r, np.ndarray):
                np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-14, err_msg=f"on {target}")


def test_no_opencl_platform_is_a_clear_error(monkeypatch):
    """Where the ICD loader finds no platform, the target says what is missing and how to install it."""
    cl = pytest.importorskip("pyopencl")
    from mascarpone.backends.gpu import opencl
    monkeypatch.setattr(cl, "get_platforms", lambda: [])
    f, bx, by = examples.blur()
    by.gpu_tile("y", "x", 8, 8)
    with pytest.raises(ms.TargetError, match=r"target 'opencl' cannot run here: an OpenCL platform with a device.*"
                                             r"pocl-opencl-icd"):
        f.compile("opencl")
    assert "pocl-opencl-icd" in str([t for t in ms.targets() if t.name == "opencl"][0].install)
    assert opencl.missing() is not None


def test_producer_rows_per_block_in_device_memory():
    """Blocks over rows, threads over a row of any width: each block's three rows of bx (a size known only
    at the call) live in a slice of a device buffer; bx's own loop y is not the block loop y."""
    f, bx, by = examples.blur()
    by.gpu(["y"], ["x"])
    bx.compute_at(by, "y")
    bx.gpu([], ["x"])
    img = rng.random((21, 52), dtype=np.float32)
    k, out = run_gpu(f, img=img)
    np.testing.assert_allclose(out, blur_reference(img), rtol=1e-6)
    assert "bx_tile_all + " in k.source("opencl")


def test_three_dimensional_gpu_tile():
    D, H, W = ms.Param("D"), ms.Param("H"), ms.Param("W")
    z, y, x = ms.Var("z", 0, D), ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("vol") as f:
        a = ms.Input("a", [D + 1, H, W], ms.int16)
        out = ms.Computation("out", [z, y, x], a[z, y, x] * a[z + 1, y, x] - ms.cast(ms.int16, x))
    loops = out.gpu_tile("z", "y", "x", 2, 4, 8)
    assert [out.tags.get(lp.name, ("serial",))[0] for lp in loops] == ["gpu_block"] * 3 + ["gpu_thread"] * 3
    v = rng.integers(-300, 300, (6, 7, 19)).astype(np.int16)
    k, got = run_gpu(f, a=v)
    np.testing.assert_array_equal(got, v[:-1] * v[1:] - np.arange(19, dtype=np.int16))
    assert "get_group_id(2)" in k.source("opencl") and "get_local_id(2)" in k.source("opencl")


def test_cache_shared_and_gpu_tag_errors_name_the_problem():
    f, C, acc = examples.gemm()
    A, B = f.inputs
    k0, k1 = acc.split("k", 16)
    with pytest.raises(ms.ScheduleError, match="no gpu_thread loops inside k0"):
        acc.cache_shared(A, at=k0)
    with pytest.raises(ms.ScheduleError, match="does not read C_update0|cannot cache its own storage"):
        acc.cache_shared(C, at=k0)
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 8, 8)
    by.gpu([y0], [y1, x1])    # a serial loop (x0) between the block and the thread loops is fine
    img = rng.random((21, 30), dtype=np.float32)
    _, out = run_gpu(f, img=img)
    np.testing.assert_allclose(out, blur_reference(img), rtol=1e-6)
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 8, 8)
    by.gpu([y0, y1], [x1])
    with pytest.raises(ms.ScheduleError, match=r"gpu_block loops \['y0', 'y1'\] are not adjacent \(loop x0"):
        f.lower()


@pytest.mark.skipif(CUDA_DEVICE is None, reason="no CUDA device here: CUDA kernels are compiled to PTX only")
def test_cuda_launches_the_32_bit_variant_and_takes_other_libraries_device_arrays():
    """On a GPU the launch takes the 32-bit index variant where the sizes allow; arrays of another library
    with __cuda_array_interface__ (CuPy here, where installed) go in and out without copies."""
    a = rng.integers(0, 255, (21, 70)).astype(np.int32)
    k = nb().compile("cuda")
    h, kk = k(inp=a)
    np.testing.assert_array_equal(h, 255 + a)
    np.testing.assert_array_equal(kk, 255 - 3 * a)
    assert launched_entries(k) == ["nb_k0_i32"]
    cp = pytest.importorskip("cupy")
    d_a = cp.asarray(a)
    d_h, d_k = cp.empty_like(d_a), cp.empty_like(d_a)
    got = k(inp=d_a, h=d_h, k=d_k)
    assert got[0] is d_h and got[1] is d_k
    assert k.profile().upload_ms == 0 and k.profile().download_ms == 0
    np.testing.assert_array_equal(cp.asnumpy(d_k), 255 - 3 * a)
    with pytest.raises(ms.ArgumentError, match="C-contiguous"):
        k(inp=cp.asarray(np.zeros((70, 21), np.int32)).T)


@pytest.mark.skipif(CUDA_DEVICE is None, reason="no CUDA device here: CUDA kernels are compiled to PTX only")
def test_cuda_constant_memory_of_a_symbolic_size_is_checked_at_each_call():
    """An input in constant memory whose size is only known at the call has a share of the module's 64 KiB;
    more than that is refused by name before anything runs."""
    k = conv2d().compile("cuda")
    inp = rng.random((3, 6, 6), dtype=np.float32)
    with pytest.raises(ms.ArgumentError, match="w: .* bytes do not fit"):
        k(inp=np.zeros((2000, 6, 6), np.float32), w=np.zeros((1, 2000, 3, 3), np.float32))
    w = rng.random((2, 3, 3, 3), dtype=np.float32)
    np.testing.assert_allclose(k(inp=inp, w=w), conv2d_reference(inp, w), rtol=1e-5)

