"""The Halide front-end refuses what it cannot translate, and unreadable bytes, with typed errors."""
import numpy as np
import pytest

import mascarpone as ms
from mascarpone.frontends.halide.reader import read_pipeline

hl = pytest.importorskip("halide")
x, y = hl.Var("x"), hl.Var("y")


def small_pipeline():
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    f = hl.Func("brighten")
    f[x, y] = inp[x, y] + 1
    f.vectorize(x, 8)
    return hl.Pipeline(f)


def test_specialize_is_named():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    f = hl.Func("spec_func")
    f[x, y] = inp[x, y] * 2
    f.specialize(inp.width() > 64).vectorize(x, 8)
    with pytest.raises(ms.NotSupportedError, match=r"spec_func.*specialize"):
        ms.from_halide(f)


def test_define_extern_is_named():
    ext = hl.Func("ext_func")
    ext.define_extern("some_c_function", [], hl.Float(32), 2)
    g = hl.Func("user")
    g[x, y] = ext[x, y] + 1
    with pytest.raises(ms.NotSupportedError, match=r"ext_func.*define_extern"):
        ms.from_halide(g)


def test_atomic_is_named():
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    hist = hl.Func("atomic_hist")
    r = hl.RDom([(0, 100)], "r")
    hist[x] = 0
    hist[hl.cast(hl.Int(32), inp[r.x])] += 1
    hist.compute_root().update(0).atomic().parallel(r.x)
    with pytest.raises(ms.NotSupportedError, match=r"atomic_hist.*atomic"):
        ms.from_halide(hist)


def test_truncated_bytes_raise_a_format_error():
    data = hl.serialize_pipeline(small_pipeline())
    # (the last bytes of a FlatBuffer may be padding nothing refers to, so cuts stop short of them)
    for cut in (0, 3, 7, 16, len(data) // 3, len(data) // 2, len(data) - 9):
        with pytest.raises(ms.HalideFormatError):
            ms.from_halide(data[:cut])


def test_corrupted_bytes_raise_a_format_error_or_read():
    data = bytearray(hl.serialize_pipeline(small_pipeline()))
    rng = np.random.default_rng(3)
    for _ in range(200):
        bad = bytearray(data)
        for pos in rng.integers(0, len(bad), 4):
            bad[pos] = int(rng.integers(0, 256))
        try:
            read_pipeline(bytes(bad))
        except ms.HalideFormatError:
            pass  # refusing is right; reading a valid-looking variant is fine too


def test_other_version_is_refused_with_the_supported_ones():
    data = bytearray(hl.serialize_pipeline(small_pipeline()))
    at = data.find(b"18.0.1")
    data[at:at + 6] = b"17.0.0"
    with pytest.raises(ms.HalideVersionError, match=r"17\.0\.0.*18\.0\.1"):
        ms.from_halide(bytes(data))


def test_bytes_round_trip_and_realize():
    data = hl.serialize_pipeline(small_pipeline())
    k = ms.from_halide(data).compile("cpu")
    img = np.arange(60, dtype=np.uint8).reshape(6, 10)
    np.testing.assert_array_equal(k.realize([10, 6], inp=img), img + 1)


def test_realize_checks_input_region_and_types():
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    f = hl.Func("shifted")
    f[x, y] = inp[x + 2, y]
    k = ms.from_halide(f).compile("cpu")
    img = np.zeros((4, 10), np.uint8)
    assert k.realize([8, 4], inp=img).shape == (4, 8)
    with pytest.raises(ms.ArgumentError, match="inp"):
        k.realize([9, 4], inp=img)
    with pytest.raises(ms.ArgumentError, match="inp"):
        k.realize([8, 4], inp=img.astype(np.int16))
    with pytest.raises(ms.ArgumentError, match="missing"):
        k.realize([8, 4])
