"""numpy/OpenBLAS as a peer, at its best: in a process of its own with the BLAS kernel of this CPU.

This environment may force OpenBLAS onto one kernel (OPENBLAS_CORETYPE) and cache size
(OPENBLAS_L2_SIZE); OpenBLAS reads them once, when it loads. The peer's process starts without
them, so OpenBLAS picks the kernel for this CPU, and reports the kernel threadpoolctl sees. The
runner's own process, and so the tests, keep the environment as it is.

The parent sends pickled requests on the child's stdin and reads pickled answers on its stdout:
`bind` a numpy function (a "module:name" of the suite) to arguments, time a `burst` of calls there
(so the pipe is not timed), fetch the `outputs`. Interleaved rounds work as in one process: the
parent asks for a burst at the peer's turn.
"""
from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import time

#: the variables this environment sets to pin OpenBLAS; the peer's process runs without them
PINNING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


class BlasProcessError(RuntimeError):
    """The numpy peer's process failed (its message says where)."""


class BlasProcess:
    """The numpy peer's process, started on first use; `info()` says how OpenBLAS runs there."""

    def __init__(self, threads: int):
        self.threads = threads
        self._proc = None
        self._info = None
        self._keys = 0

    def _start(self):
        env = {k: v for k, v in os.environ.items() if k not in PINNING}
        self._proc = subprocess.Popen([sys.executable, "-m", "mascarpone.bench.blas_process"], env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._info = self._ask("start", self.threads)
        self._info["unset"] = {k: os.environ.get(k) for k in PINNING}

    def _ask(self, *request):
        if self._proc is None:
            self._start()
        try:
            pickle.dump(request, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._proc.stdin.flush()
            status, value = pickle.load(self._proc.stdout)
        except (EOFError, BrokenPipeError, pickle.UnpicklingError) as err:
            raise BlasProcessError(f"the numpy peer's process died ({type(err).__name__}); its stderr is above") \
                from None
        if status == "error":
            raise BlasProcessError(value)
        return value

    def info(self) -> dict:
        """threadpoolctl's view of OpenBLAS in the peer's process: kernel ('architecture'), threads,
        version; and the pinning variables that were unset for it."""
        if self._proc is None:
            self._start()
        return self._info

    def bind(self, function: str, args: list, outputs: list):
        """A Call running `function` ("module:name") on `args` in the peer's process; `outputs` are
        the indices of the arguments it writes, returned by `outputs()` after a run."""
        from .model import Call
        self._keys += 1
        key = self._keys
        self._ask("bind", key, function, args, outputs)
        call = Call(lambda: self._ask("burst", key, 1), lambda: self._ask("outputs", key))
        call.burst = lambda n: self._ask("burst", key, n)
        return call

    def close(self):
        if self._proc is not None:
            try:
                self._ask("quit")
            except BlasProcessError:
                pass
            self._proc.wait(timeout=30)
            self._proc = None


def _serve():
    """The child's loop: answer requests until `quit`."""
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr          # nothing else may write on the answers' pipe
    bound = {}
    limits = None    # threadpoolctl's limits, held for the process's life
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        kind, args = request[0], request[1:]
        try:
            if kind == "start":
                import numpy as np
                from threadpoolctl import threadpool_info, threadpool_limits
                limits = threadpool_limits(limits=args[0], user_api="blas")
                blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
                value = {"numpy": np.__version__, "blas": blas, "env": {k: os.environ.get(k) for k in PINNING}}
            elif kind == "bind":
                key, function, fargs, outputs = args
                module, _, name = function.partition(":")
                bound[key] = (getattr(importlib.import_module(module), name), fargs, outputs)
                value = None
            elif kind == "burst":
                fn, fargs, _ = bound[args[0]]
                value = []
                for _ in range(args[1]):
                    start = time.perf_counter()
                    fn(*fargs)
                    value.append(time.perf_counter() - start)
            elif kind == "outputs":
                _, fargs, outputs = bound[args[0]]
                value = [fargs[i] for i in outputs]
            elif kind == "quit":
                pickle.dump(("ok", None), answers)
                answers.flush()
                return
            else:
                raise ValueError(f"unknown request {kind!r}")
            answer = ("ok", value)
        except Exception as err:  # reported to the parent, which records it for this peer and goes on
            answer = ("error", f"{type(err).__name__}: {err}")
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


if __name__ == "__main__":
    _serve()
