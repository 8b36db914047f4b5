"""C identifiers for the names of a loop IR program (buffers, sizes, loop variables) and for the
printer's own temporaries, unique in one translation unit."""
from __future__ import annotations

import re

#: C99/C++ keywords, the names of the C library the printed code calls or includes, and the dialects'
#: reserved words: a program name equal to one of them is renamed
RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int
    long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while bool true false class new delete template this namespace operator private public
    protected virtual friend using typename explicit mutable
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t NULL
    malloc free memcpy abs fabs fabsf sqrt sqrtf exp expf log logf sin sinf cos cosf tan tanf tanh tanhf
    floor floorf ceil ceilf rint rintf trunc truncf pow powf atan2 atan2f fmod fmodf min max
    INFINITY NAN main errno
    kernel global local constant private __global __local __constant __kernel __device__ __global__
    __shared__ threadIdx blockIdx blockDim gridDim get_global_id get_local_id get_group_id
""".split())

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


class Names:
    """Maps program names to distinct C identifiers, and makes fresh ones for the printer.

    A name that is already a usable identifier stays as it is; others have their other characters
    replaced by `_` and get a suffix where that collides. The printer's own names start with `ms_`,
    a prefix no program name keeps.
    """

    def __init__(self):
        self._of = {}
        self._taken = set()
        self._counter = 0

    def _claim(self, candidate):
        name, k = candidate, 1
        while name in self._taken:
            name = f"{candidate}_{k}"
            k += 1
        self._taken.add(name)
        return name

    def __call__(self, name: str, kind: str = "value") -> str:
        """The identifier of the program name `name` (the same one at every use); `kind` is "value" for
        sizes and loop variables, "buffer" for buffers (the loop IR keeps the two apart)."""
        ident = self._of.get((kind, name))
        if ident is None:
            c = _NOT_IDENT.sub("_", name) or "v"
            if c[0].isdigit() or c in RESERVED or c.startswith("ms_") or c.startswith("__"):
                c = "v_" + c
            ident = self._of[(kind, name)] = self._claim(c)
        return ident

    def fresh(self, stem: str) -> str:
        """A new identifier for the printer's own use (`ms_<stem><n>`)."""
        self._counter += 1
        return self._claim(f"ms_{stem}{self._counter}")
