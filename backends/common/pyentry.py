"""A native kernel's call for one signature of arguments (positional or keyword), as a CPython builtin.

A call through ctypes costs microseconds before the kernel runs: the signature of the arguments,
the arrays' addresses, the checks that they bind in place, the conversion of every argument. A
kernel called in a loop on small arrays spends most of its time there. Once a signature has bound
its arrays as given (`Binder.direct`), every check of later calls is a comparison with constants:
the type of each argument, each array's rank, extents, dtype and flags, each size's value, the
addresses that must or must not overlap. This module compiles those comparisons, the kernel's
call and the return into one function of CPython's METH_FASTCALL convention (by LLVM, as the cpu
target's kernels are), so a matching call costs about what a builtin's call costs. A keyword entry
also compares the names, by identity with the string objects of the call it was built from (names
written in code are interned; any other string of the same text goes the general way).

Where any comparison fails, the function returns `MISMATCH` and has done nothing: the caller then
takes the general path, which checks, names what is wrong, or binds another way. The function
reads CPython's object header and numpy's array fields at offsets found on this process's own
objects at import (`LAYOUT`); where they cannot be found (another Python implementation or build),
`LAYOUT` is None and no entry is built.
"""
from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass

import numpy as np


class _Sentinel:
    __slots__ = ("what",)

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f"<{self.what}>"


#: what an entry returns where the arguments are not of its signature (nothing was run)
MISMATCH = _Sentinel("arguments of another signature")


@dataclass(frozen=True)
class ArraySlot:
    """A positional argument that is a numpy array of exactly this shape, dtype and flags, passed as
    the buffers at positions `buffers` (an array both read and written is two buffers)."""
    shape: tuple
    dtype: np.dtype
    flags: int
    buffers: tuple


@dataclass(frozen=True)
class SizeSlot:
    """A positional argument that is a Python int of exactly this value (the kernel's parameters for
    it are among the entry's constant values)."""
    value: int


@dataclass(frozen=True)
class BoolSlot:
    """A positional argument that is this Python bool (True and False are the only two objects)."""
    value: bool


@dataclass(frozen=True)
class FloatSlot:
    """A positional argument that is a Python float, passed as a one-element buffer of `dtype`
    (float32 or float64) at position `buffer`."""
    dtype: np.dtype
    buffer: int


@dataclass(frozen=True)
class Layout:
    """Offsets (bytes) of the fields an entry reads: the object header's type, a tuple's length and
    items, numpy's array fields."""
    ob_type: int
    tuple_size: int
    tuple_items: int
    data: int
    nd: int
    dimensions: int
    descr: int
    flags: int


def _probe_layout():
    import platform
    if platform.python_implementation() != "CPython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    word = lambda address: ctypes.c_uint64.from_address(address).value        # noqa: E731
    samples = [np.zeros(3), np.zeros((2, 5), np.float32)[:, 1:], np.empty((0, 4), np.int16).T, np.zeros(())]
    if not all(word(id(x) + 8) == id(type(x)) for x in (*samples, 1, 1.0, None)):
        return None
    names = ("a_in", "out", "N")
    if word(id(names) + 16) != 3 or any(word(id(names) + 24 + 8 * k) != id(n) for k, n in enumerate(names)):
        return None
    # numpy's PyArrayObject_fields: data, nd (int), dimensions, strides, base, descr, flags (int)
    data = 16
    layout = Layout(ob_type=8, tuple_size=16, tuple_items=24, data=data, nd=data + 8, dimensions=data + 16,
                    descr=data + 40, flags=data + 48)
    for a in samples:
        dims = word(id(a) + layout.dimensions)
        if (word(id(a) + layout.data) != a.__array_interface__["data"][0]
                or ctypes.c_int32.from_address(id(a) + layout.nd).value != a.ndim
                or any(ctypes.c_int64.from_address(dims + 8 * d).value != n for d, n in enumerate(a.shape))
                or word(id(a) + layout.descr) != id(a.dtype)
                or ctypes.c_int32.from_address(id(a) + layout.flags).value != a.flags.num):
            return None
    return layout


LAYOUT = _probe_layout()


def _api(name) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_METH_FASTCALL, _METH_KEYWORDS = 0x0080, 0x0002
_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.POINTER(_MethodDef), ctypes.py_object, ctypes.py_object]


@dataclass(frozen=True)
class KernelCall:
    """What an entry calls: the kernel's function at `address` (C signature: `nbuffers` pointers,
    then one int64 per `values`, the parameters of the signature), with the arrays' addresses
    respecting `apart` ((buffer, bytes, buffer, bytes): ranges that must not overlap) and `alike`
    ((input, output, bytes): at the same address, or apart, the input's bytes then copied to the
    output before the kernel runs). Its thread count (the int32 at `threads`) is set first, to the
    int32 at `own_threads` where that is not 0, else to the one at `default_threads`. Where its status
    is not 0 (it could not allocate), the entry raises MemoryError(`failure`)."""
    name: str
    address: int
    nbuffers: int
    values: tuple
    apart: tuple
    alike: tuple
    threads: int
    own_threads: int
    default_threads: int
    failure: str


class _Owner:
    """What the builtin keeps alive (its `self`): the compiled entry, its method record, the kernel's
    code and thread count, and the objects whose addresses the entry compares with."""

    def __init__(self, jit, method, keep):
        self.jit, self.method, self.keep = jit, method, keep


def build(call: KernelCall, slots, returns=None, keywords=None, keep=None):
    """The builtin that runs `call` where its arguments match `slots`, positional ones (`f(*args)`)
    or, with `keywords` (names, each the very string object a call passes), keyword ones in that
    order (`f(**kwargs)`). It returns None, the argument at position `returns`, or a tuple of those
    at the positions `returns` lists; MISMATCH (having done nothing) where the arguments do not
    match. None where this process's objects cannot be read (`LAYOUT`). `keep`: objects the code
    relies on."""
    if LAYOUT is None:
        return None
    text = _ir(call, slots, returns, keywords)
    from mascarpone.backends.cpu.jit import JitModule    # (LLVM assembles the entry, whatever the target)
    jit = JitModule(text)
    flags = _METH_FASTCALL | (_METH_KEYWORDS if keywords is not None else 0)
    method = _MethodDef(call.name.encode(), jit.function_address("entry"), flags, None)
    owner = _Owner(jit, method, (keep, keywords, [s.dtype for s in slots if hasattr(s, "dtype")]))
    return _new_builtin(ctypes.byref(method), owner, None)


def _ir(call, slots, returns, keywords) -> str:
    L = LAYOUT
    lines = []
    emit = lines.append
    numbered, passed = itertools.count(), itertools.count()     # (SSA values; blocks after each check)
    fresh = lambda: f"%v{next(numbered)}"       # noqa: E731

    def field(ptr, offset, typ):
        at, v = fresh(), fresh()
        emit(f"  {at} = getelementptr i8, ptr {ptr}, i64 {offset}")
        emit(f"  {v} = load {typ}, ptr {at}")
        return v

    def const_ptr(address):
        return f"inttoptr (i64 {address} to ptr)"

    def require(cond):
        # each check branches out at once: a later load may read fields only an ndarray has
        ok = f"ok{next(passed)}"
        emit(f"  br i1 {cond}, label %{ok}, label %mismatch")
        emit(f"{ok}:")

    def fresh_cmp(op, typ, a, b):
        v = fresh()
        emit(f"  {v} = icmp {op} {typ} {a}, {b}")
        return v

    def equal(typ, a, b):
        return fresh_cmp("eq", typ, a, b)

    emit("define ptr @entry(ptr %self, ptr %args, i64 %nargs, ptr %kwnames) {")
    emit("entry:")
    emit(f"  %floats = alloca [{max(1, len(slots))} x double], align 8")
    if keywords is None:
        require(equal("i64", "%nargs", len(slots)))
    else:
        # (a keyword call's values follow its positional ones in `args`; their names are a tuple)
        require(equal("i64", "%nargs", 0))
        require(f"{fresh_cmp('ne', 'ptr', '%kwnames', 'null')}")
        require(equal("i64", field("%kwnames", L.tuple_size, "i64"), len(keywords)))
        for k, name in enumerate(keywords):
            require(equal("ptr", field("%kwnames", L.tuple_items + 8 * k, "ptr"), const_ptr(id(name))))
    buffer_ptrs = [None] * call.nbuffers
    for k, slot in enumerate(slots):
        at, arg = fresh(), fresh()
        emit(f"  {at} = getelementptr ptr, ptr %args, i64 {k}")
        emit(f"  {arg} = load ptr, ptr {at}")
        typ = field(arg, L.ob_type, "ptr")
        if isinstance(slot, ArraySlot):
            require(equal("ptr", typ, const_ptr(id(np.ndarray))))
            require(equal("i32", field(arg, L.nd, "i32"), len(slot.shape)))
            require(equal("ptr", field(arg, L.descr, "ptr"), const_ptr(id(slot.dtype))))
            require(equal("i32", field(arg, L.flags, "i32"), slot.flags))
            dims = field(arg, L.dimensions, "ptr")
            for d, n in enumerate(slot.shape):
                require(equal("i64", field(dims, 8 * d, "i64"), n))
            data = field(arg, L.data, "ptr")
            for b in slot.buffers:
                buffer_ptrs[b] = data
        elif isinstance(slot, SizeSlot):
            require(equal("ptr", typ, const_ptr(id(int))))
            v = fresh()
            emit(f"  {v} = call i64 {const_ptr(_api('PyLong_AsLongLong'))}(ptr {arg})")
            # (-1 may be an overflow's error: such a call goes the general way, which says so)
            failed = equal("i64", v, -1)
            emit(f"  br i1 {failed}, label %clear{k}, label %size{k}")
            emit(f"clear{k}:")
            emit(f"  call void {const_ptr(_api('PyErr_Clear'))}()")
            emit("  br label %mismatch")
            emit(f"size{k}:")
            require(equal("i64", v, slot.value))
        elif isinstance(slot, BoolSlot):
            require(equal("ptr", arg, const_ptr(id(bool(slot.value)))))
        elif isinstance(slot, FloatSlot):
            require(equal("ptr", typ, const_ptr(id(float))))
            v, cell = fresh(), fresh()
            emit(f"  {v} = call double {const_ptr(_api('PyFloat_AsDouble'))}(ptr {arg})")
            emit(f"  {cell} = getelementptr [{max(1, len(slots))} x double], ptr %floats, i64 0, i64 {k}")
            if np.dtype(slot.dtype) == np.float32:
                narrow = fresh()
                emit(f"  {narrow} = fptrunc double {v} to float")
                emit(f"  store float {narrow}, ptr {cell}")
            else:
                emit(f"  store double {v}, ptr {cell}")
            buffer_ptrs[slot.buffer] = cell
        else:
            raise TypeError(f"unknown argument slot {slot!r}")
    if any(p is None for p in buffer_ptrs):
        raise ValueError("every buffer of the kernel must come from an argument")
    starts = []
    for p in buffer_ptrs:
        v = fresh()
        emit(f"  {v} = ptrtoint ptr {p} to i64")
        starts.append(v)
    copies = []
    for a, b, n in call.alike:
        same, end_a, end_b, before, after, ok = (fresh() for _ in range(6))
        emit(f"  {same} = icmp eq i64 {starts[a]}, {starts[b]}")
        emit(f"  {end_a} = add i64 {starts[a]}, {n}")
        emit(f"  {end_b} = add i64 {starts[b]}, {n}")
        emit(f"  {before} = icmp ule i64 {end_a}, {starts[b]}")
        emit(f"  {after} = icmp ule i64 {end_b}, {starts[a]}")
        emit(f"  {ok} = or i1 {before}, {after}")
        emit(f"  {ok}s = or i1 {ok}, {same}")
        require(f"{ok}s")
        copies.append((same, buffer_ptrs[a], buffer_ptrs[b], n))
    for a, n, b, m in call.apart:
        end_a, end_b, before, after, apart_ok = fresh(), fresh(), fresh(), fresh(), fresh()
        emit(f"  {end_a} = add i64 {starts[a]}, {n}")
        emit(f"  {end_b} = add i64 {starts[b]}, {m}")
        emit(f"  {before} = icmp ule i64 {end_a}, {starts[b]}")
        emit(f"  {after} = icmp ule i64 {end_b}, {starts[a]}")
        emit(f"  {apart_ok} = or i1 {before}, {after}")
        require(apart_ok)
    for k, (same, source, target, n) in enumerate(copies):
        emit(f"  br i1 {same}, label %copied{k}, label %copy{k}")
        emit(f"copy{k}:")
        emit(f"  call void @llvm.memcpy.p0.p0.i64(ptr {target}, ptr {source}, i64 {n}, i1 false)")
        emit(f"  br label %copied{k}")
        emit(f"copied{k}:")
    own, default, threads = fresh(), fresh(), fresh()
    emit(f"  {own} = load i32, ptr {const_ptr(call.own_threads)}")
    emit(f"  {default} = load i32, ptr {const_ptr(call.default_threads)}")
    unset = equal("i32", own, 0)
    emit(f"  {threads} = select i1 {unset}, i32 {default}, i32 {own}")
    emit(f"  store i32 {threads}, ptr {const_ptr(call.threads)}")
    params = [f"ptr {p}" for p in buffer_ptrs] + [f"i64 {int(v)}" for v in call.values]
    types = ", ".join(["ptr"] * call.nbuffers + ["i64"] * len(call.values))
    emit(f"  %state = call ptr {const_ptr(_api('PyEval_SaveThread'))}()")
    emit(f"  %status = call i32 ({types}) {const_ptr(call.address)}({', '.join(params)})")
    emit(f"  call void {const_ptr(_api('PyEval_RestoreThread'))}(ptr %state)")
    emit("  %ran = icmp eq i32 %status, 0")
    emit("  br i1 %ran, label %done, label %failed")
    emit("done:")
    incref = const_ptr(_api("Py_IncRef"))

    def argument(k):
        at, v = fresh(), fresh()
        emit(f"  {at} = getelementptr ptr, ptr %args, i64 {k}")
        emit(f"  {v} = load ptr, ptr {at}")
        return v

    if isinstance(returns, tuple):
        result = fresh()
        emit(f"  {result} = call ptr {const_ptr(_api('PyTuple_New'))}(i64 {len(returns)})")
        emit(f"  %made = icmp ne ptr {result}, null")
        emit("  br i1 %made, label %fill, label %raise")
        emit("fill:")
        for i, k in enumerate(returns):
            item = argument(k)
            emit(f"  call void {incref}(ptr {item})")
            emit(f"  call i32 {const_ptr(_api('PyTuple_SetItem'))}(ptr {result}, i64 {i}, ptr {item})")
    else:
        result = const_ptr(id(None)) if returns is None else argument(returns)
        emit(f"  call void {incref}(ptr {result})")
    emit(f"  ret ptr {result}")
    emit("raise:")
    emit("  ret ptr null")
    emit("failed:")
    memory_error = ctypes.c_void_p.in_dll(ctypes.pythonapi, "PyExc_MemoryError").value
    emit(f"  call void {const_ptr(_api('PyErr_SetString'))}(ptr {const_ptr(memory_error)}, ptr @failure)")
    emit("  ret ptr null")
    emit("mismatch:")
    emit(f"  call void {const_ptr(_api('Py_IncRef'))}(ptr {const_ptr(id(MISMATCH))})")
    emit(f"  ret ptr {const_ptr(id(MISMATCH))}")
    emit("}")
    message = call.failure.encode() + b"\0"
    escaped = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in message)
    head = f'@failure = private unnamed_addr constant [{len(message)} x i8] c"{escaped}"'
    declare = "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)"
    return head + "\n" + declare + "\n\n" + "\n".join(lines) + "\n"
