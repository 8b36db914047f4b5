"""Example programs used by the demo, the tests and the benchmarks. Each builder returns the Function
and its computations so callers can schedule them."""
import mascarpone as ms


def blur():
    """Two-stage 3x3 box blur: bx over rows, by over columns (valid region, no boundary)."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 2)
    with ms.Function("blur") as f:
        img = ms.Input("img", [H + 2, W + 2], ms.float32)
        bx = ms.Computation("bx", [yb, x], (img[yb, x] + img[yb, x + 1] + img[yb, x + 2]) / 3)
        by = ms.Computation("by", [y, x], (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3)
    return f, bx, by


def gemm(dtype=ms.float32):
    """C = A @ B as an initialisation and a reduction update."""
    N, M, K = ms.Param("N"), ms.Param("M"), ms.Param("K")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, M), ms.Var("k", 0, K)
    with ms.Function("gemm") as f:
        A = ms.Input("A", [N, K], dtype)
        B = ms.Input("B", [K, M], dtype)
        C = ms.Computation("C", [i, j], ms.cast(dtype, 0))
        acc = C.update([i, j, k], C[i, j] + A[i, k] * B[k, j])
    return f, C, acc
