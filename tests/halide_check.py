"""Shared helper of the Halide front-end tests: run a pipeline in Halide and through mascarpone, compare."""
import numpy as np

import mascarpone as ms

hl = __import__("halide")


def realize_both(outputs, sizes, images=None, params=None, rtol=None, atol=0.0):
    """Realize `outputs` (a Func or a list of them) with Halide and with mascarpone; assert they agree.

    images: {hl.ImageParam: numpy array}; params: [(hl.Param, value), ...]. Integer outputs must be
    bit-exact; float outputs agree within `rtol` (default 1e-5) and `atol`.
    Returns (ours, theirs) as lists of arrays.
    """
    images, params = images or {}, params or []
    funcs = outputs if isinstance(outputs, list) else [outputs]
    pipeline = hl.Pipeline(funcs)
    for ip, arr in images.items():
        ip.set(hl.Buffer(arr))
    for p, v in params:
        p.set(v)
    theirs = pipeline.realize(sizes)
    theirs = [np.asarray(b).copy() for b in (theirs if isinstance(theirs, (list, tuple)) or
                                             type(theirs).__name__ == "Realization" else [theirs])]
    f = ms.from_halide(pipeline)
    kernel = f.compile("cpu")
    kwargs = {ip.name(): arr for ip, arr in images.items()}
    kwargs.update({p.name(): v for p, v in params})
    ours = kernel.realize(sizes, **kwargs)
    ours = ours if isinstance(ours, list) else [ours]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=1e-5 if rtol is None else rtol, atol=atol)
        else:
            np.testing.assert_array_equal(a, b)
    return ours, theirs
