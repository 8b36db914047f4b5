"""The linear-algebra kernels as a numpy user writes them (BLAS through numpy), for the numpy peer.

They run in the peer's own process (blas_process.py) and take the Julia kernels' arguments, updating
the same arrays in place, so their results are checked against the same reference. Only numpy is
imported here: the peer's process loads nothing else.
"""
import numpy as np


def sgemm(A, B, C):
    np.matmul(A, B, out=C)


def gemm(C, A, B, alpha, beta):
    C *= beta
    C += alpha * (A @ B)


def mm2(tmp, A, B, C, D, alpha, beta):
    np.multiply(alpha, A @ B, out=tmp)
    D *= beta
    D += tmp @ C


def bicg(A, s, q, p, r):
    s[:] = r @ A
    q[:] = A @ p


def gesummv(alpha, beta, A, B, x, y):
    y[:] = alpha * (A @ x) + beta * (B @ x)


def mttkrp(A, B, C, D):
    # A[i, j] = sum over k, l of B[i, k, l] C[k, j] D[l, j]: B's (k, l) as one axis (column-major, as
    # Julia's arrays are) times the Khatri-Rao product of C and D, one gemm
    ni, nk, nl = B.shape
    kr = (C[:, None, :] * D[None, :, :]).reshape(nk * nl, -1, order="F")
    A[:] = B.reshape(ni, nk * nl, order="F") @ kr


def doitgen(A, C4, acc):
    nr, nq, np_ = A.shape
    flat = A.reshape(nr * nq, np_, order="F") @ C4
    A[:] = flat.reshape(nr, nq, np_, order="F")
    acc[:] = A[nr - 1, nq - 1, :]   # the kernel leaves the last (r, q)'s sums in acc


def covariance(data, cov, mean):
    n = data.shape[0]
    mean[:] = data.sum(axis=0) / n
    data -= mean
    cov[:] = (data.T @ data) / (n - 1.0)


def trmv(L, x, y):
    y[:] = np.tril(L) @ x
